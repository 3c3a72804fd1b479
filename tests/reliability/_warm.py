"""A warm training process for the kill tests, and the client the tests drive it with.

Importing torch costs seconds on a loaded 2-core CI machine, so the SIGKILL
tests do not start one interpreter per kill.  ``python -m tests.reliability._warm``
imports torch and nbcallback once, then serves requests (one JSON line each
on stdin): for every request it ``fork()``\\s a child that runs one scenario of
:mod:`tests.reliability._scenarios`, and SIGKILLs that child

* ``{"mode": "delay", "seconds": s}``: ``s`` seconds after the child reported
  that training began (a kill at a random moment),
* ``{"mode": "hold"}``: as soon as the child reports that it reached the fault
  point it was told to stop at (a kill at a chosen moment inside a save),
* or not at all (``kill=None``): the child runs to its end.

It answers with one JSON line: the child's PID, how it ended (``killed``,
``exited`` with its exit code, or ``timeout``) and the events the child
reported before it died.  Children die with the server (``PR_SET_PDEATHSIG``)
and every child is killed at its hard deadline, so nothing outlives a test.

The child has torch's state of the server (one thread, nothing run yet): fork
is safe because no OpenMP or autograd worker thread exists before the fork.
"""
from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- server side


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _child(request: dict[str, Any], notify_fd: int, server_pid: int) -> int:
    _die_with_parent()
    if os.getppid() != server_pid:  # the server died before PDEATHSIG was set
        return 1
    log = request.get("log")
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    else:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)

    def notify(event: str, **data: Any) -> None:
        line = json.dumps({"event": event, "t": time.monotonic(), **data}) + "\n"
        os.write(notify_fd, line.encode())

    from tests.reliability import _scenarios

    try:
        getattr(_scenarios, request["scenario"])(request.get("args", {}), notify)
    except BaseException:
        traceback.print_exc()
        return 1
    notify("done")
    return 0


def _run_one(request: dict[str, Any]) -> dict[str, Any]:
    read_fd, write_fd = os.pipe()
    server_pid = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_fd)
        code = 1
        try:
            code = _child(request, write_fd, server_pid)
        finally:
            os._exit(code)
    os.close(write_fd)
    kill = request.get("kill") or {}
    mode = kill.get("mode")
    started = time.monotonic()
    hard_deadline = started + float(request.get("timeout", 60))
    kill_at: float | None = None
    ended = None
    events: list[dict[str, Any]] = []
    buffer = b""

    def parse(data: bytes) -> list[dict[str, Any]]:
        nonlocal buffer
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        new = [json.loads(line) for line in lines if line.strip()]
        events.extend(new)
        return new

    def sigkill(reason: str) -> None:
        nonlocal ended
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        ended = reason

    eof = False
    while ended is None and not eof:
        now = time.monotonic()
        limit = hard_deadline if kill_at is None else min(kill_at, hard_deadline)
        if now >= limit:
            sigkill("killed" if kill_at is not None and kill_at < hard_deadline else "timeout")
            break
        ready, _, _ = select.select([read_fd], [], [], limit - now)
        if not ready:
            continue
        data = os.read(read_fd, 1 << 16)
        if not data:
            eof = True
            break
        for event in parse(data):
            if mode == "delay" and event["event"] == "begin" and kill_at is None:
                kill_at = time.monotonic() + float(kill["seconds"])
            elif mode == "hold" and event["event"] == "hold":
                sigkill("killed")
                break
    _, status = os.waitpid(pid, 0)
    # Whatever the child reported before it died is still in the pipe.
    while True:
        data = os.read(read_fd, 1 << 16)
        if not data:
            break
        parse(data)
    os.close(read_fd)
    if ended is None:
        ended = "exited"
    return {
        "pid": pid,
        "ended": ended,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "events": events,
        "seconds": time.monotonic() - started,
    }


def serve() -> None:
    import torch

    torch.set_num_threads(1)
    import threading

    from tests.reliability import _scenarios

    _scenarios.warm_up()
    # fork() copies only the calling thread: there must be no other one.
    assert threading.active_count() == 1, threading.enumerate()

    out = sys.stdout.buffer
    out.write((json.dumps({"event": "ready", "pid": os.getpid()}) + "\n").encode())
    out.flush()
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            reply = _run_one(request)
        except Exception as exc:  # report, keep serving
            reply = {"ended": "error", "error": "".join(traceback.format_exception(exc))}
        out.write((json.dumps(reply) + "\n").encode())
        out.flush()


# --------------------------------------------------------------------------- client side


class WarmProcess:
    """The test side: start the server, send requests, kill it (by PID) at the end."""

    def __init__(self, stderr_path: Path, start_timeout: float = 180.0) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["OMP_NUM_THREADS"] = "1"
        env["MKL_NUM_THREADS"] = "1"
        self._stderr = open(stderr_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability._warm"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=str(REPO_ROOT),
            env=env,
        )
        self.stderr_path = stderr_path
        self._buffer = b""
        try:
            hello = self._read(start_timeout)
        except BaseException:
            self.close()
            raise
        assert hello.get("event") == "ready", hello

    def _read(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the warm training process did not answer within {timeout:.0f} s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            data = os.read(fd, 1 << 16)
            if not data:
                raise RuntimeError(
                    "the warm training process died: " + self.stderr_path.read_text(errors="replace")[-3000:]
                )
            self._buffer += data
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def run(self, scenario: str, args: dict[str, Any], kill: dict[str, Any] | None = None,
            timeout: float = 60.0, log: Path | None = None) -> dict[str, Any]:
        request = {"scenario": scenario, "args": args, "kill": kill, "timeout": timeout,
                   "log": str(log) if log else None}
        assert self.proc.stdin is not None
        if self.proc.poll() is not None:
            raise RuntimeError("the warm training process is gone (an earlier request failed)")
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
            reply = self._read(timeout + 60)
        except BaseException:
            self.close()  # its answers would be out of step with the next requests
            raise
        if reply.get("ended") == "error":
            raise RuntimeError(reply["error"])
        return reply

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.proc.kill()  # by PID; its children die with it (PDEATHSIG)
        finally:
            self.proc.wait(timeout=30)
            self._stderr.close()


if __name__ == "__main__":
    serve()
