"""``ProgressBar``: epoch and step progress, rates, ETAs, smoothed loss and an eval table."""
from __future__ import annotations

from nbcallback.widgets.base import LiveCallback

__all__ = ["ProgressBar"]


class ProgressBar(LiveCallback):
    """Live progress of ``Model.train`` / ``fit`` / ``eval``: an epoch bar and a bar for the current phase
    (training or validation), rates, elapsed time and ETAs, the smoothed loss, and one table row per evaluation.

    A widget in a notebook (a static snapshot at the end), one ``\\r`` line in a terminal, a line every
    ``log_interval`` seconds in logs.  Takes the :class:`~nbcallback.widgets.base.LiveCallback` arguments.
    The kernel's interrupt button stops training after the current step and ``fit`` returns normally.

    Example::

        model.fit(3, train_ds, test_ds, callbacks=[ProgressBar()])
    """

    _PARTS = frozenset({"progress", "table"})
