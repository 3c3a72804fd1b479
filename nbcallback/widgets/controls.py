"""Stop and learning-rate requests that reach a running training loop.

Three sources can ask a run to stop: the kernel's interrupt button (SIGINT),
the Dashboard's Stop button, and code (``callback.request_stop()``,
``BackgroundRun.stop()``).  None of them touches the training state directly:
they set plain attributes (atomic under the GIL) and *poke* the callbacks,
whose step hook then applies the request at the next step boundary, on the
training thread.  That is what keeps the model and optimizer consistent: a stop
never lands in the middle of ``optimizer.step()``, and the learning rate never
changes under a running update.

:class:`RunShared` is the per-run object all ``nbcallback.widgets`` callbacks
of one run share through ``cb_params`` (so one SIGINT handler serves them all
and they agree on why and where the run stopped).
"""
from __future__ import annotations

import math
import signal
import threading
from typing import Any, Callable

from nbcallback.train.interrupt import SignalStop
from nbcallback.widgets.words import Msg

__all__ = ["BusyStatus", "RunShared", "apply_learning_rate", "release_comm_routing", "SHARED_KEY"]

#: The ``cb_params`` key of the per-run :class:`RunShared`.
SHARED_KEY = "nbcallback_widgets"

_REASONS = {"interrupt": "source_interrupt", "button": "source_button", "code": "source_code"}


class RunShared:
    """State shared by the ``nbcallback.widgets`` callbacks of one run.

    Attributes:
        stop_reason: None, or why a stop was requested (``'interrupt'``,
            ``'button'``, ``'code'``).
        stop_where: ``(epoch, step in epoch, eval step or None)`` where the stop
            was applied, once it was.
        signal_stop: the SIGINT handler installed for this run, if any.
        owner: the callback that installed it (and uninstalls it).
    """

    def __init__(self) -> None:
        self.members: list[Any] = []
        self.stop_reason: str | None = None
        self.stop_where: tuple[int | None, int, int | None] | None = None
        self.signal_stop: SignalStop | None = None
        self.owner: Any = None
        self._lock = threading.Lock()

    def join(self, member: Any) -> None:
        """Register a callback to be poked on requests."""
        with self._lock:
            if member not in self.members:
                self.members.append(member)

    def request_stop(self, reason: str) -> None:
        """Ask every member to stop the run at the next step boundary.

        Safe from any thread and from a signal handler (it only assigns
        attributes).  The first reason wins.
        """
        if self.stop_reason is None:
            self.stop_reason = reason
        for member in list(self.members):
            member._poke()

    def describe_stop(self) -> str:
        """``"stopped by user at epoch 2, step 312 (Stop button)"`` (a :class:`~nbcallback.widgets.words.Msg`)."""
        reason = self.stop_reason or ""
        source: str = Msg(_REASONS[reason]) if reason in _REASONS else (reason or Msg("source_user"))
        if self.stop_where is None:
            return Msg("stopped_by_user_plain", source=source)
        epoch, step, eval_step = self.stop_where
        where = Msg("where_epoch", epoch=epoch, step=step) if epoch is not None else Msg("where_step", step=step)
        if eval_step is not None:
            where = Msg("where_validation", where=where, eval_step=eval_step)
        return Msg("stopped_by_user", where=where, source=source)

    def install_signal(self, owner: Any) -> bool:
        """Route SIGINT to :meth:`request_stop` for this run (main thread only).

        Returns True when installed.  A second SIGINT while the stop is pending
        raises ``KeyboardInterrupt`` as usual (see :class:`~nbcallback.train.interrupt.SignalStop`),
        so a stuck run can still be broken out of.
        """
        if self.signal_stop is not None:
            return False
        if threading.current_thread() is not threading.main_thread():
            return False
        stopper = SignalStop(signal.SIGINT, on_signal=lambda signum: self.request_stop("interrupt"))
        stopper.install()
        if not stopper.installed:
            return False
        self.signal_stop = stopper
        self.owner = owner
        return True

    def uninstall_signal(self, owner: Any) -> None:
        """Give SIGINT back (only the installing callback does)."""
        if self.signal_stop is not None and self.owner is owner:
            self.signal_stop.uninstall()
            self.signal_stop = None
            self.owner = None


def apply_learning_rate(optimizer: Any, lr: float) -> float:
    """Set the learning rate of every parameter group; returns the new rate of group 0.

    Group 0 gets exactly ``lr``; other groups keep their ratio to group 0 (so a
    model trained with a 10x smaller rate for its backbone keeps that ratio).
    A tensor ``lr`` (capturable optimizers) is filled in place.

    Raises:
        ValueError: ``lr`` is not a positive finite number.
    """
    lr = float(lr)
    if not math.isfinite(lr) or lr <= 0:
        raise ValueError(f"the learning rate must be a positive number, got {lr!r}")
    groups = optimizer.param_groups
    base = float(groups[0]["lr"]) if groups else 0.0
    for group in groups:
        current = float(group["lr"])
        new = lr * (current / base) if base > 0 else lr
        if hasattr(group["lr"], "fill_"):
            group["lr"].fill_(new)
        else:
            group["lr"] = new
    return lr


def release_comm_routing(widget: Any) -> bool:
    """Let the front end choose the subshell for this widget's incoming messages.

    ipykernel 7 routes a front end's message for a comm to the subshell of the
    request during which the kernel last *published* on that comm.  A widget
    the training cell updates therefore has its clicks routed to the busy main
    shell, where they wait until the cell ends, even when JupyterLab >= 4.4 /
    Notebook >= 7.4 send them over a subshell (``commsOverSubshells``).  This
    per-comm override makes ipykernel use the subshell the front end named, so
    a click runs on that subshell's thread within a tenth of a second (measured
    in ``reference/anywidget-hosts.md`` A.3).  Handlers then run concurrently
    with training: they only store the request.

    The hook is private to ipykernel 7 (``BaseComm._reply_subshell_for``);
    without it (ipykernel 6, other kernels) nothing happens.

    Returns:
        True when the routing was changed.
    """
    comm = getattr(widget, "comm", None)
    if comm is None or not hasattr(comm, "_reply_subshell_for"):
        return False
    comm._reply_subshell_for = lambda data, default: default
    return True


class BusyStatus:
    """Keep JupyterLab's kernel indicator at *busy* while a foreground cell trains.

    ipykernel 7 publishes a busy/idle status pair for every request it handles
    beside the running cell: the ``create_subshell_request`` JupyterLab >= 4.4
    sends (on the control channel) when a widget's comm first appears in a
    kernel, and each click the page sends over a subshell.  JupyterLab takes
    that *idle* as the kernel's state (jupyter_client#838, jupyterlab#10701),
    so a kernel training in the foreground read "Idle" from the moment the
    dashboard appeared.  A small watcher thread (:meth:`start`, every
    ``interval`` seconds until :meth:`stop`) notices a new subshell or a message
    from the page and, one tick later (after the handler's idle), publishes
    *busy* again for the running cell.  It is a thread, not the training loop's
    refresh, because a long step (or a paused loop) would leave the indicator
    wrong until the next refresh.  Nothing is created outside an ipykernel with
    subshells, or for a background run (the kernel is idle then).
    """

    def __init__(self, kernel: Any, parent: Any, interval: float = 0.2) -> None:
        self._kernel = kernel
        self._parent = parent
        self.interval = interval
        self._subshells = self._count()
        self._message = threading.Event()
        self._pending = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_foreground_run(cls) -> "BusyStatus | None":
        """One for the cell running now (call it on that cell's thread), or None where there is
        nothing to correct."""
        from nbcallback.widgets.env import running_kernel

        kernel = running_kernel()
        if kernel is None or not getattr(kernel, "_supports_kernel_subshells", False):
            return None
        if not callable(getattr(kernel, "_publish_status", None)) or not callable(getattr(kernel, "get_parent", None)):
            return None
        parent = kernel.get_parent("shell")
        return cls(kernel, parent) if parent else None

    def _count(self) -> int | None:
        manager = getattr(getattr(self._kernel, "shell_channel_thread", None), "manager", None)
        list_subshell = getattr(manager, "list_subshell", None)
        return len(list_subshell()) if callable(list_subshell) else None

    def message_arrived(self) -> None:
        """The page sent a message (handled on a subshell's thread, which then publishes idle)."""
        self._message.set()

    def check(self) -> bool:
        """Publish *busy* if the previous check saw a change; True if it did."""
        publish = self._pending
        count = self._count()
        self._pending = count != self._subshells or self._message.is_set()
        self._subshells = count
        self._message.clear()
        if publish and not self._stop.is_set():
            self._kernel._publish_status("busy", "shell", self._parent)
        return publish

    def start(self) -> "BusyStatus":
        """Watch on a daemon thread until :meth:`stop`."""
        def watch() -> None:
            while not self._stop.wait(self.interval):
                self.check()

        self._thread = threading.Thread(target=watch, name="nbcallback-busy-status", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """The run ended: nothing more is published (the cell's own idle follows)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)


def valid_lr(value: Any) -> float | None:
    """``value`` as a usable learning rate, or None."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number > 0 else None


Poke = Callable[[], None]
