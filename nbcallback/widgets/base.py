"""``LiveCallback``: what ProgressBar, LiveLossPlot and Dashboard have in common.

The callback is the adapter between ``Model``'s hooks and the state model:

* **Hot path** (``on_train_step_end``): append the step's loss *tensor* to a
  list, decrement a counter, test two attributes.  No clock read, no
  ``.item()``, no host-device synchronisation: the losses are converted at the
  next refresh, so a GPU is synced at most a few times per second.
* **Checks**: when the counter reaches zero the clock is read, the stride to
  the next check is adapted so checks happen about 20 times per second
  (:class:`~nbcallback.widgets.clock.CheckScheduler`), and a refresh is sent
  when 0.25 s have passed: at most 4 per second, and one every quarter to half
  a second while steps advance, whatever the machine's load.
* **Controls**: stop and learning-rate requests (SIGINT, Stop button, lr box,
  ``request_stop()``) only set attributes; the next step hook applies them on
  the training thread (see :mod:`nbcallback.widgets.controls`).
* **End of run**: whatever happens (finished, stopped, exception, second
  Ctrl-C), ``__exit__`` draws the final PNG, replaces the live view by the
  static snapshot and closes the widget.  A display failure never stops
  training: it is reported once as a warning and the display is switched off.

Subclasses only choose which parts they show (``_PARTS``).
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import math
import os
import time
import warnings
from pathlib import Path
from typing import Any, Callable, TextIO

import torch

from nbcallback.train.callback import Callback, RunContext
from nbcallback.widgets.clock import CheckScheduler, Clock, Throttle, monotonic
from nbcallback.widgets.controls import SHARED_KEY, RunShared, apply_learning_rate, valid_lr
from nbcallback.widgets.env import (
    DISPLAY_MODES,
    describe_frontend_support,
    host,
    kernel_supports_subshells,
    resolve_display,
)
from nbcallback.widgets.panels import Panel, default_panels
from nbcallback.widgets.render_text import LogRenderer, NullRenderer, TTYRenderer
from nbcallback.widgets.state import TrainingState, View
from nbcallback.widgets.words import Msg, Words

__all__ = ["LiveCallback"]

_DISCARD = collections.deque(maxlen=0).append  # a C-level no-op "append"


def _dataset_steps(dataset: Any) -> int | None:
    """Steps per pass of ``dataset`` (as Model counts them), or None."""
    if dataset is None:
        return None
    from nbcallback.train.model import dataset_size

    try:
        return int(dataset_size(dataset))
    except (TypeError, ValueError, AttributeError):
        return None


def _batch_size(element: Any) -> int | None:
    """The leading dimension of a batch's first tensor."""
    if isinstance(element, (tuple, list)) and element:
        element = element[0]
    shape = getattr(element, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    return None


def _counted(hook: Callable[..., None]) -> Callable[..., None]:
    """Count a hook's whole time on the training thread as display overhead.

    Applied to the hooks that do work (run start and end, epoch and
    evaluation events, the slow path of the step hooks), never to each other,
    so nothing is counted twice; the step hooks' hot path (an append and a
    countdown, well under a microsecond) is the only part left out.
    """

    @functools.wraps(hook)
    def timed(self: "LiveCallback", *args: Any) -> None:
        started = time.perf_counter()
        try:
            hook(self, *args)
        finally:
            self.state.note_display_cost(time.perf_counter() - started)

    return timed


def _losses_to_floats(items: list[Any]) -> list[float]:
    """The recorded ``net_outputs`` as floats, with at most one device synchronisation.

    Anything that is not a one-element tensor (a tuple whose first element is
    the loss, a multi-element tensor) goes through the same rule as
    MindSpore's loss printing (first element, mean).  CPU tensors are read one
    by one (``item()`` is a plain read there, ~4x cheaper than stacking);
    device tensors are stacked and copied in one go.
    """
    if type(items[0]) is torch.Tensor and items[0].is_cpu:
        try:  # the usual case: one-element CPU tensors, read directly (~0.3 us each)
            return [float(item.item()) for item in items]
        except (AttributeError, RuntimeError, TypeError, ValueError):
            pass  # a tuple, a multi-element tensor, a number: the general rule below
    scalars: list[Any] = []
    on_device = False
    for item in items:
        if isinstance(item, (tuple, list)) and item:
            item = item[0]
        if isinstance(item, torch.Tensor):
            if item.numel() != 1:
                item = item.detach().float().mean()
            on_device = on_device or not item.is_cpu
            scalars.append(item)
        else:
            try:
                scalars.append(float(item))
            except (TypeError, ValueError):
                scalars.append(math.nan)
    if not on_device:
        return [float(x.item()) if isinstance(x, torch.Tensor) else x for x in scalars]
    with torch.no_grad():
        tensors = [x.reshape(()).float() if isinstance(x, torch.Tensor) else torch.tensor(x) for x in scalars]
        if len({t.device for t in tensors}) > 1:
            tensors = [t.cpu() for t in tensors]
        return torch.stack(tensors).cpu().tolist()


#: Arguments of the PNG-in-the-kernel design (before 0.8), accepted with a warning.
_REMOVED = frozenset({"plot_interval", "plot_budget", "plot_process", "width", "height", "dpi"})


def _warn_removed(owner: str, removed: dict[str, Any], w: Words) -> None:
    unknown = sorted(set(removed) - _REMOVED)
    if unknown:
        raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    if removed:
        key = "removed_arg" if len(removed) == 1 else "removed_args"
        warnings.warn(w(key, owner=owner, names=", ".join(sorted(removed))), FutureWarning, stacklevel=4)


class LiveCallback(Callback):
    """Base class of the live display callbacks; use a subclass.

    Args:
        display: ``'auto'`` (default: widgets in a notebook kernel, text in a
            terminal, plain log lines when stdout is not a TTY), ``'widget'``,
            ``'static'`` (HTML via ``display_id`` at <= 1 Hz, no widgets),
            ``'final'`` (nothing live, only the final snapshot: docs builds),
            ``'text'`` (terminal line or log lines) or ``'off'``.  With
            ``'auto'``, the ``NBCALLBACK_DISPLAY`` environment variable decides
            when set.  Non-zero ranks (``cb_params.rank_id``) never display.
        file: where text output goes (``sys.stdout`` at write time when None).
        graceful_interrupt: turn the kernel's interrupt button / Ctrl-C into a
            stop at the next step boundary (the run ends "stopped by user", the
            model and optimizer stay usable and ``Model.train`` returns
            normally).  A second interrupt raises ``KeyboardInterrupt`` as usual.
        refresh_interval: seconds between refreshes; None uses the
            renderer's default (0.25 s for widgets and terminals, 1 s for
            static HTML).
        log_interval: seconds between progress lines in log mode (non-TTY).
        live_rows: table rows shown while live (the last ones).
        max_rows: table rows kept in the final snapshot (head and tail, with
            the number left out), so the saved notebook stays small for any
            number of epochs.
        smoothing: EMA factor of the smoothed loss (0.98, bias-corrected; at
            most: a short run averages over a 25th of its planned steps).
        lang: the language of every word the display writes: ``'en'`` or
            ``'zh_CN'`` (Simplified Chinese); None reads ``NBCALLBACK_LANG``,
            then English.
        max_points: the most points per plot line: the loss is kept as at most
            this many buckets of steps (min, max and smoothed value each).
        clock: a function returning monotonic seconds (tests pass a fake).
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
        clock: Clock | None = None,
        **removed: Any,
    ) -> None:
        super().__init__()
        self.words = Words(lang)
        _warn_removed(type(self).__name__, removed, self.words)
        if display not in DISPLAY_MODES:
            raise ValueError(f"display must be one of {DISPLAY_MODES}, got {display!r}")
        if refresh_interval is not None and refresh_interval <= 0:
            raise ValueError(f"refresh_interval must be > 0, got {refresh_interval!r}")
        if live_rows < 0 or max_rows < 1:
            raise ValueError(f"live_rows must be >= 0 and max_rows >= 1, got {live_rows!r}, {max_rows!r}")
        self.display = display
        self.file = file
        self.graceful_interrupt = bool(graceful_interrupt)
        self.refresh_interval = refresh_interval
        self.log_interval = float(log_interval)
        self.live_rows = int(live_rows)
        self.max_rows = int(max_rows)
        self.state = TrainingState(smoothing=smoothing, max_points=max_points)
        self._clock: Clock = clock or monotonic
        self._depth = 0
        self._prepared = False
        self._background = False
        self._init_run()
        self._prepare_process()

    def _prepare_process(self) -> None:
        """In a notebook kernel, import what the display needs when the callback is
        created (anywidget; matplotlib and its fonts for the final PNG: 0.5-1 s
        once per kernel, as ``tqdm.notebook`` pays at import), so the end of a
        run does not pay it.  Nothing happens anywhere else, and nothing here
        can fail the callback.
        """
        try:
            rank = int(os.environ.get("RANK", "0") or 0)
            if resolve_display(self.display, rank=rank, stream=self.file) != "widget":
                return
            import nbcallback.widgets.render_widget  # noqa: F401  (anywidget, ipywidgets)

            if "plot" in self._PARTS:
                from nbcallback.widgets.plot import warm_up

                warm_up()
        except (ImportError, OSError, ValueError, RuntimeError):  # reported when the run opens its view
            return

    # ------------------------------------------------------------------ run bookkeeping

    def _init_run(self) -> None:
        self.mode = "off"
        self.renderer: Any = NullRenderer()
        self._shared: RunShared | None = None
        self._siblings: tuple[LiveCallback, ...] = ()
        self._cb_params: Any = {}
        self._train_ctx: RunContext | None = None
        self._eval_ctx: RunContext | None = None
        self._run_kind: str | None = None
        self._phase = "train"
        self._losses: list[Any] = []
        self._append = _DISCARD
        self._countdown = 1
        self._stride = 1
        self._scheduler = CheckScheduler()
        self._t_check = 0.0
        self._text = Throttle(1.0)
        self._pending = False
        self._pending_lr: float | None = None
        self._prestop: str | None = None
        self._final: tuple[str, str] | None = None
        self._t_end: float | None = None
        self._last_eval: tuple[float | None, bool] = (None, False)
        self._row_epoch: int | None = None  # the epoch whose validation row on_eval_end added
        self._display_failed = False
        self.last_png: bytes | None = None
        self._png_css_width: int | None = None
        #: Seconds the end of the last run took on the training thread (final PNG and snapshot).
        self.final_seconds = 0.0

    def _poke(self) -> None:
        """Make the next step hook look at the pending requests (any thread)."""
        self._pending = True

    # ------------------------------------------------------------------ public controls

    def request_stop(self, reason: str = "code") -> None:
        """Stop the run after the current step, as ``run_context.request_stop()`` would.

        Safe to call from any thread (a comm handler, a timer, the main thread
        while a background run trains).

        Args:
            reason: shown in the final status: ``'code'`` (default),
                ``'button'``, ``'interrupt'`` or any short text.
        """
        shared = self._shared
        if shared is not None and self._depth > 0:
            shared.request_stop(reason)
        else:
            self._prestop = reason
            self._poke()

    def set_learning_rate(self, lr: float) -> None:
        """Set every parameter group's learning rate at the next step boundary (any thread).

        Group 0 gets ``lr``; the other groups keep their ratio to group 0.

        Raises:
            ValueError: ``lr`` is not a positive finite number.
        """
        value = valid_lr(lr)
        if value is None:
            raise ValueError(f"the learning rate must be a positive number, got {lr!r}")
        self._pending_lr = value
        self._poke()

    # ------------------------------------------------------------------ context management

    def __enter__(self) -> "LiveCallback":
        self._depth += 1
        if self._depth == 1 and not self._prepared:
            self._init_run()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self._depth = max(0, self._depth - 1)
        if self._depth == 0 and self._run_kind is not None:
            self._finalize(exc)
        elif self._depth == 0 and self._prepared:
            # A background run that failed before its first hook: close the prepared view.
            self._finalize(exc)
        return None

    # ------------------------------------------------------------------ setting up a run

    def _make_renderer(self, mode: str, plots: bool = True) -> Any:
        parts = self._PARTS if plots else self._PARTS - {"plot"}
        if mode == "widget":
            from nbcallback.widgets.render_widget import WidgetRenderer

            support = describe_frontend_support(mode, self._background, kernel_supports_subshells())
            with_controls = "controls" in parts and bool(support["controls"])
            if "controls" in parts:
                key = str(support["hint"]) if with_controls or self.graceful_interrupt else ""
            elif "progress" in parts and self.graceful_interrupt and not self._background:
                key = "hint_marimo" if host() == "marimo" else "hint_interrupt"  # no Stop button to mention
            else:
                key = ""
            hint = self.words(key) if key else ""
            return WidgetRenderer(
                parts if with_controls else parts - {"controls"},
                panels_for=self._panels_for,
                on_stop=(lambda: self.request_stop("button")) if with_controls else None,
                on_lr=self._lr_from_widget if with_controls else None,
                hint=hint,
                w=self.words,
                foreground=not self._background,
            )
        if mode in ("static", "final"):
            from nbcallback.widgets.render_widget import StaticRenderer

            return StaticRenderer(parts, live=mode == "static", w=self.words)
        if mode == "tty":
            return TTYRenderer(parts, self.file, self.words)
        if mode == "log":
            return LogRenderer(parts, self.file, self.log_interval, self.words)
        return NullRenderer()

    def _panels_for(self, facts: dict[str, Any]) -> list[Panel]:
        """The plot panels for the run's facts (see :func:`~nbcallback.widgets.panels.default_panels`)."""
        lr_panel = getattr(self, "lr_panel", "auto")
        return default_panels(
            facts.get("metrics", ()),
            groups=getattr(self, "groups", None),
            lr=bool(facts.get("lr_changed")) if lr_panel == "auto" else bool(lr_panel),
            loss_positive=bool(facts.get("loss_positive", True)),
            extra=getattr(self, "panels", None) or (),
            w=self.words,
        )

    def _shows_status(self) -> bool:
        """One status line per run: a plot-only callback leaves it to a progress callback beside it.

        The run's callbacks are known before they join the run (``cb_params.list_callback``, or the
        background run's list), so the first view is already right, whichever callback opens first.
        """
        if "progress" in self._PARTS:
            return True
        others = list(self._siblings)
        if self._shared is not None:
            others += self._shared.members
        if hasattr(self._cb_params, "get"):
            others += list(self._cb_params.get("list_callback") or ())
        return not any(
            other is not self and isinstance(other, LiveCallback) and "progress" in other._PARTS
            and other.display != "off"
            for other in others
        )

    def _lr_from_widget(self, lr: float) -> None:
        self._pending_lr = lr
        self._poke()

    def _open(self, rank: int, plots: bool = True) -> None:
        """Resolve the display mode and open the renderer (no-op when already open).

        ``plots``: whether the run draws a loss curve (``Model.eval`` runs do not).
        """
        if self._prepared:
            return
        self.mode = resolve_display(self.display, rank=rank, stream=self.file)
        self.renderer = self._make_renderer(self.mode, plots)
        self._text = Throttle(self.refresh_interval or self.renderer.text_interval)
        self._append = self._losses.append
        view = self.state.view(self._clock(), live_rows=self.live_rows)
        self._guard(lambda: self.renderer.open(view, self.state, self._shows_status()))

    def _prepare_background(self, siblings: tuple["LiveCallback", ...] = ()) -> None:
        """Open the view on the calling (main) thread before a background run starts.

        The display call then belongs to the cell that started the run, whatever
        cell runs when the training thread reaches ``on_train_begin``.

        Args:
            siblings: the run's display callbacks (one status line for them all).
        """
        if self._depth:
            raise RuntimeError(f"{type(self).__name__} is already in use by a running training")
        self._init_run()
        self._siblings = tuple(siblings)
        self._background = True
        self._open(rank=0)
        self._prepared = True

    def _join_run(self, cb_params: Any) -> None:
        shared = cb_params.get(SHARED_KEY)
        if not isinstance(shared, RunShared):
            shared = RunShared()
            cb_params[SHARED_KEY] = shared
        shared.join(self)
        self._shared = shared
        if self.graceful_interrupt and not self._background:
            shared.install_signal(self)
        if self._prestop is not None:
            shared.request_stop(self._prestop)
            self._prestop = None

    def _start(self, kind: str, cb_params: Any, now: float) -> None:
        self._cb_params = cb_params
        self._run_kind = kind
        self._join_run(cb_params)
        rank = int(cb_params.get("rank_id", 0) or 0)
        optimizer = cb_params.get("optimizer")
        lr = None
        if optimizer is not None and getattr(optimizer, "param_groups", None):
            lr = optimizer.param_groups[0].get("lr")
        if kind == "train":
            valid = cb_params.get("valid_dataset")
            self.state.start(
                now,
                kind="train",
                epochs=int(cb_params.get("epoch_num", 1)),
                steps_per_epoch=int(cb_params.get("batch_num", 0)),
                first_global_step=int(cb_params.get("cur_step_num", 0) or 0),
                has_validation=valid is not None,
                eval_steps=_dataset_steps(valid),
                lr=float(lr) if lr is not None else None,
            )
        else:
            self.state.start(now, kind="eval", eval_steps=int(cb_params.get("batch_num", 0)) or None)
        # Open after the state knows the run, so the controls start with the optimizer's lr.
        self._open(rank, plots=kind == "train")
        self._phase = kind
        self._countdown = self._stride = self._scheduler.reset()
        self._t_check = now
        self._guard(lambda: self.renderer.event("start", self.state.view(now, live_rows=self.live_rows)))

    # ------------------------------------------------------------------ hooks: training

    @_counted
    def on_train_begin(self, run_context: RunContext) -> None:
        """Start the run: resolve the display, open the view, install the SIGINT handler."""
        self._train_ctx = run_context
        self._start("train", run_context.original_args(), self._clock())

    @_counted
    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        """Mark the epoch start (rates exclude the first step of an epoch)."""
        cb_params = self._cb_params
        self.state.begin_epoch(int(cb_params.get("cur_epoch_num", 1)), self._clock())
        if self._pending:
            self._apply_pending(run_context, eval_phase=False)

    def on_train_step_end(self, run_context: RunContext) -> None:
        """The hot path: O(1), no clock read, no device synchronisation."""
        self._append(self._cb_params["net_outputs"])
        self._countdown -= 1
        if self._countdown <= 0 or self._pending:
            self._slow_path(run_context, False)

    @_counted
    def on_train_epoch_end(self, run_context: RunContext) -> None:
        """Record the epoch and refresh (the validation's row, when a trainer sets
        ``eval_results`` only after ``on_eval_end``)."""
        cb_params = self._cb_params
        now = self._clock()
        if self._pending:
            self._apply_pending(run_context, eval_phase=False)
        self._record(now)
        epoch = int(cb_params.get("cur_epoch_num", 1))
        results = cb_params.get("eval_results")
        if results is not None and self._row_epoch != epoch:  # not added at the validation's end
            seconds, partial = self._last_eval
            self.state.add_eval_row(
                now, results, epoch=epoch, step=int(cb_params.get("cur_step_num", 0)), seconds=seconds, partial=partial
            )
        self._row_epoch = None
        self.state.end_epoch(epoch, now, validated=results is not None)
        self._refresh(now, force=True)
        self._guard(lambda: self.renderer.event("epoch_end", self.state.view(now, live_rows=self.live_rows)))

    @_counted
    def on_train_end(self, run_context: RunContext) -> None:
        """Decide how the run ended (the snapshot itself is drawn in ``__exit__``)."""
        now = self._clock()
        self._t_end = now
        self._record(now)
        shared = self._shared
        if shared is not None and shared.stop_where is not None:
            self._final = ("stopped", shared.describe_stop())
        elif run_context.get_stop_requested():
            view = self.state.view(now, live_rows=0)
            where = Msg("where_epoch", epoch=view.epoch, step=view.step_in_epoch)
            self._final = ("stopped", Msg("stopped_by_callback", where=where))
        else:
            self._final = ("finished", Msg("finished"))

    # ------------------------------------------------------------------ hooks: evaluation

    @_counted
    def on_eval_begin(self, run_context: RunContext) -> None:
        """fit's validation (a phase of the run) or a stand-alone ``Model.eval`` run."""
        now = self._clock()
        cb_params = run_context.original_args()
        self._eval_ctx = run_context
        if self._run_kind is None:
            self._start("eval", cb_params, now)
            self.state.begin_eval(now, int(cb_params.get("batch_num", 0)) or None)
            return
        self._record(now, before_eval=True)
        self._phase = "eval"
        self.state.begin_eval(now, int(cb_params.get("batch_num", 0)) or None)
        self._countdown = self._stride = self._scheduler.reset()
        self._t_check = now
        if self._pending:
            self._apply_pending(run_context, eval_phase=True)
        self._refresh(now, force=True)

    def on_eval_step_end(self, run_context: RunContext) -> None:
        """Hot path of evaluation steps: a counter only."""
        self._countdown -= 1
        if self._countdown <= 0 or self._pending:
            self._slow_path(run_context, True)

    @_counted
    def on_eval_end(self, run_context: RunContext) -> None:
        """End of an evaluation pass: time it and add its table row (fit's validation from
        ``cb_params.eval_results``; after the last one the final frame is started)."""
        now = self._clock()
        cb_params = self._cb_params
        if self._pending:
            self._apply_pending(run_context, eval_phase=True)
        self.state.record_eval_steps(now, int(cb_params.get("cur_step_num", 0)))
        partial = run_context.get_stop_requested()
        seconds = self.state.end_eval(now, complete=not partial)
        self._last_eval = (seconds, partial)
        self._eval_ctx = None
        if self._run_kind == "eval":
            self._t_end = now
            metrics = cb_params.get("metrics") or {}
            self.state.add_eval_row(now, metrics, epoch=None, step=None, seconds=seconds, partial=partial)
            shared = self._shared
            if shared is not None and shared.stop_where is not None:
                self._final = ("stopped", shared.describe_stop())
            else:
                self._final = ("finished", Msg("finished"))
        else:
            self._phase = "train"
            self._countdown = self._stride = self._scheduler.reset()
            self._t_check = now
            results = cb_params.get("eval_results")
            if results is not None:
                # fit's validation hands its results to on_eval_end (as MindSpore does): the
                # table row, and after the last validation the final frame, need not wait for
                # the other callbacks' epoch ends (a checkpoint being saved, printed lines).
                epoch = int(cb_params.get("cur_epoch_num", 1))
                self.state.add_eval_row(
                    now, results, epoch=epoch, step=self.state.global_step, seconds=seconds, partial=partial
                )
                self._row_epoch = epoch

    # ------------------------------------------------------------------ the slow path

    @_counted
    def _slow_path(self, run_context: RunContext, eval_phase: bool) -> None:
        if self._pending:
            self._apply_pending(run_context, eval_phase)
            if self._countdown > 0:
                return
        now = self._clock()
        self._stride = self._scheduler.next_stride(self._stride, now - self._t_check)
        self._countdown = self._stride
        self._t_check = now
        if self._text.due(now):
            self._refresh(now)

    def _apply_pending(self, run_context: RunContext, eval_phase: bool) -> None:
        """Apply stop / learning-rate requests: always on the training thread, between steps."""
        self._pending = False
        cb_params = self._cb_params
        lr, self._pending_lr = self._pending_lr, None
        if lr is not None:
            optimizer = cb_params.get("optimizer")
            if optimizer is not None:
                applied = apply_learning_rate(optimizer, lr)
                step = self.state.global_step if eval_phase else int(cb_params.get("cur_step_num", 0))
                self.state.set_lr(applied, changed_at=step)
        shared = self._shared
        if shared is not None and self._prestop is not None:
            shared.request_stop(self._prestop)
            self._prestop = None
        if shared is None or shared.stop_reason is None or shared.stop_where is not None:
            return
        batch_num = max(1, int(cb_params.get("batch_num", 1) or 1))
        if self._run_kind == "eval":
            shared.stop_where = (None, int(cb_params.get("cur_step_num", 0)), None)
        elif eval_phase:
            state = self.state
            shared.stop_where = (state.epoch, state.step_in_epoch, int(cb_params.get("cur_step_num", 0)))
        else:
            step = int(cb_params.get("cur_step_num", 0))
            shared.stop_where = (cb_params.get("cur_epoch_num"), (step - 1) % batch_num + 1 if step else 0, None)
        run_context.request_stop()
        if eval_phase and self._train_ctx is not None:
            self._train_ctx.request_stop()
        self._countdown = 0  # refresh at once so the status shows the stop

    # ------------------------------------------------------------------ refreshing

    def _drain(self) -> tuple[int, list[float]]:
        """The number of training steps since the last drain and their losses
        (converted with one synchronisation; not converted when nothing is shown)."""
        items = self._losses
        if not items:
            return 0, []
        self._losses = []
        self._append = self._losses.append
        if self.mode == "off" or self._display_failed:
            return len(items), []
        return len(items), _losses_to_floats(items)

    def _record(self, now: float, *, before_eval: bool = False) -> None:
        """Bring the state model up to date (converts the pending losses: one sync).

        Args:
            now: the current time.
            before_eval: called from fit's ``on_eval_begin``, where ``Model`` has
                already set ``cur_step_num`` to 0 for the validation run: the
                training step is then the last one recorded plus the steps since.
        """
        cb_params = self._cb_params
        if self._run_kind is None:
            return
        if self._phase == "eval":
            self.state.record_eval_steps(now, int(cb_params.get("cur_step_num", 0)))
            return
        count, losses = self._drain()
        if before_eval:
            step = self.state.global_step + count
        else:
            step = int(cb_params.get("cur_step_num", 0))
        self.state.record_steps(now, step, losses)
        if self.state.samples_per_step is None:
            self.state.set_samples_per_step(_batch_size(cb_params.get("train_dataset_element")))
        optimizer = cb_params.get("optimizer")
        if optimizer is not None and getattr(optimizer, "param_groups", None):
            self.state.set_lr(optimizer.param_groups[0].get("lr"))

    def _refresh(self, now: float, force: bool = False) -> None:
        """Record and send what changed.

        ``force`` (epoch end, evaluation start) still respects the interval, so
        events never push the front end past 4 messages per second; the next
        check after the interval sends them.
        """
        if self._run_kind is None:
            return
        self._record(now)
        if self.mode == "off" or self._display_failed or not self._text.due(now):
            return
        view = self.state.view(now, live_rows=self.live_rows)
        self._guard(lambda: self.renderer.update(view, self.state, self._shows_status()))
        self._text.done(now)

    def _guard(self, action: Any) -> Any:
        """Run a display action; on failure warn once and switch the display off."""
        if self._display_failed:
            return None
        try:
            return action()
        except Exception as exc:  # a display problem must never stop training
            self._display_failed = True
            warnings.warn(
                f"nbcallback.widgets.{type(self).__name__}: the display failed and is switched off for this "
                f"run ({type(exc).__name__}: {exc}); training continues.",
                RuntimeWarning,
                stacklevel=3,
            )
            try:
                self.renderer.abort()
            except Exception:  # already failing; the warning above says why
                pass
            return None

    # ------------------------------------------------------------------ the end

    @_counted
    def _finalize(self, exc: BaseException | None) -> None:
        """Final status, final plot, static snapshot; close everything. Never raises."""
        # The run ended at on_train_end/on_eval_end; other callbacks' exits do not count.
        now = self._t_end if self._t_end is not None and exc is None else self._clock()
        try:
            try:
                if exc is not None and any(
                    isinstance(t, torch.Tensor) and t.device.type != "cpu" for t in self._losses
                ):
                    # After a device error, reading device tensors could fail (or hang) again.
                    self._losses = [math.nan] * len(self._losses)
                self._record(now)
            except Exception:  # the state is only for display; keep ending the run
                pass
            status, text, error = self._ending(exc, now)
            self.state.finish(now, status, text, error)
            if self.mode != "off" and not self._display_failed:
                started = time.perf_counter()
                png = self._final_png() if self.state.kind == "train" else None
                if png is not None:
                    self.last_png = png
                self._on_final_png(png)  # e.g. saves the PNG, which text renderers then name
                view = self.state.view(now, live_rows=None, max_rows=self.max_rows)
                css_width = self._png_css_width
                self._guard(lambda: self.renderer.finish(view, png, self._shows_status(), css_width))
                self.final_seconds = time.perf_counter() - started
        finally:
            if self._shared is not None:
                self._shared.uninstall_signal(self)
            self._prepared = False
            self._background = False
            self._run_kind = None
            self._cb_params = {}
            self._train_ctx = self._eval_ctx = None
            self._siblings = ()
            self._losses = []
            self._append = _DISCARD

    def _wants_png(self) -> bool:
        """Whether this run ends with a PNG: a notebook snapshot (subclasses add ``save_path``)."""
        return self.mode in ("widget", "static", "final")

    def _final_png(self) -> bytes | None:
        """The final plot, drawn from the same panels the browser drew; None without a plot
        (no plot part, nothing recorded) or when drawing fails (a warning says why)."""
        self._png_css_width = None
        if "plot" not in self._PARTS or not self._wants_png() or not self.state.has_plot_points():
            return None
        try:
            from nbcallback.widgets.plot import png_size, render_png

            data = self.state.plot_data()
            panels = self._panels_for({"metrics": data.metrics, "loss_positive": data.loss_positive,
                                       "lr_changed": data.lr_changed})
            png = render_png(panels, data, self.words)
            drawn = [p for p in panels if any(line.key in data.series for line in p.lines)]
            self._png_css_width = png_size(len(drawn))[0]
            return png
        except Exception as exc:  # matplotlib missing or broken: the snapshot still goes out
            warnings.warn(
                f"nbcallback.widgets.{type(self).__name__}: the final plot could not be drawn "
                f"({type(exc).__name__}: {exc}); the rest of the snapshot is shown.",
                RuntimeWarning,
                stacklevel=3,
            )
            return None

    def _on_final_png(self, png: bytes | None) -> None:
        """Hook for subclasses (LiveLossPlot saves the PNG to ``save_path``)."""

    def _ending(self, exc: BaseException | None, now: float) -> tuple[str, str, str | None]:
        view = self.state.view(now, live_rows=0)
        if view.kind == "eval":
            where = Msg("where_step", step=view.eval_step)
        elif view.epoch is None:
            where = Msg("where_nowhere")
        else:
            where = Msg("where_epoch", epoch=view.epoch, step=view.step_in_epoch)
        if exc is None:
            if self._final is not None:
                return self._final[0], self._final[1], None
            return "finished", Msg("finished"), None
        if isinstance(exc, KeyboardInterrupt):
            return "interrupted", Msg("interrupted", where=where), None
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        error = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
        return "error", Msg("failed", error=type(exc).__name__, where=where), error[:500]

    # ------------------------------------------------------------------ introspection

    def view(self) -> View:
        """The current state of the (last) run, e.g. for a custom report; its ``status_text`` is in
        the callback's language (``lang=``)."""
        view = self.state.view(self._clock(), live_rows=None, max_rows=self.max_rows)
        return dataclasses.replace(view, status_text=self.words.say(view.status_text))

    def __getstate__(self) -> dict[str, Any]:
        """Picklable without the live view, the figure, locks or the run's objects."""
        state = dict(self.__dict__)
        for key in ("renderer", "_shared", "_siblings", "_cb_params", "_train_ctx", "_eval_ctx", "_losses", "_append", "state"):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.state = TrainingState()
        self._depth = 0
        self._prepared = False
        self._init_run()


def save_png(path: str | Path, png: bytes) -> Path:
    """Write ``png`` to ``path`` (parent folders created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(png)
    return target

