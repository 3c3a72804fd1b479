"""Image transforms (``mindspore.dataset.vision`` counterpart).

Each op works on one image (``op(image)``, numpy in/numpy out or tensor
in/tensor out) and, through :class:`~nbcallback.dataset.transforms.TensorOperation`,
on a whole column of images at once; the column path is what makes
``dataset.map(ops, 'image')`` cost a few vectorised passes over MNIST.
Arithmetic is done in float32, like MindSpore's kernels.
"""
from __future__ import annotations

from typing import Sequence

import torch

from ._validate import check_bool, check_real, type_error
from .transforms import TensorOperation, empty_tensor

__all__ = ["Rescale", "Normalize", "HWC2CHW"]


def _float32_copy(column: torch.Tensor, owned: bool) -> torch.Tensor:
    """A float32 column that may be written in place: ``column`` itself when possible."""
    if owned and column.dtype == torch.float32 and column.is_contiguous():
        return column
    out = empty_tensor(tuple(column.shape), torch.float32)
    out.copy_(column)
    return out


class Rescale(TensorOperation):
    """Rescale pixel values: ``output = image * rescale + shift``, as float32.

    The tutorial uses ``Rescale(1.0 / 255.0, 0)`` to bring uint8 pixels into
    ``[0, 1]``.

    Args:
        rescale: Scale factor; an int or float within float32 range.
        shift: Value added after scaling; an int or float within float32 range.

    Raises:
        TypeError: An argument is not a number (bools are refused).
        ValueError: An argument is outside float32 range, or NaN.
    """

    def __init__(self, rescale: float, shift: float) -> None:
        self._rescale = check_real(rescale, "rescale")
        self._shift = check_real(shift, "shift")
        self.rescale = rescale
        self.shift = shift

    def _apply_column(self, column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
        out = _float32_copy(column, owned)
        if self._rescale != 1.0:
            out.mul_(self._rescale)
        if self._shift != 0.0:
            out.add_(self._shift)
        return out, True


class Normalize(TensorOperation):
    """Normalise each channel: ``output[..., c] = (image[..., c] - mean[c]) / std[c]``, as float32.

    Args:
        mean: Per-channel means, a list or tuple of numbers in ``[0, 255]``.
        std: Per-channel standard deviations, a list or tuple of numbers in
            ``(0, 255]``, as many as ``mean``.
        is_hwc: True for images laid out ``<H, W, C>`` (the channel is the
            last axis), False for ``<C, H, W>``. Images of shape ``<H, W>``
            count as one channel either way.

    Raises:
        TypeError: ``mean``/``std`` are not lists/tuples of numbers, or
            ``is_hwc`` is not a bool.
        ValueError: ``mean`` and ``std`` are empty, differ in length, or hold
            values out of range.

    Applying the op raises RuntimeError when the image has fewer than two
    dimensions or its channel count differs from ``len(mean)``.
    """

    def __init__(self, mean: Sequence[float], std: Sequence[float], is_hwc: bool = True) -> None:
        for name, values in (("mean", mean), ("std", std)):
            if not isinstance(values, (list, tuple)):
                raise type_error(name, values, (list, tuple))
            if not values:
                raise ValueError(f"Input {name} must hold at least one value, but got {values!r}.")
        if len(mean) != len(std):
            raise ValueError(
                f"Length of mean and std must be equal, but got len(mean)={len(mean)} "
                f"and len(std)={len(std)}."
            )
        self._mean = [check_real(m, f"mean[{i}]", 0.0, 255.0) for i, m in enumerate(mean)]
        self._std = [check_real(s, f"std[{i}]", 0.0, 255.0, low_open=True) for i, s in enumerate(std)]
        self._is_hwc = check_bool(is_hwc, "is_hwc")
        self.mean = mean
        self.std = std
        self.is_hwc = is_hwc

    def _apply_column(self, column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
        sample_shape = tuple(column.shape[1:])
        channels = len(self._mean)
        if len(sample_shape) < 2:
            raise RuntimeError(
                f"Normalize: expected an image of shape <H, W> or <..., H, W, C>, got shape {sample_shape}."
            )
        if len(sample_shape) == 2:
            have, axis = 1, None
        else:
            axis = -1 if self._is_hwc else -3
            have = sample_shape[axis]
        if have != channels:
            layout = "<H, W>" if axis is None else ("HWC" if self._is_hwc else "CHW")
            raise RuntimeError(
                f"Normalize: the image (shape {sample_shape}, {layout}) has {have} channel(s) but "
                f"mean and std have {channels} value(s)."
            )
        out = _float32_copy(column, owned)
        if channels == 1:
            out.sub_(self._mean[0]).div_(self._std[0])
        else:
            bshape = (channels,) if axis == -1 else (channels, 1, 1)
            out.sub_(torch.tensor(self._mean, dtype=torch.float32).reshape(bshape))
            out.div_(torch.tensor(self._std, dtype=torch.float32).reshape(bshape))
        return out, True


class HWC2CHW(TensorOperation):
    """Transpose an image from ``<H, W, C>`` to ``<C, H, W>`` (what ``nn.Conv2d`` expects).

    An image of shape ``<H, W>`` passes unchanged; any other rank raises
    RuntimeError when the op is applied. On a column this is one
    ``(N, H, W, C) -> (N, C, H, W)`` transpose, free when ``C == 1``.
    """

    def __init__(self) -> None:
        pass

    def _apply_column(self, column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
        rank = column.dim() - 1
        if rank == 2:
            return column, owned
        if rank != 3:
            raise RuntimeError(
                f"HWC2CHW: expected an image of shape <H, W> or <H, W, C>, got shape "
                f"{tuple(column.shape[1:])} (rank {rank})."
            )
        view = column.permute(0, 3, 1, 2)
        if view.is_contiguous():
            return view, owned
        out = empty_tensor(tuple(view.shape), column.dtype)
        out.copy_(view)
        return out, True
