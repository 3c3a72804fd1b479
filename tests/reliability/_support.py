"""Shared pieces of the reliability suite: replayable seeds, the kill counter, hang guards."""
from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import zlib
from typing import Any, Iterator

from hypothesis import Phase

DEFAULT_SEED = 20240909
#: Hypothesis phases of the fuzz tests: no example database and no "explain" phase, so a
#: failure writes nothing into the checkout (the seed printed replays it).
FUZZ_PHASES = (Phase.explicit, Phase.generate, Phase.shrink)
SEED_ENV = "NBCALLBACK_RELIABILITY_SEED"
BASE_SEED = int(os.environ.get(SEED_ENV, DEFAULT_SEED))

#: (test node id, stream name, seed) of every random stream used in this session.
USED_SEEDS: list[tuple[str, str, int]] = []
#: One entry per SIGKILL delivered to a training process.
KILLS: list[str] = []


def derive_seed(name: str) -> int:
    """The seed of one random stream of the suite: a function of the base seed and the stream's name."""
    return zlib.crc32(f"{BASE_SEED}:{name}".encode())


def record_kill(what: str) -> None:
    KILLS.append(what)


class Hang(Exception):
    """An operation that should be quick did not return within its guard time."""


@contextlib.contextmanager
def hang_guard(seconds: float) -> Iterator[None]:
    """Turn a hang into a failure: ``Hang`` after ``seconds`` (Python code), a traceback dump
    and exit after ``4 * seconds`` (a hang in C code that never returns to Python)."""

    def alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no result within {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    faulthandler.dump_traceback_later(seconds * 4, exit=True, file=sys.__stderr__)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)
