"""The series keep their extremes as they grow: a panel's y range reads them instead of every point at each
refresh, so they must always equal a recomputation from the points, through merges, gaps and thinning."""
from __future__ import annotations

import math
import os
import random

from nbcallback.widgets.panels import Line, Panel, is_raw_band, y_range
from nbcallback.widgets.series import Buckets, Points

SEED = int(os.environ.get("NBCB_TEST_SEED", "0"))


def recomputed(values: list[float | None], positive: bool) -> tuple[float, float] | None:
    usable = [v for v in values if v is not None and (v > 0 or not positive)]
    return (min(usable), max(usable)) if usable else None


def test_bucket_extremes_equal_a_recomputation_after_many_appends_and_merges() -> None:
    rng = random.Random(SEED + 33)
    for max_points, planned in ((2, 0), (5, 0), (16, 100), (100, 1000), (1000, 938)):
        buckets = Buckets(max_points=max_points, planned=planned)
        step = 0
        for i in range(3000):
            step += rng.choice((1, 1, 1, 2, 9))
            raw = rng.choice((rng.uniform(-2.0, 5.0), rng.uniform(0.0, 1e-4), math.nan, math.inf, 1.5))
            buckets.add(step, raw, rng.choice((rng.uniform(-1.0, 3.0), None, math.nan)))
            if rng.random() < 0.1 or i == 2999:  # a refresh reads them at any moment, the filling tail included
                points = buckets.points()
                for column in ("lo", "hi", "y"):
                    for positive in (False, True):
                        assert buckets.extent(column, positive) == recomputed(points[column], positive), (
                            f"{column} (positive={positive}) after {i + 1} values, max_points={max_points}")
                assert buckets.raw_band() == is_raw_band(points)
        assert buckets.gen > 0  # through merges (a new generation each)


def test_a_band_stays_raw_while_each_bucket_holds_one_step() -> None:
    buckets = Buckets(max_points=100)
    assert not buckets.raw_band() and buckets.extent("y") is None
    for step in range(1, 101):
        buckets.add(step, 1.0 / step, 0.5)
    assert buckets.raw_band() and buckets.extent("lo") == (0.01, 1.0)
    buckets.add(101, 3.0, 0.5)  # a merge: two steps per bucket, the band opens
    assert buckets.gen == 1 and not buckets.raw_band()
    assert buckets.extent("hi") == (1 / 99, 3.0) and buckets.extent("lo", positive=True) == (1 / 100, 3.0)
    assert buckets.extent("x") is None  # not a y column


def test_points_extremes_equal_a_recomputation_through_thinning() -> None:
    rng = random.Random(SEED + 34)
    points = Points(max_points=8)
    for i in range(200):
        points.add(i, rng.choice((rng.uniform(-1.0, 1.0), math.nan, None, 0.0)))
        for positive in (False, True):
            assert points.extent("y", positive) == recomputed(points.y, positive)
    assert points.gen > 0 and points.extent("hi") is None


def test_the_y_range_from_the_kept_extremes_equals_the_one_from_every_point() -> None:
    """What the live widget and the PNG draw: y_range over the points, and over the kept extremes."""
    rng = random.Random(SEED + 35)
    buckets, evals = Buckets(max_points=50), Points(max_points=50)
    panels = [Panel("loss", [Line("loss", "train", "train", "band"), Line("eval:loss", "eval", "eval", "points")],
                    scale) for scale in ("log", "linear")]
    for step in range(1, 400):
        buckets.add(step, rng.lognormvariate(0.0, 2.0), rng.uniform(0.1, 2.0))
        if step % 40 == 0:
            evals.add(step, rng.uniform(-0.5, 2.0))
            series = {"loss": buckets.points(), "eval:loss": evals.points()}
            for panel in panels:
                lows, highs = [], []
                for line in panel.lines:
                    source = buckets if line.key == "loss" else evals
                    columns = {"y": True, "hi": False}
                    if line.style == "band" and source.raw_band():
                        columns["lo"] = True
                    for column, counts_low in columns.items():
                        extent = source.extent(column, panel.scale == "log")
                        if extent is not None:
                            highs.append(extent[1])
                            if counts_low:
                                lows.append(extent[0])
                log = panel.scale == "log"
                lo, hi = min(lows), max(highs)
                pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
                assert y_range(panel, series) == ((lo / 1.5, hi * 1.3) if log else (lo - pad, hi + pad))
                # the live widget passes the series objects themselves: the same range from their kept extremes
                assert y_range(panel, {"loss": buckets, "eval:loss": evals}) == y_range(panel, series)
