"""Refresh scheduling: when the view is sent, and what happens when showing it fails.

At most one send per interval; where a phase begins or ends (an epoch, a validation) a send that is not due yet is
left to a timer, in case no step comes to send it when due.  Every display action runs through :meth:`guard`: a
failure warns once and switches the display off for the run, never stopping training.
"""
from __future__ import annotations

import math
import threading
import warnings
from typing import Any, Callable

from nbcallback.widgets.sampling import CHECK_PERIOD

__all__ = ["RefreshScheduler"]

#: After a phase change, how long past the due refresh the timer waits before it sends (0.15 s: a new phase reaches
#: the page within half a second), and again while the training thread has checked the clock within it (steps still
#: come and refresh; a step that checks the clock later than that finds the refresh already sent).
LATE_GRACE = 3 * CHECK_PERIOD


class RefreshScheduler:
    """The refresh ``interval`` and the time of the last send (``t_refresh``), the sends so far (``refreshes``),
    the timer of a late send, whether the display ``failed``, and the lock that the training thread and the timer
    take around the renderer.  ``owner`` names the callback in warnings; ``clock``: monotonic seconds; ``abort``:
    what closes the display when an action fails (the renderer's ``abort``).

    It owns sending: :meth:`refresh` runs the send through :meth:`guard`, under its lock, so the callback hands it
    the update and never guards a send itself."""

    def __init__(self, owner: str, clock: Callable[[], float], abort: Callable[[], Any] = lambda: None) -> None:
        self.owner = owner
        self.clock = clock
        self.abort = abort
        self.lock = threading.RLock()
        self.timer: threading.Timer | None = None
        self.reset()

    def reset(self, interval: float = 1.0) -> None:
        """A new run, refreshed every ``interval`` seconds."""
        self.interval = float(interval)
        self.t_refresh = -math.inf
        self.refreshes = 0
        self.failed = False

    def due(self, now: float) -> bool:
        """Whether a refresh is due at ``now``."""
        return now - self.t_refresh >= self.interval

    def next_due(self) -> float:
        """When the next refresh is due (monotonic seconds; -inf before the first)."""
        return self.t_refresh + self.interval

    def sent(self, now: float) -> None:
        """A view went out at ``now`` outside :meth:`refresh` (the one the renderer opened with)."""
        self.t_refresh = now

    def refresh(self, now: float, send: Callable[[float], None], last_check: Callable[[], float], *,
                boundary: bool = False, late: bool = False) -> None:
        """Call ``send(now)`` when a refresh is due.  At a ``boundary``, with ``late`` sends allowed (the renderer
        may be called from another thread), one not due yet is left to a timer; it waits while the training thread
        still checks the clock (``last_check()``: the time of its last check)."""
        with self.lock:  # the timer may have just sent
            wait = self.t_refresh + self.interval - now
            if wait <= 0:
                self._send(now, send)
            elif boundary and late and self.timer is None:
                self._arm(wait + LATE_GRACE, send, last_check)

    def _send(self, now: float, send: Callable[[float], None]) -> None:
        self.disarm()
        self.guard(lambda: send(now))
        self.t_refresh = now
        self.refreshes += 1

    def disarm(self) -> None:
        """Cancel a pending late send."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _arm(self, delay: float, send: Callable[[float], None], last_check: Callable[[], float]) -> None:
        timer = self.timer = threading.Timer(delay, lambda: self._late_send(timer, send, last_check))
        timer.daemon = True
        timer.name = "nbcallback-late-send"
        try:
            timer.start()
        except RuntimeError:  # no thread to spare: the phase change waits for the next step, as without a timer
            self.timer = None

    def _late_send(self, timer: threading.Timer, send: Callable[[float], None],
                   last_check: Callable[[], float]) -> None:
        """The timer's send, when no step has refreshed since the phase changed (the state recorded then is still
        current); while the training thread still checks the clock it is left to refresh, and the timer looks
        again a little later."""
        with self.lock:
            if self.timer is not timer:
                return
            now = self.clock()
            if now - last_check() < LATE_GRACE:
                self._arm(LATE_GRACE, send, last_check)
            else:
                self._send(now, send)

    def guard(self, action: Callable[[], Any], abort: Callable[[], Any] | None = None) -> None:
        """Run a display action; on failure warn once, call ``abort`` (default: the scheduler's) and switch the
        display off for the run."""
        with self.lock:
            if self.failed:
                return
            try:
                action()
            except Exception as exc:  # a display problem must never stop training
                self.failed = True
                warnings.warn(f"nbcallback.widgets.{self.owner}: the display failed and is switched off for this "
                              f"run ({type(exc).__name__}: {exc}); training continues.", RuntimeWarning, stacklevel=4)
                try:
                    (abort or self.abort)()
                except Exception:  # already failing; the warning above says why
                    pass
