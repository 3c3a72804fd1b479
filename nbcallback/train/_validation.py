"""Argument checks shared by the built-in callbacks, with MindSpore's messages."""
from __future__ import annotations

from typing import Any

import torch

__all__ = ["check_non_negative_int", "check_positive_int", "check_bool", "step_in_epoch", "loss_value"]


def check_non_negative_int(value: Any, name: str, owner: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"For '{owner}', the argument '{name}' must be int, but got {type(value).__name__}.")
    if value < 0:
        raise ValueError(
            f"For '{owner}', the argument '{name}': The input value must be int and must >= 0, "
            f"but got '{value}' with type 'int'."
        )
    return value


def check_positive_int(value: Any, name: str, owner: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"For '{owner}', the argument '{name}' must be int, but got {type(value).__name__}.")
    if value <= 0:
        raise ValueError(f"For '{owner}', the argument '{name}' must be a positive int, but got {value}.")
    return value


def check_bool(value: Any, name: str, owner: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"For '{owner}', the argument '{name}' must be bool, but got {type(value).__name__}.")
    return value


def step_in_epoch(cb_params: Any) -> int:
    """The step within the epoch, 1-based, as every MindSpore built-in computes it."""
    return (cb_params["cur_step_num"] - 1) % cb_params["batch_num"] + 1


def loss_value(net_outputs: Any) -> Any:
    """MindSpore 2.x ``_handle_loss``: a tensor becomes a Python float (its mean).

    A tuple/list gives its first element unchanged (still a tensor, as in
    MindSpore 2.x); anything else is returned as it is.
    """
    if isinstance(net_outputs, (tuple, list)):
        if net_outputs and isinstance(net_outputs[0], torch.Tensor):
            return net_outputs[0]
        return net_outputs
    if isinstance(net_outputs, torch.Tensor):
        if net_outputs.numel() == 1:
            return float(net_outputs)
        return float(net_outputs.float().mean())
    return net_outputs
