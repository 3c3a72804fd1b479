"""A SIGKILLed worker of a 2-rank job comes back: ``torchrun --max-restarts=1`` + ``BackupAndRestore``.

``tests/ddp/restart_worker.py`` trains 3 epochs of 16 steps; rank 1 kills itself at epoch 2, step 5. torchrun
stops rank 0, starts both ranks again (same c10d rendezvous, same store), and the job resumes from the
backup of epoch 1. Before ``init_distributed`` took a fresh store namespace per start, the restarted group
failed most of the time in ``init_process_group`` (``Gloo connectFullMesh failed … Connection refused``:
the killed rank's address was still in torchrun's store; pytorch/pytorch#135712).
``python -m benchmarks.distributed restart`` repeats this 20 times.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from nbcallback.train import load_checkpoint
from tests.ddp.support import free_port, job_env, run_agents, torchrun

pytestmark = pytest.mark.ddp

WORKER = Path(__file__).parents[1] / "ddp" / "restart_worker.py"


def run(out: Path, *args: str, max_restarts: int) -> str:
    out.mkdir()
    command = torchrun(WORKER, [str(out), *args], nproc=2, port=free_port(), max_restarts=max_restarts)
    (proc,) = run_agents([command], [job_env()], timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return proc.stdout


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("ddp_restart")
    plain = run(root / "plain", max_restarts=0)
    killed = run(root / "killed", "--kill", "2", "5", max_restarts=1)
    return {"root": root, "plain": plain, "killed": killed}


def weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path)


def test_the_restarted_job_ends_with_the_uninterrupted_runs_weights(runs: dict) -> None:
    root = runs["root"]
    reference = weights(root / "plain" / "weights0.pt")
    for rank in (0, 1):
        resumed = weights(root / "killed" / f"weights{rank}.pt")
        assert resumed.keys() == reference.keys()
        assert all(torch.equal(resumed[k], reference[k]) for k in reference), f"rank {rank} differs"


def test_it_resumes_at_the_start_of_epoch_2(runs: dict) -> None:
    killed = runs["root"] / "killed"
    first = {p.stem: json.loads(p.read_text()) for p in killed.glob("attempt*_rank*.json")}
    assert sorted(first) == ["attempt0_rank0", "attempt0_rank1", "attempt1_rank0", "attempt1_rank1"]
    assert first["attempt0_rank1"]["last"] is None  # killed
    for rank in (0, 1):
        assert first[f"attempt1_rank{rank}"]["first"] == [2, 1, 17]  # epoch 2, its step 1, global step 17
        assert first[f"attempt1_rank{rank}"]["last"] == [3, 48]
    stdout = runs["killed"]
    assert "attempt 1: resumed from the backup at the start of epoch 2 (global step 17)" in stdout
    assert re.search(r"^attempt 1: 2 ranks joined in ", stdout, re.M)
    assert "attempt 1: finished 3 epochs" in stdout


def test_no_torn_checkpoint(runs: dict) -> None:
    killed = runs["root"] / "killed"
    files = sorted((killed / "ckpt").iterdir())
    assert files, "rank 0 wrote no checkpoint"
    for path in files:
        assert path.suffix in (".ckpt", ".meta"), f"a leftover file: {path.name}"
        if path.suffix == ".ckpt":
            assert load_checkpoint(str(path)), path.name  # every file loads whole
    # The last checkpoint holds the final weights; the backups are gone after a finished run.
    last = max((p for p in files if p.suffix == ".ckpt"), key=lambda p: p.stat().st_mtime)
    final = weights(killed / "weights0.pt")
    entries = load_checkpoint(str(last))
    assert all(torch.equal(entries[k], v) for k, v in final.items())
    assert not [p for p in (killed / "backup").rglob("*") if p.is_file()]
