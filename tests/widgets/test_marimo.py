"""``Dashboard()`` in marimo, with marimo's own tools (``examples/marimo_dashboard.py``).

* ``marimo export ipynb --include-outputs`` runs the example headless (marimo's
  runtime, so ``in_marimo()`` holds and the widget path is the marimo one) and
  the saved outputs hold the end-of-run snapshot: status line, table, the final
  PNG, no widget model and no error.
* ``marimo run --headless`` + Debian's Chromium: in
  ``tests/browser/test_marimo_browser.py`` (it shares the browser tests' one
  Playwright session).

MNIST comes from the loopback mirror (``NBCALLBACK_MNIST_URL``) into the
session's data folder (``NBCALLBACK_DATA``), as for the notebooks.  The example
is copied into a temporary folder first: marimo writes its session cache
(``__marimo__/``) next to the notebook it runs.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("marimo")

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "marimo_dashboard.py"
PNG = b"\x89PNG\r\n\x1a\n"


def _env(mnist_root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", NBCALLBACK_DATA=str(mnist_root.parent),
               PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    env.pop("NBCALLBACK_DISPLAY", None)
    return env


def _copy_example(tmp_path: Path) -> Path:
    app = tmp_path / "marimo_dashboard.py"
    shutil.copy(EXAMPLE, app)
    return app


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def test_export_runs_the_example_and_keeps_the_final_snapshot(mnist_root: Path, tmp_path: Path) -> None:
    app = _copy_example(tmp_path)
    out = tmp_path / "executed.ipynb"
    proc = subprocess.run(
        [sys.executable, "-m", "marimo", "export", "ipynb", str(app), "-o", str(out), "--include-outputs", "-f",
         "--", "--epochs", "2"],
        cwd=tmp_path, env=_env(mnist_root), capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    nb = json.loads(out.read_text())
    outputs = [o for cell in nb["cells"] for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"], outputs
    everything = json.dumps(nb)
    assert "Traceback" not in everything and "RuntimeWarning" not in everything

    # The training cell's output: marimo's vstack of the snapshot HTML and the PNG (the marimo path of
    # WidgetRenderer.finish), nothing of the live widget.
    fit_cell = next(c for c in nb["cells"] if "trainer.fit(" in _text(c.get("source", "")))
    html = "".join(_text(o.get("data", {}).get("text/html", "")) for o in fit_cell["outputs"])
    assert 'class="nbc-snapshot"' in html
    assert "finished" in html and "epoch 2/2" in html
    table = html.split("<table", 1)[1].split("</table>", 1)[0]
    assert table.count("<tr") == 1 + 2  # header + one row per epoch
    assert "accuracy" in table
    assert "188/188" in html  # the train bar at its end: 12,000 images in batches of 64
    src = html.split("<img src='data:image/png;base64,", 1)[1].split("'", 1)[0]
    png = base64.b64decode(src)
    assert png.startswith(PNG) and len(png) > 5_000
    for live in ("marimo-anywidget", "nbc-dash", "application/vnd.jupyter.widget-view+json"):
        assert live not in html

    # The next cell reads the callback after the run.
    last = nb["cells"][-1]
    final = "".join(_text(o.get("data", {}).get("text/markdown", "")) for o in last["outputs"])
    assert "finished" in final
