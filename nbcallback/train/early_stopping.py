"""``EarlyStopping``: stop training when a monitored value stops improving.

Also home of the small "monitor" toolkit shared with
:class:`~nbcallback.train.ReduceLROnPlateau` and
:class:`~nbcallback.train.BestCheckpoint`: which direction counts as better,
where a monitored value is read from, and how several processes agree on it.
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Mapping

import numpy as np

import torch
import torch.distributed as dist

from nbcallback.train._validation import check_bool, check_non_negative_int, loss_value
from nbcallback.train.callback import Callback, RunContext
from nbcallback.train.distributed import acts_on_rank, all_reduce, collective_device

__all__ = ["EarlyStopping"]

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


# --------------------------------------------------------------------------- shared monitor helpers


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
        warnings.warn(warning % (monitor, available), UserWarning, stacklevel=3)
    return value


def _agree(cb_params: Mapping[str, Any], value: float | None) -> float | None:
    if cb_params.get("parallel_mode") != "data_parallel":
        return value
    if not (dist.is_available() and dist.is_initialized()):
        return value
    device = collective_device()
    both = torch.tensor([0.0 if value is None else value, 0.0 if value is None else 1.0], dtype=torch.float64, device=device)
    all_reduce(both, what="the monitored value's average over the ranks (EarlyStopping / ReduceLROnPlateau)")
    world = dist.get_world_size()
    if int(both[1].item()) != world:
        return None
    return float(both[0].item()) / world


def is_data_parallel(cb_params: Mapping[str, Any]) -> bool:
    return cb_params.get("parallel_mode") == "data_parallel"


def backbone_of(cb_params: Mapping[str, Any]) -> torch.nn.Module:
    """The user's network (``cb_params.network``), else the one inside ``train_network``."""
    network = cb_params.get("network")
    if isinstance(network, torch.nn.Module):
        return network
    train_network = cb_params["train_network"]
    inner = getattr(train_network, "network", None) or getattr(train_network, "backbone", None)
    return inner if isinstance(inner, torch.nn.Module) else train_network


# --------------------------------------------------------------------------- the callback


class EarlyStopping(Callback):
    """Stop training when ``monitor`` has not improved for ``patience`` epochs.

    Args:
        monitor: what to watch at the end of every training epoch: ``'eval_loss'``
            (fit's validation loss, the default), a metric name of fit's
            validation such as ``'accuracy'``, or ``'loss'`` (the training loss
            of the epoch's last step, also available in ``Model.train``).
        min_delta: an improvement smaller than this is no improvement (its
            absolute value is used).
        patience: how many epochs in a row without improvement are tolerated;
            training stops at the end of the ``patience``-th such epoch (so
            ``patience=0`` stops at the first epoch that does not improve).
        verbose: print ``Epoch 00005: early stopping`` at the end (and, with
            ``restore_best_weights``, ``Restoring model weights from the end of the
            best epoch.``).
        mode: ``'min'`` (lower is better), ``'max'``, or ``'auto'``: ``'min'`` for
            losses and distances (``eval_loss``, ``loss``, ``mae``, ``mse``, …),
            ``'max'`` for everything else (accuracy …).
        baseline: a value the monitor must beat; an epoch that improves on the
            best so far but not on ``baseline`` still counts as waiting.
        restore_best_weights: when stopping, load the network weights of the best
            epoch back (the optimizer state is left as it is). Costs one copy of
            the weights in memory.

    Attributes:
        wait: epochs since the last improvement. ``best``: best value seen.
        best_epoch: the epoch (1-based) that produced ``best``.
        stopped_epoch: the epoch at whose end training was stopped (0: not stopped).

    The monitor is read in ``on_train_epoch_end``, where fit has put the
    validation results; epochs of fit that do not validate
    (``valid_frequency > 1``) are skipped. A monitor that is not available
    gives MindSpore's warning and the epoch is skipped.

    Where nbcallback follows MindSpore's documentation rather than its code:

    * ``baseline`` is the baseline (MindSpore 2.3 stores ``min_delta`` in its place).
    * A monitored value of 0 (e.g. a perfect loss) is a value; MindSpore treats
      it as missing and skips the epoch.
    * An epoch that improves never stops training; MindSpore's code stops after
      the first evaluated epoch when ``patience=0``, whatever the value.

    With several processes the monitored value is averaged over the ranks, so
    all of them stop at the same epoch.
    """

    def __init__(
        self,
        monitor: str = "eval_loss",
        min_delta: float = 0,
        patience: int = 0,
        verbose: bool = False,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
    ) -> None:
        super().__init__()
        owner = "EarlyStopping"
        self.monitor = check_monitor(monitor, owner)
        self.min_delta = abs(check_number(min_delta, "min_delta", owner))  # type: ignore[arg-type]
        self.patience = check_non_negative_int(patience, "patience", owner)
        self.verbose = check_bool(verbose, "verbose", owner)
        self.mode = mode
        self._direction = resolve_mode(mode, self.monitor, owner)
        self.baseline = check_number(baseline, "baseline", owner, allow_none=True)
        self.restore_best_weights = check_bool(restore_best_weights, "restore_best_weights", owner)
        self._reset()

    def _reset(self) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best_epoch = 0
        self.best = math.inf if self._direction == "min" else -math.inf
        self.best_weights: dict[str, torch.Tensor] | None = None

    def on_train_begin(self, run_context: RunContext) -> None:
        self._reset()

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        current = monitor_value(
            cb_params,
            self.monitor,
            "EarlyStopping",
            "Early stopping is conditioned on %s, which is not available. Available choices are: %s",
        )
        if current is None:
            return
        epoch = cb_params.get("cur_epoch_num", 1)
        network = backbone_of(cb_params) if self.restore_best_weights else None
        if network is not None and self.best_weights is None:
            self.best_weights = _copy_weights(network)
        self.wait += 1
        if is_improvement(current, self.best, self._direction, self.min_delta):
            self.best = current
            self.best_epoch = epoch
            if network is not None:
                self.best_weights = _copy_weights(network)
            if self.baseline is None or is_improvement(current, self.baseline, self._direction, 0.0):
                self.wait = 0
        if self.wait > 0 and self.wait >= self.patience:
            self.stopped_epoch = epoch
            run_context.request_stop()
            if network is not None and self.best_weights is not None:
                if self.verbose and acts_on_rank(cb_params):
                    print("Restoring model weights from the end of the best epoch.")
                _load_weights(network, self.best_weights)

    def on_train_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        if self.stopped_epoch > 0 and self.verbose and acts_on_rank(cb_params):
            print("Epoch %05d: early stopping" % self.stopped_epoch)

    # BackupAndRestore keeps this state in its backups, so a resumed run stops where
    # the uninterrupted one would have.
    def _backup_state(self) -> dict[str, Any]:
        return {"wait": self.wait, "best": self.best, "best_epoch": self.best_epoch, "stopped_epoch": self.stopped_epoch}

    def _backup_tensors(self) -> dict[str, torch.Tensor]:
        return dict(self.best_weights or {})

    def _restore_state(self, state: Mapping[str, Any], tensors: Mapping[str, torch.Tensor]) -> None:
        self.wait = int(state["wait"])
        self.best = float(state["best"])
        self.best_epoch = int(state["best_epoch"])
        self.stopped_epoch = int(state["stopped_epoch"])
        self.best_weights = {k: v.clone() for k, v in tensors.items()} if tensors else None


def _copy_weights(network: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in network.state_dict().items()}


def _load_weights(network: torch.nn.Module, weights: Mapping[str, torch.Tensor]) -> None:
    with torch.no_grad():
        for name, target in network.state_dict(keep_vars=True).items():
            if name in weights:
                target.copy_(weights[name])
