"""Clocks and the two schedulers that keep the display off the training hot path.

* :class:`CheckScheduler` decides after how many steps the callback looks at the
  clock again.  Reading ``time.monotonic()`` costs about 50 ns, which is little,
  but the point is that *nothing* but a counter decrement happens on most steps:
  the stride adapts so that the clock is read about 20 times per second whatever
  the step time (the "predicted skip" of fastprogress and Hugging Face's
  notebook tracker).
* :class:`Throttle` answers "is a refresh due?" for one output (text, plot) and
  backs off when rendering gets expensive, so a slow front end or a slow plot can
  never take more than a fixed share of the wall time.

Both take the current time as an argument, so the unit tests drive them with
:class:`FakeClock` instead of sleeping.
"""
from __future__ import annotations

import math
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
    """Decide when one output (text, plot) is refreshed, within a time budget.

    Args:
        interval: the shortest time between two refreshes, in seconds (0.25 for
            4 Hz text, 2.0 for the plot).
        budget: the largest share of wall time this output may use (0.005 =
            0.5 %).  A refresh is due only when ``interval`` has passed *and*
            the time spent so far is within ``budget`` of the time since the
            first refresh (a token bucket: one expensive frame, such as a
            redrawn plot background, delays the next ones until the average is
            back under budget, instead of stretching the interval for good).
            This is tqdm's ``TMonitor`` idea applied to rendering cost.

    ``warmup=True`` in :meth:`done` marks a one-off cost (building the figure,
    loading fonts) that does not count against the budget: the final frame
    would pay it anyway.  A caller that knows what a refresh will cost passes
    it to :meth:`due`, and the refresh then waits until the budget can pay for
    it, so the budget holds for the first refresh too (otherwise the bucket
    starts full: one refresh may overdraw it).

    Call :meth:`begin` at the start of the run: the budget then counts from
    there, and the first refresh waits ``first_delay`` seconds (a plot of the
    first few steps says nothing; a run shorter than that renders only its
    final frame).
    """

    def __init__(self, interval: float, budget: float = 0.005, first_delay: float = 0.0) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be > 0, got {interval!r}")
        if not 0 < budget <= 1:
            raise ValueError(f"budget must be in (0, 1], got {budget!r}")
        self.interval = float(interval)
        self.budget = float(budget)
        self.first_delay = float(first_delay)
        self.first: float | None = None
        self.last: float | None = None
        self.refreshes = 0
        self.seconds = 0.0
        self.counted = 0.0

    def begin(self, now: float) -> None:
        """The run starts at ``now`` (the budget and ``first_delay`` count from here)."""
        self.first = now

    def due(self, now: float, ignore_budget: bool = False, cost: float = 0.0) -> bool:
        """Whether a refresh is allowed at ``now``.

        Args:
            now: the current time.
            ignore_budget: only the interval counts (an event worth showing,
                such as an epoch end, but never more often than ``interval``).
            cost: what the refresh is expected to cost, in seconds: it must
                fit in the budget with what was spent so far.
        """
        if self.last is None:
            if self.first is not None and now - self.first < self.first_delay:
                return False
        elif now - self.last < self.interval:
            return False
        return ignore_budget or now >= self.affordable_at(cost)

    def affordable_at(self, cost: float) -> float:
        """The earliest time at which the budget can pay for a refresh of ``cost``
        seconds, the interval aside (-inf before :meth:`begin` and the first refresh)."""
        start = self.first if self.first is not None else self.last
        if start is None:
            return -math.inf
        return start + (self.counted + max(0.0, cost)) / self.budget

    def done(self, now: float, cost: float, warmup: bool = False) -> None:
        """Record a refresh that started at ``now`` and took ``cost`` seconds.

        Args:
            now: when the refresh started.
            cost: how long it took.
            warmup: a one-off cost that is not counted against the budget.
        """
        if self.first is None:
            self.first = now
        self.last = now
        self.refreshes += 1
        cost = max(0.0, cost)
        self.seconds += cost
        if not warmup:
            self.counted += cost
