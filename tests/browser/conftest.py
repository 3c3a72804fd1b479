"""Fixtures of the real-browser tests: JupyterLab, Debian's Chromium, one notebook page.

* ``lab`` (session): JupyterLab on 127.0.0.1 with a temporary config, token,
  settings and runtime folders, serving a temporary root that holds the tests'
  own notebook (:func:`harness.write_notebook`: nothing in ``notebooks/`` is
  opened or saved).  Its kernels download MNIST from the loopback mirror
  (``NBCALLBACK_MNIST_URL``) into a temporary ``NBCALLBACK_DATA``.  Stopped
  by its PID at the end (kernels shut down first; any kernel process left is
  killed by its PID and fails the run).
* ``browser`` (session): headless ``/usr/bin/chromium`` through Playwright.
* ``notebook`` (module): a page with the route guard, the notebook open, the
  kernel idle and the setup cell run (full MNIST: 938 steps of 64; a 12,000
  image slice: 188).  The guard must have blocked nothing.

Screenshots, the saved notebook, the server log and ``timings.json`` go to
``$NBCALLBACK_ARTIFACTS/browser`` (or a pytest temporary folder); the folder
is printed at the end of the run.  Every test here is marked ``browser`` and
skipped, with the reason, when Chromium or playwright is missing.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.browser import harness
from tests.browser.harness import NOTEBOOK_NAME, SUMMARY, TIMINGS

HERE = Path(__file__).resolve().parent


def _in_here(item: pytest.Item) -> bool:
    return HERE in Path(str(item.fspath)).resolve().parents


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mine = [item for item in items if _in_here(item)]
    if not mine:
        return
    reason = harness.missing_requirements()
    for item in mine:
        item.add_marker(pytest.mark.browser)
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"browser tests skipped: {reason}"))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if SUMMARY:
        terminalreporter.section("browser tests")
        for line in SUMMARY:
            terminalreporter.write_line(line)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if _in_here(item):
        setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The folder for screenshots and logs (printed in the terminal summary)."""
    base = os.environ.get("NBCALLBACK_ARTIFACTS")
    if base:
        folder = Path(base).resolve() / "browser"
        folder.mkdir(parents=True, exist_ok=True)
        for pattern in ("*.png", "timings.json", "jupyterlab.log", "saved-*.ipynb"):  # ours, from an earlier run
            for old in folder.glob(pattern):
                old.unlink()
    else:
        folder = tmp_path_factory.mktemp("browser-artifacts")
    SUMMARY.insert(0, f"screenshots and logs: {folder}")
    yield folder
    (folder / "timings.json").write_text(json.dumps(TIMINGS, indent=1, sort_keys=True))


@pytest.fixture(scope="session")
def lab(mnist_mirror: str, tmp_path_factory: pytest.TempPathFactory, artifacts: Path) -> Iterator[harness.LabServer]:
    root = tmp_path_factory.mktemp("lab-root")
    data = tmp_path_factory.mktemp("lab-data")
    harness.write_notebook(root / NOTEBOOK_NAME)
    server = harness.LabServer(
        root,
        tmp_path_factory.mktemp("lab-home"),
        env={"NBCALLBACK_MNIST_URL": mnist_mirror, "NBCALLBACK_DATA": str(data), "OMP_NUM_THREADS": "1"},
    )
    server.start()
    try:
        yield server
    finally:
        killed = server.stop()
        shutil.copy(server.log_path, artifacts / "jupyterlab.log")
        saved = root / NOTEBOOK_NAME
        if saved.exists():
            shutil.copy(saved, artifacts / f"saved-{NOTEBOOK_NAME}")
        SUMMARY.append(f"JupyterLab (pid stopped), kernel pids seen: {sorted(server.kernel_pids)}, killed after shutdown: {killed}")
        assert not killed, f"kernel processes {killed} outlived the server's shutdown and had to be killed"


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium; its processes (and Playwright's driver) must be gone at the end."""
    manager = harness.Browser()
    with manager as chromium:
        yield chromium
    SUMMARY.append(f"Chromium and Playwright driver pids: {sorted(manager.pids)}, killed after close: {manager.leftovers}")
    assert not manager.leftovers, f"browser processes {manager.leftovers} outlived close() and had to be killed"


@pytest.fixture(scope="module")
def notebook(lab: harness.LabServer, browser: Any) -> Iterator[harness.NotebookDriver]:
    """The tests' notebook open in a fresh page, kernel idle, setup cell run."""
    context, page, guard = harness.new_page(browser, lab)
    page.set_default_timeout(120_000)
    driver = harness.NotebookDriver(page, lab, NOTEBOOK_NAME, guard=guard)
    try:
        driver.open(reset=True)
        result = driver.run("setup", timeout=600)
        assert not result["errors"], f"the setup cell failed: {result['errors']}\n{result['text']}"
        facts = driver.result("setup")
        assert (facts["steps"], facts["slice_steps"]) == (938, 188), facts  # 60,000 and 12,000 images in batches of 64
        yield driver
    finally:
        blocked = guard.violations()
        context.close()
    assert not blocked, f"requests that would have left 127.0.0.1 (aborted by the route guard): {blocked}"


@pytest.fixture(autouse=True)
def _screenshot_on_failure(request: pytest.FixtureRequest, artifacts: Path) -> Iterator[None]:
    yield
    report = getattr(request.node, "rep_call", None)
    driver = request.node.funcargs.get("notebook") if hasattr(request.node, "funcargs") else None
    if report is not None and report.failed and driver is not None:
        try:
            path = artifacts / f"FAILED-{request.node.name}.png"
            driver.screenshot(None, path)
            SUMMARY.append(f"failure screenshot: {path}")
        except Exception as exc:  # the page may be gone; the failure itself is what matters
            SUMMARY.append(f"no failure screenshot for {request.node.name}: {exc}")
