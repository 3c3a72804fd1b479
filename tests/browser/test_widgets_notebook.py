"""The widgets notebook in JupyterLab, in a real (headless) Chromium.

One notebook page for the module (an output-free copy of
``notebooks/4_widgets.ipynb``; the fixture has run its setup cell).  The
tests run in file order and drive only the cells they need:

0. The route guard aborts (and records) a request to another host.
1. ProgressBar ``fit(3)``: the bar advances while training runs, then ends at
   100 % with the finished status.
2. LiveLossPlot ``fit(4)``: the live image changes during training, then the
   static snapshot replaces it (the final plot as its own image/png output).
3. Dashboard ``fit(10)``: a learning rate typed in the lr box reaches the
   optimizer (the next cell prints it), the live plot shows a frame, and Stop
   (clicked after the first epoch) ends the run within one second with the
   stopped state and the step it stopped at.
4. ProgressBar ``fit(10)`` and the kernel's interrupt button: graceful
   "stopped by user" state, and the next cell runs.
5. Save, shut the kernel down, reload the page: the saved notebook shows the
   static snapshots and no widget errors.

Every test also checks that no output shows "Error displaying widget" or
"model not found" (the notebook's markdown mentions those words, so only
outputs and the console are searched), that the page raised no JavaScript
error, and that the route guard blocked nothing.
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.browser import harness
from tests.browser.harness import NOTEBOOK_NAME, SUMMARY, TIMINGS

pytestmark = pytest.mark.browser

#: What the tests type into the Dashboard's lr box.
LR_TEXT = "0.0375"
LR_NUDGE = "0.0374"  # typed before LR_TEXT when the first entry must be repeated
#: The issue's bound for the Stop button, measured on the page's clock.
STOP_WITHIN_MS = 1000.0

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
STATUS = re.compile(
    r"stopped by user at epoch (?P<epoch>\d+), step (?P<step>\d+)"
    r"(?: \(during validation, eval step (?P<eval_step>\d+)\))? \((?P<source>[^)]+)\)"
)
#: Final readings of the training cells, for the reload test.
FINAL: dict[str, dict[str, Any]] = {}


def assert_page_healthy(nb: harness.NotebookDriver) -> None:
    errors = nb.widget_errors()
    assert not errors, f"widget errors on the page: {errors}"
    assert not nb.page_errors, f"JavaScript errors on the page: {nb.page_errors}"
    assert nb.guard is not None
    blocked = nb.guard.violations()
    assert not blocked, f"requests that would have left 127.0.0.1: {blocked}"


def status_text(reading: dict[str, Any]) -> str:
    """The status line's text without its mark (as ``view().status_text`` prints it)."""
    return (reading["status"] or "").lstrip("✔■✖ ").strip()


def _text(value: str | list[str]) -> str:
    """A notebook's multi-line string (a list of lines in the saved JSON) as one string."""
    return "".join(value) if isinstance(value, list) else value


def wait_snapshot(nb: harness.NotebookDriver, cell: str, timeout: float = 60) -> dict[str, Any]:
    """The cell's final static snapshot (no live widget left, a final status shown)."""
    return nb.poll(
        cell,
        lambda r: not r["live"] and (r["status"] or "")[:1] in "✔■✖" and bool(r["status"])
        and all(img["width"] > 0 for img in r["imgs"]),
        timeout,
        what="the static snapshot",
    )


def test_route_guard_blocks_requests_off_loopback(notebook: harness.NotebookDriver) -> None:
    """The guard itself works: a request to another host is aborted and recorded (nothing is sent:
    the guard answers before any DNS look-up, and Chromium resolves no host but 127.0.0.1)."""
    nb = notebook
    assert nb.guard is not None
    url = "http://guard-check.nbcallback.invalid/probe"
    outcome = nb.page.evaluate("(url) => fetch(url).then(() => 'sent', () => 'failed')", url)
    recorded = list(nb.guard.blocked)
    nb.guard.blocked[:] = [u for u in nb.guard.blocked if u != url]
    assert outcome == "failed" and url in recorded, (outcome, recorded)
    assert_page_healthy(nb)


def test_progress_bar_advances_and_ends_at_100_percent(notebook: harness.NotebookDriver, artifacts: Path) -> None:
    nb = notebook
    nb.start("progress")
    first = nb.poll("progress", lambda r: r["live"] and (harness.run_progress(r) or 0) > 0, 300,
                    what="a live progress reading", while_running=True)
    p1 = harness.run_progress(first)
    second = nb.poll("progress", lambda r: r["live"] and (harness.run_progress(r) or 0) > p1, 300,
                     what="a larger live progress reading", while_running=True)
    p2 = harness.run_progress(second)
    nb.screenshot("progress", artifacts / "01-progress-live.png")
    result = nb.wait("progress", timeout=600)
    assert not result["errors"], result
    final = wait_snapshot(nb, "progress")
    nb.screenshot("progress", artifacts / "02-progress-finished.png")

    assert p2 > p1 and second["t"] > first["t"], (first, second)
    assert len(final["bars"]) == 2, final["bars"]
    for bar in final["bars"]:
        assert bar["max"] > 0 and bar["value"] == bar["max"], f"bar not full at the end: {bar}"
        assert "100%" in bar["text"], bar
    assert final["bars"][0]["label"] == "epoch 3/3"
    assert final["status"] == "✔ finished", final["status"]
    finished_colour = nb.color("var(--jp-success-color1,#2e7d32)")
    assert final["statusColor"] == finished_colour, (final["statusColor"], finished_colour)
    assert first["statusColor"] != finished_colour
    assert "Training finished: 3/3 epochs, 564/564 steps" in final["text"]
    FINAL["progress"] = final
    TIMINGS["progress_readings_percent"] = [round(p1, 2), round(p2, 2)]
    SUMMARY.append(f"ProgressBar: live readings {p1:.1f}% -> {p2:.1f}%, then {final['status']!r} at 100%")
    assert_page_healthy(nb)


def test_live_plot_changes_then_static_snapshot(notebook: harness.NotebookDriver, artifacts: Path) -> None:
    nb = notebook
    nb.ensure("progress")  # the notebook imports the widget classes in the ProgressBar cell
    nb.start("plot")
    sources: list[dict[str, Any]] = []  # every live image source, in order of appearance
    shot = False
    while True:
        reading = nb.read("plot")
        for img in reading["imgs"]:
            if img["widget"] and all(img["src"] != seen["src"] for seen in sources):
                sources.append({**img, "sha": nb.image_digest(img["src"]) if img["width"] > 100 else None})
        if not shot and harness.plot_images(reading, widget=True):
            nb.screenshot("plot", artifacts / "03-plot-live.png")
            shot = True
        if reading["done"]:
            break
        nb.page.wait_for_timeout(50)
    result = nb.wait("plot", timeout=600)
    assert not result["errors"], result
    final = wait_snapshot(nb, "plot")
    nb.screenshot("plot", artifacts / "04-plot-final.png")

    frames = [s for s in sources if s["width"] > 100]
    assert len(sources) >= 2, f"the live image never changed: {sources}"
    assert frames, f"no live plot frame was shown during training (only the placeholder): {sources}"
    snapshot = harness.plot_images(final, widget=False)
    assert len(snapshot) == 1 and snapshot[0]["src"].startswith("data:image/png;base64,"), final["imgs"]
    assert final["status"] == "✔ finished", final["status"]
    assert not any(img["widget"] for img in final["imgs"])
    FINAL["plot"] = final
    TIMINGS["plot_live_frames"] = len(frames)
    SUMMARY.append(f"LiveLossPlot: {len(sources)} live image sources ({len(frames)} plot frames), "
                   f"then the static PNG snapshot ({snapshot[0]['width']}x{snapshot[0]['height']})")
    assert_page_healthy(nb)


def test_dashboard_lr_reaches_optimizer_and_stop_ends_run_within_one_second(
    notebook: harness.NotebookDriver, artifacts: Path
) -> None:
    nb = notebook
    assert nb.kernel_supports_subshells(), "the kernel does not advertise subshells: the controls cannot act"
    nb.ensure("progress")  # the notebook imports the widget classes in the ProgressBar cell
    nb.watch("dashboard")
    nb.start("dashboard")
    nb.poll("dashboard", lambda r: r["live"] and (harness.run_progress(r) or 0) > 0, 300,
            what="live training", while_running=True)
    steps_per_epoch = nb.steps_per_epoch
    output = nb.output("dashboard")

    # The learning rate, typed as a person would (FloatText commits on Enter).
    box = output.locator(".widget-text input")
    TIMINGS["lr_box_initial_value"] = box.input_value()
    lr_applied = lambda r: f"lr set to {LR_TEXT} at step" in (r["statusLine"] or "")  # noqa: E731
    box.fill(LR_TEXT)
    box.press("Enter")
    typed = time.monotonic()
    try:
        # Normally applied within ~0.3 s. Rarely (about 1 run in 20 on this 2-core VM) the first
        # control message of a session is not seen during the run; a person would type it again,
        # and so does the test, once, saying so in the summary.
        applied = nb.poll("dashboard", lr_applied, 4, what=f"'lr set to {LR_TEXT}'", while_running=True)
        TIMINGS["lr_attempts"] = 1
    except TimeoutError:
        if nb.read("dashboard").get("done"):
            raise
        for text in (LR_NUDGE, LR_TEXT):  # the box holds LR_TEXT already: change it away and back
            box.fill(text)
            box.press("Enter")
        applied = nb.poll("dashboard", lr_applied, 60, what=f"'lr set to {LR_TEXT}' after typing it again",
                          while_running=True)
        TIMINGS["lr_attempts"] = 2
    TIMINGS["lr_typed_to_applied_ms"] = round(1000 * (time.monotonic() - typed))

    # A live plot frame in the dashboard (the plot test checks that frames change), then Stop
    # while the run still has epochs to go: the cell trains 10 short epochs (~6 s), so waiting
    # for more frames would leave too little of the run on a loaded machine.
    # The live text is refreshed at most 4 times a second and within a small time budget, so
    # on a loaded machine most readings come from epoch ends and validations: any phase will do.
    digests: dict[str, str | None] = {}

    def a_frame(r: dict[str, Any]) -> bool:
        for img in harness.plot_images(r, widget=True):
            if not digests.get(img["src"]):  # again if a newer frame revoked the URL mid-read
                digests[img["src"]] = nb.image_digest(img["src"])
        return any(digests.values()) and r["live"]

    nb.poll("dashboard", a_frame, 300, what="a live plot frame", while_running=True)
    nb.screenshot("dashboard", artifacts / "05-dashboard-live.png")
    # Click in the second epoch or later, so the stop lands after a validation (a table row exists).
    before = nb.poll("dashboard", lambda r: r["live"] and (harness.steps_shown(r, steps_per_epoch) or 0) > steps_per_epoch,
                     60, what="a live reading past the first epoch", while_running=True)
    shown_step = harness.steps_shown(before, steps_per_epoch)
    assert shown_step is not None

    nb.mark_clicks('[data-nbtest="dashboard"] .widget-button', "stop")
    output.locator(".widget-button", has_text="Stop").click()
    result = nb.wait("dashboard", timeout=600)
    assert not result["errors"], result
    final = wait_snapshot(nb, "dashboard")
    nb.screenshot("dashboard", artifacts / "06-dashboard-stopped.png")

    # Stop: from the click to the page showing the stopped run, on the page's clock.
    clicked = nb.mark("stop")
    assert clicked is not None, "the Stop click was not seen by the page"
    stopped_at = [e["t"] for e in nb.timeline("dashboard") if e["t"] >= clicked and "stopped by user" in e["text"]]
    assert stopped_at, "the stopped state never appeared in the output"
    latency = stopped_at[0] - clicked
    match = STATUS.search(final["status"] or "")
    assert match, f"no stopped state with its step in {final['status']!r}"
    epoch, step = int(match["epoch"]), int(match["step"])
    assert match["source"] == "Stop button", final["status"]
    assert final["status"].startswith("■ "), final["status"]
    assert final["statusColor"] == nb.color("var(--jp-warn-color1,#e68a00)")
    stopped_global = (epoch - 1) * steps_per_epoch + step
    assert epoch >= 2, f"stopped in epoch {epoch}, but the click came after the first epoch"
    assert final["bars"][0]["value"] < 10, "the run finished all its epochs: Stop came too late"
    assert stopped_global >= shown_step, (stopped_global, shown_step)
    phase_bar = final["bars"][1]
    if match["eval_step"] is None:
        assert (phase_bar["label"], phase_bar["value"]) == ("train", step), phase_bar
    else:  # the click landed during the epoch's validation: the snapshot shows that eval step
        assert (phase_bar["label"], phase_bar["value"]) == ("eval", int(match["eval_step"])), phase_bar
    assert final["bars"][0]["label"] == f"epoch {epoch}/10"
    assert f"lr set to {LR_TEXT} at step" in final["text"]
    assert len(harness.plot_images(final, widget=False)) == 1
    TIMINGS["stop_click_to_stopped_page_ms"] = round(latency, 1)
    TIMINGS["stop_steps_after_shown"] = stopped_global - shown_step
    TIMINGS["stop_landed_in"] = "validation" if match["eval_step"] is not None else "training"
    assert latency < STOP_WITHIN_MS, f"Stop took {latency:.0f} ms from the click to the stopped state on the page"

    # The learning rate reached the optimizer.
    printed = nb.run("lr_print", timeout=300)
    assert not printed["errors"], printed
    lr = re.search(r"optimizer lr after the run: (\S+)", printed["text"])
    assert lr, printed["text"]
    assert float(lr.group(1)) == float(LR_TEXT), f"typed {LR_TEXT}, the optimizer has {lr.group(1)}"
    assert f"run ended: {status_text(final)}" in printed["text"], (printed["text"], final["status"])
    FINAL["dashboard"] = final
    SUMMARY.append(
        f"Dashboard: lr {LR_TEXT} applied ({applied['statusLine'].split(' · ')[1]}, "
        f"{TIMINGS['lr_typed_to_applied_ms']} ms after typing, {TIMINGS['lr_attempts']} attempt(s)), "
        f"printed lr {lr.group(1)}; "
        f"{len(digests)} live plot sources; Stop clicked at step {shown_step} shown -> "
        f"{status_text(final)!r} on the page {latency:.0f} ms after the click"
    )
    assert_page_healthy(nb)


def test_interrupt_button_stops_gracefully_and_kernel_stays_usable(
    notebook: harness.NotebookDriver, artifacts: Path
) -> None:
    nb = notebook
    nb.ensure("progress")  # the notebook imports the widget classes in the ProgressBar cell
    nb.watch("interrupt")
    nb.start("interrupt")
    nb.poll("interrupt", lambda r: r["live"] and (harness.run_progress(r) or 0) >= 1.0, 300,
            what="live training past 1 %", while_running=True)
    button = nb.page.locator('.jp-NotebookPanel-toolbar [data-command="notebook:interrupt-kernel"]')
    nb.mark_clicks('[data-command="notebook:interrupt-kernel"]', "interrupt")
    button.click()
    result = nb.wait("interrupt", timeout=600)
    assert not result["errors"], f"the interrupt was not graceful: {result['errors']}"
    assert "KeyboardInterrupt" not in result["text"] + result["stderr"]
    final = wait_snapshot(nb, "interrupt")
    nb.screenshot("interrupt", artifacts / "07-interrupt-stopped.png")
    match = STATUS.search(final["status"] or "")
    assert match and match["source"] == "kernel interrupt", final["status"]
    assert final["status"].startswith("■ ")
    assert final["statusColor"] == nb.color("var(--jp-warn-color1,#e68a00)")

    usable = nb.run("usable", timeout=300)
    assert not usable["errors"], usable
    assert f"the kernel is still usable; the run ended: {status_text(final)}" in usable["text"], usable["text"]
    accuracy = re.search(r"accuracy of the model as it is now: ([0-9.]+)", usable["text"])
    assert accuracy and 0.0 <= float(accuracy.group(1)) <= 1.0, usable["text"]
    nb.screenshot("usable", artifacts / "08-kernel-usable.png")

    clicked = nb.mark("interrupt")
    seen = [e["t"] for e in nb.timeline("interrupt") if clicked is not None and e["t"] >= clicked
            and "stopped by user" in e["text"]]
    if seen:
        TIMINGS["interrupt_click_to_stopped_page_ms"] = round(seen[0] - clicked, 1)
    FINAL["interrupt"] = final
    SUMMARY.append(f"interrupt button: {status_text(final)!r}"
                   + (f" on the page {seen[0] - clicked:.0f} ms after the click" if seen else "")
                   + f"; next cell printed accuracy {accuracy.group(1)}")
    assert_page_healthy(nb)


def test_saved_notebook_reloads_with_static_snapshots(
    notebook: harness.NotebookDriver, lab: harness.LabServer, artifacts: Path
) -> None:
    nb = notebook
    ran = [cell for cell in ("progress", "plot", "dashboard", "interrupt") if cell in FINAL]
    if not ran:
        pytest.skip("no training cell ran in this session (this test follows the others in the module)")
    nb.save()

    # What was saved: snapshots, no widget views, no widget state.
    saved = json.loads((lab.root_dir / NOTEBOOK_NAME).read_text())
    for cell in ran:
        outputs = saved["cells"][nb.index[cell]]["outputs"]
        bundles = [o.get("data", {}) for o in outputs if o["output_type"] in ("display_data", "execute_result")]
        assert not any(WIDGET_VIEW in b for b in bundles), f"cell {cell!r} saved a widget view: {bundles}"
        html = "".join(_text(b.get("text/html", "")) for b in bundles)
        assert status_text(FINAL[cell]) in html, f"cell {cell!r} saved no snapshot of {FINAL[cell]['status']!r}"
    state = saved["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    assert not state.get("state"), f"widget state saved in the notebook: {list(state.get('state', {}))[:5]}"

    nb.shutdown_kernel()
    assert lab.kernels() == [], "the kernel is still running after the shutdown"
    nb.page.reload()
    nb.wait_ready()
    for cell in ran:
        before = FINAL[cell]
        after = wait_snapshot(nb, cell)
        assert after["status"] == before["status"], (cell, after["status"], before["status"])
        assert [(b["label"], b["value"], b["max"]) for b in after["bars"]] == [
            (b["label"], b["value"], b["max"]) for b in before["bars"]
        ], cell
        assert len(harness.plot_images(after, widget=False)) == len(harness.plot_images(before, widget=False)), cell
    # Give the widget manager time to fail on anything it would fail on.
    harness.wait_until(lambda: nb.page.evaluate("() => window.__nbt.loading()") == 0, timeout=30)
    nb.page.wait_for_timeout(2000)
    assert nb.page.evaluate("() => window.__nbt.loading()") == 0, "a widget view is still 'Loading widget...'"
    nb.output("dashboard" if "dashboard" in ran else ran[0]).scroll_into_view_if_needed()
    nb.screenshot(None, artifacts / "09-reloaded-page.png")
    nb.screenshot("dashboard" if "dashboard" in ran else ran[0], artifacts / "10-reloaded-snapshot.png")
    trusted = nb.page.evaluate(
        "() => window.__nbt.panel().content.widgets.filter(c => c.model.type === 'code').every(c => c.model.trusted)"
    )
    SUMMARY.append(f"reload after save + kernel shutdown: {len(ran)} snapshots shown, no widget errors, "
                   f"notebook trusted: {trusted}")
    assert_page_healthy(nb)
