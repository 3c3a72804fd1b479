"""Image transforms (``mindspore.dataset.vision`` counterpart).

The ops are defined once in :mod:`.transforms` (MindSpore 2.x's
``mindspore.dataset.vision.transforms``, which also re-exports the enums of
:mod:`.utils`); this package exports exactly its ``__all__``, and the 1.x
module paths ``vision.c_transforms`` and ``vision.py_transforms`` are built
from its ``LEGACY_MODULES`` table. A new op is a class in ``transforms.py``
(listed in its ``__all__``) and its kernel in ``_functional.py``.
"""
from __future__ import annotations

from .transforms import *  # noqa: F403 - the package is exactly the ops module's public names
from .transforms import __all__
