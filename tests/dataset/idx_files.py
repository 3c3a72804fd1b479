"""Builders of IDX files, good and forged, for the dataset tests."""
from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np

_CODES = {np.dtype(np.uint8): 0x08, np.dtype(np.int8): 0x09, np.dtype(">i2"): 0x0B,
          np.dtype(">i4"): 0x0C, np.dtype(">f4"): 0x0D, np.dtype(">f8"): 0x0E}


def idx_bytes(array: np.ndarray, *, dims: tuple[int, ...] | None = None, magic: int | None = None) -> bytes:
    """Serialise ``array`` as IDX; ``dims``/``magic`` override the header to forge bad files."""
    big = array.astype(array.dtype.newbyteorder(">")) if array.dtype.itemsize > 1 else array
    code = _CODES[np.dtype(big.dtype)]
    shape = array.shape if dims is None else dims
    if magic is None:
        magic = (code << 8) | len(shape)
    return struct.pack(">I", magic) + struct.pack(f">{len(shape)}I", *shape) + big.tobytes()


def write_idx(path: Path, array: np.ndarray, *, gz: bool = False, **kwargs: object) -> Path:
    data = idx_bytes(array, **kwargs)  # type: ignore[arg-type]
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(data, compresslevel=1))
    else:
        path.write_bytes(data)
    return path


def tiny_arrays(n: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` 28x28 images whose pixels all equal the row's id, and labels equal to the id."""
    ids = (np.arange(n) + offset) % 256
    images = np.broadcast_to(ids[:, None, None], (n, 28, 28)).astype(np.uint8)
    return images, ids.astype(np.uint8)
