"""Batches copied to the training device one batch ahead, so the GPU does not wait for the host.

``Model(..., prefetch=True)`` wraps each epoch's batches in
:func:`prefetch_to_device` (off by default: see ``Model``'s ``prefetch``). While step *k*
runs on the GPU, batch *k + 1* is already on its way: its CPU tensors are put
in pinned (page-locked) memory and copied with ``non_blocking=True`` on a side
CUDA stream; the training stream waits for that copy only when it uses the
batch. A batch that is already on the device passes through untouched, and an
epoch whose first batch has no CPU tensor is not wrapped at all.

On a device other than CUDA (``meta`` in the tests) the same one-ahead order
applies with plain copies: no stream, no pinned memory.

The cost of reading one batch ahead: the source yields batch *k + 1* before
step *k*'s callbacks run, so a callback that changes the pipeline takes effect
one batch later, and a run stopped after step *k* has drawn one batch more
from its source than it trained on.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

import torch

__all__ = ["prefetch_to_device", "has_host_tensor"]


def _map_tensors(batch: Any, move: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """``batch`` with ``move`` applied to its tensors (a tensor, or a tuple/list of tensors and others)."""
    if isinstance(batch, torch.Tensor):
        return move(batch)
    if isinstance(batch, (tuple, list)):
        return type(batch)(move(item) if isinstance(item, torch.Tensor) else item for item in batch)
    return batch


def has_host_tensor(batch: Any) -> bool:
    """Whether ``batch`` holds a CPU tensor (something to copy to the device)."""
    if isinstance(batch, torch.Tensor):
        return batch.device.type == "cpu"
    if isinstance(batch, (tuple, list)):
        return any(isinstance(item, torch.Tensor) and item.device.type == "cpu" for item in batch)
    return False


class _CudaCopier:
    """Copies on a side stream from pinned memory; hands batches over to the current stream."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.side = torch.cuda.Stream(device)
        self.main = torch.cuda.current_stream(device)

    def _move(self, tensor: torch.Tensor) -> torch.Tensor:
        if tensor.device.type != "cpu":
            return tensor
        return tensor.pin_memory().to(self.device, non_blocking=True)

    def start(self, batch: Any) -> Any:
        """Begin copying ``batch`` on the side stream (it runs beside the training stream's kernels)."""
        with torch.cuda.stream(self.side):
            return _map_tensors(batch, self._move)

    def hand_over(self, batch: Any) -> Any:
        """Make the training stream wait for ``batch``'s copy and own its memory from now on."""
        self.main.wait_stream(self.side)

        def own(tensor: torch.Tensor) -> torch.Tensor:
            if tensor.device.type == "cuda":
                tensor.record_stream(self.main)
            return tensor

        return _map_tensors(batch, own)


class _PlainCopier:
    """One-ahead copies without streams (devices other than CUDA)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def _move(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.to(self.device) if tensor.device.type == "cpu" else tensor

    def start(self, batch: Any) -> Any:
        return _map_tensors(batch, self._move)

    def hand_over(self, batch: Any) -> Any:
        return batch


def prefetch_to_device(batches: Iterable[Any], device: torch.device) -> Iterator[Any]:
    """Yield ``batches`` on ``device``, each copy started one batch ahead.

    Args:
        batches: an iterator (or iterable) of batches: tensors, or tuples/lists
            of tensors and other values; other batches pass through as they are.
        device: where the batches go. On CUDA the copies come from pinned
            memory on a side stream; elsewhere they are plain ``.to(device)``.

    An epoch whose first batch holds no CPU tensor (a dataset already on the
    device) is yielded as it is, with no stream work per step.
    """
    iterator = iter(batches)
    try:
        first = next(iterator)
    except StopIteration:
        return
    if not has_host_tensor(first):
        yield first
        yield from iterator
        return
    copier = _CudaCopier(device) if device.type == "cuda" else _PlainCopier(device)
    pending = copier.start(first)
    for batch in iterator:
        ready = copier.hand_over(pending)
        pending = copier.start(batch)
        yield ready
    yield copier.hand_over(pending)
