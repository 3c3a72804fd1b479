"""``ProgressBar``: epoch and step progress, rates, ETAs, smoothed loss and an eval table."""
from __future__ import annotations

from typing import Any

from nbcallback.widgets.base import LiveCallback

__all__ = ["ProgressBar"]


class ProgressBar(LiveCallback):
    """Live progress of ``Model.train`` / ``fit`` / ``eval``.

    Shows an epoch bar and a bar for the current phase (training steps, or the
    validation run during ``fit`` in a different colour and label), steps
    done/total, rate in it/s and samples/s, elapsed time, the training-only ETA
    and the total ETA including the predicted evaluations, the smoothed loss,
    and a table with one row per evaluation.

    In a notebook this is one small widget, replaced at the end by a static
    HTML snapshot (so the saved notebook shows the final state without widget
    state); in a terminal one ``\\r`` line; in logs (CI) a line every
    ``log_interval`` seconds plus one per epoch.  See
    :class:`~nbcallback.widgets.base.LiveCallback` for every argument
    (``display``, ``file``, ``graceful_interrupt``, ``refresh_interval``,
    ``log_interval``, ``live_rows``, ``max_rows``, ``smoothing``, ``clock``).

    Example::

        model.fit(3, train_ds, test_ds, callbacks=[ProgressBar()])

    Pressing the kernel's interrupt button stops training after the current
    step; ``fit`` returns normally and the summary says "stopped by user at
    epoch e, step s".
    """

    _PARTS = frozenset({"progress", "table"})

    def __init__(self, display: str = "auto", **kwargs: Any) -> None:
        super().__init__(display, **kwargs)
