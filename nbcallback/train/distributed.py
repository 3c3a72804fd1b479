"""How ``Model`` runs with one process or several (``torch.distributed``).

``ParallelContext.detect()`` describes the process the model trains in.  With
one process (the default) every method is a cheap no-op, so the training loop
calls them unconditionally and pays nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import torch
from torch import nn

__all__ = ["ParallelContext"]


@dataclass(frozen=True)
class ParallelContext:
    """The parallel setting of a run.

    Attributes:
        mode: ``'stand_alone'`` (one process) or ``'data_parallel'`` (DDP), the
            value of ``cb_params.parallel_mode``.
        rank: this process's rank (``cb_params.rank_id``).
        world_size: how many processes train together (``cb_params.device_number``).
    """

    mode: str = "stand_alone"
    rank: int = 0
    world_size: int = 1

    @classmethod
    def detect(cls) -> "ParallelContext":
        """The context of this process: stand-alone unless a process group is initialised."""
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            world_size = torch.distributed.get_world_size()
            if world_size > 1:
                return cls("data_parallel", torch.distributed.get_rank(), world_size)
        return cls()

    @property
    def is_distributed(self) -> bool:
        return self.mode == "data_parallel"

    def wrap(self, network: nn.Module, device: torch.device) -> nn.Module:
        """The network the training step calls (DDP-wrapped when distributed)."""
        if not self.is_distributed:
            return network
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [device.index] if device.type == "cuda" and device.index is not None else None
        return DistributedDataParallel(network, device_ids=device_ids)

    def set_epoch(self, dataset: Any, epoch_index: int) -> None:
        """Tell a sharded dataset which epoch starts, so every rank shuffles alike."""
        if not self.is_distributed:
            return
        set_epoch = getattr(dataset, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(epoch_index)

    def stop_agreed(self, run_context: Any, final: bool) -> bool:
        """Whether any rank asked to stop (all ranks then stop at the same step).

        Stand-alone: the run context's own flag, already checked by the caller.
        """
        if not self.is_distributed:
            return False
        flag = torch.tensor([1.0 if run_context.get_stop_requested() else 0.0])
        torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
        if flag.item() > 0:
            run_context.request_stop()
            return True
        return False

    def reduce_metrics(self, metric_fns: Mapping[str, Any]) -> dict[str, Any]:
        """Each metric's value over the whole validation set."""
        return {name: metric.eval() for name, metric in metric_fns.items()}

    def reduce_mean(self, loss_metric: Any) -> float:
        """The mean validation loss over all ranks."""
        return loss_metric.eval()
