import os
import signal
import subprocess
import textwrap
import time

import pytest
import torch

from nbcallback.train import (
    BackupAndRestore,
    Callback,
    EarlyStopping,
    History,
    LambdaCallback,
    LearningRateScheduler,
    OnRequestExit,
    ReduceLROnPlateau,
    load_checkpoint,
)
from tests.callbacks.support import (
    PYTHON,
    ShuffledBatches,
    backup_run,
    same_weights,
    subprocess_env,
    toy_batches,
    toy_model,
    weights,
)


class Crash(Callback):
    """Raises at the end of global step ``step`` or of epoch ``epoch`` (a crash between backups)."""

    def __init__(self, step=None, epoch=None):
        self.step, self.epoch = step, epoch

    def on_train_step_end(self, run_context):
        if run_context.original_args().cur_step_num == self.step:
            raise RuntimeError("crash")

    def on_train_epoch_end(self, run_context):
        if run_context.original_args().cur_epoch_num == self.epoch:
            raise RuntimeError("crash")


def _run(backup_dir, save_freq, crash=None, epochs=4):
    """One fit call as a script would make it; returns what must match an uninterrupted run."""
    model, net, opt = toy_model(dropout=0.3, metrics={"accuracy"})
    history = History()
    backup = BackupAndRestore(backup_dir, save_freq=save_freq)
    callbacks = [
        backup,
        LearningRateScheduler(lambda lr, step: lr * 0.97),
        ReduceLROnPlateau(monitor="loss", patience=1, factor=0.5),
        history,
    ]
    if crash is not None:
        callbacks.append(crash)
    model.fit(epochs, ShuffledBatches(256, 32), toy_batches(64), callbacks=callbacks)
    return {
        "weights": weights(net),
        "lr": opt.param_groups[0]["lr"],
        "momentum": [opt.state[p]["momentum_buffer"].clone() for p in net.parameters()],
        "history": (history.epoch, history.history),
        "rng": torch.get_rng_state(),
        "resumed_from": backup.resumed_from,
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return {freq: _run(tmp_path_factory.mktemp("ref"), freq) for freq in ("epoch", 3)}


def _assert_same_run(result, expected):
    assert same_weights(result["weights"], expected["weights"])
    assert result["lr"] == expected["lr"]
    assert all(torch.equal(a, b) for a, b in zip(result["momentum"], expected["momentum"]))
    assert result["history"] == expected["history"]
    assert torch.equal(result["rng"], expected["rng"])


@pytest.mark.parametrize(
    "save_freq, crash, resumed_from",
    [
        ("epoch", Crash(step=11), (1, 0, 8)),  # mid epoch 2: back to the end of epoch 1
        ("epoch", Crash(epoch=3), (2, 0, 16)),  # epoch 3 did not finish its end: not backed up
        (3, Crash(step=2), None),  # before the first backup: a fresh start
        (3, Crash(step=6), (0, 3, 3)),  # step 6's backup is written when step 7 begins: not yet
        (3, Crash(step=7), (0, 6, 6)),
        (3, Crash(step=16), (1, 7, 15)),  # last step of epoch 2
        (3, Crash(step=25), (3, 0, 24)),  # step 24 ends epoch 3: backed up when epoch 4 began
        (3, Crash(epoch=3), (2, 5, 21)),  # step 24's backup was still due at the crash
    ],
)
def test_crash_and_resume_matches_an_uninterrupted_run(tmp_path, reference, save_freq, crash, resumed_from):
    with pytest.raises(RuntimeError, match="crash"):
        _run(tmp_path, save_freq, crash)
    assert (tmp_path / "backup.ckpt").exists() == (resumed_from is not None)
    result = _run(tmp_path, save_freq)
    assert result["resumed_from"] == resumed_from
    _assert_same_run(result, reference[save_freq])
    assert not (tmp_path / "backup.ckpt").exists()  # deleted after the clean finish


def test_two_crashes(tmp_path, reference):
    for step in (5, 20):
        with pytest.raises(RuntimeError, match="crash"):
            _run(tmp_path, 3, Crash(step=step))
    _assert_same_run(_run(tmp_path, 3), reference[3])


def test_backup_file_contents(tmp_path):
    with pytest.raises(RuntimeError):
        _run(tmp_path, "epoch", Crash(step=10))
    entries = load_checkpoint(str(tmp_path / "backup.ckpt"))
    assert (entries["backup.epoch"], entries["backup.step_in_epoch"], entries["backup.cur_step_num"]) == (1, 0, 8)
    assert entries["backup.rng.epoch_start.torch"].dtype == torch.uint8
    assert "optimizer.param_groups.0.lr" in entries and "1.weight" in entries
    assert not [name for name in os.listdir(tmp_path) if name != "backup.ckpt"]


def test_keep_backup_and_resume_a_finished_run(tmp_path):
    model, net, _ = toy_model()
    model.train(2, toy_batches(64), callbacks=BackupAndRestore(tmp_path, delete_checkpoint=False))
    assert os.listdir(tmp_path) == ["backup.ckpt"]
    trained = weights(net)
    model2, net2, _ = toy_model(seed=3)
    steps = []
    resumed = BackupAndRestore(tmp_path, delete_checkpoint=False)
    model2.train(2, toy_batches(64), callbacks=[resumed, LambdaCallback(on_train_step_end=lambda rc: steps.append(1))])
    assert resumed.resumed_from == (2, 0, 4) and steps == []  # nothing left to train
    assert same_weights(weights(net2), trained)


def test_deleting_a_never_written_backup_is_fine(tmp_path):
    model, _, _ = toy_model()
    model.train(1, toy_batches(64), callbacks=BackupAndRestore(tmp_path, save_freq=100))
    assert os.listdir(tmp_path) == []


def test_stop_by_early_stopping_is_a_clean_finish(tmp_path):
    model, _, _ = toy_model(lr=0.0)
    model.train(5, toy_batches(64), callbacks=[BackupAndRestore(tmp_path), EarlyStopping(monitor="loss", patience=1)])
    assert os.listdir(tmp_path) == []


def test_exit_request_keeps_a_backup_at_the_stop_point(tmp_path):
    class Term(Callback):
        def on_train_step_end(self, run_context):
            if run_context.original_args().cur_step_num == 5:
                os.kill(os.getpid(), signal.SIGTERM)

    model, _, _ = toy_model()
    model.train(3, toy_batches(128), callbacks=[Term(), OnRequestExit(directory=tmp_path / "exit"), BackupAndRestore(tmp_path / "bk")])
    entries = load_checkpoint(str(tmp_path / "bk" / "backup.ckpt"))
    assert (entries["backup.epoch"], entries["backup.step_in_epoch"], entries["backup.cur_step_num"]) == (1, 1, 5)


def test_backup_of_another_run_is_refused(tmp_path):
    with pytest.raises(RuntimeError):
        _run(tmp_path, "epoch", Crash(step=20))
    model, _, _ = toy_model(dropout=0.3)
    with pytest.raises(ValueError, match="written by a run with 8 steps per epoch, but this run has 2"):
        model.train(2, toy_batches(64), callbacks=BackupAndRestore(tmp_path))
    model, _, _ = toy_model(dropout=0.3)
    with pytest.raises(ValueError, match="The backup belongs to another run"):
        model.train(1, ShuffledBatches(256, 32), callbacks=BackupAndRestore(tmp_path))


def test_argument_checks(tmp_path):
    with pytest.raises(ValueError, match="'save_freq' must be 'epoch' or a positive int"):
        BackupAndRestore(tmp_path, save_freq=0)
    with pytest.raises(ValueError, match="'save_freq'"):
        BackupAndRestore(tmp_path, save_freq="step")
    with pytest.raises(TypeError, match="'save_freq'"):
        BackupAndRestore(tmp_path, save_freq=True)
    with pytest.raises(TypeError, match="'delete_checkpoint'"):
        BackupAndRestore(tmp_path, delete_checkpoint="yes")
    with pytest.raises(TypeError, match="'backup_dir'"):
        BackupAndRestore(None)
    (tmp_path / "f").write_text("x")
    with pytest.raises(NotADirectoryError):
        BackupAndRestore(tmp_path / "f")
    assert BackupAndRestore(tmp_path / "new").backup_file == str(tmp_path / "new" / "backup.ckpt")


# --------------------------------------------------------------------------- a real kill -9, on MNIST

SCRIPT = textwrap.dedent(
    """
    import sys
    import torch
    torch.set_num_threads(1)
    from tests.callbacks.support import backup_run

    mnist_root, backup_dir, out, pace_from = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    torch.save(backup_run(mnist_root, backup_dir, pace_from), out)
    """
)


def _start(script, *args):
    return subprocess.Popen(
        [PYTHON, str(script), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
    )


def _stop(proc):
    if proc is not None and proc.poll() is None:
        proc.kill()
    if proc is not None:
        proc.wait()


def test_sigkill_mid_epoch_then_resume_is_bitwise_identical(tmp_path, mnist_root, capsys):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    victim = _start(script, mnist_root, tmp_path / "bk", tmp_path / "victim.pt", 13)
    resumed = None
    try:
        # The uninterrupted reference, in this process, while the victim starts.
        expected = backup_run(mnist_root, tmp_path / "ref")
        deadline = time.monotonic() + 120
        line = ""
        while line.strip() != "STEP 13":  # mid epoch 2 (10 steps per epoch); step 10 is backed up
            line = victim.stdout.readline()
            assert line or victim.poll() is None, victim.stderr.read()
            assert time.monotonic() < deadline, "the training process never reached step 13"
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=60)
        assert victim.returncode == -signal.SIGKILL
        assert not (tmp_path / "victim.pt").exists()
        assert load_checkpoint(str(tmp_path / "bk" / "backup.ckpt"))["backup.cur_step_num"] == 10

        resumed = _start(script, mnist_root, tmp_path / "bk", tmp_path / "victim.pt", 0)
        out, err = resumed.communicate(timeout=120)
        assert resumed.returncode == 0, err
        assert out.splitlines()[0] == "STEP 11"
    finally:
        _stop(victim)
        _stop(resumed)
    result = torch.load(tmp_path / "victim.pt", weights_only=True)
    assert expected["weights"].keys() == result["weights"].keys()
    assert all(torch.equal(expected["weights"][k], result["weights"][k]) for k in expected["weights"])
    assert result["lr"] == expected["lr"]
    assert result["history"] == expected["history"]
    assert not (tmp_path / "bk" / "backup.ckpt").exists()


def _queue_held_write(path, data: bytes, release_after: float):
    """Queue a write of ``data`` to ``path`` (as a slow async save would) that starts after ``release_after`` s."""
    import threading

    from nbcallback.train.serialization import PENDING_WRITES, atomic_write

    def write() -> None:
        time.sleep(release_after)
        atomic_write(path, lambda handle: handle.write(data))

    return PENDING_WRITES.start(path, write, name="held_write")


def test_deletion_at_the_end_comes_after_a_pending_write(tmp_path):
    """``delete_checkpoint=True`` deletes the backup after any write to it still in flight (call order)."""
    held = _queue_held_write(tmp_path / "backup.ckpt", b"an earlier, slower write", 0.3)
    model, _, _ = toy_model()
    model.train(1, toy_batches(64), callbacks=BackupAndRestore(tmp_path))
    held.join(30)
    assert os.listdir(tmp_path) == []


class _Tally(Callback):
    """A user callback with state: the steps it saw and a running sum, kept through Callback.state_dict."""

    def __init__(self):
        self.steps, self.total = 0, torch.zeros(3)

    def on_train_step_end(self, run_context):
        self.steps += 1
        self.total += 1.0

    def state_dict(self):
        return {"steps": self.steps, "total": self.total.clone()}

    def load_state_dict(self, state):
        self.steps, self.total = int(state["steps"]), state["total"].clone()


def test_a_user_callback_with_state_dict_resumes_with_its_state(tmp_path):
    """state_dict/load_state_dict is the documented seam: a resumed run's callback continues its counts."""
    model, _, _ = toy_model()
    with pytest.raises(RuntimeError, match="crash"):
        model.train(3, toy_batches(), callbacks=[BackupAndRestore(tmp_path), _Tally(), Crash(step=13)])
    entries = load_checkpoint(str(tmp_path / "backup.ckpt"))
    assert torch.equal(entries["backup.callback.1.total"], torch.full((3,), 8.0))  # tensors stored as tensors
    tally = _Tally()
    model, _, _ = toy_model()
    model.train(3, toy_batches(), callbacks=[BackupAndRestore(tmp_path), tally])
    assert tally.steps == 24 and torch.equal(tally.total, torch.full((3,), 24.0))
