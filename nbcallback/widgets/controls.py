"""Stop and learning-rate requests: SIGINT, the Stop button and code only store a request and poke the callbacks,
whose step hook applies it at the next step boundary on the training thread (never inside ``optimizer.step()``).
"""
from __future__ import annotations

import math
import signal
import threading
from typing import Any

from nbcallback.train.interrupt import SignalStop
from nbcallback.widgets import env
from nbcallback.widgets.words import Msg

__all__ = ["BusyStatus", "SharedStop", "apply_learning_rate", "checked_lr", "interrupt_reason", "release_comm_routing",
           "SHARED_KEY"]

SHARED_KEY = "nbcallback_widgets"
#: Where a stop request came from -> the message naming it.
_SOURCES = {"interrupt": "source_interrupt", "ctrl_c": "source_ctrl_c", "button": "source_button",
            "code": "source_code"}


class SharedStop:
    """How one run stops, shared by its display callbacks: the callbacks to tell, why and where the run stopped,
    the SIGINT handler."""

    def __init__(self) -> None:
        self.members: list[Any] = []  # all join on the training thread
        self.stop_reason: str | None = None  # 'interrupt', 'ctrl_c', 'button', 'code' or a short text; first wins
        self.stop_where: tuple[int | None, int, int | None] | None = None  # (epoch, step in epoch, eval step)
        self.signal_stop: SignalStop | None = None
        self.owner: Any = None  # the callback that installed signal_stop

    def join(self, member: Any) -> None:
        if member not in self.members:
            self.members.append(member)

    def request_stop(self, reason: str) -> None:
        """Ask every member to stop at the next step boundary (any thread, or a signal handler)."""
        if self.stop_reason is None:
            self.stop_reason = reason
        for member in list(self.members):
            member._notice_request()

    def describe_stop(self) -> str:
        """``"stopped by user at epoch 2, step 312 (Stop button)"``, as a :class:`Msg`."""
        reason = self.stop_reason or ""
        if reason in _SOURCES:
            source = Msg(_SOURCES[reason])
        else:
            source = reason or Msg("source_user")  # a caller's own short text
        if self.stop_where is None:
            return Msg("stopped_by_user_plain", source=source)
        epoch, step, eval_step = self.stop_where
        where = Msg("where_step", step=step) if epoch is None else Msg("where_epoch", epoch=epoch, step=step)
        if eval_step is not None:
            where = Msg("where_validation", where=where, eval_step=eval_step)
        return Msg("stopped_by_user", where=where, source=source)

    def install_signal(self, owner: Any) -> None:
        """Turn SIGINT into a graceful stop (main thread only); a second SIGINT raises as usual."""
        if self.signal_stop is None:
            reason = interrupt_reason()
            stopper = SignalStop(signal.SIGINT, on_signal=lambda signum: self.request_stop(reason)).install()
            if stopper.installed:
                self.signal_stop, self.owner = stopper, owner

    def uninstall_signal(self, owner: Any) -> None:
        if self.signal_stop is not None and self.owner is owner:
            self.signal_stop.uninstall()
            self.signal_stop = self.owner = None


def interrupt_reason() -> str:
    """What an interrupt is called in the final status: the kernel's interrupt in a notebook, Ctrl-C elsewhere."""
    return "interrupt" if env.in_notebook_kernel() else "ctrl_c"


def valid_lr(value: Any) -> float | None:
    """``value`` as a positive finite learning rate, or None."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number > 0 else None


def checked_lr(value: Any) -> float:
    """``value`` as a positive finite learning rate.

    Raises:
        ValueError: ``value`` is not a positive finite number.
    """
    lr = valid_lr(value)
    if lr is None:
        raise ValueError(f"the learning rate must be a positive number, got {value!r}")
    return lr


def apply_learning_rate(optimizer: Any, lr: float, scheduler: Any = None) -> float:
    """Set every parameter group's rate (others keep their ratio to group 0; tensors are filled); returns ``lr``.
    A Keras 3 optimizer (no ``param_groups``) gets ``learning_rate = lr``.  A ``scheduler`` with ``base_lrs``
    (``torch.optim.lr_scheduler``) has them scaled by the same factor, so the schedule goes on from the new rate.

    Raises:
        ValueError: ``lr`` is not a positive finite number.
    """
    lr = checked_lr(lr)
    if not hasattr(optimizer, "param_groups"):
        optimizer.learning_rate = lr
        return lr
    groups = optimizer.param_groups
    old = float(groups[0]["lr"]) if groups else 0.0
    base_lrs = getattr(scheduler, "base_lrs", None)
    if isinstance(base_lrs, list) and old > 0:
        scheduler.base_lrs = [float(base) * lr / old for base in base_lrs]
    groups = optimizer.param_groups
    base = float(groups[0]["lr"]) if groups else 0.0
    for group in groups:
        new = lr * (float(group["lr"]) / base) if base > 0 else lr
        if hasattr(group["lr"], "fill_"):
            group["lr"].fill_(new)
        else:
            group["lr"] = new
    return lr


def release_comm_routing(widget: Any) -> bool:
    """Let clicks on ``widget`` run on the subshell the front end named, not behind the training cell (ipykernel 7
    routes a comm to the subshell it last published from; its private hook overrides that).  True if changed."""
    comm = getattr(widget, "comm", None)
    if not hasattr(comm, "_reply_subshell_for"):
        return False
    comm._reply_subshell_for = lambda data, default: default
    return True


class BusyStatus:
    """Keep JupyterLab's kernel indicator at *busy* while a foreground cell trains.

    ipykernel 7 publishes an idle after each request it handles beside the running cell (a new subshell, a click);
    a watcher thread sees either and, one tick later, publishes *busy* again for the cell.

    Args:
        kernel: the ipykernel kernel.
        parent: the running cell's request.
        interval: seconds between checks.
    """

    def __init__(self, kernel: Any, parent: Any, interval: float = 0.2) -> None:
        self._kernel = kernel
        self._parent = parent
        self.interval = interval
        self._subshells = self._count()
        self._message = threading.Event()
        self._pending = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="nbcallback-busy-status", daemon=True)

    @classmethod
    def for_foreground_run(cls) -> "BusyStatus | None":
        """One for the cell running now (call it on that cell's thread), or None where there is nothing to fix."""
        kernel = env.running_kernel()
        if not getattr(kernel, "_supports_kernel_subshells", False) or not hasattr(kernel, "_publish_status"):
            return None
        parent = kernel.get_parent("shell")
        return cls(kernel, parent) if parent else None

    def _count(self) -> int | None:
        manager = getattr(getattr(self._kernel, "shell_channel_thread", None), "manager", None)
        return len(manager.list_subshell()) if hasattr(manager, "list_subshell") else None

    def message_arrived(self) -> None:
        """The page sent a message (its handler's thread then publishes idle)."""
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

    def _watch(self) -> None:
        while not self._stop.wait(self.interval):
            self.check()

    def start(self) -> "BusyStatus":
        """Check every ``interval`` seconds on a daemon thread until :meth:`stop`."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """The run ended: nothing more is published (the cell's own idle follows)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=1.0)
