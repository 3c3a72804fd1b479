"""Reader for the IDX format used by MNIST (plain or gzip-compressed).

An IDX file is a 4-byte magic number (two zero bytes, a type code, the number
of dimensions), one big-endian uint32 per dimension, then the raw array in C
order. The reader checks the header against the file before allocating, so a
corrupt or hostile header (``10**12`` images in a 47 MB file) is refused with a
message instead of a ``MemoryError``, and it reads the payload straight into
one contiguous array (no per-sample work).
"""
from __future__ import annotations

import gzip
import math
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import BinaryIO, Mapping

import numpy as np

__all__ = ["IdxError", "IdxHeader", "read_idx", "read_idx_header", "IDX_DTYPES"]

#: IDX type code -> numpy dtype of the stored (big-endian) values.
IDX_DTYPES: Mapping[int, np.dtype] = MappingProxyType(
    {
        0x08: np.dtype(np.uint8),
        0x09: np.dtype(np.int8),
        0x0B: np.dtype(">i2"),
        0x0C: np.dtype(">i4"),
        0x0D: np.dtype(">f4"),
        0x0E: np.dtype(">f8"),
    }
)

# DEFLATE cannot expand data by more than about 1032:1, so a gzip file of
# ``n`` bytes never decompresses to more than this many times ``n``.
_MAX_GZIP_RATIO = 1032
_CHUNK = 1 << 22
# numpy 1.x allows 32 dimensions (2.x: 64); MNIST needs 3.
_MAX_NDIM = 32
_MAX_ARRAY_BYTES = int(np.iinfo(np.intp).max)


class IdxError(ValueError):
    """An IDX file is malformed: wrong magic number, truncated, or inconsistent header."""


@dataclass(frozen=True)
class IdxHeader:
    """What an IDX header says about its file.

    Attributes:
        path: The file the header was read from.
        magic: The 32-bit magic number, e.g. ``0x00000803`` for MNIST images.
        dtype: The dtype of the stored values (big-endian where it matters).
        shape: The array shape declared by the header.
        data_offset: Byte offset of the payload in the (decompressed) stream.
        compressed: Whether the file is gzip-compressed.
    """

    path: Path
    magic: int
    dtype: np.dtype
    shape: tuple[int, ...]
    data_offset: int
    compressed: bool

    @property
    def nbytes(self) -> int:
        """Size in bytes of the payload the header announces."""
        return math.prod(self.shape) * self.dtype.itemsize


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _open(path: Path, compressed: bool) -> BinaryIO:
    if compressed:
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def _describe_magic(magic: int) -> str:
    code, ndim = (magic >> 8) & 0xFF, magic & 0xFF
    dtype = IDX_DTYPES.get(code)
    kind = dtype.name if dtype is not None else f"unknown type 0x{code:02X}"
    return f"{kind}, {ndim} dimension{'s' if ndim != 1 else ''}"


def _read_exact(f: BinaryIO, buf: memoryview) -> int:
    """Fill ``buf`` from ``f``; return the number of bytes actually read."""
    got = 0
    while got < len(buf):
        n = f.readinto(buf[got : got + _CHUNK])  # type: ignore[attr-defined]
        if not n:
            break
        got += n
    return got


def _parse_header(path: Path, f: BinaryIO, compressed: bool, expected_magic: int | None) -> IdxHeader:
    head = f.read(4)
    if len(head) < 4:
        raise IdxError(
            f"{path}: truncated IDX file: {len(head)} byte(s), too short for the 4-byte magic number"
        )
    magic = int.from_bytes(head, "big")
    well_formed = head[0] == 0 and head[1] == 0 and head[2] in IDX_DTYPES and head[3] > 0
    if expected_magic is not None and magic != expected_magic:
        raise IdxError(
            f"{path}: wrong IDX magic number 0x{magic:08X} ({head!r}), expected "
            f"0x{expected_magic:08X} ({_describe_magic(expected_magic)})"
        )
    if not well_formed:
        raise IdxError(f"{path}: not an IDX file: wrong magic number 0x{magic:08X} ({head!r})")
    ndim = head[3]
    raw = f.read(4 * ndim)
    if len(raw) < 4 * ndim:
        raise IdxError(
            f"{path}: truncated IDX header: {ndim} dimensions need {4 * ndim} bytes, "
            f"found {len(raw)}"
        )
    shape = struct.unpack(f">{ndim}I", raw)
    dtype = IDX_DTYPES[head[2]]
    # Shapes numpy cannot describe at all (too many dimensions, or a size beyond the address
    # space even when another dimension is 0): refused here, not as numpy's ValueError later.
    if ndim > _MAX_NDIM or math.prod(d for d in shape if d) * dtype.itemsize > _MAX_ARRAY_BYTES:
        described = str(shape) if ndim <= 8 else f"({', '.join(map(str, shape[:8]))}, ...) ({ndim} dimensions)"
        raise IdxError(f"{path}: corrupt IDX header: it declares shape {described}, which no array can hold")
    return IdxHeader(path, magic, dtype, shape, 4 + 4 * ndim, compressed)


def _check_size(header: IdxHeader) -> None:
    """Refuse a header whose payload cannot fit in the file, before anything is allocated."""
    file_size = os.path.getsize(header.path)
    need = header.nbytes
    if header.compressed:
        bound = file_size * _MAX_GZIP_RATIO
        if need > bound:
            raise IdxError(
                f"{header.path}: corrupt IDX header: it declares shape {header.shape} "
                f"({need} bytes of data), more than a {file_size}-byte gzip file can hold"
            )
        return
    available = file_size - header.data_offset
    if need > available:
        raise IdxError(
            f"{header.path}: truncated IDX file or corrupt header: the header declares shape "
            f"{header.shape} ({need} bytes of data) but the file holds only {available} bytes "
            f"after the header"
        )
    if need < available:
        raise IdxError(
            f"{header.path}: corrupt IDX file: {available - need} unexpected bytes after the "
            f"{need} bytes of data declared by the header (shape {header.shape})"
        )


def read_idx_header(path: str | os.PathLike[str], expected_magic: int | None = None) -> IdxHeader:
    """Read and check the header of an IDX file without reading its data.

    Args:
        path: The ``.idx``/``-ubyte`` file, optionally gzip-compressed (detected
            from its content, not its name).
        expected_magic: If given, the exact magic number required (e.g.
            ``0x00000803`` for MNIST images); anything else raises IdxError.

    Returns:
        The parsed header.

    Raises:
        FileNotFoundError: The file does not exist.
        IdxError: Wrong magic number, truncated header, or a declared size the
            file cannot hold (compared with the file size, so absurd headers are
            refused cheaply).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"IDX file not found: {path}")
    compressed = _is_gzip(path)
    try:
        with _open(path, compressed) as f:
            header = _parse_header(path, f, compressed, expected_magic)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise IdxError(f"{path}: corrupt gzip stream: {exc}") from exc
    _check_size(header)
    return header


def read_idx(
    path: str | os.PathLike[str],
    expected_magic: int | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Read a whole IDX file into a numpy array.

    Args:
        path: The file to read, plain or gzip-compressed.
        expected_magic: Optional exact magic number required (see
            :func:`read_idx_header`).
        out: Optional C-contiguous array to read into, with the file's dtype
            and exactly as many bytes as the payload; lets callers concatenate
            several files into one buffer without a copy. Its shape is kept.

    Returns:
        The array in native byte order (``out`` itself when given and the
        dtype is single-byte).

    Raises:
        FileNotFoundError: The file does not exist.
        IdxError: The header is wrong or the data is truncated, too long, or
            (for gzip) corrupt. The message names the file.
        ValueError: ``out`` does not match the header.
    """
    header = read_idx_header(path, expected_magic)
    if out is None:
        out = np.empty(header.shape, header.dtype)
    elif out.dtype != header.dtype or out.nbytes != header.nbytes or not out.flags.c_contiguous:
        raise ValueError(
            f"{header.path}: 'out' must be a C-contiguous {header.dtype} array of "
            f"{header.nbytes} bytes, got {out.dtype} with {out.nbytes} bytes"
        )
    buf = memoryview(out).cast("B") if out.nbytes else memoryview(b"")
    try:
        with _open(header.path, header.compressed) as f:
            f.seek(header.data_offset)
            got = _read_exact(f, buf) if out.nbytes else 0
            trailing = f.read(1)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise IdxError(f"{header.path}: corrupt gzip stream: {exc}") from exc
    if got < header.nbytes:
        raise IdxError(
            f"{header.path}: truncated IDX file: the header declares shape {header.shape} "
            f"({header.nbytes} bytes of data) but only {got} bytes follow it"
        )
    if trailing:
        raise IdxError(
            f"{header.path}: corrupt IDX file: unexpected data after the {header.nbytes} bytes "
            f"declared by the header (shape {header.shape})"
        )
    if not header.dtype.isnative and header.dtype.itemsize > 1:
        return out.astype(header.dtype.newbyteorder("="))
    return out
