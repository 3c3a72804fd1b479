"""``Board``: the framework-free core of the live display, fed by plain values.

A :class:`Board` owns one displayed run at a time: its :class:`~nbcallback.widgets.state.TrainingState`, a
:class:`~nbcallback.widgets.sampling.StepSampler` (a step only appends its loss object and counts down; at zero the
clock is read; the losses are converted once per refresh: one device synchronisation), a
:class:`~nbcallback.widgets.scheduling.RefreshScheduler` (at most one refresh per interval; a timer sends a phase
change when no step comes to; a display failure warns once, never stops training), the renderer
:func:`~nbcallback.widgets.renderers.choose_renderer` picks, the Stop and lr requests (they only set fields, applied
at the next step boundary) and the run's end: the final status, the static snapshot and the PNG.

It is fed in two layers, neither of which knows any training framework:

* **the loop API**, for a loop of the user's own and the adapters of :mod:`nbcallback.integrations`:
  :meth:`Board.begin`, :meth:`Board.log` (one training step), :meth:`Board.eval_begin`, :meth:`Board.eval_step`,
  :meth:`Board.log_eval`, :meth:`Board.end_epoch`, :meth:`Board.finish`, :attr:`Board.stop_requested`;
* **the run API** underneath, which that layer and :class:`~nbcallback.widgets.base.LiveCallback` (the
  MindSpore-style callbacks: one adapter of ``Model``'s hooks) call: :meth:`Board.open_run`,
  :meth:`Board.epoch_begins`, :meth:`Board.train_step` (the hot path), :meth:`Board.count_step` (a step without a
  loss, an evaluation step), :meth:`Board.step_check`, :meth:`Board.epoch_ends`, :meth:`Board.eval_begins`,
  :meth:`Board.eval_ends`, :meth:`Board.run_ends`; the feeder says where the run is in :attr:`Board.at` before a
  call that reads it.  A call that returns True asks the feeder to stop its loop now (a stop was requested and
  takes effect at this step): ``run_context.request_stop()`` for a ``Model`` run, :class:`StopTraining` in a
  ``with`` block (Lightning's adapter reads :attr:`Board.stop_requested` and sets ``trainer.should_stop``).

The snapshot is drawn when the board's ``with`` block (or a ``Model`` run's, which enters its callbacks) ends.
Subclasses declare what they show in ``_PARTS`` and may override :meth:`Board._panels_for` (the plot's panels),
:meth:`Board._wants_png`, :meth:`Board._on_final_png`, :meth:`Board._run_started` (a run opened: Dashboard finds
its profiler there), ``_update`` and ``_finalize``.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Concatenate, Mapping, ParamSpec, Sequence, TextIO, TypeVar

import torch

from nbcallback.widgets.controls import SharedStop, apply_learning_rate, checked_lr
from nbcallback.widgets.env import DISPLAY_MODES, resolve_display
from nbcallback.widgets.panels import Panel, default_panels
from nbcallback.widgets.renderers import NullRenderer, Renderer, choose_renderer
from nbcallback.widgets.runs import RunMemo, remember_run
from nbcallback.widgets.sampling import StepSampler, learning_rate
from nbcallback.widgets.scheduling import RefreshScheduler
from nbcallback.widgets.state import TrainingState, View
from nbcallback.widgets.words import Msg, Words

__all__ = ["Board", "StopTraining", "Where", "checked_loss", "save_png"]

_R = TypeVar("_R")
_P = ParamSpec("_P")


class StopTraining(Exception):
    """Raised by ``board.log()`` in a ``with`` block once Stop was pressed (or ``request_stop()`` called, or the
    kernel interrupted): the ``with`` block catches it, so the loop ends cleanly after the current step and the run
    shows "stopped by user".  Catch it yourself to run code after a stop inside the block."""


def checked_loss(value: Any) -> Any:
    """``value`` as the display keeps it: a number, or a one-element tensor (detached, left on its device: never
    read here).

    Raises:
        TypeError: ``value`` is neither a number nor a tensor.
        ValueError: a tensor with more than one element.
    """
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:  # metadata only: no device synchronisation
            raise ValueError(f"log(loss=...) takes a number or a 0-d tensor, got a tensor of shape "
                             f"{tuple(value.shape)}; reduce it first, e.g. log(loss=loss.mean())")
        return value.detach()
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    kind = type(value).__name__
    raise TypeError(f"log(loss=...) takes a number or a 0-d tensor, got {kind} {value!r:.60}; pass the loss "
                    "tensor itself (e.g. log(loss=loss)) or a float")


def _count(name: str, value: Any) -> int | None:
    """``value`` as a count >= 0, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        if isinstance(value, float) and math.isfinite(value) and value >= 0 and value == int(value):
            return int(value)
        raise ValueError(f"{name} must be a whole number >= 0 (or None: unknown), got {value!r}")
    return int(value)


def _counted(method: Callable[Concatenate[Board, _P], _R]) -> Callable[Concatenate[Board, _P], _R]:
    """Count a method's time on the training thread as display overhead (never nest two counted methods)."""

    @functools.wraps(method)
    def timed(self: Board, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        started = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            self.state.note_display_cost(time.perf_counter() - started)

    return timed


@dataclasses.dataclass
class _Settings:
    """The display settings given to the board (see :class:`Board`; read them as ``board.settings``); ``words``
    speak its ``lang``."""

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
    clock: Callable[[], float] = time.monotonic  # monotonic seconds (tests pass a fake)


@dataclasses.dataclass
class Where:
    """Where the run is, as its feeder last said (see :meth:`Board.open_run`): the ``epoch`` on (counting from 1,
    as shown), the global ``step`` (the training steps done), the planned ``steps_per_epoch`` (0: unknown), the
    evaluation pass's ``eval_step`` and the batch's ``samples`` (for samples/s; None: unknown)."""

    epoch: int = 1
    step: int = 0
    steps_per_epoch: int = 0
    eval_step: int = 0
    samples: int | None = None


@dataclasses.dataclass
class _Fed:
    """A run fed by the loop API: whether ``log`` raises :class:`StopTraining` after a stop (in a ``with`` block),
    whether ``begin`` entered the board (no ``with`` block: ``finish`` exits it), whether it ``ended``, the epoch on
    (counting from 0, None between epochs), whether an evaluation pass is on and was stopped, and whether the epoch
    on has evaluation results."""

    raises: bool = False
    entered: bool = False
    ended: bool = False
    epoch: int | None = None
    evaluating: bool = False
    eval_stopped: bool = False
    validated: bool = False


@dataclasses.dataclass
class _Run:
    """What the board holds about the run it shows (a new one per run)."""

    kind: str | None = None  # 'train' or 'eval' while a run is on
    phase: str = "train"
    at: Where = dataclasses.field(default_factory=Where)
    optimizer: Any = None  # what the lr box drives, and the scheduler whose base_lrs it scales
    scheduler: Any = None
    shared: SharedStop | None = None  # what the run's boards share (stop requests, the signal handler)
    callbacks: tuple[Any, ...] = ()  # the run's callbacks (a background run's: known before it starts)
    facts: Any = dataclasses.field(default_factory=dict)  # what the run is remembered from (runs.py)
    loop: Any = None  # the feeder's own handle of the run (a Model run: its training RunContext)
    prepared: bool = False  # opened on the main thread before a background run started
    background: bool = False
    loop_stopped: bool = False  # the loop stopped itself (a Model run: a callback's run_context.request_stop())
    t_end: float | None = None
    panels: tuple[tuple[Any, ...], list[Panel]] | None = None  # (the facts that chose the plot's panels, the panels)
    fed: _Fed | None = None  # the run is fed by log() and friends (a plain loop or a framework's adapter)


@dataclasses.dataclass
class _Requests:
    """Stop and learning-rate requests from any thread, applied at the next step boundary (``pending``)."""

    pending: bool = False
    lr: float | None = None
    stop_before_start: str | None = None  # a stop requested before the run had started


class Board:
    """The live display of one run at a time, fed by plain values; use a subclass (``Dashboard``,
    ``LiveLossPlot``, ``ProgressBar``), which is also a ``Model`` callback.

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
            _count("epochs", epochs)  # checked now, where the mistake is made
            _count("steps_per_epoch", steps_per_epoch)
            plan = {"epochs": epochs, "steps_per_epoch": steps_per_epoch, "optimizer": optimizer,
                    "scheduler": scheduler}
        self.settings = _Settings(display, Words(lang), file, bool(graceful_interrupt), refresh_interval,
                                  float(log_interval), int(live_rows), int(max_rows), plan,
                                  RunMemo.of(run_label, run_notes, remember), clock or time.monotonic)
        self.state = TrainingState(smoothing=smoothing, max_points=max_points)
        self._depth = 0
        self._thread: int | None = None  # the thread whose run entered first (checked while _depth > 0)
        self._scheduler = RefreshScheduler(owner, self.settings.clock, abort=lambda: self.renderer.abort())
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
        #: Seconds the end of the last run took on the training thread (:meth:`_end`, once the loop has returned: the
        #: last losses read, the run remembered, the final PNG, the snapshot; a compared run's wait for its read); the
        #: rest of ``view().display_seconds`` is the display's time while the run trained.
        self.final_seconds = 0.0

    @property
    def _prepared(self) -> bool:
        """Whether the view was opened before a background run started (its first hook may not come)."""
        return self._run.prepared

    @property
    def at(self) -> Where:
        """Where the run is: the feeder updates it before a call of the run API that reads it (see :class:`Where`)."""
        return self._run.at

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
        """Make the next step look at the pending requests (any thread)."""
        self._requests.pending = True

    @property
    def stop_requested(self) -> bool:
        """Whether a stop was requested (Stop button, :meth:`request_stop`, the kernel's interrupt): a loop of your
        own ends after the current step, an adapter sets its framework's stop flag."""
        shared = self._run.shared
        return (shared is not None and shared.stop_reason is not None) or self._requests.stop_before_start is not None

    def __enter__(self) -> Board:
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
        if self._depth == 1 and self._run.fed is not None and (exc is None or stopped):
            self._guarded_finish()
        self._depth = max(0, self._depth - 1)
        if self._depth == 0 and (self._run.kind is not None or self._run.prepared):
            self._end(None if stopped else exc)  # (prepared only: a background run that failed before its first hook)
        return stopped

    def _guarded_finish(self) -> None:
        try:
            self._finish_fed()
        except Exception as exc:  # the run's own hooks failed at its end: still show the snapshot
            warnings.warn(f"nbcallback.widgets.{type(self).__name__}: ending the run failed "
                          f"({type(exc).__name__}: {exc})", RuntimeWarning, stacklevel=3)

    # ------------------------------------------------------------------ the loop API

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
        run = self._run
        if run.kind is not None and not (run.fed and run.fed.ended):
            raise RuntimeError(f"begin(): this {type(self).__name__} is showing a run that has not ended; call "
                               "finish() first, or give the new run its own board")
        _check_optimizer(optimizer)
        epochs, per_epoch = _count("epochs", epochs) or 0, _count("steps_per_epoch", steps_per_epoch) or 0
        entered = self._depth == 0
        if entered:
            self._enter()
        elif not run.prepared:
            self._init_run()
        self._run.fed = _Fed(raises=not entered, entered=entered)
        # The keys a run's record reads its settings by (runs.py; a Model run's cb_params has the same).
        facts = {"epoch_num": epochs, "batch_num": per_epoch, "optimizer": optimizer, "list_callback": [self]}
        self.open_run("train", epochs=epochs, steps_per_epoch=per_epoch, optimizer=optimizer, scheduler=scheduler,
                      callbacks=(self,), facts=facts)

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
        fed = self._feeding("log")
        if fed.evaluating:
            self._end_fed_eval(None)
        at = self._run.at
        done = at.step
        step = done + 1 if step is None else int(_count("step", step) or 0)
        if step == done and done > 0 and loss is not None:
            self._sampler.append(loss)  # e.g. Hugging Face: the loss arrives in on_log, after the step was counted
            self._late_record()
            return
        if step <= done:
            raise ValueError(f"log(step={step}): steps count up from 1, one per training step, and step {done} was "
                             "logged already; leave step= out to count the steps one by one")
        if epoch is None:
            per_epoch = at.steps_per_epoch
            epoch = (step - 1) // per_epoch if per_epoch else (fed.epoch or 0)
        else:
            epoch = _count("epoch", epoch)
        self._to_epoch(int(epoch or 0))
        at.step = step
        if loss is None:  # a step without a loss: counted, nothing kept
            self.count_step()
        else:
            self.train_step(loss)
        if fed.raises and self.stop_requested:
            raise StopTraining("Stop was requested; the with block ends the run here")

    def eval_begin(self, steps: int | None = None) -> None:
        """An evaluation pass of ``steps`` steps begins (optional: :meth:`log_eval` begins one when none is on)."""
        fed = self._feeding("eval_begin")
        if fed.evaluating:
            return
        total = _count("steps", steps) or None
        fed.evaluating = True
        fed.eval_stopped = self.eval_begins(total)

    def eval_step(self) -> None:
        """One evaluation step (the validation bar moves; nothing is read)."""
        fed = self._feeding("eval_step", check_open=False)
        if not fed.evaluating:
            self.eval_begin(None)
        self._run.at.eval_step += 1
        if self.count_step(eval_phase=True):
            fed.eval_stopped = True

    def log_eval(self, **results: Any) -> None:
        """The results of an evaluation pass, e.g. ``log_eval(loss=0.31, acc=0.92)``: a table row and a point in each
        result's panel at the current step (numbers or 0-d tensors, read once here).

        Raises:
            TypeError: a result that is not a number or a 0-d tensor.
        """
        fed = self._feeding("log_eval")
        values = {}
        for name, value in results.items():
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                value = float(value)  # an evaluation's result: read once, at its end
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"log_eval({name}=...) takes numbers or 0-d tensors, got {type(value).__name__} "
                                f"{value!r:.60}")
            values[str(name)] = float(value)
        if not values:
            raise ValueError("log_eval() got no results; pass them by name, e.g. board.log_eval(loss=0.31, acc=0.9)")
        if not fed.evaluating:
            self.eval_begin(None)
        self._end_fed_eval(values)

    def end_epoch(self) -> None:
        """End the epoch that is on (optional: the next :meth:`log` in another epoch, or :meth:`finish`, ends it)."""
        self._feeding("end_epoch", check_open=False)
        self._end_fed_epoch()

    def finish(self, error: BaseException | None = None) -> None:
        """End a run fed by :meth:`log`: the final status, the snapshot and the PNG (``with board:`` calls it at the
        block's end; a second call does nothing).  ``error``: the exception that ended the run (shown as failed)."""
        fed = self._run.fed
        if fed is None or fed.ended and not fed.entered:
            return
        if error is None:
            self._guarded_finish()
        else:
            fed.ended = True
        if fed.entered:
            fed.entered = False
            self.__exit__(type(error) if error else None, error, None)

    def _feeding(self, what: str, check_open: bool = True) -> _Fed:
        """The fed run (the first call of the loop API begins one); ``check_open``: refuse an ended one."""
        run = self._run
        fed = run.fed
        if fed is None:
            if run.kind is not None:
                raise RuntimeError(f"{what}(): this {type(self).__name__} shows a Model run, which feeds it itself")
            self.begin()
            fed = self._run.fed
            assert fed is not None
        if check_open and fed.ended:
            raise RuntimeError(f"{what}() after finish(): this run has ended; give the next run a new board "
                               "(e.g. a new `with Dashboard(...) as board:` block)")
        return fed

    def _to_epoch(self, epoch: int) -> None:
        """End the epoch that is on (if another) and begin ``epoch`` (counting from 0)."""
        fed = self._run.fed
        assert fed is not None
        if fed.epoch == epoch:
            return
        if fed.epoch is not None:
            self._end_fed_epoch()
        fed.epoch = epoch
        self.epoch_begins(epoch + 1)

    def _end_fed_epoch(self) -> None:
        fed = self._run.fed
        if fed is None or fed.epoch is None:
            return
        if fed.evaluating:
            self._end_fed_eval(None)
        self.epoch_ends(validated=fed.validated)
        fed.epoch, fed.validated = None, False

    def _end_fed_eval(self, values: dict[str, float] | None) -> None:
        fed = self._run.fed
        assert fed is not None
        fed.validated = fed.validated or values is not None
        self.eval_ends(values, stopped=fed.eval_stopped)
        fed.evaluating = False

    def _finish_fed(self) -> None:
        """End the fed run (the epoch that is on, then the training); the snapshot follows in ``__exit__``."""
        fed = self._run.fed
        if fed is None or fed.ended:
            return
        self._apply_pending(eval_phase=False)  # a Stop pressed since the last step still shows
        self._end_fed_epoch()
        fed.ended = True
        self.run_ends()

    # ------------------------------------------------------------------ the run API

    @_counted
    def open_run(self, kind: str = "train", *, epochs: int = 1, steps_per_epoch: int = 0, first_step: int = 0,
                 eval_steps: int | None = None, has_validation: bool = False, optimizer: Any = None,
                 scheduler: Any = None, rank: int = 0, callbacks: Sequence[Any] = (),
                 shared: SharedStop | None = None, facts: Any = None) -> None:
        """A run begins; the display opens.

        Args:
            kind: ``'train'`` (training, with evaluation passes between its steps) or ``'eval'`` (one evaluation).
            epochs, steps_per_epoch: the planned totals (0: unknown).
            first_step: the global step it starts after (a resumed run).
            eval_steps, has_validation: its evaluation passes' steps (None: unknown), and whether it validates.
            optimizer, scheduler: what the lr box drives (None: no lr box), and whose ``base_lrs`` it scales.
            rank: the process's rank (only rank 0 displays).
            callbacks: the run's callbacks (one status line for the boards among them; Dashboard's time bar).
            shared: the stop the run's boards share (None: this board's own).
            facts: what the run is remembered from (:mod:`nbcallback.widgets.runs`; a ``Model`` run's
                ``cb_params``).
        """
        now = self.settings.clock()
        run = self._run
        run.kind, run.optimizer, run.scheduler = kind, optimizer, scheduler
        run.facts = facts if facts is not None else {"epoch_num": epochs, "optimizer": optimizer,
                                                     "list_callback": list(callbacks)}
        run.callbacks += tuple(callbacks)
        run.at = Where(step=int(first_step), steps_per_epoch=int(steps_per_epoch))
        shared = shared if shared is not None else SharedStop()
        shared.join(self)
        run.shared = shared
        if self.settings.graceful_interrupt and not run.background:
            shared.install_signal(self)
        if self._requests.stop_before_start is not None:
            shared.request_stop(self._requests.stop_before_start)
            self._requests.stop_before_start = None
        if kind == "train":
            self.state.start(now, epochs=int(epochs), steps_per_epoch=int(steps_per_epoch),
                             first_global_step=int(first_step), has_validation=has_validation, eval_steps=eval_steps,
                             lr=learning_rate(optimizer))
        else:
            self.state.start(now, kind="eval", eval_steps=eval_steps or None)
        # Open after the state knows the run, so the controls start with the optimizer's lr.
        self._open(int(rank), plots=kind == "train")
        self._new_phase(kind, now)
        self._guard(lambda: self.renderer.event("start", self._live_view(now)))
        self._run_started(tuple(callbacks))

    def _run_started(self, callbacks: tuple[Any, ...]) -> None:
        """Hook for subclasses when a run has opened (the display is open, the state knows the run); ``callbacks``:
        the run's callbacks (Dashboard finds the run's CallbackProfiler among them)."""

    @_counted
    def epoch_begins(self, epoch: int, step: int | None = None) -> None:
        """A training epoch begins: ``epoch`` counting from 1, after global ``step`` (None: :attr:`at`'s)."""
        now, at = self.settings.clock(), self._run.at
        at.epoch = int(epoch)
        if step is not None:
            at.step = int(step)
        self.state.begin_epoch(at.epoch, now, at.step)
        self._apply_pending(eval_phase=False, stops=False)
        self._refresh(now, boundary=True)  # the first step may wait seconds for its batch (loader workers starting)

    def train_step(self, loss: Any) -> bool:
        """One training step's ``loss`` (a number or a one-element tensor, unchecked: :meth:`log` checks it),
        appended as it is: O(1), no clock read, no device synchronisation.  The global step is :attr:`at`'s
        ``step`` (the feeder's count; set it before, or at the latest when :meth:`step_check` is due).  True: a stop
        takes effect here; the feeder stops its loop."""
        sampler = self._sampler
        sampler.append(loss)
        sampler.countdown -= 1
        if sampler.countdown <= 0 or self._requests.pending:
            return self.step_check(False)
        return False

    def count_step(self, eval_phase: bool = False) -> bool:
        """A step that brings no loss (a training step without one, or an evaluation step): the countdown only."""
        sampler = self._sampler
        sampler.countdown -= 1
        if sampler.countdown <= 0 or self._requests.pending:
            return self.step_check(eval_phase)
        return False

    @_counted
    def step_check(self, eval_phase: bool) -> bool:
        """The slow path of a step: apply the requests; at the countdown's end, read the clock and refresh when
        due.  True: a stop takes effect at this step."""
        stop = self._apply_pending(eval_phase)
        sampler = self._sampler
        if sampler.countdown > 0:  # only a request was pending
            return stop
        now = self.settings.clock()
        if self._scheduler.due(now):
            self._record(now)
            self._refresh(now)
        sampler.check(now, self._scheduler.next_due())
        return stop

    @_counted
    def _late_record(self) -> None:
        """A loss given after its step was counted: recorded at once, at that step (it is a number already)."""
        self._record(self.settings.clock())

    @_counted
    def epoch_ends(self, *, validated: bool) -> bool:
        """The epoch on (:attr:`at`'s) ends at :attr:`at`'s step; ``validated``: it had evaluation results.  True: a
        stop takes effect here."""
        now = self.settings.clock()
        stop = self._apply_pending(eval_phase=False)
        self._record(now)
        self.state.end_epoch(self._run.at.epoch, now, validated=validated)
        self._refresh(now, boundary=True)
        self._guard(lambda: self.renderer.event("epoch_end", self._live_view(now)))
        return stop

    @_counted
    def run_ends(self, *, stopped: bool = False) -> None:
        """The run's loop ended (the snapshot is drawn when the board's ``with`` block ends); ``stopped``: the loop
        stopped itself (a callback's request, not this board's)."""
        run = self._run
        run.t_end = self.settings.clock()
        self._record(run.t_end)
        run.loop_stopped = stopped

    @_counted
    def eval_begins(self, steps: int | None) -> bool:
        """An evaluation pass of ``steps`` steps (None: unknown) begins: a phase of a training run, or the whole of
        an ``'eval'`` run.  True: a stop takes effect here."""
        now, run = self.settings.clock(), self._run
        run.at.eval_step = 0
        if run.kind == "train":
            self._record(now, before_eval=True)
            self._new_phase("eval", now)
        self.state.begin_eval(now, steps or None)
        if run.kind != "train":
            return False
        stop = self._apply_pending(eval_phase=True)
        self._refresh(now, boundary=True)
        return stop

    @_counted
    def eval_ends(self, results: Mapping[str, Any] | None, *, stopped: bool = False) -> bool:
        """The evaluation pass ends after :attr:`at`'s ``eval_step`` steps, with ``results`` (a table row; None: no
        row); ``stopped``: the loop stopped it (the row is marked partial).  True: a stop takes effect here."""
        now, run = self.settings.clock(), self._run
        stop = self._apply_pending(eval_phase=True)
        self.state.record_eval_steps(now, run.at.eval_step)
        partial = stopped or stop
        seconds = self.state.end_eval(now, complete=not partial)
        if run.kind == "eval":
            run.t_end = now
            self.state.add_eval_row(now, results or {}, epoch=None, step=None, seconds=seconds, partial=partial)
            return stop
        self._new_phase("train", now)
        if results is not None:
            self.state.add_eval_row(now, results, epoch=run.at.epoch, step=self.state.global_step, seconds=seconds,
                                    partial=partial)
        self._refresh(now, boundary=True)
        return stop

    # ------------------------------------------------------------------ requests, records and refreshes

    def _new_phase(self, phase: str, now: float) -> None:
        self._run.phase = phase
        self._sampler.new_phase(now)

    def _apply_pending(self, eval_phase: bool, stops: bool = True) -> bool:
        """Apply stop / learning-rate requests: always on the training thread, between steps.  ``stops=False``
        (an epoch begins: the loop runs its first step anyway) leaves a stop to that step's end, where it is.
        True: a stop takes effect now (its place is kept for the final status)."""
        requests, run = self._requests, self._run
        if not requests.pending:
            return False
        requests.pending = False
        shared, at = run.shared, run.at
        lr, requests.lr = requests.lr, None
        if lr is not None and run.optimizer is not None:
            step = self.state.global_step if eval_phase else at.step
            self.state.set_lr(apply_learning_rate(run.optimizer, lr, run.scheduler), changed_at=step)
        if shared is not None and requests.stop_before_start is not None:
            shared.request_stop(requests.stop_before_start)
            requests.stop_before_start = None
        if shared is None or shared.stop_reason is None or shared.stop_where is not None:
            return False
        if not stops:
            requests.pending = True
            return False
        if run.kind == "eval":
            shared.stop_where = (None, at.eval_step, None)
        elif eval_phase:
            shared.stop_where = (self.state.epoch, self.state.step_in_epoch, at.eval_step)
        else:
            per_epoch = max(1, at.steps_per_epoch or 1)
            shared.stop_where = (at.epoch, (at.step - 1) % per_epoch + 1 if at.step else 0, None)
        self._sampler.countdown = 0  # refresh at once so the status shows the stop
        return True

    def _record(self, now: float, *, before_eval: bool = False) -> None:
        """Bring the state up to date, converting the pending losses (one synchronisation)."""
        run = self._run
        if run.kind is not None:
            at = run.at
            self._sampler.record(self.state, now, phase=run.phase, step=at.step, eval_step=at.eval_step,
                                 samples_per_step=at.samples, optimizer=run.optimizer, before_eval=before_eval,
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

    # ------------------------------------------------------------------ the display

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
        """In a terminal or a log, whether a progress board listed before this one prints the run's lines (this
        one would print each of them again)."""
        shown = self._progress_boards()
        return bool(shown) and shown[0] is not self

    def _shows_status(self) -> bool:
        """One status line per run: a plot-only board leaves it to a progress board beside it (the run's callbacks
        are known before any joins it, so the first view is already right)."""
        return "progress" in self._PARTS or not self._progress_boards()

    def _progress_boards(self) -> list[Board]:
        """The run's boards that show progress, in the order the run lists them."""
        run = self._run
        boards = list(run.callbacks) + (run.shared.members if run.shared is not None else [])
        return [board for board in boards
                if isinstance(board, Board) and "progress" in board._PARTS and board.settings.display != "off"]

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
        now = self.settings.clock()
        view = self._live_view(now)
        self._guard(lambda: self.renderer.open(view, self.state, self._shows_status()))
        if self.mode != "off":  # the view just shown is the first refresh (off: the state is kept at every check)
            self._scheduler.sent(now)

    def _prepare_background(self, siblings: tuple[Board, ...] = ()) -> None:
        """Open the view on the calling (main) thread before a background run starts, so the display belongs to
        the cell that started it; ``siblings``: the run's boards (one status line for them all)."""
        if self._depth:
            raise RuntimeError(self._in_use())
        self._init_run()
        self._run.callbacks, self._run.background = tuple(siblings), True
        self._open(rank=0)
        self._run.prepared = True

    # ------------------------------------------------------------------ the end

    def _end(self, exc: BaseException | None) -> None:
        """End the run (:meth:`_finalize`, with its subclasses' parts), timed as a whole: the display's time
        (``display_seconds``) and, apart, the end's (:attr:`final_seconds`)."""
        started = time.perf_counter()
        try:
            self._finalize(exc)
        finally:
            self.final_seconds = time.perf_counter() - started
            self.state.note_display_cost(self.final_seconds)

    def _finalize(self, exc: BaseException | None) -> None:
        """Final status, final plot, static snapshot; close everything. Never raises (:meth:`_end` calls it)."""
        run, sampler = self._run, self._sampler
        # The run ended at run_ends/eval_ends; other callbacks' exits do not count.
        now = run.t_end if run.t_end is not None and exc is None else self.settings.clock()
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
                png, css_width = self._final_png() if self.state.kind == "train" else (None, None)
                self.last_png = png or self.last_png
                self._on_final_png(png)  # e.g. saves the PNG, which text renderers then name
                view = self.state.view(now, live_rows=None, max_rows=self.settings.max_rows)
                self._guard(lambda: self.renderer.finish(view, png, self._shows_status(), css_width))
        finally:
            if run.shared is not None:
                run.shared.uninstall_signal(self)
            if run.fed is not None:  # an ended fed run stays: log() after finish() says so, stop_requested answers
                run.fed.ended = True
                self._run = _Run(fed=run.fed, shared=run.shared)
            else:
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
        if exc is None and self._run.loop_stopped:
            return "stopped", Msg("stopped_by_callback", where=where), None
        if exc is None:
            return "finished", Msg("finished"), None
        if isinstance(exc, KeyboardInterrupt):
            return "interrupted", Msg("interrupted", where=where), None
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        error = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
        return "error", Msg("failed", error=type(exc).__name__, where=where), error[:500]

    def view(self) -> View:
        """The current state of the (last) run, e.g. for a custom report; ``status_text`` is in the board's
        language (``lang=``)."""
        view = self.state.view(self.settings.clock(), live_rows=None, max_rows=self.settings.max_rows)
        return dataclasses.replace(view, status_text=self.settings.words.say(view.status_text))

    def __getstate__(self) -> dict[str, Any]:
        """Picklable without the live view, the figure, locks or the run's objects."""
        dropped = ("renderer", "_run", "_sampler", "_scheduler", "_requests", "state")
        return {key: value for key, value in self.__dict__.items() if key not in dropped}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.state = TrainingState()
        self._depth = 0
        self._scheduler = RefreshScheduler(type(self).__name__, self.settings.clock, abort=lambda: self.renderer.abort())
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
