"""Image transforms (``mindspore.dataset.vision.transforms`` counterpart).

Images follow MindSpore's conventions: numpy arrays of shape ``<H, W, C>`` or
``<H, W>``, uint8 or float. Each op works on one image (``op(image)``, numpy
in/numpy out or tensor in/tensor out; a PIL image goes in as its numpy array,
except in :class:`Resize`, which resizes it with Pillow and returns a PIL image).

Every op declares in its class attribute ``random`` whether it draws random
numbers, and only that decides whether ``map`` caches it:

* Deterministic ops (Rescale, Normalize, HWC2CHW, Resize, CenterCrop, Pad,
  Grayscale, ToTensor; ``random = False``) derive from
  :class:`~nbcallback.dataset.transforms.TensorOperation`: ``dataset.map``
  runs them once on the whole column and caches the result, which is what
  makes a pipeline over MNIST cost a few vectorised passes.
* Random ops (RandomCrop, RandomHorizontalFlip, RandomVerticalFlip;
  ``random = True``) are never cached: ``map`` runs them per sample, every
  epoch, so each sample and each epoch draws anew. They draw from torch's
  global generator, so ``torch.manual_seed`` (or
  ``nbcallback.dataset.config.set_seed``) makes them reproducible.
* Decode (whose output size depends on the bytes) is a plain callable, run
  per sample.

Arithmetic is done in float32, like MindSpore's kernels.
"""
from __future__ import annotations

import io
import sys
from types import MappingProxyType
from typing import Any, ClassVar, Mapping, Sequence, TypeVar

import numpy as np
import torch

from .._aliases import same_names
from .._tensor import numpy_to_tensor
from .._validate import check_bool, check_real, type_error
from ..transforms.transforms import TensorOperation, empty_tensor, to_torch_dtype
from . import _functional as fn
from .utils import Border, Inter
from .validators import check_enum, check_fill_value, check_padding, check_prob, check_size

__all__ = [
    "Border",
    "CenterCrop",
    "Decode",
    "Grayscale",
    "HWC2CHW",
    "Inter",
    "Normalize",
    "Pad",
    "RandomCrop",
    "RandomHorizontalFlip",
    "RandomVerticalFlip",
    "Rescale",
    "Resize",
    "ToTensor",
]

# The MindSpore 1.x modules (``vision.c_transforms``, ``vision.py_transforms``) and the names each had:
# those modules are built from this table. An op with no 1.x counterpart needs no entry here.
LEGACY_MODULES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "c_transforms": same_names(
            "Border", "CenterCrop", "Decode", "HWC2CHW", "Inter", "Normalize", "Pad", "RandomCrop",
            "RandomHorizontalFlip", "RandomVerticalFlip", "Rescale", "Resize",
        ),
        "py_transforms": same_names(
            "Border", "CenterCrop", "Decode", "Grayscale", "HWC2CHW", "Inter", "Normalize", "Pad", "RandomCrop",
            "RandomHorizontalFlip", "RandomVerticalFlip", "Resize", "ToTensor",
        ),
    }
)

_A = TypeVar("_A", np.ndarray, torch.Tensor)


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

    random: ClassVar[bool] = False

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

    random: ClassVar[bool] = False

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

    random: ClassVar[bool] = False

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


# --------------------------------------------------------------------------- helpers


def _is_pil(data: Any) -> bool:
    """True when ``data`` is a PIL image (without importing Pillow when no one has)."""
    image_module = sys.modules.get("PIL.Image")
    return image_module is not None and isinstance(data, image_module.Image)


def _pillow(op_name: str) -> Any:
    """Import ``PIL.Image`` or explain how to get it."""
    try:
        from PIL import Image
    except ModuleNotFoundError as exc:  # pragma: no cover - Pillow comes with matplotlib
        raise ModuleNotFoundError(
            f"{op_name} needs Pillow to read JPEG/PNG images: install it with `pip install pillow`."
        ) from exc
    return Image


def _sample(data: Any, op_name: str) -> tuple[torch.Tensor, bool]:
    """One image as a tensor; returns ``(tensor, was_tensor)``. PIL images go through numpy."""
    if isinstance(data, torch.Tensor):
        return data, True
    array = np.asarray(data)
    tensor = numpy_to_tensor(array, contiguous=True) if array.dtype.kind in "biuf" else None
    if tensor is None:
        raise TypeError(f"{op_name}: unsupported input of dtype {array.dtype} (shape {array.shape}).")
    return tensor, False


class _RandomOperation:
    """Base of the random ops: plain callables, one fresh draw per call.

    They declare ``random = True``, so ``map`` runs them per sample and every
    epoch and never caches them (see
    :func:`~nbcallback.dataset.transforms.is_cacheable`). Several images
    passed in one call (``op(image, mask)``) get the same draw.
    """

    random: ClassVar[bool] = True

    def _apply(self, images: list[torch.Tensor]) -> list[torch.Tensor]:
        raise NotImplementedError

    def __call__(self, *images: Any) -> Any:
        """Apply the op to one image, or to several images with one random draw.

        Args:
            *images: Images of shape ``<H, W>`` or ``<H, W, C>``: numpy arrays
                (or anything ``np.asarray`` accepts, PIL images included) or
                torch tensors. They are not modified.

        Returns:
            The new image (numpy for non-tensor input, a tensor for tensor
            input), or a tuple of them for several inputs.
        """
        name = type(self).__name__
        if not images:
            raise TypeError(f"{name}: pass at least one image.")
        samples = [_sample(image, name) for image in images]
        tensors = [tensor for tensor, _ in samples]
        for tensor in tensors:
            if tensor.dim() not in (2, 3):
                raise RuntimeError(
                    f"{name}: expected an image of shape <H, W> or <H, W, C>, got shape {tuple(tensor.shape)}."
                )
        if len({tuple(t.shape[:2]) for t in tensors}) > 1:
            raise RuntimeError(
                f"{name}: the images of one call must share their height and width, got shapes "
                f"{[tuple(t.shape) for t in tensors]}."
            )
        results = []
        for (source, was_tensor), result in zip(samples, self._apply(tensors)):
            if result.numel() and result.data_ptr() == source.data_ptr():
                result = result.clone()  # never hand back an alias of the caller's input
            results.append(result if was_tensor else result.numpy())
        return results[0] if len(results) == 1 else tuple(results)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({args})"


def _draw_int(high: int) -> int:
    """A uniform int in ``[0, high]`` from torch's global generator."""
    return int(torch.randint(0, high + 1, ()).item())


def _draw_unit() -> float:
    """A uniform float in ``[0, 1)`` from torch's global generator."""
    return float(torch.rand(()).item())


# --------------------------------------------------------------------------- geometry


class Resize(TensorOperation):
    """Resize an image to a size, with an interpolation mode (``mindspore.dataset.vision.Resize``).

    Output size as MindSpore: an int ``size`` makes the shorter side ``size``
    and scales the other to ``floor(longer * size / shorter)`` (computed in
    float32); ``(h, w)`` gives exactly ``h x w``. An image already of that
    size is returned unchanged. The dtype is kept (integers are rounded half
    to even and saturated).

    Pixel values come from PyTorch, not OpenCV; see :class:`Inter` for each
    mode and where values can differ from MindSpore's by one grey level.
    A PIL image is resized with Pillow's own filters and comes back as a PIL
    image, as in MindSpore (``ANTIALIAS`` works only there).

    Args:
        size: An int in ``[1, 16777216]`` or a list/tuple ``(h, w)`` of ints
            in ``[1, 2147483647]``.
        interpolation: An :class:`Inter` mode. Default: ``Inter.LINEAR``.

    Raises:
        TypeError: ``size`` or ``interpolation`` has the wrong type.
        ValueError: A size is out of range.
        KeyError: ``interpolation`` is None (MindSpore's exception).

    Applying the op raises RuntimeError for images that are not
    ``<H, W>``/``<H, W, C>``, and TypeError for ``Inter.ANTIALIAS`` on a
    numpy image or ``Inter.AREA``/``Inter.PILCUBIC`` on a PIL image.
    """

    random: ClassVar[bool] = False

    def __init__(self, size: int | Sequence[int], interpolation: Inter = Inter.LINEAR) -> None:
        if interpolation is None:
            raise KeyError("Interpolation should not be None; pass an Inter mode such as Inter.LINEAR.")
        self._size = check_size(size, resize=True)
        check_enum(interpolation, Inter, "interpolation")
        self.size = size
        self.interpolation = interpolation

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        """The ``(height, width)`` an image of ``height x width`` is resized to."""
        if len(self._size) == 2:
            return self._size[0], self._size[1]
        short = np.float32(self._size[0])
        if height < width:
            return self._size[0], int(np.floor(np.float32(width) / np.float32(height) * short))
        return int(np.floor(np.float32(height) / np.float32(width) * short)), self._size[0]

    def _apply_column(self, column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
        fn.check_image_column(column, "Resize")
        if self.interpolation == Inter.ANTIALIAS:
            raise TypeError(
                "Current Interpolation is not supported with NumPy input: Inter.ANTIALIAS needs a PIL image "
                "(use Inter.PILCUBIC or Inter.AREA for numpy images)."
            )
        height, width = int(column.shape[1]), int(column.shape[2])
        if height == 0 or width == 0:
            raise RuntimeError(f"Resize: the input image has an empty side (shape {tuple(column.shape[1:])}).")
        out_h, out_w = self.output_size(height, width)
        if (out_h, out_w) == (height, width):
            return column, owned
        return fn.resize(column, out_h, out_w, self.interpolation), True

    def __call__(self, data: _A) -> _A:
        if _is_pil(data):
            return self._resize_pil(data)
        return super().__call__(data)

    def _resize_pil(self, image: Any) -> Any:
        Image = _pillow("Resize")
        filters = {
            Inter.NEAREST: Image.Resampling.NEAREST,
            Inter.ANTIALIAS: Image.Resampling.LANCZOS,
            Inter.LINEAR: Image.Resampling.BILINEAR,
            Inter.CUBIC: Image.Resampling.BICUBIC,
        }
        if self.interpolation not in filters:
            raise TypeError(
                f"Current Interpolation is not supported with PIL input: {self.interpolation!r} works on numpy "
                "images only."
            )
        width, height = image.size
        if len(self._size) == 2:
            out_h, out_w = self._size
        elif width <= height:
            out_w, out_h = self._size[0], int(self._size[0] * height / width)
        else:
            out_h, out_w = self._size[0], int(self._size[0] * width / height)
        return image.resize((out_w, out_h), filters[self.interpolation])


class CenterCrop(TensorOperation):
    """Crop the centre of an image (``mindspore.dataset.vision.CenterCrop``).

    The window starts at ``((H - h) // 2, (W - w) // 2)``. An image smaller than
    the crop is first zero-padded (the odd pixel going to the top/left), as
    MindSpore's kernel does; padding of three times the image size or more is
    refused. (1.x's Pillow-based ``py_transforms.CenterCrop`` rounded the
    offset instead, which differs by one pixel when ``H - h`` is odd.)

    Args:
        size: An int (a square crop) or a list/tuple ``(h, w)``, each in
            ``[1, 16777216]``.

    Raises:
        TypeError: ``size`` has the wrong type.
        ValueError: A size is out of range.
    """

    random: ClassVar[bool] = False

    def __init__(self, size: int | Sequence[int]) -> None:
        checked = check_size(size)
        self._crop = (checked[0], checked[-1])
        self.size = size

    def _apply_column(self, column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
        fn.check_image_column(column, "CenterCrop")
        crop_h, crop_w = self._crop
        height, width = int(column.shape[1]), int(column.shape[2])
        pad_h, pad_w = max(crop_h - height, 0), max(crop_w - width, 0)
        if pad_h >= 3 * height or pad_w >= 3 * width:
            raise RuntimeError(
                f"CenterCrop: Padding size cannot be more than 3 times of the original image size, got top padding: "
                f"{crop_h - height}, left padding: {crop_w - width}, while the original image size: {height}, {width}."
            )
        if pad_h or pad_w:
            padding = ((pad_w + 1) // 2, (pad_h + 1) // 2, pad_w // 2, pad_h // 2)
            column, owned = fn.pad(column, padding, Border.CONSTANT, (0, 0, 0)), True
            height, width = int(column.shape[1]), int(column.shape[2])
        if (height, width) == (crop_h, crop_w):
            return column, owned
        return fn.crop(column, (height - crop_h) // 2, (width - crop_w) // 2, crop_h, crop_w), True


class Pad(TensorOperation):
    """Pad the borders of an image (``mindspore.dataset.vision.Pad``).

    Args:
        padding: Pixels to add: an int for every side, ``(a, b)`` for
            left/right ``a`` and top/bottom ``b``, or ``(left, top, right,
            bottom)``; each in ``[0, 2147483647]``.
        fill_value: Border value for ``Border.CONSTANT``: an int in ``[0, 255]``
            or an ``(R, G, B)`` tuple (channel ``c`` gets ``fill_value[c]``; a
            ``<H, W>`` image gets ``fill_value[0]``). Default: 0.
        padding_mode: A :class:`Border` mode. Default: ``Border.CONSTANT``.

    Raises:
        TypeError: An argument has the wrong type.
        ValueError: ``padding`` has a length other than 2 or 4, or a value is
            out of range.
    """

    random: ClassVar[bool] = False

    def __init__(
        self,
        padding: int | Sequence[int],
        fill_value: int | tuple[int, int, int] = 0,
        padding_mode: Border = Border.CONSTANT,
    ) -> None:
        self._padding = check_padding(padding)
        self._fill = check_fill_value(fill_value)
        check_enum(padding_mode, Border, "padding_mode")
        self.padding = padding
        self.fill_value = fill_value
        self.padding_mode = padding_mode

    def _apply_column(self, column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
        fn.check_image_column(column, "Pad")
        return fn.pad(column, self._padding, self.padding_mode, self._fill), True


class RandomCrop(_RandomOperation):
    """Crop a random window of an image (``mindspore.dataset.vision.RandomCrop``).

    Steps, as MindSpore's kernel: pad by ``padding``; if ``pad_if_needed`` and
    the image is still smaller than the crop, pad the short side by the
    missing amount on *both* ends (MindSpore's behaviour); then cut a
    ``size`` window at a uniformly drawn offset. The offset is drawn from
    torch's global generator at every call.

    Args:
        size: Crop size: an int (square) or a list/tuple ``(h, w)``, each in
            ``[1, 16777216]``.
        padding: Optional padding, in :class:`Pad`'s forms. Default: None.
        pad_if_needed: Pad images smaller than ``size``. Default: False.
        fill_value: Border value for ``Border.CONSTANT`` (see :class:`Pad`). Default: 0.
        padding_mode: A :class:`Border` mode. Default: ``Border.CONSTANT``.

    Raises:
        TypeError: An argument has the wrong type.
        ValueError: An argument is out of range.

    Applying the op raises RuntimeError when the (padded) image is smaller
    than ``size``, or ``padding`` is three times the image size or more.
    """

    def __init__(
        self,
        size: int | Sequence[int],
        padding: int | Sequence[int] | None = None,
        pad_if_needed: bool = False,
        fill_value: int | tuple[int, int, int] = 0,
        padding_mode: Border = Border.CONSTANT,
    ) -> None:
        checked = check_size(size)
        self._crop = (checked[0], checked[-1])
        check_bool(pad_if_needed, "pad_if_needed")
        self._padding = (0, 0, 0, 0) if padding is None else check_padding(padding)
        self._fill = check_fill_value(fill_value)
        check_enum(padding_mode, Border, "padding_mode")
        self.size = size
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill_value = fill_value
        self.padding_mode = padding_mode

    def _pad(self, image: torch.Tensor, padding: tuple[int, int, int, int]) -> torch.Tensor:
        if not any(padding):
            return image
        return fn.pad(image.unsqueeze(0), padding, self.padding_mode, self._fill)[0]

    def _apply(self, images: list[torch.Tensor]) -> list[torch.Tensor]:
        crop_h, crop_w = self._crop
        height, width = int(images[0].shape[0]), int(images[0].shape[1])
        left, top, right, bottom = self._padding
        if max(top, bottom) >= 3 * height or max(left, right) >= 3 * width:
            raise RuntimeError(
                f"RandomCrop: padding size is three times bigger than the image size, padding (left, top, right, "
                f"bottom): {self._padding}, image shape: {height}, {width}."
            )
        padded = [self._pad(image, self._padding) for image in images]
        height, width = int(padded[0].shape[0]), int(padded[0].shape[1])
        if (height, width) == (crop_h, crop_w):
            return padded
        if self.pad_if_needed:
            grow_h, grow_w = max(crop_h - height, 0), max(crop_w - width, 0)
            padded = [self._pad(image, (grow_w, grow_h, grow_w, grow_h)) for image in padded]
            height, width = int(padded[0].shape[0]), int(padded[0].shape[1])
        if height < crop_h or width < crop_w:
            raise RuntimeError(
                f"RandomCrop: invalid crop size, crop size is bigger than the image dimensions, got crop height: "
                f"{crop_h}, crop width: {crop_w} for an image of {height} x {width} (after padding); "
                "set pad_if_needed=True or a smaller size."
            )
        x = _draw_int(width - crop_w)
        y = _draw_int(height - crop_h)
        return [image[y : y + crop_h, x : x + crop_w].contiguous() for image in padded]


class _RandomFlip(_RandomOperation):
    """Flip an image along ``_AXIS`` with probability ``prob``: one uniform draw per call."""

    _AXIS: int

    def __init__(self, prob: float = 0.5) -> None:
        self._prob = check_prob(prob)
        self.prob = prob

    def _apply(self, images: list[torch.Tensor]) -> list[torch.Tensor]:
        if _draw_unit() < self._prob:
            return [image.flip(self._AXIS) for image in images]
        return images


class RandomHorizontalFlip(_RandomFlip):
    """Flip an image left-right with probability ``prob`` (``mindspore.dataset.vision.RandomHorizontalFlip``).

    One uniform number is drawn from torch's global generator per call.

    Args:
        prob: Probability of flipping, in ``[0, 1]``. Default: 0.5.

    Raises:
        TypeError: ``prob`` is not a number.
        ValueError: ``prob`` is outside ``[0, 1]``.
    """

    _AXIS = 1


class RandomVerticalFlip(_RandomFlip):
    """Flip an image upside down with probability ``prob`` (``mindspore.dataset.vision.RandomVerticalFlip``).

    One uniform number is drawn from torch's global generator per call.

    Args:
        prob: Probability of flipping, in ``[0, 1]``. Default: 0.5.

    Raises:
        TypeError: ``prob`` is not a number.
        ValueError: ``prob`` is outside ``[0, 1]``.
    """

    _AXIS = 0


# --------------------------------------------------------------------------- conversion


class Decode:
    """Decode JPEG/PNG/BMP/... bytes into an RGB image (``mindspore.dataset.vision.Decode``).

    Runs per sample (the output size depends on the bytes). Decoding uses
    Pillow, whose JPEG decoder can differ from MindSpore's (libjpeg-turbo via
    OpenCV) by a grey level on some pixels; PNG is lossless and identical.
    Gray or palette images come out as 3-channel RGB, as in MindSpore.

    Args:
        to_pil: Return a PIL image instead of a ``<H, W, 3>`` uint8 array.
            Default: False.

    Raises:
        TypeError: ``to_pil`` is not a bool.

    Calling it raises TypeError when the input is not ``bytes`` or a 1-D
    numpy array of bytes, and RuntimeError when the bytes are not an image.
    """

    random: ClassVar[bool] = False

    def __init__(self, to_pil: bool = False) -> None:
        self.to_pil = check_bool(to_pil, "to_pil")

    def __call__(self, img: Any) -> Any:
        if isinstance(img, (bytes, bytearray)):
            img = np.frombuffer(img, dtype=np.uint8)
        elif isinstance(img, torch.Tensor):
            img = img.numpy()
        if not isinstance(img, np.ndarray):
            raise TypeError(f"The type of the encoded image should be {np.ndarray}, but got {type(img)}.")
        if img.dtype.type is np.str_:
            raise TypeError(f"The data type of the encoded image can not be {img.dtype.type}.")
        if img.ndim != 1:
            raise TypeError(f"The number of array dimensions of the encoded image should be 1, but got {img.ndim}.")
        Image = _pillow("Decode")
        try:
            with Image.open(io.BytesIO(img.tobytes())) as encoded:
                rgb = encoded.convert("RGB")
        except (OSError, ValueError, SyntaxError) as exc:
            raise RuntimeError(
                f"Decode: image decode failed: the {img.size} bytes are not a JPEG, PNG, BMP, TIFF, GIF or WEBP "
                "image (or the image is already decoded)."
            ) from exc
        return rgb if self.to_pil else np.array(rgb)

    def __repr__(self) -> str:
        return f"Decode(to_pil={self.to_pil!r})"


class Grayscale(TensorOperation):
    """Convert an RGB image to grayscale (``mindspore.dataset.vision.Grayscale``).

    Luma ``L = 0.299 R + 0.587 G + 0.114 B``; uint8 images use Pillow's
    integer formula, so the result equals ``PIL.Image.convert("L")``.
    MindSpore's Grayscale takes only PIL images; nbcallback also takes numpy
    ``<H, W, 3>`` (or RGBA, alpha ignored) arrays and returns what
    ``np.asarray`` of MindSpore's result would be: ``<H, W>`` for one output
    channel, ``<H, W, 3>`` (three equal channels) for three. A PIL image goes
    in as its array and the result is a numpy array.

    Args:
        num_output_channels: 1 or 3. Default: 1.

    Raises:
        TypeError: ``num_output_channels`` is not an int.
        ValueError: ``num_output_channels`` is not 1 or 3.
    """

    random: ClassVar[bool] = False

    def __init__(self, num_output_channels: int = 1) -> None:
        if isinstance(num_output_channels, (bool, np.bool_)) or not isinstance(num_output_channels, (int, np.integer)):
            raise type_error("num_output_channels", num_output_channels, (int,))
        if num_output_channels not in (1, 3):
            raise ValueError(
                f"Number of channels of the output grayscale image should be either 1 or 3. Got {num_output_channels}."
            )
        self.num_output_channels = int(num_output_channels)

    def _apply_column(self, column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
        fn.check_image_column(column, "Grayscale")
        return fn.grayscale(column, self.num_output_channels, "Grayscale"), True


class ToTensor(TensorOperation):
    """``<H, W, C>`` image in ``[0, 255]`` to ``<C, H, W>`` in ``[0, 1]`` (``mindspore.dataset.vision.ToTensor``).

    Divides by 255 whatever the input dtype (as MindSpore does) and casts to
    ``output_type``; a ``<H, W>`` image becomes ``<1, H, W>``. Same as 1.x's
    ``py_transforms.ToTensor``, except that a PIL image goes in as its array.

    Args:
        output_type: Output dtype: a numpy dtype or scalar type, a dtype name,
            or a torch dtype. Default: ``np.float32``.

    Raises:
        TypeError: ``output_type`` is not a dtype.

    Applying the op raises RuntimeError for images that are not ``<H, W>``
    or ``<H, W, C>``, and for uint32, int64, uint64 or string images (as
    MindSpore's kernel).
    """

    random: ClassVar[bool] = False

    def __init__(self, output_type: Any = np.float32) -> None:
        self._dtype = to_torch_dtype(output_type, "output_type")
        self.output_type = output_type

    def _apply_column(self, column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
        fn.check_image_column(column, "ToTensor", allow_bool=True)
        if column.dtype in _TO_TENSOR_REFUSED:
            raise RuntimeError(_TO_TENSOR_DTYPE_ERROR + f" Got {column.dtype}.")
        return fn.to_tensor(column, self._dtype), True

    def __call__(self, data: _A) -> _A:
        if isinstance(data, np.ndarray) and data.dtype.kind in "USO":
            raise RuntimeError(_TO_TENSOR_DTYPE_ERROR + f" Got {data.dtype}.")
        return super().__call__(data)


# MindSpore's ToTensor kernel refuses these input types.
_TO_TENSOR_REFUSED = frozenset({torch.uint32, torch.int64, torch.uint64})
_TO_TENSOR_DTYPE_ERROR = "ToTensor: Input includes unsupported data type in [uint32, int64, uint64, string]."
