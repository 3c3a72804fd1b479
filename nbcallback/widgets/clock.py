"""Clocks and the two schedulers that keep the display off the training hot path.

* :class:`CheckScheduler` decides after how many steps the callback looks at the
  clock again.  Reading ``time.monotonic()`` costs about 50 ns, which is little,
  but the point is that *nothing* but a counter decrement happens on most steps:
  the stride adapts so that the clock is read about 20 times per second whatever
  the step time (the "predicted skip" of fastprogress and Hugging Face's
  notebook tracker).
* :class:`Throttle` answers "is a refresh due?": at most 4 per second.

Both take the current time as an argument, so the unit tests drive them with
:class:`FakeClock` instead of sleeping.
"""
from __future__ import annotations

import time
from typing import Callable

__all__ = ["Clock", "FakeClock", "CheckScheduler", "Throttle", "monotonic"]

#: A function returning seconds on a monotonic scale (``time.monotonic`` in production).
Clock = Callable[[], float]

monotonic: Clock = time.monotonic


class FakeClock:
    """A manually advanced clock for tests: ``clock()`` returns the current time.

    Args:
        start: the initial reading in seconds.

    It also counts how often it was read (:attr:`reads`), which is how the tests
    check that the hot path does not read the clock on every step.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self.now = float(start)
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds`` (must be >= 0)."""
        if seconds < 0:
            raise ValueError(f"a monotonic clock cannot go back (advance by {seconds})")
        self.now += seconds


class CheckScheduler:
    """Adaptive stride between clock reads.

    Args:
        period: the wanted time between two clock checks, in seconds.  0.05 s
            (20 checks per second) keeps the display lag under one text refresh
            interval (0.25 s) while costing nothing measurable.
        max_stride: upper bound of the stride, so that a sudden slowdown (an
            evaluation, a stalled data loader) is noticed after at most this many
            steps even if the earlier steps were very fast.
        max_growth: the stride grows by at most this factor per check; a few
            fast steps after a slow start must not make the next check come
            seconds late.

    Usage: call :meth:`reset` at a phase change (train <-> eval), then after each
    check call :meth:`next_stride` with the steps and the seconds since the
    previous check.
    """

    def __init__(self, period: float = 0.05, max_stride: int = 4096, max_growth: float = 4.0) -> None:
        if not period > 0:
            raise ValueError(f"period must be > 0, got {period!r}")
        if max_stride < 1:
            raise ValueError(f"max_stride must be >= 1, got {max_stride!r}")
        self.period = float(period)
        self.max_stride = int(max_stride)
        self.max_growth = float(max_growth)
        self.stride = 1

    def reset(self) -> int:
        """Start over with a stride of 1 (the next step is checked); returns 1."""
        self.stride = 1
        return 1

    def next_stride(self, steps: int, seconds: float) -> int:
        """The stride to use next, given that ``steps`` steps took ``seconds``."""
        if steps <= 0:
            return self.stride
        if seconds <= 0:
            wanted = self.stride * self.max_growth
        else:
            wanted = steps * self.period / seconds
        ceiling = max(1.0, self.stride * self.max_growth)
        stride = int(min(round(wanted), ceiling, self.max_stride))
        self.stride = max(1, stride)
        return self.stride


class Throttle:
    """At most one refresh per ``interval`` seconds: ``due(now)``, then ``done(now)``.

    No cost budget: a refresh sends data only (the browser draws), so a steady
    cadence is what matters -- a bar that freezes on a loaded machine reads as
    a hung kernel.
    """

    def __init__(self, interval: float) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be > 0, got {interval!r}")
        self.interval = float(interval)
        self.last: float | None = None
        self.refreshes = 0

    def due(self, now: float) -> bool:
        """Whether a refresh is allowed at ``now``."""
        return self.last is None or now - self.last >= self.interval

    def done(self, now: float) -> None:
        """Record a refresh made at ``now``."""
        self.last = now
        self.refreshes += 1
