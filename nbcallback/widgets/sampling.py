"""Per-step sampling: what the step hooks keep of each training step, and when they next look at the clock.

A step only appends its loss object (a Model run's ``net_outputs``) and counts down; at zero the clock is read and
the stride to the next check adapted, aimed at the next refresh (about three checks per refresh).  :meth:`StepSampler.record` converts the kept
outputs (one device synchronisation) and folds them into the :class:`~nbcallback.widgets.state.TrainingState`; it
is given plain values (the step, the batch's size, the optimizer), never a framework's objects.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch

from nbcallback.widgets.state import TrainingState

__all__ = ["StepSampler", "losses_to_floats", "batch_size", "learning_rate"]

CHECK_PERIOD = 0.05  # the shortest time between clock checks: how late a due refresh can come
MAX_CHECK_GAP = 0.15  # the longest: how late a refresh can come when the steps suddenly slow down (x the slowdown)
_MAX_STRIDE = 4096  # a slowdown after very fast steps is noticed within this many steps


def next_stride(stride: int, seconds: float, ahead: float = CHECK_PERIOD) -> int:
    """Steps to the next clock check when the last ``stride`` steps took ``seconds``: about ``ahead`` seconds on,
    growing at most 4x per check so a few fast steps cannot delay the next check long."""
    wanted = round(stride * ahead / seconds) if seconds > 0 else 4 * stride
    return max(1, min(wanted, 4 * stride, _MAX_STRIDE))


def losses_to_floats(items: list[Any]) -> list[float]:
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


def batch_size(element: Any) -> int | None:
    """The leading dimension of a batch's first tensor (for samples/s)."""
    if isinstance(element, (tuple, list)) and element:
        element = element[0]
    shape = getattr(element, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) > 0 else None


def learning_rate(optimizer: Any) -> float | None:
    """The first parameter group's learning rate of ``optimizer`` (a Keras 3 one: its ``learning_rate``); None
    without an optimizer or a number."""
    if getattr(optimizer, "param_groups", None):
        return optimizer.param_groups[0].get("lr")
    rate = getattr(optimizer, "learning_rate", None) if optimizer is not None else None  # Keras 3
    try:
        return float(rate) if rate is not None else None
    except (TypeError, ValueError):  # a schedule object
        return None


def _ignore(_output: Any) -> None:
    """What ``append`` is while no run is displayed: the step's output is not kept."""


class StepSampler:
    """The steps' outputs since the last record (``append``: O(1), no clock, no synchronisation), the countdown to
    the next clock check, its adaptive ``stride`` and the time of the last check (``t_check``)."""

    def __init__(self) -> None:
        self.outputs: list[Any] = []
        self.append: Callable[[Any], None] = _ignore
        self.countdown = self.stride = 1
        self.t_check = 0.0

    def start(self) -> None:
        """Keep the outputs from now on (the display is open)."""
        self.append = self.outputs.append

    def stop(self) -> None:
        """Forget the outputs and keep no more (the run ended)."""
        self.outputs = []
        self.append = _ignore

    def new_phase(self, now: float) -> None:
        """A phase begins: check the clock at the next step."""
        self.countdown = self.stride = 1
        self.t_check = now

    def check(self, now: float, due: float) -> None:
        """The countdown reached zero at ``now``: set the next one from the steps' pace, at the next refresh (``due``,
        monotonic seconds), between ``CHECK_PERIOD`` and ``MAX_CHECK_GAP`` on."""
        ahead = min(max(due - now, CHECK_PERIOD), MAX_CHECK_GAP)
        self.countdown = self.stride = next_stride(self.stride, now - self.t_check, ahead)
        self.t_check = now

    def record(self, state: TrainingState, now: float, *, phase: str, step: int, read: bool, eval_step: int = 0,
               samples_per_step: int | None = None, optimizer: Any = None, before_eval: bool = False) -> None:
        """Bring ``state`` up to date: an evaluation's ``eval_step``, or the training steps since the last record up
        to global ``step`` with their losses (converted when ``read``: one synchronisation), the batch's
        ``samples_per_step`` (kept once known) and ``optimizer``'s learning rate.  ``before_eval``: an evaluation
        pass begins, so the steps recorded are the ones kept since the last record."""
        if phase == "eval":
            state.record_eval_steps(now, eval_step)
            return
        items, self.outputs = self.outputs, []
        if self.append is not _ignore:
            self.append = self.outputs.append
        losses = losses_to_floats(items) if items and read else []
        step = state.global_step + len(items) if before_eval else step
        batch = samples_per_step if state.samples_per_step is None else None
        state.record_steps(now, step, losses, samples_per_step=batch)
        state.set_lr(learning_rate(optimizer))
