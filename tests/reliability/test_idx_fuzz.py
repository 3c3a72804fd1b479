"""The IDX reader and MnistDataset on random, forged, mutated and truncated files.

Only the documented errors may come out (``IdxError``, a ``ValueError`` naming
the file; ``ValueError`` for an image/label count mismatch), never another
exception, a hang or an allocation the file cannot justify: the traced peak
memory stays within a small multiple of the file size (gzip: DEFLATE's
1032:1 bound), so a header claiming 10^12 images is refused before allocating.
"""
from __future__ import annotations

import gzip
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from nbcallback.dataset import IdxError, MnistDataset, read_idx
from nbcallback.dataset.idx import IDX_DTYPES, read_idx_header
from tests.reliability._support import FUZZ_PHASES, derive_seed, hang_guard

CODES = sorted(IDX_DTYPES)
IMAGES_MAGIC, LABELS_MAGIC = 0x00000803, 0x00000801
FUZZ = settings(max_examples=250, deadline=None, database=None, phases=FUZZ_PHASES,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def header(code: int, dims: list[int], ndim: int | None = None) -> bytes:
    ndim = len(dims) if ndim is None else ndim
    return bytes([0, 0, code, ndim & 0xFF]) + b"".join(struct.pack(">I", d) for d in dims)


def _memory_bound(data: bytes, gz: bool) -> int:
    return (1 << 21) + len(data) * (1100 if gz else 4)


def _read_or_refuse(path: Path, data: bytes, gz: bool, expected_magic: int | None = None) -> np.ndarray | None:
    """Read ``data`` from ``path``: an array, or an IdxError naming the file; never more memory than the bound."""
    path.write_bytes(data)
    tracemalloc.start()
    try:
        with hang_guard(30):
            try:
                array = read_idx(path, expected_magic)
            except IdxError as exc:
                assert str(path) in str(exc), exc
                array = None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= _memory_bound(data, gz), f"{peak} bytes traced for a {len(data)}-byte file"
    if array is not None:
        head = read_idx_header(path)
        assert array.shape == head.shape and array.dtype.isnative
    return array


dims_strategy = st.lists(
    st.one_of(st.integers(0, 4), st.integers(0, 64), st.sampled_from([28, 60000, 10**9, 10**12 % (1 << 32), (1 << 32) - 1,
                                                                        1 << 31])),
    min_size=0, max_size=6,
)


@given(
    code=st.one_of(st.sampled_from(CODES), st.integers(0, 255)),
    dims=dims_strategy,
    ndim_override=st.one_of(st.none(), st.integers(0, 255)),
    payload_delta=st.one_of(st.just(0), st.integers(-16, 16), st.integers(-4096, 4096)),
    prefix=st.one_of(st.just(b"\x00\x00"), st.binary(min_size=2, max_size=2)),
    gz=st.booleans(),
    cut=st.one_of(st.none(), st.integers(0, 1 << 20)),
    expected=st.sampled_from([None, IMAGES_MAGIC, LABELS_MAGIC]),
)
@FUZZ
@seed(derive_seed("idx-forged-headers"))
def test_forged_headers(tmp_path, code, dims, ndim_override, payload_delta, prefix, gz, cut, expected):
    head = prefix + header(code, dims, ndim_override)[2:]
    itemsize = IDX_DTYPES[code].itemsize if code in IDX_DTYPES else 1
    need = int(np.prod(dims, dtype=object)) * itemsize if dims else itemsize
    length = max(0, min(need, 1 << 16) + payload_delta)
    data = head + bytes(range(256)) * (length // 256) + bytes(length % 256)
    if gz:
        data = gzip.compress(data, compresslevel=1, mtime=0)
    if cut is not None:
        data = data[: cut % (len(data) + 1)]
    _read_or_refuse(tmp_path / "forged.idx", data, gz, expected)


def _valid_file(rows: int, gz: bool, code: int = 0x08) -> bytes:
    dtype = IDX_DTYPES[code]
    values = (np.arange(rows * 4 * 3) % 251).astype(dtype)
    data = header(code, [rows, 4, 3]) + values.tobytes()
    return gzip.compress(data, compresslevel=1, mtime=0) if gz else data


@given(
    rows=st.integers(0, 20),
    code=st.sampled_from(CODES),
    gz=st.booleans(),
    flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), max_size=6),
    cut=st.one_of(st.none(), st.integers(0, 1 << 20)),
    junk=st.binary(max_size=32),
)
@FUZZ
@seed(derive_seed("idx-mutated-files"))
def test_mutated_files(tmp_path, rows, code, gz, flips, cut, junk):
    data = bytearray(_valid_file(rows, gz, code))
    for position, value in flips:
        data[position % len(data)] = value
    if cut is not None:
        del data[cut % (len(data) + 1):]
    data += junk
    array = _read_or_refuse(tmp_path / "mutated.idx", bytes(data), gz)
    if not flips and cut is None and not junk:
        assert array is not None and array.shape == (rows, 4, 3)


def _mnist_folder(folder: Path, rows: int, gz: bool) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    images = header(0x08, [rows, 28, 28]) + bytes(rows * 28 * 28)
    labels = header(0x08, [rows]) + bytes(range(rows))
    paths = {}
    for name, data in (("train-images-idx3-ubyte", images), ("train-labels-idx1-ubyte", labels)):
        path = folder / (name + (".gz" if gz else ""))
        path.write_bytes(gzip.compress(data, compresslevel=1, mtime=0) if gz else data)
        paths[name] = path
    return paths


@given(
    rows=st.integers(1, 12),
    gz=st.booleans(),
    target=st.sampled_from(["train-images-idx3-ubyte", "train-labels-idx1-ubyte"]),
    header_patch=st.one_of(st.none(), st.tuples(st.integers(0, 15), st.binary(min_size=1, max_size=4))),
    flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), max_size=3),
    cut=st.one_of(st.none(), st.integers(0, 1 << 20)),
)
@FUZZ
@seed(derive_seed("mnist-dataset-mutations"))
def test_mnist_dataset_on_damaged_files(tmp_path, rows, gz, target, header_patch, flips, cut):
    folder = tmp_path / "mnist"
    for old in folder.glob("*"):
        old.unlink()
    paths = _mnist_folder(folder, rows, gz)
    path = paths[target]
    data = bytearray(path.read_bytes())
    if header_patch is not None and not gz:
        offset, patch = header_patch
        data[offset : offset + len(patch)] = patch
    for position, value in flips:
        data[position % len(data)] = value
    if cut is not None:
        del data[cut % (len(data) + 1):]
    path.write_bytes(bytes(data))
    tracemalloc.start()
    try:
        with hang_guard(30):
            try:
                dataset = MnistDataset(folder, usage="train", shuffle=False)
                batch = next(iter(dataset.batch(4)))
            except ValueError as exc:  # IdxError, or the documented count mismatch
                assert str(folder) in str(exc), exc
            else:
                assert len(batch[0]) == min(4, dataset.get_dataset_size())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= _memory_bound(bytes(data), gz) + rows * 28 * 28 * 8


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("where", ["read_idx", "MnistDataset"])
def test_a_header_claiming_10_to_the_12_images_is_refused_before_allocating(tmp_path, gz, where):
    # The count field is a uint32: the largest claims an MNIST header can make.
    claims = {
        "max-count.idx": header(0x08, [0xFFFFFFFF, 28, 28]) + bytes(28 * 28 * 3),  # 4.3e9 images, 3.4e12 bytes
        "1e12-images.idx": header(0x08, [10**6, 10**6, 1]) + bytes(64),  # 10^12 one-pixel images
        "max-everything.idx": header(0x08, [0xFFFFFFFF] * 3) + bytes(64),  # ~8e28 bytes
    }
    for name, content in claims.items():
        path = tmp_path / (name + (".gz" if gz else ""))
        path.write_bytes(gzip.compress(content, mtime=0) if gz else content)
        tracemalloc.start()
        try:
            with pytest.raises(IdxError, match=r"corrupt IDX header|truncated IDX file|more than a"):
                if where == "read_idx":
                    read_idx(path)
                else:
                    folder = tmp_path / f"mnist-{name}"
                    paths = _mnist_folder(folder, 3, gz)
                    paths["train-images-idx3-ubyte"].write_bytes(path.read_bytes())
                    MnistDataset(folder, usage="train")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 1 << 20, f"{peak} bytes allocated before refusing"
