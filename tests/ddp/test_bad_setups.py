"""No bad set-up hangs: every wait for another rank ends after the limit with an error naming the rank.

Each job runs ``fault_worker.py`` on 127.0.0.1 with ``NBCALLBACK_DIST_TIMEOUT=5``. A job that hung
would outlive ``run_job``'s own timeout and fail the test. Without these limits, torch waits 30 minutes.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.ddp.support import PYTHON, REPO_ROOT, free_port, job_env, run_job

pytestmark = pytest.mark.ddp

WORKER = Path(__file__).with_name("fault_worker.py")
LIMIT = "5"


def errors(out: Path) -> dict[int, dict]:
    return {int(p.stem[4:]): json.loads(p.read_text()) for p in out.glob("rank*.json")}


def test_a_rank_that_never_arrives(tmp_path: Path) -> None:
    proc = run_job(WORKER, ["never", str(tmp_path)], timeout=120, env=job_env(NBCALLBACK_DIST_TIMEOUT=LIMIT))
    assert proc.returncode != 0
    found = errors(tmp_path)
    assert list(found) == [0], proc.stderr[-3000:]
    message = found[0]["error"]
    assert found[0]["type"] == "DistributedError"
    assert message.startswith("Rank 0 of 2 waited 5 s for rank 1 to join (init_distributed")
    assert "NBCALLBACK_DIST_TIMEOUT" in message and "--nproc-per-node" in message
    assert found[0]["seconds"] >= 5  # it waited the whole limit (and, by returning, not longer than the job's timeout)
    assert "rank 0: Rank 0 of 2 waited 5 s for rank 1" in proc.stderr  # the user sees it in the job's output


def start_rank(rank: int, world_size: int, port: int, out: Path) -> subprocess.Popen:
    env = job_env(RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank), MASTER_PORT=str(port),
                  NBCALLBACK_DIST_TIMEOUT=LIMIT)
    return subprocess.Popen(
        [PYTHON, str(WORKER), "world", str(out)], cwd=str(REPO_ROOT), env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )


def run_ranks(sizes: list[int], out: Path) -> list[int]:
    port = free_port()
    procs = [start_rank(rank, size, port, out) for rank, size in enumerate(sizes)]
    codes = []
    try:
        for proc in procs:
            proc.communicate(timeout=120)
            codes.append(proc.returncode)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return codes


def test_world_sizes_that_differ_fail_on_every_rank_with_the_sizes(tmp_path: Path) -> None:
    assert run_ranks([2, 3], tmp_path) == [3, 3]
    found = errors(tmp_path)
    expected = "The ranks disagree on the world size: rank 0 says 2, rank 1 says 3."
    assert expected in found[0]["error"] and expected in found[1]["error"]
    assert found[1]["error"].startswith("Rank 1 (world size 3): ")
    assert "same --nnodes and --nproc-per-node" in found[0]["error"]


def test_a_larger_world_on_rank_0_waits_for_the_rank_that_does_not_exist(tmp_path: Path) -> None:
    assert run_ranks([3, 2], tmp_path) == [3, 3]
    found = errors(tmp_path)
    # Rank 0 hosts the store and waits for 2 more ranks; rank 1 waits for rank 0 to open the group.
    assert found[0]["error"].startswith("Rank 0 of 3 hosts the key-value store at 127.0.0.1:")
    assert "waited 5 s for the other ranks to connect" in found[0]["error"]
    assert "2/3 clients joined (this one included)" in found[0]["error"]
    assert found[1]["error"].startswith("Rank 1 of 2 waited 5 s for rank 0 to open the group")


def test_a_rank_that_raises_and_stays_alive(tmp_path: Path) -> None:
    proc = run_job(WORKER, ["raises", str(tmp_path)], timeout=120, env=job_env(NBCALLBACK_DIST_TIMEOUT=LIMIT))
    assert proc.returncode != 0
    found = errors(tmp_path)
    assert found[1] == {**found[1], "type": "ValueError", "error": "a bug in rank 1's callback"}
    message = found[0]["error"]
    assert found[0]["type"] == "DistributedError", message
    assert message.startswith("Rank 0 of 2 waited for the other ranks in the stop vote at an epoch's end"), message
    assert "did not join it within 5 s" in message and "NBCALLBACK_DIST_TIMEOUT" in message


def test_ranks_whose_datasets_have_different_row_counts(tmp_path: Path) -> None:
    proc = run_job(WORKER, ["rows", str(tmp_path)], timeout=120, env=job_env(NBCALLBACK_DIST_TIMEOUT=LIMIT))
    assert proc.returncode != 0
    found = errors(tmp_path)
    assert 0 in found, proc.stderr[-3000:]
    message = found[0]["error"]
    # 10 rows on rank 0 and 12 on rank 1, batches of 2: rank 0 ends epoch 1 when rank 1 is at step 6.
    assert message.startswith(
        "The ranks are out of step: this rank (rank 0) is at the end of an epoch after 5 steps of this run, "
        "but another rank is at step 6 (within an epoch)"
    ), message
    assert "different numbers of batches per epoch" in message
    if 1 in found:  # rank 1 reads the same vote, unless torchrun ended it first
        assert found[1]["error"].startswith("The ranks are out of step: this rank (rank 1) is at step 6")


def test_the_limit_comes_from_the_argument_the_environment_or_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from nbcallback.train.distributed import DEFAULT_TIMEOUT_S, TIMEOUT_ENV, distributed_timeout

    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert distributed_timeout() == DEFAULT_TIMEOUT_S == 300
    monkeypatch.setenv(TIMEOUT_ENV, "12.5")
    assert distributed_timeout() == 12.5
    assert distributed_timeout(7) == 7.0  # the argument wins
    monkeypatch.setenv(TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match="NBCALLBACK_DIST_TIMEOUT must be a number of seconds, e.g. 300, but got 'soon'"):
        distributed_timeout()
    with pytest.raises(ValueError, match="timeout_s must be a positive number of seconds"):
        distributed_timeout(0)
