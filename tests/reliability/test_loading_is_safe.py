"""Loading never executes code, and a damaged file is refused with an error naming it.

Hostile files: pickles whose ``__reduce__`` would create a sentinel folder (raw
pickle, PyTorch zip and legacy formats, nested anywhere in the entries),
hand-written pickles calling ``eval``/``exec``/``os.system``/``torch.load``,
foreign classes, zip bombs, forged sizes, truncations at many cut points,
empty files, FIFOs, ``/dev`` files and folders named ``*.ckpt``.  The sentinel
must never appear, through ``load_checkpoint`` and through the callbacks that
load files on their own (``BackupAndRestore``, ``OnRequestExit``).

The fuzz tests flip, cut and splice the bytes of a real checkpoint: the only
outcomes allowed are a loaded dict or ``CheckpointError``/``ValueError``.
"""
from __future__ import annotations

import io
import os
import pickle
import re
import signal
import struct
import warnings
import zipfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from torch import nn

from nbcallback.train import (
    BackupAndRestore,
    CheckpointError,
    Model,
    OnRequestExit,
    load_checkpoint,
    save_checkpoint,
)
from nbcallback.train.serialization import FORMAT_NAME
from tests.reliability._support import FUZZ_PHASES, derive_seed, hang_guard

SENTINEL_NAME = "code-ran-here"


class MkdirOnLoad:
    """Unpickling this calls ``os.mkdir(target)``: the sentinel."""

    def __init__(self, target: str) -> None:
        self.target = target

    def __reduce__(self):
        return (os.mkdir, (self.target,))


class Foreign:
    """A harmless class from outside torch: refused all the same (loading imports its module)."""

    def __init__(self) -> None:
        self.value = 1


def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))


@pytest.fixture(scope="module")
def real_checkpoint(tmp_path_factory) -> bytes:
    """A real training checkpoint (weights, momentum, param groups, appended values)."""
    net = _net()
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1, momentum=0.9))
    model.train(1, [(torch.randn(4, 4), torch.tensor([0, 1, 0, 1]))])
    path = tmp_path_factory.mktemp("real") / "real.ckpt"
    save_checkpoint(model.train_network, str(path), append_dict={"epoch_num": 3, "note": "text"})
    return path.read_bytes()


@pytest.fixture
def sentinel(tmp_path) -> Path:
    path = tmp_path / SENTINEL_NAME
    yield path
    assert not path.exists(), "code from a checkpoint file was executed"


def _rezip(data: bytes, replace: dict[str, bytes] | None = None, extra: dict[str, bytes] | None = None,
           compression: int = zipfile.ZIP_STORED) -> bytes:
    """The members of a checkpoint in a new zip, some replaced (a forged file that is otherwise valid)."""
    replace = replace or {}
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", compression) as dst:
        for info in src.infolist():
            leaf = info.filename.split("/", 1)[1]
            dst.writestr(info.filename, replace.get(leaf, src.read(info)))
        for name, body in (extra or {}).items():
            dst.writestr(name, body)
    return out.getvalue()


def _assert_refused(path: Path, *types: type[BaseException]) -> BaseException:
    with pytest.raises(types or (CheckpointError,)) as caught:
        load_checkpoint(str(path))
    assert str(path) in str(caught.value), caught.value
    return caught.value


# --------------------------------------------------------------------------- code in the file


def _hostile_payloads(target: str) -> dict[str, object]:
    evil = MkdirOnLoad(target)
    wrapped = {"format": FORMAT_NAME, "version": 1}
    return {
        "top-level": evil,
        "as-an-entry": {**wrapped, "entries": {"w": torch.ones(2), "evil": evil}},
        "nested-in-containers": {**wrapped, "entries": {"w": [{"deep": (1, [evil])}]}},
        "as-the-format-tag": {"format": evil, "version": 1, "entries": {}},
        "as-a-dict-key": {**wrapped, "entries": {"x": {evil: 1}}},
        "foreign-class": {**wrapped, "entries": {"w": Foreign()}},
    }


@pytest.mark.parametrize("variant", ["top-level", "as-an-entry", "nested-in-containers", "as-the-format-tag",
                                     "as-a-dict-key", "foreign-class"])
@pytest.mark.parametrize("container", ["zip", "legacy", "raw-pickle-0", "raw-pickle-2", "raw-pickle-5"])
def test_reduce_payloads_are_refused(tmp_path, sentinel, variant, container):
    payload = _hostile_payloads(str(sentinel))[variant]
    path = tmp_path / "hostile.ckpt"
    if container == "zip":
        torch.save(payload, path)
    elif container == "legacy":
        torch.save(payload, path, _use_new_zipfile_serialization=False)
    else:
        path.write_bytes(pickle.dumps(payload, protocol=int(container.rsplit("-", 1)[1])))
    error = _assert_refused(path)
    if container == "zip":
        assert "could run code" in str(error)


def _pickles(target: str) -> dict[str, bytes]:
    t = repr(target).encode()
    return {
        "eval": b"cbuiltins\neval\n(V__import__('os').mkdir(" + t + b")\ntR.",
        "exec": b"cbuiltins\nexec\n(Vimport os; os.mkdir(" + t + b")\ntR.",
        "os-system": b"cposix\nsystem\n(Vmkdir " + target.encode() + b"\ntR.",
        "os-mkdir": b"cos\nmkdir\n(" + b"V" + target.encode() + b"\ntR.",
        "stack-global-exec": b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\x08builtins\x8c\x04exec\x93"
        + b"\x8c" + bytes([len(f"import os; os.mkdir({target!r})")]) + f"import os; os.mkdir({target!r})".encode()
        + b"\x85R.",
        "subprocess": b"csubprocess\ncheck_call\n((Vmkdir\nV" + target.encode() + b"\nltR.",
        "getattr-chain": b"cbuiltins\ngetattr\n(cbuiltins\n__import__\n(Vos\ntRVmkdir\ntR(V" + target.encode() + b"\ntR.",
        "torch-load": b"ctorch\nload\n(V" + target.encode() + b".inner\nI00\ntR.",
        "dict-of-evil": b"(dp0\nVformat\np1\nV" + FORMAT_NAME.encode() + b"\np2\nsVentries\np3\n"
        + b"cos\nmkdir\n(V" + target.encode() + b"\ntRs.",
    }


HANDWRITTEN = ["eval", "exec", "os-system", "os-mkdir", "stack-global-exec", "subprocess", "getattr-chain",
               "torch-load", "dict-of-evil"]


@pytest.mark.parametrize("kind", [k for k in HANDWRITTEN if k != "torch-load"])
def test_handwritten_pickles_do_run_code_under_plain_pickle(tmp_path, kind):
    """Control: the payloads are live (plain ``pickle.loads`` runs them), so refusing them means something."""
    target = tmp_path / "control-ran"
    pickle.loads(_pickles(str(target))[kind])
    assert target.is_dir()


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.parametrize("kind", HANDWRITTEN)
def test_handwritten_pickles_inside_a_valid_checkpoint_are_refused(tmp_path, sentinel, real_checkpoint, kind):
    # torch-load: the inner file would run the payload if torch.load were reachable.
    torch.save(MkdirOnLoad(str(sentinel)), str(sentinel) + ".inner", _use_new_zipfile_serialization=False)
    control = tmp_path / "control.ckpt"
    control.write_bytes(_rezip(real_checkpoint))
    assert "0.weight" in load_checkpoint(str(control))  # the forged container itself is fine
    path = tmp_path / "hostile.ckpt"
    path.write_bytes(_rezip(real_checkpoint, replace={"data.pkl": _pickles(str(sentinel))[kind]}))
    _assert_refused(path)
    os.unlink(str(sentinel) + ".inner")


def test_callbacks_that_load_files_refuse_them_too(tmp_path, sentinel):
    """BackupAndRestore and OnRequestExit read files found on disk at train begin: no code runs,
    the error names the file, and OnRequestExit's signal handler is given back."""
    hostile = io.BytesIO()
    torch.save({"format": FORMAT_NAME, "version": 1, "entries": {"backup.format": MkdirOnLoad(str(sentinel))}}, hostile)
    net = _net()
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1))
    data = [(torch.randn(4, 4), torch.tensor([0, 1, 0, 1]))]

    backup = BackupAndRestore(tmp_path / "bk")
    Path(backup.backup_file).write_bytes(hostile.getvalue())
    with pytest.raises(CheckpointError, match=re.escape(str(Path(backup.backup_file)))):
        model.train(1, data, callbacks=[backup])

    before = signal.getsignal(signal.SIGTERM)
    exit_cb = OnRequestExit(directory=tmp_path / "exit", file_name="Net")
    Path(exit_cb.train_file_path + ".ckpt").write_bytes(hostile.getvalue())
    with pytest.raises(CheckpointError, match=re.escape(exit_cb.train_file_path)):
        model.train(1, data, callbacks=[exit_cb])
    assert signal.getsignal(signal.SIGTERM) == before
    model.train(1, data)  # the model is untouched and trains


# --------------------------------------------------------------------------- bombs and forged sizes


def test_deflated_bomb_is_refused_before_inflating(tmp_path, real_checkpoint):
    path = tmp_path / "bomb.ckpt"
    path.write_bytes(_rezip(real_checkpoint, extra={"archive/data/99": bytes(64 << 20)}, compression=zipfile.ZIP_DEFLATED))
    assert path.stat().st_size < 1 << 20
    error = _assert_refused(path)
    assert "compression" in str(error)


def _central_entries(data: bytes) -> list[int]:
    """Offsets of the central-directory file headers."""
    offsets, start = [], 0
    while (found := data.find(b"PK\x01\x02", start)) != -1:
        offsets.append(found)
        start = found + 4
    return offsets


@pytest.mark.parametrize("field", ["compressed", "uncompressed", "both"])
@pytest.mark.parametrize("claim", [1 << 20, (1 << 32) - 1])
def test_forged_member_sizes_are_refused(tmp_path, real_checkpoint, field, claim):
    data = bytearray(real_checkpoint)
    for offset in _central_entries(bytes(data)):
        if field in ("compressed", "both"):
            struct.pack_into("<I", data, offset + 20, claim)
        if field in ("uncompressed", "both"):
            struct.pack_into("<I", data, offset + 24, claim)
    path = tmp_path / "forged.ckpt"
    path.write_bytes(bytes(data))
    with hang_guard(30):
        _assert_refused(path)


@given(
    entry=st.integers(0, 13),
    field=st.sampled_from([(10, "<H"), (12, "<H"), (16, "<I"), (20, "<I"), (24, "<I"), (28, "<H"), (30, "<H"),
                           (34, "<H"), (42, "<I")]),
    value=st.one_of(st.integers(0, 64), st.integers(0, (1 << 16) - 1), st.sampled_from([(1 << 32) - 1, 1 << 31, 1 << 20])),
)
@settings(max_examples=150, deadline=None, database=None, phases=FUZZ_PHASES, suppress_health_check=[HealthCheck.function_scoped_fixture])
@seed(derive_seed("forged-central-directory"))
def test_fuzzed_central_directory(tmp_path, real_checkpoint, entry, field, value):
    offset, fmt = field
    data = bytearray(real_checkpoint)
    entries = _central_entries(bytes(data))
    position = entries[entry % len(entries)] + offset
    value &= (1 << (8 * struct.calcsize(fmt))) - 1
    struct.pack_into(fmt, data, position, value)
    _load_or_refuse(tmp_path / "fuzz.ckpt", bytes(data))


# --------------------------------------------------------------------------- truncation, flips, odd files


def _load_or_refuse(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    with hang_guard(30), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about odd pickle protocols in damaged files
        for crc_check in (False, True):
            try:
                entries = load_checkpoint(str(path), crc_check=crc_check)
            except ValueError as exc:  # CheckpointError is one; any other must name the file just the same
                assert str(path) in str(exc), f"the error does not name the file: {exc!r}"
            else:
                assert isinstance(entries, dict)


def test_truncation_at_many_cut_points(tmp_path, real_checkpoint, seeded):
    rng = seeded("truncation-cut-points")
    size = len(real_checkpoint)
    # Every byte of the zip directory at the end and of the first header, plus random cuts between.
    cuts = set(range(0, 160)) | set(range(max(0, size - 700), size)) | {rng.randrange(size) for _ in range(250)}
    path = tmp_path / "cut.ckpt"
    with hang_guard(120):
        for cut in sorted(cuts):
            path.write_bytes(real_checkpoint[:cut])
            with pytest.raises(CheckpointError) as caught:
                load_checkpoint(str(path))
            assert str(path) in str(caught.value), cut
            if cut == 0:
                assert "the file is empty" in str(caught.value)


@given(
    flips=st.lists(st.tuples(st.integers(0, 1 << 30), st.integers(0, 255)), min_size=1, max_size=8),
    cut=st.one_of(st.none(), st.integers(0, 1 << 30)),
    splice=st.one_of(st.none(), st.tuples(st.integers(0, 1 << 30), st.binary(min_size=1, max_size=64))),
)
@settings(max_examples=300, deadline=None, database=None, phases=FUZZ_PHASES, suppress_health_check=[HealthCheck.function_scoped_fixture])
@seed(derive_seed("checkpoint-byte-flips"))
def test_fuzzed_checkpoint_bytes(tmp_path, real_checkpoint, flips, cut, splice):
    data = bytearray(real_checkpoint)
    for position, value in flips:
        data[position % len(data)] = value
    if splice is not None:
        position = splice[0] % len(data)
        data[position:position] = splice[1]
    if cut is not None:
        del data[cut % (len(data) + 1):]
    _load_or_refuse(tmp_path / "fuzz.ckpt", bytes(data))


def test_odd_files_are_refused_without_hanging(tmp_path):
    empty = tmp_path / "empty.ckpt"
    empty.write_bytes(b"")
    assert "the file is empty" in str(_assert_refused(empty))

    folder = tmp_path / "folder.ckpt"
    folder.mkdir()
    _assert_refused(folder, IsADirectoryError)

    fifo = tmp_path / "fifo.ckpt"  # opening a FIFO for reading would block forever
    os.mkfifo(fifo)
    with hang_guard(30):
        _assert_refused(fifo, CheckpointError, ValueError)

    for device in ("/dev/zero", "/dev/urandom"):  # endless: reading them would never finish
        link = tmp_path / f"{Path(device).name}.ckpt"
        link.symlink_to(device)
        with hang_guard(30):
            _assert_refused(link, CheckpointError, ValueError)

    loop = tmp_path / "loop.ckpt"
    loop.symlink_to(loop)
    _assert_refused(loop, ValueError)

    text = tmp_path / "text.ckpt"
    text.write_text("not a checkpoint\n" * 100)
    _assert_refused(text)
