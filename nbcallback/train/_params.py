"""What the built-in callbacks read from ``cb_params`` besides the loss: the network, the optimizer, the mode.

Shared by the built-ins so that none of them imports another (each built-in
imports only the mechanism in ``callback.py`` and helper modules like this one).
"""
from __future__ import annotations

from typing import Any, Mapping

import torch

__all__ = ["backbone_of", "is_data_parallel", "optimizer_of", "set_group_lr"]


def is_data_parallel(cb_params: Mapping[str, Any]) -> bool:
    """Whether the run is one process of several (``parallel_mode == 'data_parallel'``)."""
    return cb_params.get("parallel_mode") == "data_parallel"


def backbone_of(cb_params: Mapping[str, Any]) -> torch.nn.Module:
    """The user's network (``cb_params.network``), else the one inside ``train_network``."""
    network = cb_params.get("network")
    if isinstance(network, torch.nn.Module):
        return network
    train_network = cb_params["train_network"]
    inner = getattr(train_network, "network", None) or getattr(train_network, "backbone", None)
    return inner if isinstance(inner, torch.nn.Module) else train_network


def optimizer_of(
    cb_params: Mapping[str, Any], owner: str, purpose: str = "whose learning rate could be changed"
) -> torch.optim.Optimizer:
    """``cb_params.optimizer``, or a ValueError saying how to give the Model one (``purpose``: what for)."""
    optimizer = cb_params.get("optimizer")
    if optimizer is None:
        optimizer = getattr(cb_params.get("train_network"), "optimizer", None)
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise ValueError(
            f"For '{owner}', the model has no optimizer {purpose}: build it with "
            "Model(network, loss_fn, optimizer) where optimizer is a torch.optim.Optimizer."
        )
    return optimizer


def set_group_lr(group: dict, value: float) -> None:
    """Assign a learning rate to one param group, in place when it is a tensor."""
    current = group["lr"]
    if isinstance(current, torch.Tensor):
        with torch.no_grad():
            current.fill_(value)
    else:
        group["lr"] = value
