"""Train on a thread so the kernel stays free: a busy cell would queue every widget click until it ends
(jupyter-widgets/ipywidgets#1349).  Under nbclient/nbconvert prefer a foreground ``fit``."""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from nbcallback.widgets.base import LiveCallback
from nbcallback.widgets.controls import interrupt_reason

__all__ = ["BackgroundRun", "run_in_background"]


class BackgroundRun:
    """Handle of a training call running on a background thread (made by :func:`run_in_background`).

    Args:
        target: the training call, e.g. ``model.fit``.
        args: its positional arguments.
        kwargs: its keyword arguments.
        name: the thread's name.
    """

    def __init__(self, target: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> None:
        self._call = lambda: target(*args, **kwargs)
        self.callbacks: list[LiveCallback] = []
        for value in [*args, *kwargs.values()]:
            items = value if isinstance(value, (list, tuple)) else [value]  # callbacks=[...] or one callback
            for item in items:
                if isinstance(item, LiveCallback) and item not in self.callbacks:
                    self.callbacks.append(item)
        self._done = threading.Event()
        self.result: Any = None
        self.exception: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> "BackgroundRun":
        """Open the live views on this thread, then start training on the background thread."""
        for callback in self.callbacks:
            callback._prepare_background(tuple(self.callbacks))
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self.result = self._call()
        except BaseException as exc:  # handed to wait(); a thread has nowhere else to report it
            self.exception = exc
        finally:
            for callback in self.callbacks:
                if callback._prepared:  # the call failed before the callback's first hook
                    callback._end(self.exception)
            self._done.set()

    @property
    def done(self) -> bool:
        """True once the training call has returned or raised."""
        return self._done.is_set()

    @property
    def running(self) -> bool:
        """True while the training call runs."""
        return self._thread.is_alive() and not self.done

    def stop(self, wait: bool = False, timeout: float | None = None) -> None:
        """Ask the run to stop after the current step, as the Stop button does; ``wait``: also :meth:`wait`.

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
        """Block until the run ends (at most ``timeout`` s, else ``TimeoutError``); return the training call's result
        or raise its exception.  An interrupt while waiting stops the run after the current step and keeps waiting;
        a second one raises ``KeyboardInterrupt`` at once."""
        deadline = None if timeout is None else time.monotonic() + timeout
        interrupted = False
        while not self.done:
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
                    callback.request_stop(interrupt_reason())
        self._thread.join()
        if self.exception is not None:
            raise self.exception
        return self.result

    def __repr__(self) -> str:
        """``<BackgroundRun running: epoch 2/3, step 40/188>``, in the first callback's language."""
        state = "done" if self.done else "running"
        if self.exception is not None:
            state = f"failed ({type(self.exception).__name__})"
        if not self.callbacks:
            return f"<BackgroundRun {state}>"
        words = self.callbacks[0].settings.words
        view = self.callbacks[0].view()
        details = [str(view.status_text)] if self.done else []
        if view.kind == "train" and view.epoch is not None:
            details.append(words("run_progress", epoch=view.epoch, epochs=view.last_epoch,
                                 step=view.step_in_epoch, steps=view.steps_per_epoch))
        return f"<BackgroundRun {state}{': ' + words('list_separator').join(details) if details else ''}>"


def run_in_background(target: Callable[..., Any], *args: Any, **kwargs: Any) -> BackgroundRun:
    """Start ``target(*args, **kwargs)`` (``model.train``, ``fit`` or ``eval``) on a thread; return its handle.

    The cell ends at once and the kernel stays free, so the Dashboard's controls act in every front end.  Do not
    use the model, its optimizer or its datasets elsewhere until ``run.done``.  Example::

        run = run_in_background(model.fit, 5, train_ds, test_ds, callbacks=[Dashboard()])
        run.wait()
    """
    return BackgroundRun(target, args, kwargs, f"nbcallback-{getattr(target, '__name__', 'training')}").start()
