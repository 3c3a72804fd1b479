"""Launching ``torch.distributed.run`` jobs on 127.0.0.1 and MNIST slices for the DDP tests."""
from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def job_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        PYTHONUNBUFFERED="1",
        GLOO_SOCKET_IFNAME="lo",  # gloo talks over the loopback interface only
        MASTER_ADDR="127.0.0.1",
    )
    env.pop("NBCALLBACK_CALLBACK_RANKS", None)
    env.update(extra)
    return env


def run_job(
    script: str | Path, args: list[str], nproc: int = 2, timeout: float = 170, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``python -m torch.distributed.run --nproc_per_node=nproc script args`` on 127.0.0.1; nproc=0: plain python.

    The launcher gets a session of its own; whatever happens, the session is
    stopped in ``finally`` by the launcher's PID (its process-group id), which
    takes the worker processes with it.
    """
    if nproc:
        command = [
            PYTHON, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}",
            "--master_addr=127.0.0.1", f"--master_port={free_port()}", str(script), *args,
        ]
    else:
        command = [PYTHON, str(script), *args]
    proc = subprocess.Popen(
        command,
        cwd=str(REPO_ROOT),
        env=env or job_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def _slice_idx(source: Path, target: Path, count: int) -> None:
    """The first ``count`` items of an uncompressed uint8 IDX file."""
    with open(source, "rb") as handle:
        magic = struct.unpack(">I", handle.read(4))[0]
        ndim = magic & 0xFF
        dims = list(struct.unpack(f">{ndim}I", handle.read(4 * ndim)))
        item = 1
        for size in dims[1:]:
            item *= size
        body = handle.read(count * item)
    dims[0] = count
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(struct.pack(">I", magic) + struct.pack(f">{ndim}I", *dims) + body)


def mnist_slice(mnist_data: Path, target: Path, train: int | None, test: int | None) -> Path:
    """A folder with the first ``train`` training and ``test`` test rows of MNIST (flat layout)."""
    parts = (
        ("train", train, "train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
        ("test", test, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
    )
    for sub, count, images, labels in parts:
        if count is None:
            continue
        for name in (images, labels):
            _slice_idx(mnist_data / sub / name, target / sub / name, count)
    return target


def torchrun(script: str | Path, args: list[str], *, nproc: int, port: int, nnodes: int = 1,
             max_restarts: int = 0) -> list[str]:
    """A ``torch.distributed.run`` agent with the c10d rendezvous on ``127.0.0.1:port`` (what docs/distributed.md shows)."""
    return [
        PYTHON, "-m", "torch.distributed.run", f"--nnodes={nnodes}", f"--nproc-per-node={nproc}",
        "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=nbcallback-test",
        f"--max-restarts={max_restarts}", "--monitor-interval=0.5", str(script), *args,
    ]


def run_agents(commands: list[list[str]], envs: list[dict[str, str]], timeout: float = 170) -> list[subprocess.CompletedProcess]:
    """Start every agent (each in a session of its own), wait for all; stop what is left in ``finally``."""
    procs = [
        subprocess.Popen(command, cwd=str(REPO_ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
        for command, env in zip(commands, envs)
    ]
    results = []
    deadline = time.monotonic() + timeout
    try:
        for command, proc in zip(commands, procs):
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            results.append(subprocess.CompletedProcess(command, proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return results
