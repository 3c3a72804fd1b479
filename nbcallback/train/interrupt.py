"""Turn a signal (Ctrl-C, the notebook's interrupt button, SIGTERM) into a stop at the next step.

Jupyter's interrupt button sends SIGINT to the kernel, which normally raises
``KeyboardInterrupt`` wherever the training loop happens to be: in the middle
of an optimizer step, of a checkpoint write, or of a widget redraw.  Callbacks
that want a clean ending install a :class:`SignalStop` for the duration of the
run instead: the signal only sets a flag, and the callback calls
``run_context.request_stop()`` at the next step boundary.

A second signal while a stop is pending restores the previous behaviour and
re-raises it (``KeyboardInterrupt`` for SIGINT), so a stuck run can still be
broken out of.
"""
from __future__ import annotations

import signal
import threading
import time
from types import FrameType
from typing import Any, Callable

__all__ = ["SignalStop"]


class SignalStop:
    """Install a handler for ``sig`` that records the request instead of raising.

    Args:
        sig: the signal number (``signal.SIGINT``, ``signal.SIGTERM`` …).
        on_signal: optional function called (from the handler) when the signal arrives.

    Use :meth:`install` / :meth:`uninstall` (or ``with``). Installing only works in
    the main thread; elsewhere (a training thread started by a widget) it does
    nothing and :attr:`installed` stays False.
    """

    def __init__(self, sig: int = signal.SIGINT, on_signal: Callable[[int], None] | None = None) -> None:
        self.sig = sig
        self._on_signal = on_signal
        self._previous: Any = None
        self.installed = False
        self.requested = False
        self.requested_at: float | None = None

    def install(self) -> "SignalStop":
        if self.installed or threading.current_thread() is not threading.main_thread():
            return self
        self.requested = False
        self.requested_at = None
        self._previous = signal.getsignal(self.sig)
        signal.signal(self.sig, self._handle)
        self.installed = True
        return self

    def uninstall(self) -> None:
        if not self.installed:
            return
        # Only restore if nobody replaced our handler meanwhile.
        if signal.getsignal(self.sig) == self._handle:
            signal.signal(self.sig, self._previous if self._previous is not None else signal.SIG_DFL)
        self.installed = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            # Second signal: the user insists. Give the previous behaviour back and apply it now.
            previous = self._previous
            self.uninstall()
            if callable(previous):
                previous(signum, frame)
                return
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            return
        self.requested = True
        self.requested_at = time.monotonic()
        if self._on_signal is not None:
            self._on_signal(signum)

    def __enter__(self) -> "SignalStop":
        return self.install()

    def __exit__(self, *exc_info: object) -> None:
        self.uninstall()
