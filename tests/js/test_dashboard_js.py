"""The front end's unit tests (``tests/js/*.test.mjs``), run with Node's built-in test runner.

``node --test`` imports the pure functions of ``nbcallback/widgets/static/dashboard.js``
(scales, ticks, paths, the delta merge rule, number formatting, the lr check) without a
browser.  Part of the README's test command, so CI runs them on every landing.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def test_the_dashboard_module_passes_its_node_tests() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed (apt-get install nodejs); the JS unit tests need it")
    files = sorted(str(p) for p in HERE.glob("*.test.mjs"))
    assert files, "no tests/js/*.test.mjs found"
    done = subprocess.run([node, "--test", *files], capture_output=True, text=True, timeout=120, cwd=HERE)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout, done.stdout[-2000:]
