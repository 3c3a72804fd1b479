"""The IDX reader: round trips and every malformed-file error, message included."""
from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from nbcallback.dataset.idx import IdxError, read_idx, read_idx_header
from tests.dataset.idx_files import idx_bytes, write_idx


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("gz", [False, True])
def test_round_trip(tmp_path: Path, dtype: type, gz: bool) -> None:
    array = (np.arange(2 * 3 * 4) - 5).astype(dtype).reshape(2, 3, 4)
    path = write_idx(tmp_path / "a-idx3", array, gz=gz)
    out = read_idx(path)
    assert out.dtype == np.dtype(dtype) and out.dtype.isnative
    np.testing.assert_array_equal(out, array)
    header = read_idx_header(path)
    assert header.shape == (2, 3, 4) and header.compressed is gz


def test_reads_into_given_buffer(tmp_path: Path) -> None:
    array = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    path = write_idx(tmp_path / "a", array)
    buffer = np.zeros((2, 3, 4, 1), np.uint8)
    assert read_idx(path, out=buffer) is buffer
    np.testing.assert_array_equal(buffer[..., 0], array)
    with pytest.raises(ValueError, match="'out' must be"):
        read_idx(path, out=np.zeros(5, np.uint8))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nothere"):
        read_idx(tmp_path / "nothere")


def test_too_short_for_magic(tmp_path: Path) -> None:
    path = tmp_path / "short"
    path.write_bytes(b"\x00\x00")
    with pytest.raises(IdxError, match=r"short: truncated IDX file: 2 byte\(s\)"):
        read_idx(path)


def test_not_an_idx_file(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_bytes(b"<!DOCTYPE html><html></html>")
    with pytest.raises(IdxError, match=r"page\.html: not an IDX file: wrong magic number 0x3C21444F"):
        read_idx(path)


def test_wrong_expected_magic(tmp_path: Path) -> None:
    path = write_idx(tmp_path / "labels", np.zeros(3, np.uint8))
    with pytest.raises(IdxError, match=r"labels: wrong IDX magic number 0x00000801 .*expected 0x00000803 \(uint8, 3 dimensions\)"):
        read_idx(path, expected_magic=0x803)


def test_truncated_header(tmp_path: Path) -> None:
    path = tmp_path / "hdr"
    path.write_bytes(struct.pack(">I", 0x803) + b"\x00\x00\x00\x02")
    with pytest.raises(IdxError, match=r"hdr: truncated IDX header: 3 dimensions need 12 bytes, found 4"):
        read_idx(path)


def test_truncated_data(tmp_path: Path) -> None:
    data = idx_bytes(np.zeros((10, 28, 28), np.uint8))
    path = tmp_path / "images"
    path.write_bytes(data[:-100])
    with pytest.raises(IdxError, match=r"images: truncated IDX file or corrupt header: .*7840 bytes of data\) but the file holds only 7740"):
        read_idx(path)


def test_truncated_gzip_data(tmp_path: Path) -> None:
    data = idx_bytes(np.zeros((10, 28, 28), np.uint8))
    path = tmp_path / "images.gz"
    path.write_bytes(gzip.compress(data[:-100]))
    with pytest.raises(IdxError, match=r"images\.gz: truncated IDX file: .* only 7740 bytes follow it"):
        read_idx(path)


def test_trailing_bytes(tmp_path: Path) -> None:
    path = tmp_path / "long"
    path.write_bytes(idx_bytes(np.zeros(5, np.uint8)) + b"junk")
    with pytest.raises(IdxError, match="long: corrupt IDX file: 4 unexpected bytes after the 5 bytes"):
        read_idx(path)


def test_absurd_header_refused_before_allocating(tmp_path: Path) -> None:
    # 4,294,967,295 images of 28x28: 3.4 TB announced in a 2 KB file.
    path = tmp_path / "huge"
    path.write_bytes(idx_bytes(np.zeros((2, 28, 28), np.uint8), dims=(2**32 - 1, 28, 28)))
    with pytest.raises(IdxError, match=r"huge: truncated IDX file or corrupt header: the header declares shape \(4294967295, 28, 28\)"):
        read_idx(path)


def test_absurd_gzip_header_refused_before_allocating(tmp_path: Path) -> None:
    path = tmp_path / "huge.gz"
    path.write_bytes(gzip.compress(idx_bytes(np.zeros((2, 28, 28), np.uint8), dims=(2**32 - 1, 1000, 1000))))
    with pytest.raises(IdxError, match=r"huge\.gz: corrupt IDX header: .* more than a \d+-byte gzip file can hold"):
        read_idx(path)


def test_corrupt_gzip(tmp_path: Path) -> None:
    data = gzip.compress(idx_bytes(np.arange(5000, dtype=np.uint8) % 7))
    path = tmp_path / "bad.gz"
    path.write_bytes(data[:12] + bytes(b ^ 0xFF for b in data[12:40]) + data[40:])
    with pytest.raises(IdxError, match=r"bad\.gz: (corrupt gzip stream|not an IDX file|truncated)"):
        read_idx(path)
