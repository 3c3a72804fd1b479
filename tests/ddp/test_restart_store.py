"""A group started again on the store of a killed one: what torchrun does on ``--max-restarts``.

The test hosts a ``TCPStore`` that outlives the workers, as torchrun's agent does. Attempt 0: ranks 0 and 1
join and are SIGKILLed. Attempt 1: rank 0 starts at once, rank 1 three seconds later. torch's
``init_process_group`` on rank 0 then reads the address the killed rank 1 left under the same key and fails
(``Gloo connectFullMesh failed … Connection refused``; pytorch/pytorch#135712); ``init_distributed`` waits
until rank 1 of this attempt has announced itself and joins under a fresh name.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest
import torch.distributed as dist

from tests.ddp.support import PYTHON, REPO_ROOT, job_env

pytestmark = pytest.mark.ddp

WORKER = Path(__file__).with_name("store_worker.py")


def start(mode: str, rank: int, delay: float, port: int, log: Path) -> subprocess.Popen:
    env = job_env(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_PORT=str(port),
                  TORCHELASTIC_USE_AGENT_STORE="True", NBCALLBACK_DIST_TIMEOUT="20")
    with open(log, "w") as handle:
        return subprocess.Popen([PYTHON, str(WORKER), mode, str(delay)], cwd=str(REPO_ROOT), env=env,
                                stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def wait_joined(procs: list[subprocess.Popen], logs: list[Path], timeout: float) -> list[bool]:
    """Whether each worker printed ``joined 2`` before it ended or ``timeout`` passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        joined = ["joined 2" in log.read_text() for log in logs]
        if all(joined) or any(proc.poll() is not None for proc in procs):
            break
        time.sleep(0.2)
    time.sleep(0.5)  # let a worker that failed finish writing
    return ["joined 2" in log.read_text() for log in logs]


def kill(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def two_attempts(mode: str, folder: Path) -> tuple[list[bool], list[str]]:
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=60))
    port = store.port
    logs = [folder / f"attempt0_rank{rank}.log" for rank in (0, 1)]
    first = [start(mode, rank, 0, port, log) for rank, log in zip((0, 1), logs)]
    try:
        joined = wait_joined(first, logs, 60)
    finally:
        kill(first)
    assert joined == [True, True], [log.read_text()[-2000:] for log in logs]
    logs = [folder / f"attempt1_rank{rank}.log" for rank in (0, 1)]
    second = [start(mode, 0, 0, port, logs[0]), start(mode, 1, 3, port, logs[1])]
    try:
        joined = wait_joined(second, logs, 60)
    finally:
        kill(second)
    return joined, [log.read_text() for log in logs]


def test_init_distributed_joins_the_restarted_group(tmp_path: Path) -> None:
    joined, outputs = two_attempts("ours", tmp_path)
    assert joined == [True, True], outputs[0][-3000:] + outputs[1][-3000:]


def test_torch_init_process_group_reads_the_killed_ranks_address(tmp_path: Path) -> None:
    """Documents the upstream behaviour init_distributed works around; if this fails, torch fixed it.

    torch's failure depends on timing, and so does its shape: in one whole run of the suite with two torch threads
    (2026-11-29) its restarted group formed anyway, in another rank 1 failed first while rank 0 was still retrying
    the dead address (Gloo's ``connectFullMesh failed … Connection refused`` comes when that retry times out). So up
    to three restarts are tried, and in at least one the group must not form; the scenario is then the one
    ``test_init_distributed_joins_the_restarted_group`` passes. docs/distributed.md has the measured failures.
    """
    tries = []
    for attempt in range(3):
        folder = tmp_path / f"restart{attempt}"
        folder.mkdir()
        joined, outputs = two_attempts("plain", folder)
        tries.append((joined, [output[-1500:] for output in outputs]))
        if not all(joined):
            break
    assert not all(tries[-1][0]), tries
