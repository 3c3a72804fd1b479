"""MindSpore 1.x path ``mindspore.dataset.transforms.c_transforms``: aliases of :mod:`.transforms`.

1.x's C++ ops here (``OneHot``, ``TypeCast``, ``Compose``) are the same
classes as in ``nbcallback.dataset.transforms``; nothing is redefined.
"""
from __future__ import annotations

from .. import _aliases
from . import transforms as _ops

__all__ = _aliases.export(globals(), _ops, "c_transforms")
