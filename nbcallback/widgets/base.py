"""``LiveCallback``: what ProgressBar, LiveLossPlot and Dashboard have in common.

It composes three small parts: a :class:`~nbcallback.widgets.sampling.StepSampler` (the step hooks only append
the step's loss tensor and count down; at zero the clock is read; the losses are converted once per refresh: one
device synchronisation), a :class:`~nbcallback.widgets.scheduling.RefreshScheduler` (at most one refresh per
interval; a timer sends a phase change when no step comes to; a display failure warns once, never stops training)
and the renderer :func:`~nbcallback.widgets.renderers.choose_renderer` picks.  Stop and lr requests only set
fields, applied by the next step hook.  ``__exit__`` always ends with a static snapshot and the final PNG.

Subclasses declare what they show in ``_PARTS`` and may override :meth:`LiveCallback._panels_for` (the plot's
panels), :meth:`LiveCallback._wants_png` and :meth:`LiveCallback._on_final_png`.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable, TextIO

import torch

from nbcallback.train.callback import Callback, RunContext
from nbcallback.train.model import dataset_size
from nbcallback.widgets.controls import SHARED_KEY, SharedStop, apply_learning_rate, checked_lr
from nbcallback.widgets.env import DISPLAY_MODES, resolve_display
from nbcallback.widgets.panels import Panel, default_panels
from nbcallback.widgets.render_text import NullRenderer
from nbcallback.widgets.renderers import choose_renderer
from nbcallback.widgets.runs import RunMemo, remember_run
from nbcallback.widgets.sampling import StepSampler, learning_rate
from nbcallback.widgets.scheduling import RefreshScheduler
from nbcallback.widgets.state import TrainingState, View
from nbcallback.widgets.words import Msg, Words

__all__ = ["LiveCallback"]

def _counted(hook: Callable[..., None]) -> Callable[..., None]:
    """Count a hook's time on the training thread as display overhead (never nest two counted hooks)."""

    @functools.wraps(hook)
    def timed(self: LiveCallback, *args: Any) -> None:
        started = time.perf_counter()
        try:
            hook(self, *args)
        finally:
            self.state.note_display_cost(time.perf_counter() - started)

    return timed


@dataclasses.dataclass
class _Settings:
    """The display settings given to the callback (see :class:`LiveCallback`); ``words`` speak its ``lang``."""

    display: str
    words: Words
    file: TextIO | None
    graceful_interrupt: bool
    refresh_interval: float | None
    log_interval: float
    live_rows: int
    max_rows: int
    memo: RunMemo = dataclasses.field(default_factory=RunMemo)  # how its runs are remembered (widgets/runs.py)


@dataclasses.dataclass
class _Run:
    """What the callback holds about the run it shows (a new one per run)."""

    kind: str | None = None  # 'train' or 'eval' while a run is on
    phase: str = "train"
    cb_params: Any = dataclasses.field(default_factory=dict)
    shared: SharedStop | None = None  # what the run's display callbacks share (stop requests, the signal handler)
    train_ctx: RunContext | None = None
    siblings: tuple[Any, ...] = ()  # a background run's display callbacks, known before any hook
    prepared: bool = False  # opened on the main thread before a background run started
    background: bool = False
    callback_stop: bool = False  # a callback called run_context.request_stop()
    t_end: float | None = None
    panels: tuple[tuple[Any, ...], list[Panel]] | None = None  # (the facts that chose the plot's panels, the panels)
    timed_by: Any = None  # Dashboard's time bar: (the run's CallbackProfiler, its rows' labels in the list's order)


@dataclasses.dataclass
class _Requests:
    """Stop and learning-rate requests from any thread, applied by the next step hook (``pending``)."""

    pending: bool = False
    lr: float | None = None
    stop_before_start: str | None = None  # a stop requested before the run had started


class LiveCallback(Callback):
    """Base class of the live display callbacks; use a subclass.

    Args:
        display: ``'auto'`` (default: widgets in a notebook kernel, text in a terminal, log lines when stdout is
            not a TTY; the ``NBCALLBACK_DISPLAY`` environment variable decides when set), ``'widget'``,
            ``'static'`` (HTML at <= 1 Hz, no widgets), ``'final'`` (only the final snapshot), ``'text'`` or
            ``'off'``.  Non-zero ranks never display.
        file: where text output goes (``sys.stdout`` at write time when None).
        graceful_interrupt: the kernel's interrupt button / Ctrl-C stops at the next step boundary (the run ends
            "stopped by user" and ``Model.train`` returns normally); a second interrupt raises as usual.
        refresh_interval: seconds between refreshes; None uses the renderer's default (a third of a second for the
            widget, 0.25 s on a terminal, 1 s for static).
        log_interval: seconds between progress lines in log mode (non-TTY).
        live_rows: table rows shown while live (the last ones).
        max_rows: table rows kept in the final snapshot (head and tail, with the number left out).
        smoothing: EMA factor of the smoothed loss (bias-corrected; a short run averages over a 25th of its steps).
        max_points: the most points per plot line (the loss is kept as buckets of steps: min, max, smoothed).
        lang: the display's language, ``'en'`` or ``'zh_CN'``; None reads ``NBCALLBACK_LANG``, then English.
        clock: a function returning monotonic seconds (tests pass a fake).
        run_label, run_notes, remember: how the run is remembered for comparing (:mod:`nbcallback.widgets.runs`):
            its label (None: named by what differs), notes kept with its settings (``{'dropout': 0.5}``), and
            whether to remember it at all (default True).
    """

    #: What the subclass shows: a subset of {'progress', 'table', 'plot', 'controls'}.
    _PARTS: frozenset[str] = frozenset({"progress"})

    def __init__(
        self,
        display: str = "auto",
        *,
        file: TextIO | None = None,
        graceful_interrupt: bool = True,
        refresh_interval: float | None = None,
        log_interval: float = 30.0,
        live_rows: int = 10,
        max_rows: int = 200,
        smoothing: float = 0.98,
        max_points: int = 1000,
        lang: str | None = None,
        clock: Callable[[], float] | None = None,
        run_label: str | None = None,
        run_notes: dict[str, Any] | None = None,
        remember: bool = True,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        if display not in DISPLAY_MODES:
            raise ValueError(f"display must be one of {DISPLAY_MODES}, got {display!r}")
        if refresh_interval is not None and refresh_interval <= 0:
            raise ValueError(f"refresh_interval must be > 0, got {refresh_interval!r}")
        if log_interval <= 0:  # checked here, not only where a log is written (CI), so every display rejects it
            raise ValueError(f"log_interval must be > 0 (seconds between log lines), got {log_interval!r}")
        if live_rows < 0 or max_rows < 1:
            raise ValueError(f"live_rows must be >= 0 and max_rows >= 1, got {live_rows!r}, {max_rows!r}")
        self.settings = _Settings(display, Words(lang), file, bool(graceful_interrupt), refresh_interval,
                                  float(log_interval), int(live_rows), int(max_rows),
                                  RunMemo.of(run_label, run_notes, remember))
        self.state = TrainingState(smoothing=smoothing, max_points=max_points)
        self._clock = clock or time.monotonic
        self._depth = 0
        self._thread: int | None = None  # the thread whose run entered first (checked while _depth > 0)
        self._scheduler = RefreshScheduler(owner, self._clock)
        self._init_run()
        try:  # in a kernel, import what the display needs now (matplotlib and its fonts), not at the run's end
            if resolve_display(display, rank=int(os.environ.get("RANK") or 0), stream=file) == "widget":
                import nbcallback.widgets.render_widget  # noqa: F401  (anywidget, ipywidgets)

                if "plot" in self._PARTS:
                    from nbcallback.widgets.plot import warm_up

                    warm_up()
        except (ImportError, OSError, ValueError, RuntimeError):  # reported when the run opens its view
            pass

    def _init_run(self) -> None:
        self.mode = "off"
        self.renderer: Any = NullRenderer()
        self._run = _Run()
        self._sampler = StepSampler()
        self._requests = _Requests()
        self._scheduler.reset()
        self.last_png: bytes | None = None
        #: Seconds the end of the last run took on the training thread (final PNG and snapshot).
        self.final_seconds = 0.0

    # The settings as given (read-only; set them when creating the callback).
    display = property(lambda self: self.settings.display, doc="See the class arguments.")
    words = property(lambda self: self.settings.words, doc="The display's words, in its ``lang``.")
    file = property(lambda self: self.settings.file, doc="Where text output goes (None: ``sys.stdout``).")
    graceful_interrupt = property(lambda self: self.settings.graceful_interrupt, doc="See the class arguments.")
    refresh_interval = property(lambda self: self.settings.refresh_interval, doc="See the class arguments.")
    log_interval = property(lambda self: self.settings.log_interval, doc="See the class arguments.")
    live_rows = property(lambda self: self.settings.live_rows, doc="See the class arguments.")
    max_rows = property(lambda self: self.settings.max_rows, doc="See the class arguments.")

    @property
    def _prepared(self) -> bool:
        """Whether the view was opened before a background run started (its first hook may not come)."""
        return self._run.prepared

    # ------------------------------------------------------------------ public controls

    def request_stop(self, reason: str = "code") -> None:
        """Stop the run after the current step, as ``run_context.request_stop()`` would (any thread).

        Args:
            reason: shown in the final status: ``'code'`` (default), ``'button'``, ``'interrupt'`` (the kernel's),
                ``'ctrl_c'`` or any short text.
        """
        if self._run.shared is not None and self._depth > 0:
            self._run.shared.request_stop(reason)
        else:
            self._requests.stop_before_start = reason
            self._notice_request()

    def set_learning_rate(self, lr: float) -> None:
        """Set every parameter group's learning rate at the next step boundary (any thread).

        Group 0 gets ``lr``; the other groups keep their ratio to group 0.

        Raises:
            ValueError: ``lr`` is not a positive finite number.
        """
        self._requests.lr = checked_lr(lr)
        self._notice_request()

    def _notice_request(self) -> None:
        """Make the next step hook look at the pending requests (any thread)."""
        self._requests.pending = True

    def __enter__(self) -> LiveCallback:
        thread = threading.get_ident()
        if self._depth and thread != self._thread:  # (the same thread: fit's validation, a run inside a callback)
            raise RuntimeError(self._in_use())
        self._depth += 1
        if self._depth == 1:
            self._thread = thread
            if not self._run.prepared:
                self._init_run()
        return self

    def _in_use(self) -> str:
        name = type(self).__name__
        return (f"this {name} is still showing a run that has not ended (one started with run_in_background?): "
                f"wait for that run with run.wait(), or give the new run its own {name}()")

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self._depth = max(0, self._depth - 1)
        if self._depth == 0 and (self._run.kind is not None or self._run.prepared):
            self._finalize(exc)  # (prepared only: a background run that failed before its first hook)

    # ------------------------------------------------------------------ setting up a run

    def _panels_for(self, facts: dict[str, Any]) -> list[Panel]:
        """The plot panels for the run's ``facts`` (``metrics``, ``loss_positive``, ``lr_changed``): the defaults
        of :func:`~nbcallback.widgets.panels.default_panels`.  Subclasses override it (LiveLossPlot adds its
        ``groups``, ``panels`` and ``lr_panel``)."""
        return default_panels(tuple(facts.get("metrics", ())), lr=bool(facts.get("lr_changed")),
                              loss_positive=bool(facts.get("loss_positive", True)), words=self.words)

    def _panels(self, facts: dict[str, Any]) -> list[Panel]:
        """:meth:`_panels_for`, asked again only when the facts that choose the panels change (the widget asks at
        every refresh; the same list comes back until then)."""
        key = (tuple(facts.get("metrics", ())), bool(facts.get("loss_positive", True)), bool(facts.get("lr_changed")))
        run = self._run
        if run.panels is None or run.panels[0] != key:
            run.panels = (key, self._panels_for(facts))
        return run.panels[1]

    def _repeats_another(self) -> bool:
        """In a terminal or a log, whether a progress callback listed before this one prints the run's lines (this
        one would print each of them again)."""
        shown = self._progress_callbacks()
        return bool(shown) and shown[0] is not self

    def _shows_status(self) -> bool:
        """One status line per run: a plot-only callback leaves it to a progress callback beside it (the run's
        callbacks are known before any joins it, so the first view is already right)."""
        return "progress" in self._PARTS or not self._progress_callbacks()

    def _progress_callbacks(self) -> list[LiveCallback]:
        """The run's display callbacks that show progress, in the order the run lists them."""
        run = self._run
        callbacks = list(run.siblings)
        if hasattr(run.cb_params, "get"):
            callbacks += list(run.cb_params.get("list_callback") or ())
        callbacks += run.shared.members if run.shared is not None else []
        return [callback for callback in callbacks
                if isinstance(callback, LiveCallback) and "progress" in callback._PARTS and callback.display != "off"]

    def _live_view(self, now: float) -> View:
        return self.state.view(now, live_rows=self.settings.live_rows)

    def _guard(self, action: Callable[[], Any]) -> None:
        """Run a display action (see :meth:`RefreshScheduler.guard`)."""
        self._scheduler.guard(action, lambda: self.renderer.abort())

    def _open(self, rank: int, plots: bool = True) -> None:
        """Resolve the display mode and open the renderer (no-op when already open); ``plots``: a training run."""
        if self._run.prepared:
            return
        settings = self.settings
        self.mode = resolve_display(self.display, rank=rank, stream=settings.file)
        parts = self._PARTS if plots else self._PARTS - {"plot"}
        self.renderer = choose_renderer(
            self.mode, parts, words=self.words, background=self._run.background,
            graceful_interrupt=settings.graceful_interrupt,
            repeats_another=self.mode in ("tty", "log") and self._repeats_another(), file=settings.file,
            log_interval=settings.log_interval, panels_for=self._panels,
            on_stop=lambda: self.request_stop("button"), on_lr=self.set_learning_rate)
        self._scheduler.reset(settings.refresh_interval or self.renderer.text_interval)
        self._sampler.start()
        now = self._clock()
        view = self._live_view(now)
        self._guard(lambda: self.renderer.open(view, self.state, self._shows_status()))
        if self.mode != "off":  # the view just shown is the first refresh (off: the state is kept at every check)
            self._scheduler.sent(now)

    def _prepare_background(self, siblings: tuple[LiveCallback, ...] = ()) -> None:
        """Open the view on the calling (main) thread before a background run starts, so the display belongs to
        the cell that started it; ``siblings``: the run's display callbacks (one status line for them all)."""
        if self._depth:
            raise RuntimeError(self._in_use())
        self._init_run()
        self._run.siblings, self._run.background = tuple(siblings), True
        self._open(rank=0)
        self._run.prepared = True

    def _start(self, kind: str, cb_params: Any, now: float) -> None:
        if sum(other is self for other in cb_params.get("list_callback") or ()) > 1:
            raise ValueError(f"callbacks holds the same {type(self).__name__} twice (its hooks would count every "
                             "step twice); pass it once")
        run = self._run
        run.cb_params, run.kind = cb_params, kind
        shared = cb_params.get(SHARED_KEY)
        if not isinstance(shared, SharedStop):
            shared = cb_params[SHARED_KEY] = SharedStop()
        shared.join(self)
        run.shared = shared
        if self.settings.graceful_interrupt and not run.background:
            shared.install_signal(self)
        if self._requests.stop_before_start is not None:
            shared.request_stop(self._requests.stop_before_start)
            self._requests.stop_before_start = None
        if kind == "train":
            valid, eval_steps = cb_params.get("valid_dataset"), None
            if valid is not None:
                try:
                    eval_steps = int(dataset_size(valid))
                except (TypeError, ValueError, AttributeError):
                    pass
            self.state.start(now, epochs=int(cb_params.get("epoch_num", 1)),
                             steps_per_epoch=int(cb_params.get("batch_num", 0)),
                             first_global_step=int(cb_params.get("cur_step_num", 0) or 0),
                             has_validation=valid is not None, eval_steps=eval_steps, lr=learning_rate(cb_params))
        else:
            self.state.start(now, kind="eval", eval_steps=int(cb_params.get("batch_num", 0)) or None)
        # Open after the state knows the run, so the controls start with the optimizer's lr.
        self._open(int(cb_params.get("rank_id", 0) or 0), plots=kind == "train")
        self._new_phase(kind, now)
        self._guard(lambda: self.renderer.event("start", self._live_view(now)))

    def _new_phase(self, phase: str, now: float) -> None:
        self._run.phase = phase
        self._sampler.new_phase(now)

    # ------------------------------------------------------------------ hooks

    @_counted
    def on_train_begin(self, run_context: RunContext) -> None:
        self._run.train_ctx = run_context
        self._start("train", run_context.original_args(), self._clock())

    @_counted
    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        now, cb_params = self._clock(), self._run.cb_params
        self.state.begin_epoch(int(cb_params.get("cur_epoch_num", 1)), now, int(cb_params.get("cur_step_num", 0)))
        self._apply_pending(run_context, eval_phase=False, stops=False)
        self._refresh(now, boundary=True)  # the first step may wait seconds for its batch (loader workers starting)

    def on_train_step_end(self, run_context: RunContext) -> None:
        """The hot path: O(1), no clock read, no device synchronisation."""
        sampler = self._sampler
        sampler.append(self._run.cb_params["net_outputs"])
        sampler.countdown -= 1
        if sampler.countdown <= 0 or self._requests.pending:
            self._slow_path(run_context, False)

    @_counted
    def on_train_epoch_end(self, run_context: RunContext) -> None:
        now, cb_params = self._clock(), self._run.cb_params
        self._apply_pending(run_context, eval_phase=False)
        self._record(now)
        epoch, validated = cb_params.get("cur_epoch_num", 1), cb_params.get("eval_results") is not None
        self.state.end_epoch(int(epoch), now, validated=validated)
        self._refresh(now, boundary=True)
        self._guard(lambda: self.renderer.event("epoch_end", self._live_view(now)))

    @_counted
    def on_train_end(self, run_context: RunContext) -> None:
        """The run ends here (the snapshot itself is drawn in ``__exit__``)."""
        self._run.t_end = self._clock()
        self._record(self._run.t_end)
        self._run.callback_stop = run_context.get_stop_requested()

    @_counted
    def on_eval_begin(self, run_context: RunContext) -> None:
        """fit's validation (a phase of the run) or a stand-alone ``Model.eval`` run."""
        now, cb_params = self._clock(), run_context.original_args()
        if self._run.kind is None:
            self._start("eval", cb_params, now)
        else:
            self._record(now, before_eval=True)
            self._new_phase("eval", now)
        self.state.begin_eval(now, int(cb_params.get("batch_num", 0)) or None)
        if self._run.kind == "train":
            self._apply_pending(run_context, eval_phase=True)
            self._refresh(now, boundary=True)

    def on_eval_step_end(self, run_context: RunContext) -> None:
        """Hot path of evaluation steps: a counter only."""
        sampler = self._sampler
        sampler.countdown -= 1
        if sampler.countdown <= 0 or self._requests.pending:
            self._slow_path(run_context, True)

    @_counted
    def on_eval_end(self, run_context: RunContext) -> None:
        """Time the evaluation pass and add its table row (fit's validation: ``cb_params.eval_results``, set
        before ``on_eval_end`` as in MindSpore)."""
        cb_params, now = self._run.cb_params, self._clock()
        self._apply_pending(run_context, eval_phase=True)
        self.state.record_eval_steps(now, int(cb_params.get("cur_step_num", 0)))
        partial = run_context.get_stop_requested()
        seconds = self.state.end_eval(now, complete=not partial)
        if self._run.kind == "eval":
            self._run.t_end = now
            self.state.add_eval_row(now, cb_params.get("metrics") or {}, epoch=None, step=None, seconds=seconds,
                                    partial=partial)
            return
        self._new_phase("train", now)
        if cb_params.get("eval_results") is not None:
            self.state.add_eval_row(now, cb_params["eval_results"], epoch=int(cb_params.get("cur_epoch_num", 1)),
                                    step=self.state.global_step, seconds=seconds, partial=partial)
        self._refresh(now, boundary=True)

    # ------------------------------------------------------------------ the slow path and refreshes

    @_counted
    def _slow_path(self, run_context: RunContext, eval_phase: bool) -> None:
        self._apply_pending(run_context, eval_phase)
        if self._sampler.countdown > 0:  # only a request was pending
            return
        now = self._clock()
        self._sampler.check(now)
        if self._scheduler.due(now):
            self._record(now)
            self._refresh(now)

    def _apply_pending(self, run_context: RunContext, eval_phase: bool, stops: bool = True) -> None:
        """Apply stop / learning-rate requests: always on the training thread, between steps.  ``stops=False``
        (an epoch begins: the loop runs its first step anyway) leaves a stop to that step's end, where it is."""
        requests, run = self._requests, self._run
        if not requests.pending:
            return
        requests.pending = False
        cb_params, shared = run.cb_params, run.shared
        lr, requests.lr = requests.lr, None
        if lr is not None and cb_params.get("optimizer") is not None:
            step = self.state.global_step if eval_phase else int(cb_params.get("cur_step_num", 0))
            self.state.set_lr(apply_learning_rate(cb_params["optimizer"], lr), changed_at=step)
        if shared is not None and requests.stop_before_start is not None:
            shared.request_stop(requests.stop_before_start)
            requests.stop_before_start = None
        if shared is None or shared.stop_reason is None or shared.stop_where is not None:
            return
        if not stops:
            requests.pending = True
            return
        step = int(cb_params.get("cur_step_num", 0))
        if run.kind == "eval":
            shared.stop_where = (None, step, None)
        elif eval_phase:
            shared.stop_where = (self.state.epoch, self.state.step_in_epoch, step)
        else:
            batch_num = max(1, int(cb_params.get("batch_num", 1) or 1))
            shared.stop_where = (cb_params.get("cur_epoch_num"), (step - 1) % batch_num + 1 if step else 0, None)
        run_context.request_stop()
        if eval_phase and run.train_ctx is not None:
            run.train_ctx.request_stop()
        self._sampler.countdown = 0  # refresh at once so the status shows the stop

    def _record(self, now: float, *, before_eval: bool = False) -> None:
        """Bring the state up to date, converting the pending losses (one synchronisation)."""
        run = self._run
        if run.kind is not None:
            self._sampler.record(self.state, run.cb_params, now, phase=run.phase, before_eval=before_eval,
                                 read=self.mode != "off" and not self._scheduler.failed)

    def _refresh(self, now: float, *, boundary: bool = False) -> None:
        """Send the recorded state, at most once per interval; at a ``boundary`` (a phase begins or ends) a send
        that is not due yet is left to a timer, in case no step comes to refresh when it is due."""
        if self._run.kind is None or self.mode == "off" or self._scheduler.failed:
            return
        self._scheduler.refresh(now, self._send, lambda: self._sampler.t_check, boundary=boundary,
                                late=self.renderer.late_updates)

    def _send(self, now: float) -> None:
        """Send the state now (the scheduler holds its lock)."""
        view = self._live_view(now)
        self._guard(lambda: self.renderer.update(view, self.state, self._shows_status()))

    # ------------------------------------------------------------------ the end

    @_counted
    def _finalize(self, exc: BaseException | None) -> None:
        """Final status, final plot, static snapshot; close everything. Never raises."""
        run, sampler = self._run, self._sampler
        # The run ended at on_train_end/on_eval_end; other callbacks' exits do not count.
        now = run.t_end if run.t_end is not None and exc is None else self._clock()
        with self._scheduler.lock:  # a timer's send still running ends first; none starts after this
            self._scheduler.disarm()
        try:
            if exc is not None and any(isinstance(t, torch.Tensor) and t.device.type != "cpu" for t in sampler.outputs):
                sampler.outputs[:] = [math.nan] * len(sampler.outputs)  # after a device error, reading could fail
            try:
                self._record(now)
            except Exception:  # the state is only for display; keep ending the run
                pass
            self.state.finish(now, *self._ending(exc))
            remember_run(self)  # the run's record for comparing (#47): once per run, at its end, never in a step
            if self.mode != "off" and not self._scheduler.failed:
                started = time.perf_counter()
                png, css_width = self._final_png() if self.state.kind == "train" else (None, None)
                self.last_png = png or self.last_png
                self._on_final_png(png)  # e.g. saves the PNG, which text renderers then name
                view = self.state.view(now, live_rows=None, max_rows=self.settings.max_rows)
                self._guard(lambda: self.renderer.finish(view, png, self._shows_status(), css_width))
                self.final_seconds = time.perf_counter() - started
        finally:
            if run.shared is not None:
                run.shared.uninstall_signal(self)
            self._run = _Run()
            sampler.stop()

    def _wants_png(self) -> bool:
        """Whether this run ends with a PNG: a notebook snapshot (subclasses add ``save_path``)."""
        return self.mode in ("widget", "static", "final")

    def _final_png(self) -> tuple[bytes | None, int | None]:
        """The final plot, drawn from the panels the browser drew, and its CSS width; None without a plot or when
        drawing fails (a warning says why)."""
        data = self.state.plot_data() if "plot" in self._PARTS and self._wants_png() else None
        if data is None or not set(data.series) - {"lr"}:
            return None, None
        try:
            from nbcallback.widgets.plot import drawable, png_size, render_png

            panels = self._panels_for({"metrics": data.metrics, "loss_positive": data.loss_positive,
                                       "lr_changed": data.lr_changed})
            png = render_png(panels, data, self.words)
            return png, png_size(len(drawable(panels, data)))[0]
        except Exception as exc:  # matplotlib missing or broken: the snapshot still goes out
            warnings.warn(f"nbcallback.widgets.{type(self).__name__}: the final plot could not be drawn "
                          f"({type(exc).__name__}: {exc}); the rest of the snapshot is shown.", RuntimeWarning,
                          stacklevel=3)
            return None, None

    def _on_final_png(self, png: bytes | None) -> None:
        """Hook for subclasses at the end of a displayed run, ``png`` None without a plot (LiveLossPlot checks the
        metric names it was given and saves the PNG to ``save_path``)."""

    def _ending(self, exc: BaseException | None) -> tuple[str, str, str | None]:
        """(status, status text, error) of a run ending with ``exc``."""
        state, shared = self.state, self._run.shared
        if state.kind == "eval":
            where = Msg("where_step", step=state.eval_step)
        elif state.epoch is None:
            where = Msg("where_nowhere")
        else:
            where = Msg("where_epoch", epoch=state.epoch, step=state.step_in_epoch)
        if exc is None and shared is not None and shared.stop_where is not None:
            return "stopped", shared.describe_stop(), None
        if exc is None and self._run.callback_stop:
            return "stopped", Msg("stopped_by_callback", where=where), None
        if exc is None:
            return "finished", Msg("finished"), None
        if isinstance(exc, KeyboardInterrupt):
            return "interrupted", Msg("interrupted", where=where), None
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        error = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
        return "error", Msg("failed", error=type(exc).__name__, where=where), error[:500]

    def view(self) -> View:
        """The current state of the (last) run, e.g. for a custom report; ``status_text`` is in the callback's
        language (``lang=``)."""
        view = self.state.view(self._clock(), live_rows=None, max_rows=self.settings.max_rows)
        run = dataclasses.replace(view.run, status_text=self.words.say(view.status_text))
        return dataclasses.replace(view, run=run)

    def __getstate__(self) -> dict[str, Any]:
        """Picklable without the live view, the figure, locks or the run's objects."""
        dropped = ("renderer", "_run", "_sampler", "_scheduler", "_requests", "state")
        return {key: value for key, value in self.__dict__.items() if key not in dropped}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.state = TrainingState()
        self._depth = 0
        self._scheduler = RefreshScheduler(type(self).__name__, self._clock)
        self._init_run()


def save_png(path: str | Path, png: bytes) -> Path:
    """Write ``png`` to ``path`` (parent folders created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(png)
    return target
