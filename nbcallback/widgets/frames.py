"""Where a run's plot frames come from: a helper process, or inline as a fallback.

:class:`FrameSource` hides the difference from the callback: at each text
refresh it hands back a new PNG when one is ready, and at the end it produces
the final frame (waiting for the helper, or drawing inline when the helper is
not available).  Live frames are throttled by a
:class:`~nbcallback.widgets.clock.Throttle` (at most every ``interval``
seconds; the first one after ``interval`` seconds of the run inline, after
half a second with the helper).  Inline frames also respect its time budget,
the first one included unless it builds the figure (a cost the final frame
would pay anyway): a live frame is drawn only once the budget can pay for it
and for the final frame, at what such frames cost on its figure (a frame that
redraws the y-axes costs several times a frame that only draws the lines; a
short run shows only its final frame).  Once the run's last
evaluation has begun no live frame is asked for: the plot does not change
until the final frame, and the helper keeps the picture it prepared for it.
"""
from __future__ import annotations

import math
import threading
import time
import warnings
from typing import Any

from nbcallback.widgets.clock import Throttle
from nbcallback.widgets.state import TrainingState

__all__ = ["FrameSource"]

#: Seconds into a run before the first live frame is requested from the helper process.
_HELPER_FIRST_FRAME = 0.5


class _IdlePlots:
    """Inline figures of finished runs, kept for the next run with the same options.

    The inline path is the one-CPU path (a Binder container, a 1-CPU quota),
    where building a figure (50-80 ms) is a visible share of a short run;
    see :meth:`~nbcallback.widgets.plot.LossPlot.restart`.  At most
    ``limit`` figures are kept (a figure is a few hundred KB).
    """

    def __init__(self, limit: int = 2) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._idle: list[tuple[tuple[Any, ...], Any]] = []

    @staticmethod
    def _key(options: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(sorted((name, repr(value)) for name, value in options.items()))

    def take(self, options: dict[str, Any]) -> Any:
        """A kept figure for ``options`` (restarted), or a new :class:`~nbcallback.widgets.plot.LossPlot`."""
        key = self._key(options)
        with self._lock:
            for index, (kept_key, plot) in enumerate(self._idle):
                if kept_key == key:
                    del self._idle[index]
                    plot.restart()
                    return plot
        from nbcallback.widgets.plot import LossPlot

        return LossPlot(**options)

    def give(self, options: dict[str, Any], plot: Any) -> None:
        """Keep ``plot`` for a later run (the oldest one beyond ``limit`` is freed)."""
        with self._lock:
            self._idle.append((self._key(options), plot))
            surplus = self._idle[: max(0, len(self._idle) - self.limit)]
            del self._idle[: len(surplus)]
        for _, old in surplus:
            old.close()


#: Figures kept between runs of this process (a cache, not a setting).
_IDLE_PLOTS = _IdlePlots()


class FrameSource:
    """Plot frames of one run.

    Args:
        options: :class:`~nbcallback.widgets.plot.LossPlot` keyword arguments.
        live: whether live frames are wanted (False: only the final frame, e.g. text mode).
        use_process: render live frames in a helper process
            (:class:`~nbcallback.widgets.plot_worker.PlotWorker`, reused from the
            previous run when one is idle); the final frame is rendered there
            too.  Falls back to inline rendering when the helper cannot start
            or fails.
        interval: the shortest time between two live frames, in seconds.
        budget: the share of wall time inline frames may take.
    """

    def __init__(self, options: dict[str, Any], live: bool, use_process: bool, interval: float, budget: float) -> None:
        self.options = dict(options)
        self.live = live
        # Off the training thread the first frame costs training nothing, so ask the
        # helper for it early: its start-up (~0.7 s, more on a busy machine) then
        # does not leave a short run without any live frame.
        first_delay = min(interval, _HELPER_FIRST_FRAME) if live and use_process else interval
        self.throttle = Throttle(interval, budget, first_delay=first_delay)
        self.worker: Any = None
        self.inline: Any = None
        self.version = -1
        self._final_version: int | None = None
        self._finishing = False  # the last evaluation began: only the final frame is left
        self._not_before = -math.inf  # inline: no live frame is affordable before this time
        self.frames = 0
        self.worker_seconds = 0.0
        if live and use_process:
            from nbcallback.widgets.plot_worker import acquire

            try:
                self.worker = acquire(self.options)
            except OSError as exc:
                warnings.warn(f"nbcallback.widgets: no plot helper process ({exc}); plotting inline", RuntimeWarning,
                              stacklevel=3)
        if self.worker is None and live:
            # Import matplotlib now (a one-time ~0.3 s) rather than inside the
            # first frame, whose cost counts against the plot's time budget.
            self._inline().prepare()

    def _inline(self) -> Any:
        if self.inline is None:
            self.inline = _IDLE_PLOTS.take(self.options)
        return self.inline

    def _drop_worker(self) -> None:
        if self.worker is not None:
            error = self.worker.error
            self.worker.close(timeout=0.5)
            self.worker = None
            warnings.warn(f"nbcallback.widgets: the plot helper failed ({error}); plotting inline", RuntimeWarning,
                          stacklevel=4)

    def begin(self, now: float, state: TrainingState) -> None:
        """The run starts (the first live frame comes ``interval`` seconds later).

        The helper is asked to build the run's figure now, while it has
        nothing else to do, so the first frame does not pay for it.
        """
        self.throttle.begin(now)
        if self.worker is not None and self.worker.alive:
            try:
                self.worker.prebuild(state.plot_data())
            except RuntimeError:
                self._drop_worker()

    def live_frame(self, state: TrainingState, now: float) -> bytes | None:
        """A new PNG when one is ready (called at text refreshes), else None."""
        if not self.live:
            return None
        worker = self.worker
        if worker is not None:
            png = None
            got = worker.poll()
            if got is not None:
                png, seconds = got
                self.worker_seconds += seconds
                self.frames += png is not None
            if not worker.alive:
                self._drop_worker()
                return png
            if self._finishing:
                return png
            if not worker.busy and self.throttle.due(now) and state.plot_version != self.version:
                started = time.perf_counter()
                try:
                    worker.submit(state.plot_data())
                except RuntimeError:
                    self._drop_worker()
                    return png
                self.throttle.done(now, time.perf_counter() - started)
                self.version = state.plot_version
            return png
        if self._finishing or state.plot_version == self.version or now < self._not_before:
            return None
        # A live frame waits until the budget can pay for it and for the final frame, at what
        # such frames cost on this figure (LossPlot.frame_cost, and the last final frame, or the
        # costliest frame before one was drawn; a frame that builds the figure is not counted),
        # so live frames keep the plot within its budget as far as past costs tell.  The cheap
        # test first (a blit and the final frame), then the frame this data needs.
        plot = self._inline()
        final_cost = plot.final_seconds or plot.costliest_frame
        if not self.throttle.due(now, cost=plot.costliest_blit + final_cost):
            return None
        data = state.plot_data()
        cost = plot.frame_cost(data) + final_cost
        if not self.throttle.due(now, cost=cost):
            self._not_before = self.throttle.affordable_at(cost)  # no need to ask again before
            return None
        builds = plot.builds
        started = time.perf_counter()
        png = plot.render(data)
        # Only building the figure is exempt from the budget (the final frame would pay for
        # it anyway); drawing a live frame is a cost the training thread pays for the view.
        self.throttle.done(now, time.perf_counter() - started, warmup=plot.builds != builds)
        self.version = state.plot_version
        self.frames += png is not None
        return png

    def prepare_final(self, state: TrainingState) -> None:
        """The run's last evaluation begins: the training curve is complete, so the
        helper draws ahead what the final frame shows of it
        (:meth:`~nbcallback.widgets.plot.LossPlot.prepare_final`) while the
        evaluation runs.  Inline: nothing (the training thread would pay for it).

        From here on no live frame is asked for: the plot would not change
        before the final frame, a live frame would only make the final one
        wait behind it, and drawing one would discard the prepared picture.
        """
        self._finishing = True
        worker = self.worker
        if worker is None or not worker.alive:
            return
        try:
            worker.prepare_final(state.plot_data())
        except RuntimeError:
            self._drop_worker()

    def request_final(self, state: TrainingState) -> None:
        """The run's data is complete (its last epoch ended): have the helper start
        on the final frame now, so it is drawn while the run winds down (other
        callbacks' epoch and train ends, a final checkpoint).  Inline: nothing to do.
        """
        self.start_final(state)

    def start_final(self, state: TrainingState) -> None:
        """Make sure the helper is drawing the final frame of ``state`` (no wait).

        A final frame already asked for is kept when the plotted data has not
        changed since; otherwise a new one is queued (behind a frame still in
        flight, whose answer :meth:`final_frame` skips).  The caller can do its
        other end-of-run work (the HTML snapshot) while the helper draws, and
        collect the frame with :meth:`final_frame`.  Inline: nothing to do.
        """
        worker = self.worker
        if worker is None or not worker.alive or self._final_version == state.plot_version:
            return
        data = state.plot_data()
        try:
            worker.submit(data, final=True)
        except RuntimeError:
            self._drop_worker()
            return
        self._final_version = data.version

    def final_frame(self, state: TrainingState, timeout: float = 15.0) -> bytes | None:
        """The last frame of the run (waits for the helper; inline when it is not there).

        Starts it first when :meth:`start_final` has not (or the data changed since).
        """
        self.start_final(state)
        worker = self.worker
        if worker is not None and worker.alive:
            got = worker.wait(timeout)
            if got is not None and got[0] is not None:
                self.worker_seconds += got[1]
                return got[0]
            if worker.error is not None or not worker.alive:
                self._drop_worker()
        return self._inline().render(state.plot_data(), final=True)

    def close(self, reuse: bool = True) -> None:
        """Hand the helper and the inline figure back for the next run of this
        process (``reuse=False``, after a failure: stop and free them)."""
        if self.worker is not None:
            from nbcallback.widgets.plot_worker import release

            if reuse:
                release(self.worker)
            else:
                self.worker.close()
            self.worker = None
        if self.inline is not None:
            if reuse:
                _IDLE_PLOTS.give(self.options, self.inline)
            else:
                self.inline.close()
            self.inline = None
