"""numpy → torch, once for the whole package."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch


def numpy_to_tensor(value: Any, *, contiguous: bool = False) -> torch.Tensor | None:
    """``value`` (anything ``np.asarray`` reads) as a CPU tensor sharing its memory where torch allows.

    Non-native byte order, read-only buffers and negative strides (``np.flip`` views) are copied, as are
    non-contiguous arrays when ``contiguous``. Returns ``None`` for dtypes torch cannot hold (strings,
    objects), so the caller decides whether that is an error or a column that stays numpy.
    """
    array = np.asarray(value)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    elif (
        not array.flags.writeable
        or any(stride < 0 for stride in array.strides)
        or (contiguous and not array.flags.c_contiguous)
    ):
        array = np.array(array, copy=True, order="C")
    try:
        return torch.from_numpy(array)
    except TypeError:
        return None
