"""``EarlyStopping``: stop training when a monitored value stops improving."""
from __future__ import annotations

from typing import Any, Mapping

import torch

from nbcallback.train._monitor import MonitorCallback, check_number
from nbcallback.train._params import backbone_of
from nbcallback.train._validation import check_bool, check_non_negative_int
from nbcallback.train.callback import RunContext
from nbcallback.train.distributed import acts_on_rank

__all__ = ["EarlyStopping"]


# --------------------------------------------------------------------------- the callback


class EarlyStopping(MonitorCallback):
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

    owner = "EarlyStopping"
    missing_warning = "Early stopping is conditioned on %s, which is not available. Available choices are: %s"

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
        super().__init__(monitor, mode, min_delta)
        owner = self.owner
        self.patience = check_non_negative_int(patience, "patience", owner)
        self.verbose = check_bool(verbose, "verbose", owner)
        self.baseline = check_number(baseline, "baseline", owner, allow_none=True)
        self.restore_best_weights = check_bool(restore_best_weights, "restore_best_weights", owner)
        self._reset()

    def _reset(self) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best_epoch = 0
        self.best = self.worst()
        self.best_weights: dict[str, torch.Tensor] | None = None

    def on_train_begin(self, run_context: RunContext) -> None:
        self._reset()

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        current = self.current(cb_params)
        if current is None:
            return
        epoch = cb_params.get("cur_epoch_num", 1)
        network = backbone_of(cb_params) if self.restore_best_weights else None
        if network is not None and self.best_weights is None:
            self.best_weights = _copy_weights(network)
        self.wait += 1
        if self.improves(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if network is not None:
                self.best_weights = _copy_weights(network)
            if self.baseline is None or self.improves(current, self.baseline, min_delta=0.0):
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

    def state_dict(self) -> dict[str, Any]:
        """The counters and the best weights (as tensors, by their names): a resumed run stops where the
        uninterrupted one would have (kept by :class:`BackupAndRestore`)."""
        state: dict[str, Any] = dict(self.best_weights or {})
        state.update(wait=self.wait, best=self.best, best_epoch=self.best_epoch, stopped_epoch=self.stopped_epoch)
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.wait = int(state["wait"])
        self.best = float(state["best"])
        self.best_epoch = int(state["best_epoch"])
        self.stopped_epoch = int(state["stopped_epoch"])
        weights = {k: v.clone() for k, v in state.items() if isinstance(v, torch.Tensor)}
        self.best_weights = weights or None


def _copy_weights(network: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in network.state_dict().items()}


def _load_weights(network: torch.nn.Module, weights: Mapping[str, torch.Tensor]) -> None:
    with torch.no_grad():
        for name, target in network.state_dict(keep_vars=True).items():
            if name in weights:
                target.copy_(weights[name])
