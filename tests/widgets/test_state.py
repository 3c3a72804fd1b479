"""The state model, the schedulers and the decimation, driven by a fake clock."""
from __future__ import annotations

import math
import random

import pytest

from nbcallback.widgets.clock import CheckScheduler, FakeClock, Throttle
from nbcallback.widgets.series import Series, decimate
from nbcallback.widgets.state import TrainingState


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


def test_valid_frequency_is_inferred_from_the_validated_epochs() -> None:
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=6, steps_per_epoch=10, has_validation=True, eval_steps=5)
    step = _train_epoch(state, clock, 1, 10, 0.01, 0)
    state.end_epoch(1, clock(), validated=False)
    assert state.inferred_valid_frequency() == 2
    step = _train_epoch(state, clock, 2, 10, 0.01, step)
    state.end_epoch(2, clock(), validated=True)
    assert state.inferred_valid_frequency() == 2
    # epochs 3..6 left; validations predicted after 4 and 6.
    assert state._remaining_evals() == 2


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
    from nbcallback.widgets import fmt

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
    parts = fmt.progress_parts(view)
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
    _train_epoch(state, clock, 2, 10, 0.01, step)
    state.finish(clock(), "finished")
    view = state.view(clock())
    assert view.phase == "train" and view.step_in_epoch == 10
    assert fmt_time(view) == "00:00"


def fmt_time(view) -> str:
    from nbcallback.widgets import fmt

    return fmt.progress_parts(view)["time"]


def test_smoothed_loss_is_bias_corrected_and_ignores_nan() -> None:
    clock = FakeClock()
    state = TrainingState(smoothing=0.9)
    state.start(clock(), epochs=1, steps_per_epoch=10)
    state.begin_epoch(1, clock())
    state.record_steps(clock(), 3, [2.0, math.nan, 2.0])
    view = state.view(clock())
    assert view.loss == pytest.approx(2.0)  # debiased EMA of constant 2.0 is 2.0, the NaN skipped
    assert math.isnan(state.plot_data().raw[1][1])
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
    assert data.evals["accuracy"] == ([10.0], [0.5])
    assert "per_class" not in data.evals
    assert data.x_range == (0.0, 20.0) and data.epoch_marks == (10.0,)


def test_plot_version_changes_with_the_plotted_data_only() -> None:
    """Progress alone must not trigger a new plot frame (the helper would redraw an identical picture)."""
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=1, steps_per_epoch=10, has_validation=True, eval_steps=5)
    state.begin_epoch(1, clock())
    seen, changes = state.plot_version, state.version
    assert state.plot_data().version == seen
    state.record_steps(clock(), 3)  # steps without readable losses
    state.begin_eval(clock(), 5)
    state.record_eval_steps(clock(), 2)
    state.set_lr(0.1)
    assert state.plot_version == seen and state.version > changes
    state.record_steps(clock(), 5, [1.0, 0.9])
    assert state.plot_version > seen
    seen = state.plot_version
    state.add_eval_row(clock(), {"note": "text only"}, epoch=1, step=5)
    assert state.plot_version == seen  # nothing to plot in that row
    state.add_eval_row(clock(), {"accuracy": 0.5}, epoch=1, step=5)
    assert state.plot_version > seen
    seen = state.plot_version
    state.record_steps(clock(), 12)  # past the planned 10 steps: the x-range grows
    assert state.plot_version > seen and state.plot_data().x_range == (0.0, 12.0)


# ---------------------------------------------------------------------- decimation


def test_decimation_bounds_points_and_keeps_spikes() -> None:
    seed = 1234
    print(f"seed={seed}")
    rng = random.Random(seed)
    series = Series()
    n = 100_000
    for i in range(n):
        series.append(i, rng.random())
    series._y[54_321] = 50.0  # a spike
    xs, ys = series.decimated(2000, "minmax")
    assert len(xs) <= 2000 and len(xs) == len(ys)
    assert max(ys) == 50.0
    assert xs == sorted(xs)
    mx, my = series.decimated(2000, "mean")
    assert len(mx) <= 2000
    assert 0.4 < sum(my) / len(my) < 0.6


def test_decimation_small_series_untouched_and_nan_buckets_stay_nan() -> None:
    xs, ys = decimate([0, 1, 2], [1.0, 2.0, 3.0], 10)
    assert (xs, ys) == ([0.0, 1.0, 2.0], [1.0, 2.0, 3.0])
    x = list(range(100))
    y = [math.nan] * 50 + [1.0] * 50
    dx, dy = decimate(x, y, 10, "minmax")
    assert len(dx) <= 10 and any(math.isnan(v) for v in dy) and 1.0 in dy
    with pytest.raises(ValueError):
        decimate(x, y, 1)


# ---------------------------------------------------------------------- schedulers


def test_check_scheduler_reads_the_clock_about_twenty_times_per_second() -> None:
    clock = FakeClock()
    scheduler = CheckScheduler(period=0.05)
    stride = scheduler.reset()
    last = clock()
    step_time = 0.002  # 2 ms per step: 25 steps per check
    steps = 0
    checks = 0
    while steps < 5000:
        steps += stride
        clock.advance(stride * step_time)
        now = clock()
        checks += 1
        stride = scheduler.next_stride(stride, now - last)
        last = now
    seconds = 5000 * step_time
    assert stride == 25
    assert checks <= seconds / 0.05 + 12  # ~20/s plus the ramp-up
    assert clock.reads == checks + 1  # one read to start, then one per check


def test_check_scheduler_growth_is_bounded_and_reset_restarts() -> None:
    scheduler = CheckScheduler(period=0.05, max_stride=100, max_growth=4)
    assert scheduler.next_stride(1, 1e-6) == 4  # very fast steps: at most x4 per check
    assert scheduler.next_stride(4, 1e-6) == 16
    assert scheduler.next_stride(16, 1e-9) == 64
    assert scheduler.next_stride(64, 1e-9) == 100
    assert scheduler.next_stride(100, 10.0) == 1  # a slow phase: back to every step
    assert scheduler.reset() == 1


def test_throttle_interval_and_budget() -> None:
    clock = FakeClock(0.0)
    throttle = Throttle(interval=0.25, budget=0.01)
    assert throttle.due(clock())
    throttle.done(clock(), cost=0.5, warmup=True)  # warm-up is not counted
    clock.advance(0.2)
    assert not throttle.due(clock())  # interval
    clock.advance(0.1)
    assert throttle.due(clock())
    throttle.done(clock(), cost=0.1)  # 0.1 s spent at t=0.3: budget needs 10 s of run
    clock.advance(1.0)
    assert not throttle.due(clock())
    clock.advance(9.0)
    assert throttle.due(clock())
    refreshes = 0
    clock = FakeClock(0.0)
    throttle = Throttle(interval=0.25, budget=0.01)
    for _ in range(4000):  # 400 s of 0.1 s ticks, each refresh costing 10 ms
        if throttle.due(clock()):
            throttle.done(clock(), 0.01)
            refreshes += 1
        clock.advance(0.1)
    assert throttle.counted <= 0.01 * 400 + 0.01  # never more than the budget (+ one refresh)
    assert refreshes >= 390  # and it is used: ~1 refresh per second


def test_throttle_with_a_known_cost_never_overdraws_its_budget() -> None:
    """Given what a refresh will cost, the first refresh too waits until the budget can pay for
    it, and the spending never exceeds the budget at any refresh."""
    clock = FakeClock(0.0)
    throttle = Throttle(interval=0.25, budget=0.01, first_delay=0.5)
    throttle.begin(clock())
    clock.advance(0.5)
    assert throttle.due(clock())  # no cost given: the bucket starts full, as before
    assert not throttle.due(clock(), cost=0.02)  # 20 ms needs 2 s of run at 1 %
    assert throttle.due(clock(), ignore_budget=True, cost=0.02)
    clock.advance(1.5)
    assert throttle.due(clock(), cost=0.02)
    for _ in range(400):
        if throttle.due(clock(), cost=0.02):
            throttle.done(clock(), 0.02)
            assert throttle.counted <= 0.01 * clock()
        clock.advance(0.1)
    assert throttle.refreshes >= 19  # 42 s of run at 1 %: about 21 refreshes of 20 ms
    at = throttle.affordable_at(0.05)
    assert not throttle.due(at - 0.01, cost=0.05) and throttle.due(at + 1e-9, cost=0.05)


def test_fake_clock_is_monotonic() -> None:
    clock = FakeClock()
    with pytest.raises(ValueError):
        clock.advance(-1)
