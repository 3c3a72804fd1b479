"""General tensor transforms (``mindspore.dataset.transforms`` counterpart).

Every built-in op derives from :class:`TensorOperation`. An op has two entry
points that compute the same thing:

* ``op(x)`` on one sample, as in MindSpore: numpy in, numpy out; torch tensor
  in, torch tensor out;
* ``op._apply_column(column, owned)`` on a whole column ``(N, *sample_shape)``
  at once. :meth:`Dataset.map <nbcallback.dataset.Dataset.map>` uses this to
  transform all 60,000 MNIST images in a few vectorised passes and caches the
  result for every epoch, when the op is deterministic.

``op(x)`` is implemented as ``_apply_column(x[None])[0]`` so that both paths
share one implementation and give bit-identical results.

Every op says whether it draws random numbers, in its class attribute
``random``; :func:`is_cacheable` reads that, and it alone decides whether
``map`` may compute an op once and reuse the result every epoch.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, ClassVar, Mapping, Sequence, TypeVar

import numpy as np
import torch

from .._aliases import same_names
from .._tensor import numpy_to_tensor
from .._validate import check_int, check_real, type_error

__all__ = ["Compose", "OneHot", "TensorOperation", "TypeCast", "is_cacheable"]

# The MindSpore 1.x modules (``transforms.c_transforms``, ``transforms.py_transforms``): each name they had and
# the op it is here (``OneHotOp`` was 1.x's Python name of OneHot). Those modules are built from this table.
LEGACY_MODULES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "c_transforms": same_names("Compose", "OneHot", "TypeCast"),
        "py_transforms": {**same_names("Compose", "OneHot"), "OneHotOp": "OneHot"},
    }
)

_A = TypeVar("_A", np.ndarray, torch.Tensor)

# torch dtype -> the numpy dtype with the same memory layout (no bfloat16 in numpy).
_NUMPY_OF: Mapping[torch.dtype, np.dtype] = MappingProxyType(
    {
        torch.bool: np.dtype(np.bool_),
        torch.uint8: np.dtype(np.uint8),
        torch.int8: np.dtype(np.int8),
        torch.int16: np.dtype(np.int16),
        torch.int32: np.dtype(np.int32),
        torch.int64: np.dtype(np.int64),
        torch.uint16: np.dtype(np.uint16),
        torch.uint32: np.dtype(np.uint32),
        torch.uint64: np.dtype(np.uint64),
        torch.float16: np.dtype(np.float16),
        torch.float32: np.dtype(np.float32),
        torch.float64: np.dtype(np.float64),
        torch.complex64: np.dtype(np.complex64),
        torch.complex128: np.dtype(np.complex128),
    }
)
_TORCH_OF: Mapping[np.dtype, torch.dtype] = MappingProxyType({v: k for k, v in _NUMPY_OF.items()})
_CAST_TARGETS = frozenset(_NUMPY_OF) | {torch.bfloat16}


def empty_tensor(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """Allocate an uninitialised tensor of ``shape`` and ``dtype`` for a column result.

    Not ``np.empty``: numpy asks for transparent huge pages on large buffers,
    and with the kernel's default ``defrag=madvise`` the first touch of a
    large column can then stall on memory compaction.
    """
    return torch.empty(shape, dtype=dtype)


def _sample_to_tensor(data: Any, op_name: str) -> tuple[torch.Tensor, bool]:
    """Convert one sample to a tensor; returns ``(tensor, was_numpy)``.

    Anything that is not a torch tensor goes through ``np.asarray`` and comes
    back out as numpy, mirroring MindSpore's eager mode. ``op_name`` is used in
    the error for dtypes torch cannot hold (strings, objects).
    """
    if isinstance(data, torch.Tensor):
        return data, False
    tensor = numpy_to_tensor(data, contiguous=True)
    if tensor is None:
        array = np.asarray(data)
        raise TypeError(f"{op_name}: unsupported input of dtype {array.dtype} (shape {array.shape}).")
    return tensor, True


class TensorOperation:
    """Base class of the built-in dataset operations.

    Subclasses implement :meth:`_apply_column`, which must work row by row
    (``op._apply_column(c)[i]`` equals ``op(c[i])``); calling the op on one
    sample runs the same code on a column of length one.

    Every subclass says whether it is random in the class attribute
    ``random`` (inherited from a parent that says it):

    * ``random = False``: the op is deterministic, and ``map`` may transform
      the whole column once and reuse the result for every epoch;
    * ``random = True``: ``map`` runs it per sample, every epoch, so each
      sample and each epoch draws anew.

    A subclass that says neither raises TypeError when it is defined, so a
    random op cannot be cached for all epochs by mistake.
    """

    random: ClassVar[bool]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not isinstance(getattr(cls, "random", None), bool):
            raise TypeError(
                f"{cls.__name__} must say whether it is random: set the class attribute random = True (map runs "
                f"it per sample, every epoch) or random = False (deterministic: map may run it once on the whole "
                f"column and reuse the result every epoch)."
            )

    def _apply_column(self, column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
        """Transform a whole column.

        Args:
            column: Tensor of shape ``(N, *sample_shape)``.
            owned: True when no one else holds ``column``, so it may be
                overwritten in place (saves a 188 MB allocation on MNIST).

        Returns:
            ``(result, result_owned)``; ``result_owned`` is False when the
            result shares memory with a column the op did not own.
        """
        raise NotImplementedError

    def __call__(self, data: _A) -> _A:
        """Apply the op to one sample.

        Args:
            data: One image or value: a numpy array (or anything ``np.asarray``
                accepts) or a torch tensor. It is not modified.

        Returns:
            A new numpy array for non-tensor input, a new tensor for tensor input.
        """
        name = type(self).__name__
        tensor, was_numpy = _sample_to_tensor(data, name)
        result, _ = self._apply_column(tensor.unsqueeze(0), owned=False)
        result = result[0]
        if result.data_ptr() == tensor.data_ptr() and result.numel():
            result = result.clone()  # never hand back an alias of the caller's input
        if was_numpy:
            if result.dtype not in _NUMPY_OF:
                raise TypeError(f"{name}: {result.dtype} has no numpy equivalent; pass a torch tensor.")
            return result.numpy()  # type: ignore[return-value]
        return result  # type: ignore[return-value]

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({args})"


def is_cacheable(op: object) -> bool:
    """Whether ``map`` may run ``op`` once on a whole column and reuse the result for every epoch.

    Only a :class:`TensorOperation` that declares ``random = False`` is; any
    other callable (a random op, whatever its base class, or a Python
    function) runs per sample, every epoch.
    """
    return isinstance(op, TensorOperation) and type(op).random is False


def to_torch_dtype(data_type: Any, name: str = "data_type") -> torch.dtype:
    """Resolve a torch dtype, numpy dtype/scalar type or dtype name to a torch dtype.

    Args:
        data_type: ``torch.int64``, ``np.int32``, ``np.dtype("float32")``,
            ``"int16"``, ``bool``, ...
        name: Argument name used in error messages.

    Returns:
        The torch dtype.

    Raises:
        TypeError: ``data_type`` is not a dtype, or has no tensor equivalent.
    """
    allowed = (torch.dtype, np.dtype, str)
    if isinstance(data_type, torch.dtype):
        if data_type not in _CAST_TARGETS:
            raise TypeError(f"Argument {name} {data_type} is not a supported cast target.")
        return data_type
    if data_type is None or isinstance(data_type, (bool, int, float, np.generic)):
        raise type_error(name, data_type, allowed)
    try:
        np_dtype = np.dtype(data_type)
    except (TypeError, ValueError) as exc:
        error = type_error(name, data_type, allowed)
        if isinstance(data_type, str):  # MindSpore's wording, plus what is actually wrong
            error = TypeError(
                f"{error} {data_type!r} is not a known data type name; pass a torch dtype (torch.int32), "
                f"a numpy dtype (np.int32) or a dtype name such as 'int32'."
            )
        raise error from exc
    torch_dtype = _TORCH_OF.get(np_dtype)
    if torch_dtype is None:
        raise TypeError(f"Argument {name} {np_dtype} has no tensor equivalent and cannot be a cast target.")
    return torch_dtype


class TypeCast(TensorOperation):
    """Cast a column to another dtype (``mindspore.dataset.transforms.TypeCast``).

    The tutorial casts labels to ``mindspore.int32``; on PyTorch,
    ``TypeCast(torch.int64)`` gives what ``nn.CrossEntropyLoss`` expects.
    Casting follows ``Tensor.to``: floats to ints truncate toward zero.

    Args:
        data_type: Target type: a ``torch.dtype`` (``torch.int32``,
            ``torch.int64``, ``torch.float32``, ...), a numpy dtype or scalar
            type (``np.int32``), or a dtype name (``"int32"``). Python's
            ``int``/``float``/``bool`` classes are accepted as numpy does.

    Raises:
        TypeError: ``data_type`` is not a dtype or has no tensor equivalent.
    """

    random: ClassVar[bool] = False

    def __init__(self, data_type: Any) -> None:
        self._dtype = to_torch_dtype(data_type)
        self.data_type = data_type

    @property
    def dtype(self) -> torch.dtype:
        """The torch dtype the op casts to."""
        return self._dtype

    def _apply_column(self, column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
        if column.dtype == self._dtype:
            return column, owned
        out = empty_tensor(tuple(column.shape), self._dtype)
        out.copy_(column)
        return out, True


class OneHot(TensorOperation):
    """Encode integer labels as one-hot vectors (``mindspore.dataset.transforms.OneHot``).

    A scalar label becomes a vector of length ``num_classes``; a 1-D array of
    ``n`` labels becomes ``(n, num_classes)``. Size-1 axes of the input are
    dropped first, as MindSpore does (a label of shape ``(1,)`` is a scalar).
    The output keeps the input's integer dtype. With ``smoothing_rate`` ``s > 0``
    the output is float32 ``(1 - s) * one_hot + s / num_classes`` (label
    smoothing; the exact formula MindSpore's kernel uses was not checked).

    Args:
        num_classes: Number of classes, a positive int.
        smoothing_rate: Label smoothing amount in ``[0.0, 1.0]``. Default: 0.0.

    Raises:
        TypeError: ``num_classes`` is not an int, or ``smoothing_rate`` not a number.
        ValueError: ``num_classes`` is not positive, or ``smoothing_rate`` is
            outside ``[0.0, 1.0]``.

    Applying the op raises RuntimeError for non-integer labels, labels of rank
    above 1, or labels outside ``[0, num_classes)``.
    """

    random: ClassVar[bool] = False

    def __init__(self, num_classes: int, smoothing_rate: float = 0.0) -> None:
        if isinstance(smoothing_rate, (bool, np.bool_)) or not isinstance(smoothing_rate, (int, float)):
            raise type_error("smoothing_rate", smoothing_rate, (int, float))
        self._num_classes = check_int(num_classes, "num_classes", 1)
        self._smoothing = check_real(smoothing_rate, "smoothing_rate", 0.0, 1.0)
        self.num_classes = num_classes
        self.smoothing_rate = smoothing_rate

    def _apply_column(self, column: torch.Tensor, owned: bool) -> tuple[torch.Tensor, bool]:
        labels = column.reshape(column.shape[0], *[d for d in column.shape[1:] if d != 1])
        if labels.dim() > 2:
            raise RuntimeError(
                f"OneHot: OneHot only supports scalars or 1D input, got a label of shape {tuple(column.shape[1:])}."
            )
        if labels.dtype.is_floating_point or labels.dtype.is_complex or labels.dtype == torch.bool:
            raise RuntimeError(f"OneHot: OneHot does not support input of this type ({labels.dtype}); labels must be integers.")
        wide = labels.to(torch.int64)
        if wide.numel() and (int(wide.min()) < 0 or int(wide.max()) >= self._num_classes):
            raise RuntimeError(
                f"OneHot: OneHot index values are not in range [0, {self._num_classes}): got values from "
                f"{int(wide.min())} to {int(wide.max())}."
            )
        out = torch.nn.functional.one_hot(wide, self._num_classes)
        if self._smoothing > 0.0:
            rate = self._smoothing
            return out.to(torch.float32).mul_(1.0 - rate).add_(rate / self._num_classes), True
        return out.to(column.dtype), True


class Compose:
    """Several ops as one (``mindspore.dataset.transforms.Compose``).

    ``dataset.map(Compose([a, b]), ...)`` is the same as ``dataset.map([a, b], ...)``:
    ``map`` expands a ``Compose`` into its ops, so built-in ops inside it still run
    on whole columns. Called directly, it applies the ops in order to one sample.

    Args:
        transforms: The ops, applied in order; each a callable.

    Raises:
        TypeError: ``transforms`` is not a list or tuple, or holds something not callable.
        ValueError: ``transforms`` is empty.
    """

    def __init__(self, transforms: Sequence[Callable[..., Any]]) -> None:
        if not isinstance(transforms, (list, tuple)):
            raise type_error("transforms", transforms, (list, tuple))
        if not transforms:
            raise ValueError("Compose: transforms is empty; pass a list of at least one operation.")
        for i, op in enumerate(transforms):
            if not callable(op):
                raise TypeError(f"Compose: transforms[{i}] ({op!r}) is not callable; pass operations or functions.")
        self.transforms: tuple[Callable[..., Any], ...] = tuple(transforms)

    def __call__(self, *data: Any) -> Any:
        if not data:
            raise TypeError(
                "Compose was called without an image. Fix invocation (avoid it being invoked as Compose([...])())."
            )
        values = data
        for op in self.transforms:
            result = op(*values)
            values = result if isinstance(result, tuple) else (result,)
        return values[0] if len(values) == 1 else values

    def __repr__(self) -> str:
        return f"Compose({list(self.transforms)!r})"
