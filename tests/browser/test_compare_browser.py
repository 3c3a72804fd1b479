"""#47 in JupyterLab (headless Chromium): ``Dashboard(compare=2)`` draws two earlier runs faint under the live one.

On the tests' own notebook (``harness.CELLS``: ``compare``): two short runs (lr 0.1 and 0.002) are remembered, then
a third (lr 0.02) is shown by ``Dashboard(compare=2)`` and paused in its second epoch.  Live, in the Light and Dark
themes: each panel with the earlier runs' series draws one faint path per run under the live lines, in the run's
colour (readable on both backgrounds), the legend and the paths' ``<title>`` name the runs by what differs, hovering
the loss panel names them in the tooltip, and the compared runs' table has the live row.  At the end the snapshot
keeps the table and the PNG draws the runs; screenshots of both themes and the PNG go to the artifact folder.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.browser import harness
from tests.browser.harness import DARK, LIGHT, SUMMARY

pytestmark = pytest.mark.browser

#: Faint lines are quieter than text (WCAG's 3:1 is for graphics one must read), but still plainly visible.
MIN_LINE_CONTRAST = 1.8

#: What the cell's live dashboard (or, without one, its snapshot) shows of the compared runs.
_READ_OVERLAY = """
(cell) => {
  const out = document.querySelector(`[data-nbtest="${cell}"] .jp-Cell-outputArea`);
  if (!out) return null;
  const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                       return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const under = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
                          if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c; } return [255, 255, 255]; };
  const dash = out.querySelector('.nbc-dash');
  const panels = dash ? [...dash.querySelectorAll('.nbc-panel')].map((panel) => {
    const paths = [...panel.querySelectorAll('path.nbc-overlay')];
    const clip = panel.querySelector('g[clip-path]');
    const kids = clip ? [...clip.children] : [];
    const firstLive = kids.findIndex((k) => (k.getAttribute('class') || '').includes('nbc-line')
                                           || (k.getAttribute('class') || '').includes('nbc-band'));
    const lastRun = kids.map((k) => k.getAttribute('class')).lastIndexOf('nbc-run');
    const bg = under(panel);
    return {
      title: panel.dataset.title,
      paths: paths.map((p) => {
        const style = getComputedStyle(p);
        const c = rgb(style.stroke), a = Number(style.strokeOpacity);
        const seen = c.slice(0, 3).map((v, i) => a * v + (1 - a) * bg[i]);
        const [x, y] = [lum(seen), lum(bg)];
        return { stroke: p.getAttribute('stroke'), d: (p.getAttribute('d') || '').length, width: style.strokeWidth,
                 opacity: a, contrast: (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05),
                 title: p.parentElement.querySelector('title')?.textContent || '' };
      }),
      under: lastRun >= 0 && firstLive >= 0 && lastRun < firstLive,
      legend: [...panel.querySelectorAll('.nbc-run-label')].map((t) => t.lastChild.textContent),
      live: panel.querySelectorAll('path.nbc-line').length,
      tip: panel.querySelector('.nbc-tip')?.hidden ? '' : panel.querySelector('.nbc-tip')?.textContent || '',
      background: bg,
    };
  }) : [];
  const table = out.querySelector('table.nbc-compare');
  return {
    live: Boolean(dash),
    panels,
    table: table ? [...table.querySelectorAll('tbody tr')].map((tr) => ({
      cells: [...tr.querySelectorAll('td')].map((td) => td.textContent.trim()), title: tr.title,
      live: tr.dataset.live === '1'})) : [],
    images: out.querySelectorAll('img').length,
  };
}
"""


def overlay(nb: harness.NotebookDriver, cell: str) -> dict[str, Any]:
    return dict(nb.page.evaluate(_READ_OVERLAY, cell) or {})


def shoot(nb: harness.NotebookDriver, cell: str, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    target = nb.output(cell)
    target.scroll_into_view_if_needed()
    target.screenshot(path=str(path))
    return path


def test_earlier_runs_drawn_faint_under_the_live_one_in_both_themes(notebook: harness.NotebookDriver,
                                                                     artifacts: Path) -> None:
    nb, cell = notebook, "compare"
    nb.start(cell)
    nb.wait_paused(cell, timeout=600)
    drawn = nb.poll(cell, lambda r: r["live"] > 0, 60, what="the live dashboard")
    assert drawn["live"]
    harness.wait_until(lambda: any(p["title"] == "accuracy" and p["paths"] for p in overlay(nb, cell)["panels"]), 30)
    seen: dict[str, Any] = {}
    try:
        for theme, name in ((LIGHT, "compare-01-live-light.png"), (DARK, "compare-02-live-dark.png")):
            nb.set_theme(theme)
            shot = shoot(nb, cell, artifacts / name)
            loss = nb.output(cell).locator('.nbc-dash .nbc-panel[data-title="loss"]').first
            nb.hover(loss, fx=0.3, fy=0.5)
            nb.page.wait_for_timeout(300)
            hovered = shoot(nb, cell, artifacts / name.replace(".png", "-hover.png"))
            seen[theme] = {"read": overlay(nb, cell), "shots": [shot, hovered]}
            nb.page.mouse.move(0, 0)
    finally:
        if nb.theme() != LIGHT:
            nb.set_theme(LIGHT)
    nb.release(cell)
    result = nb.wait(cell, timeout=600)
    assert not result["errors"], result
    facts = nb.result(cell)
    assert facts["status"] == "finished", facts
    assert facts["labels"] == ["lr 0.002", "lr 0.1"], facts  # the newest first, named by what differs

    for theme in (LIGHT, DARK):
        reading = seen[theme]["read"]
        panels = {panel["title"]: panel for panel in reading["panels"]}
        assert {"loss", "accuracy"} <= set(panels), panels.keys()
        for title in ("loss", "accuracy"):
            panel = panels[title]
            strokes = [path["stroke"] for path in panel["paths"]]
            # loss: each run's training loss and its evaluation loss; accuracy: one line each
            assert sorted(set(strokes)) == sorted(facts["colors"]), (theme, title, strokes)
            assert len(strokes) == (4 if title == "loss" else 2), (theme, title, strokes)
            assert all(path["d"] >= 15 for path in panel["paths"]), panel["paths"]  # two points or more
            assert all(path["opacity"] < 1 for path in panel["paths"]), panel["paths"]  # faint
            assert panel["under"], f"{theme} {title}: the earlier runs are drawn under the live lines"
            assert panel["live"] >= 1
            assert sorted(panel["legend"]) == sorted(facts["labels"]), panel["legend"]
            assert {path["title"] for path in panel["paths"]} == set(facts["hovers"]), panel["paths"]
            for path in panel["paths"]:
                assert path["contrast"] >= MIN_LINE_CONTRAST, (theme, title, path, panel["background"])
        tip = panels["loss"]["tip"]
        assert any(label in tip for label in facts["labels"]), f"{theme}: the tooltip names no earlier run: {tip!r}"
        table = reading["table"]
        assert [row["cells"][0] for row in table] == ["this run", *facts["labels"]], table
        assert table[0]["live"] and table[0]["cells"][1] == "running", table[0]
        assert [row["title"] for row in table[1:]] == facts["hovers"], table
    assert seen[LIGHT]["read"]["panels"][0]["background"] != seen[DARK]["read"]["panels"][0]["background"]

    final = nb.poll(cell, lambda r: not r["live"] and bool(r["snapshots"]), 60, what="the snapshot")
    assert final["snapshots"]
    harness.wait_until(lambda: overlay(nb, cell).get("table"), 30)
    end = overlay(nb, cell)
    assert not end["live"] and end["images"] >= 1, end
    assert [row["cells"][0] for row in end["table"]] == ["this run", *facts["labels"]], end["table"]
    assert end["table"][0]["cells"][1] == "finished", end["table"][0]
    shots = [shoot(nb, cell, artifacts / "compare-03-final-light.png")]
    nb.set_theme(DARK)
    try:
        shots.append(shoot(nb, cell, artifacts / "compare-04-final-dark.png"))
    finally:
        nb.set_theme(LIGHT)
    png = nb.lab.root_dir / "compare-final.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    shutil.copy(png, artifacts / "compare-05-final-plot.png")
    SUMMARY.append("compare: live and final, Light and Dark: " + ", ".join(
        p.name for p in [*(s for v in seen.values() for s in v["shots"]), *shots]) + ", compare-05-final-plot.png")
    assert not nb.widget_errors() and not nb.page_errors, (nb.widget_errors(), nb.page_errors)
