"""``LiveCallback``: what ProgressBar, LiveLossPlot and Dashboard have in common.

The step hooks only append the step's loss tensor and count down.  At zero the clock is read and the stride to the
next check adapted (about 20 checks a second); once per refresh interval the losses are converted (one device
synchronisation) and the view refreshed.  Where a phase begins or ends (an epoch, a validation) the view goes out
when due even if the next step stalls: a timer sends it if no step has.  Stop and lr requests only set attributes,
applied by the next step hook.
``__exit__`` always ends with a static snapshot and the final PNG; a display failure warns once, never stops training.
"""
from __future__ import annotations

import collections
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
from nbcallback.widgets.controls import SHARED_KEY, RunShared, apply_learning_rate, checked_lr
from nbcallback.widgets.env import DISPLAY_MODES, describe_frontend_support, host, kernel_supports_subshells
from nbcallback.widgets.env import resolve_display
from nbcallback.widgets.panels import Panel, default_panels
from nbcallback.widgets.render_text import LogRenderer, NullRenderer, TTYRenderer
from nbcallback.widgets.state import TrainingState, View
from nbcallback.widgets.words import Msg, Words

__all__ = ["LiveCallback"]

_DISCARD = collections.deque(maxlen=0).append  # a C-level no-op "append"
_CHECK_PERIOD = 0.05  # seconds between clock checks: well under one refresh interval
_MAX_STRIDE = 4096  # a slowdown after very fast steps is noticed within this many steps
#: After a phase change, how long past the due refresh the timer waits (three clock checks) before it sends,
#: and again while the training thread has checked the clock within it (steps still come and refresh).
_LATE_GRACE = 3 * _CHECK_PERIOD
#: Arguments of the PNG-in-the-kernel design (before 0.8), accepted with a warning.
_REMOVED = frozenset({"plot_interval", "plot_budget", "plot_process", "width", "height", "dpi"})


def _next_stride(stride: int, seconds: float) -> int:
    """Steps to the next clock check when the last ``stride`` steps took ``seconds``: about ``_CHECK_PERIOD``
    apart, growing at most 4x per check so a few fast steps cannot delay the next check long."""
    wanted = round(stride * _CHECK_PERIOD / seconds) if seconds > 0 else 4 * stride
    return max(1, min(wanted, 4 * stride, _MAX_STRIDE))


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


def _losses_to_floats(items: list[Any]) -> list[float]:
    """The recorded ``net_outputs`` as floats, with at most one device synchronisation: a tuple's first element,
    a tensor's mean (as MindSpore prints losses), NaN for what is not a number.  One-element CPU tensors are read
    one by one (cheaper than stacking); the rest is stacked and copied in one go."""
    if type(items[0]) is torch.Tensor and items[0].is_cpu:
        try:
            return [float(item.item()) for item in items]
        except (AttributeError, RuntimeError, TypeError, ValueError):
            pass  # a tuple, a multi-element tensor, a number: the general rule below
    scalars: list[Any] = []
    for item in items:
        if isinstance(item, (tuple, list)) and item:
            item = item[0]
        if isinstance(item, torch.Tensor):
            item = item.detach()
            scalars.append(item.reshape(()) if item.numel() == 1 else item.float().mean())
        else:
            try:
                scalars.append(float(item))
            except (TypeError, ValueError):
                scalars.append(math.nan)
    on_device = [x for x in scalars if isinstance(x, torch.Tensor) and not x.is_cpu]
    if on_device:  # one copy for all of them
        if len({x.device for x in on_device}) > 1:
            on_device = [x.cpu() for x in on_device]
        copied = iter(torch.stack([x.float() for x in on_device]).cpu().tolist())
        scalars = [next(copied) if isinstance(x, torch.Tensor) and not x.is_cpu else x for x in scalars]
    return [float(x) for x in scalars]


def _batch_size(element: Any) -> int | None:
    """The leading dimension of a batch's first tensor (for samples/s)."""
    if isinstance(element, (tuple, list)) and element:
        element = element[0]
    shape = getattr(element, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) > 0 else None


def _get_lr(cb_params: Any) -> float | None:
    optimizer = cb_params.get("optimizer")
    return optimizer.param_groups[0].get("lr") if getattr(optimizer, "param_groups", None) else None


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
        **removed: Any,
    ) -> None:
        super().__init__()
        self.words = Words(lang)
        owner = type(self).__name__
        unknown = sorted(set(removed) - _REMOVED)
        if unknown:
            raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
        if removed:
            key = "removed_arg" if len(removed) == 1 else "removed_args"
            warnings.warn(self.words(key, owner=owner, names=", ".join(sorted(removed))), FutureWarning, stacklevel=3)
        if display not in DISPLAY_MODES:
            raise ValueError(f"display must be one of {DISPLAY_MODES}, got {display!r}")
        if refresh_interval is not None and refresh_interval <= 0:
            raise ValueError(f"refresh_interval must be > 0, got {refresh_interval!r}")
        if log_interval <= 0:  # checked here, not only where a log is written (CI), so every display rejects it
            raise ValueError(f"log_interval must be > 0 (seconds between log lines), got {log_interval!r}")
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
        self._clock = clock or time.monotonic
        self._depth = 0
        self._thread: int | None = None  # the thread whose run entered first (checked while _depth > 0)
        self._prepared = self._background = False
        self._lock = threading.RLock()  # the renderer is called from the training thread and from the timer
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
        self._shared: RunShared | None = None
        self._train_ctx: RunContext | None = None
        self._run_kind: str | None = None  # 'train' or 'eval' while a run is on
        self._siblings: tuple[LiveCallback, ...] = ()
        self._cb_params: Any = {}
        self._phase = "train"
        self._losses: list[Any] = []
        self._append = _DISCARD
        self._countdown = self._stride = 1
        self._refreshes = 0
        self._t_check = 0.0  # the last clock check
        self._t_refresh = -math.inf  # the last refresh
        self._interval = 1.0  # seconds between refreshes (set when the renderer opens)
        self._pending = self._display_failed = False
        self._timer: threading.Timer | None = None  # sends a phase change when no step comes to do it
        self._pending_lr: float | None = None
        self._prestop: str | None = None
        self._callback_stop = False  # a callback called run_context.request_stop()
        self._t_end: float | None = None
        self.last_png: bytes | None = None
        #: Seconds the end of the last run took on the training thread (final PNG and snapshot).
        self.final_seconds = 0.0

    # ------------------------------------------------------------------ public controls

    def request_stop(self, reason: str = "code") -> None:
        """Stop the run after the current step, as ``run_context.request_stop()`` would (any thread).

        Args:
            reason: shown in the final status: ``'code'`` (default), ``'button'``, ``'interrupt'`` (the kernel's),
                ``'ctrl_c'`` or any short text.
        """
        if self._shared is not None and self._depth > 0:
            self._shared.request_stop(reason)
        else:
            self._prestop = reason
            self._poke()

    def set_learning_rate(self, lr: float) -> None:
        """Set every parameter group's learning rate at the next step boundary (any thread).

        Group 0 gets ``lr``; the other groups keep their ratio to group 0.

        Raises:
            ValueError: ``lr`` is not a positive finite number.
        """
        self._pending_lr = checked_lr(lr)
        self._poke()

    def _poke(self) -> None:
        """Make the next step hook look at the pending requests (any thread)."""
        self._pending = True

    def __enter__(self) -> LiveCallback:
        thread = threading.get_ident()
        if self._depth and thread != self._thread:  # (the same thread: fit's validation, a run inside a callback)
            raise RuntimeError(self._in_use())
        self._depth += 1
        if self._depth == 1:
            self._thread = thread
            if not self._prepared:
                self._init_run()
        return self

    def _in_use(self) -> str:
        name = type(self).__name__
        return (f"this {name} is still showing a run that has not ended (one started with run_in_background?): "
                f"wait for that run with run.wait(), or give the new run its own {name}()")

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self._depth = max(0, self._depth - 1)
        if self._depth == 0 and (self._run_kind is not None or self._prepared):
            self._finalize(exc)  # (prepared only: a background run that failed before its first hook)

    # ------------------------------------------------------------------ setting up a run

    def _make_renderer(self, mode: str, plots: bool = True) -> Any:
        parts = self._PARTS if plots else self._PARTS - {"plot"}
        if mode == "widget":
            from nbcallback.widgets.render_widget import WidgetRenderer

            support = describe_frontend_support(mode, self._background, kernel_supports_subshells())
            controls = "controls" in parts and bool(support["controls"])
            key = ""
            if "controls" in parts and (controls or self.graceful_interrupt):
                key = str(support["hint"])
            elif "controls" not in parts and "progress" in parts and self.graceful_interrupt and not self._background:
                key = "hint_marimo" if host() == "marimo" else "hint_interrupt"  # no Stop button to mention
            return WidgetRenderer(parts if controls else parts - {"controls"}, panels_for=self._panels_for,
                                  on_stop=(lambda: self.request_stop("button")) if controls else None,
                                  on_lr=self.set_learning_rate if controls else None,
                                  hint=self.words(key) if key else "", w=self.words, foreground=not self._background)
        if mode in ("static", "final"):
            from nbcallback.widgets.render_widget import StaticRenderer

            return StaticRenderer(parts, live=mode == "static", w=self.words)
        if mode in ("tty", "log") and self._repeats_another():
            parts = parts - {"progress", "table"}
        if mode == "tty":
            return TTYRenderer(parts, self.file, self.words)
        return LogRenderer(parts, self.file, self.log_interval, self.words) if mode == "log" else NullRenderer()

    def _repeats_another(self) -> bool:
        """In a terminal or a log, whether a progress callback listed before this one prints the run's lines (this
        one would print each of them again)."""
        shown = self._progress_callbacks()
        return bool(shown) and shown[0] is not self

    def _panels_for(self, facts: dict[str, Any]) -> list[Panel]:
        """The plot panels for the run's facts (see :func:`~nbcallback.widgets.panels.default_panels`)."""
        lr_panel = getattr(self, "lr_panel", "auto")
        return default_panels(
            tuple(facts.get("metrics", ())),
            groups=getattr(self, "groups", None),
            lr=bool(facts.get("lr_changed")) if lr_panel == "auto" else bool(lr_panel),
            loss_positive=bool(facts.get("loss_positive", True)),
            extra=getattr(self, "panels", None) or (),
            w=self.words,
        )

    def _shows_status(self) -> bool:
        """One status line per run: a plot-only callback leaves it to a progress callback beside it (the run's
        callbacks are known before any joins it, so the first view is already right)."""
        return "progress" in self._PARTS or not self._progress_callbacks()

    def _progress_callbacks(self) -> list[LiveCallback]:
        """The run's display callbacks that show progress, in the order the run lists them."""
        callbacks = list(self._siblings)
        if hasattr(self._cb_params, "get"):
            callbacks += list(self._cb_params.get("list_callback") or ())
        callbacks += self._shared.members if self._shared is not None else []
        return [callback for callback in callbacks
                if isinstance(callback, LiveCallback) and "progress" in callback._PARTS and callback.display != "off"]

    def _live_view(self, now: float) -> View:
        return self.state.view(now, live_rows=self.live_rows)

    def _open(self, rank: int, plots: bool = True) -> None:
        """Resolve the display mode and open the renderer (no-op when already open); ``plots``: a training run."""
        if self._prepared:
            return
        self.mode = resolve_display(self.display, rank=rank, stream=self.file)
        self.renderer = self._make_renderer(self.mode, plots)
        self._interval = self.refresh_interval or self.renderer.text_interval
        self._append = self._losses.append
        now = self._clock()
        view = self._live_view(now)
        self._guard(lambda: self.renderer.open(view, self.state, self._shows_status()))
        if self.mode != "off":  # the view just shown is the first refresh (off: the state is kept at every check)
            self._t_refresh = now

    def _prepare_background(self, siblings: tuple[LiveCallback, ...] = ()) -> None:
        """Open the view on the calling (main) thread before a background run starts, so the display belongs to
        the cell that started it; ``siblings``: the run's display callbacks (one status line for them all)."""
        if self._depth:
            raise RuntimeError(self._in_use())
        self._init_run()
        self._siblings, self._background = tuple(siblings), True
        self._open(rank=0)
        self._prepared = True

    def _start(self, kind: str, cb_params: Any, now: float) -> None:
        if sum(other is self for other in cb_params.get("list_callback") or ()) > 1:
            raise ValueError(f"callbacks holds the same {type(self).__name__} twice (its hooks would count every "
                             "step twice); pass it once")
        self._cb_params, self._run_kind = cb_params, kind
        shared = cb_params.get(SHARED_KEY)
        if not isinstance(shared, RunShared):
            shared = cb_params[SHARED_KEY] = RunShared()
        shared.join(self)
        self._shared = shared
        if self.graceful_interrupt and not self._background:
            shared.install_signal(self)
        if self._prestop is not None:
            shared.request_stop(self._prestop)
            self._prestop = None
        if kind == "train":
            valid, eval_steps = cb_params.get("valid_dataset"), None
            if valid is not None:
                from nbcallback.train.model import dataset_size

                try:
                    eval_steps = int(dataset_size(valid))
                except (TypeError, ValueError, AttributeError):
                    pass
            self.state.start(now, epochs=int(cb_params.get("epoch_num", 1)),
                             steps_per_epoch=int(cb_params.get("batch_num", 0)),
                             first_global_step=int(cb_params.get("cur_step_num", 0) or 0),
                             has_validation=valid is not None, eval_steps=eval_steps, lr=_get_lr(cb_params))
        else:
            self.state.start(now, kind="eval", eval_steps=int(cb_params.get("batch_num", 0)) or None)
        # Open after the state knows the run, so the controls start with the optimizer's lr.
        self._open(int(cb_params.get("rank_id", 0) or 0), plots=kind == "train")
        self._new_phase(kind, now)
        self._guard(lambda: self.renderer.event("start", self._live_view(now)))

    def _new_phase(self, phase: str, now: float) -> None:
        self._phase = phase
        self._countdown = self._stride = 1  # check the clock at the next step
        self._t_check = now

    # ------------------------------------------------------------------ hooks

    @_counted
    def on_train_begin(self, run_context: RunContext) -> None:
        self._train_ctx = run_context
        self._start("train", run_context.original_args(), self._clock())

    @_counted
    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        now, cb_params = self._clock(), self._cb_params
        self.state.begin_epoch(int(cb_params.get("cur_epoch_num", 1)), now, int(cb_params.get("cur_step_num", 0)))
        self._apply_pending(run_context, eval_phase=False, stops=False)
        self._refresh(now, boundary=True)  # the first step may wait seconds for its batch (loader workers starting)

    def on_train_step_end(self, run_context: RunContext) -> None:
        """The hot path: O(1), no clock read, no device synchronisation."""
        self._append(self._cb_params["net_outputs"])
        self._countdown -= 1
        if self._countdown <= 0 or self._pending:
            self._slow_path(run_context, False)

    @_counted
    def on_train_epoch_end(self, run_context: RunContext) -> None:
        now = self._clock()
        self._apply_pending(run_context, eval_phase=False)
        self._record(now)
        epoch, validated = self._cb_params.get("cur_epoch_num", 1), self._cb_params.get("eval_results") is not None
        self.state.end_epoch(int(epoch), now, validated=validated)
        self._refresh(now, boundary=True)
        self._guard(lambda: self.renderer.event("epoch_end", self._live_view(now)))

    @_counted
    def on_train_end(self, run_context: RunContext) -> None:
        """The run ends here (the snapshot itself is drawn in ``__exit__``)."""
        self._t_end = self._clock()
        self._record(self._t_end)
        self._callback_stop = run_context.get_stop_requested()

    @_counted
    def on_eval_begin(self, run_context: RunContext) -> None:
        """fit's validation (a phase of the run) or a stand-alone ``Model.eval`` run."""
        now, cb_params = self._clock(), run_context.original_args()
        if self._run_kind is None:
            self._start("eval", cb_params, now)
        else:
            self._record(now, before_eval=True)
            self._new_phase("eval", now)
        self.state.begin_eval(now, int(cb_params.get("batch_num", 0)) or None)
        if self._run_kind == "train":
            self._apply_pending(run_context, eval_phase=True)
            self._refresh(now, boundary=True)

    def on_eval_step_end(self, run_context: RunContext) -> None:
        """Hot path of evaluation steps: a counter only."""
        self._countdown -= 1
        if self._countdown <= 0 or self._pending:
            self._slow_path(run_context, True)

    @_counted
    def on_eval_end(self, run_context: RunContext) -> None:
        """Time the evaluation pass and add its table row (fit's validation: ``cb_params.eval_results``, set
        before ``on_eval_end`` as in MindSpore)."""
        cb_params, now = self._cb_params, self._clock()
        self._apply_pending(run_context, eval_phase=True)
        self.state.record_eval_steps(now, int(cb_params.get("cur_step_num", 0)))
        partial = run_context.get_stop_requested()
        seconds = self.state.end_eval(now, complete=not partial)
        if self._run_kind == "eval":
            self._t_end = now
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
        if self._countdown > 0:  # only a request was pending
            return
        now = self._clock()
        self._countdown = self._stride = _next_stride(self._stride, now - self._t_check)
        self._t_check = now
        if now - self._t_refresh >= self._interval:
            self._record(now)
            self._refresh(now)

    def _apply_pending(self, run_context: RunContext, eval_phase: bool, stops: bool = True) -> None:
        """Apply stop / learning-rate requests: always on the training thread, between steps.  ``stops=False``
        (an epoch begins: the loop runs its first step anyway) leaves a stop to that step's end, where it is."""
        if not self._pending:
            return
        self._pending = False
        cb_params, shared = self._cb_params, self._shared
        lr, self._pending_lr = self._pending_lr, None
        if lr is not None and cb_params.get("optimizer") is not None:
            step = self.state.global_step if eval_phase else int(cb_params.get("cur_step_num", 0))
            self.state.set_lr(apply_learning_rate(cb_params["optimizer"], lr), changed_at=step)
        if shared is not None and self._prestop is not None:
            shared.request_stop(self._prestop)
            self._prestop = None
        if shared is None or shared.stop_reason is None or shared.stop_where is not None:
            return
        if not stops:
            self._pending = True
            return
        step = int(cb_params.get("cur_step_num", 0))
        if self._run_kind == "eval":
            shared.stop_where = (None, step, None)
        elif eval_phase:
            shared.stop_where = (self.state.epoch, self.state.step_in_epoch, step)
        else:
            batch_num = max(1, int(cb_params.get("batch_num", 1) or 1))
            shared.stop_where = (cb_params.get("cur_epoch_num"), (step - 1) % batch_num + 1 if step else 0, None)
        run_context.request_stop()
        if eval_phase and self._train_ctx is not None:
            self._train_ctx.request_stop()
        self._countdown = 0  # refresh at once so the status shows the stop

    def _record(self, now: float, *, before_eval: bool = False) -> None:
        """Bring the state up to date, converting the pending losses (one synchronisation).  ``before_eval``: in
        fit's ``on_eval_begin``, where ``cur_step_num`` is already 0 for the validation."""
        cb_params = self._cb_params
        if self._run_kind is None:
            return
        if self._phase == "eval":
            self.state.record_eval_steps(now, int(cb_params.get("cur_step_num", 0)))
            return
        items, self._losses = self._losses, []
        self._append = self._losses.append
        losses = _losses_to_floats(items) if items and self.mode != "off" and not self._display_failed else []
        step = self.state.global_step + len(items) if before_eval else int(cb_params.get("cur_step_num", 0))
        batch = _batch_size(cb_params.get("train_dataset_element")) if self.state.samples_per_step is None else None
        self.state.record_steps(now, step, losses, samples_per_step=batch)
        self.state.set_lr(_get_lr(cb_params))

    def _refresh(self, now: float, *, boundary: bool = False) -> None:
        """Send the recorded state, at most once per interval.  At a ``boundary`` (a phase begins or ends) a send
        that is not due yet is left to a timer, in case no step comes to refresh when it is due."""
        if self._run_kind is None or self.mode == "off" or self._display_failed:
            return
        with self._lock:  # the timer may have just sent
            wait = self._t_refresh + self._interval - now
            if wait <= 0:
                self._send(now)
            elif boundary and self._timer is None and self.renderer.late_updates:
                self._arm(wait + _LATE_GRACE)

    def _send(self, now: float) -> None:
        """Send the state now (the caller holds the lock); a timer has nothing left to do."""
        self._disarm()
        view = self._live_view(now)
        self._guard(lambda: self.renderer.update(view, self.state, self._shows_status()))
        self._t_refresh = now
        self._refreshes += 1

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, delay: float) -> None:
        """Have :meth:`_late_send` run on a timer thread in ``delay`` seconds (none if no thread can start)."""
        timer = self._timer = threading.Timer(delay, lambda: self._late_send(timer))
        timer.daemon = True
        timer.name = "nbcallback-late-send"
        try:
            timer.start()
        except RuntimeError:  # no thread to spare: the phase change waits for the next step, as without a timer
            self._timer = None

    def _late_send(self, timer: threading.Timer) -> None:
        """The timer's send, when no step has refreshed since the phase changed: the state the training thread
        recorded then is still current.  While the training thread still checks the clock (slow steps), it is
        left to refresh when it next checks, and the timer looks again a little later."""
        with self._lock:
            if self._timer is not timer or self._run_kind is None:
                return
            now = self._clock()
            if now - self._t_check < _LATE_GRACE:
                self._arm(_LATE_GRACE)
            else:
                self._send(now)

    def _guard(self, action: Callable[[], Any]) -> None:
        """Run a display action; on failure warn once and switch the display off."""
        with self._lock:
            if self._display_failed:
                return
            try:
                action()
            except Exception as exc:  # a display problem must never stop training
                self._display_failed = True
                warnings.warn(f"nbcallback.widgets.{type(self).__name__}: the display failed and is switched off "
                              f"for this run ({type(exc).__name__}: {exc}); training continues.", RuntimeWarning,
                              stacklevel=3)
                try:
                    self.renderer.abort()
                except Exception:  # already failing; the warning above says why
                    pass

    # ------------------------------------------------------------------ the end

    @_counted
    def _finalize(self, exc: BaseException | None) -> None:
        """Final status, final plot, static snapshot; close everything. Never raises."""
        # The run ended at on_train_end/on_eval_end; other callbacks' exits do not count.
        now = self._t_end if self._t_end is not None and exc is None else self._clock()
        with self._lock:  # a timer's send still running ends first; none starts after this
            self._disarm()
        try:
            if exc is not None and any(isinstance(t, torch.Tensor) and t.device.type != "cpu" for t in self._losses):
                self._losses = [math.nan] * len(self._losses)  # after a device error, reading could fail again
            try:
                self._record(now)
            except Exception:  # the state is only for display; keep ending the run
                pass
            self.state.finish(now, *self._ending(exc))
            if self.mode != "off" and not self._display_failed:
                started = time.perf_counter()
                png, css_width = self._final_png() if self.state.kind == "train" else (None, None)
                self.last_png = png or self.last_png
                self._on_final_png(png)  # e.g. saves the PNG, which text renderers then name
                view = self.state.view(now, live_rows=None, max_rows=self.max_rows)
                self._guard(lambda: self.renderer.finish(view, png, self._shows_status(), css_width))
                self.final_seconds = time.perf_counter() - started
        finally:
            if self._shared is not None:
                self._shared.uninstall_signal(self)
            self._prepared = self._background = False
            self._run_kind = self._train_ctx = None
            self._cb_params = {}
            self._siblings = ()
            self._losses = []
            self._append = _DISCARD

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
        state = self.state
        if state.kind == "eval":
            where = Msg("where_step", step=state.eval_step)
        elif state.epoch is None:
            where = Msg("where_nowhere")
        else:
            where = Msg("where_epoch", epoch=state.epoch, step=state.step_in_epoch)
        if exc is None and self._shared is not None and self._shared.stop_where is not None:
            return "stopped", self._shared.describe_stop(), None
        if exc is None and self._callback_stop:
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
        view = self.state.view(self._clock(), live_rows=None, max_rows=self.max_rows)
        return dataclasses.replace(view, status_text=self.words.say(view.status_text))

    def __getstate__(self) -> dict[str, Any]:
        """Picklable without the live view, the figure, locks or the run's objects."""
        dropped = ("renderer", "_shared", "_siblings", "_cb_params", "_train_ctx", "_losses", "_append", "state",
                   "_lock", "_timer")
        return {key: value for key, value in self.__dict__.items() if key not in dropped}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.state = TrainingState()
        self._depth = 0
        self._prepared = False
        self._lock = threading.RLock()
        self._init_run()


def save_png(path: str | Path, png: bytes) -> Path:
    """Write ``png`` to ``path`` (parent folders created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(png)
    return target
