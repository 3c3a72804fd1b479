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


def test_bars_keep_their_columns_where_subgrid_is_missing() -> None:
    """Each bar row takes the bars' shared columns through ``subgrid``; a browser without it (Chromium < 117, so
    VS Code <= 1.85) must still get three fixed columns -- label, track, text -- not three stacked rows."""
    import re

    css = (HERE.parents[1] / "nbcallback" / "widgets" / "static" / "dashboard.css").read_text(encoding="utf-8")
    rule = re.search(r"(?m)^(?:\.nbc-dash\s+)?\.nbc-bar\s*\{([^}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.S))
    assert rule is not None, "no .nbc-bar rule in dashboard.css"
    columns = re.findall(r"grid-template-columns:\s*([^;]+);", rule.group(1))
    assert columns[-1].strip() == "subgrid", columns
    assert len(columns) >= 2 and len(columns[0].split()) >= 3 and "subgrid" not in columns[0], columns
