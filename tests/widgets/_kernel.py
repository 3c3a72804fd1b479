"""Helpers for the kernel-level widget tests (and benchmarks/widgets.py).

* :class:`RecordingClient` -- an nbclient ``NotebookClient`` that tallies every
  iopub message (type, time, JSON bytes + binary buffers) and, like JupyterLab's
  widget manager, forgets the state of widget models whose comm was closed
  before saving (stock nbclient 0.11 keeps it: it has no comm_close handling).
* :func:`make_notebook` / :func:`run_notebook` -- build and execute small notebooks.
* :class:`KernelSession` -- a raw jupyter_client kernel for the tests that must
  act while a cell runs (interrupt, comm messages over a subshell).
"""
from __future__ import annotations

import copy
import datetime
import json
import os
import queue
import sys
import time
from pathlib import Path
from typing import Any, Iterable

import nbformat
from nbclient import NotebookClient

from tests.widgets._reader import put_buffers

REPO = Path(__file__).resolve().parents[2]
#: The widget model of the live view (render_widget.DashboardWidget, an anywidget).
OUR_MODELS = ("AnyModel",)

#: Synthetic data with a learnable signal; every notebook starts with it.
SETUP = '''\
import os, sys, time, torch
torch.set_num_threads(1)
from torch import nn
from nbcallback.train import Model, Callback, LossMonitor
from nbcallback.widgets import ProgressBar, LiveLossPlot, Dashboard, run_in_background
SEED = int(os.environ.get("NBCB_TEST_SEED", "0"))
torch.manual_seed(SEED)

def batches(n, bs=32, seed=0):
    g = torch.Generator().manual_seed(SEED * 1000 + seed)
    out = []
    for _ in range(n):
        x = torch.randn(bs, 16, generator=g)
        out.append((x, (x[:, :2].sum(1) > 0).long()))
    return out

def new_model(lr=0.05):
    net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    return Model(net, nn.CrossEntropyLoss(), opt, metrics={"accuracy"}), opt

class Pace(Callback):
    """Make every training step last a little longer, so tiny runs take seconds."""
    def __init__(self, seconds):
        self.seconds = seconds
    def on_train_step_end(self, run_context):
        time.sleep(self.seconds)

model, opt = new_model()
train_ds, valid_ds = batches(150), batches(30, seed=1)
'''


def kernel_env(**extra: str) -> dict[str, str]:
    """The environment for test kernels: one thread, the repo importable."""
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = "1"
    env["MKL_NUM_THREADS"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("NBCALLBACK_DISPLAY", None)
    env.update(extra)
    return env


def make_notebook(cells: Iterable[str], setup: bool = True) -> nbformat.NotebookNode:
    """A notebook of code cells (the :data:`SETUP` cell first when ``setup``)."""
    nb = nbformat.v4.new_notebook()
    sources = ([SETUP] if setup else []) + list(cells)
    nb.cells = [nbformat.v4.new_code_cell(src) for src in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def message_bytes(msg: dict[str, Any]) -> int:
    """JSON bytes of the content plus binary buffers: what travels to the front end."""
    size = len(json.dumps(msg.get("content", {}), default=str))
    for buffer in msg.get("buffers") or ():
        size += len(bytes(buffer))
    return size


class RecordingClient(NotebookClient):
    """NotebookClient that records iopub traffic and drops closed widget models on save.

    Args:
        nb: the notebook to run.
        forget_closed: emulate JupyterLab's widget manager: models whose comm was
            closed are not saved (stock nbclient 0.11 saves them).
        **kwargs: NotebookClient options.
    """

    def __init__(self, nb: nbformat.NotebookNode, forget_closed: bool = True, **kwargs: Any) -> None:
        super().__init__(nb, **kwargs)
        self.forget_closed = forget_closed
        #: (the kernel's send time, msg_type, bytes, cell index, binary buffers): the time in the message's header,
        #: so that the rates measured do not depend on when this (possibly busy) process read the messages.
        self.messages: list[tuple[float, str, int, int, int]] = []
        self.opened: dict[str, str] = {}
        self.closed: set[str] = set()
        self.stock_state: dict[str, Any] = {}
        self.stock_buffers: dict[str, Any] = {}
        #: (cell index, msg_type, content, buffers) of every comm_open / comm_msg / comm_close, in order.
        self.comms: list[tuple[int, str, dict[str, Any], list[Any]]] = []

    def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
        msg_type = msg["msg_type"]
        if msg_type not in ("status", "execute_input"):
            buffers = len(msg.get("buffers") or ())
            self.messages.append((sent_at(msg), msg_type, message_bytes(msg), cell_index, buffers))
        if msg_type in ("comm_open", "comm_msg", "comm_close"):
            self.comms.append((cell_index, msg_type, msg["content"], list(msg.get("buffers") or ())))
        if msg_type == "comm_open":
            state = msg["content"].get("data", {}).get("state", {})
            self.opened[msg["content"]["comm_id"]] = state.get("_model_name", "?")
        elif msg_type == "comm_close":
            self.closed.add(msg["content"]["comm_id"])
        return super().process_message(msg, cell, cell_index)

    def set_widgets_metadata(self) -> None:
        # What a stock nbclient would save, kept for comparison.
        self.stock_state = {k: dict(v) for k, v in self.widget_state.items()}
        self.stock_buffers = {k: dict(v) for k, v in self.widget_buffers.items()}
        if self.forget_closed:
            for comm_id in self.closed:
                self.widget_state.pop(comm_id, None)
                self.widget_buffers.pop(comm_id, None)
        super().set_widgets_metadata()

    def widget_views(self, cell_index: int) -> dict[str, list[dict[str, Any]]]:
        """comm id -> the successive ``view`` values a front end received: the comm_open's state first, then each
        ``view`` trait change and ``{"type": "view"}`` custom message, in order."""
        views: dict[str, list[dict[str, Any]]] = {}
        for index, msg_type, content, buffers in self.comms:
            if index != cell_index:
                continue
            state = content.get("data", {}).get("state", {})
            if msg_type == "comm_open" and state.get("_model_name") in OUR_MODELS:
                views[content["comm_id"]] = [state["view"]] if state.get("view") else []
            elif msg_type == "comm_msg" and content["comm_id"] in views and view_in(content, buffers) is not None:
                views[content["comm_id"]].append(view_in(content, buffers))
        return views

    def widget_specs(self, cell_index: int) -> dict[str, dict[str, Any]]:
        """comm id -> the last ``spec`` a front end received."""
        specs: dict[str, dict[str, Any]] = {}
        for index, msg_type, content, _ in self.comms:
            state = content.get("data", {}).get("state", {})
            if index == cell_index and msg_type in ("comm_open", "comm_msg") and "spec" in state:
                specs[content["comm_id"]] = state["spec"]
        return specs

    def cell_messages(self, cell_index: int) -> list[tuple[float, str, int, int, int]]:
        """The recorded messages of one cell."""
        return [m for m in self.messages if m[3] == cell_index]


def run_notebook(
    nb: nbformat.NotebookNode, tmp_path: Path, *, timeout: int = 120, forget_closed: bool = True, **env: str
) -> tuple[RecordingClient, Path]:
    """Execute ``nb`` in a fresh kernel and save it; returns the client and the saved path."""
    client = RecordingClient(
        nb, forget_closed=forget_closed, timeout=timeout, kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute(env=kernel_env(**env))
    path = tmp_path / "executed.ipynb"
    nbformat.write(nb, path)
    return client, path


def view_in(content: dict[str, Any], buffers: list[Any] | None = None) -> dict[str, Any] | None:
    """The dashboard ``view`` a comm message's content carries (a trait change or a ``{"type": "view"}`` custom
    message, its ``buffers`` put back where the page puts them), or None."""
    data = content.get("data", {})
    if "view" in data.get("state", {}):
        return data["state"]["view"]
    custom = data.get("content") if data.get("method") == "custom" else None
    if not isinstance(custom, dict) or custom.get("type") != "view":
        return None
    return put_buffers(copy.deepcopy(custom["view"]), custom.get("buffer_paths"), buffers)


def sent_at(msg: dict[str, Any]) -> float:
    """When the kernel made ``msg`` (its header's date, POSIX seconds); the time it arrived where it has none."""
    date = msg.get("header", {}).get("date")
    if isinstance(date, datetime.datetime):
        return date.timestamp()
    return time.time()


def traffic_stats(messages: list[tuple[float, str, int, int, int]]) -> dict[str, Any]:
    """Counts, bytes and rates of a cell's messages.

    The *live* window runs from the first display to the final
    ``update_display_data`` (the snapshot); set-up (comm_open) and tear-down
    (blanking + comm_close) are reported separately.
    """
    if not messages:
        return {"count": 0}
    by_type: dict[str, int] = {}
    for message in messages:
        by_type[message[1]] = by_type.get(message[1], 0) + 1
    times = [m[0] for m in messages]
    first_display = next((m[0] for m in messages if m[1] == "display_data"), times[0])
    final = [m[0] for m in messages if m[1] == "update_display_data"]
    end = final[-1] if final else times[-1]
    live = [m for m in messages if first_display < m[0] < end and m[1] == "comm_msg"]
    duration = max(end - first_display, 1e-9)
    peak = 0
    live_times = [m[0] for m in live]
    j = 0
    for i, t in enumerate(live_times):
        while live_times[j] < t - 1.0:
            j += 1
        peak = max(peak, i - j + 1)
    return {
        "count": len(messages),
        "by_type": by_type,
        "bytes": sum(m[2] for m in messages),
        "live_messages": len(live),
        "live_seconds": duration,
        "live_rate": len(live) / duration,
        "live_peak_per_s": peak,
        "live_bytes": sum(m[2] for m in live),
        "live_bytes_per_s": sum(m[2] for m in live) / duration,
        "max_message_bytes": max(m[2] for m in messages),
    }


def our_widget_models(nb: nbformat.NotebookNode) -> list[str]:
    """Model names of widget state saved in the notebook metadata."""
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return [entry.get("model_name", "?") for entry in state.values()]


def widget_view_outputs(nb: nbformat.NotebookNode) -> int:
    """Outputs that still reference a widget view."""
    return sum(
        1
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in out.get("data", {})
    )


def cell_text(cell: Any) -> str:
    """All stream text and text/plain of a cell's outputs."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        else:
            parts.append(out.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


class KernelSession:
    """A kernel driven directly with jupyter_client, for mid-run interaction.

    Usage::

        with KernelSession() as ks:
            msg_id = ks.execute("...")
            ks.wait_for(lambda m: ..., timeout=30)
    """

    def __init__(self, **env: str) -> None:
        from jupyter_client.manager import KernelManager

        self.km = KernelManager(kernel_name="python3")
        self.env = kernel_env(**env)
        self.kc: Any = None
        self.iopub: list[dict[str, Any]] = []

    def __enter__(self) -> "KernelSession":
        self.km.start_kernel(env=self.env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.kc.stop_channels()
        finally:
            self.km.shutdown_kernel(now=True)

    def execute(self, code: str) -> str:
        """Send an execute_request on the main shell; returns its msg_id."""
        return self.kc.execute(code)

    def pump(self, timeout: float = 0.05) -> list[dict[str, Any]]:
        """Collect the iopub messages available now."""
        got = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                msg = self.kc.get_iopub_msg(timeout=max(0.0, left))
            except queue.Empty:
                break
            msg["_received"] = time.monotonic()
            self.iopub.append(msg)
            got.append(msg)
        return got

    def wait_for(self, predicate: Any, timeout: float = 60.0) -> dict[str, Any]:
        """Pump iopub until ``predicate(msg)`` holds for a new message; return it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = self.kc.get_iopub_msg(timeout=min(0.5, max(0.01, deadline - time.monotonic())))
            except queue.Empty:
                continue
            msg["_received"] = time.monotonic()
            self.iopub.append(msg)
            if predicate(msg):
                return msg
        raise TimeoutError("the expected iopub message did not arrive")

    def wait_idle(self, msg_id: str, timeout: float = 90.0) -> dict[str, Any]:
        """Wait for the idle status of ``msg_id`` and return its execute_reply."""
        self.wait_for(
            lambda m: m["msg_type"] == "status"
            and m["parent_header"].get("msg_id") == msg_id
            and m["content"]["execution_state"] == "idle",
            timeout,
        )
        while True:
            reply = self.kc.get_shell_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply

    def outputs_of(self, msg_id: str) -> str:
        """Stream text and text/plain published for ``msg_id`` (display updates included)."""
        parts = []
        for msg in self.iopub:
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            content = msg["content"]
            if msg["msg_type"] == "stream":
                parts.append(content["text"])
            elif msg["msg_type"] in ("display_data", "update_display_data", "execute_result"):
                parts.append(content.get("data", {}).get("text/plain", ""))
            elif msg["msg_type"] == "error":
                parts.append(f"{content['ename']}: {content['evalue']}")
        return "".join(parts)

    def comm_ids(self, model_name: str) -> list[str]:
        """Comm ids of widgets of ``model_name`` opened so far."""
        return [
            m["content"]["comm_id"]
            for m in self.iopub
            if m["msg_type"] == "comm_open"
            and m["content"].get("data", {}).get("state", {}).get("_model_name") == model_name
        ]

    def create_subshell(self, timeout: float = 10.0) -> str:
        """``create_subshell_request`` on the control channel (what JupyterLab >= 4.4 does)."""
        msg = self.kc.session.msg("create_subshell_request", {})
        self.kc.control_channel.send(msg)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = self.kc.control_channel.get_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return reply["content"]["subshell_id"]
        raise TimeoutError("no create_subshell_reply")

    def send_comm(self, comm_id: str, data: dict[str, Any], subshell_id: str | None = None) -> str:
        """Send a ``comm_msg`` on the shell channel as a front end does (optionally to a subshell)."""
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        if subshell_id is not None:
            msg["header"]["subshell_id"] = subshell_id
        self.kc.shell_channel.send(msg)
        return msg["header"]["msg_id"]

    def interrupt(self) -> None:
        """Press the interrupt button (SIGINT to the kernel)."""
        self.km.interrupt_kernel()


def python() -> str:
    """The interpreter running the tests (for subprocess runs)."""
    return sys.executable
