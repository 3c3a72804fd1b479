"""The state model, the bounded series and their deltas, and the schedulers, driven by a fake clock."""
from __future__ import annotations

import json
import math
import os
import random

import pytest

from nbcallback.widgets.series import Buckets, Points
from nbcallback.widgets.state import TrainingState
from tests.widgets._reader import Reader
from tests.widgets.conftest import FakeClock

SEED_STATE = int(os.environ.get("NBCB_TEST_SEED", "0")) + 11


def _train_epoch(state: TrainingState, clock: FakeClock, epoch: int, steps: int, step_time: float, start: int,
                 tick: int = 10) -> int:
    state.begin_epoch(epoch, clock())
    step = start
    for done in range(tick, steps + 1, tick):
        clock.advance(step_time * tick)
        step = start + done
        state.record_steps(clock(), step, [1.0] * tick)
    return step


# ---------------------------------------------------------------------- rates and ETAs


def test_rate_excludes_the_first_measurement_and_eta_counts_remaining_steps() -> None:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=2, steps_per_epoch=100)
    state.begin_epoch(1, clock())
    clock.advance(5.0)  # a slow first tick (warm-up) must not enter the rate
    state.record_steps(clock(), 10, [2.0] * 10)
    assert state.view(clock()).rate is None
    for step in range(20, 101, 10):
        clock.advance(0.1)  # 10 steps per 0.1 s = 100 it/s
        state.record_steps(clock(), step, [1.0] * 10)
    view = state.view(clock())
    assert view.rate == pytest.approx(100.0)
    assert view.steps_done == 100 and view.total_steps == 200
    assert view.eta_train == pytest.approx(1.0)
    assert view.eta_total == pytest.approx(1.0)  # no validation planned


def test_total_eta_predicts_evaluations_then_uses_the_measured_pass() -> None:
    clock = FakeClock()
    state = TrainingState(eval_cost_guess=0.5)
    state.start(clock(), epochs=3, steps_per_epoch=100, has_validation=True, eval_steps=40)
    _train_epoch(state, clock, 1, 100, 0.01, 0)  # 100 it/s
    before = state.view(clock())
    # 200 train steps left -> 2 s; 3 evaluations of 40 steps guessed at 0.5 x 10 ms = 0.2 s each.
    assert before.eta_train == pytest.approx(2.0)
    assert before.eta_total == pytest.approx(2.0 + 3 * 0.2)
    assert before.eta_total_estimated
    state.begin_eval(clock(), 40)
    for k in range(1, 41):
        clock.advance(0.025)  # the real evaluation: 1 s per pass
        state.record_eval_steps(clock(), k)
    state.end_eval(clock(), complete=True)
    state.add_eval_row(clock(), {"accuracy": 0.9, "eval_loss": 0.3}, epoch=1, step=100, seconds=1.0)
    state.end_epoch(1, clock(), validated=True)
    after = state.view(clock())
    assert not after.eta_total_estimated
    assert after.eta_total == pytest.approx(after.eta_train + 2 * 1.0, rel=1e-6)


def test_total_eta_predicts_validations_at_the_share_of_validated_epochs() -> None:
    """fit(..., valid_frequency=2): after epochs 1 (not validated) and 2 (validated), epochs 3..6 are expected
    to bring two more validations."""
    clock = FakeClock()
    state = TrainingState(eval_cost_guess=1.0)
    state.start(clock(), epochs=6, steps_per_epoch=100, has_validation=True, eval_steps=5)
    step = _train_epoch(state, clock, 1, 100, 0.01, 0)  # 100 it/s: a guessed pass of 5 steps takes 0.05 s
    state.end_epoch(1, clock(), validated=False)
    _train_epoch(state, clock, 2, 100, 0.01, step)
    state.end_epoch(2, clock(), validated=True)
    view = state.view(clock())
    assert view.eta_train == pytest.approx(4.0) and view.eta_total_estimated
    assert view.eta_total - view.eta_train == pytest.approx(2 * 0.05)


def test_eval_only_run_has_its_own_bar_and_eta() -> None:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), kind="eval", eval_steps=50)
    state.begin_eval(clock(), 50)
    for k in range(1, 26):
        clock.advance(0.01)
        state.record_eval_steps(clock(), k)
    view = state.view(clock())
    assert view.kind == "eval" and view.eval_step == 25
    assert view.eta_total == pytest.approx(0.25)


def test_a_stop_during_validation_keeps_the_eval_phase_and_step_in_the_final_view() -> None:
    """The snapshot must show where the run stopped: eval step 14 of 40, not the finished train bar."""
    from nbcallback.widgets.format import progress_parts

    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=3, steps_per_epoch=100, has_validation=True, eval_steps=40)
    _train_epoch(state, clock, 1, 100, 0.01, 0)
    state.begin_eval(clock(), 40)
    for k in range(1, 15):
        clock.advance(0.01)
        state.record_eval_steps(clock(), k)
    state.end_eval(clock(), complete=False)
    state.add_eval_row(clock(), {"accuracy": 0.5}, epoch=1, step=100, partial=True)
    state.end_epoch(1, clock(), validated=True)
    state.finish(clock(), "stopped", "stopped by user at epoch 1, step 100 (during validation, eval step 14)")
    view = state.view(clock())
    assert (view.phase, view.eval_step, view.eval_steps) == ("eval", 14, 40)
    assert view.epochs_done == 1  # the training part of epoch 1 was complete
    parts = progress_parts(view)
    assert parts["steps"] == "14/40"
    assert "<" not in parts["time"] and parts["eta_total"] == ""  # no ETA once the run has ended


def test_a_complete_validation_returns_to_the_train_phase_and_the_next_epoch_clears_a_cut() -> None:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=2, steps_per_epoch=10, has_validation=True, eval_steps=5)
    step = _train_epoch(state, clock, 1, 10, 0.01, 0)
    state.begin_eval(clock(), 5)
    state.record_eval_steps(clock(), 5)
    state.end_eval(clock(), complete=True)
    state.end_epoch(1, clock(), validated=True)
    assert state.view(clock()).phase == "train"
    state.begin_epoch(2, clock())  # before its first step ends (a loader starting up): epoch 2 at step 0
    view = state.view(clock())
    assert (view.epoch, view.phase, view.step_in_epoch, view.epochs_done) == (2, "train", 0, 1)
    _train_epoch(state, clock, 2, 10, 0.01, step)
    state.finish(clock(), "finished")
    view = state.view(clock())
    assert view.phase == "train" and view.step_in_epoch == 10
    assert fmt_time(view) == "00:00"


def fmt_time(view) -> str:
    from nbcallback.widgets.format import progress_parts

    return progress_parts(view)["time"]


def test_smoothed_loss_is_bias_corrected_and_ignores_nan() -> None:
    clock = FakeClock()
    state = TrainingState(smoothing=0.9)
    state.start(clock(), epochs=1, steps_per_epoch=10)
    state.begin_epoch(1, clock())
    state.record_steps(clock(), 3, [2.0, math.nan, 2.0])
    view = state.view(clock())
    assert view.loss == pytest.approx(2.0)  # debiased EMA of constant 2.0 is 2.0, the NaN skipped
    loss = state.plot_data().series["loss"]
    assert loss["x"] == [1.0, 2.0, 3.0]
    assert loss["lo"][1] is None and loss["hi"][1] is None  # the NaN step is a gap (JSON has no NaN)
    assert loss["y"][1] == pytest.approx(2.0)
    assert view.last_loss == 2.0


def test_finish_freezes_elapsed_and_a_partial_epoch_is_not_done() -> None:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=2, steps_per_epoch=10)
    state.begin_epoch(1, clock())
    clock.advance(1.0)
    state.record_steps(clock(), 4, [1.0] * 4)
    state.end_epoch(1, clock(), validated=False)
    state.finish(clock(), "stopped", "stopped by user at epoch 1, step 4")
    clock.advance(10.0)
    view = state.view(clock())
    assert view.elapsed == pytest.approx(1.0)
    assert view.epochs_done == 0 and view.status == "stopped" and view.finished
    with pytest.raises(ValueError):
        state.finish(clock(), "running")


# ---------------------------------------------------------------------- table


def test_live_view_keeps_the_last_rows_and_the_snapshot_caps_with_head_and_tail() -> None:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=1000, steps_per_epoch=1, has_validation=True)
    for epoch in range(1, 1001):
        state.add_eval_row(clock(), {"accuracy": epoch / 1000}, epoch=epoch, step=epoch)
    live = state.view(clock(), live_rows=10)
    assert [row.epoch for row in live.rows] == list(range(991, 1001))
    assert live.rows_total == 1000 and live.rows_omitted == 0
    capped = state.view(clock(), live_rows=None, max_rows=200)
    assert len(capped.rows) == 200
    assert capped.rows_omitted == 800 and capped.omitted_after == 20
    assert capped.rows[0].epoch == 1 and capped.rows[19].epoch == 20 and capped.rows[20].epoch == 821
    full = state.view(clock(), live_rows=None)
    assert len(full.rows) == 1000 and full.rows_omitted == 0
    assert live.columns == ("accuracy",)


def test_eval_rows_feed_the_plot_series_and_skip_non_scalars() -> None:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=2, steps_per_epoch=10, has_validation=True)
    state.add_eval_row(clock(), {"accuracy": 0.5, "per_class": [0.1, 0.2]}, epoch=1, step=10)
    data = state.plot_data()
    assert data.series["eval:accuracy"] == {"x": [10.0], "y": [0.5]}
    assert "eval:per_class" not in data.series and data.metrics == ("accuracy",)
    assert data.x_range == (0.0, 20.0) and data.epoch_marks == (10.0,)


def test_plot_deltas_carry_the_plotted_data_only() -> None:
    """Progress alone sends nothing for the panels."""
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=1, steps_per_epoch=10, has_validation=True, eval_steps=5)
    state.begin_epoch(1, clock())
    _, cursors = state.plot_delta(None)

    def changed() -> set[str]:
        nonlocal cursors
        delta, cursors = state.plot_delta(cursors)
        return set(delta["series"])

    state.record_steps(clock(), 3)  # steps without readable losses
    state.begin_eval(clock(), 5)
    state.record_eval_steps(clock(), 2)
    assert changed() == set()
    state.record_steps(clock(), 5, [1.0, 0.9])
    assert changed() == {"loss"}
    state.add_eval_row(clock(), {"note": "text only"}, epoch=1, step=5)
    assert changed() == set()  # nothing to plot in that row
    state.add_eval_row(clock(), {"accuracy": 0.5}, epoch=1, step=5)
    assert changed() == {"eval:accuracy"}
    state.record_steps(clock(), 12)  # past the planned 10 steps: the x-range grows
    assert changed() == set() and state.plot_delta(cursors)[0]["x_range"] == [0.0, 12.0]
    state.set_lr(0.1)  # the lr panel gets its first point
    assert changed() == {"lr"}
    state.set_lr(0.1)  # read again at the next tick, unchanged: nothing new to draw
    assert changed() == set()


# ---------------------------------------------------------------------- series and deltas


def test_buckets_keep_the_band_and_the_smoothed_line_through_merges() -> None:
    rng = random.Random(SEED_STATE)
    raw = [2.0 + rng.random() for _ in range(1000)]
    raw[537] = 50.0  # a spike must stay visible after any number of merges
    raw[811] = 0.001  # and so must a dip
    smooth = [sum(raw[: i + 1]) / (i + 1) for i in range(len(raw))]  # any per-step line
    buckets = Buckets(max_points=20)
    for step, (value, level) in enumerate(zip(raw, smooth), start=1):
        buckets.add(step, value, level)
        assert len(buckets) <= 20, f"{len(buckets)} points at step {step}"
    assert buckets.count == 1000 and buckets.gen > 0 and buckets.width >= 1000 // 20
    points = buckets.points()
    assert len(points["x"]) <= 20 and points["x"] == sorted(points["x"]) and points["x"][-1] == 1000.0
    # Every bucket's band is the min and max of the raw values of its steps, its line the
    # smoothed value at its last step: merging never averages the extremes away.
    first = 1
    for x, lo, hi, y in zip(points["x"], points["lo"], points["hi"], points["y"]):
        steps = raw[first - 1 : int(x)]
        assert (lo, hi) == (min(steps), max(steps)), f"bucket ending at {x}"
        assert y == smooth[int(x) - 1]
        first = int(x) + 1
    assert first == 1001  # the buckets cover every step once
    assert max(points["hi"]) == 50.0 and min(points["lo"]) == 0.001


def test_buckets_planned_wide_enough_never_merge_and_nan_is_a_gap() -> None:
    buckets = Buckets(max_points=100, planned=1000)
    assert buckets.width == 16  # 1000 steps in <= 100 buckets, a power of two
    for step in range(1, 1001):
        buckets.add(step, math.nan if step == 5 else 1.0, 1.0)
    assert buckets.gen == 0 and len(buckets) <= 100  # the plan fitted: nothing was resent
    points = buckets.points()
    assert points["lo"][0] == 1.0  # the NaN of step 5 does not poison its bucket
    exact = Buckets(max_points=100, planned=800)  # the plan fills every bucket exactly
    for step in range(1, 801):
        exact.add(step, 1.0, 1.0)
    assert (exact.width, exact.gen, len(exact)) == (8, 0, 100)
    exact.add(801, 1.0, 1.0)  # one step past the plan: merge, still within max_points
    assert exact.gen == 1 and len(exact) <= 100
    gap = Buckets(max_points=10)
    gap.add(1, math.nan, None)
    assert gap.points() == {"x": [1.0], "lo": [None], "hi": [None], "y": [None]}
    with pytest.raises(ValueError):
        Buckets(max_points=1)


def test_deltas_rebuild_the_full_series_in_the_reader_at_any_cadence() -> None:
    """A reader that merges every delta holds exactly the series (the renderer puts them in wire form:
    test_renderers), whether it reads after every step or rarely, through merges that start a new generation."""
    rng = random.Random(SEED_STATE + 1)
    for every in (1, 3, 17, 250):
        buckets = Buckets(max_points=16)
        reader, cursor = Reader(), None
        replaced = 0
        for step in range(1, 700):
            buckets.add(step, rng.random() * 3, rng.random())
            if step % every == 0:
                delta, cursor = buckets.delta(cursor)
                assert delta is not None
                result = reader.merge(delta)
                assert result != "gap"
                replaced += result == "replaced"
                full = buckets.points()
                assert reader.points() == {k: v if k != "x" else [int(x) for x in v] for k, v in full.items()}
        assert buckets.gen > 0 and 1 <= replaced <= buckets.gen + 1  # a new generation is sent from 0
        delta, cursor = buckets.delta(cursor)
        if delta is not None:  # the last steps after the last read
            assert reader.merge(delta) != "gap"
        assert reader.points()["x"] == [int(x) for x in buckets.points()["x"]]
        assert buckets.delta(cursor) == (None, cursor)


def test_a_delta_carries_only_what_the_reader_lacks() -> None:
    buckets = Buckets(max_points=1000)
    for step in range(1, 101):
        buckets.add(step, 1.0, 1.0)
    full, cursor = buckets.delta(None)
    assert full["start"] == 0 and len(full["x"]) == 99 and full["tail"]["x"] == 100
    assert buckets.delta(cursor) == (None, cursor)  # nothing new: nothing to send
    buckets.add(101, 2.0, 1.5)
    delta, cursor = buckets.delta(cursor)
    assert delta["start"] == 99 and delta["x"] == [100] and delta["tail"] == {"x": 101, "lo": 2.0, "hi": 2.0, "y": 1.5}
    assert len(json.dumps(delta)) < 200  # a tick's delta is small whatever the run's length
    # A reader that missed a delta finds a gap (and says hello); a reader holding nothing gets everything.
    buckets.add(102, 2.0, 1.5)
    buckets.add(103, 2.0, 1.5)
    later, _ = buckets.delta(cursor)
    assert later["start"] == 100
    stale = Reader()
    stale.merge(full)  # it holds 99 buckets: the delta starting at 100 leaves a hole
    assert stale.merge(later) == "gap"
    fresh = Reader()
    assert fresh.merge(buckets.delta(None)[0]) == "replaced"
    assert fresh.points()["x"] == list(range(1, 104))


def test_points_thin_out_keeping_the_first_and_the_newest() -> None:
    points = Points(max_points=10)
    reader, cursor = Reader(), None
    for i in range(1, 101):
        points.add(float(i), i / 100)
        delta, cursor = points.delta(cursor)
        assert reader.merge(delta) != "gap"
        assert len(points) <= 10
        assert points.x[0] == 1.0 and points.x[-1] == float(i)
        assert reader.points()["x"] == points.x and reader.points()["y"] == points.y
    assert points.gen > 0 and points.last() == 1.0
    assert points.delta(cursor) == (None, cursor)
    points.add(101.0, math.inf)
    assert points.last() is None  # JSON has no infinity


def _fit_like(state: TrainingState, clock: FakeClock, epochs: int, spe: int, metrics: dict[str, float]) -> None:
    step = 0
    for epoch in range(1, epochs + 1):
        state.begin_epoch(epoch, clock())
        for _ in range(spe // 10):
            clock.advance(0.1)
            step += 10
            state.record_steps(clock(), step, [1.0 / (step + i) for i in range(10)])
        state.add_eval_row(clock(), {name: value * epoch for name, value in metrics.items()}, epoch=epoch, step=step)
        state.end_epoch(epoch, clock(), validated=True)


def test_plot_delta_sends_each_series_once_and_then_only_changes() -> None:
    clock = FakeClock()
    state = TrainingState(max_points=50)
    state.start(clock(), epochs=3, steps_per_epoch=100, has_validation=True, eval_steps=5, lr=0.1)
    first, cursors = state.plot_delta(None)
    assert first["x_range"] == [0.0, 300.0] and first["epoch_marks"] == [100.0, 200.0]
    assert set(first["series"]) == {"lr"} and first["series"]["lr"]["x"] == [0.0]
    readers: dict[str, Reader] = {"lr": Reader()}
    readers["lr"].merge(first["series"]["lr"])
    again, cursors = state.plot_delta(cursors)
    assert again["series"] == {}  # nothing changed
    _fit_like(state, clock, 1, 100, {"accuracy": 0.5, "eval_loss": 0.4})
    delta, cursors = state.plot_delta(cursors)
    assert set(delta["series"]) == {"loss", "eval:accuracy", "eval:eval_loss", "lr"}
    assert delta["metrics"] == ["accuracy", "eval_loss"] and delta["loss_positive"] is True
    for key, d in delta["series"].items():
        assert readers.setdefault(key, Reader()).merge(d) != "gap"
    state.begin_epoch(2, clock())
    state.record_steps(clock(), 110, [0.2] * 10)
    delta, cursors = state.plot_delta(cursors)
    assert set(delta["series"]) == {"loss", "lr"}  # lr: its tail runs on to the current step
    assert delta["series"]["lr"]["x"] == [] and delta["series"]["lr"]["tail"] == {"x": 110.0, "y": 0.1}
    for key, d in delta["series"].items():
        assert readers[key].merge(d) != "gap"
    data = state.plot_data()
    assert readers["loss"].points()["x"] == [int(x) for x in data.series["loss"]["x"]]
    assert readers["eval:accuracy"].points() == {"x": [100.0], "y": [0.5], "lo": [None], "hi": [None]}
    assert data.series["lr"] == {"x": [0.0, 110.0], "y": [0.1, 0.1]}  # the final plot's lr runs to the end too
    assert len(data.series["loss"]["x"]) <= 50


def test_eval_loss_is_one_column_and_one_line_when_loss_is_a_metric_too() -> None:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=2, steps_per_epoch=10, has_validation=True)
    state.add_eval_row(clock(), {"loss": 0.5, "eval_loss": 0.5000001, "accuracy": 0.8}, epoch=1, step=10)
    view = state.view(clock())
    assert view.columns == ("loss", "accuracy")
    assert dict(view.rows[-1].values) == {"loss": 0.5, "accuracy": 0.8}
    assert "eval:eval_loss" not in state.plot_data().series
    # Different numbers are different things: both are kept.
    state.add_eval_row(clock(), {"loss": 0.5, "eval_loss": 0.7}, epoch=2, step=20)
    assert state.view(clock()).columns == ("loss", "accuracy", "eval_loss")
    assert state.plot_data().series["eval:eval_loss"] == {"x": [20.0], "y": [0.7]}


def test_lr_changes_become_points_and_control_changes_are_listed() -> None:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=1, steps_per_epoch=100, lr=0.1)
    state.begin_epoch(1, clock())
    state.record_steps(clock(), 10, [1.0] * 10)
    state.set_lr(0.1)  # a tick reading the same rate: no point
    state.record_steps(clock(), 20, [1.0] * 10)
    state.set_lr(0.05)  # a scheduler: a point at the tick's step
    state.set_lr(0.02, changed_at=25)  # the lr box: a point where it was applied
    state.set_lr(math.nan)  # not a rate: ignored by the plot
    state.set_lr(0.02)
    state.record_steps(clock(), 40, [1.0] * 20)
    data = state.plot_data()
    assert data.lr_changed
    assert data.series["lr"] == {"x": [0.0, 20.0, 25.0, 40.0], "y": [0.1, 0.05, 0.02, 0.02]}
    view = state.view(clock())
    assert view.lr == 0.02 and view.lr_changes == ((25, 0.02),)
    steady = TrainingState()
    steady.start(clock(), epochs=1, steps_per_epoch=10, lr=0.1)
    assert not steady.plot_data().lr_changed  # one value: the lr panel is not needed


def test_a_negative_loss_switches_the_loss_panel_to_linear() -> None:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=1, steps_per_epoch=10)
    state.record_steps(clock(), 2, [1.0, 0.5])
    assert state.plot_data().loss_positive
    state.record_steps(clock(), 3, [-0.1])
    assert not state.plot_data().loss_positive and not state.plot_delta(None)[0]["loss_positive"]


# ---------------------------------------------------------------------- clock checks


def test_check_stride_aims_at_twenty_checks_per_second_and_grows_at_most_fourfold() -> None:
    from nbcallback.widgets.sampling import next_stride

    assert next_stride(10, 0.02) == 25  # 2 ms per step: a check every 25 steps
    assert next_stride(1, 1e-6) == 4  # very fast steps: at most x4 per check
    assert next_stride(4, 0.0) == 16
    assert next_stride(4096, 1e-9) == 4096  # bounded, so a slowdown is noticed
    assert next_stride(100, 10.0) == 1  # a slow phase: back to every step
