"""Helpers for the tests where a dataset pipeline waits for another thread.

Every wait is bounded: a thread is daemonic and joined with :data:`DEADLINE_S`
(a deadlock fails the test instead of stalling the suite), and the tests that
expect a timeout set a fraction of a second with :func:`callback_timeout`.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

import nbcallback.dataset as ds

DEADLINE_S = 60


@contextlib.contextmanager
def callback_timeout(seconds: float) -> Iterator[None]:
    """``ds.config.set_callback_timeout(seconds)`` for the block, then the previous value again."""
    before = ds.config.get_callback_timeout()
    ds.config.set_callback_timeout(seconds)
    try:
        yield
    finally:
        ds.config.set_callback_timeout(before)


class Worker:
    """``fn`` in a daemonic thread; :meth:`result` joins it (at most DEADLINE_S) and re-raises its error."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._outcome: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self._outcome["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test thread
            self._outcome["error"] = exc

    def result(self) -> Any:
        self._thread.join(DEADLINE_S)
        assert not self._thread.is_alive(), f"still running after {DEADLINE_S} s: a deadlock"
        if "error" in self._outcome:
            raise self._outcome["error"]
        return self._outcome.get("value")


def in_thread(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in another thread and return its result (or raise its error)."""
    return Worker(fn).result()
