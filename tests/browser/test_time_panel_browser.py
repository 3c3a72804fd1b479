"""#35 in JupyterLab (headless Chromium): the Dashboard's "where the time goes" bar and HookTrace's HTML view.

On the tests' own notebook (``harness.CELLS``: ``time_panel``, ``hook_trace``), in file order:

1. A ``fit`` with a ``CallbackProfiler``, a callback that sleeps 4 ms a step and a ``Dashboard``: the live
   dashboard shows the bar (segments that fill it, the slow callback named in the legend), screenshots in the
   Light and Dark themes; the text follows the theme and stays readable.  At the end the snapshot shows the same
   bar, drawn at the shares the kernel's profiler measured; screenshots in both themes again.
2. A ``HookTrace`` of a short ``fit`` stopped in epoch 2, shown as the cell's value: its HTML table in both themes.

Screenshots go to the artifact folder (``$NBCALLBACK_ARTIFACTS/browser`` or a pytest temporary folder), never
into the checkout.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser import harness
from tests.browser.harness import DARK, LIGHT, SUMMARY

pytestmark = pytest.mark.browser

MIN_CONTRAST = 4.5

#: What the page shows of the time bars in a cell's output: each bar (live ones inside the dashboard, the
#: snapshot's outside), its width, its segments' widths and keys, the legend, the title's colour and contrast.
_READ_BARS = """
(cell) => {
  const out = document.querySelector(`[data-nbtest="${cell}"] .jp-Cell-outputArea`);
  if (!out) return [];
  const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                       return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const under = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
                          if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c; } return [255, 255, 255]; };
  return [...out.querySelectorAll('.nbc-time')].filter((t) => t.querySelector('.nbc-time-bar')).map((time) => {
    const bar = time.querySelector('.nbc-time-bar');
    const title = time.querySelector('.nbc-time-title');
    const fg = rgb(getComputedStyle(title).color), bg = under(title);
    const [a, b] = [lum(fg), lum(bg)];
    return {
      live: Boolean(time.closest('.nbc-dash')),
      visible: time.offsetParent !== null && bar.getBoundingClientRect().width > 0,
      width: bar.getBoundingClientRect().width,
      segments: [...bar.querySelectorAll('.nbc-time-seg')].map((s) => ({key: s.dataset.key,
        width: s.getBoundingClientRect().width, tip: s.title})),
      legend: [...time.querySelectorAll('.nbc-time-item')].map((i) => i.textContent),
      title: title.textContent, color: fg, background: bg,
      contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05),
    };
  });
}
"""


def bars(nb: harness.NotebookDriver, cell: str) -> list[dict[str, Any]]:
    return list(nb.page.evaluate(_READ_BARS, cell))


def shoot(nb: harness.NotebookDriver, cell: str, path: Path, selector: str | None = None) -> Path:
    """A screenshot of the cell's output (or of its first ``selector`` element)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    target = nb.output(cell)
    if selector is not None:
        target = target.locator(selector).first
    target.scroll_into_view_if_needed()
    target.screenshot(path=str(path))
    return path


def shoot_top(nb: harness.NotebookDriver, cell: str, path: Path, selector: str, height: int = 900) -> Path:
    """A screenshot of the top ``height`` px of the cell's first ``selector`` element (one taller than the page
    cannot be taken whole inside JupyterLab's scrolled notebook)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    target = nb.output(cell).locator(selector).first
    target.evaluate("(el) => el.scrollIntoView({block: 'start'})")
    nb.page.wait_for_timeout(200)
    box = target.bounding_box()
    assert box is not None, f"{selector} is not rendered"
    room = nb.page.viewport_size["height"] - box["y"] - 40  # above JupyterLab's status bar
    clip = {"x": box["x"], "y": box["y"], "width": box["width"], "height": min(box["height"], height, room)}
    nb.page.screenshot(path=str(path), clip=clip)
    return path


def in_themes(nb: harness.NotebookDriver, cell: str, shots: dict[str, Path], read: Any,
              selector: str | None = None) -> dict[str, Any]:
    """Screenshot the cell's output (or the top of its ``selector`` element) in each theme of ``shots`` (in
    order) and ``read()`` the page there; ends in the Light theme."""
    seen: dict[str, Any] = {}
    try:
        for theme, path in shots.items():
            nb.set_theme(theme)
            shot = shoot(nb, cell, path) if selector is None else shoot_top(nb, cell, path, selector)
            seen[theme] = {"read": read(), "shot": shot}
    finally:
        if nb.theme() != LIGHT:
            nb.set_theme(LIGHT)
    return seen


def assert_readable(seen: dict[str, Any], what: str) -> None:
    for theme in (LIGHT, DARK):
        reading = seen[theme]["read"]
        assert reading["contrast"] > MIN_CONTRAST, f"{theme}: {what} text {reading['color']} on " \
                                                   f"{reading['background']}: contrast {reading['contrast']:.2f}"
    assert seen[LIGHT]["read"]["color"] != seen[DARK]["read"]["color"], f"{what}: the text keeps its colour"


def test_time_panel_live_and_in_the_snapshot(notebook: harness.NotebookDriver, artifacts: Path) -> None:
    nb, cell = notebook, "time_panel"
    nb.start(cell)
    def timed_a_step(bar: dict[str, Any]) -> bool:  # the first refresh comes before any step has been timed
        return bar["live"] and bar["visible"] and any(s["key"] == "step" for s in bar["segments"]) and any(
            item.startswith("SlowCallback") for item in bar["legend"])

    live = nb.poll(cell, lambda r: r["live"] > 0 and any(timed_a_step(b) for b in bars(nb, cell)), 120,
                   what="the live dashboard's time bar after the first steps", while_running=True)
    assert live["live"] > 0
    shots = in_themes(nb, cell, {LIGHT: artifacts / "time-01-live-light.png", DARK: artifacts / "time-02-live-dark.png"},
                      lambda: next(b for b in bars(nb, cell) if b["live"]))
    result = nb.wait(cell, timeout=600)
    assert not result["errors"], result
    facts = nb.result(cell)
    assert facts["status"] == "finished", facts

    for theme in (LIGHT, DARK):  # live: the segments fill the bar; the slow callback has its own
        bar = shots[theme]["read"]
        keys = [s["key"] for s in bar["segments"]]
        assert keys[0] == "step" and keys[-1] == "loop" and "callback" in keys, bar
        assert sum(s["width"] for s in bar["segments"]) == pytest.approx(bar["width"], rel=0.02), bar
        assert any(item.startswith("SlowCallback") for item in bar["legend"]), bar["legend"]
        assert bar["title"].startswith("where the time goes"), bar["title"]
    assert_readable(shots, "live time bar")

    final = nb.poll(cell, lambda r: not r["live"] and bool(r["snapshots"]) and len(bars(nb, cell)) == 1, 60,
                    what="the snapshot with its time bar")
    assert final["snapshots"]
    end = in_themes(nb, cell, {DARK: artifacts / "time-03-final-dark.png", LIGHT: artifacts / "time-04-final-light.png"},
                    lambda: bars(nb, cell)[0])
    shoot(nb, cell, artifacts / "time-05-final-bar-light.png", ".nbc-time")
    bar = end[LIGHT]["read"]
    assert not bar["live"] and bar["visible"]
    # The snapshot draws what the kernel's profiler measured at the end, segment by segment.
    assert [s["key"] for s in bar["segments"]] == [key for key, _, _ in facts["segments"]], (bar, facts)
    for seg, (_, label, share) in zip(bar["segments"], facts["segments"]):
        assert seg["width"] / bar["width"] == pytest.approx(share, abs=0.01), (seg, label, share)
        assert seg["tip"].startswith(label + ":"), seg
    slow = next(share for key, label, share in facts["segments"] if label == "SlowCallback")
    assert slow == max(share for key, _, share in facts["segments"] if key == "callback"), facts["segments"]
    assert sum(share for _, _, share in facts["segments"]) == pytest.approx(1.0, abs=0.02), facts
    assert_readable(end, "snapshot time bar")
    SUMMARY.append("time bar: live and final, Light and Dark: " + ", ".join(
        p.name for p in [*(v["shot"] for v in shots.values()), *(v["shot"] for v in end.values())]))
    assert not nb.widget_errors() and not nb.page_errors, (nb.widget_errors(), nb.page_errors)


_READ_TRACE = """
(cell) => {
  const table = document.querySelector(`[data-nbtest="${cell}"] .jp-Cell-outputArea table.nbcallback-hook-trace`);
  if (!table) return null;
  const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                       return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const under = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
                          if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c; } return [255, 255, 255]; };
  const code = table.querySelector('td code');
  const fg = rgb(getComputedStyle(code).color), bg = under(code);
  const [a, b] = [lum(fg), lum(bg)];
  return {rows: table.querySelectorAll('tr').length, text: table.innerText, width: table.getBoundingClientRect().width,
          color: fg, background: bg, contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)};
}
"""


def test_hook_trace_html_in_both_themes(notebook: harness.NotebookDriver, artifacts: Path) -> None:
    nb, cell = notebook, "hook_trace"
    result = nb.run(cell, timeout=300)
    assert not result["errors"], result
    facts = nb.result(cell)
    assert facts["hooks"] > 10, facts
    harness.wait_until(lambda: nb.page.evaluate(_READ_TRACE, cell) is not None, 30)
    seen = in_themes(nb, cell, {LIGHT: artifacts / "trace-01-light.png", DARK: artifacts / "trace-02-dark.png"},
                     lambda: nb.page.evaluate(_READ_TRACE, cell), "table.nbcallback-hook-trace")
    for theme in (LIGHT, DARK):
        table = seen[theme]["read"]
        assert table is not None and table["rows"] > 10 and table["width"] > 200, table
        for hook in ("on_train_begin", "on_train_step_end", "on_eval_end", "on_train_end"):
            assert hook in table["text"], (hook, table["text"][:500])
        assert "more steps" in table["text"], table["text"][:800]  # the middle steps folded into a count
    assert_readable(seen, "hook trace")
    SUMMARY.append(f"hook trace: {seen[LIGHT]['read']['rows']} rows; screenshots "
                   + ", ".join(v["shot"].name for v in seen.values()))
    assert not nb.widget_errors() and not nb.page_errors, (nb.widget_errors(), nb.page_errors)
