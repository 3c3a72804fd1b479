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
from nbcallback.widgets.feed import LoopFeed, StopTraining, checked_loss
from nbcallback.widgets.panels import Panel, default_panels
from nbcallback.widgets.renderers import NullRenderer, Renderer, choose_renderer
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
    """The display settings given to the callback (see :class:`LiveCallback`; read them as ``callback.settings``);
    ``words`` speak its ``lang``."""

    display: str
    words: Words
    file: TextIO | None
    graceful_interrupt: bool
    refresh_interval: float | None
    log_interval: float
    live_rows: int
    max_rows: int
    plan: dict[str, Any] | None = None  # a loop of the user's own: epochs, steps_per_epoch, optimizer, scheduler
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
    feed: LoopFeed | None = None  # the run is fed by log() and friends (a plain loop or a framework's adapter)


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
        epochs, steps_per_epoch: for a loop of your own (see :meth:`log`): the run's totals (None: unknown); given,
            ``with board:`` shows the display at once.
        optimizer: for a loop of your own: the ``torch.optim`` optimizer the lr box drives (and whose rate is shown).
        scheduler: for a loop of your own: a ``torch.optim.lr_scheduler`` whose ``base_lrs`` the lr box scales too,
            so the schedule goes on from the new rate.

    A loop of your own feeds it with :meth:`log` (one call per training step), :meth:`log_eval` (evaluation
    results), optionally :meth:`eval_step` (evaluation progress), and ends with the ``with`` block or
    :meth:`finish`::

        with Dashboard(epochs=3, steps_per_epoch=len(loader), optimizer=opt) as board:
            for epoch in range(3):
                for x, y in loader:
                    ...
                    board.log(loss=loss)          # the tensor as it is: read on the host only at a refresh
                board.log_eval(loss=val_loss, acc=val_acc)

    Stop (the button, :meth:`request_stop`, the kernel's interrupt) makes the next :meth:`log` in a ``with`` block
    raise :class:`~nbcallback.widgets.StopTraining`, which the block catches: the loop ends after that step.
    Outside a ``with`` block, read :attr:`stop_requested`.
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
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        optimizer: Any = None,
        scheduler: Any = None,
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
        plan = None
        if (epochs, steps_per_epoch, optimizer, scheduler) != (None, None, None, None):
            _check_optimizer(optimizer)
            plan = {"epochs": epochs, "steps_per_epoch": steps_per_epoch, "optimizer": optimizer,
                    "scheduler": scheduler}
            LoopFeed(self, **plan)  # checks the totals now, where the mistake is made
        self.settings = _Settings(display, Words(lang), file, bool(graceful_interrupt), refresh_interval,
                                  float(log_interval), int(live_rows), int(max_rows), plan,
                                  RunMemo.of(run_label, run_notes, remember))
        self.state = TrainingState(smoothing=smoothing, max_points=max_points)
        self._clock = clock or time.monotonic
        self._depth = 0
        self._thread: int | None = None  # the thread whose run entered first (checked while _depth > 0)
        self._scheduler = RefreshScheduler(owner, self._clock, abort=lambda: self.renderer.abort())
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
        self.renderer: Renderer = NullRenderer()
        self._run = _Run()
        self._sampler = StepSampler()
        self._requests = _Requests()
        self._scheduler.reset()
        self.last_png: bytes | None = None
        #: Seconds the end of the last run took on the training thread (final PNG and snapshot).
        self.final_seconds = 0.0

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
        self._enter()
        if self._depth == 1 and self.settings.plan is not None:  # a loop of the user's own, with its totals
            self.begin(**self.settings.plan)
        return self

    def _enter(self) -> None:
        thread = threading.get_ident()
        if self._depth and thread != self._thread:  # (the same thread: fit's validation, a run inside a callback)
            raise RuntimeError(self._in_use())
        self._depth += 1
        if self._depth == 1:
            self._thread = thread
            if not self._run.prepared:
                self._init_run()

    def _in_use(self) -> str:
        name = type(self).__name__
        return (f"this {name} is still showing a run that has not ended (one started with run_in_background?): "
                f"wait for that run with run.wait(), or give the new run its own {name}()")

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        stopped = isinstance(exc, StopTraining)
        feed = self._run.feed
        if self._depth == 1 and feed is not None and (exc is None or stopped):
            self._guarded_finish(feed)
        self._depth = max(0, self._depth - 1)
        if self._depth == 0 and (self._run.kind is not None or self._run.prepared):
            self._finalize(None if stopped else exc)  # (prepared only: a background run that failed before its first hook)
        return stopped

    def _guarded_finish(self, feed: LoopFeed) -> None:
        try:
            feed.finish()
        except Exception as exc:  # the run's own hooks failed at its end: still show the snapshot
            warnings.warn(f"nbcallback.widgets.{type(self).__name__}: ending the run failed "
                          f"({type(exc).__name__}: {exc})", RuntimeWarning, stacklevel=3)

    # ------------------------------------------------------------------ a loop of the user's own

    def begin(self, *, epochs: int | None = None, steps_per_epoch: int | None = None, optimizer: Any = None,
              scheduler: Any = None) -> None:
        """Start a run fed by :meth:`log` and show the display (called by ``with board:`` when the totals were
        given, else by the first :meth:`log`; a framework's adapter calls it with the framework's totals).

        Args:
            epochs, steps_per_epoch: the planned totals (None: unknown; the bars then count without an end).
            optimizer: the ``torch.optim`` optimizer (or a Keras 3 optimizer) the lr box drives; None: no lr box.
            scheduler: a learning-rate scheduler whose ``base_lrs`` the lr box scales by the same factor.

        Raises:
            RuntimeError: the board is showing another run (a ``Model`` run, or one begun and not finished).
        """
        if self._run.kind is not None and not (self._run.feed and self._run.feed.ended):
            raise RuntimeError(f"begin(): this {type(self).__name__} is showing a run that has not ended; call "
                               "finish() first, or give the new run its own board")
        _check_optimizer(optimizer)
        entered = self._depth == 0
        if entered:
            self._enter()
        elif not self._run.prepared:
            self._init_run()
        feed = self._run.feed = LoopFeed(self, epochs=epochs, steps_per_epoch=steps_per_epoch, optimizer=optimizer,
                                         scheduler=scheduler, raises=not entered)
        feed.entered = entered
        feed.start()

    def log(self, loss: Any = None, *, step: int | None = None, epoch: int | None = None) -> None:
        """One training step of a loop of your own (a plain loop, or a framework's adapter).

        Args:
            loss: the step's loss: a 0-d (one-element) tensor, kept as it is (on its device: read on the host only
                at a refresh, never per step), or a number; None counts the step without a loss.
            step: the global step, counting from 1 (default: the last one + 1).  The current step again with a
                ``loss`` gives the loss of a step already counted (Hugging Face logs it after the step).
            epoch: the epoch, counting from 0 as ``range(epochs)`` does (default: from ``step`` and
                ``steps_per_epoch``, else the current one).  A new epoch ends the previous one.

        Raises:
            StopTraining: in a ``with`` block, once a stop was requested (the block catches it).
            TypeError, ValueError: ``loss`` is not a number or a 0-d tensor; ``step`` does not count up.
            RuntimeError: after :meth:`finish`.
        """
        loss = None if loss is None else checked_loss(loss)
        feed = self._run.feed
        if feed is None:
            if self._run.kind is not None:
                raise RuntimeError(f"log(): this {type(self).__name__} shows a Model run, which feeds it itself")
            self.begin()
            feed = self._run.feed
            assert feed is not None
        feed.log(loss, step, epoch)

    def eval_begin(self, steps: int | None = None) -> None:
        """An evaluation pass of ``steps`` steps begins (optional: :meth:`log_eval` begins one when none is on)."""
        self._fed("eval_begin").eval_begin(steps)

    def eval_step(self) -> None:
        """One evaluation step (the validation bar moves; nothing is read)."""
        self._fed("eval_step").eval_step()

    def log_eval(self, **results: Any) -> None:
        """The results of an evaluation pass, e.g. ``log_eval(loss=0.31, acc=0.92)``: a table row and a point in each
        result's panel at the current step (numbers or 0-d tensors, read once here).

        Raises:
            TypeError: a result that is not a number or a 0-d tensor.
        """
        self._fed("log_eval").log_eval(results)

    def end_epoch(self) -> None:
        """End the epoch that is on (optional: the next :meth:`log` in another epoch, or :meth:`finish`, ends it)."""
        self._fed("end_epoch").end_epoch()

    def finish(self, error: BaseException | None = None) -> None:
        """End a run fed by :meth:`log`: the final status, the snapshot and the PNG (``with board:`` calls it at the
        block's end; a second call does nothing).  ``error``: the exception that ended the run (shown as failed)."""
        feed = self._run.feed
        if feed is None or feed.ended and not feed.entered:
            return
        if error is None:
            self._guarded_finish(feed)
        else:
            feed.ended = True
        if feed.entered:
            feed.entered = False
            self.__exit__(type(error) if error else None, error, None)

    @property
    def stop_requested(self) -> bool:
        """Whether a stop was requested (Stop button, :meth:`request_stop`, the kernel's interrupt): a loop of your
        own ends after the current step, an adapter sets its framework's stop flag."""
        feed, shared = self._run.feed, self._run.shared
        if feed is not None:
            return feed.stop_requested()
        return (shared is not None and shared.stop_reason is not None) or self._requests.stop_before_start is not None

    def _fed(self, what: str) -> LoopFeed:
        feed = self._run.feed
        if feed is None:
            if self._run.kind is not None:
                raise RuntimeError(f"{what}(): this {type(self).__name__} shows a Model run, which feeds it itself")
            self.begin()
            feed = self._run.feed
            assert feed is not None
        return feed

    # ------------------------------------------------------------------ setting up a run

    def _panels_for(self, facts: dict[str, Any]) -> list[Panel]:
        """The plot panels for the run's ``facts`` (``metrics``, ``loss_positive``, ``lr_changed``): the defaults
        of :func:`~nbcallback.widgets.panels.default_panels`.  Subclasses override it (LiveLossPlot adds its
        ``groups``, ``panels`` and ``lr_panel``)."""
        return default_panels(tuple(facts.get("metrics", ())), lr=bool(facts.get("lr_changed")),
                              loss_positive=bool(facts.get("loss_positive", True)), words=self.settings.words)

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
                if isinstance(callback, LiveCallback) and "progress" in callback._PARTS and callback.settings.display != "off"]

    def _live_view(self, now: float) -> View:
        return self.state.view(now, live_rows=self.settings.live_rows)

    def _guard(self, action: Callable[[], Any]) -> None:
        """Run a display action other than a refresh (see :meth:`RefreshScheduler.guard`)."""
        self._scheduler.guard(action)

    def _open(self, rank: int, plots: bool = True) -> None:
        """Resolve the display mode and open the renderer (no-op when already open); ``plots``: a training run."""
        if self._run.prepared:
            return
        settings = self.settings
        self.mode = resolve_display(settings.display, rank=rank, stream=settings.file)
        parts = self._PARTS if plots else self._PARTS - {"plot"}
        self.renderer = choose_renderer(
            self.mode, parts, words=self.settings.words, background=self._run.background,
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
        if run.feed is not None and cb_params is not run.feed.cb_params:
            raise ValueError(f"this {type(self).__name__} was given a loop's totals (epochs=, steps_per_epoch=, "
                             f"optimizer=) or fed with log(); a Model run feeds its callbacks itself: pass it a "
                             f"{type(self).__name__}() made without them")
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

    def _count_step(self, run_context: RunContext) -> None:
        """A step of a fed run that brought no loss: the countdown only."""
        sampler = self._sampler
        sampler.countdown -= 1
        if sampler.countdown <= 0 or self._requests.pending:
            self._slow_path(run_context, False)

    @_counted
    def _late_record(self) -> None:
        """A loss given after its step was counted: recorded at once, at that step (it is a number already)."""
        self._record(self._clock())

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
            self.state.set_lr(apply_learning_rate(cb_params["optimizer"], lr, cb_params.get("lr_scheduler")),
                              changed_at=step)
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
        self._scheduler.refresh(now, self._update, lambda: self._sampler.t_check, boundary=boundary,
                                late=self.renderer.late_updates)

    def _update(self, now: float) -> None:
        """Show the state now (the scheduler calls it under its lock and guard)."""
        self.renderer.update(self._live_view(now), self.state, self._shows_status())

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
            self._run = _Run(feed=run.feed)  # an ended feed stays: log() after finish() says so
            if run.feed is not None:
                run.feed.ended = True
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
            png = render_png(panels, data, self.settings.words)
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
        return dataclasses.replace(view, status_text=self.settings.words.say(view.status_text))

    def __getstate__(self) -> dict[str, Any]:
        """Picklable without the live view, the figure, locks or the run's objects."""
        dropped = ("renderer", "_run", "_sampler", "_scheduler", "_requests", "state")
        return {key: value for key, value in self.__dict__.items() if key not in dropped}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.state = TrainingState()
        self._depth = 0
        self._scheduler = RefreshScheduler(type(self).__name__, self._clock, abort=lambda: self.renderer.abort())
        self._init_run()


def _check_optimizer(optimizer: Any) -> None:
    """``optimizer`` must have ``param_groups`` (torch) or a ``learning_rate`` (Keras 3)."""
    if optimizer is not None and not hasattr(optimizer, "param_groups") and not hasattr(optimizer, "learning_rate"):
        raise TypeError(f"optimizer= takes the torch.optim optimizer the lr box drives (one with param_groups), got "
                        f"{type(optimizer).__name__}")


def save_png(path: str | Path, png: bytes) -> Path:
    """Write ``png`` to ``path`` (parent folders created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(png)
    return target
