"""Write the README's screenshots of the dashboard to ``notebooks/screenshots/``.

Runs the browser tests' notebook (``harness.CELLS``, written into a temporary
JupyterLab root: 127.0.0.1, token, route guard; MNIST from a loopback mirror
of ``../shared/data/MNIST_Data.zip``): the setup cell, a ``ProgressBar``
``fit(3)`` (its snapshot), then a ``Dashboard`` ``fit(6)`` with a learning
rate typed in its box, paused by the notebook's ``Gate`` in the fourth epoch:
the live dashboard in JupyterLab Light and Dark, then Stop, and its static
snapshot in both themes.  No notebook under ``notebooks/`` is opened or saved.

    python tests/browser/update_readme_screenshots.py [--out notebooks/screenshots] [--lang zh_CN]

``--lang zh_CN`` runs the kernel with ``NBCALLBACK_LANG=zh_CN`` (the widgets in Simplified Chinese,
for README.zh-CN.md) and adds ``-zh_CN`` to every file name.

Files written (PNG, reduced to a 256-colour palette when Pillow is there):

* ``dashboard-live.png`` / ``dashboard-live-dark.png``: the Dashboard mid-training
  (bars, status with the lr note, Stop and lr, the loss, accuracy and learning-rate panels, table);
* ``dashboard-stopped.png`` / ``dashboard-stopped-dark.png``: its static snapshot and final PNG after Stop;
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
from tests.browser.harness import DARK, LIGHT  # noqa: E402
from tests.support.mirror import LoopbackServer, mnist_zip  # noqa: E402

CELLS = ["setup", "readme_progress", "readme_dashboard"]
LR_TEXT = "0.02"


def _shrink(path: Path) -> None:
    """A 256-colour palette PNG (UI screenshots lose nothing visible; the file is a few times smaller)."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    small.save(path, optimize=True)


def _steps(reading: dict) -> int:
    steps = harness.bar_steps(reading)
    return steps[0] if steps else 0


def _redraw(nb: harness.NotebookDriver) -> None:
    """Make the live panels redraw at their width, as the kernel's next update does while training runs.

    After a theme switch the dashboard can keep panels drawn for a stale width until the next update
    (the browser tests check and report that); the run here is paused, so nothing else would redraw it.
    A 1 px change of the page's width makes the view's ResizeObserver redraw it.
    """
    size = nb.page.viewport_size
    nb.page.set_viewport_size({"width": size["width"] - 1, "height": size["height"]})
    nb.page.wait_for_timeout(300)
    nb.page.set_viewport_size(size)
    nb.page.wait_for_timeout(300)


def _capture(nb: harness.NotebookDriver, out: Path, lang: str = "en") -> list[Path]:
    from nbcallback.widgets.words import Words

    words = Words(lang)
    suffix = "" if lang == "en" else f"-{lang}"
    named = lambda name: out / name.replace(".png", f"{suffix}.png")  # noqa: E731
    written: list[Path] = []
    result = nb.run("setup", timeout=600)
    if result["errors"]:
        raise RuntimeError(f"the setup cell failed: {result['errors']}")

    if nb.run("readme_progress", timeout=600)["errors"]:
        raise RuntimeError("the ProgressBar cell failed")
    nb.poll("readme_progress", lambda r: not r["live"] and bool(r["snapshots"]), 60, what="the finished snapshot")
    written.append(nb.screenshot("readme_progress", named("progressbar-finished.png")))

    cell = "readme_dashboard"
    nb.start(cell)
    nb.poll(cell, lambda r: r["live"] > 0 and r["controls"] and _steps(r) > 0, 300, what="live training",
            while_running=True)
    box = nb.output(cell).locator("input.nbc-lr")
    box.scroll_into_view_if_needed()
    box.fill(LR_TEXT)
    box.press("Enter")
    nb.poll(cell, lambda r: any(LR_TEXT in (n or "") for n in r["notes"]), 60, what="the lr change",
            while_running=True)
    nb.wait_paused(cell)
    nb.poll(cell, lambda r: words("panel_lr") in r["panels"] and _steps(r) > 0, 30, what="the learning-rate panel")
    nb.page.mouse.move(0, 0)
    nb.page.evaluate("() => document.activeElement && document.activeElement.blur()")  # no focus ring in the shot
    nb.page.wait_for_timeout(500)  # the last refresh before the pause is drawn
    try:
        for theme, name in ((LIGHT, "dashboard-live.png"), (DARK, "dashboard-live-dark.png")):
            nb.set_theme(theme)
            _redraw(nb)
            written.append(nb.screenshot(cell, named(name)))
        stop = nb.output(cell).locator("button.nbc-stop")
        stop.scroll_into_view_if_needed()
        stop.click()
        nb.page.mouse.move(0, 0)  # off the output, so the snapshot's table shows no hover highlight
    finally:
        if nb.theme() != LIGHT:
            nb.set_theme(LIGHT)
        nb.release(cell)
    if nb.wait(cell, timeout=300)["errors"]:
        raise RuntimeError("the Dashboard cell failed")
    facts = nb.result(cell)
    if facts["status"] != "stopped":
        raise RuntimeError(f"the Dashboard run was not stopped by the Stop click: {facts}")
    nb.poll(cell, lambda r: not r["live"] and bool(r["snapshots"]) and any(i["width"] > 100 for i in r["imgs"]), 60,
            what="the stopped snapshot and its PNG")
    shots = nb.theme_shots(cell, {LIGHT: named("dashboard-stopped.png"), DARK: named("dashboard-stopped-dark.png")})
    written += [shot["shot"] for shot in shots.values()]
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "notebooks" / "screenshots", help="output folder")
    parser.add_argument("--lang", default="en", choices=("en", "zh_CN"), help="the widgets' language")
    args = parser.parse_args(argv)
    missing = harness.missing_requirements()
    if missing:
        print(f"cannot take screenshots: {missing}", file=sys.stderr)
        return 2
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="nbcallback-screenshots-"))
    written: list[Path] = []
    try:
        (work / "mirror").mkdir()
        shutil.copy(mnist_zip(), work / "mirror" / "MNIST_Data.zip")
        (work / "root").mkdir()
        (work / "data").mkdir()
        harness.write_notebook(work / "root" / harness.NOTEBOOK_NAME, CELLS)
        with LoopbackServer(work / "mirror") as mirror:
            lab = harness.LabServer(work / "root", work / "lab", env={
                "NBCALLBACK_MNIST_URL": f"{mirror.url}/MNIST_Data.zip",
                "NBCALLBACK_DATA": str(work / "data"),
                "OMP_NUM_THREADS": "1",
                "NBCALLBACK_LANG": args.lang,
            })
            lab.start()
            try:
                with harness.Browser() as browser:
                    context, page, guard = harness.new_page(browser, lab)
                    page.set_default_timeout(120_000)
                    try:
                        nb = harness.NotebookDriver(page, lab, harness.NOTEBOOK_NAME, CELLS, guard=guard)
                        nb.open(reset=True)
                        written = _capture(nb, out, args.lang)
                        errors = nb.widget_errors() + nb.page_errors
                        if errors or guard.violations():
                            raise RuntimeError(f"widget/page errors {errors} / off-loopback requests {guard.violations()}")
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
