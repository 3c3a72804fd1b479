"""The networks ``Model`` builds around the user's ``torch.nn.Module``.

MindSpore's ``Model`` wraps the backbone in cells that compute the loss
(``WithLossCell``), take one optimizer step (``TrainOneStepCell``) and produce
``(loss, logits, label)`` for the metrics (``WithEvalCell``).  Callbacks see
them as ``cb_params.train_network`` / ``cb_params.eval_network``; saving
``cb_params.train_network`` stores the backbone's weights under their own names
plus the optimizer's state, as MindSpore does.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, ContextManager, Mapping

import torch
from torch import nn

from nbcallback.train.serialization import (
    load_module_entries,
    load_optimizer_entries,
    network_entries,
    optimizer_entries,
)

__all__ = ["WithLossCell", "TrainOneStepCell", "WithEvalCell", "class_index_target"]

#: Losses whose integer class targets must be int64 in PyTorch.
_INT64_TARGET_LOSSES = (nn.CrossEntropyLoss, nn.NLLLoss, nn.MultiMarginLoss, nn.MultiLabelMarginLoss)


def needs_int64_target(loss_fn: Callable[..., Any] | None) -> bool:
    """Whether ``loss_fn`` only accepts int64 class indices as targets."""
    return isinstance(loss_fn, _INT64_TARGET_LOSSES) or loss_fn in (
        nn.functional.cross_entropy,
        nn.functional.nll_loss,
    )


def class_index_target(label: torch.Tensor) -> torch.Tensor:
    """Cast integer class labels (int32, uint8, uint32 ...) to the int64 torch's losses need.

    The tutorial casts labels to ``int32`` (MindSpore's choice); PyTorch's
    cross-entropy rejects that with "expected scalar type Long".  ``Model``
    casts for the losses that need it instead of failing. Float targets
    (class probabilities) are left alone.
    """
    if label.dtype is torch.int64 or label.is_floating_point() or label.dtype is torch.bool:
        return label
    return label.long()


def _split(inputs: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any]:
    if len(inputs) < 2:
        raise ValueError(
            f"When 'loss_fn' is not None, 'train_dataset' should return two elements, but got {len(inputs)}, "
            "please check the number of elements returned by 'train_dataset'"
        )
    return inputs[:-1], inputs[-1]


class WithLossCell(nn.Module):
    """``loss_fn(backbone(*data), label)``; the last input is the label.

    Args:
        backbone: the user's network.
        loss_fn: a loss module or function ``(output, target) -> scalar``.
    """

    def __init__(self, backbone: nn.Module, loss_fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.backbone = backbone
        self.loss_fn = loss_fn
        self._int64_target = needs_int64_target(loss_fn)

    def forward(self, *inputs: Any) -> torch.Tensor:
        data, label = _split(inputs)
        if self._int64_target:
            label = class_index_target(label)
        return self.loss_fn(self.backbone(*data), label)

    def checkpoint_entries(self) -> dict[str, Any]:
        return network_entries(self.backbone)

    def load_checkpoint_entries(self, entries: Mapping[str, Any], strict_load: bool) -> tuple[list[str], list[str]]:
        return load_module_entries(self.backbone, entries, strict_load)


class TrainOneStepCell(nn.Module):
    """One optimization step per call; returns the detached loss.

    Args:
        network: the user's backbone.
        loss_fn: the loss; ``None`` means the backbone returns the loss itself.
        optimizer: a ``torch.optim.Optimizer`` over the backbone's parameters.
        autocast: a factory of the autocast context for mixed precision (``None``: full precision).
        grad_scaler: a ``torch.amp.GradScaler`` for float16 training, else ``None``.

    The returned loss is a 0-d tensor that is still on the device: reading it
    (``float(loss)``) is what synchronises with a GPU, so callbacks that do not
    read it on every step cost nothing.

    Saving it with :func:`nbcallback.save_checkpoint` stores the backbone's
    parameters under their own names (so the file loads into a fresh backbone)
    and the optimizer state under ``optimizer.*``.

    The step is ``zero_grad``, forward and loss, ``backward``, ``optimizer.step()``.
    Between ``backward`` and the optimizer step it calls :attr:`backward_end` when
    one is set (``Model`` sets it for a run whose callbacks implement
    :meth:`~nbcallback.train.Callback.on_train_backward_end`; see
    :meth:`set_backward_end`); without one the step is exactly the four operations.
    """

    def __init__(
        self,
        network: nn.Module,
        loss_fn: Callable[..., torch.Tensor] | None,
        optimizer: torch.optim.Optimizer,
        autocast: Callable[[], ContextManager[Any]] | None = None,
        grad_scaler: Any = None,
    ) -> None:
        super().__init__()
        self.network = network
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self._autocast = autocast
        self._scaler = grad_scaler
        self._int64_target = needs_int64_target(loss_fn)
        #: Called between backward and the optimizer step; returns whether to take the step. See set_backward_end.
        self.backward_end: Callable[[], bool] | None = None
        self._keep_grads = False

    def set_backward_end(self, hook: Callable[[], bool] | None) -> None:
        """Call ``hook()`` after each step's ``backward``, before the optimizer step (``None``: no hook).

        ``hook`` may change the gradients in place (they are unscaled first under
        float16 loss scaling). When it returns ``False`` the optimizer step is
        skipped and the gradients are kept: the next step does not zero them, so
        its backward adds to them. Setting a hook (or ``None``) starts with zeroed
        gradients again.
        """
        self.backward_end = hook
        self._keep_grads = False

    def forward(self, *inputs: Any) -> torch.Tensor:
        optimizer = self.optimizer
        if self._autocast is None:
            loss = self._loss(inputs)
        else:
            with self._autocast():
                loss = self._loss(inputs)
        if self.backward_end is not None:
            return self._step_with_hook(loss, self.backward_end)
        optimizer.zero_grad(set_to_none=True)
        if self._scaler is not None:
            self._scaler.scale(loss).backward()
            self._scaler.step(optimizer)
            self._scaler.update()
        else:
            loss.backward()
            optimizer.step()
        return loss.detach()

    def compute_loss(self, inputs: tuple[Any, ...]) -> torch.Tensor:
        """The loss of one batch (under autocast where mixed precision is on): what a step differentiates.

        Graph mode (:mod:`nbcallback.train.graph`) captures it with the backward and optimizer step.
        """
        if self._autocast is None:
            return self._loss(inputs)
        with self._autocast():
            return self._loss(inputs)

    def _step_with_hook(self, loss: torch.Tensor, backward_end: Callable[[], bool]) -> torch.Tensor:
        optimizer = self.optimizer
        scaler = self._scaler
        if not self._keep_grads:
            optimizer.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
        else:
            loss.backward()
        if not backward_end():
            if scaler is not None:
                raise RuntimeError(
                    "run_context.skip_optimizer_step() is not supported with float16 loss scaling (amp_level "
                    "'O1' on CUDA, or 'O2' on a GPU without bfloat16): the kept gradients would mix scaled and "
                    "unscaled values. Use amp_level='O0', or 'O2' on a GPU with bfloat16."
                )
            self._keep_grads = True
            return loss.detach()
        self._keep_grads = False
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        return loss.detach()

    def _loss(self, inputs: tuple[Any, ...]) -> torch.Tensor:
        loss_fn = self.loss_fn
        if loss_fn is None:
            return self.network(*inputs)
        data, label = _split(inputs)
        if self._int64_target and label.dtype is not torch.int64:
            label = class_index_target(label)
        return loss_fn(self.network(*data), label)

    def _parameter_names(self) -> dict[int, str]:
        return {id(p): name for name, p in self.network.named_parameters()}

    def checkpoint_entries(self) -> dict[str, Any]:
        entries = network_entries(self.network)
        entries.update(optimizer_entries(self.optimizer, self._parameter_names()))
        return entries

    def load_checkpoint_entries(self, entries: Mapping[str, Any], strict_load: bool) -> tuple[list[str], list[str]]:
        network_part = {k: v for k, v in entries.items() if not k.startswith("optimizer.")}
        not_loaded, unused = load_module_entries(self.network, network_part, strict_load)
        used = set(load_optimizer_entries(self.optimizer, self._parameter_names(), entries))
        unused += [k for k in entries if k.startswith("optimizer.") and k not in used]
        return not_loaded, unused


class WithEvalCell(nn.Module):
    """Returns ``(loss, outputs, label)`` for the metrics; the last input is the label.

    Args:
        network: the user's backbone.
        loss_fn: the loss (``None``: the loss slot is ``None``, ``'loss'`` metrics are unavailable).
        autocast: a factory of the autocast context for mixed precision.
    """

    def __init__(
        self,
        network: nn.Module,
        loss_fn: Callable[..., torch.Tensor] | None,
        autocast: Callable[[], ContextManager[Any]] | None = None,
    ) -> None:
        super().__init__()
        self.network = network
        self.loss_fn = loss_fn
        self._autocast = autocast or contextlib.nullcontext
        self._int64_target = needs_int64_target(loss_fn)

    def forward(self, *inputs: Any) -> tuple[torch.Tensor | None, torch.Tensor, Any]:
        data, label = _split(inputs)
        if self._int64_target:
            label = class_index_target(label)
        with self._autocast():
            outputs = self.network(*data)
            loss = None if self.loss_fn is None else self.loss_fn(outputs, label)
        return loss, outputs, label

    def without_loss(self, *inputs: Any) -> tuple[None, torch.Tensor, Any]:
        """``forward`` with the loss slot left ``None``: for passes where nothing reads the loss.

        ``Model.eval`` uses it when no metric and no step hook can see the loss
        (the default ``{'accuracy'}``): the loss is a tenth of a small model's
        evaluation time. :meth:`loss_of` fills it in afterwards where needed.
        """
        data, label = _split(inputs)
        if self._int64_target:
            label = class_index_target(label)
        with self._autocast():
            return None, self.network(*data), label

    def loss_of(self, outputs: torch.Tensor, label: Any) -> torch.Tensor | None:
        """The loss :meth:`forward` would have returned for these outputs and (prepared) label."""
        if self.loss_fn is None:
            return None
        with self._autocast():
            return self.loss_fn(outputs, label)

    def checkpoint_entries(self) -> dict[str, Any]:
        return network_entries(self.network)

    def load_checkpoint_entries(self, entries: Mapping[str, Any], strict_load: bool) -> tuple[list[str], list[str]]:
        return load_module_entries(self.network, entries, strict_load)
