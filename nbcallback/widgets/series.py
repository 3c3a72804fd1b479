"""Bounded series for the live panels, sent to the front end as deltas (read by ``mergeDelta`` in dashboard.js).

A delta holds ``gen``, ``start``, ``x``, ``y`` (``lo``, ``hi``) and ``tail``, None for a missing value, as kept (the
renderer chooses their wire form: :func:`float32_bytes` or :func:`float32_list`).  A merge or a thinning starts a new
generation, whose next delta starts again at index 0.
"""
from __future__ import annotations

import math
import sys
from array import array
from typing import Any, Sequence

__all__ = ["Buckets", "Points", "Extent", "Cursor", "finite_or_none", "float32_bytes", "float32_list"]

#: What a reader already holds: (generation, points held, values seen when it was sent).
Cursor = tuple[int, int, int]


def finite_or_none(value: float | None) -> float | None:
    """``value`` as a float, or None for None, NaN and infinities (JSON has no NaN)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def float32_bytes(values: Sequence[float | None]) -> bytes:
    """``values`` as little-endian float32 bytes (NaN for None): how a curve's column goes to the page, as a binary
    buffer that is neither printed nor parsed number by number (``float32Column`` in dashboard.js reads it back).
    float32 keeps about 7 digits (the page shows 4) and whole steps exactly up to 2**24 (16.7 million)."""
    if None in values:
        values = [math.nan if value is None else value for value in values]
    column = array("f", values)
    if sys.byteorder == "big":
        column.byteswap()
    return column.tobytes()


def float32_list(values: Sequence[float | None]) -> list[float | None]:
    """``values`` rounded to float32 as numbers: a curve's column where it goes as JSON (the widget's ``view`` trait,
    a tail), so that the page holds the same numbers either way (a step line whose last point and tail differ in the
    last bits would be marked as changing there).  None for None and for a value beyond float32's range (JSON has no
    infinity; a buffer's infinity is a gap on the page too)."""
    column = array("f", [math.nan if value is None else value for value in values])
    return [value if math.isfinite(value) else None for value in column]


def _min(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


class Extent:
    """Running extremes of a column: the smallest and largest value, and of the positive values (a log axis); None
    while there is none.  Values are finite or None (:func:`finite_or_none`); None is left out."""

    __slots__ = ("low", "high", "low_positive", "high_positive")

    def __init__(self, values: Sequence[float | None] = ()) -> None:
        self.low: float | None = None
        self.high: float | None = None
        self.low_positive: float | None = None
        self.high_positive: float | None = None
        self.extend(values)

    def extend(self, values: Sequence[float | None]) -> None:
        """Take ``values`` into account."""
        usable = [v for v in values if v is not None]
        if not usable:
            return
        self.low, self.high = _min(self.low, min(usable)), _max(self.high, max(usable))
        positive = [v for v in usable if v > 0]
        if positive:
            self.low_positive = _min(self.low_positive, min(positive))
            self.high_positive = _max(self.high_positive, max(positive))

    def get(self, positive: bool = False, also: float | None = None) -> tuple[float, float] | None:
        """(smallest, largest) of the values (``positive``: of those > 0) and ``also``; None when there is none."""
        low, high = (self.low_positive, self.high_positive) if positive else (self.low, self.high)
        if also is not None and (also > 0 or not positive):
            low, high = _min(low, also), _max(high, also)
        return None if low is None or high is None else (low, high)


class Buckets:
    """Per-step values as at most ``max_points`` buckets, kept as columns: the bucket's index on the grid of
    ``width`` steps, ``x`` its last step, ``lo``/``hi`` the raw extremes and ``y`` the smoothed value at ``x``.  The
    last bucket is still filling (the ``tail``, resent until closed).  The closed buckets' extremes are kept as they
    close (:meth:`extent`, :meth:`raw_band`), so a panel's y range need not read every point at each refresh.  Not
    thread-safe by itself (TrainingState's lock guards it).
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
        self._k: list[int] = []
        self._x: list[float] = []
        self._lo: list[float | None] = []
        self._hi: list[float | None] = []
        self._y: list[float | None] = []
        self._forget_extremes()

    def __len__(self) -> int:
        return len(self._k)

    def _forget_extremes(self) -> None:
        self._extents = {"lo": Extent(), "hi": Extent(), "y": Extent()}
        self._seen = 0  # closed buckets taken into _extents and _spread
        self._spread = 0  # of those, how many have lo != hi

    def _catch_up(self) -> None:
        """Take the buckets closed since the last call into the extremes (O(new buckets); a merge starts again)."""
        closed = len(self._k) - 1
        if closed <= self._seen:
            return
        start, self._seen = self._seen, closed
        lo, hi = self._lo[start:closed], self._hi[start:closed]
        self._extents["lo"].extend(lo)
        self._extents["hi"].extend(hi)
        self._extents["y"].extend(self._y[start:closed])
        self._spread += sum(a != b for a, b in zip(lo, hi))

    def add(self, x: int, raw: float, smooth: float | None) -> None:
        """The value of step ``x`` (steps only increase) and the smoothed value there."""
        x = int(x)
        if self._origin is None:
            self._origin = x
        # finite_or_none, inline: this runs once per training step
        value = float(raw) if raw is not None and math.isfinite(raw) else None
        level = float(smooth) if smooth is not None and math.isfinite(smooth) else None
        keys = self._k
        k = (x - self._origin) // self.width
        if keys and keys[-1] != k and len(keys) >= self.max_points:  # closing the tail would leave no room
            self._merge()
            k = (x - self._origin) // self.width
        self.count += 1
        if keys and keys[-1] == k:  # the tail fills
            self._x[-1] = float(x)
            if value is not None:
                lo, hi = self._lo[-1], self._hi[-1]
                self._lo[-1] = value if lo is None or value < lo else lo
                self._hi[-1] = value if hi is None or value > hi else hi
            self._y[-1] = level
            return
        keys.append(k)
        self._x.append(float(x))
        self._lo.append(value)
        self._hi.append(value)
        self._y.append(level)

    def _merge(self) -> None:
        """Double the width: merge neighbours on the coarser grid (a new generation)."""
        self.width *= 2
        self.gen += 1
        keys: list[int] = []
        xs: list[float] = []
        los: list[float | None] = []
        his: list[float | None] = []
        ys: list[float | None] = []
        for k, x, lo, hi, y in zip(self._k, self._x, self._lo, self._hi, self._y):
            if keys and keys[-1] == k // 2:
                xs[-1], los[-1], his[-1], ys[-1] = x, _min(los[-1], lo), _max(his[-1], hi), y
            else:
                keys.append(k // 2)
                xs.append(x)
                los.append(lo)
                his.append(hi)
                ys.append(y)
        self._k[:] = keys  # (add holds this list)
        self._x, self._lo, self._hi, self._y = xs, los, his, ys
        self._forget_extremes()

    def extent(self, column: str, positive: bool = False) -> tuple[float, float] | None:
        """The smallest and largest value of ``column`` (``'lo'``, ``'hi'`` or ``'y'``) over every bucket, the tail
        included; ``positive``: of the values > 0 (a log axis).  None when there is none (or no such column)."""
        if column not in self._extents:
            return None
        self._catch_up()
        values = {"lo": self._lo, "hi": self._hi, "y": self._y}[column]
        return self._extents[column].get(positive, values[-1] if values else None)

    def raw_band(self) -> bool:
        """Whether every bucket holds one value (``lo == hi`` everywhere, the tail included), as
        :func:`~nbcallback.widgets.panels.is_raw_band` says of the :meth:`points`."""
        self._catch_up()
        return bool(self._k) and self._spread == 0 and self._lo[-1] == self._hi[-1]

    def delta(self, cursor: Cursor | None) -> tuple[dict[str, Any] | None, Cursor]:
        """What a reader at ``cursor`` lacks (None when nothing changed; everything for cursor None),
        and its new cursor."""
        gen, sent, count = cursor if cursor is not None else (-1, 0, -1)
        start = sent if gen == self.gen else 0
        closed = max(0, len(self._k) - 1)
        new_cursor = (self.gen, closed, self.count)
        if gen == self.gen and count == self.count:  # the tail changes with every value added
            return None, new_cursor
        tail = None
        if self._k:
            tail = {"x": int(self._x[-1]), "lo": self._lo[-1], "hi": self._hi[-1], "y": self._y[-1]}
        return {"gen": self.gen, "start": start, "x": [int(x) for x in self._x[start:closed]],
                "lo": self._lo[start:closed], "hi": self._hi[start:closed], "y": self._y[start:closed],
                "tail": tail}, new_cursor

    def points(self) -> dict[str, list[Any]]:
        """Every bucket, the tail included (for the final plot)."""
        return {"x": list(self._x), "lo": list(self._lo), "hi": list(self._hi), "y": list(self._y)}


class Points:
    """A few irregular ``(x, y)`` points, thinned to at most ``max_points`` (the first and newest stay)."""

    def __init__(self, max_points: int = 1000) -> None:
        if max_points < 2:
            raise ValueError(f"max_points must be >= 2, got {max_points!r}")
        self.max_points = int(max_points)
        self.gen = 0
        self.x: list[float] = []
        self.y: list[float | None] = []
        self._extent = Extent()

    def __len__(self) -> int:
        return len(self.x)

    def add(self, x: float, y: float | None) -> None:
        """Append a point (x never decreases)."""
        value = finite_or_none(y)
        self.x.append(float(x))
        self.y.append(value)
        self._extent.extend((value,))
        if len(self.x) > self.max_points:  # drop every other point between the first and the newest
            self.x = self.x[:-1:2] + self.x[-1:]
            self.y = self.y[:-1:2] + self.y[-1:]
            self.gen += 1
            self._extent = Extent(self.y)

    def extent(self, column: str = "y", positive: bool = False) -> tuple[float, float] | None:
        """The smallest and largest y (``positive``: of those > 0), or None when there is none (or ``column`` is not
        ``'y'``: points have no band)."""
        return self._extent.get(positive) if column == "y" else None

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
        delta = {"gen": self.gen, "start": start, "x": self.x[start:], "y": self.y[start:], "tail": None}
        return delta, new_cursor

    def points(self) -> dict[str, list[Any]]:
        """Every point (for the final plot)."""
        return {"x": list(self.x), "y": list(self.y)}
