"""General tensor transforms (``mindspore.dataset.transforms`` counterpart).

The ops are defined once in :mod:`.transforms` (MindSpore 2.x's
``mindspore.dataset.transforms.transforms``); the 1.x module paths
``transforms.c_transforms`` and ``transforms.py_transforms`` alias the same
classes, so ``from nbcallback.dataset.transforms.c_transforms import OneHot``
and ``from nbcallback.dataset.transforms import OneHot`` give one class.
"""
from __future__ import annotations

from .transforms import Compose, OneHot, TensorOperation, TypeCast, empty_tensor, is_cacheable, to_torch_dtype

__all__ = ["Compose", "OneHot", "TensorOperation", "TypeCast", "empty_tensor", "is_cacheable", "to_torch_dtype"]
