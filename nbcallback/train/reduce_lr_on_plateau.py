"""``ReduceLROnPlateau``: lower the learning rate when a monitored value stops improving."""
from __future__ import annotations

from typing import Any, Mapping

from nbcallback.train._monitor import MonitorCallback, check_number
from nbcallback.train._params import optimizer_of, set_group_lr
from nbcallback.train._validation import check_bool, check_non_negative_int
from nbcallback.train.callback import RunContext
from nbcallback.train.distributed import acts_on_rank

__all__ = ["ReduceLROnPlateau"]


class ReduceLROnPlateau(MonitorCallback):
    """Multiply the learning rate by ``factor`` when ``monitor`` stalls for ``patience`` epochs.

    Args:
        monitor: what to watch at the end of every training epoch: ``'eval_loss'``
            (fit's validation loss, the default), a validation metric name such as
            ``'accuracy'``, or ``'loss'`` (the last step's training loss).
        factor: the multiplier, a float strictly between 0 and 1
            (``new_lr = lr * factor``).
        patience: epochs without improvement before the rate is reduced.
        verbose: print ``Epoch 00005: ReduceLROnPlateau reducing learning rate to 0.001.``
            on every reduction.
        mode: ``'min'``, ``'max'`` or ``'auto'`` (``'min'`` for losses and
            distances, ``'max'`` otherwise), as in :class:`EarlyStopping`.
        min_delta: an improvement smaller than this is no improvement.
        cooldown: epochs to wait after a reduction before counting again.
        min_lr: the learning rate never goes below this (must be >= 0).

    Every param group of the torch optimizer is scaled (each group keeps its
    own rate, floored at ``min_lr``); a group already at or below ``min_lr`` is
    left alone. The new rate applies from the next step on.

    Differences from MindSpore, which only supports one fixed learning rate
    Parameter: param groups with different rates are supported (MindSpore raises
    ``ValueError`` for group learning rates), and a monitored value of 0 counts
    as a value (MindSpore's code treats it as missing, its documentation does not).
    With several processes the monitored value is averaged over the ranks, so
    every rank changes its rate at the same epoch.
    """

    owner = "ReduceLROnPlateau"
    missing_warning = "Learning rate reduction is conditioned on %s, which is not available. Available choices are: %s"

    def __init__(
        self,
        monitor: str = "eval_loss",
        factor: float = 0.1,
        patience: int = 10,
        verbose: bool = False,
        mode: str = "auto",
        min_delta: float = 1e-4,
        cooldown: int = 0,
        min_lr: float = 0,
    ) -> None:
        super().__init__(monitor, mode, min_delta)
        owner = self.owner
        if isinstance(factor, bool) or not isinstance(factor, (int, float)):
            raise TypeError(f"For '{owner}', the argument 'factor' must be float, but got {type(factor).__name__}.")
        if not 0.0 < factor < 1.0:
            raise ValueError(
                f"For '{owner}', the argument 'factor' must be in range of (0.0, 1.0), but got {factor}: the "
                "learning rate is multiplied by it, so 1 would change nothing and more would increase it."
            )
        self.factor = float(factor)
        self.patience = check_non_negative_int(patience, "patience", owner)
        self.verbose = check_bool(verbose, "verbose", owner)
        self.cooldown = check_non_negative_int(cooldown, "cooldown", owner)
        min_lr_value = check_number(min_lr, "min_lr", owner)
        assert min_lr_value is not None
        if min_lr_value < 0:
            raise ValueError(f"For '{owner}', the argument 'min_lr' must be >= 0, but got {min_lr}.")
        self.min_lr = min_lr_value
        self._reset()

    def _reset(self) -> None:
        self.cooldown_counter = 0
        self.wait = 0
        self.best = self.worst()

    def on_train_begin(self, run_context: RunContext) -> None:
        optimizer_of(run_context.original_args(), "ReduceLROnPlateau")
        self._reset()

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        optimizer = optimizer_of(cb_params, "ReduceLROnPlateau")
        current = self.current(cb_params)
        if current is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self.improves(current, self.best):
            self.best = current
            self.wait = 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                reduced = []
                for group in optimizer.param_groups:
                    lr = float(group["lr"])
                    if lr > self.min_lr:
                        new_lr = max(lr * self.factor, self.min_lr)
                        set_group_lr(group, new_lr)
                        reduced.append(new_lr)
                if reduced and self.verbose and acts_on_rank(cb_params):
                    shown = reduced[0] if len(set(reduced)) == 1 else reduced
                    print("Epoch %05d: ReduceLROnPlateau reducing learning rate to %s." % (cb_params["cur_epoch_num"], shown))
                self.cooldown_counter = self.cooldown
                self.wait = 0

    def state_dict(self) -> dict[str, Any]:
        """What a resumed run needs to continue as the uninterrupted one (kept by BackupAndRestore)."""
        return {"wait": self.wait, "best": self.best, "cooldown_counter": self.cooldown_counter}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.wait = int(state["wait"])
        self.best = float(state["best"])
        self.cooldown_counter = int(state["cooldown_counter"])
