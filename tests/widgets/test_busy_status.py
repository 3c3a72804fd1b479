"""A foreground run keeps JupyterLab's kernel indicator at busy (``BusyStatus``).

ipykernel 7 publishes an idle status after each request it handles beside the
running cell (the front end's ``create_subshell_request`` when the dashboard's
comm appears, each click over a subshell); JupyterLab shows that idle.  The
browser test ``test_kernel_shows_busy_during_a_foreground_fit`` checks the page;
these check the decision on a stand-in kernel.
"""
from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

from nbcallback.widgets.controls import BusyStatus


class FakeKernel:
    """What BusyStatus reads of an ipykernel 7 kernel."""

    _supports_kernel_subshells = True

    def __init__(self) -> None:
        self.subshells: list[str] = []
        self.shell_channel_thread = SimpleNamespace(manager=SimpleNamespace(list_subshell=lambda: list(self.subshells)))
        self.parent: dict[str, Any] | None = {"header": {"msg_type": "execute_request", "msg_id": "cell-1"}}
        self.published: list[tuple[str, str, Any]] = []

    def get_parent(self, channel: str) -> dict[str, Any] | None:
        return self.parent

    def _publish_status(self, status: str, channel: str, parent: Any = None) -> None:
        self.published.append((status, channel, parent))


def test_nothing_is_published_while_nothing_happened() -> None:
    kernel = FakeKernel()
    busy = BusyStatus(kernel, kernel.parent)
    assert [busy.check() for _ in range(3)] == [False] * 3
    assert kernel.published == []


def test_a_new_subshell_is_followed_by_busy_for_the_running_cell() -> None:
    kernel = FakeKernel()
    cell = kernel.parent
    busy = BusyStatus(kernel, cell)
    kernel.subshells.append("jupyter.widget subshell")  # the front end's create_subshell_request
    kernel.parent = None  # another thread: the running cell is the one captured
    assert busy.check() is False, "not while the request's own idle may still follow"
    assert busy.check() is True
    assert kernel.published == [("busy", "shell", cell)]
    assert busy.check() is False, "once per change"


def test_a_message_from_the_page_is_followed_by_busy() -> None:
    kernel = FakeKernel()
    busy = BusyStatus(kernel, kernel.parent)
    thread = threading.Thread(target=busy.message_arrived)  # clicks arrive on a subshell's thread
    thread.start()
    thread.join()
    assert [busy.check(), busy.check(), busy.check()] == [False, True, False]
    assert len(kernel.published) == 1


def test_the_watcher_thread_publishes_until_stopped() -> None:
    kernel = FakeKernel()
    busy = BusyStatus(kernel, kernel.parent, interval=0.01).start()
    kernel.subshells.append("s")
    deadline = time.monotonic() + 5
    while not kernel.published and time.monotonic() < deadline:
        time.sleep(0.01)
    assert kernel.published == [("busy", "shell", kernel.parent)]
    busy.stop()
    busy.message_arrived()
    time.sleep(0.1)
    assert len(kernel.published) == 1, "nothing after the run ended"
    assert not [t for t in threading.enumerate() if t.name == "nbcallback-busy-status"]


def test_only_for_a_running_cell_in_a_kernel_with_subshells(monkeypatch) -> None:
    import IPython

    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    assert BusyStatus.for_foreground_run() is None  # a plain script
    kernel = FakeKernel()
    kernel._supports_kernel_subshells = False  # ipykernel 6: no subshells, nothing to correct
    monkeypatch.setattr(IPython, "get_ipython", lambda: SimpleNamespace(kernel=kernel))
    assert BusyStatus.for_foreground_run() is None
    kernel._supports_kernel_subshells = True
    kernel.parent = None
    assert BusyStatus.for_foreground_run() is None  # no cell running
    kernel.parent = {"header": {"msg_type": "execute_request"}}
    assert isinstance(BusyStatus.for_foreground_run(), BusyStatus)
