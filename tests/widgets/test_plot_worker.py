"""The plot helper process is reused from one run to the next, with each run's own options."""
from __future__ import annotations

import io
import os
import time

import pytest

from nbcallback.widgets import plot_worker
from nbcallback.widgets.clock import FakeClock
from nbcallback.widgets.frames import FrameSource
from nbcallback.widgets.plot import LossPlot
from nbcallback.widgets.plot_worker import PlotWorker, _IdleHelpers
from nbcallback.widgets.state import TrainingState


@pytest.fixture(autouse=True)
def _no_idle_helpers():
    """Each test starts and ends without helpers kept from other tests."""
    plot_worker._IDLE.close_all()
    yield
    plot_worker._IDLE.close_all()


def _final_state(state: TrainingState | None = None, clock: FakeClock | None = None) -> TrainingState:
    """A one-epoch run of 100 steps, played into ``state`` (a new one by default)."""
    clock = clock or FakeClock()
    if state is None:
        state = TrainingState()
        state.start(clock(), epochs=1, steps_per_epoch=100, has_validation=False)
    state.begin_epoch(1, clock())
    state.record_steps(clock(), 100, [1.0 / (i + 1) for i in range(100)])
    state.end_epoch(1, clock(), validated=False)
    return state


def _run(options: dict) -> tuple[FrameSource, bytes]:
    """One short run through a FrameSource with a helper; returns it (not closed) and its final PNG."""
    clock = FakeClock()
    state = TrainingState()
    state.start(clock(), epochs=1, steps_per_epoch=100, has_validation=False)
    frames = FrameSource(options, live=True, use_process=True, interval=2.0, budget=0.01)
    assert frames.worker is not None, "no helper process could start"
    frames.begin(clock(), state)
    _final_state(state, clock)
    frames.request_final(state)
    png = frames.final_frame(state)
    assert png is not None and frames.worker is not None, "the helper failed"
    return frames, png


def _pixels(png: bytes) -> bytes:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return image.convert("RGB").tobytes()


def _width(png: bytes) -> int:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return image.size[0]


def test_the_next_run_takes_over_the_helper_with_its_own_options() -> None:
    first, png = _run({"width": 6.0, "dpi": 80})
    pid = first.worker.pid
    assert _width(png) == 480
    first.close()
    assert len(plot_worker._IDLE) == 1
    second, png = _run({"width": 9.0, "dpi": 80})
    assert second.worker.pid == pid, "a new helper was started although one was idle"
    assert _width(png) == 720, "the reused helper kept the previous run's options"
    second.close()
    # The same options again: the helper keeps its figure (LossPlot.restart); same picture as a new plot.
    third, png = _run({"width": 9.0, "dpi": 80})
    assert third.worker.pid == pid
    reference = LossPlot(width=9.0, dpi=80)
    assert _pixels(png) == _pixels(reference.render(_final_state().plot_data(), final=True))
    reference.close()
    worker = third.worker
    third.close()
    plot_worker._IDLE.close_all()
    worker._process.wait(5)
    assert not worker.alive


def test_a_dead_idle_helper_is_replaced() -> None:
    first, _ = _run({})
    worker = first.worker
    first.close()
    worker._process.kill()
    worker._process.wait(5)
    second, png = _run({})
    assert second.worker is not worker and second.worker.alive
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    second.close()


def test_idle_helpers_are_stopped_after_the_idle_time_and_beyond_the_limit() -> None:
    pool = _IdleHelpers(limit=1, idle_seconds=0.5)
    older, newer = PlotWorker({}), PlotWorker({})
    try:
        pool.give(older)
        pool.give(newer)
        older._process.wait(5)  # beyond the limit: the older one is stopped at once
        assert len(pool) == 1 and newer.alive
        deadline = time.monotonic() + 10
        while newer.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not newer.alive and len(pool) == 0, "an idle helper outlived its idle time"
    finally:
        pool.close_all()
        older.close()
        newer.close()


def test_a_busy_or_failed_helper_is_not_kept() -> None:
    pool = _IdleHelpers()
    busy = PlotWorker({})
    busy.in_flight = 7  # a frame nobody waited for
    pool.give(busy)
    assert len(pool) == 0
    busy._process.wait(5)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_leaves_the_parents_helpers_alone() -> None:
    first, _ = _run({})
    worker = first.worker
    first.close()
    assert len(plot_worker._IDLE) == 1
    pid = os.fork()
    if pid == 0:  # the child: its pool must be empty, and it must not kill the parent's helper
        os._exit(0 if len(plot_worker._IDLE) == 0 else 3)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0, "the forked child inherited the idle helpers"
    assert worker.alive and len(plot_worker._IDLE) == 1


def test_a_plot_callback_created_in_a_notebook_starts_its_helper_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """Created in a kernel, a LiveLossPlot imports ipywidgets and puts a helper (with its plot
    options) into the idle pool; the first run takes that helper over.  In a script, or drawing
    inline, nothing is started."""
    import sys

    from nbcallback.widgets import LiveLossPlot, ProgressBar

    monkeypatch.setattr("nbcallback.widgets.env.in_notebook_kernel", lambda: False)
    LiveLossPlot(plot_process=True)
    assert len(plot_worker._IDLE) == 0, "a script started a helper"

    monkeypatch.setattr("nbcallback.widgets.env.in_notebook_kernel", lambda: True)
    ProgressBar()
    LiveLossPlot(plot_process=False)
    assert len(plot_worker._IDLE) == 0, "a callback without a helper started one"
    callback = LiveLossPlot(plot_process=True, width=5.0)
    assert "ipywidgets" in sys.modules
    assert len(plot_worker._IDLE) == 1
    LiveLossPlot(plot_process=True)
    assert len(plot_worker._IDLE) == 1, "one idle helper is enough"
    (_, waiting), = plot_worker._IDLE._idle
    assert waiting.alive
    frames = FrameSource(callback._plot_options(), live=True, use_process=True, interval=2.0, budget=0.01)
    try:
        assert frames.worker is waiting and len(plot_worker._IDLE) == 0
    finally:
        frames.close(reuse=False)
