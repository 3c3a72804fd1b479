"""Render plot frames in a helper process, off the training thread.

A matplotlib frame costs 5-15 ms (blitted) to 40-60 ms (full redraw) of CPU
on a small VM; a run also pays one figure build and the final frame.  Inline,
that is 2-4 % of a short tutorial run, above the 1 % display budget.  In a
helper process the training thread only pays for decimating and pickling at
most a few thousand points per line (well under a millisecond), and the frame
is drawn on another core while training goes on.

Protocol (over the helper's stdin/stdout, 8-byte little-endian length + pickle):

* request ``("init", options)``: build the :class:`~nbcallback.widgets.plot.LossPlot`;
* request ``("build", plot_data)``: build the run's figure ahead of its first
  frame (:meth:`~nbcallback.widgets.plot.LossPlot.prebuild`); no answer;
* request ``("prefinal", plot_data)``: the last evaluation began; draw ahead what
  the final frame will show of the training curve
  (:meth:`~nbcallback.widgets.plot.LossPlot.prepare_final`); no answer;
* request ``("render", request_id, plot_data, final)``: answered with
  ``(request_id, png_or_None, seconds, error_or_None)``;
* EOF on stdin (or ``("close",)``): exit.

The helper is started with ``python -m nbcallback.widgets.plot_worker``: a
fresh interpreter, so nothing of the parent (its ``__main__``, its threads, a
notebook kernel) is re-imported or forked.  If it cannot start or dies,
:class:`PlotWorker` reports it and the callback renders inline instead.

Starting it costs ~0.7 s of CPU (the interpreter and matplotlib's import),
taken from the same two cores training runs on.  A notebook trains cell
after cell, so a finished run hands its helper back (:func:`release`) and
the next run of the process takes it over (:func:`acquire`); with the same
plot options it even keeps its figure
(:meth:`~nbcallback.widgets.plot.LossPlot.restart`).  Idle helpers are kept
for at most a minute (two at most), killed at interpreter exit, and
forgotten (not touched) in forked children.
"""
from __future__ import annotations

import atexit
import dataclasses
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
import time
from array import array
from typing import Any, BinaryIO

__all__ = ["PlotWorker", "acquire", "prewarm", "release", "main"]

_HEADER = struct.Struct("<Q")


def _send(stream: BinaryIO, message: Any) -> None:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


def _receive(stream: BinaryIO) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("the other side closed the pipe")
    (size,) = _HEADER.unpack(header)
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError("the other side closed the pipe mid-message")
    return pickle.loads(payload)


def _compact(data: Any) -> Any:
    """PlotData with its lines as typed arrays: about 3x fewer bytes through the pipe."""

    def pack(line: Any) -> tuple[array, array]:
        xs, ys = line
        return array("d", xs), array("f", ys)

    return dataclasses.replace(
        data,
        raw=pack(data.raw),
        smooth=pack(data.smooth),
        evals={name: pack(line) for name, line in data.evals.items()},
    )


class PlotWorker:
    """The parent side: one helper process per run.

    Args:
        options: keyword arguments of :class:`~nbcallback.widgets.plot.LossPlot`.
        python: the interpreter to start (``sys.executable`` by default).

    Methods never block the caller for long: :meth:`submit` queues one request
    for a writer thread (call it when :attr:`busy` is False: one frame at a
    time), :meth:`poll` returns a finished frame if there is one, :meth:`wait`
    is for the final frame.
    """

    def __init__(self, options: dict[str, Any], python: str | None = None) -> None:
        self._results: queue.Queue[tuple[int, bytes | None, float, str | None]] = queue.Queue()
        self._next_id = 0
        self.in_flight: int | None = None
        self.error: str | None = None
        env = dict(os.environ)
        # The helper never uses torch; keep it from claiming threads anyway.
        env.setdefault("OMP_NUM_THREADS", "1")
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        self.owner_pid = os.getpid()
        self._process = subprocess.Popen(
            [python or sys.executable, "-m", "nbcallback.widgets.plot_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdin = self._process.stdin
        self._stdout = self._process.stdout
        # Requests are written by a thread: a pipe write can wait for the helper
        # (still starting, or reading a large frame), the training thread must not.
        self._outbox: queue.Queue[Any] = queue.Queue()
        self._outbox.put(("init", options))
        self._writer = threading.Thread(target=self._write, name="nbcallback-plot-writer", daemon=True)
        self._writer.start()
        self._reader = threading.Thread(target=self._read, name="nbcallback-plot-reader", daemon=True)
        self._reader.start()

    def _write(self) -> None:
        while True:
            message = self._outbox.get()
            if message is None:
                break
            try:
                _send(self._stdin, message)
            except (OSError, ValueError) as exc:
                if self.error is None:
                    self.error = f"plot helper pipe failed: {exc}"
                self._results.put((-1, None, 0.0, self.error))
                break
        try:
            self._stdin.close()
        except OSError:
            pass

    def _read(self) -> None:
        try:
            while True:
                self._results.put(_receive(self._stdout))
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            if self.error is None:
                code = self._process.poll()
                self.error = f"plot helper ended ({exc}; exit code {code})"
            self._results.put((-1, None, 0.0, self.error))

    @property
    def alive(self) -> bool:
        """False once the helper exited or failed."""
        return self.error is None and self._process.poll() is None

    @property
    def busy(self) -> bool:
        """True while a request is being rendered."""
        return self.in_flight is not None

    def _require_alive(self) -> None:
        if not self.alive:
            raise RuntimeError(self.error or "the plot helper is not running")

    def submit(self, data: Any, final: bool = False) -> int:
        """Send a frame request; returns its id.

        Raises:
            RuntimeError: the helper is not running.
        """
        self._require_alive()
        self._next_id += 1
        self.in_flight = self._next_id
        self._outbox.put(("render", self._next_id, _compact(data), final))
        return self._next_id

    @property
    def pid(self) -> int:
        """The helper's process id."""
        return self._process.pid

    def reset(self, options: dict[str, Any]) -> None:
        """Start over for a new run: a fresh figure with ``options`` (call when not :attr:`busy`).

        Raises:
            RuntimeError: the helper is not running, or still drawing a frame.
        """
        self._require_alive()
        if self.busy:
            raise RuntimeError("the plot helper is still drawing a frame")
        while True:  # answers nobody waited for (a run that ended without its final frame)
            try:
                self._results.get_nowait()
            except queue.Empty:
                break
        self._outbox.put(("init", options))

    def prebuild(self, data: Any) -> None:
        """Have the helper build the figure for ``data``'s layout before the first
        frame is asked for (no answer; a failure shows at the next frame).

        Raises:
            RuntimeError: the helper is not running.
        """
        self._require_alive()
        self._outbox.put(("build", _compact(data)))

    def prepare_final(self, data: Any) -> None:
        """Have the helper draw ahead the final frame's training curve (no answer).

        Raises:
            RuntimeError: the helper is not running.
        """
        self._require_alive()
        self._outbox.put(("prefinal", _compact(data)))

    def poll(self) -> tuple[bytes | None, float] | None:
        """The finished frame ``(png, render seconds)``, or None when none is ready."""
        try:
            request_id, png, seconds, error = self._results.get_nowait()
        except queue.Empty:
            return None
        return self._finish(request_id, png, seconds, error)

    def wait(self, timeout: float) -> tuple[bytes | None, float] | None:
        """Block up to ``timeout`` seconds for the frame in flight."""
        deadline = time.monotonic() + timeout
        while self.in_flight is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                request_id, png, seconds, error = self._results.get(timeout=left)
            except queue.Empty:
                return None
            result = self._finish(request_id, png, seconds, error)
            if request_id == -1 or self.in_flight is None:
                return result
        return None

    def _finish(self, request_id: int, png: bytes | None, seconds: float, error: str | None) -> tuple[bytes | None, float] | None:
        if error is not None:
            self.error = self.error or error
        if request_id == -1 or request_id == self.in_flight:
            self.in_flight = None
        if request_id == -1:
            return None
        return png, seconds

    def close(self, timeout: float = 2.0) -> None:
        """Stop the helper now.

        It holds nothing worth waiting for once the final frame is in (no files,
        no state), so it is killed rather than asked to exit: a run never waits
        for its interpreter shutdown or for a matplotlib import still under way
        after a very short run.  ``timeout`` bounds the wait for the kill.
        """
        self._outbox.put(None)
        if self._process.poll() is None:
            self._process.kill()
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:  # reaped by the OS when the parent exits
            pass
        self._writer.join(timeout)
        try:
            self._stdout.close()
        except OSError:
            pass


class _IdleHelpers:
    """Helpers of finished runs, kept for the next run of this process.

    Args:
        limit: the most idle helpers kept (two runs with a plot at once, e.g.
            a LiveLossPlot next to a Dashboard, each need one).
        idle_seconds: an idle helper is killed after this long.
    """

    def __init__(self, limit: int = 2, idle_seconds: float = 60.0) -> None:
        self.limit = limit
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._idle: list[tuple[float, PlotWorker]] = []
        self._timer: threading.Timer | None = None

    def take(self, options: dict[str, Any]) -> PlotWorker | None:
        """An idle helper reset for a new run with ``options``, or None."""
        while True:
            with self._lock:
                if not self._idle:
                    return None
                _, worker = self._idle.pop()
            if worker.alive and worker.owner_pid == os.getpid():
                try:
                    worker.reset(options)
                    return worker
                except RuntimeError:
                    pass
            worker.close(timeout=0.5)

    def give(self, worker: PlotWorker) -> None:
        """Keep ``worker`` for the next run (killed instead when it is not reusable)."""
        if not worker.alive or worker.busy or worker.owner_pid != os.getpid():
            worker.close()
            return
        with self._lock:
            self._idle.append((time.monotonic(), worker))
            surplus = self._idle[: -self.limit] if len(self._idle) > self.limit else []
            del self._idle[: len(surplus)]
            if self._timer is None:
                self._timer = threading.Timer(self.idle_seconds, self._expire)
                self._timer.daemon = True
                self._timer.start()
        for _, old in surplus:
            old.close()

    def _expire(self) -> None:
        """Kill the helpers idle for ``idle_seconds``; look again when others remain."""
        now = time.monotonic()
        with self._lock:
            self._timer = None
            expired = [w for since, w in self._idle if now - since >= self.idle_seconds]
            self._idle = [(since, w) for since, w in self._idle if now - since < self.idle_seconds]
            if self._idle:
                wait = self.idle_seconds - (now - self._idle[0][0])
                self._timer = threading.Timer(max(0.05, wait), self._expire)
                self._timer.daemon = True
                self._timer.start()
        for worker in expired:
            worker.close()

    def close_all(self) -> None:
        """Kill every idle helper (at interpreter exit)."""
        with self._lock:
            idle, self._idle = self._idle, []
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        for _, worker in idle:
            worker.close(timeout=0.5)

    def forget(self) -> None:
        """In a forked child: the helpers belong to the parent; drop them untouched."""
        self._lock = threading.Lock()
        self._idle = []
        self._timer = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._idle)


#: The idle helpers of this process (a cache of processes, not a setting).
_IDLE = _IdleHelpers()
atexit.register(_IDLE.close_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_IDLE.forget)


def acquire(options: dict[str, Any]) -> PlotWorker:
    """A helper for a new run: an idle one reset with ``options``, or a new process.

    Raises:
        OSError: no helper process could be started.
    """
    return _IDLE.take(options) or PlotWorker(options)


def prewarm(options: dict[str, Any]) -> None:
    """Start a helper now, kept idle for the next run, unless one is idle already.

    A widget callback created in a notebook calls this, so the helper's
    start-up (~0.7 s of CPU, on the other core) runs while the cell goes on
    to training instead of during the first run's first seconds.  Unused, it
    is killed after the idle time like any idle helper.

    Raises:
        OSError: no helper process could be started.
    """
    if len(_IDLE) == 0:
        _IDLE.give(PlotWorker(options))


def release(worker: PlotWorker) -> None:
    """A run is done with ``worker``: keep it for the next run, or stop it when it
    cannot be reused (failed, or still drawing)."""
    _IDLE.give(worker)


def _drain(stdin: BinaryIO, inbox: "queue.Queue[Any]") -> None:
    """Read requests as soon as they arrive, so the parent's writes never wait
    for a frame (or the matplotlib import) to finish."""
    try:
        while True:
            inbox.put(_receive(stdin))
    except (EOFError, OSError):
        inbox.put(("close",))


def main() -> int:
    """The helper's loop: read requests on stdin, answer on (the original) stdout."""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not corrupt the protocol
    sys.stdout = sys.stderr
    inbox: queue.Queue[Any] = queue.Queue()
    threading.Thread(target=_drain, args=(sys.stdin.buffer, inbox), daemon=True).start()
    from nbcallback.widgets.plot import LossPlot

    plot: LossPlot | None = None
    options: Any = None
    while True:
        message = inbox.get()
        kind = message[0]
        if kind == "close":
            return 0
        if kind == "init":
            if plot is not None and message[1] == options:
                plot.restart()  # a new run with the same options keeps the figure
                continue
            if plot is not None:
                plot.close()
            options = message[1]
            plot = LossPlot(**options)
            plot.prepare()
            continue
        if kind == "build":
            if plot is None:
                plot = LossPlot()
            try:
                plot.prebuild(message[1])
            except Exception:  # the next render builds the figure again and reports what fails
                plot.close()
            continue
        if kind == "prefinal":
            if plot is not None:
                try:
                    plot.prepare_final(message[1])
                except Exception:  # the final frame is then drawn in full, and reports what fails
                    plot._prefinal = None
            continue
        if kind == "render":
            _, request_id, data, final = message
            started = time.perf_counter()
            try:
                if plot is None:
                    plot = LossPlot()
                png = plot.render(data, final=final)
                error = None
            except Exception as exc:  # reported to the parent, which falls back to inline rendering
                png, error = None, f"{type(exc).__name__}: {exc}"
            _send(out, (request_id, png, time.perf_counter() - started, error))


if __name__ == "__main__":
    sys.exit(main())
