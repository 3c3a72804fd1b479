"""Send this process a signal that a Python handler will catch, on every platform: :func:`send_to_self`.

Notebook 2 shows :class:`~nbcallback.train.OnRequestExit` by having the training send itself SIGTERM.
``os.kill(os.getpid(), signal.SIGTERM)`` does that on Linux and macOS, but on Windows ``os.kill`` with any signal
but ``CTRL_C_EVENT``/``CTRL_BREAK_EVENT`` ends the process at once (``TerminateProcess``): the kernel dies, and no
handler runs. :func:`send_to_self` uses ``signal.raise_signal`` instead, which delivers the signal inside the
process (C's ``raise``) on Windows, macOS and Linux alike, so the handler that ``OnRequestExit`` installed runs;
and it refuses, with an error, when no Python handler is installed for that signal, where raising it would end
the kernel on any platform.
"""
from __future__ import annotations

import signal


class NoHandlerError(RuntimeError):
    """No Python handler is installed for the signal: raising it would end the process."""


def send_to_self(sig: int = signal.SIGTERM) -> None:
    """Raise ``sig`` in this process, for the Python handler installed for it (``OnRequestExit``'s while it runs).

    Raises:
        NoHandlerError: no Python handler is installed for ``sig`` (the signal's default action would end the
            process, a notebook's kernel included).
    """
    handler = signal.getsignal(sig)
    if not callable(handler):  # SIG_DFL, SIG_IGN, or a handler installed outside Python (None)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        raise NoHandlerError(
            f"no Python handler is installed for {name} in this process, so raising it would end the process "
            f"(a notebook's kernel with it): send it while a callback that catches it runs, e.g. from a hook of "
            f"a training that has OnRequestExit(sig=signal.{name}) among its callbacks"
        )
    signal.raise_signal(sig)
