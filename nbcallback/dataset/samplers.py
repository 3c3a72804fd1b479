"""Samplers: which rows of a source an epoch reads, in which order (``mindspore.dataset.SequentialSampler`` ...).

A sampler is given to a source's ``sampler=`` (``MnistDataset``,
``GeneratorDataset`` over a random-access object, ``NumpySlicesDataset``) or
installed later with :meth:`Dataset.use_sampler <nbcallback.dataset.Dataset.use_sampler>`
/ :meth:`~nbcallback.dataset.Dataset.add_sampler`. Each epoch it yields row
ids; ``get_dataset_size()`` counts them without reading data (a
:class:`PKSampler` reads the labels once).

=========================  ===========================================================
sampler                    an epoch reads
=========================  ===========================================================
:class:`SequentialSampler`  rows ``start_index, start_index + 1, ...``
:class:`RandomSampler`      a random permutation (or draws with ``replacement``)
:class:`DistributedSampler` one shard: positions ``shard_id, shard_id + num_shards, ...``
                            of the (shuffled) order, padded to ``ceil(rows / num_shards)``
:class:`SubsetSampler`      the given ids, in the given order
:class:`SubsetRandomSampler` the given ids, in a random order each epoch
:class:`WeightedRandomSampler` ids drawn with the given weights
:class:`PKSampler`          ``num_val`` rows of every class (sorted, or shuffled classes)
:class:`Sampler`            your ``__iter__`` (subclass it; ``reset`` runs between passes)
=========================  ===========================================================

**Chaining** (``parent.add_child(child)``): the child samples the dataset;
the parent samples the child's output, as if the child's ids were the
dataset's rows, so ``SequentialSampler(1, 2)`` over
``SequentialSampler(1, 2)`` on rows ``[a, b, c, d]`` reads ``c``.

**Randomness.** :class:`RandomSampler`, :class:`SubsetRandomSampler`,
:class:`WeightedRandomSampler` and :class:`PKSampler` draw from the
per-epoch generator every random node of the pipeline gets from torch's
global generator (:class:`~nbcallback.dataset.iterators.EpochContext`), as a
source's own shuffle does: :func:`nbcallback.dataset.config.set_seed` makes
every epoch reproducible, and every epoch (and every ``repeat``) draws a new
order. ``MnistDataset(path, sampler=RandomSampler())`` reads the same order as
``MnistDataset(path)`` under the same seed. A shuffled
:class:`DistributedSampler` draws a seed from torch's global generator when
it is created and derives epoch ``k``'s permutation from ``(seed, k)``,
exactly as ``num_shards``/``shard_id`` do, so ``sampler=DistributedSampler(n, i)``
and ``num_shards=n, shard_id=i`` read the same rows when built under the same
seed (under ``torch.distributed``, rank 0's seed is agreed at the first epoch).

Differences from MindSpore: errors that MindSpore's C++ engine raises when
the pipeline starts (a negative ``start_index``, empty or negative weights,
``offset > num_shards``, ``num_val <= 0``) are raised when the sampler is
created, with the same words; a :class:`DistributedSampler` whose shard is
empty (possible only with ``offset``) reads no rows, where MindSpore pads it
with row 0 for ``ConcatDataset``; ``parse()``/``create()`` (handles into the C++
engine) do not exist.
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional, Sequence, Union

import numpy as np
import torch

if TYPE_CHECKING:
    from .sources import _SamplerAccess

__all__ = [
    "BuiltinSampler",
    "DistributedSampler",
    "IterSampler",
    "PKSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "SubsetSampler",
    "WeightedRandomSampler",
]

INT64_MAX = 2**63 - 1
_SEED_HIGH = 2**62
_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def _is_int(value: Any) -> bool:
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_num_samples(num_samples: Any) -> Optional[int]:
    if num_samples is None:
        return None
    if not _is_int(num_samples):
        raise TypeError(
            f"num_samples must be integer but was: {num_samples}. Pass an int >= 0 (0 or None: every row)."
        )
    if not 0 <= int(num_samples) <= INT64_MAX:
        raise ValueError(
            f"num_samples exceeds the boundary between 0 and {INT64_MAX}(INT64_MAX)! Got {num_samples}; "
            f"pass an int >= 0 (0 or None: every row)."
        )
    return int(num_samples)


def _check_bool(value: Any, name: str, what: str = "a boolean value") -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be {what} but was: {value}. Pass True or False.")
    return bool(value)


def _cap(num_samples: Optional[int], rows: int) -> int:
    """MindSpore's rule: ``num_samples`` 0/None, or above the rows available, means all of them."""
    return rows if not num_samples or num_samples > rows else num_samples


def _seeded_permutation(seed: int, epoch: int, rows: int) -> torch.Tensor:
    """Epoch ``epoch``'s permutation of a sharded order (the one ``num_shards``/``shard_id`` use)."""
    generator = torch.Generator()
    generator.manual_seed((seed * _GOLDEN + epoch) & _MASK64)
    return torch.randperm(rows, generator=generator)


class BuiltinSampler:
    """Base class of the samplers (``mindspore.dataset.BuiltinSampler``); not meant to be subclassed by users.

    Subclass :class:`Sampler` for a sampler of your own.

    Args:
        num_samples: Most ids one pass yields; None (or 0) for all.
    """

    #: Whether the sampler draws from the epoch's random generator.
    _random = False

    def __init__(self, num_samples: Optional[int] = None) -> None:
        self.child_sampler: Optional[BuiltinSampler] = None
        self.num_samples = num_samples

    # -- MindSpore's API ----------------------------------------------------------

    def add_child(self, sampler: Optional["BuiltinSampler"]) -> None:
        """Make ``sampler`` this sampler's child: it samples the dataset, this one samples its output.

        Raises:
            RuntimeError: This sampler already has a child (MindSpore's words);
                build the chain once, or use a new parent.
            TypeError: ``sampler`` is not a sampler.
        """
        if self.child_sampler is not None:
            raise RuntimeError(
                "Cannot add child sampler, this sampler already has a child. Create a new parent sampler to "
                "chain a different child."
            )
        if sampler is not None and not isinstance(sampler, BuiltinSampler):
            raise TypeError(
                f"add_child: {sampler!r} is not a sampler; pass one of mindspore.dataset's samplers "
                f"(e.g. SequentialSampler()) or a subclass of Sampler."
            )
        self.child_sampler = sampler

    def get_child(self) -> Optional["BuiltinSampler"]:
        """The child sampler, or None."""
        return self.child_sampler

    def get_num_samples(self) -> Optional[int]:
        """``num_samples``, combined with the child's as MindSpore does (the smaller of the two; None if neither)."""
        if self.child_sampler is not None:
            child = self.child_sampler.get_num_samples()
            if self.num_samples is not None:
                return self.num_samples if child is None else min(self.num_samples, child)
            return child
        return self.num_samples

    def is_shuffled(self) -> bool:
        """Whether the order is random."""
        raise NotImplementedError("Sampler must implement is_shuffled.")

    def is_sharded(self) -> bool:
        """Whether the sampler reads one shard of several: only a ``DistributedSampler`` does, or a chain with one."""
        return self._child_sharded()

    def _child_shuffled(self) -> bool:
        return self.child_sampler is not None and self.child_sampler.is_shuffled()

    def _child_sharded(self) -> bool:
        return self.child_sampler is not None and self.child_sampler.is_sharded()

    # -- what a source asks of the chain -----------------------------------------

    def _chain(self) -> Iterator["BuiltinSampler"]:
        node: Optional[BuiltinSampler] = self
        while node is not None:
            yield node
            node = node.child_sampler

    def _count(self, rows: int, access: "_SamplerAccess") -> int:
        """Ids one pass yields over ``rows`` dataset rows (``get_dataset_size``)."""
        if self.child_sampler is None:
            return self._own_count(rows, access, None)
        child_rows = self.child_sampler._count(rows, access)
        if isinstance(self, PKSampler):  # needs the labels of the child's rows: draw them
            return self._own_count(child_rows, access, self.child_sampler._ids(rows, access))
        return self._own_count(child_rows, access, None)

    def _ids(self, rows: int, access: "_SamplerAccess") -> torch.Tensor:
        """One pass's dataset row ids (int64)."""
        if self.child_sampler is None:
            return self._own_ids(rows, access, None)
        base = self.child_sampler._ids(rows, access)
        return base[self._own_ids(len(base), access, base)]

    def _own_count(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> int:
        raise NotImplementedError

    def _own_ids(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> torch.Tensor:
        """Positions in ``[0, rows)`` of this sampler's input (``base``: their dataset ids, None = identity)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        child = f", child={self.child_sampler!r}" if self.child_sampler is not None else ""
        return f"{type(self).__name__}(num_samples={self.num_samples}{child})"


class SequentialSampler(BuiltinSampler):
    """Rows in order from ``start_index`` (``mindspore.dataset.SequentialSampler``).

    Args:
        start_index: First row; None for 0.
        num_samples: Most rows per pass; None (or 0) for all from ``start_index``.

    Raises:
        TypeError: ``start_index`` or ``num_samples`` is not an int.
        ValueError: ``num_samples`` is negative.
        RuntimeError: ``start_index`` is negative (MindSpore raises it when
            the pipeline starts; here at once). Iterating raises RuntimeError
            when ``start_index`` is not below the number of rows.
    """

    def __init__(self, start_index: Optional[int] = None, num_samples: Optional[int] = None) -> None:
        if start_index is not None and not _is_int(start_index):
            raise TypeError(f"start_index must be integer but was: {start_index}. Pass an int >= 0, or None for 0.")
        if start_index is not None and start_index < 0:
            raise RuntimeError(
                f"SequentialSampler: start_index_ must be greater than or equal to 0, but got: {start_index}."
            )
        super().__init__(_check_num_samples(num_samples))
        self.start_index = None if start_index is None else int(start_index)

    def is_shuffled(self) -> bool:
        return self._child_shuffled()

    def _start(self) -> int:
        return self.start_index or 0

    def _own_count(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> int:
        return max(0, _cap(self.num_samples, rows - self._start()) if rows > self._start() else 0)

    def _own_ids(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> torch.Tensor:
        start = self._start()
        if start >= rows:
            raise RuntimeError(
                f"Invalid parameter, start_index must be less than num_rows, but got start_index: {start}, "
                f"num_rows: {rows}. Give SequentialSampler a start_index below {rows}."
            )
        return torch.arange(start, start + _cap(self.num_samples, rows - start))

    def __repr__(self) -> str:
        return f"SequentialSampler(start_index={self.start_index}, num_samples={self.num_samples})"


class RandomSampler(BuiltinSampler):
    """A random order each pass (``mindspore.dataset.RandomSampler``).

    Args:
        replacement: Draw each id independently (ids may repeat); default
            False: a permutation.
        num_samples: Ids per pass; None (or 0), or more than the rows, for as
            many as there are rows (with or without replacement).

    Raises:
        TypeError: ``replacement`` is not a bool or ``num_samples`` not an int.
        ValueError: ``num_samples`` is negative.
    """

    _random = True

    def __init__(self, replacement: bool = False, num_samples: Optional[int] = None) -> None:
        self.replacement = _check_bool(replacement, "replacement")
        super().__init__(_check_num_samples(num_samples))
        self.deterministic = False
        self.reshuffle_each_epoch = True

    def is_shuffled(self) -> bool:
        return True

    def _own_count(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> int:
        return _cap(self.num_samples, rows)

    def _own_ids(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> torch.Tensor:
        count = _cap(self.num_samples, rows)
        if self.replacement:
            return torch.randint(0, rows, (count,), generator=access.generator())
        order = torch.randperm(rows, generator=access.generator())
        return order if count == rows else order[:count]

    def __repr__(self) -> str:
        return f"RandomSampler(replacement={self.replacement}, num_samples={self.num_samples})"


class DistributedSampler(BuiltinSampler):
    """One shard of the rows, for data-parallel training (``mindspore.dataset.DistributedSampler``).

    Shard ``shard_id`` reads positions ``shard_id, shard_id + num_shards, ...``
    of the epoch's order (shuffled or not), wrapping around to the first
    positions so every shard reads ``ceil(rows / num_shards)`` ids, as
    MindSpore's (and torch's) ``DistributedSampler`` do; ``num_samples`` caps
    the ids per shard.

    Args:
        num_shards: Number of shards, a positive int.
        shard_id: This shard, in ``[0, num_shards)``.
        shuffle: Shuffle the order each epoch (the same permutation on every
            shard built under the same seed); default True.
        num_samples: Most ids of this shard per pass; None (or 0) for all.
        offset: MindSpore's shard offset for ``ConcatDataset`` (shard ids start
            at ``offset``; shards are then not padded); -1 for none.

    Raises:
        TypeError: An argument has the wrong type.
        ValueError: ``num_samples`` is negative.
        RuntimeError: ``num_shards <= 0``, ``shard_id`` outside
            ``[0, num_shards)`` or ``offset > num_shards`` (MindSpore's words;
            it raises them when the pipeline starts, here at once).
    """

    def __init__(
        self,
        num_shards: int,
        shard_id: int,
        shuffle: bool = True,
        num_samples: Optional[int] = None,
        offset: int = -1,
    ) -> None:
        if not _is_int(num_shards):
            raise TypeError(f"num_shards must be integer but was: {num_shards}. Pass the number of shards, e.g. 2.")
        if not _is_int(shard_id):
            raise TypeError(f"shard_id must be integer but was: {shard_id}. Pass this shard's index, e.g. 0.")
        shuffle = _check_bool(shuffle, "shuffle")
        num_samples = _check_num_samples(num_samples)
        if not _is_int(offset):
            raise TypeError(f"offset must be integer but was: {offset}. Pass -1 for no offset.")
        if num_shards <= 0:
            raise RuntimeError(f"DistributedSampler: num_shards must be greater than 0, but got: {num_shards}.")
        if not 0 <= shard_id < num_shards:
            raise RuntimeError(
                f"DistributedSampler: shard_id must be in range [0, {num_shards}), but got: {shard_id}."
            )
        if offset > num_shards:
            raise RuntimeError(
                f"DistributedSampler: offset must be no more than num_shards({num_shards}), but got: {offset}."
            )
        self.num_shards = int(num_shards)
        self.shard_id = int(shard_id)
        self.shuffle = shuffle
        self.offset = int(offset)
        # The permutation's seed, drawn now as a source with num_shards draws it (see the module docstring).
        self.seed = int(torch.randint(0, _SEED_HIGH, (1,)).item()) if shuffle else 0
        super().__init__(num_samples)

    def is_shuffled(self) -> bool:
        return self.shuffle if self.child_sampler is None else self._child_shuffled()

    def is_sharded(self) -> bool:
        return self.num_shards > 1 if self.child_sampler is None else self._child_sharded()

    def set_offset(self, offset: int) -> "DistributedSampler":
        """Set ``offset`` (MindSpore's hook for ``ConcatDataset``); returns the sampler."""
        self.offset = offset
        return self

    def _positions(self, rows: int) -> torch.Tensor:
        shards, shard = self.num_shards, self.shard_id
        if self.offset == -1:
            size = -(-rows // shards)
            start = shard
        else:
            total = rows + self.offset
            size = total // shards + (shard < total % shards) - (shard < self.offset)
            start = shard - self.offset
            if start < 0:
                start += shards
        size = min(size, _cap(self.num_samples, rows))
        if size <= 0:
            return torch.zeros(0, dtype=torch.int64)
        return (torch.arange(size) * shards + start) % rows

    def _own_count(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> int:
        return len(self._positions(rows)) if rows else 0

    def _own_ids(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> torch.Tensor:
        if rows == 0:
            return torch.zeros(0, dtype=torch.int64)
        positions = self._positions(rows)
        if not self.shuffle:
            return positions
        return _seeded_permutation(self.seed, access.epoch, rows)[positions]

    def __repr__(self) -> str:
        return (
            f"DistributedSampler(num_shards={self.num_shards}, shard_id={self.shard_id}, shuffle={self.shuffle}, "
            f"num_samples={self.num_samples}, offset={self.offset})"
        )


class PKSampler(BuiltinSampler):
    """``num_val`` rows of every class per pass (``mindspore.dataset.PKSampler``).

    Classes come in sorted order (or a random order with ``shuffle``); each
    of a class's ``num_val`` rows is drawn at random from the class's rows
    (a class with fewer rows repeats some). The class of a row is its
    ``label`` column (MindSpore reads ``class_column`` only for MindRecord
    files; here a source with a column named ``class_column`` uses it).
    ``MnistDataset`` supports it; ``GeneratorDataset`` and
    ``NumpySlicesDataset`` do not, as in MindSpore.

    Args:
        num_val: Rows per class, a positive int.
        num_class: Not supported (NotImplementedError), as in MindSpore.
        shuffle: Random class order each pass; default False (sorted).
        class_column: Name of the class column; default ``'label'``.
        num_samples: Most ids per pass; None (or 0) for all.

    Raises:
        TypeError: An argument has the wrong type.
        NotImplementedError: ``num_class`` is given.
        ValueError: ``num_samples`` is negative.
        RuntimeError: ``num_val <= 0`` (raised at once here).
    """

    _random = True

    def __init__(
        self,
        num_val: int,
        num_class: Optional[int] = None,
        shuffle: bool = False,
        class_column: str = "label",
        num_samples: Optional[int] = None,
    ) -> None:
        if not _is_int(num_val):
            raise TypeError(f"num_val must be integer but was: {num_val}. Pass the rows to read per class, e.g. 3.")
        if num_class is not None:
            raise NotImplementedError("Not supported to specify num_class for PKSampler; leave it None (every class).")
        shuffle = _check_bool(shuffle, "shuffle")
        if not isinstance(class_column, str):
            raise TypeError(f"class_column must be a str value but was: {class_column}. Pass a column name.")
        num_samples = _check_num_samples(num_samples)
        if num_val <= 0:
            raise RuntimeError(f"PKSampler: num_val must be greater than 0, but got: {num_val}.")
        self.num_val = int(num_val)
        self.shuffle = shuffle
        self.class_column = class_column
        super().__init__(num_samples)

    def is_shuffled(self) -> bool:
        return self.shuffle if self.child_sampler is None else self._child_shuffled()

    def _classes(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        labels = access.labels(self.class_column, base)
        if len(labels) != rows:  # pragma: no cover - the access gives one label per input row
            raise AssertionError("one label per row expected")
        return torch.unique(labels, sorted=True, return_inverse=True)

    def _own_count(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> int:
        if rows == 0:
            return 0
        classes, _ = self._classes(rows, access, base)
        return _cap(self.num_samples, self.num_val * len(classes))

    def _own_ids(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> torch.Tensor:
        if rows == 0:
            return torch.zeros(0, dtype=torch.int64)
        classes, inverse = self._classes(rows, access, base)
        generator = access.generator()
        order = torch.randperm(len(classes), generator=generator) if self.shuffle else torch.arange(len(classes))
        count = _cap(self.num_samples, self.num_val * len(classes))
        picked = []
        for k in order.tolist()[: -(-count // self.num_val)]:
            members = torch.nonzero(inverse == k).flatten()
            picked.append(members[torch.randint(0, len(members), (self.num_val,), generator=generator)])
        return torch.cat(picked)[:count]

    def __repr__(self) -> str:
        return (
            f"PKSampler(num_val={self.num_val}, shuffle={self.shuffle}, class_column={self.class_column!r}, "
            f"num_samples={self.num_samples})"
        )


def _index_list(indices: Any, num_samples: Optional[int]) -> list[Any]:
    if not isinstance(indices, str) and _iterable(indices):
        if num_samples is None:
            return list(indices)
        if isinstance(indices, list):
            return indices[:num_samples]
        return [i for i, _ in zip(indices, range(num_samples))]
    if _is_int(indices):
        return [indices]
    raise TypeError(
        f"Unsupported sampler object of type ({type(indices)}). Pass a list (or array) of row ids, or a sampler."
    )


def _iterable(value: Any) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


class SubsetSampler(BuiltinSampler):
    """The given row ids, in the given order (``mindspore.dataset.SubsetSampler``).

    Args:
        indices: An iterable of ids (not a str), or one int.
        num_samples: Keep only the first ``num_samples`` ids; None (or 0) for all.

    Raises:
        TypeError: ``indices`` is not iterable, an id is not an int, or
            ``num_samples`` is not an int.
        ValueError: ``num_samples`` is negative.

    Iterating raises RuntimeError when an id is outside the rows (MindSpore's
    ``Sample ID (...) is out of bound``).
    """

    def __init__(self, indices: Union[Iterable[int], int], num_samples: Optional[int] = None) -> None:
        num_samples = _check_num_samples(num_samples)
        ids = _index_list(indices, num_samples or None)
        for i, item in enumerate(ids):
            if not _is_int(item):
                raise TypeError(
                    f"SubsetSampler: Type of indices element must be int, but got list[{i}]: {item}, "
                    f"type: {type(item)}. Give row ids as ints."
                )
        self.indices = ids
        self._tensor = torch.tensor([int(i) for i in ids], dtype=torch.int64)
        super().__init__(num_samples)

    def is_shuffled(self) -> bool:
        return False

    def get_num_samples(self) -> Optional[int]:
        num_samples = super().get_num_samples()
        return len(self.indices) if num_samples is None else min(len(self.indices), num_samples)

    def _own_count(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> int:
        return _cap(self.num_samples, len(self.indices))

    def _checked(self, rows: int) -> torch.Tensor:
        ids = self._tensor[: _cap(self.num_samples, len(self.indices))]
        bad = (ids < 0) | (ids >= rows)
        if bool(bad.any()):
            first = int(ids[bad][0])
            raise RuntimeError(
                f"Sample ID ({first}) is out of bound, expected range [0, {rows - 1}]. Give {type(self).__name__} "
                f"only ids of rows that exist."
            )
        return ids

    def _own_ids(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> torch.Tensor:
        return self._checked(rows)

    def __repr__(self) -> str:
        shown = self.indices if len(self.indices) <= 8 else [*self.indices[:8], "..."]
        return f"{type(self).__name__}({shown}, num_samples={self.num_samples})"


class SubsetRandomSampler(SubsetSampler):
    """The given row ids, in a new random order each pass (``mindspore.dataset.SubsetRandomSampler``).

    Args and errors as :class:`SubsetSampler`.
    """

    _random = True

    def is_shuffled(self) -> bool:
        return True

    def _own_ids(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> torch.Tensor:
        ids = self._checked(rows)
        return ids[torch.randperm(len(ids), generator=access.generator())]


class WeightedRandomSampler(BuiltinSampler):
    """Ids ``0 .. len(weights) - 1`` drawn with the given weights (``mindspore.dataset.WeightedRandomSampler``).

    Args:
        weights: One weight per row id (need not sum to 1; zero never drawn).
        num_samples: Ids per pass; None (or 0), or more than the rows, for as
            many as there are rows.
        replacement: Draw each id independently (default True); False: no id twice.

    Raises:
        TypeError: A weight is not a number, or a wrong argument type.
        ValueError: ``num_samples`` is negative.
        RuntimeError: ``weights`` is empty, has a negative weight or only
            zeros (raised at once here). Iterating raises RuntimeError when
            there are more weights than rows, or, without replacement, fewer
            weights (non-zero ones) than ids to draw.
    """

    _random = True

    def __init__(self, weights: Union[Sequence[float], float], num_samples: Optional[int] = None, replacement: bool = True) -> None:
        if not isinstance(weights, list):
            weights = list(weights) if isinstance(weights, (tuple, np.ndarray)) else [weights]
        for i, w in enumerate(weights):
            if not isinstance(w, (numbers.Number, np.number)) or isinstance(w, (bool, np.bool_)):
                raise TypeError(
                    f"type of weights element must be number, but got w[{i}]: {w}, type: {type(w)}. "
                    f"Give one number per row."
                )
        num_samples = _check_num_samples(num_samples)
        replacement = _check_bool(replacement, "replacement")
        if not weights:
            raise RuntimeError("WeightedRandomSampler: weights vector must not be empty; give one weight per row.")
        for i, w in enumerate(weights):
            if w < 0:
                raise RuntimeError(
                    f"WeightedRandomSampler: weights vector must not contain negative numbers, got: "
                    f"weights[{i}] = {w}."
                )
        if all(w == 0 for w in weights):
            raise RuntimeError("WeightedRandomSampler: elements of weights vector must not be all zero.")
        self.weights = weights
        self.replacement = replacement
        self._tensor = torch.tensor([float(w) for w in weights], dtype=torch.float64)
        super().__init__(num_samples)

    def is_shuffled(self) -> bool:
        return True

    def _own_count(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> int:
        return _cap(self.num_samples, rows)

    def _own_ids(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> torch.Tensor:
        count = _cap(self.num_samples, rows)
        if len(self.weights) > rows:
            raise RuntimeError(
                f"Invalid parameter, size of sample weights must be less than or equal to num of data, otherwise "
                f"might cause generated id out of bound or other errors, but got weight size: {len(self.weights)}, "
                f"num of data: {rows}. Give at most one weight per row."
            )
        nonzero = int((self._tensor > 0).sum())
        if not self.replacement and nonzero < count:
            raise RuntimeError(
                f"Invalid parameter, without replacement, weight size must be greater than or equal to num_samples, "
                f"but got weight size: {nonzero} (non-zero), num_samples: {count}. Lower num_samples, or pass "
                f"replacement=True."
            )
        return torch.multinomial(self._tensor, count, self.replacement, generator=access.generator())

    def __repr__(self) -> str:
        return (
            f"WeightedRandomSampler({len(self.weights)} weights, num_samples={self.num_samples}, "
            f"replacement={self.replacement})"
        )


class Sampler(BuiltinSampler):
    """Base class of a sampler written in Python (``mindspore.dataset.Sampler``).

    Override ``__iter__`` to yield row ids; ``self.dataset_size`` (the rows
    available) and ``self.num_samples`` are set before the first pass. One
    pass takes at most ``num_samples`` ids from ``iter(self)``; ``reset()``
    (override it if needed) runs before every later pass, including each
    ``repeat``.

    Args:
        num_samples: Most ids per pass; None for as many as the dataset has rows.
    """

    def __init__(self, num_samples: Optional[int] = None) -> None:
        super().__init__(_check_num_samples(num_samples))
        self.dataset_size = 0
        self._passes = 0

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError("Subclass Sampler and implement __iter__, yielding row ids.")

    def reset(self) -> None:
        """Called before every pass after the first; override to change state between passes."""

    def add_child(self, sampler: Optional[BuiltinSampler]) -> None:
        self.child_sampler = sampler

    def is_shuffled(self) -> bool:
        return self._child_shuffled()

    def _handshake(self, dataset_size: int, num_samples: int) -> None:
        self.dataset_size = dataset_size
        self.num_samples = num_samples

    def _take(self, rows: int) -> torch.Tensor:
        self._handshake(rows, _cap(self.num_samples, rows))
        ids: list[Any] = []
        for _, i in zip(range(self.num_samples or 0), iter(self)):
            ids.append(i)
        array = np.array(ids)
        if array.dtype == object or (len(ids) and array.dtype.kind not in "iu"):
            raise RuntimeError(
                f"Fetched indices can not be converted to a valid ndarray: {type(self).__name__}.__iter__ must "
                f"yield ints."
            )
        return torch.as_tensor(array.astype(np.int64).reshape(-1))

    def _own_count(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> int:
        return len(self._take(rows))

    def _own_ids(self, rows: int, access: "_SamplerAccess", base: Optional[torch.Tensor]) -> torch.Tensor:
        if self._passes:
            self.reset()
        self._passes += 1
        return self._take(rows)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_samples={self.num_samples})"


class IterSampler(Sampler):
    """A sampler over any iterable of row ids (``mindspore.dataset.IterSampler``); what ``sampler=<iterable>`` makes.

    Each pass iterates ``sampler`` afresh (a one-pass iterator gives one pass).

    Args:
        sampler: An iterable of row ids.
        num_samples: Most ids per pass; None for as many as the iterable
            gives (counted now, as MindSpore does).
    """

    def __init__(self, sampler: Iterable[int], num_samples: Optional[int] = None) -> None:
        if iter(sampler) is sampler:  # a one-pass iterator: keep its ids (MindSpore would lose them to the count)
            sampler = list(sampler)
        if num_samples is None:
            num_samples = len(list(sampler))
        super().__init__(num_samples)
        self.sampler = sampler

    def __iter__(self) -> Iterator[int]:
        return iter(self.sampler)

    def _take(self, rows: int) -> torch.Tensor:
        ids: list[Any] = []
        for _, i in zip(range(self.num_samples if self.num_samples is not None else rows), iter(self)):
            ids.append(i)
        for i, item in enumerate(ids):
            if not _is_int(item):
                raise TypeError(
                    f"Type of indices element must be int, but got list[{i}]: {item}, type: {type(item)}. "
                    f"The sampler must yield row ids as ints."
                )
        self.dataset_size = rows
        return torch.tensor([int(i) for i in ids], dtype=torch.int64)


def to_sampler(sampler: Any, num_samples: Optional[int]) -> BuiltinSampler:
    """What a source makes of its ``sampler=`` argument (MindSpore's ``select_sampler`` for a given sampler).

    A sampler is kept; a list, tuple or numpy array becomes a
    :class:`SubsetSampler` (with ``num_samples``); an int ``i`` becomes
    ``SubsetSampler([i])``; any other iterable (not a str) an :class:`IterSampler`.

    Raises:
        TypeError: ``sampler`` is none of these (e.g. a str), or an id is not an int.
    """
    if isinstance(sampler, BuiltinSampler):
        return sampler
    if isinstance(sampler, (list, tuple, np.ndarray)):
        return SubsetSampler(sampler, num_samples)
    if isinstance(sampler, str):
        raise TypeError(
            f"Unsupported sampler object of type ({type(sampler)}). Pass a sampler (e.g. SequentialSampler()) "
            f"or a list of row ids."
        )
    if _is_int(sampler):
        return SubsetSampler([sampler], num_samples)
    if _iterable(sampler):
        return IterSampler(sampler, num_samples)
    raise TypeError(
        f"Unsupported sampler object of type ({type(sampler)}). Pass a sampler (e.g. SequentialSampler()) "
        f"or an iterable of row ids."
    )
