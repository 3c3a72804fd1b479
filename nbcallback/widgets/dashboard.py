"""``Dashboard``: progress, loss plot and metrics table together, with Stop and lr controls, "where the time
goes" when a ``CallbackProfiler`` times the same run, and earlier runs drawn faint under the live one
(``compare=``, :mod:`nbcallback.widgets.overlay`)."""
from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass
from typing import Any

from nbcallback.train.profiler import CallbackProfiler
from nbcallback.widgets.live_loss_plot import LiveLossPlot
from nbcallback.widgets.overlay import CompareArg, Overlay, check_compare, read_overlay
from nbcallback.widgets.panels import time_facts
from nbcallback.widgets.runs import current_notebook, live_settings
from nbcallback.widgets.sampling import learning_rate

__all__ = ["Dashboard"]


@dataclass
class _TimeBar:
    """The "where the time goes" bar: whether it is wanted (``time_panel``) and, during a run, what times it (the
    run's CallbackProfiler and its rows' labels in the callbacks list's order)."""

    wanted: bool | str
    timed_by: tuple[Any, tuple[str, ...]] | None = None


@dataclass
class _Compared:
    """The earlier runs to draw under the live one: what ``compare`` named (checked) and, during a run, the thread
    reading them (``reading``, the live widget's) and the :class:`~nbcallback.widgets.overlay.Overlay` read (None:
    nothing to draw, or not read yet)."""

    wanted: int | tuple[Any, ...] | None
    overlay: Overlay | None = None
    reading: threading.Thread | None = None


#: How long the end of a run waits for the earlier runs a live widget is still reading (seconds).
READ_PATIENCE = 30.0


def _compare_failed(exc: Exception) -> None:
    warnings.warn(f"Dashboard(compare=...): the earlier runs could not be read ({type(exc).__name__}: {exc}); this "
                  "run goes on without them.", RuntimeWarning, stacklevel=3)


class Dashboard(LiveLossPlot):
    """:class:`ProgressBar` + :class:`LiveLossPlot` + a **Stop** button and an **lr** box.

    Stop ends training after the current step, as ``run_context.request_stop()`` does; a new lr is applied to
    every parameter group at the next step boundary.  The controls act during training with
    ``run_in_background``, or in a foreground cell in JupyterLab >= 4.4 / Notebook >= 7.4 with ipykernel >= 7;
    elsewhere they are hidden and the view says to interrupt instead.  In code: :meth:`request_stop`,
    :meth:`set_learning_rate`.

    Args:
        time_panel: the "where the time goes" bar: the share of the run's wall time of the training step, the
            evaluation, each callback (this Dashboard too) and the loop, as a
            :class:`~nbcallback.train.CallbackProfiler` in the same callbacks list measures it; updated at each
            refresh (the profiler's totals are read then, nothing is added to a step) and kept in the snapshot a
            saved notebook shows (a notebook only: a terminal prints the profiler itself).  ``'auto'`` (default):
            when the run has a ``CallbackProfiler``; ``True``: the same, with a warning when it has none; ``False``:
            never.
        compare: earlier runs to draw faint under the live curves, in every panel that has their series, each
            labelled by what differs from this run (``"lr 0.1"``), with a table of their final metrics whose live
            row updates: a number N (the last N runs of this notebook, see :func:`~nbcallback.widgets.list_runs`),
            or runs named by label, file or ``RunRecord`` (one or a list); None or 0 (default): none.  The runs are
            read once, when the run starts (the live widget reads them on a thread of its own and draws them a
            moment later, so a slow disk never holds the training; a file that cannot be read is one warning naming
            it; the run goes on); the snapshot, the final PNG and the text view keep them.
        **kwargs: the :class:`LiveLossPlot` arguments.

    Example::

        run = run_in_background(model.fit, 5, train_ds, test_ds, callbacks=[Dashboard()])
        model.fit(2, train_ds, test_ds, callbacks=[CallbackProfiler(), Dashboard()])  # with the time bar
        model.fit(2, train_ds, test_ds, callbacks=[Dashboard(compare=2)])  # the last two runs, faint

    ``time_panel``, ``compare`` and ``CallbackProfiler`` are nbcallback's own (MindSpore has none of them: it
    compares runs in MindInsight, a server reading ``SummaryCollector`` files).
    """

    _PARTS = frozenset({"progress", "table", "plot", "controls"})

    def __init__(self, display: str = "auto", *, time_panel: bool | str = "auto", compare: CompareArg = None,
                 **kwargs: Any) -> None:
        if time_panel not in ("auto", True, False):
            raise ValueError(f"Dashboard: time_panel must be 'auto', True or False, got {time_panel!r}; 'auto' "
                             "shows where the time goes when a CallbackProfiler is in the run's callbacks")
        self.time_bar = _TimeBar(time_panel)
        self.compared = _Compared(check_compare(compare))
        super().__init__(display, **kwargs)

    @property
    def time_panel(self) -> bool | str:
        """``'auto'``, True or False (see the class arguments)."""
        return self.time_bar.wanted

    @property
    def compare(self) -> int | tuple[Any, ...] | None:
        """The earlier runs to compare with, as given (a number, or a tuple of labels, paths and records)."""
        return self.compared.wanted

    @property
    def overlay(self) -> Overlay | None:
        """The earlier runs drawn under the current (or last) run, as read at its start (the live widget's: once the
        read has ended); without runs: the notebook had none to compare with yet; None: none asked for or read."""
        return self.compared.overlay

    # ------------------------------------------------------------------ the time bar

    def _find_profiler(self, callbacks: tuple[Any, ...]) -> None:
        """At the start of a run: the CallbackProfiler among the run's ``callbacks`` and its rows' labels in the
        list's order (the bar's order and colours), kept in ``time_bar.timed_by`` if the bar is wanted."""
        self.time_bar.timed_by = None
        if self.time_panel is False or self._depth > 1 or self.mode not in ("widget", "static", "final"):
            return
        profiler = next((cb for cb in callbacks if isinstance(cb, CallbackProfiler)), None)
        if profiler is not None:
            labels = (profiler.label_of(callback) for callback in callbacks)
            self.time_bar.timed_by = (profiler, tuple(label for label in labels if label))
        elif self.time_panel is True:
            warnings.warn("Dashboard(time_panel=True): the run has no CallbackProfiler, so there is no time to show; "
                          "add one to the callbacks, e.g. callbacks=[CallbackProfiler(), Dashboard(time_panel=True)]",
                          RuntimeWarning, stacklevel=4)

    def _take_time(self) -> None:
        """Read the profiler's totals into the state (at a refresh and at the end; never per step)."""
        if self.time_bar.timed_by is None:
            return
        profiler, order = self.time_bar.timed_by
        try:  # (a late refresh runs on a timer thread while the profiler may be adding a row)
            rows, wall = profiler.rows, profiler.wall_s
        except RuntimeError:
            return  # the last bar stays until the next refresh
        self.state.set_time(time_facts(rows, wall, self.settings.words, order))

    def _run_started(self, callbacks: tuple[Any, ...]) -> None:
        super()._run_started(callbacks)
        self._find_profiler(callbacks)
        if self.state.kind == "train":
            self._read_compared(self._run.facts)

    # ------------------------------------------------------------------ earlier runs

    def _read_compared(self, cb_params: Any) -> None:
        """At the start of a training run: read the earlier runs ``compare`` names, once (never per step or per
        refresh), label them by what differs from this run and hand them to the renderer.  The live widget in a
        Jupyter kernel has them read and sent to the page on a thread of their own, while the run trains (their files
        may sit on a slow or network disk, a JupyterHub home folder: the training thread does not wait for them); a
        text log, a static display or marimo (which sends only from the cell's thread) get them here."""
        compared = self.compared
        compared.overlay = compared.reading = None
        if not compared.wanted or self._depth > 1 or self.mode == "off" or not hasattr(cb_params, "get"):
            return
        try:  # what the read needs from the run, taken here (the notebook's name: from this thread's working folder)
            settings = live_settings(self, cb_params, lr=learning_rate(self._run.optimizer))
            steps = int(cb_params.get("batch_num") or 0) or None
            wanted, notebook = compared.wanted, current_notebook()
        except Exception as exc:  # comparing is a convenience: the run goes on without it
            _compare_failed(exc)
            return

        def read_and_show(on_thread: bool) -> None:
            try:
                overlay, error = read_overlay(wanted, settings, steps, notebook), None
            except Exception as exc:
                overlay, error = None, exc
            with self._scheduler.lock:  # (the lock the refreshes take around the renderer)
                if on_thread:
                    if compared.reading is not threading.current_thread():
                        return  # the run ended without this read (_end_reading): it shows nothing any more
                    compared.reading = None  # done: the run's end need not wait
                if error is not None:
                    _compare_failed(error)
                elif overlay is not None:
                    compared.overlay = overlay
                    view = self._live_view(self.settings.clock())
                    self._guard(lambda: self.renderer.show_runs(overlay, view))

        if self.mode == "widget" and self.renderer.late_updates:
            reading = threading.Thread(target=read_and_show, args=(True,), name="nbcallback-compare-read",
                                       daemon=True)
            compared.reading = reading
            try:
                reading.start()
            except RuntimeError:  # no thread to be had ("can't start new thread"): read them here
                compared.reading = None
                read_and_show(False)
        else:
            read_and_show(False)

    def _end_reading(self, exc: BaseException | None) -> None:
        """At the run's end: wait for the earlier runs' read if it is still going, so that the snapshot and the PNG
        keep them; at most :data:`READ_PATIENCE` seconds (a disk that does not answer must not keep the run from
        ending), and not at all after an error or an interrupt, or once the display has failed.  The wait is part
        of the end's time (``final_seconds``)."""
        compared = self.compared
        reading = compared.reading
        if reading is None:
            return
        try:
            if exc is None and not self._scheduler.failed:
                reading.join(READ_PATIENCE)
        finally:
            with self._scheduler.lock:
                unfinished = compared.reading is reading  # (the thread clears it, under this lock, when done)
                compared.reading = None
        if unfinished and exc is None and not self._scheduler.failed:
            warnings.warn(f"Dashboard(compare=...): the earlier runs were still being read {READ_PATIENCE:g} s after "
                          "this run ended (a slow or unreachable disk?); its snapshot is drawn without them.",
                          RuntimeWarning, stacklevel=5)

    def _final_png(self) -> tuple[bytes | None, int | None]:
        """The final plot with the earlier runs drawn faint under the live one (LiveLossPlot's without them)."""
        overlay = self.compared.overlay
        data = self.state.plot_data() if overlay is not None and overlay.runs and self._wants_png() else None
        if data is None or not set(data.series) - {"lr"}:
            return super()._final_png()
        try:
            from nbcallback.widgets.plot import drawable, png_size, render_png

            panels = self._panels_for({"metrics": data.metrics, "loss_positive": data.loss_positive,
                                       "lr_changed": data.lr_changed})
            png = render_png(panels, data, self.settings.words, overlay=overlay)
            return png, png_size(len(drawable(panels, data)))[0]
        except Exception as exc:  # matplotlib missing or broken: the snapshot still goes out
            warnings.warn(f"nbcallback.widgets.Dashboard: the final plot could not be drawn ({type(exc).__name__}: "
                          f"{exc}); the rest of the snapshot is shown.", RuntimeWarning, stacklevel=3)
            return None, None

    def __getstate__(self) -> dict[str, Any]:
        """Picklable without the last run's profiler and earlier runs (what was asked for is kept)."""
        state = super().__getstate__()
        state["time_bar"] = _TimeBar(self.time_bar.wanted)
        state["compared"] = _Compared(self.compared.wanted)
        return state

    def _update(self, now: float) -> None:
        self._take_time()
        super()._update(now)

    def _finalize(self, exc: BaseException | None) -> None:
        self._take_time()
        try:
            self._end_reading(exc)
        finally:  # (an interrupt during the wait still ends the run)
            super()._finalize(exc)
        self.time_bar.timed_by = None  # the run's profiler is not kept past its run
