"""Write the README's screenshots of the widgets notebook to ``notebooks/screenshots/``.

Runs the browser tests' flow on an output-free copy of
``notebooks/4_widgets.ipynb`` in a temporary JupyterLab (127.0.0.1, token,
route guard; MNIST from a loopback mirror of ``../shared/data/MNIST_Data.zip``):
the setup cell, the ProgressBar cell (its snapshot), then the Dashboard cell
with a learning rate typed in: a frame of the dashboard while it trains, Stop,
and its static snapshot.  The committed notebook is never opened or saved.

    python tests/browser/update_readme_screenshots.py [--out notebooks/screenshots]

Files written (PNG, reduced to a 256-colour palette when Pillow is there):

* ``dashboard-live.png``: the Dashboard mid-training (bars, table, live plot, Stop and lr);
* ``dashboard-stopped.png``: its static snapshot after Stop;
* ``progressbar-finished.png``: the ProgressBar's static snapshot after ``fit(3)``.

Needs what the browser tests need: ``/usr/bin/chromium`` and ``pip install -e '.[test,browser]'``.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.browser import harness  # noqa: E402
from tests.support.mirror import LoopbackServer, mnist_zip  # noqa: E402

CELLS = {name: harness.CELLS[name] for name in ("setup", "progress", "dashboard")}
LR_TEXT = "0.03"


def _shrink(path: Path) -> None:
    """A 256-colour palette PNG (UI screenshots lose nothing visible; the file is a few times smaller)."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    small.save(path, optimize=True)


def _capture(nb: harness.NotebookDriver, out: Path) -> list[Path]:
    written = []
    result = nb.run("setup", timeout=600)
    if result["errors"]:
        raise RuntimeError(f"the setup cell failed: {result['errors']}")

    # The ProgressBar cell also imports the widget classes the Dashboard cell uses.
    if nb.run("progress", timeout=600)["errors"]:
        raise RuntimeError("the ProgressBar cell failed")
    nb.poll("progress", lambda r: not r["live"] and r["status"] == "✔ finished", 60, what="the finished snapshot")
    written.append(nb.screenshot("progress", out / "progressbar-finished.png"))

    nb.start("dashboard")
    nb.poll("dashboard", lambda r: r["live"] and (harness.run_progress(r) or 0) > 0, 300,
            what="live training", while_running=True)
    box = nb.output("dashboard").locator(".widget-text input")
    box.fill(LR_TEXT)
    box.press("Enter")
    nb.poll("dashboard", lambda r: f"lr set to {LR_TEXT}" in (r["statusLine"] or ""), 60, what="the lr change",
            while_running=True)
    # Mid-training, right when the second live plot frame arrives (so the plot matches the bars;
    # live frames come every few seconds, within a small share of the training time).
    frames: set[str] = set()

    def second_frame(r: dict) -> bool:
        frames.update(img["src"] for img in harness.plot_images(r, widget=True))
        return r["live"] and len(frames) >= 2

    nb.poll("dashboard", second_frame, 300, what="the second live plot frame", while_running=True)
    written.append(nb.screenshot("dashboard", out / "dashboard-live.png"))
    nb.output("dashboard").locator(".widget-button", has_text="Stop").click()
    if nb.wait("dashboard", timeout=300)["errors"]:
        raise RuntimeError("the Dashboard cell failed")
    nb.poll("dashboard", lambda r: not r["live"] and "stopped by user" in (r["status"] or ""), 60,
            what="the stopped snapshot")
    written.append(nb.screenshot("dashboard", out / "dashboard-stopped.png"))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "notebooks" / "screenshots", help="output folder")
    args = parser.parse_args(argv)
    missing = harness.missing_requirements()
    if missing:
        print(f"cannot take screenshots: {missing}", file=sys.stderr)
        return 2
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="nbcallback-screenshots-"))
    try:
        (work / "mirror").mkdir()
        shutil.copy(mnist_zip(), work / "mirror" / "MNIST_Data.zip")
        (work / "root").mkdir()
        (work / "data").mkdir()
        harness.copy_notebook(harness.NOTEBOOK, work / "root" / harness.NOTEBOOK_NAME)
        with LoopbackServer(work / "mirror") as mirror:
            lab = harness.LabServer(work / "root", work / "lab", env={
                "NBCALLBACK_MNIST_URL": f"{mirror.url}/MNIST_Data.zip",
                "NBCALLBACK_DATA": str(work / "data"),
                "OMP_NUM_THREADS": "1",
            })
            lab.start()
            try:
                with harness.Browser() as browser:
                    context, page, guard = harness.new_page(browser, lab)
                    page.set_default_timeout(120_000)
                    try:
                        nb = harness.NotebookDriver(page, lab, harness.NOTEBOOK_NAME, CELLS, guard=guard)
                        nb.open(reset=True)
                        written = _capture(nb, out)
                        errors = nb.widget_errors()
                        if errors or guard.violations():
                            raise RuntimeError(f"widget errors {errors} / off-loopback requests {guard.violations()}")
                    finally:
                        context.close()
            finally:
                lab.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for path in written:
        _shrink(path)
        print(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}  ({path.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
