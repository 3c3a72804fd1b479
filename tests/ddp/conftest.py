"""The DDP tests' ``slow`` test (full MNIST, minutes) runs only when asked for.

Asked for: ``pytest -m slow`` (any ``-m`` expression naming ``slow``) or
``NBCALLBACK_SLOW=1``. Otherwise it is skipped, so the plain test command
keeps the DDP tests under a few minutes.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "slow" in (config.getoption("-m") or "") or os.environ.get("NBCALLBACK_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="full-MNIST run: use -m slow or NBCALLBACK_SLOW=1")
    for item in items:
        if item.get_closest_marker("slow") and _HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)
