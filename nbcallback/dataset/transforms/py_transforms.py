"""MindSpore 1.x path ``mindspore.dataset.transforms.py_transforms``: aliases.

1.x's Python ``Compose`` and ``OneHotOp`` map onto the one definition each in
:mod:`.transforms`. ``OneHotOp(num_classes, smoothing_rate=0.0)`` is
:class:`~nbcallback.dataset.transforms.OneHot` under its 1.x name (1.x's
``OneHotOp`` returned float labels; here the output keeps the integer dtype
unless ``smoothing_rate > 0``). 1.x's ``py_transforms.ToTensor`` lives in
``nbcallback.dataset.vision.py_transforms``, as it did in MindSpore.
"""
from __future__ import annotations

from .. import _aliases
from . import transforms as _ops

__all__ = _aliases.export(globals(), _ops, "py_transforms")
