"""The parts LiveCallback is made of, on their own: the step sampler and the refresh scheduler."""
from __future__ import annotations

import threading
import time
import warnings

import pytest
import torch

from nbcallback.widgets.sampling import StepSampler
from nbcallback.widgets.scheduling import LATE_GRACE, RefreshScheduler
from nbcallback.widgets.state import TrainingState
from tests.widgets.conftest import FakeClock


def test_the_sampler_keeps_outputs_only_while_open_and_records_them_in_one_go() -> None:
    sampler, state = StepSampler(), TrainingState()
    state.start(0.0, epochs=1, steps_per_epoch=10)
    state.begin_epoch(1, 0.0)
    sampler.append(torch.tensor(9.0))  # no run displayed yet: not kept
    assert sampler.outputs == []
    sampler.start()
    for value in (0.5, 0.25, 0.125):
        sampler.append(torch.tensor(value))
    sampler.record(state, 1.0, phase="train", step=3, samples_per_step=32, read=True)
    assert sampler.outputs == [] and state.global_step == 3 and state.samples_per_step == 32
    assert state.view(1.0).last_loss == 0.125
    sampler.append(torch.tensor(1.0))  # still open: kept for the next record
    assert len(sampler.outputs) == 1
    sampler.stop()
    sampler.append(torch.tensor(2.0))
    assert sampler.outputs == []


def test_the_sampler_aims_its_clock_checks_at_the_next_refresh() -> None:
    sampler = StepSampler()
    sampler.new_phase(10.0)
    assert sampler.countdown == sampler.stride == 1
    sampler.check(10.002, due=10.5)  # one 2 ms step: the next check 4 steps on (at most x4 per check)
    assert sampler.countdown == sampler.stride == 4 and sampler.t_check == 10.002
    sampler.check(10.010, due=10.5)  # 4 steps of 2 ms; the refresh is far: 75 steps make 0.15 s, capped at x4
    assert sampler.stride == 16
    sampler.check(10.042, due=10.5)  # 16 steps of 2 ms: at most 0.15 s on (MAX_CHECK_GAP), 75 steps
    assert sampler.stride == 64
    sampler.check(10.170, due=10.5)
    assert sampler.stride == 75
    sampler.check(10.320, due=10.5)
    assert sampler.stride == 75
    sampler.check(10.470, due=10.5)  # the refresh is due in 30 ms: no sooner than 50 ms on (CHECK_PERIOD)
    assert sampler.stride == 25
    sampler.check(10.520, due=10.85)  # refreshed at 10.5: the next is due 0.33 s on; a check at most 0.15 s on
    assert sampler.stride == 75


def test_refreshes_are_throttled_to_the_interval() -> None:
    clock = FakeClock()
    scheduler = RefreshScheduler("ProgressBar", clock)
    scheduler.reset(0.45)  # checks every 0.1 s: a send every fifth
    sent: list[float] = []
    for _ in range(20):  # 2 s of checks every 0.1 s
        clock.advance(0.1)
        scheduler.refresh(clock(), sent.append, lambda: clock())
    assert sent == pytest.approx([1000.1, 1000.6, 1001.1, 1001.6]) and scheduler.refreshes == 4


def test_a_phase_change_not_due_yet_is_sent_by_the_timer_when_no_step_comes() -> None:
    scheduler = RefreshScheduler("Dashboard", time.monotonic)
    scheduler.reset(0.2)
    arrived = threading.Event()
    scheduler.refresh(time.monotonic(), lambda now: None, time.monotonic)  # the first refresh: sent now
    last_check = time.monotonic()
    scheduler.refresh(time.monotonic(), lambda now: arrived.set(), lambda: last_check, boundary=True, late=True)
    assert not arrived.is_set() and scheduler.timer is not None
    assert arrived.wait(0.2 + LATE_GRACE + 2.0), "the timer never sent the phase change"
    assert scheduler.refreshes == 2 and scheduler.timer is None


def test_a_failing_display_warns_once_and_is_switched_off() -> None:
    scheduler = RefreshScheduler("LiveLossPlot", FakeClock())
    aborted: list[bool] = []

    def broken() -> None:
        raise OSError("the comm is closed")

    with pytest.warns(RuntimeWarning, match=r"LiveLossPlot: the display failed .*OSError: the comm is closed"):
        scheduler.guard(broken, lambda: aborted.append(True))
    assert scheduler.failed and aborted == [True]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scheduler.guard(broken, lambda: aborted.append(True))  # switched off: not called, no second warning
    assert aborted == [True]
