"""``CheckpointConfig`` and ``ModelCheckpoint`` (spec §5.1)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from nbcallback.train import Callback, CheckpointConfig, ModelCheckpoint, load_checkpoint
from nbcallback.train.serialization import PARTIAL_MARKER

from .helpers import blobs, make_model, mlp


def ckpts(folder: Path) -> list[str]:
    return sorted(p.name for p in Path(folder).iterdir() if p.name.endswith(".ckpt"))


# --------------------------------------------------------------------------- CheckpointConfig


@pytest.mark.parametrize("name", ["save_checkpoint_steps", "save_checkpoint_seconds", "keep_checkpoint_max",
                                  "keep_checkpoint_per_n_minutes"])
def test_config_numeric_validation(name):
    with pytest.raises(ValueError, match=r"The input value must be int and must >= 0, but got '-1' with type 'int'\."):
        CheckpointConfig(**{name: -1})
    for bad in ("3", 1.5, True):
        with pytest.raises(TypeError, match="The input value must be int, but got"):
            CheckpointConfig(**{name: bad})
    CheckpointConfig(**{name: None})


def test_config_all_zero_refused():
    with pytest.raises(ValueError) as info:
        CheckpointConfig(0, 0, 0, 0)
    assert str(info.value) == (
        "For 'CheckpointConfig', the input arguments 'save_checkpoint_steps', 'save_checkpoint_seconds', "
        "'keep_checkpoint_max' and 'keep_checkpoint_per_n_minutes' can't be all None or 0."
    )
    with pytest.raises(ValueError, match="can't be all None or 0"):
        CheckpointConfig(None, None, None, None)


def test_config_other_type_checks():
    with pytest.raises(TypeError, match=r"For 'CheckpointConfig', the type of 'saved_network' must be None or Cell"):
        CheckpointConfig(saved_network="net")
    with pytest.raises(TypeError, match="exception_save"):
        CheckpointConfig(exception_save=1)
    with pytest.raises(TypeError, match="integrated_save"):
        CheckpointConfig(integrated_save="yes")
    with pytest.raises(TypeError, match="async_save"):
        CheckpointConfig(async_save=None)
    CheckpointConfig(saved_network=mlp())


def test_config_normalisation():
    c = CheckpointConfig(save_checkpoint_steps=10, save_checkpoint_seconds=5, keep_checkpoint_max=3,
                         keep_checkpoint_per_n_minutes=2)
    assert c.save_checkpoint_steps == 10 and c.save_checkpoint_seconds is None
    assert c.keep_checkpoint_max == 3 and c.keep_checkpoint_per_n_minutes is None
    c = CheckpointConfig(save_checkpoint_steps=0, save_checkpoint_seconds=5, keep_checkpoint_max=0,
                         keep_checkpoint_per_n_minutes=0)
    assert c.save_checkpoint_seconds == 5 and c.keep_checkpoint_max == 1
    c = CheckpointConfig(keep_checkpoint_max=0, keep_checkpoint_per_n_minutes=4)
    assert c.keep_checkpoint_max == 0 and c.keep_checkpoint_per_n_minutes == 4
    assert set(c.get_checkpoint_policy()) == {"save_checkpoint_steps", "save_checkpoint_seconds",
                                              "keep_checkpoint_max", "keep_checkpoint_per_n_minutes",
                                              "saved_network"}
    with pytest.raises(AttributeError):
        c.save_checkpoint_steps = 3  # read-only property
    d = CheckpointConfig()
    assert (d.save_checkpoint_steps, d.keep_checkpoint_max) == (1, 5)


def test_config_append_info_validation():
    assert CheckpointConfig(append_info=None).append_dict is None
    assert CheckpointConfig(append_info=[]).append_dict is None
    with pytest.raises(TypeError, match=r"For 'CheckpointConfig', the type of 'append_info' must be list,but got"):
        CheckpointConfig(append_info="epoch_num")
    with pytest.raises(ValueError, match=(r"For 'CheckpointConfig', the value of element in the argument "
                                          r"'append_info' must be in \['epoch_num', 'step_num'\], but got lr\.")):
        CheckpointConfig(append_info=["lr"])
    with pytest.raises(TypeError, match="only one dict"):
        CheckpointConfig(append_info=[{"a": 1}, {"b": 2}])
    with pytest.raises(TypeError):
        CheckpointConfig(append_info=[{"a": [1, 2]}])
    with pytest.raises(TypeError):
        CheckpointConfig(append_info=[{1: 1}])
    c = CheckpointConfig(append_info=["epoch_num", "step_num", {"lr": 0.1, "tag": "x", "t": torch.ones(2)}])
    assert c.append_dict["epoch_num"] == 0 and c.append_dict["step_num"] == 0
    assert c.append_dict["lr"] == 0.1 and c.append_dict["tag"] == "x"


# --------------------------------------------------------------------------- ModelCheckpoint construction


def test_model_checkpoint_argument_errors(tmp_path):
    for bad in ("a/b", 3, ""):
        with pytest.raises(ValueError, match=("For 'ModelCheckpoint', the argument 'prefix' for checkpoint file "
                                              "name is invalid, it must be callable or string that does not "
                                              "contain '/', but got")):
            ModelCheckpoint(prefix=bad, directory=str(tmp_path))
    with pytest.raises(TypeError, match="The path is invalid, the type should be string."):
        ModelCheckpoint(directory=3)
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(NotADirectoryError):
        ModelCheckpoint(directory=str(afile))
    with pytest.raises(TypeError, match=("For 'ModelCheckpoint', the type of argument 'config' should be "
                                         "'CheckpointConfig', but got")):
        ModelCheckpoint(directory=str(tmp_path), config={"save_checkpoint_steps": 1})
    created = tmp_path / "new" / "sub"
    cb = ModelCheckpoint(directory=str(created))
    assert created.is_dir() and cb.latest_ckpt_file_name == ""


def test_directory_none_is_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cb = ModelCheckpoint(config=CheckpointConfig(save_checkpoint_steps=2))
    make_model().train(1, blobs(2), callbacks=cb)
    assert ckpts(tmp_path) == ["CKP-1_2.ckpt"]


def test_prefix_deduplication(tmp_path):
    config = CheckpointConfig(save_checkpoint_steps=100)
    first = ModelCheckpoint("mnist", str(tmp_path), config)
    assert first.prefix == "mnist"
    make_model().train(1, blobs(2), callbacks=first)
    second = ModelCheckpoint("mnist", str(tmp_path), config)
    assert second.prefix == "mnist_1"
    make_model().train(1, blobs(2), callbacks=second)
    third = ModelCheckpoint("mnist", str(tmp_path), config)
    assert third.prefix == "mnist_2"
    make_model().train(1, blobs(2), callbacks=third)
    assert ckpts(tmp_path) == ["mnist-1_2.ckpt", "mnist_1-1_2.ckpt", "mnist_2-1_2.ckpt"]
    metas = sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".meta"))
    assert metas == ["mnist-graph.meta", "mnist_1-graph.meta", "mnist_2-graph.meta"]
    # other prefixes, letters after the prefix, meta and breakpoint files do not count
    other = tmp_path / "other"
    other.mkdir()
    for name in ("mnistx-1_1.ckpt", "mnist-graph.meta", "mnist-1_3_breakpoint.ckpt", "CKP-1_1.ckpt"):
        (other / name).write_bytes(b"")
    assert ModelCheckpoint("mnist", str(other)).prefix == "mnist"
    (other / "mnist_7-1_1.ckpt").write_bytes(b"")
    assert ModelCheckpoint("mnist", str(other)).prefix == "mnist_8"


def test_file_names_use_step_in_epoch_and_schedule(tmp_path):
    cb = ModelCheckpoint("net", str(tmp_path), CheckpointConfig(save_checkpoint_steps=3, keep_checkpoint_max=100))
    make_model().train(2, blobs(5), callbacks=cb)
    # global steps 3, 6, 9 -> (1,3), (2,1), (2,4); forced final at step 10 -> (2,5)
    assert ckpts(tmp_path) == ["net-1_3.ckpt", "net-2_1.ckpt", "net-2_4.ckpt", "net-2_5.ckpt"]
    assert cb.latest_ckpt_file_name == str(tmp_path / "net-2_5.ckpt")


def test_forced_final_save(tmp_path):
    cb = ModelCheckpoint("m", str(tmp_path), CheckpointConfig(save_checkpoint_steps=15, keep_checkpoint_max=10))
    make_model().train(2, blobs(10), callbacks=cb)
    assert ckpts(tmp_path) == ["m-2_10.ckpt", "m-2_5.ckpt"]


def test_no_double_save_at_final_step(tmp_path):
    cb = ModelCheckpoint("m", str(tmp_path), CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=100))
    saves = []
    original = cb._write
    cb._write = lambda params, path: (saves.append(path.name), original(params, path))
    make_model().train(1, blobs(4), callbacks=cb)
    assert saves == ["m-1_1.ckpt", "m-1_2.ckpt", "m-1_3.ckpt", "m-1_4.ckpt"]


def test_initial_epoch_in_file_names(tmp_path):
    cb = ModelCheckpoint("m", str(tmp_path), CheckpointConfig(save_checkpoint_steps=4, keep_checkpoint_max=10))
    make_model().train(3, blobs(4), callbacks=cb, initial_epoch=1)
    assert ckpts(tmp_path) == ["m-2_4.ckpt", "m-3_4.ckpt"]


def test_keep_checkpoint_max_keeps_newest(tmp_path):
    cb = ModelCheckpoint("r", str(tmp_path), CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=3))
    make_model().train(1, blobs(12), callbacks=cb)
    assert ckpts(tmp_path) == ["r-1_10.ckpt", "r-1_11.ckpt", "r-1_12.ckpt"]


def test_keep_checkpoint_max_with_identical_mtimes(tmp_path):
    """Coarse file-system clocks (HFS+, FAT, some network mounts) give equal mtimes: still keep the newest."""

    class SameMtime(Callback):
        def on_train_step_end(self, run_context):
            for p in tmp_path.glob("r-*.ckpt"):
                os.utime(p, ns=(1_000_000_000, 1_000_000_000))

    cb = ModelCheckpoint("r", str(tmp_path), CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=3))
    make_model().train(1, blobs(12), callbacks=[cb, SameMtime()])
    assert ckpts(tmp_path) == ["r-1_10.ckpt", "r-1_11.ckpt", "r-1_12.ckpt"]


def test_rotation_ignores_other_prefixes_and_breakpoints(tmp_path):
    for name in ("other-1_1.ckpt", "r-1_1_breakpoint.ckpt", "notes.txt"):
        (tmp_path / name).write_bytes(b"x")
    cb = ModelCheckpoint("r", str(tmp_path), CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=2))
    make_model().train(1, blobs(5), callbacks=cb)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "notes.txt", "other-1_1.ckpt", "r-1_1_breakpoint.ckpt", "r-1_4.ckpt", "r-1_5.ckpt", "r-graph.meta"]


def test_append_info_entries_are_saved(tmp_path):
    config = CheckpointConfig(save_checkpoint_steps=3, keep_checkpoint_max=10,
                              append_info=["epoch_num", "step_num", {"lr": 0.01, "tag": "demo", "flag": True}])
    cb = ModelCheckpoint("a", str(tmp_path), config)
    make_model().train(2, blobs(3), callbacks=cb)
    first = load_checkpoint(str(tmp_path / "a-1_3.ckpt"))
    second = load_checkpoint(str(tmp_path / "a-2_3.ckpt"))
    assert int(first["epoch_num"]) == 1 and int(first["step_num"]) == 3
    assert int(second["epoch_num"]) == 2 and int(second["step_num"]) == 6
    assert second["lr"] == 0.01 and second["tag"] == "demo" and second["flag"] is True
    assert "0.weight" in second


def test_saved_network_config(tmp_path):
    model = make_model(momentum=0.9)
    config = CheckpointConfig(save_checkpoint_steps=2, saved_network=model.predict_network)
    make_model().train(1, blobs(2), callbacks=ModelCheckpoint("s", str(tmp_path), config))
    entries = load_checkpoint(str(tmp_path / "s-1_2.ckpt"))
    assert set(entries) == {"0.weight", "0.bias", "2.weight", "2.bias"}


def test_train_network_checkpoint_includes_optimizer_state(tmp_path):
    cb = ModelCheckpoint("o", str(tmp_path), CheckpointConfig(save_checkpoint_steps=2))
    make_model(momentum=0.9).train(1, blobs(2), callbacks=cb)
    entries = load_checkpoint(str(tmp_path / "o-1_2.ckpt"))
    assert any(k.startswith("optimizer.state.") and k.endswith("momentum_buffer") for k in entries)
    assert "0.weight" in entries


class Fail(Callback):
    def __init__(self, step=None, epoch_begin=None, exc=RuntimeError):
        self.step, self.epoch_begin, self.exc = step, epoch_begin, exc

    def on_train_step_end(self, run_context):
        if run_context.original_args().cur_step_num == self.step:
            raise self.exc("fail")

    def on_train_epoch_begin(self, run_context):
        if run_context.original_args().cur_epoch_num == self.epoch_begin:
            raise self.exc("fail")


def test_exception_save_breakpoint(tmp_path):
    config = CheckpointConfig(save_checkpoint_steps=100, exception_save=True)
    cb = ModelCheckpoint("b", str(tmp_path), config)
    model = make_model()
    with pytest.raises(RuntimeError, match="fail"):
        model.train(2, blobs(5), callbacks=[cb, Fail(step=7)])
    assert ckpts(tmp_path) == ["b-2_2_breakpoint.ckpt"]
    entries = load_checkpoint(str(tmp_path / "b-2_2_breakpoint.ckpt"))
    assert torch.equal(entries["0.weight"], model.predict_network[0].weight.detach())


def test_exception_save_keyboard_interrupt(tmp_path):
    cb = ModelCheckpoint("k", str(tmp_path), CheckpointConfig(save_checkpoint_steps=100, exception_save=True))
    with pytest.raises(KeyboardInterrupt):
        make_model().train(1, blobs(5), callbacks=[cb, Fail(step=3, exc=KeyboardInterrupt)])
    assert ckpts(tmp_path) == ["k-1_3_breakpoint.ckpt"]


def test_exception_save_before_first_step_of_epoch(tmp_path):
    cb = ModelCheckpoint("e", str(tmp_path), CheckpointConfig(save_checkpoint_steps=100, exception_save=True))
    with pytest.raises(RuntimeError):
        make_model().train(3, blobs(5), callbacks=[cb, Fail(epoch_begin=2)])
    # epoch 2 began but ran no step: MindSpore names it step 0
    assert ckpts(tmp_path) == ["e-2_0_breakpoint.ckpt"]


def test_only_the_last_model_checkpoint_writes_the_breakpoint(tmp_path):
    """MindSpore's rule: one breakpoint per failure, by the last ModelCheckpoint of the list (if it asks for one)."""
    first = ModelCheckpoint("first", str(tmp_path), CheckpointConfig(save_checkpoint_steps=100, exception_save=True))
    last = ModelCheckpoint("last", str(tmp_path), CheckpointConfig(save_checkpoint_steps=100, exception_save=True))
    with pytest.raises(RuntimeError):
        make_model().train(1, blobs(5), callbacks=[first, Fail(step=3), last])
    assert ckpts(tmp_path) == ["last-1_3_breakpoint.ckpt"]
    quiet_last = ModelCheckpoint("quiet", str(tmp_path / "q"), CheckpointConfig(save_checkpoint_steps=100))
    with pytest.raises(RuntimeError):
        make_model().train(1, blobs(5), callbacks=[first, Fail(step=3), quiet_last])
    assert ckpts(tmp_path) == ["last-1_3_breakpoint.ckpt"]


def test_no_breakpoint_without_exception_save(tmp_path):
    cb = ModelCheckpoint("n", str(tmp_path), CheckpointConfig(save_checkpoint_steps=100))
    with pytest.raises(RuntimeError):
        make_model().train(1, blobs(5), callbacks=[cb, Fail(step=3)])
    assert ckpts(tmp_path) == []


def test_graph_meta_is_json_describing_network(tmp_path):
    cb = ModelCheckpoint("g", str(tmp_path), CheckpointConfig(save_checkpoint_steps=100))
    make_model().train(1, blobs(2), callbacks=cb)
    meta = json.loads((tmp_path / "g-graph.meta").read_text())
    assert meta["network"] == "Sequential"
    names = {p["name"]: p["shape"] for p in meta["parameters"]}
    assert names == {"0.weight": [16, 8], "0.bias": [16], "2.weight": [3, 16], "2.bias": [3]}
    assert meta["parameter_count"] == 16 * 8 + 16 + 3 * 16 + 3
    assert [c["type"] for c in meta["tree"]["children"]] == ["Linear", "ReLU", "Linear"]


def test_no_temp_files_left(tmp_path):
    cb = ModelCheckpoint("t", str(tmp_path), CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=2,
                                                              async_save=True))
    make_model().train(2, blobs(4), callbacks=cb)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["t-2_3.ckpt", "t-2_4.ckpt", "t-graph.meta"]
    assert not any(PARTIAL_MARKER in n for n in names)
    load_checkpoint(str(tmp_path / "t-2_4.ckpt"))


def test_stale_partials_from_dead_pids_removed(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    dead = proc.pid
    stale = tmp_path / f".x-1_1.ckpt{PARTIAL_MARKER}{dead}-deadbeef"
    mine = tmp_path / f".x-1_2.ckpt{PARTIAL_MARKER}{os.getpid()}-cafecafe"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = tmp_path / f".x-1_3.ckpt{PARTIAL_MARKER}{sleeper.pid}-01234567"
        for p in (stale, mine, live):
            p.write_bytes(b"partial")
        cb = ModelCheckpoint("x", str(tmp_path), CheckpointConfig(save_checkpoint_steps=100))
        make_model().train(1, blobs(1), callbacks=cb)
        assert not stale.exists()
        assert mine.exists() and live.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_callable_prefix_and_directory(tmp_path):
    cb = ModelCheckpoint(prefix=lambda p: f"run-e{p.cur_epoch_num}",
                         directory=lambda p: str(tmp_path / f"ep{p.cur_epoch_num}"),
                         config=CheckpointConfig(save_checkpoint_steps=2))
    make_model().train(2, blobs(2), callbacks=cb)
    assert ckpts(tmp_path / "ep1") == ["run-e1.ckpt"] and ckpts(tmp_path / "ep2") == ["run-e2.ckpt"]
    bad = ModelCheckpoint(prefix=lambda p: "a/b", directory=str(tmp_path))
    with pytest.raises(ValueError, match="it must return a string that does not contain '/'"):
        make_model().train(1, blobs(1), callbacks=bad)


def test_async_save_respects_keep_max(tmp_path):
    cb = ModelCheckpoint("as", str(tmp_path), CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=3,
                                                               async_save=True))
    make_model().train(1, blobs(15), callbacks=cb)
    assert ckpts(tmp_path) == ["as-1_13.ckpt", "as-1_14.ckpt", "as-1_15.ckpt"]


def test_save_checkpoint_seconds_policy(tmp_path, monkeypatch):
    import types

    import nbcallback.train.checkpoint as checkpoint_module

    clock = types.SimpleNamespace(now=1000.0)
    monkeypatch.setattr(checkpoint_module, "time", types.SimpleNamespace(time=lambda: clock.now))

    class Tick(Callback):
        def on_train_step_end(self, run_context):
            clock.now += 1.0

    config = CheckpointConfig(save_checkpoint_steps=0, save_checkpoint_seconds=2, keep_checkpoint_max=10)
    cb = ModelCheckpoint("sec", str(tmp_path), config)
    make_model().train(1, blobs(8), callbacks=[Tick(), cb])
    # more than 2 s after the last save: steps 3 and 6; the final step 8 is forced
    assert ckpts(tmp_path) == ["sec-1_3.ckpt", "sec-1_6.ckpt", "sec-1_8.ckpt"]


@pytest.mark.parametrize("keep", [{"keep_checkpoint_max": 1},
                                  {"keep_checkpoint_max": 0, "keep_checkpoint_per_n_minutes": 1}],
                         ids=["keep_checkpoint_max", "keep_checkpoint_per_n_minutes"])
def test_rotation_never_deletes_a_file_a_pending_write_will_produce(tmp_path, keep):
    """A write to ``r-9_9.ckpt`` is queued (another saver's slow async save) while ModelCheckpoint
    rotates: the file is kept though rotation would delete it, and ends with the queued content."""
    import threading
    import time

    from nbcallback.train.serialization import PENDING_WRITES, atomic_write, save_checkpoint

    cb = ModelCheckpoint("r", str(tmp_path), CheckpointConfig(save_checkpoint_steps=1, **keep))
    pending = tmp_path / "r-9_9.ckpt"
    save_checkpoint(mlp(seed=5), str(pending), append_dict={"version": "old"})
    # Oldest for keep_checkpoint_max; newest of the window (not the one it keeps) for per_n_minutes.
    stamp = time.time() + (5 if "keep_checkpoint_per_n_minutes" in keep else -3600)
    os.utime(pending, (stamp, stamp))
    save_checkpoint(mlp(seed=6), str(tmp_path / "new.ckpt"), append_dict={"version": "new"})
    new_bytes = (tmp_path / "new.ckpt").read_bytes()
    (tmp_path / "new.ckpt").unlink()
    release = threading.Event()

    def slow_write() -> None:
        assert release.wait(30)
        atomic_write(pending, lambda handle: handle.write(new_bytes))

    seen = []

    class Check(Callback):
        """Runs after ModelCheckpoint's save and rotation of each step; releases the write at the end."""

        def on_train_step_end(self, run_context):
            seen.append(ckpts(tmp_path))
            if run_context.original_args().cur_step_num == 3:
                release.set()  # the train end waits for every background write

    held = PENDING_WRITES.start(pending, slow_write, name="held_write")
    try:
        make_model().train(1, blobs(3), callbacks=[cb, Check()])
    finally:
        release.set()
        held.join(30)
    # Rotation removed the older checkpoints of the run, never the one being written.
    if "keep_checkpoint_per_n_minutes" in keep:  # keeps the oldest of the window and the newest
        assert seen == [["r-1_1.ckpt", "r-9_9.ckpt"], ["r-1_1.ckpt", "r-1_2.ckpt", "r-9_9.ckpt"],
                        ["r-1_1.ckpt", "r-1_3.ckpt", "r-9_9.ckpt"]]
    else:
        assert seen == [["r-1_1.ckpt", "r-9_9.ckpt"], ["r-1_2.ckpt", "r-9_9.ckpt"], ["r-1_3.ckpt", "r-9_9.ckpt"]]
    assert load_checkpoint(str(pending))["version"] == "new"
