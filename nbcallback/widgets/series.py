"""Bounded series for the live panels, sent to the front end as deltas.

Two kinds, both capped at ``max_points`` whatever the run's length:

* :class:`Buckets` -- one value per training step (the loss).  Steps are
  grouped into buckets of ``width`` steps; a bucket keeps the minimum and
  maximum of its raw values (a band, so spikes stay visible) and the smoothed
  value at its last step (the line).  When there are more than ``max_points``
  buckets, neighbours merge and the width doubles.
* :class:`Points` -- a few irregular points (one per evaluation, one per
  learning-rate change).  Past ``max_points``, every other point is dropped.

Both hand out :meth:`delta` s: what a reader holding ``cursor`` lacks.  A merge
or a thinning starts a new *generation*, and the next delta then starts again
at index 0, so a reader never holds a mix of widths.  The wire format (keys
``gen``, ``start``, ``x``, ``y``, ``lo``, ``hi``, ``tail``; ``None`` for a
missing value) is the one the front end's ``mergeDelta`` reads.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

__all__ = ["Buckets", "Points", "Cursor", "finite_or_none"]

#: What a reader already holds: (generation, points held, values seen when it was sent).
Cursor = tuple[int, int, int]


def finite_or_none(value: float | None) -> float | None:
    """``value`` as a float, or None for None, NaN and infinities (JSON has no NaN)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def _round(value: float | None) -> float | None:
    """Four significant digits: what a screen can show, and a third of the bytes on the wire."""
    return None if value is None else float(f"{value:.4g}")


def _short(values: Sequence[float | None]) -> list[float | None]:
    return [None if v is None else float(f"{v:.4g}") for v in values]


def _min(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


class Buckets:
    """Per-step values as at most ``max_points`` (x, lo, hi, y) buckets.

    ``x`` is a bucket's last step, ``lo``/``hi`` the extremes of its raw values
    and ``y`` the smoothed value at ``x``.  The bucket still filling is the
    ``tail``: sent each time, replaced by the reader, final once closed.

    Not thread-safe by itself; :class:`~nbcallback.widgets.state.TrainingState`
    guards it with its lock.
    """

    def __init__(self, max_points: int = 1000, planned: int = 0) -> None:
        if max_points < 2:
            raise ValueError(f"max_points must be >= 2, got {max_points!r}")
        self.max_points = int(max_points)
        # Wide enough for the planned steps from the start: no merge (and no resend) unless the run
        # goes past its plan.
        self.width = 1
        while planned > self.width * self.max_points:
            self.width *= 2
        self.gen = 0
        self.count = 0  # values added, to tell whether the tail changed
        self._origin: int | None = None
        self._k: list[int] = []  # each closed bucket's index on the grid of ``width`` steps
        self.x: list[float] = []
        self.lo: list[float | None] = []
        self.hi: list[float | None] = []
        self.y: list[float | None] = []
        self._tail: list[Any] | None = None  # [k, x, lo, hi, y]

    def __len__(self) -> int:
        return len(self.x) + (self._tail is not None)

    def add(self, x: int, raw: float, smooth: float | None) -> None:
        """The value of step ``x`` (steps only increase) and the smoothed value there."""
        if self._origin is None:
            self._origin = int(x)
        k = (int(x) - self._origin) // self.width
        value = finite_or_none(raw)
        tail = self._tail
        if tail is not None and tail[0] != k:
            self._close(tail)  # may merge: the width, and so this step's bucket, can change
            k = (int(x) - self._origin) // self.width
            tail = None
            if self._k and self._k[-1] == k:  # after a merge the last bucket takes this step too
                tail = [self._k.pop(), self.x.pop(), self.lo.pop(), self.hi.pop(), self.y.pop()]
                self._tail = tail
        if tail is None:
            self._tail = [k, float(x), value, value, finite_or_none(smooth)]
        else:
            tail[1] = float(x)
            tail[2], tail[3] = _min(tail[2], value), _max(tail[3], value)
            tail[4] = finite_or_none(smooth)
        self.count += 1

    def _close(self, tail: list[Any]) -> None:
        self._k.append(tail[0])
        self.x.append(tail[1])
        self.lo.append(tail[2])
        self.hi.append(tail[3])
        self.y.append(tail[4])
        if len(self.x) >= self.max_points:  # room for the tail: at most max_points points in all
            self._merge()

    def _merge(self) -> None:
        """Double the width: merge neighbours on the coarser grid (a new generation)."""
        self.width *= 2
        self.gen += 1
        k, x, lo, hi, y = [], [], [], [], []
        for i in range(len(self.x)):
            grid = self._k[i] // 2
            if k and k[-1] == grid:
                x[-1], y[-1] = self.x[i], self.y[i]
                lo[-1], hi[-1] = _min(lo[-1], self.lo[i]), _max(hi[-1], self.hi[i])
            else:
                k.append(grid)
                x.append(self.x[i])
                lo.append(self.lo[i])
                hi.append(self.hi[i])
                y.append(self.y[i])
        self._k, self.x, self.lo, self.hi, self.y = k, x, lo, hi, y

    def delta(self, cursor: Cursor | None) -> tuple[dict[str, Any] | None, Cursor]:
        """What a reader at ``cursor`` lacks (None when nothing changed), and its new cursor.

        ``cursor`` None means the reader holds nothing (a new view): everything is sent.
        """
        gen, sent, count = cursor if cursor is not None else (-1, 0, -1)
        start = sent if gen == self.gen else 0
        new_cursor = (self.gen, len(self.x), self.count)
        # The tail changes with every value added, so anything new means a delta.
        if gen == self.gen and count == self.count:
            return None, new_cursor
        tail = self._tail
        return {
            "gen": self.gen,
            "start": start,
            "x": [int(x) for x in self.x[start:]],
            "lo": _short(self.lo[start:]),
            "hi": _short(self.hi[start:]),
            "y": _short(self.y[start:]),
            "tail": None if tail is None else {"x": int(tail[1]), "lo": _round(tail[2]), "hi": _round(tail[3]),
                                               "y": _round(tail[4])},
        }, new_cursor

    def points(self) -> dict[str, list[Any]]:
        """Every bucket, the tail included (for the final plot)."""
        tail = self._tail
        extra = [] if tail is None else [tail]
        return {
            "x": self.x + [t[1] for t in extra],
            "lo": self.lo + [t[2] for t in extra],
            "hi": self.hi + [t[3] for t in extra],
            "y": self.y + [t[4] for t in extra],
        }


class Points:
    """A few irregular ``(x, y)`` points, thinned to at most ``max_points``."""

    def __init__(self, max_points: int = 1000) -> None:
        if max_points < 2:
            raise ValueError(f"max_points must be >= 2, got {max_points!r}")
        self.max_points = int(max_points)
        self.gen = 0
        self.x: list[float] = []
        self.y: list[float | None] = []

    def __len__(self) -> int:
        return len(self.x)

    def add(self, x: float, y: float | None) -> None:
        """Append a point (x never decreases)."""
        self.x.append(float(x))
        self.y.append(finite_or_none(y))
        if len(self.x) > self.max_points:
            # Keep the first and the newest; drop every other one in between.
            self.x = self.x[:-1:2] + self.x[-1:]
            self.y = self.y[:-1:2] + self.y[-1:]
            self.gen += 1

    def last(self) -> float | None:
        """The newest y, or None."""
        return self.y[-1] if self.y else None

    def delta(self, cursor: Cursor | None) -> tuple[dict[str, Any] | None, Cursor]:
        """What a reader at ``cursor`` lacks (None when nothing changed), and its new cursor."""
        gen, sent, _ = cursor if cursor is not None else (-1, 0, 0)
        start = sent if gen == self.gen else 0
        new_cursor = (self.gen, len(self.x), len(self.x))
        if gen == self.gen and sent == len(self.x):
            return None, new_cursor
        return {"gen": self.gen, "start": start, "x": self.x[start:], "y": _short(self.y[start:]), "tail": None}, new_cursor

    def points(self) -> dict[str, list[Any]]:
        """Every point (for the final plot)."""
        return {"x": list(self.x), "y": list(self.y)}


def extend_steps(series: Buckets, first_x: int, raw: Sequence[float], smooth: Sequence[float | None]) -> None:
    """Add consecutive steps ``first_x, first_x + 1, ...`` with their raw and smoothed values."""
    for offset, (value, level) in enumerate(zip(raw, smooth)):
        series.add(first_x + offset, value, level)
