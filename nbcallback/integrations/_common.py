"""What the adapters share: the board they feed, and results as numbers."""
from __future__ import annotations

import numbers
from typing import Any, Mapping

from nbcallback.widgets.base import LiveCallback
from nbcallback.widgets.board import Board
from nbcallback.widgets.dashboard import Dashboard

__all__ = ["feeding", "make_board", "numbers_only"]


def make_board(board: LiveCallback | None, kwargs: dict[str, Any], adapter: str) -> LiveCallback:
    """``board`` as given, or a new :class:`~nbcallback.widgets.Dashboard` made with ``kwargs``."""
    if board is not None:
        if kwargs:
            raise TypeError(f"{adapter}: give either board= or the Dashboard's arguments ({', '.join(kwargs)}), "
                            "not both")
        if not isinstance(board, LiveCallback):
            raise TypeError(f"{adapter}: board= takes a Dashboard, LiveLossPlot or ProgressBar, got "
                            f"{type(board).__name__}")
        return board
    return Dashboard(**kwargs)


def numbers_only(values: Mapping[str, Any], drop: tuple[str, ...] = ()) -> dict[str, float]:
    """The entries of ``values`` that are numbers or one-element tensors, as floats (read once: an evaluation's
    results), without the names in ``drop``."""
    out: dict[str, float] = {}
    for name, value in values.items():
        if name in drop:
            continue
        if hasattr(value, "numel") and hasattr(value, "item"):
            if value.numel() != 1:
                continue
            value = value.item()
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            out[str(name)] = float(value)
    return out


def feeding(board: Board) -> bool:
    """Whether ``board`` shows a run fed by the adapter that has not ended (a framework's stand-alone evaluation,
    outside ``fit``, is not shown)."""
    fed = board._run.fed
    return fed is not None and not fed.ended
