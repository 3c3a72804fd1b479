"""#46 in JupyterLab (headless Chromium): a Lightning ``Trainer`` with ``LightningDashboard()`` shows the live
Dashboard, the Stop button clicked in the page ends the run through ``trainer.should_stop``, and the cell keeps the
snapshot and the PNG (the cell ``lightning`` of ``harness.CELLS``)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import harness
from tests.browser.harness import SUMMARY
from tests.browser.test_widgets_notebook import live_steps, wait_snapshot

pytestmark = pytest.mark.browser
pytest.importorskip("lightning", reason="Lightning is not installed: pip install 'nbcallback[lightning]'")


def test_lightning_dashboard_stop_click_ends_the_trainer(notebook: harness.NotebookDriver, artifacts: Path) -> None:
    nb, cell = notebook, "lightning"
    assert nb.kernel_supports_subshells(), "the kernel does not advertise subshells: the controls cannot act"
    nb.start(cell)
    nb.poll(cell, lambda r: r["live"] > 0 and r["controls"] and live_steps(r) > 0 and bool(r["panels"]), 300,
            what="Lightning's live dashboard with its controls", while_running=True)
    nb.screenshot(cell, artifacts / "lightning-01-live.png")
    stop = nb.output(cell).locator("button.nbc-stop")
    stop.scroll_into_view_if_needed()
    stop.click()
    result = nb.wait(cell, timeout=600)
    assert not result["errors"], result
    facts = nb.result(cell)
    assert facts["should_stop"] is True, facts
    assert facts["status"] == "stopped" and "Stop button" in facts["status_text"], facts
    assert facts["global_step"] == facts["steps_done"] < facts["total_steps"] // 2, facts
    final = wait_snapshot(nb, cell, png=True)
    assert "stopped by user" in " ".join(final["snapshots"]), final["snapshots"]
    nb.screenshot(cell, artifacts / "lightning-02-stopped.png")
    SUMMARY.append(f"Lightning: Stop -> {facts['status_text']!r} after {facts['steps_done']} of "
                   f"{facts['total_steps']} steps")
    assert not nb.widget_errors() and not nb.page_errors, (nb.widget_errors(), nb.page_errors)
