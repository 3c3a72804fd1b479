"""``LossMonitor``: print the training loss every N steps, and fit's eval results."""
from __future__ import annotations

import math

import torch
import torch.distributed as dist

from nbcallback.train._validation import check_non_negative_int, loss_value, step_in_epoch
from nbcallback.train.callback import BuiltinCallback, RunContext
from nbcallback.train.distributed import acts_on_rank, all_reduce, collective_device

__all__ = ["LossMonitor"]


def _nan_message(epoch: int, step: int) -> str:
    return (
        f"In epoch: {epoch} step: {step}, loss is NAN or INF, training process cannot continue, "
        "terminating training."
    )


class LossMonitor(BuiltinCallback):
    """Print ``epoch: 1 step: 300, loss is 0.4530…`` every ``per_print_times`` steps.

    Args:
        per_print_times: print when this many global steps passed since the last
            print (the counter runs across epochs, so with 938 steps per epoch and
            300, epoch 2 prints ``step: 262``). ``0`` never prints.

    In ``Model.fit`` it also prints ``Eval result: epoch 1, metrics: {'accuracy': 0.9202}``
    after each validation.

    A NaN or infinite loss raises ``ValueError`` ("In epoch: … step: …, loss is
    NAN or INF, training process cannot continue, terminating training."), as in
    MindSpore, even when nothing is printed. On the CPU the loss is checked every
    step. On a GPU reading it every step would stall the device, so the losses of
    the steps in between are kept (references to the 0-d tensors, no kernel) and
    checked together at the next print step or epoch end: the error then names
    the first bad step, raised at most ``per_print_times`` steps (or an epoch)
    after it. Without a ``LossMonitor`` a NaN loss does not stop training (see
    ``TerminateOnNaN`` for a silent stop).

    As in MindSpore, the printing is the legacy ``step_end`` (``on_train_step_end``
    reaches it through the base class), so a subclass overriding ``step_end`` and calling
    ``super().step_end(run_context)`` keeps printing. It acts on training only (see
    :class:`~nbcallback.train.callback.BuiltinCallback`).

    When several processes train together, rank 0 prints the loss averaged across
    ranks (one ``all_reduce`` at print steps only); ``NBCALLBACK_CALLBACK_RANKS=all``
    makes every rank print.
    """

    def __init__(self, per_print_times: int = 1) -> None:
        super().__init__()
        self._per_print_times = check_non_negative_int(per_print_times, "per_print_times", "LossMonitor")
        self._last_print_time = 0
        self._unchecked = _UncheckedLosses()

    def begin(self, run_context: RunContext) -> None:
        """Reset the print counter (a new run counts its steps from 0)."""
        self._last_print_time = 0
        self._unchecked = _UncheckedLosses()

    def step_end(self, run_context: RunContext) -> None:
        """Check the step's loss for NaN/Inf and print it when due."""
        cb_params = run_context.original_args()
        cur_step = cb_params["cur_step_num"]
        if cur_step < self._last_print_time:  # a resumed run counts from 0 again
            self._last_print_time = 0
        outputs = cb_params["net_outputs"]
        due = self._per_print_times != 0 and cur_step - self._last_print_time >= self._per_print_times
        if not due and isinstance(outputs, torch.Tensor) and not outputs.is_cpu:
            self._unchecked.add(outputs, cb_params.get("cur_epoch_num", 1), step_in_epoch(cb_params))
            return
        if self._unchecked.where:  # a GPU loss kept since the last check
            self._raise_if_unchecked_bad()
        loss = loss_value(outputs)
        if isinstance(loss, float) and not math.isfinite(loss):
            raise ValueError(_nan_message(cb_params.get("cur_epoch_num", 1), step_in_epoch(cb_params)))
        if due:
            self._last_print_time = cur_step
            loss = _global_mean(cb_params, loss)
            if acts_on_rank(cb_params):
                epoch = cb_params.get("cur_epoch_num", 1)
                print("epoch: %s step: %s, loss is %s" % (epoch, step_in_epoch(cb_params), loss), flush=True)

    def _raise_if_unchecked_bad(self) -> None:
        bad = self._unchecked.first_non_finite()
        if bad is not None:
            raise ValueError(_nan_message(*bad))

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        self._raise_if_unchecked_bad()
        metrics = cb_params.get("metrics")
        if metrics and acts_on_rank(cb_params):
            print("Eval result: epoch %d, metrics: %s" % (cb_params["cur_epoch_num"], metrics))


class _UncheckedLosses:
    """The device losses of the steps not read yet, with the epoch and step each came from.

    ``add`` keeps a reference (no kernel, no synchronisation); every
    ``CHUNK`` steps the kept losses are folded into one tensor of flags (two
    kernels), so a long interval between checks holds a few small tensors, not
    thousands. ``first_non_finite`` reads the flags once (one synchronisation).
    """

    CHUNK = 1024

    def __init__(self) -> None:
        self._losses: list[torch.Tensor] = []
        self._flags: list[torch.Tensor] = []
        #: ``(epoch, step)`` of each kept loss, oldest first (empty on the CPU: each loss is checked at once).
        self.where: list[tuple[int, int]] = []

    def add(self, loss: torch.Tensor, epoch: int, step: int) -> None:
        self._losses.append(loss)
        self.where.append((epoch, step))
        if len(self._losses) >= self.CHUNK:
            self._fold()

    def _fold(self) -> None:
        values = torch.stack([loss.reshape(()) if loss.numel() == 1 else loss.float().mean() for loss in self._losses])
        self._flags.append(~torch.isfinite(values))
        self._losses = []

    def first_non_finite(self) -> tuple[int, int] | None:
        """``(epoch, step)`` of the first kept loss that is NaN or infinite, else ``None``; forgets them all."""
        if self._losses:
            self._fold()
        if not self._flags:
            return None
        flags = torch.cat(self._flags) if len(self._flags) > 1 else self._flags[0]
        where = self.where
        self._flags, self.where = [], []
        first = int(torch.where(flags.any(), flags.byte().argmax(), -1))  # argmax: the first of the maxima
        return where[first] if first >= 0 else None


def _global_mean(cb_params: dict, loss: object) -> object:
    """The loss averaged over all ranks (only called at print steps)."""
    if cb_params.get("parallel_mode") != "data_parallel" or not isinstance(loss, float):
        return loss
    value = torch.tensor([loss], dtype=torch.float64, device=collective_device())
    all_reduce(value, what="LossMonitor's loss average over the ranks")
    return float(value.item() / dist.get_world_size())
