"""The monitoring callbacks' shared part: :class:`MonitorCallback` and the monitor helpers.

:class:`~nbcallback.train.EarlyStopping`, :class:`~nbcallback.train.ReduceLROnPlateau`
and :class:`~nbcallback.train.BestCheckpoint` watch one value at the end of every
training epoch (``'eval_loss'``, a metric of fit's validation, or ``'loss'``) and
act when it improves or stalls. What they share lives here, once: which direction
counts as better (``mode``), where the value is read from, and how several
processes agree on it. (Keras has the same base, ``MonitorCallback``.)
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Mapping

import numpy as np
import torch
import torch.distributed as dist

from nbcallback.train._validation import loss_value
from nbcallback.train.callback import Callback
from nbcallback.train.distributed import collective_device

__all__ = [
    "MonitorCallback",
    "MIN_MONITORS",
    "check_monitor",
    "check_number",
    "resolve_mode",
    "is_improvement",
    "monitor_value",
]

#: Monitors for which ``mode='auto'`` means "lower is better" (MindSpore's list).
MIN_MONITORS = frozenset(
    {
        "hausdorff_distance",
        "mae",
        "mse",
        "loss",
        "perplexity",
        "mean_surface_distance",
        "root_mean_square_distance",
        "eval_loss",
    }
)
_MODES = ("auto", "min", "max")


def check_monitor(monitor: Any, owner: str) -> str:
    if not isinstance(monitor, str) or not monitor:
        raise TypeError(
            f"For '{owner}', the argument 'monitor' must be a non-empty str such as 'eval_loss', 'loss' or "
            f"'accuracy', but got {monitor!r}."
        )
    return monitor


def check_number(value: Any, name: str, owner: str, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"For '{owner}', the argument '{name}' must be int or float, but got {type(value).__name__}.")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"For '{owner}', the argument '{name}' must be a number, but got nan.")
    return value


def resolve_mode(mode: Any, monitor: str, owner: str) -> str:
    """``'min'`` or ``'max'`` for a ``mode`` argument (MindSpore's message for a bad value)."""
    if not isinstance(mode, str):
        raise TypeError(f"For '{owner}', the argument 'mode' must be str, but got {type(mode).__name__}.")
    if mode not in _MODES:
        raise ValueError(f"mode should be 'auto', 'min' or 'max', but got {mode}.")
    if mode == "auto":
        return "min" if monitor in MIN_MONITORS else "max"
    return mode


def is_improvement(current: float, reference: float, direction: str, min_delta: float) -> bool:
    """``current`` beats ``reference`` by more than ``min_delta`` (NaN never improves)."""
    if direction == "min":
        return current < reference - min_delta
    return current > reference + min_delta


def _scalar(value: Any, owner: str) -> float | None:
    """A monitored value as a float; None when it is None; ValueError when not a scalar."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"{owner} only supports scalar monitor now.")
        return float(value.detach().float().reshape(()).cpu())
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    if hasattr(value, "__array__"):
        array = np.asarray(value)
        if array.size != 1:
            raise ValueError(f"{owner} only supports scalar monitor now.")
        return float(array.reshape(()))
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(f"{owner} only supports scalar monitor now.")
        return _scalar(value[0], owner)
    raise ValueError(f"{owner} only supports scalar monitor now.")


def monitor_value(cb_params: Mapping[str, Any], monitor: str, owner: str, warning: str) -> float | None:
    """Read ``monitor`` at the end of a training epoch, agreed across processes.

    ``'loss'`` is the training loss of the epoch's last step; any other name is
    looked up in ``cb_params.eval_results`` (fit's validation metrics plus
    ``eval_loss``). Returns None when the value is not available this epoch:
    silently in fit epochs that do not validate, with ``warning`` (MindSpore's
    text, ``%s`` for the monitor and the available names) otherwise.

    Unlike MindSpore, a value of 0 (a perfect loss) is a value, not "missing".

    With several processes (``parallel_mode == 'data_parallel'``) the value is
    averaged over the ranks with ``all_reduce``, so every rank takes the same
    decision (and a value missing on any rank counts as missing on all).
    """
    candidates: dict[str, Any]
    if monitor == "loss":
        outputs = cb_params.get("net_outputs")
        if outputs is None:
            candidates = {}
        else:
            loss = loss_value(outputs)
            candidates = {"loss": loss}
    else:
        candidates = dict(cb_params.get("eval_results") or {})
    value = _scalar(candidates.get(monitor), owner)
    quiet = monitor != "loss" and "eval_results" not in cb_params and "valid_dataset" in cb_params
    value = _agree(cb_params, value)
    if value is None and not quiet:
        available = sorted({"loss", *candidates})
        warnings.warn(warning % (monitor, available), UserWarning, stacklevel=4)
    return value


def _agree(cb_params: Mapping[str, Any], value: float | None) -> float | None:
    if cb_params.get("parallel_mode") != "data_parallel":
        return value
    if not (dist.is_available() and dist.is_initialized()):
        return value
    device = collective_device()
    both = torch.tensor([0.0 if value is None else value, 0.0 if value is None else 1.0], dtype=torch.float64, device=device)
    dist.all_reduce(both)
    world = dist.get_world_size()
    if int(both[1].item()) != world:
        return None
    return float(both[0].item()) / world


class MonitorCallback(Callback):
    """Base of the callbacks that watch one value (``monitor``) at the end of every training epoch.

    Args:
        monitor: ``'eval_loss'`` (fit's validation loss), a metric name of fit's
            validation such as ``'accuracy'``, or ``'loss'`` (the training loss of
            the epoch's last step, also available in ``Model.train``).
        mode: ``'min'`` (lower is better), ``'max'``, or ``'auto'``: ``'min'`` for
            losses and distances (:data:`MIN_MONITORS`), ``'max'`` for everything else.
        min_delta: an improvement smaller than this is no improvement (its absolute value is used).

    A subclass sets :attr:`owner` (the name in error messages) and
    :attr:`missing_warning` (warned when the value is not available, ``%s`` for the
    monitor and the names that are), calls ``super().__init__(monitor, mode, min_delta)``
    first, and in ``on_train_epoch_end`` calls :meth:`current` (``None``: nothing to
    decide this epoch) and :meth:`improves`.
    """

    #: The class name in error messages.
    owner = "MonitorCallback"
    #: MindSpore's warning when the monitor is missing: ``%s`` the monitor, ``%s`` the available names.
    missing_warning = "%s is not available. Available choices are: %s"

    def __init__(self, monitor: str, mode: str, min_delta: float) -> None:
        super().__init__()
        self.monitor = check_monitor(monitor, self.owner)
        self.mode = mode
        self._direction = resolve_mode(mode, self.monitor, self.owner)
        self.min_delta = abs(check_number(min_delta, "min_delta", self.owner))  # type: ignore[arg-type]

    def worst(self) -> float:
        """The starting "best": every value improves on it."""
        return math.inf if self._direction == "min" else -math.inf

    def current(self, cb_params: Mapping[str, Any]) -> float | None:
        """The monitored value at the end of this epoch (averaged over the processes), or ``None``."""
        return monitor_value(cb_params, self.monitor, self.owner, self.missing_warning)

    def improves(self, value: float, reference: float, min_delta: float | None = None) -> bool:
        """Whether ``value`` beats ``reference`` by more than ``min_delta`` (default: this callback's)."""
        return is_improvement(value, reference, self._direction, self.min_delta if min_delta is None else min_delta)
