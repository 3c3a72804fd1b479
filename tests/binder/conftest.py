"""Prints how long the classroom replays' shared environments and notebook runs took (tests/binder/replay.py)."""
from __future__ import annotations

import pytest

from tests.binder.replay import TIMINGS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TIMINGS:
        terminalreporter.section("classroom replays")
        for name, seconds in TIMINGS.items():
            terminalreporter.write_line(f"{name}: {seconds:.0f} s")
