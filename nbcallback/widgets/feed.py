"""The framework-free way in: a training loop of any kind feeds a display callback with ``log`` and friends.

:class:`LoopFeed` translates the calls of the public API (:meth:`~nbcallback.widgets.base.LiveCallback.begin`,
``log``, ``eval_begin``, ``eval_step``, ``log_eval``, ``finish``) into the hooks the display already has, with
one ``cb_params`` dict and one :class:`~nbcallback.train.callback.RunContext` of its own: the display cannot tell a
plain ``for batch in loader:`` loop, a Lightning ``Trainer`` or ``Model.train`` apart.  The per-step path stays
what it is for ``Model``: the loss object is appended as it is (a tensor stays on its device) and the clock is read
only every few steps; the losses are read on the host once per refresh.
"""
from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any, Mapping

import torch

from nbcallback.train.callback import RunContext

if TYPE_CHECKING:
    from nbcallback.widgets.base import LiveCallback

__all__ = ["LoopFeed", "StopTraining", "checked_loss"]


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


class LoopFeed:
    """A run fed by calls: its ``cb_params`` and :class:`RunContext`, where it is (``epoch`` 0-based, ``step`` the
    global step), whether an evaluation pass is on, and whether ``log`` raises :class:`StopTraining` after a stop
    (``raises``: in a ``with`` block)."""

    def __init__(self, board: LiveCallback, *, epochs: int | None, steps_per_epoch: int | None, optimizer: Any,
                 scheduler: Any = None, raises: bool = False) -> None:
        self.board = board
        self.raises = raises
        self.cb_params: dict[str, Any] = {
            "epoch_num": _count("epochs", epochs) or 0, "batch_num": _count("steps_per_epoch", steps_per_epoch) or 0,
            "cur_epoch_num": 1, "cur_step_num": 0, "optimizer": optimizer, "lr_scheduler": scheduler,
            "net_outputs": None, "list_callback": [board], "mode": "train"}
        self.ctx = RunContext(self.cb_params)
        self.eval_ctx: RunContext | None = None  # while an evaluation pass is on
        self.saved: dict[str, Any] = {}  # the training's counters during an evaluation pass
        self.epoch: int | None = None  # the epoch that has begun (0-based), None between epochs
        self.ended = False
        self.entered = False  # begin() entered the board (no ``with`` block): finish() exits it

    # ------------------------------------------------------------------ training

    def start(self) -> None:
        self.board.on_train_begin(self.ctx)

    def log(self, loss: Any, step: int | None, epoch: int | None) -> None:
        """One training step (or the loss of the step already counted, when ``step`` is the current one)."""
        self._check_open("log")
        if self.eval_ctx is not None:
            self._end_eval(None)
        params = self.cb_params
        done = params["cur_step_num"]
        step = done + 1 if step is None else int(_count("step", step) or 0)
        if step == done and done > 0 and loss is not None:
            self._late_loss(loss)  # e.g. Hugging Face: the loss arrives in on_log, after the step was counted
            return
        if step <= done:
            raise ValueError(f"log(step={step}): steps count up from 1, one per training step, and step {done} was "
                             "logged already; leave step= out to count the steps one by one")
        if epoch is None:
            per_epoch = params["batch_num"]
            epoch = (int(step) - 1) // per_epoch if per_epoch else (self.epoch or 0)
        else:
            epoch = _count("epoch", epoch)
        self.to_epoch(int(epoch))
        params["cur_step_num"] = step
        params["net_outputs"] = loss
        board = self.board
        if loss is None:  # a step without a loss: counted, nothing kept
            board._count_step(self.ctx)
        else:
            board.on_train_step_end(self.ctx)
        if self.raises and self.stop_requested():
            raise StopTraining("Stop was requested; the with block ends the run here")

    def _late_loss(self, loss: Any) -> None:
        board = self.board
        board._sampler.append(loss)
        board._late_record()

    def to_epoch(self, epoch: int) -> None:
        """End the epoch that is on (if another) and begin ``epoch`` (0-based)."""
        if self.epoch == epoch:
            return
        if self.epoch is not None:
            self.end_epoch()
        self.epoch = epoch
        self.cb_params["cur_epoch_num"] = epoch + 1
        self.board.on_train_epoch_begin(self.ctx)

    def end_epoch(self) -> None:
        if self.epoch is None:
            return
        if self.eval_ctx is not None:
            self._end_eval(None)
        self.board.on_train_epoch_end(self.ctx)
        self.cb_params.pop("eval_results", None)
        self.cb_params.pop("metrics", None)
        self.epoch = None

    # ------------------------------------------------------------------ evaluation

    def eval_begin(self, steps: int | None) -> None:
        self._check_open("eval_begin")
        if self.eval_ctx is not None:
            return
        params = self.cb_params
        self.saved = {key: params.get(key) for key in ("cur_step_num", "batch_num", "net_outputs")}
        params.update(batch_num=_count("steps", steps) or 0, cur_step_num=0, mode="eval")
        self.eval_ctx = RunContext(params)
        self.board.on_eval_begin(self.eval_ctx)

    def eval_step(self) -> None:
        if self.eval_ctx is None:
            self.eval_begin(None)
        assert self.eval_ctx is not None
        self.cb_params["cur_step_num"] += 1
        self.board.on_eval_step_end(self.eval_ctx)

    def log_eval(self, metrics: Mapping[str, Any]) -> None:
        self._check_open("log_eval")
        values = {}
        for name, value in metrics.items():
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                value = float(value)  # an evaluation's result: read once, at its end
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"log_eval({name}=...) takes numbers or 0-d tensors, got {type(value).__name__} "
                                f"{value!r:.60}")
            values[str(name)] = float(value)
        if not values:
            raise ValueError("log_eval() got no results; pass them by name, e.g. board.log_eval(loss=0.31, acc=0.9)")
        if self.eval_ctx is None:
            self.eval_begin(None)
        self._end_eval(values)

    def _end_eval(self, values: dict[str, float] | None) -> None:
        params, ctx = self.cb_params, self.eval_ctx
        assert ctx is not None
        held = {}  # a pass ended without results: an earlier pass's results are not its row
        if values is not None:
            params["metrics"] = params["eval_results"] = values
        else:
            held = {key: params.pop(key) for key in ("eval_results", "metrics") if key in params}
        self.board.on_eval_end(ctx)
        params.update(self.saved, mode="train", **held)
        self.eval_ctx = None

    # ------------------------------------------------------------------ the end

    def stop_requested(self) -> bool:
        shared = self.board._run.shared
        return self.ctx.get_stop_requested() or (shared is not None and shared.stop_reason is not None)

    def finish(self) -> None:
        """End the run (the epoch that is on, then the training); the display's snapshot follows in ``__exit__``."""
        if self.ended:
            return
        board = self.board
        board._apply_pending(self.ctx, eval_phase=False)  # a Stop pressed since the last step still shows
        self.end_epoch()
        self.ended = True
        board.on_train_end(self.ctx)

    def _check_open(self, what: str) -> None:
        if self.ended:
            raise RuntimeError(f"{what}() after finish(): this run has ended; give the next run a new board "
                               "(e.g. a new `with Dashboard(...) as board:` block)")
