"""``TerminateOnNaN``: end training quietly when the loss becomes NaN or infinite."""
from __future__ import annotations

from typing import Any

import torch

from nbcallback.train.callback import Callback, RunContext

__all__ = ["TerminateOnNaN"]


def _first_tensor(outputs: Any) -> torch.Tensor | None:
    if isinstance(outputs, (tuple, list)):
        outputs = outputs[0] if outputs else None
    return outputs if isinstance(outputs, torch.Tensor) else None


class TerminateOnNaN(Callback):
    """Stop training (``run_context.request_stop()``) after a step whose loss is NaN or ±Inf.

    :class:`LossMonitor` also checks the loss, but it raises ``ValueError``: the
    run ends with an exception and the epoch-end hooks do not run.
    ``TerminateOnNaN`` prints nothing and ends the run normally: fit's
    validation (if due), ``on_train_epoch_end`` and ``on_train_end`` still run,
    so checkpoints, summaries and ``History`` are completed, and the weights are
    whatever that step left (usually already NaN). LossMonitor checks the loss
    even with ``per_print_times=0``, so leave it out of the callback list when
    you want the quiet stop.

    Attributes:
        stopped_epoch, stopped_step: where the non-finite loss appeared
            (epoch 1-based, global step); 0 while training is healthy.

    Checking means reading the loss after every step, which waits for a GPU
    to finish the step; on a CPU it costs nothing noticeable. Only the first
    output is checked when the network returns a tuple (loss-scale wrappers).
    """

    def __init__(self) -> None:
        super().__init__()
        self.stopped_epoch = 0
        self.stopped_step = 0

    def on_train_begin(self, run_context: RunContext) -> None:
        self.stopped_epoch = 0
        self.stopped_step = 0

    def on_train_step_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        loss = _first_tensor(cb_params.get("net_outputs"))
        if loss is None:
            return
        if not bool(torch.isfinite(loss.detach()).all()):
            self.stopped_epoch = cb_params.get("cur_epoch_num", 1)
            self.stopped_step = cb_params["cur_step_num"]
            run_context.request_stop()
