"""Bounded series for the live panels, sent to the front end as deltas (read by ``mergeDelta`` in dashboard.js).

A delta holds ``gen``, ``start``, ``x``, ``y`` (``lo``, ``hi``) and ``tail``, None for a missing value.  A merge or a
thinning starts a new generation, whose next delta starts again at index 0.
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


def _short(values: Sequence[float | None]) -> list[float | None]:
    """Four significant digits: what a screen can show, in fewer bytes on the wire."""
    return [None if v is None else float(f"{v:.4g}") for v in values]


def _min(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


class Buckets:
    """Per-step values as at most ``max_points`` buckets ``[k, x, lo, hi, y]``: the index on the grid of ``width``
    steps, the last step, the raw extremes and the smoothed value at ``x``.  The last bucket is still filling
    (the ``tail``, resent until closed).  Not thread-safe by itself (TrainingState's lock guards it).
    """

    def __init__(self, max_points: int = 1000, planned: int = 0) -> None:
        if max_points < 2:
            raise ValueError(f"max_points must be >= 2, got {max_points!r}")
        self.max_points = int(max_points)
        self.width = 1  # wide enough for the planned steps: no merge (and no resend) unless the run goes past
        while planned > self.width * self.max_points:
            self.width *= 2
        self.gen = 0
        self.count = 0  # values added, to tell whether the tail changed
        self._origin: int | None = None
        self._rows: list[list[Any]] = []

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, x: int, raw: float, smooth: float | None) -> None:
        """The value of step ``x`` (steps only increase) and the smoothed value there."""
        if self._origin is None:
            self._origin = int(x)
        value, level = finite_or_none(raw), finite_or_none(smooth)
        rows = self._rows
        k = (int(x) - self._origin) // self.width
        if rows and rows[-1][0] != k and len(rows) >= self.max_points:  # closing the tail would leave no room
            self._merge()
            rows, k = self._rows, (int(x) - self._origin) // self.width
        if rows and rows[-1][0] == k:
            tail = rows[-1]
            tail[1:] = [float(x), _min(tail[2], value), _max(tail[3], value), level]
        else:
            rows.append([k, float(x), value, value, level])
        self.count += 1

    def _merge(self) -> None:
        """Double the width: merge neighbours on the coarser grid (a new generation)."""
        self.width *= 2
        self.gen += 1
        merged: list[list[Any]] = []
        for k, x, lo, hi, y in self._rows:
            if merged and merged[-1][0] == k // 2:
                merged[-1][1:] = [x, _min(merged[-1][2], lo), _max(merged[-1][3], hi), y]
            else:
                merged.append([k // 2, x, lo, hi, y])
        self._rows = merged

    def delta(self, cursor: Cursor | None) -> tuple[dict[str, Any] | None, Cursor]:
        """What a reader at ``cursor`` lacks (None when nothing changed; everything for cursor None),
        and its new cursor."""
        gen, sent, count = cursor if cursor is not None else (-1, 0, -1)
        start = sent if gen == self.gen else 0
        closed = max(0, len(self._rows) - 1)
        new_cursor = (self.gen, closed, self.count)
        if gen == self.gen and count == self.count:  # the tail changes with every value added
            return None, new_cursor
        rows = self._rows[start:closed]
        tail = None
        if self._rows:
            lo, hi, y = _short(self._rows[-1][2:])
            tail = {"x": int(self._rows[-1][1]), "lo": lo, "hi": hi, "y": y}
        return {"gen": self.gen, "start": start, "x": [int(row[1]) for row in rows],
                "lo": _short([row[2] for row in rows]), "hi": _short([row[3] for row in rows]),
                "y": _short([row[4] for row in rows]), "tail": tail}, new_cursor

    def points(self) -> dict[str, list[Any]]:
        """Every bucket, the tail included (for the final plot)."""
        return {key: [row[i] for row in self._rows] for i, key in enumerate(("x", "lo", "hi", "y"), 1)}


class Points:
    """A few irregular ``(x, y)`` points, thinned to at most ``max_points`` (the first and newest stay)."""

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
        if len(self.x) > self.max_points:  # drop every other point between the first and the newest
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
        delta = {"gen": self.gen, "start": start, "x": self.x[start:], "y": _short(self.y[start:]), "tail": None}
        return delta, new_cursor

    def points(self) -> dict[str, list[Any]]:
        """Every point (for the final plot)."""
        return {"x": list(self.x), "y": list(self.y)}
