"""``Dashboard``: progress, loss plot and metrics table together, with Stop and lr controls, and "where the time
goes" when a ``CallbackProfiler`` times the same run."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from nbcallback.train.profiler import CallbackProfiler
from nbcallback.widgets.live_loss_plot import LiveLossPlot
from nbcallback.widgets.panels import time_facts

__all__ = ["Dashboard"]


@dataclass
class _TimeBar:
    """The "where the time goes" bar: whether it is wanted (``time_panel``) and, during a run, what times it (the
    run's CallbackProfiler and its rows' labels in the callbacks list's order)."""

    wanted: bool | str
    timed_by: tuple[Any, tuple[str, ...]] | None = None


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
        **kwargs: the :class:`LiveLossPlot` arguments.

    Example::

        run = run_in_background(model.fit, 5, train_ds, test_ds, callbacks=[Dashboard()])
        model.fit(2, train_ds, test_ds, callbacks=[CallbackProfiler(), Dashboard()])  # with the time bar

    ``time_panel`` and ``CallbackProfiler`` are nbcallback's own (MindSpore has neither).
    """

    _PARTS = frozenset({"progress", "table", "plot", "controls"})

    def __init__(self, display: str = "auto", *, time_panel: bool | str = "auto", **kwargs: Any) -> None:
        if time_panel not in ("auto", True, False):
            raise ValueError(f"Dashboard: time_panel must be 'auto', True or False, got {time_panel!r}; 'auto' "
                             "shows where the time goes when a CallbackProfiler is in the run's callbacks")
        self.time_bar = _TimeBar(time_panel)
        super().__init__(display, **kwargs)

    @property
    def time_panel(self) -> bool | str:
        """``'auto'``, True or False (see the class arguments)."""
        return self.time_bar.wanted

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

    def _update(self, now: float) -> None:
        self._take_time()
        super()._update(now)

    def _finalize(self, exc: BaseException | None) -> None:
        self._take_time()
        super()._finalize(exc)
        self.time_bar.timed_by = None  # the run's profiler is not kept past its run
