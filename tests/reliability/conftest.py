"""Fixtures of the reliability suite: seeds that can be replayed, the warm training process.

Every random choice of this suite comes from the ``seeded`` fixture, derived
from one base seed (``$NBCALLBACK_RELIABILITY_SEED``, default
``_support.DEFAULT_SEED``).  The seeds used are printed in each test's output
and listed at the end of the session with the command that replays them.
"""
from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.reliability._support import BASE_SEED, KILLS, SEED_ENV, USED_SEEDS, derive_seed
from tests.reliability._warm import WarmProcess


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "reliability: fault-injection tests (SIGKILLs, hostile files, interrupts); run by default"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.reliability)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not USED_SEEDS and not KILLS:
        return
    write = terminalreporter.write_line
    terminalreporter.section("reliability seeds")
    write(f"base seed {BASE_SEED} (replay: {SEED_ENV}={BASE_SEED} python -m pytest tests/reliability)")
    for nodeid, name, seed in USED_SEEDS:
        write(f"  {seed:>10}  {name}  [{nodeid}]")
    if KILLS:
        write(f"SIGKILLs delivered to training processes: {len(KILLS)}")


@pytest.fixture
def seeded(request: pytest.FixtureRequest) -> Callable[[str], random.Random]:
    """``seeded(name)`` -> a ``random.Random`` for that name; the seed is printed and recorded."""

    def make(name: str) -> random.Random:
        seed = derive_seed(name)
        USED_SEEDS.append((request.node.nodeid, name, seed))
        print(f"SEED {name} = {seed} (base {BASE_SEED}; replay with {SEED_ENV}={BASE_SEED})")
        return random.Random(seed)

    return make


@pytest.fixture(autouse=True)
def _note_hypothesis_seed(request: pytest.FixtureRequest) -> None:
    """List the ``@seed`` of the Hypothesis tests with the other seeds."""
    value = getattr(getattr(request.node, "function", None), "_hypothesis_internal_use_seed", None)
    if value is not None:
        USED_SEEDS.append((request.node.nodeid, "hypothesis @seed", value))
        print(f"SEED hypothesis = {value} (base {BASE_SEED}; replay with {SEED_ENV}={BASE_SEED})")


@pytest.fixture(scope="session")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmProcess]:
    """The warm training process (see :mod:`tests.reliability._warm`), killed by PID at the end."""
    if not hasattr(os, "fork"):
        pytest.skip("the kill tests fork a warm training process (POSIX only)")
    folder = tmp_path_factory.mktemp("warm")
    process = WarmProcess(folder / "stderr.txt")
    try:
        yield process
    finally:
        process.close()
