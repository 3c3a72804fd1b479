"""``Dashboard()`` in marimo, live, in Debian's Chromium (``examples/marimo_dashboard.py``).

``marimo run --headless`` serves the example; the page's bars and status change
several times while the cell trains, then the live view gives way to the
snapshot and the PNG.  Every request of the page stays on the loopback server.
The headless export test is ``tests/widgets/test_marimo.py``.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.browser import harness
from tests.browser.harness import alive, descendants
from tests.widgets.test_marimo import _copy_example, _env

pytest.importorskip("marimo")


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
        # the live training-loss line's vertices (its points come as float32 buffers in the widget's messages)
        "curve": max((len(re.findall("[ML]", d or "")) for d in page.locator(".nbc-dash path.nbc-bold").evaluate_all(
            "paths => paths.map((p) => p.getAttribute('d'))")), default=0),
    }


def test_marimo_run_shows_live_progress_then_the_snapshot(mnist_root: Path, tmp_path: Path, browser: Any) -> None:
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
        # the session's Chromium: one Playwright per process (a second one would clash)
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
    assert max(r["curve"] for r in live) >= 20, [r["curve"] for r in live]  # with the loss curve in it
    epochs_seen = {r["bars"][0].split("%")[0] for r in live}
    assert len(epochs_seen) >= 3, epochs_seen
    assert live[-1]["t"] - live[0]["t"] > 1.0

    # The end: the snapshot replaced the live view; the PNG loaded (checked above); nothing left the machine.
    final = readings[-1]
    assert final["live"] == 0 and final["snapshot"], summary
    assert "finished" in final["snapshot"][0] and "epoch 5/5" in final["snapshot"][0]
    assert violations == [], violations
    assert "Traceback" not in server_log, server_log[-3000:]
