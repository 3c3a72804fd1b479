"""Global dataset settings (``mindspore.dataset.config``).

nbcallback keeps one setting here, the callback timeout; the rest are elsewhere or
have no effect:

* **Randomness.** Every random choice of a pipeline (source shuffles,
  ``shuffle``, ``split(randomize=True)``, random vision ops) draws from
  torch's global generator (random ops per sample may also use numpy's), so
  :func:`set_seed` seeds Python's ``random``, ``numpy.random`` and torch's
  global generator -- MindSpore's ``set_seed`` seeds its engine, ``random``
  and ``numpy.random`` -- and :func:`get_seed` reads the seed back from torch.
* **Engine tuning.** Everything runs in the calling thread with no prefetch
  queue, so the knobs of MindSpore's C++ engine are checked as MindSpore
  checks them and then have no effect; their getters return the value
  nbcallback actually uses (or MindSpore's default where that is a mere
  setting with nothing behind it).
* **Callback timeout.** Process-wide, as in MindSpore: how long a
  ``WaitedDSCallback`` or a ``sync_wait`` iterated in one thread waits for
  another thread (see :func:`set_callback_timeout`).
"""
from __future__ import annotations

import math
import random
import threading
from typing import Any, Union

import numpy as np
import torch

from ._validate import INT32_MAX

__all__ = [
    "get_auto_num_workers",
    "get_callback_timeout",
    "get_enable_autotune",
    "get_enable_shared_mem",
    "get_monitor_sampling_interval",
    "get_multiprocessing_timeout_interval",
    "get_num_parallel_workers",
    "get_numa_enable",
    "get_prefetch_size",
    "get_seed",
    "set_auto_num_workers",
    "set_callback_timeout",
    "set_enable_autotune",
    "set_enable_shared_mem",
    "set_monitor_sampling_interval",
    "set_multiprocessing_timeout_interval",
    "set_num_parallel_workers",
    "set_numa_enable",
    "set_prefetch_size",
    "set_seed",
]

UINT32_MAX = 4294967295
# MindSpore's defaults, returned by getters whose setting has no effect here.
DEFAULT_PREFETCH_SIZE = 16
DEFAULT_MONITOR_SAMPLING_INTERVAL = 1000
DEFAULT_CALLBACK_TIMEOUT = 60
DEFAULT_MULTIPROCESSING_TIMEOUT_INTERVAL = 300


def _check_int(value: Any, name: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} isn't of type int.")


def _check_positive(value: Any, name: str, what: str) -> None:
    _check_int(value, name)
    if value <= 0 or value > INT32_MAX:
        raise ValueError(f"{what} is not within the required range (0, INT32_MAX(2147483647)].")


def set_seed(seed: int) -> None:
    """Seed every random choice of the pipelines (and the rest of the program).

    Seeds Python's ``random``, ``numpy.random`` and torch's global generator
    (``torch.manual_seed``), from which every epoch of every pipeline draws
    its shuffle orders: after ``set_seed(s)`` the same program gives the same
    sequence of epochs. Unlike MindSpore, this also seeds torch's generator
    for the model (weight init, dropout): nbcallback's pipelines and PyTorch
    share it.

    Args:
        seed: An int in ``[0, 4294967295]``.

    Raises:
        TypeError: ``seed`` is not an int (bools are refused).
        ValueError: ``seed`` is out of range.
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError("seed isn't of type int.")
    if seed < 0 or seed > UINT32_MAX:
        raise ValueError("seed given is not within the required range [0, UINT32_MAX(4294967295)].")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def get_seed() -> int:
    """The seed of torch's global generator: the last :func:`set_seed` (or ``torch.manual_seed``) value.

    Differs from MindSpore when the seed was never set: MindSpore returns
    its engine's default (5489) yet draws non-deterministic seeds; here the
    value is torch's own random initial seed (``torch.initial_seed()``),
    which is what the pipelines actually drew from.
    """
    return int(torch.initial_seed())


def set_num_parallel_workers(num: int) -> None:
    """Checked as MindSpore checks it; has no effect: nbcallback's pipelines run in the calling thread.

    Raises:
        TypeError: ``num`` is not an int.
        ValueError: ``num`` is not in ``(0, 2147483647]``.
    """
    _check_int(num, "num")
    if num <= 0 or num > INT32_MAX:
        raise ValueError("Number of parallel workers given is not within the required range (0, INT32_MAX(2147483647)].")


def get_num_parallel_workers() -> int:
    """1: every operation runs in the calling thread, whatever :func:`set_num_parallel_workers` was given."""
    return 1


def set_prefetch_size(size: int) -> None:
    """Checked as MindSpore checks it; no effect (there is no prefetch queue: rows are made on demand).

    Raises:
        TypeError: ``size`` is not an int.
        ValueError: ``size`` is not in ``(0, 2147483647]``.
    """
    _check_positive(size, "size", "size")


def get_prefetch_size() -> int:
    """MindSpore's default, 16 (the setting has no effect here)."""
    return DEFAULT_PREFETCH_SIZE


def set_enable_shared_mem(enable: bool) -> None:
    """Checked (a bool); no effect: no worker processes share memory here."""
    if not isinstance(enable, bool):
        raise TypeError("enable must be of type bool.")


def get_enable_shared_mem() -> bool:
    """False: no worker processes, so no shared memory."""
    return False


def set_multiprocessing_timeout_interval(interval: int) -> None:
    """Checked as MindSpore checks it; no effect (no worker processes to wait for)."""
    _check_positive(interval, "interval", "Interval given")


def get_multiprocessing_timeout_interval() -> int:
    """MindSpore's default, 300 seconds (the setting has no effect here)."""
    return DEFAULT_MULTIPROCESSING_TIMEOUT_INTERVAL


def set_monitor_sampling_interval(interval: int) -> None:
    """Checked as MindSpore checks it; no effect (there is no engine monitor)."""
    _check_positive(interval, "interval", "Interval given")


def get_monitor_sampling_interval() -> int:
    """MindSpore's default, 1000 ms (the setting has no effect here)."""
    return DEFAULT_MONITOR_SAMPLING_INTERVAL


class _CallbackTimeout:
    """The callback timeout, in seconds: MindSpore's process-wide ``callback_timeout`` setting."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds: Union[int, float] = DEFAULT_CALLBACK_TIMEOUT

    def get(self) -> Union[int, float]:
        with self._lock:
            return self._seconds

    def set(self, seconds: Union[int, float]) -> None:
        with self._lock:
            self._seconds = seconds


_callback_timeout = _CallbackTimeout()


def set_callback_timeout(timeout: Union[int, float]) -> None:
    """How many seconds a dataset callback or ``sync_wait`` waits for another thread (default 60).

    Used where the pipeline is iterated in one thread and released from
    another: a :class:`~nbcallback.dataset.WaitedDSCallback` waits this long
    for training to end the previous step or epoch, then raises
    ``RuntimeError("ds_step_begin timed out after <timeout> second(s). ...")``;
    a ``sync_wait`` waits this long for ``sync_update``, then warns and lets
    the rows pass. Where the waiting thread is the one that would end the wait,
    nothing waits (see :mod:`nbcallback.dataset.callbacks`).

    Where nbcallback differs: a float is accepted too (MindSpore takes whole
    seconds), so a wait can be shorter than a second.

    Args:
        timeout: Seconds, an int or a float in ``(0, 2147483647]``.

    Raises:
        TypeError: ``timeout`` is not an int or a float (bools are refused).
        ValueError: ``timeout`` is not in ``(0, 2147483647]``.
    """
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool):
        raise TypeError(f"timeout isn't of type int or float: got {type(timeout).__name__}.")
    if not math.isfinite(timeout) or timeout <= 0 or timeout > INT32_MAX:
        raise ValueError(
            f"Timeout given is not within the required range (0, INT32_MAX(2147483647)]: got {timeout}."
        )
    _callback_timeout.set(timeout)


def get_callback_timeout() -> Union[int, float]:
    """The seconds set by :func:`set_callback_timeout`; MindSpore's default, 60, until then."""
    return _callback_timeout.get()


def set_numa_enable(numa_enable: bool) -> None:
    """Checked (a bool); no effect (no NUMA binding of workers)."""
    if not isinstance(numa_enable, bool):
        raise TypeError("numa_enable must be a boolean dtype.")


def get_numa_enable() -> bool:
    """False: workers are never bound to NUMA nodes."""
    return False


def set_auto_num_workers(enable: bool) -> None:
    """Checked (a bool); no effect (one thread)."""
    if not isinstance(enable, bool):
        raise TypeError("enable must be of type bool.")


def get_auto_num_workers() -> bool:
    """False: worker counts are never tuned (one thread)."""
    return False


def set_enable_autotune(enable: bool, filepath_prefix: str | None = None) -> None:
    """Checked as MindSpore checks it; no effect (nothing to tune)."""
    if not isinstance(enable, bool):
        raise TypeError("enable must be of type bool.")
    if filepath_prefix and not isinstance(filepath_prefix, str):
        raise TypeError(f"json_filepath must be a str value but was: {filepath_prefix}.")
    if enable and filepath_prefix == "":
        raise RuntimeError("The value of json_filepath cannot be the empty string.")


def get_enable_autotune() -> bool:
    """False: AutoTune does not exist here."""
    return False
