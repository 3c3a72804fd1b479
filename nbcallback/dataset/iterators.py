"""Epochs and iterators: ``create_tuple_iterator`` / ``create_dict_iterator`` and what they share.

* :class:`EpochContext` holds what one epoch draws at its start: one private
  ``torch.Generator`` per random node of the pipeline (source shuffles,
  ``shuffle``), each seeded from torch's global generator in a fixed order.
  So ``torch.manual_seed`` / :func:`nbcallback.dataset.config.set_seed` makes
  the sequence of epochs reproducible, and the per-row path and the
  whole-column fast path (which interleave their work differently) draw the
  same orders.
* :class:`DatasetIterator` runs epochs of a dataset and hands out its elements
  as lists or dicts, torch tensors or numpy arrays.
* The value helpers convert rows between numpy and torch and stack rows into
  batches.
"""
from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np
import torch

from ._tensor import numpy_to_tensor
from ._validate import check_bool, type_error

if TYPE_CHECKING:
    from .datasets import Dataset

__all__ = ["DatasetIterator", "EpochContext", "Output"]

Row = list[Any]
_SEED_HIGH = 2**62


# --------------------------------------------------------------------------- values


def to_numpy(value: Any) -> np.ndarray:
    """``value`` as a numpy array (sharing memory with a CPU tensor)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def to_torch(value: Any) -> Any:
    """``value`` as a torch tensor; arrays with no tensor dtype (strings, objects) stay numpy."""
    if isinstance(value, torch.Tensor):
        return value
    tensor = numpy_to_tensor(value)
    return np.asarray(value) if tensor is None else tensor


def stack(values: Sequence[Any], column: str) -> Any:
    """Stack one column's rows along a new first axis (torch if every row is a tensor, else numpy).

    Raises:
        RuntimeError: The rows differ in shape.
    """
    first = values[0]
    if isinstance(first, torch.Tensor) and all(isinstance(v, torch.Tensor) for v in values):
        shapes = {tuple(v.shape) for v in values}
        if len(shapes) == 1:
            return torch.stack(list(values))
    else:
        arrays = [v if type(v) is np.ndarray else to_numpy(v) for v in values]
        shapes = {a.shape for a in arrays}
        if len(shapes) == 1:
            return np.stack(arrays)
    raise RuntimeError(
        f"batch: the rows of column {column!r} have different shapes {sorted(shapes)[:4]}; "
        f"every row of a batch must have the same shape (use padded_batch, or a map that resizes)."
    )


# --------------------------------------------------------------------------- randomness


@contextlib.contextmanager
def preserved_rng() -> Iterator[None]:
    """Restore torch's, numpy's and Python's global RNG states afterwards.

    Introspection that must run the pipeline (``output_shapes``, the size of a
    filtered dataset) then leaves the shuffle orders of later epochs as they
    would have been without it.
    """
    torch_state = torch.get_rng_state()
    numpy_state = np.random.get_state()
    python_state = random.getstate()
    try:
        yield
    finally:
        torch.set_rng_state(torch_state)
        np.random.set_state(numpy_state)
        random.setstate(python_state)


class EpochContext:
    """What one epoch of a pipeline draws when it starts.

    Walking the pipeline from the top (each node, then its inputs in order),
    every node that shuffles gets a ``torch.Generator`` seeded from torch's
    global generator. A node re-run within the epoch (below a ``repeat``)
    keeps drawing from its generator, so each repetition gets a new order.

    Args:
        dataset: The dataset whose epoch starts.
        epoch: 0-based number of the epoch (``BatchInfo.get_epoch_num``).
    """

    def __init__(self, dataset: "Dataset", epoch: int = 0) -> None:
        self.epoch = epoch
        self.do_copy = True  # unbatched rows from cached columns: copies (True) or views
        self.ds_callbacks: Any = None  # the run of the dataset callbacks (callbacks.CallbackRun) when iterating
        self._generators: dict[int, torch.Generator] = {}
        stack_: list[Dataset] = [dataset]
        seen: set[int] = set()
        while stack_:
            node = stack_.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if node._needs_generator():
                generator = torch.Generator()
                generator.manual_seed(int(torch.randint(0, _SEED_HIGH, (1,)).item()))
                self._generators[id(node)] = generator
            stack_.extend(reversed(node._inputs))

    def generator(self, node: "Dataset") -> torch.Generator:
        """The generator drawn for ``node`` at the start of this epoch."""
        return self._generators[id(node)]


# --------------------------------------------------------------------------- iterators


@dataclass(frozen=True)
class Output:
    """How the user receives an epoch's elements: which columns, torch or numpy, lists or dicts.

    ``names`` are the columns returned and ``select`` their positions in a
    row of the dataset. Calling it on a stream of rows gives the user's
    elements (see the iteration protocol in :class:`~nbcallback.dataset.Dataset`).
    """

    names: list[str]
    select: list[int]
    numpy: bool
    as_dict: bool

    def __call__(self, stream: Iterator[Row]) -> Iterator[Any]:
        convert = to_numpy if self.numpy else to_torch
        select, names, as_dict = self.select, self.names, self.as_dict
        for element in stream:
            values = [convert(element[j]) for j in select]
            yield dict(zip(names, values)) if as_dict else values


class DatasetIterator:
    """Iterator returned by ``create_tuple_iterator`` / ``create_dict_iterator``.

    Each pass (a ``for`` loop, or ``next`` calls until StopIteration) is one
    epoch; the next pass starts the next epoch with a new order, up to
    ``num_epochs`` (-1: unlimited). A ``for`` loop left with ``break`` is
    resumed by the next loop, as in MindSpore.

    Args:
        dataset: The dataset to iterate.
        columns: Column names to return, or None for all.
        num_epochs: Number of epochs allowed, or -1.
        output_numpy: Return numpy arrays instead of torch tensors.
        do_copy: Copy unbatched rows out of the cached columns.
        as_dict: Yield dicts keyed by column name instead of lists.
    """

    def __init__(
        self,
        dataset: "Dataset",
        columns: list[str] | None,
        num_epochs: int,
        output_numpy: bool,
        do_copy: bool,
        as_dict: bool,
    ) -> None:
        if isinstance(num_epochs, (bool, np.bool_)) or not isinstance(num_epochs, int):
            raise type_error("num_epochs", num_epochs, (int,))
        if num_epochs != -1 and num_epochs < 1:
            raise ValueError(f"Input num_epochs must be -1 (unlimited) or a positive int, but got {num_epochs}.")
        self._dataset = dataset
        self._columns = columns
        self._num_epochs = num_epochs
        self._output_numpy = check_bool(output_numpy, "output_numpy")
        self._do_copy = check_bool(do_copy, "do_copy")
        self._as_dict = as_dict
        self._epochs_started = 0
        self._current: Iterator[Any] | None = None
        self._ds_callbacks: Any = None  # this iterator's run of dataset callbacks (one per iterator, as MindSpore)

    def _start(self) -> Iterator[Any]:
        if self._num_epochs != -1 and self._epochs_started >= self._num_epochs:
            raise RuntimeError(
                f"This iterator has already run its num_epochs={self._num_epochs} epoch(s); create a new "
                f"iterator, or pass num_epochs=-1 for no limit."
            )
        self._epochs_started += 1
        stream = self._dataset._epoch(self._columns, self._output_numpy, self._do_copy, self._as_dict, self)
        self._current = self._track(stream)
        return self._current

    def _track(self, stream: Iterator[Any]) -> Iterator[Any]:
        yield from stream
        self._current = None

    def __iter__(self) -> Iterator[Any]:
        return self._current if self._current is not None else self._start()

    def __next__(self) -> Any:
        current = self._current if self._current is not None else self._start()
        return next(current)

    def set_epoch(self, epoch: int) -> None:
        """Forwarded to the dataset (see :meth:`Dataset.set_epoch <nbcallback.dataset.Dataset.set_epoch>`)."""
        self._dataset.set_epoch(epoch)

    def stop(self) -> None:
        """End the current epoch early (MindSpore's ``iterator.stop()``); the next pass starts a new one."""
        self._current = None

    @property
    def epochs_started(self) -> int:
        """How many epochs this iterator has started."""
        return self._epochs_started
