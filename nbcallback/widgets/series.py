"""Bounded-cost time series for the loss plot.

The full history is kept compactly (x as float64, y as float32: 12 bytes per
step, 12 MB for a million steps) so that the final plot is exact, and every
frame draws a *decimated* copy of at most ``max_points`` points, because a
PNG of 100,000 points costs no more information than one of 2,000 but far more
time (and SVG would grow without bound, see d2l in the anchors).

Two decimations:

* ``minmax`` keeps each bucket's minimum and maximum, in x order.  Spikes in
  the raw loss survive, which a plain stride would drop.
* ``mean`` keeps each bucket's mean: right for an already smoothed line.
"""
from __future__ import annotations

import math
from array import array
from typing import Iterable, Sequence

__all__ = ["Series", "decimate"]


class Series:
    """An append-only list of ``(x, y)`` points with cheap decimated views.

    Not thread-safe by itself; :class:`~nbcallback.widgets.state.TrainingState`
    guards it with its lock.
    """

    __slots__ = ("_x", "_y")

    def __init__(self) -> None:
        self._x = array("d")
        self._y = array("f")

    def __len__(self) -> int:
        return len(self._y)

    def append(self, x: float, y: float) -> None:
        """Add one point."""
        self._x.append(x)
        self._y.append(y)

    def extend(self, xs: Iterable[float], ys: Iterable[float]) -> None:
        """Add several points (``xs`` and ``ys`` of equal length)."""
        xs = list(xs)
        ys = list(ys)
        if len(xs) != len(ys):
            raise ValueError(f"xs and ys differ in length ({len(xs)} != {len(ys)})")
        self._x.extend(xs)
        self._y.extend(ys)

    def last(self) -> tuple[float, float] | None:
        """The most recent point, or None when empty."""
        if not self._y:
            return None
        return self._x[-1], float(self._y[-1])

    def xs(self) -> list[float]:
        """All x values (a copy)."""
        return list(self._x)

    def ys(self) -> list[float]:
        """All y values (a copy)."""
        return [float(v) for v in self._y]

    def finite_range(self) -> tuple[float, float] | None:
        """(min, max) of the finite y values, or None when there are none."""
        import numpy as np

        if not self._y:
            return None
        y = np.frombuffer(self._y, dtype=np.float32)
        finite = y[np.isfinite(y)]
        if finite.size == 0:
            return None
        return float(finite.min()), float(finite.max())

    def decimated(self, max_points: int, how: str = "minmax") -> tuple[list[float], list[float]]:
        """At most ``max_points`` points representing the series (copies)."""
        return decimate(self._x, self._y, max_points, how)


def decimate(
    xs: Sequence[float], ys: Sequence[float], max_points: int, how: str = "minmax"
) -> tuple[list[float], list[float]]:
    """Reduce ``(xs, ys)`` to at most ``max_points`` points.

    Args:
        xs: x values, ascending.
        ys: y values; NaN marks a missing value and stays NaN when a whole bucket is NaN.
        max_points: the most points returned (>= 2).
        how: ``'minmax'`` (bucket min and max, in x order: keeps spikes) or
            ``'mean'`` (bucket means: for smooth lines).

    Returns:
        Two new lists ``(xs, ys)``.
    """
    import numpy as np

    if max_points < 2:
        raise ValueError(f"max_points must be >= 2, got {max_points}")
    if how not in ("minmax", "mean"):
        raise ValueError(f"how must be 'minmax' or 'mean', got {how!r}")
    x = np.asarray(xs, dtype=np.float64)
    y = np.asarray(ys, dtype=np.float64)
    n = y.size
    if n <= max_points:
        return x.tolist(), y.tolist()
    buckets = max_points // 2 if how == "minmax" else max_points
    size = math.ceil(n / buckets)
    buckets = math.ceil(n / size)
    pad = buckets * size - n
    if pad:
        x = np.concatenate([x, np.full(pad, np.nan)])
        y = np.concatenate([y, np.full(pad, np.nan)])
    xb = x.reshape(buckets, size)
    yb = y.reshape(buckets, size)
    if how == "mean":
        with np.errstate(invalid="ignore"):
            counts = np.sum(~np.isnan(yb), axis=1)
            ysum = np.nansum(yb, axis=1)
            ymean = np.where(counts > 0, ysum / np.maximum(counts, 1), np.nan)
            xcounts = np.sum(~np.isnan(xb), axis=1)
            xmean = np.nansum(xb, axis=1) / np.maximum(xcounts, 1)
        return xmean.tolist(), ymean.tolist()
    low = np.where(np.isnan(yb), np.inf, yb)
    high = np.where(np.isnan(yb), -np.inf, yb)
    i_min = np.argmin(low, axis=1)
    i_max = np.argmax(high, axis=1)
    first = np.minimum(i_min, i_max)
    second = np.maximum(i_min, i_max)
    rows = np.arange(buckets)
    out_x = np.empty(buckets * 2)
    out_y = np.empty(buckets * 2)
    out_x[0::2] = xb[rows, first]
    out_x[1::2] = xb[rows, second]
    out_y[0::2] = yb[rows, first]
    out_y[1::2] = yb[rows, second]
    # A bucket whose first/second pick is padding (NaN x) repeats the real point instead.
    bad = np.isnan(out_x)
    if bad.any():
        keep = ~bad
        out_x, out_y = out_x[keep], out_y[keep]
    return out_x.tolist(), out_y.tolist()
