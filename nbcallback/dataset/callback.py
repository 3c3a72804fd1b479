"""``mindspore.dataset.callback``: :class:`DSCallback` and :class:`WaitedDSCallback`.

The import MindSpore's own tests use,
``from mindspore.dataset.callback import DSCallback, WaitedDSCallback``, becomes
``from nbcallback.dataset.callback import DSCallback, WaitedDSCallback``. The
classes are those of :mod:`nbcallback.dataset` (defined in
:mod:`.callbacks` and :mod:`._waited`); ``WaitedDSCallback`` is loaded on first
use, since it imports ``nbcallback.train``.
"""
from __future__ import annotations

from typing import Any

from .callbacks import DSCallback

__all__ = ["DSCallback", "WaitedDSCallback"]


def __getattr__(name: str) -> Any:
    """``WaitedDSCallback`` on first use (it imports ``nbcallback.train``)."""
    if name == "WaitedDSCallback":
        from ._waited import WaitedDSCallback

        return WaitedDSCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "WaitedDSCallback"])
