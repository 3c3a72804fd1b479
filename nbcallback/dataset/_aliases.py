"""The MindSpore 1.x module paths (``vision.c_transforms`` …), built from one table per package.

``vision/transforms.py`` and ``transforms/transforms.py`` each hold a ``LEGACY_MODULES`` table: for every 1.x
module, the names it had and the op each one is here. The alias modules call :func:`export`, so a name is
written once, in the table, and every path resolves to the same class.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, MutableMapping


def same_names(*names: str) -> dict[str, str]:
    """Table entries for names that are the same in 1.x and here."""
    return {name: name for name in names}


def export(namespace: MutableMapping[str, Any], ops: ModuleType, legacy_module: str) -> list[str]:
    """Put ``ops.LEGACY_MODULES[legacy_module]``'s names into ``namespace``; returns its ``__all__``."""
    table = ops.LEGACY_MODULES[legacy_module]
    for alias, name in table.items():
        namespace[alias] = getattr(ops, name)
    return sorted(table)
