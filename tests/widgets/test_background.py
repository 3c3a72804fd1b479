"""run_in_background without a kernel: the handle, stopping, waiting, errors."""
from __future__ import annotations

import io
import threading
import time

import pytest

from nbcallback.train import Callback
from nbcallback.widgets import Dashboard, ProgressBar, run_in_background
from tests.widgets.conftest import batches, new_model


class Slow(Callback):
    def __init__(self, seconds: float = 0.002) -> None:
        self.seconds = seconds
        self.thread: str | None = None

    def on_train_step_end(self, run_context) -> None:
        self.thread = threading.current_thread().name
        time.sleep(self.seconds)


def test_background_run_returns_at_once_and_stops_on_request() -> None:
    model, opt = new_model()
    dash = Dashboard(display="off")
    slow = Slow()
    run = run_in_background(model.fit, 100, batches(50), batches(5, seed=1), callbacks=[dash, slow])
    assert not run.done  # returned while the 5,000-step run trains
    assert run.callbacks == [dash]
    deadline = time.monotonic() + 10
    while dash.view().steps_done < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert run.running and repr(run).startswith("<BackgroundRun running: epoch 1/100, step ")
    dash.set_learning_rate(0.02)
    run.stop(wait=True, timeout=30)
    assert run.done and run.exception is None
    view = dash.view()
    assert view.status == "stopped" and "(request_stop())" in view.status_text
    assert slow.thread == "nbcallback-fit"
    assert opt.param_groups[0]["lr"] == pytest.approx(0.02)
    assert repr(run).startswith("<BackgroundRun done: stopped by user at epoch ") and "(request_stop())" in repr(run)
    chinese = run_in_background(new_model()[0].fit, 1, batches(5), callbacks=[Dashboard(display="off", lang="zh_CN")])
    chinese.wait(timeout=60)
    assert repr(chinese) == "<BackgroundRun done: 已完成，第 1/1 轮，第 5/5 步>"


def test_wait_reraises_the_training_error_and_times_out() -> None:
    model, _ = new_model()

    class Boom(Callback):
        def on_train_step_end(self, run_context) -> None:
            if run_context.original_args().cur_step_num == 5:
                raise ValueError("boom")

    out = io.StringIO()
    bar = ProgressBar(display="text", file=out)
    run = run_in_background(model.train, 2, batches(20), callbacks=[Boom(), bar])
    with pytest.raises(ValueError, match="boom"):
        run.wait(timeout=30)
    assert isinstance(run.exception, ValueError)
    assert "failed with ValueError at epoch 1, step 5" in out.getvalue()

    slow_run = run_in_background(model.train, 50, batches(20), callbacks=[Slow(0.005), ProgressBar(display="off")])
    with pytest.raises(TimeoutError):
        slow_run.wait(timeout=0.05)
    slow_run.stop(wait=True, timeout=30)
    assert slow_run.done


def test_a_call_failing_before_its_first_hook_closes_the_prepared_view() -> None:
    model, _ = new_model()
    out = io.StringIO()
    bar = ProgressBar(display="text", file=out)
    run = run_in_background(model.train, 0, batches(5), callbacks=[bar])  # epoch 0: Model rejects it
    with pytest.raises(ValueError):
        run.wait(timeout=30)
    assert not bar._prepared and bar._depth == 0
    # the callback is reusable afterwards
    model.train(1, batches(3), callbacks=[bar])
    assert bar.view().status == "finished"


def test_stop_needs_one_of_our_callbacks() -> None:
    model, _ = new_model()
    run = run_in_background(model.train, 1, batches(3))
    run.wait(timeout=30)
    with pytest.raises(RuntimeError):
        run.stop()


def test_a_second_run_cannot_take_over_the_callback_of_a_run_still_going() -> None:
    # Before: the foreground fit fed the background run's bar ("Training finished: 2/1 epochs, 20/20 steps") and
    # the background run's own summary was lost.
    model, _ = new_model()
    other, _ = new_model()
    out = io.StringIO()
    bar = ProgressBar(display="text", file=out)
    gate = threading.Event()

    class Hold(Callback):
        def on_train_step_end(self, run_context) -> None:
            gate.wait(30)

    run = run_in_background(model.fit, 1, batches(40), callbacks=[bar, Hold()])
    message = (r"this ProgressBar is still showing a run that has not ended \(one started with run_in_background\?\): "
               r"wait for that run with run.wait\(\), or give the new run its own ProgressBar\(\)")
    deadline = time.monotonic() + 10
    while bar.view().status != "running" and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(RuntimeError, match=message):
        other.fit(1, batches(20), callbacks=[bar])
    with pytest.raises(RuntimeError, match=message):
        run_in_background(other.fit, 1, batches(20), callbacks=[bar])
    gate.set()
    run.wait(timeout=30)
    assert out.getvalue().splitlines()[-1].startswith("Training finished: 1/1 epochs, 40/40 steps")
    other.fit(1, batches(20), callbacks=[bar])  # once the first run has ended
    assert (bar.view().status, bar.view().steps_done) == ("finished", 20)
