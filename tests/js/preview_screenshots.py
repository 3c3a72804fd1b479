"""Screenshots of the dashboard front end on tests/js/preview.html (a manual tool, not a pytest test).

Serves the repository root on 127.0.0.1 (ES modules need http), opens the preview in Debian's chromium
through Playwright in the light and dark JupyterLab themes, mid-run and finished, narrow and wide, hovers
over the loss panel and checks the tooltip, checks the controls' messages, and writes PNGs::

    python tests/js/preview_screenshots.py [OUT_DIR]      # default: ./js-preview

Needs the ``playwright`` Python package and a ``chromium`` on PATH (never ``playwright install``).
"""
from __future__ import annotations

import functools
import http.server
import re
import shutil
import sys
import threading
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[2]


def _serve() -> tuple[http.server.ThreadingHTTPServer, str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(ROOT))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/tests/js/preview.html"


def _open(page: Page, url: str, errors: list[str]) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)
    page.wait_for_timeout(150)
    assert not errors, errors


def _checks(page: Page) -> None:
    """What a user would check on the finished run."""
    assert page.locator(".nbc-panel").count() == 3
    width = page.eval_on_selector(".nbc-bar[data-kind='train'] .nbc-bar-fill", "e => parseFloat(e.style.width)")
    assert width == 100, width
    assert page.locator(".nbc-status").get_attribute("data-state") == "finished"
    assert page.locator(".nbc-table tbody tr").count() == 3
    sizes = page.eval_on_selector_all(
        ".nbc-panel text", "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))"
    )
    assert sizes and min(sizes) >= 11, sizes
    # the legend sits above the data area: every legend label ends above the plot's top edge
    for panel in page.locator(".nbc-panel").all():
        top = panel.locator("path.nbc-axis").bounding_box()["y"]
        for label in panel.locator("text.nbc-legend").all():
            box = label.bounding_box()
            assert box["y"] + box["height"] <= top + 1, (box, top)


def _hover(page: Page, out: Path, name: str) -> str:
    panel = page.locator(".nbc-panel[data-title='loss']")
    box = panel.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.32, box["y"] + box["height"] * 0.5)
    page.wait_for_timeout(100)
    tip = page.locator(".nbc-panel[data-title='loss'] .nbc-tip")
    assert tip.is_visible()
    text = tip.inner_text()
    assert re.fullmatch(r"step \d+ · train [\d.e-]+( · eval loss [\d.e-]+)?", text), text
    assert panel.locator(".nbc-guide").count() == 1, "the guide line follows the mouse"
    page.screenshot(path=str(out / name), full_page=True)
    # near the first epoch's end the eval point is shown too
    axis = panel.locator("path.nbc-axis").bounding_box()
    page.mouse.move(axis["x"] + axis["width"] * 938 / 2814, axis["y"] + 40)
    page.wait_for_timeout(100)
    near_eval = tip.inner_text()
    assert "eval loss 0.29" in near_eval, near_eval
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] + 150)
    page.wait_for_timeout(100)
    assert not tip.is_visible(), "hidden on mouseleave"
    return f"{text} | {near_eval}"


# Partial data the module must draw without throwing: (spec, view) pairs rendered on fresh fake models.
EDGE_JS = """() => {
  const line = (key, style) => ({ key, label: key, color: key, style });
  const panel = (title, scale, lines) => ({ title, scale, lines });
  const panels = [
    panel("log, non-positive", "log", [line("loss", "band"), line("eval:loss", "points")]),
    panel("all null", "linear", [line("nulls", "line")]),
    panel("one point", "linear", [line("one", "points"), line("missing", "line")]),
    panel("lr", "log", [line("lr", "step")]),
  ];
  const cases = [
    [{}, {}],
    [{ parts: ["progress", "plot", "table", "controls"] }, { series: {} }],
    [{ panels, x_range: [5, 5], epoch_marks: [5, "x", null] }, {
      state: "error", html: { head: 3, table: null }, y_ranges: [[0, -1], null, "x"],
      controls: { enabled: true }, series: {
        loss: { gen: 0, start: 0, x: [5, 6, 7], y: [0, -1, null], lo: [null, 0, 1], hi: [1, 2] },
        "eval:loss": { gen: 0, start: 0, x: [6], y: [0.5], tail: { x: 7, y: null } },
        nulls: { gen: 0, start: 0, x: [1, 2], y: [null, null] },
        one: { gen: 0, start: 0, x: [5], y: [3] },
        lr: { gen: 0, start: 0, x: [5], y: [0] },
      } }],
    [{ panels: [null, { lines: null }, { title: 3, lines: [null, {}] }], x_range: null }, { series: null, html: null, y_ranges: null }],
  ];
  const box = document.createElement("div");
  document.body.replaceChildren(box);
  for (const [spec, view] of cases) {
    const handlers = {};
    const model = { get: (k) => ({ spec, view })[k], on: (e, f) => (handlers[e] ??= []).push(f),
                    off: () => {}, send: () => {} };
    const el = document.createElement("div");
    box.append(el);
    window.widget.initialize({ model });
    window.widget.render({ model, el });
  }
  return new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(() => ok(box.children.length))));
}"""


def _edges(page: Page, out: Path, errors: list[str]) -> None:
    assert page.evaluate(EDGE_JS) == 4
    page.wait_for_timeout(100)
    assert not errors, errors
    page.screenshot(path=str(out / "dashboard-edge-cases.png"), full_page=True)


LIVE_JS = """async () => {
  const frame = () => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)));
  const m = window.model;
  const d = () => document.querySelector(".nbc-panel[data-title='loss'] path.nbc-bold").getAttribute("d");
  const points = () => d().split(/[ML]/).filter(Boolean).length;
  const n = m.get("view").series.loss.x.length;
  const before = points();
  const status = (state) => `<div class="nbc-status" data-state="${state}"><span class="nbc-status-text">${state}</span></div>`;
  const view = (series, state) => ({ ...m.get("view"), state, html: { head: status(state), table: "" }, series });
  m.set("view", view({ loss: { gen: 1, start: n, x: [1504, 1520], y: [0.15, 0.14], lo: [0.1, 0.1], hi: [0.2, 0.2], tail: null } }, "running"));
  await frame();
  const grown = points();
  m.set("view", view({}, "stopped"));
  await frame();
  const state = document.querySelector(".nbc-status").dataset.state;
  const stopDisabled = document.querySelector(".nbc-stop").disabled;
  await new Promise((ok) => setTimeout(ok, 1100));
  const sentBefore = window.sent.length;
  m.set("view", view({ loss: { gen: 1, start: n + 50, x: [9999], y: [1] } }, "stopped"));
  await frame();
  const hello = window.sent.slice(sentBefore);
  m.set("spec", { ...m.get("spec"), panels: [...m.get("spec").panels, { title: "extra", scale: "linear", lines: [] }] });
  await frame();
  return { before, grown, state, stopDisabled, hello, panels: document.querySelectorAll(".nbc-panel").length };
}"""


def _live(page: Page) -> dict:
    """Updates after the first draw: a delta appends, the status changes, a gap says hello, a panel is added."""
    got = page.evaluate(LIVE_JS)
    # at step 1500 the open bucket (the tail) holds only non-finite losses (null): two drawable points more
    assert got["grown"] == got["before"] + 2, got
    assert got["state"] == "stopped" and got["stopDisabled"], got
    assert got["hello"] == [{"type": "hello"}], got
    assert got["panels"] == 4, got
    return got


def _controls(page: Page) -> list[dict]:
    page.fill(".nbc-lr", "abc")
    page.click(".nbc-lr-apply")
    assert "nbc-invalid" in (page.get_attribute(".nbc-lr", "class") or "")
    page.fill(".nbc-lr", "0.002")
    page.press(".nbc-lr", "Enter")
    page.click(".nbc-stop")
    assert page.inner_text(".nbc-stop") == "stopping…"
    assert page.locator(".nbc-stop").is_disabled()
    return page.evaluate("window.sent")


def main(out_dir: str = "js-preview") -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    server, url = _serve()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            for theme in ("light", "dark"):
                _open(page, f"{url}?theme={theme}", errors)
                _checks(page)
                page.screenshot(path=str(out / f"dashboard-{theme}.png"), full_page=True)
                print(theme, "hover:", _hover(page, out, f"dashboard-{theme}-hover.png"))
                _open(page, f"{url}?theme={theme}&at=1500", errors)
                page.screenshot(path=str(out / f"dashboard-{theme}-running.png"), full_page=True)
                if theme == "light":
                    print("live:", _live(page))
            _open(page, f"{url}?at=2000&width=420", errors)
            page.screenshot(path=str(out / "dashboard-narrow-running.png"), full_page=True)
            sent = _controls(page)
            assert sent == [{"type": "lr", "value": 0.002}, {"type": "stop"}], sent
            print("sent:", sent)
            _open(page, f"{url}?theme=marimo-dark&at=2400", errors)
            page.screenshot(path=str(out / "dashboard-marimo-dark-fallbacks.png"), full_page=True)
            _edges(page, out, errors)
            browser.close()
    finally:
        server.shutdown()
    print("wrote", sorted(f.name for f in out.glob("*.png")))


if __name__ == "__main__":
    main(*sys.argv[1:])
