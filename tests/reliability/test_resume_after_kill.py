"""Resume: SIGKILL a ``fit`` run at seeded points (one during validation), resume it with
BackupAndRestore, and require the result to be bitwise equal to an uninterrupted run.

The run shuffles its data from torch's global RNG every epoch, uses dropout,
a step-wise ``LearningRateScheduler`` and ``ReduceLROnPlateau`` on the
validation loss, and backs up every 3 steps.  Every train and eval step is
logged (batch digest, learning rate, loss bits) by the killed run and by the
resumed one, so the data order and the LR schedule are compared step by step,
not only the final weights.
"""
from __future__ import annotations

import json
import random
import signal
from pathlib import Path
from typing import Any

import pytest
import torch

from nbcallback.train import load_checkpoint
from tests.reliability import _scenarios
from tests.reliability._support import USED_SEEDS, derive_seed, record_kill

TRAIN_STEPS = _scenarios.RESUME_EPOCHS * _scenarios.RESUME_STEPS_PER_EPOCH
SEED = 11  # the training run's own seed (torch/numpy/random)


def kill_points() -> list[list[Any]]:
    """Five seeded kill points: four training steps and one validation step."""
    rng = random.Random(derive_seed("resume-kill-points"))
    train = sorted(rng.sample(range(1, TRAIN_STEPS + 1), 4))
    evaluation = ["eval", rng.randint(1, _scenarios.RESUME_EPOCHS), rng.randint(1, _scenarios.RESUME_EVAL_STEPS)]
    return [["train", step] for step in train] + [evaluation]


POINTS = kill_points()


def _log(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    records: dict[tuple[str, str], dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        key = (record["kind"], str(record["key"]))
        assert key not in records, f"{path.name}: step {key} logged twice"
        records[key] = record
    return records


def _run(warm: Any, folder: Path, name: str, hold_at: list[Any] | None = None,
         hold_save: dict[str, Any] | None = None) -> dict[str, Any]:
    args = {"seed": SEED, "backup_dir": str(folder / "backup"), "log": str(folder / f"{name}.log"),
            "out": str(folder / f"{name}.pt")}
    if hold_at:
        args["hold_at"] = hold_at
    if hold_save:
        args["hold_save"] = hold_save
    return warm.run("resume", args, kill={"mode": "hold"} if hold_at or hold_save else None, timeout=180,
                    log=folder / f"{name}.stderr")


@pytest.fixture(scope="module")
def reference(warm, tmp_path_factory):
    folder = tmp_path_factory.mktemp("uninterrupted")
    result = _run(warm, folder, "ref")
    assert result["ended"] == "exited" and result["code"] == 0, (folder / "ref.stderr").read_text()
    return torch.load(folder / "ref.pt", weights_only=True), _log(folder / "ref.log")


@pytest.mark.parametrize("point", POINTS, ids=["-".join(map(str, p)) for p in POINTS])
def test_killed_and_resumed_run_is_bitwise_equal(warm, tmp_path, reference, point, request):
    seed = derive_seed("resume-kill-points")
    USED_SEEDS.append((request.node.nodeid, "resume-kill-points", seed))
    print(f"SEED resume-kill-points = {seed}; this point: {point}")
    killed = _run(warm, tmp_path, "killed", hold_at=point)
    assert [e["at"] for e in killed["events"] if e["event"] == "hold"] == [point]
    _resume_and_compare(warm, tmp_path, reference, killed)


@pytest.mark.parametrize("phase", ["write", "after_replace"])
def test_killed_inside_a_backup_write_and_resumed_is_bitwise_equal(warm, tmp_path, reference, seeded, phase):
    """The kill lands inside the nth backup save: mid-write (the previous backup is used) or just
    after the rename (the new one is)."""
    rng = seeded(f"resume-backup-{phase}")
    hold = {"phase": phase, "nth": rng.randint(1, 9)}
    if phase == "write":
        hold["nbytes"] = rng.randrange(1, 4000)  # a backup is > 10 kB (weights, momentum, RNG states)
    print(f"kill at {hold}")
    killed = _run(warm, tmp_path, "killed", hold_save=hold)
    assert [e["phase"] for e in killed["events"] if e["event"] == "hold"] == [phase]
    _resume_and_compare(warm, tmp_path, reference, killed)


def _resume_and_compare(warm: Any, tmp_path: Path, reference: Any, killed: dict[str, Any]) -> None:
    expected, expected_log = reference
    assert killed["ended"] == "killed" and killed["signal"] == signal.SIGKILL, (tmp_path / "killed.stderr").read_text()
    record_kill(f"fit child {killed['pid']}")
    assert not (tmp_path / "killed.pt").exists()
    backup = tmp_path / "backup" / "backup.ckpt"
    backed_up_step = int(load_checkpoint(str(backup))["backup.cur_step_num"]) if backup.exists() else 0

    resumed = _run(warm, tmp_path, "resumed")
    assert resumed["ended"] == "exited" and resumed["code"] == 0, (tmp_path / "resumed.stderr").read_text()
    result = torch.load(tmp_path / "resumed.pt", weights_only=True)

    # The resumed run continued from the backup on disk, not from the start.
    resumed_from = result["resumed_from"]
    assert (resumed_from[2] if resumed_from else 0) == backed_up_step
    killed_log, resumed_log = _log(tmp_path / "killed.log"), _log(tmp_path / "resumed.log")
    resumed_train = sorted(int(k) for kind, k in resumed_log if kind == "train")
    assert resumed_train == list(range(backed_up_step + 1, TRAIN_STEPS + 1))

    # Step by step: same batches in the same order, same learning rates, same losses.
    for key, record in {**killed_log, **resumed_log}.items():
        assert record == expected_log[key], f"step {key} differs from the uninterrupted run"
    assert killed_log.keys() | resumed_log.keys() == expected_log.keys()

    # And the end state, bit for bit.
    assert expected["weights"].keys() == result["weights"].keys()
    for name, tensor in expected["weights"].items():
        assert torch.equal(tensor, result["weights"][name]), name
    assert result["lr"] == expected["lr"]
    assert all(torch.equal(a, b) for a, b in zip(expected["momentum"], result["momentum"], strict=True))
    assert result["history"] == expected["history"]
    assert torch.equal(result["rng"], expected["rng"])
    assert not backup.exists()  # a clean finish deletes the backup
    assert sorted(p.name for p in backup.parent.iterdir()) == []  # and the killed run's temporary file


def test_the_schedule_is_exercised(reference):
    """Guard against a vacuous comparison: the LR really changes, from both callbacks."""
    _, log = reference
    rates = [float.fromhex(log[("train", str(s))]["lr"]) for s in range(1, TRAIN_STEPS + 1)]
    assert len(set(rates)) > TRAIN_STEPS // 3
    assert any(b < a * 0.6 for a, b in zip(rates, rates[1:])), "ReduceLROnPlateau never halved the rate"
    batches = [log[("train", str(s))]["batch"] for s in range(1, TRAIN_STEPS + 1)]
    per_epoch = _scenarios.RESUME_STEPS_PER_EPOCH
    assert batches[:per_epoch] != batches[per_epoch : 2 * per_epoch], "the data order does not change per epoch"
