"""Checkpoint writes are atomic: SIGKILL a training process at random moments and inside every
step of a save, then check what is left in the folder.

After every kill:

* every ``.ckpt`` file in the folder loads and fills a fresh network;
* the newest checkpoint the process had completed (reported after its save
  returned) is still there, or a newer complete one is: ``keep_checkpoint_max``
  rotation never deletes the newest complete checkpoint, and the count of
  files of that run stays within ``[min(keep, saves done), keep + 1]``;
* temporary files belong to the killed process only: those of earlier kills
  were removed when the next run in the folder began;

and after the next clean run in the folder no temporary file is left.
"""
from __future__ import annotations

import json
import re
import signal
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from nbcallback.train import CheckpointError, Model, load_checkpoint, load_param_into_net, save_checkpoint
from nbcallback.train.serialization import PARTIAL_MARKER
from tests.reliability import _scenarios
from tests.reliability._support import record_kill

#: (keep_checkpoint_max, number of kills, async_save) of the random-moment series.
SERIES = [(1, 6, False), (2, 6, False), (3, 6, False), (5, 6, False), (1, 4, True), (2, 4, True)]
MAX_DELAY = 0.6  # seconds after training began; a save happens every few milliseconds


def _describe(result: dict[str, Any], log: Path) -> str:
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    events = result.get("events", [])
    return f"child {result.get('pid')} ended {result.get('ended')} (signal {result.get('signal')}, code {result.get('code')}); " \
           f"last events {events[-3:]}; log tail:\n{tail}"


def _partials(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith(".") and PARTIAL_MARKER in p.name)


def _partial_pid(path: Path) -> int:
    return int(path.name.rsplit(PARTIAL_MARKER, 1)[1].split("-", 1)[0])


def _global_step(name: str, prefix: str, batch_num: int) -> int | None:
    match = re.fullmatch(re.escape(prefix) + r"-(\d+)_(\d+)\.ckpt", name)
    if match is None:
        return None
    epoch, step = int(match.group(1)), int(match.group(2))
    return (epoch - 1) * batch_num + step


def assert_all_checkpoints_load(folder: Path) -> int:
    """Every ``.ckpt`` in ``folder`` loads and fills a fresh network; returns how many there are."""
    files = sorted(folder.glob("*.ckpt"))
    for path in files:
        entries = load_checkpoint(str(path))
        not_loaded, _ = load_param_into_net(_scenarios.checkpoint_net(0), entries)
        assert not_loaded == [], f"{path.name} lacks {not_loaded}"
        assert any(name.startswith("optimizer.") for name in entries), path.name
    for meta in folder.glob("*-graph.meta"):
        assert json.loads(meta.read_text())["format"] == "nbcallback-graph-meta", meta.name
    return len(files)


def assert_kill_left_a_consistent_folder(folder: Path, result: dict[str, Any], keep: int, log: Path,
                                        async_save: bool = False) -> dict[str, Any]:
    assert result["ended"] == "killed" and result["signal"] == signal.SIGKILL, _describe(result, log)
    record_kill(f"checkpoint child {result['pid']}")
    assert_all_checkpoints_load(folder)
    events = result["events"]
    begin = next((e for e in events if e["event"] == "begin"), None)
    saved = [e for e in events if e["event"] == "saved"]
    # A save is complete when it returned; an async one only when the next save began (it waits).
    complete = saved[:-1] if async_save else saved
    partials = _partials(folder)
    if begin is not None:
        # This run's ModelCheckpoint cleaned up after the previous kills when it began.
        assert {_partial_pid(p) for p in partials} <= {result["pid"]}, [p.name for p in partials]
        prefix, batch_num = begin["prefix"], begin["batch_num"]
        steps = sorted(
            s for s in (_global_step(p.name, prefix, batch_num) for p in folder.glob(f"{prefix}-*.ckpt")) if s is not None
        )
        if complete:
            newest_complete = complete[-1]["step"]
            assert steps and steps[-1] >= newest_complete, (
                f"the newest complete checkpoint (step {newest_complete}, {complete[-1]['path']}) is gone: {steps}"
            )
            assert min(keep, len(complete)) <= len(steps) <= keep + 1, (keep, len(complete), steps)
        else:
            assert len(steps) <= 1, steps
    return {"begin": begin, "saved": saved, "partials": partials}


def clean_run_leaves_no_temporary_file(warm: Any, folder: Path, log: Path) -> None:
    result = warm.run("checkpoints", {"seed": 7, "folder": str(folder), "keep": 2, "epochs": 1, "steps_per_epoch": 3},
                      timeout=120, log=log)
    assert result["ended"] == "exited" and result["code"] == 0, _describe(result, log)
    assert _partials(folder) == []
    assert assert_all_checkpoints_load(folder) >= 2


@pytest.mark.parametrize("keep, kills, async_save", SERIES,
                         ids=[f"keep{k}" + ("-async" if a else "") for k, _, a in SERIES])
def test_sigkill_at_random_moments(warm, tmp_path, seeded, keep, kills, async_save):
    rng = seeded(f"checkpoint-random-kills-keep{keep}" + ("-async" if async_save else ""))
    folder, log = tmp_path / "ckpt", tmp_path / "child.log"
    killed_inside_a_write = 0
    for index in range(kills):
        delay = rng.uniform(0.0, MAX_DELAY)
        print(f"kill {index}: {delay:.3f} s after training began")
        args = {"seed": rng.randrange(1 << 16), "folder": str(folder), "keep": keep, "async_save": async_save}
        result = warm.run("checkpoints", args, kill={"mode": "delay", "seconds": delay}, timeout=120, log=log)
        state = assert_kill_left_a_consistent_folder(folder, result, keep, log, async_save)
        killed_inside_a_write += bool(state["partials"])
    print(f"{killed_inside_a_write} of {kills} kills landed inside a file write")
    clean_run_leaves_no_temporary_file(warm, folder, log)


def _checkpoint_size(tmp_path: Path) -> int:
    """Bytes of one checkpoint of the children's training network (weights + momentum)."""
    net = _scenarios.checkpoint_net(0)
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9))
    model.train(1, [(torch.randn(16, 64), torch.randint(0, 10, (16,)))])
    save_checkpoint(model.train_network, str(tmp_path / "size.ckpt"))
    size = (tmp_path / "size.ckpt").stat().st_size
    (tmp_path / "size.ckpt").unlink()
    return size


PHASES = ["write", "before_replace", "after_replace", "before_unlink", "after_unlink"]


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("keep", [1, 3])
def test_sigkill_inside_a_save(warm, tmp_path, seeded, phase, keep):
    rng = seeded(f"checkpoint-phase-{phase}-keep{keep}")
    folder, log = tmp_path / "ckpt", tmp_path / "child.log"
    hold: dict[str, Any] = {"phase": phase}
    if phase in ("before_unlink", "after_unlink"):
        hold["nth"] = rng.randint(1, 4)  # the nth deletion of an old checkpoint
        saves_needed = keep + hold["nth"]
    else:
        hold["nth"] = rng.randint(1, 6)  # the nth checkpoint save
        saves_needed = hold["nth"]
    if phase == "write":
        hold["nbytes"] = rng.randrange(1, _checkpoint_size(tmp_path))
    print(f"kill at {hold}")
    result = warm.run("checkpoints", {"seed": rng.randrange(1 << 16), "folder": str(folder), "keep": keep, "hold": hold},
                      kill={"mode": "hold"}, timeout=120, log=log)
    state = assert_kill_left_a_consistent_folder(folder, result, keep, log)
    held = next(e for e in result["events"] if e["event"] == "hold")
    target = Path(held["path"])
    # The save that was killed had not returned: it was never reported as complete.
    assert len(state["saved"]) == saves_needed - 1
    if phase == "write":
        # Killed mid-write: only a hidden, partial temporary file; the final name does not exist.
        assert not target.exists()
        [partial] = state["partials"]
        assert partial.stat().st_size == hold["nbytes"]
    elif phase == "before_replace":
        # Complete and fsync-ed, but not renamed: still invisible under its final name.
        assert not target.exists()
        [partial] = state["partials"]
        assert Path(held["temp"]) == partial
        copy = tmp_path / "complete.ckpt"
        copy.write_bytes(partial.read_bytes())
        load_checkpoint(str(copy))
    elif phase == "after_replace":
        assert target.exists() and state["partials"] == []
    elif phase == "before_unlink":
        assert target.exists()  # the old one about to go; the new one is complete already
    else:
        assert not target.exists()
    clean_run_leaves_no_temporary_file(warm, folder, log)


def test_control_a_non_atomic_writer_is_caught(warm, tmp_path, seeded):
    """The same kill against a saver that writes in place leaves a truncated ``.ckpt``, which the
    checks above refuse: they would catch a regression of ``atomic_write``."""
    rng = seeded("checkpoint-control")
    folder, log = tmp_path / "ckpt", tmp_path / "child.log"
    hold = {"phase": "write", "nth": rng.randint(1, 4), "nbytes": rng.randrange(1, _checkpoint_size(tmp_path))}
    result = warm.run("checkpoints", {"seed": 1, "folder": str(folder), "keep": 2, "hold": hold, "unsafe_writer": True},
                      kill={"mode": "hold"}, timeout=120, log=log)
    assert result["ended"] == "killed", _describe(result, log)
    record_kill(f"control child {result['pid']}")
    with pytest.raises(CheckpointError, match="failed to load the checkpoint file"):
        assert_all_checkpoints_load(folder)


@pytest.mark.parametrize("phase", ["write", "after_replace"])
def test_sigkill_inside_an_async_save(warm, tmp_path, seeded, phase):
    """``async_save=True``: the file is written by a thread while training goes on. Rotation waits
    for it, so a kill mid-write still leaves the previous complete checkpoint (keep_checkpoint_max=1)."""
    rng = seeded(f"checkpoint-async-{phase}")
    folder, log = tmp_path / "ckpt", tmp_path / "child.log"
    hold: dict[str, Any] = {"phase": phase, "nth": rng.randint(2, 6)}
    if phase == "write":
        hold["nbytes"] = rng.randrange(1, _checkpoint_size(tmp_path))
    print(f"kill at {hold}")
    result = warm.run("checkpoints", {"seed": rng.randrange(1 << 16), "folder": str(folder), "keep": 1,
                                      "async_save": True, "hold": hold}, kill={"mode": "hold"}, timeout=120, log=log)
    assert_kill_left_a_consistent_folder(folder, result, 1, log, async_save=True)
    begin = next(e for e in result["events"] if e["event"] == "begin")
    complete = [p for p in folder.glob(f"{begin['prefix']}-*.ckpt")]
    assert complete, "no complete checkpoint left: rotation deleted the newest one before the new one was written"
    clean_run_leaves_no_temporary_file(warm, folder, log)
