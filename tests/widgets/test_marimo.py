"""``Dashboard()`` in marimo, with marimo's own tools (``examples/marimo_dashboard.py``).

* ``marimo export ipynb --include-outputs`` runs the example headless (marimo's
  runtime, so ``in_marimo()`` holds and the widget path is the marimo one) and
  the saved outputs hold the end-of-run snapshot: status line, table, the final
  PNG, no widget model and no error.
* ``marimo run --headless`` + Debian's Chromium (marked ``browser``): the live
  view's bars and status change several times while the cell trains, then the
  live view gives way to the snapshot and the PNG.  Every request of the page
  stays on the loopback server.

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
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
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


# ---------------------------------------------------------------------- in a browser


def _wait_http(url: str, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"marimo exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    raise TimeoutError(f"marimo did not answer at {url}")


def _stop(proc: subprocess.Popen) -> None:
    """Stop the server we started, by its PID, and any process it left behind, by theirs."""
    from tests.browser.harness import alive, descendants

    children = descendants(proc.pid)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # marimo's own shutdown
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    for pid in children:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def _read(page: Any) -> dict[str, Any]:
    """What the page shows (Playwright's CSS engine pierces marimo's open shadow roots)."""
    return {
        "t": time.monotonic(),
        "live": page.locator(".nbc-dash").count(),
        "bars": page.locator(".nbc-bar-text").all_text_contents(),
        "status": page.locator(".nbc-status").all_text_contents(),
        "snapshot": page.locator(".nbc-snapshot").all_text_contents(),
        "panels": page.locator(".nbc-panel").count(),
    }


@pytest.mark.browser
def test_marimo_run_shows_live_progress_then_the_snapshot(mnist_root: Path, tmp_path: Path) -> None:
    from tests.browser import harness

    reason = harness.missing_requirements()
    if reason:
        pytest.skip(f"browser test skipped: {reason}")
    app = _copy_example(tmp_path)
    port = harness._free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp_path / "marimo.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "marimo", "run", str(app), "--headless", "--host", "127.0.0.1", "--port", str(port),
         "--no-token", "--", "--epochs", "5"],
        cwd=tmp_path, env=_env(mnist_root), stdout=log, stderr=subprocess.STDOUT,
    )
    readings: list[dict[str, Any]] = []
    try:
        _wait_http(url + "/", proc)
        with harness.Browser() as browser:
            context, page, guard = harness.new_page(browser, type("Server", (), {"url": url})())
            try:
                page.goto(url + "/")
                deadline = time.monotonic() + 300
                while time.monotonic() < deadline:
                    reading = _read(page)
                    if not readings or {k: v for k, v in reading.items() if k != "t"} != {
                            k: v for k, v in readings[-1].items() if k != "t"}:
                        readings.append(reading)
                    if reading["snapshot"] and not reading["live"]:
                        break
                    time.sleep(0.1)
                page.locator(".nbc-snapshot").first.scroll_into_view_if_needed()
                page.wait_for_function(
                    "() => [...document.querySelectorAll('img')].some(i => i.naturalWidth > 500)", timeout=30_000)
                page.screenshot(path=str(tmp_path / "marimo-final.png"), full_page=True)
                violations = guard.violations()
            finally:
                context.close()
    finally:
        _stop(proc)
        log.close()
    server_log = (tmp_path / "marimo.log").read_text()
    summary = json.dumps([{k: v for k, v in r.items() if k != "t"} for r in readings[-3:]])[:3000]

    live = [r for r in readings if r["live"] and r["bars"]]
    # Live progress: the train bar's text changed at least five times while the cell ran, with steps going up,
    # and the status said the run was running (no Stop button: marimo applies clicks after the cell).
    assert len(live) >= 5, summary + server_log[-2000:]
    assert any("running" in " ".join(r["status"]) for r in live)
    assert max(r["panels"] for r in live) >= 1, [r["panels"] for r in live]  # the loss panel is drawn live too
    epochs_seen = {r["bars"][0].split("%")[0] for r in live}
    assert len(epochs_seen) >= 3, epochs_seen
    assert live[-1]["t"] - live[0]["t"] > 1.0

    # The end: the snapshot replaced the live view; the PNG loaded (checked above); nothing left the machine.
    final = readings[-1]
    assert final["live"] == 0 and final["snapshot"], summary
    assert "finished" in final["snapshot"][0] and "epoch 5/5" in final["snapshot"][0]
    assert violations == [], violations
    assert "Traceback" not in server_log, server_log[-3000:]
