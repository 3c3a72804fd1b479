"""Train on a background thread, leaving the notebook kernel free.

A cell that runs ``model.fit(...)`` keeps the kernel's main shell busy, so the
front end's widget messages (a Stop click, a new learning rate) wait until the
cell ends (jupyter-widgets/ipywidgets#1349, #3468).  :func:`run_in_background`
runs the training call on a thread and returns at once with a
:class:`BackgroundRun` handle: the kernel is idle, so comm messages are handled
immediately on the main shell, in any front end and with any ipykernel.

What to know:

* The live view is displayed by the cell that calls :func:`run_in_background`
  (before the thread starts), so it lands in that cell.  Updates reach it
  through its widgets and ``display_id``, whatever cell runs later.  Text
  printed by the training thread (``LossMonitor``) follows ipykernel's rule for
  threads: it goes to the cell that is running (or ran last).
* Do not use the model, its optimizer or its datasets in other cells while the
  run is active (``run.done`` says when it is over).
* ``run.wait()`` blocks until the end and re-raises the training's exception.
  Pressing the kernel's interrupt button during ``wait()`` stops the run
  gracefully (after the current step) and ``wait()`` returns normally; a
  second interrupt leaves ``wait()`` at once.  While no cell runs, the
  interrupt button does nothing (ipykernel ignores SIGINT when idle): use the
  Stop button or ``run.stop()``.
* Under nbclient/nbconvert (docs builds) prefer a foreground ``fit``: nbclient
  records only the messages of the cell it is executing.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterable

from nbcallback.widgets.base import LiveCallback

__all__ = ["BackgroundRun", "run_in_background"]


def _find_live_callbacks(values: Iterable[Any]) -> list[LiveCallback]:
    found: list[LiveCallback] = []
    for value in values:
        if isinstance(value, LiveCallback):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(v for v in value if isinstance(v, LiveCallback))
    unique: list[LiveCallback] = []
    for callback in found:
        if all(callback is not other for other in unique):
            unique.append(callback)
    return unique


class BackgroundRun:
    """Handle of a training call running on a background thread.

    Args:
        target: the training call, e.g. ``model.fit``.
        args: its positional arguments.
        kwargs: its keyword arguments.
        name: the thread's name.

    Created and started by :func:`run_in_background`.
    """

    def __init__(self, target: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> None:
        self._target = target
        self._args = args
        self._kwargs = kwargs
        self.callbacks = _find_live_callbacks([*args, *kwargs.values()])
        self._done = threading.Event()
        self._result: Any = None
        self._exception: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.started_at: float | None = None
        self.ended_at: float | None = None

    def start(self) -> "BackgroundRun":
        """Open the live views on this thread, then start training on the background thread."""
        for callback in self.callbacks:
            callback._prepare_background(tuple(self.callbacks))
        self.started_at = time.monotonic()
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self._result = self._target(*self._args, **self._kwargs)
        except BaseException as exc:  # handed to wait(); a thread has nowhere else to report it
            self._exception = exc
        finally:
            for callback in self.callbacks:
                if callback._prepared:  # the call failed before the callback's first hook
                    callback._finalize(self._exception)
            self.ended_at = time.monotonic()
            self._done.set()

    @property
    def done(self) -> bool:
        """True once the training call has returned or raised."""
        return self._done.is_set()

    @property
    def running(self) -> bool:
        """True while the training call runs."""
        return self._thread.is_alive() and not self._done.is_set()

    @property
    def exception(self) -> BaseException | None:
        """The exception the training call raised, once done (None otherwise)."""
        return self._exception

    @property
    def result(self) -> Any:
        """What the training call returned, once done."""
        return self._result

    def stop(self, wait: bool = False, timeout: float | None = None) -> None:
        """Ask the run to stop after the current step (as the Stop button does).

        Args:
            wait: also wait for the run to end (see :meth:`wait`).
            timeout: with ``wait``, the most seconds to wait.

        Raises:
            RuntimeError: the run has no ``nbcallback.widgets`` callback to carry the request.
        """
        if not self.callbacks:
            raise RuntimeError(
                "BackgroundRun.stop() needs a ProgressBar, LiveLossPlot or Dashboard among the run's callbacks"
            )
        for callback in self.callbacks:
            callback.request_stop("code")
        if wait:
            self.wait(timeout)

    def wait(self, timeout: float | None = None) -> Any:
        """Block until the run ends; return the training call's result or raise its exception.

        Args:
            timeout: the most seconds to wait; None waits for the end.

        Raises:
            TimeoutError: ``timeout`` passed before the run ended.
            BaseException: whatever the training call raised.

        A ``KeyboardInterrupt`` (the kernel's interrupt button) while waiting
        asks the run to stop after the current step and keeps waiting, so the
        run ends "stopped by user" and ``wait()`` returns normally; a second
        one propagates at once (the thread then finishes its step on its own).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        interrupted = False
        while not self._done.is_set():
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if left <= 0:
                raise TimeoutError(f"the background run did not end within {timeout} s")
            try:
                self._done.wait(left)
            except KeyboardInterrupt:
                if interrupted or not self.callbacks:
                    raise
                interrupted = True
                for callback in self.callbacks:
                    callback.request_stop("interrupt")
        self._thread.join()
        if self._exception is not None:
            raise self._exception
        return self._result

    def __repr__(self) -> str:
        """``<BackgroundRun running: epoch 2/3, step 40/188>``: the thread's state, then (in the first
        callback's language) how the run ended and where it is."""
        state = "done" if self.done else "running"
        if self._exception is not None:
            state = f"failed ({type(self._exception).__name__})"
        if not self.callbacks:
            return f"<BackgroundRun {state}>"
        callback = self.callbacks[0]
        view = callback.view()
        details = [str(view.status_text)] if self.done else []
        if view.kind == "train" and view.epoch is not None:
            details.append(callback.words("run_progress", epoch=view.epoch, epochs=view.last_epoch,
                                          step=view.step_in_epoch, steps=view.steps_per_epoch))
        return f"<BackgroundRun {state}{': ' + callback.words('list_separator').join(details) if details else ''}>"


def run_in_background(target: Callable[..., Any], *args: Any, **kwargs: Any) -> BackgroundRun:
    """Start ``target(*args, **kwargs)`` (e.g. ``model.fit``) on a background thread.

    Args:
        target: the training call (``model.train``, ``model.fit``, ``model.eval``).
        *args: its positional arguments.
        **kwargs: its keyword arguments (``callbacks=[Dashboard()]`` ...).

    Returns:
        A started :class:`BackgroundRun`; the cell finishes at once and the
        kernel stays free, so the Dashboard's Stop and lr controls act during
        training in every front end.

    Example::

        dash = Dashboard()
        run = run_in_background(model.fit, 5, train_ds, test_ds, callbacks=[dash])
        # ... later, or in the next cell:
        run.wait()
    """
    name = f"nbcallback-{getattr(target, '__name__', 'training')}"
    return BackgroundRun(target, args, dict(kwargs), name).start()
