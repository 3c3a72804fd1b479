"""MindSpore 1.x path ``mindspore.dataset.vision.c_transforms``: aliases of :mod:`.transforms`.

1.x's C++ ops worked on numpy ``<H, W, C>`` images, as every op here does;
the classes are the ones ``nbcallback.dataset.vision`` exports.
"""
from __future__ import annotations

from .. import _aliases
from . import transforms as _ops

__all__ = _aliases.export(globals(), _ops, "c_transforms")
