"""MindSpore 1.x path ``mindspore.dataset.vision.py_transforms``: aliases of :mod:`.transforms`.

1.x's Python ops worked on PIL images (``Decode()`` returned one, ``ToTensor()``
turned it into a ``<C, H, W>`` float array). Here the names resolve to the
same classes as ``nbcallback.dataset.vision``, which work on numpy arrays:

* ``Decode()`` returns a ``<H, W, 3>`` uint8 array (pass ``to_pil=True`` for a
  PIL image); the ops after it accept either, so a 1.x chain
  ``Decode() -> Resize -> RandomHorizontalFlip -> ToTensor()`` runs unchanged
  and gives the same shapes. ``Resize`` on a numpy array interpolates like
  the C++ op, not like Pillow (pixel values differ slightly); on a PIL image
  it uses Pillow, as 1.x did.
* ``ToTensor()`` matches 1.x: ``<C, H, W>`` float32 in ``[0, 1]``.
* ``Normalize`` is the 2.x op, whose mean/std are in ``[0, 255]`` and whose
  layout is ``<H, W, C>`` unless ``is_hwc=False``. 1.x's Python ``Normalize``
  took ``<C, H, W>`` input after ``ToTensor``: write ``Normalize(mean, std,
  is_hwc=False)`` for it.
"""
from __future__ import annotations

from .. import _aliases
from . import transforms as _ops

__all__ = _aliases.export(globals(), _ops, "py_transforms")
