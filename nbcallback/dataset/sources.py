"""Dataset sources: ``SourceDataset`` (sampling, shuffling, sharding), ``GeneratorDataset``, ``NumpySlicesDataset``.

``MnistDataset`` (in :mod:`nbcallback.dataset.mnist`) is a source too. A
source is either a *column source* (it loads every row at once, as numpy
arrays: MNIST, ``NumpySlicesDataset``; the fast path then works on whole
columns) or a *row source* (``GeneratorDataset``: one call into the user's
object per row, every epoch).
"""
from __future__ import annotations

import builtins
import copy
import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence, Union

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d

from ._validate import INT32_MAX, check_bool, check_columns, check_int, type_error
from ._fast_path import UNCHECKED
from ._tensor import numpy_to_tensor
from .datasets import Dataset
from .iterators import EpochContext, Row, preserved_rng
from .samplers import (
    BuiltinSampler,
    DistributedSampler,
    PKSampler,
    SequentialSampler,
    SubsetSampler,
    _seeded_permutation,
    to_sampler,
)
from .transforms import to_torch_dtype

__all__ = ["GeneratorDataset", "NumpySlicesDataset", "SourceDataset"]


# --------------------------------------------------------------------------- distributed


def _process_group_size() -> int:
    """World size of an initialised ``torch.distributed`` process group, else 1."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return 1


# How many sharded, shuffled datasets this process has started to iterate, per process group's store.
_AGREEMENTS_STARTED: dict[int, int] = {}


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _agree_shard_seed(seed: int, description: str) -> int:
    """Rank 0's shuffle ``seed`` for a sharded dataset starting its first epoch, once every rank agrees.

    The sharded, shuffled datasets each rank iterates are paired in the order
    they start: this rank's ``n``-th is paired with every other rank's
    ``n``-th, whose ``description`` (kind, rows, columns, sharding) must be the
    same. It goes through the process group's key-value store, not a
    collective, so it cannot be confused with another collective, and it waits
    for the other ranks at most the process group's timeout.

    Raises:
        RuntimeError: Another rank's dataset differs, or another rank did not
            start its ``n``-th such dataset within the timeout. The message
            names both datasets and the fix.
    """
    store = distributed_c10d._get_default_store()  # the store init_process_group set up (torch has no public getter)
    number = _AGREEMENTS_STARTED.get(id(store), 0) + 1
    _AGREEMENTS_STARTED[id(store)] = number
    rank, world = dist.get_rank(), dist.get_world_size()
    keys = [f"nbcallback/dataset/shard_seed/{number}/rank{r}" for r in range(world)]
    store.set(keys[rank], json.dumps({"seed": seed, "dataset": description}))
    rule = (
        "under torch.distributed every rank must iterate the same sharded, shuffled datasets in the same order, "
        "so that they agree on each epoch's order and shard it without overlap"
    )
    fix = (
        "Build and iterate the same datasets on every rank; give a dataset that one rank reads alone (e.g. for "
        "a quick look) num_shards=1, shard_id=0: it then reads all rows and needs no other rank."
    )
    try:
        store.wait(keys)
    except RuntimeError as exc:  # DistStoreError: the process group's timeout passed
        missing = [str(r) for r, key in enumerate(keys) if not store.check([key])]
        who = f"rank {missing[0]}" if len(missing) == 1 else f"ranks {', '.join(missing)}"
        raise RuntimeError(
            f"This rank (rank {rank}) started iterating its {_ordinal(number)} sharded, shuffled dataset, "
            f"{description}, but {who} did not start iterating a {_ordinal(number)} one within "
            f"{store.timeout.total_seconds():g} s (the process group's timeout): {rule}. {fix}"
        ) from exc
    entries = [json.loads(store.get(key)) for key in keys]
    unlike = [(r, entry["dataset"]) for r, entry in enumerate(entries) if entry["dataset"] != description]
    if unlike:
        others = "; ".join(f"rank {r}'s is {other}" for r, other in unlike)
        raise RuntimeError(
            f"The {_ordinal(number)} sharded, shuffled dataset this rank (rank {rank}) iterates is {description}, "
            f"but {others}: {rule}. {fix}"
        )
    return int(entries[0]["seed"])


_SAMPLER_FIX = (
    " A sampler decides which rows are read and in which order: pass sampler= alone, or drop it and use "
    "shuffle / num_samples / num_shards + shard_id."
)


@dataclass
class _Shards:
    """A source's sharding: ``count`` shards (None: not sharded), this one is ``index``.

    ``padded``: every shard gets ``ceil(rows / count)`` rows (under torch.distributed);
    ``seed``: the shuffle seed every shard derives its orders from, rank 0's once ``agreed``.
    """

    count: int | None
    index: int | None
    padded: bool
    seed: int
    agreed: bool


@dataclass(frozen=True)
class _Schema:
    """The columns a ``GeneratorDataset``'s rows must have: ``names``, and ``types`` (None: any) as given."""

    names: list[str]
    types: list[Any] | None


class _SamplerAccess:
    """What a sampler chain may ask of its source during one pass: the epoch's generator, the epoch, labels."""

    def __init__(self, source: "SourceDataset", ctx: EpochContext | None, epoch: int) -> None:
        self.source = source
        self.epoch = epoch
        self._ctx = ctx
        self._counting: torch.Generator | None = None

    def generator(self) -> torch.Generator:
        """The source's generator of this epoch (a private one while counting rows, leaving every RNG alone)."""
        if self._ctx is not None:
            return self._ctx.generator(self.source)
        if self._counting is None:
            self._counting = torch.Generator()
        return self._counting

    def labels(self, column: str, base: torch.Tensor | None) -> torch.Tensor:
        """Class labels (int64) of the dataset rows ``base`` (all rows when None), for :class:`PKSampler`."""
        labels = self.source._class_labels(column)
        return labels if base is None else labels[base]


class _DefaultOrder(BuiltinSampler):
    """A source's own order (``shuffle``, ``num_samples``, shards, a ``split``'s rows) as the child of an added sampler."""

    def __init__(self, source: "SourceDataset") -> None:
        super().__init__(None)
        self._source = source

    @property
    def _random(self) -> bool:  # type: ignore[override]
        return self._source._default_is_random()

    def is_shuffled(self) -> bool:
        return bool(self._source._shuffle)

    def is_sharded(self) -> bool:
        return (self._source._shards.count or 1) > 1

    def _own_count(self, rows: int, access: _SamplerAccess, base: torch.Tensor | None) -> int:
        return self._source._default_count()

    def _own_ids(self, rows: int, access: _SamplerAccess, base: torch.Tensor | None) -> torch.Tensor:
        return self._source._default_indices(access.generator, access.epoch)

    def __repr__(self) -> str:
        return f"<the order of {type(self._source).__name__}: shuffle={self._source._shuffle}>"


class SourceDataset(Dataset):
    """Base of datasets that read rows from storage: sampling, shuffling, sharding.

    Subclasses provide :meth:`_source_col_names`, :meth:`_source_rows` (cheap,
    e.g. from file headers) and either :meth:`_load_columns` (a column source:
    the decoded data, one numpy array per column, rows along axis 0, loaded
    once on first use and cached) or :meth:`_get_row` (a row source: one row
    by index, read every epoch).

    Args:
        num_samples: Cap on the rows per epoch (per shard when sharded); a
            positive int, or None for all rows. With shuffling, a new random
            subset is drawn each epoch.
        shuffle: Random order each epoch (default: True); False keeps file order.
        num_shards: Split the rows into this many disjoint shards (strided:
            shard ``k`` gets positions ``k, k + num_shards, ...`` of the epoch
            order, so shard sizes differ by at most one). Needs ``shard_id``.
        shard_id: Which shard this dataset reads, in ``[0, num_shards)``.
        sampler: A sampler (:mod:`nbcallback.dataset.samplers`), or row ids
            (a list/array: a ``SubsetSampler``; an int ``i``: ``[i]``; any
            other iterable is iterated each epoch), or None. It replaces
            ``shuffle``/sharding; giving both raises (see :meth:`_check_sampler_arguments`).

    Orders are drawn from a generator the epoch seeds from torch's global
    generator (see :class:`~nbcallback.dataset.iterators.EpochContext`), so
    ``torch.manual_seed`` or :func:`nbcallback.dataset.config.set_seed`
    makes them reproducible.

    Distributed training (a ``torch.distributed`` process group of 2+ ranks is
    initialised when the dataset is created):

    * Without ``num_shards``/``shard_id`` the dataset shards itself: ``num_shards``
      is the world size and ``shard_id`` the rank, so ``get_dataset_size()`` is
      per rank.
    * Shards are padded to the same size, ``ceil(rows / num_shards)``: the
      epoch order is extended by its first rows (as ``torch``'s
      ``DistributedSampler`` and MindSpore do), so every rank runs the same
      number of steps and DDP never waits on a rank that ran out of data. Up
      to ``num_shards - 1`` rows are seen twice per epoch; none when the rows
      divide evenly.
    * The shuffle seed is rank 0's, agreed when the dataset starts its first
      epoch, not when it is created (creating a dataset never waits for other
      ranks): the sharded, shuffled datasets the ranks iterate are paired in
      the order they start, and each pair must have the same kind, rows,
      columns and sharding, else iterating raises RuntimeError naming both;
      a rank whose partner does not start within the process group's timeout
      raises RuntimeError too. Epoch ``k``'s order comes from ``(seed, k)``
      (see :meth:`set_epoch`), identical on every rank.

    Without a process group (one process) explicit shards are strided and
    unpadded, as described above.

    Raises:
        TypeError: An argument has the wrong type (bools are not ints).
        ValueError: Out-of-range values, or only one of ``num_shards`` /
            ``shard_id`` given.
        RuntimeError: ``sampler`` with ``shuffle``, sharding or
            ``num_samples`` (MindSpore's built-in datasets, e.g. MNIST; the
            Python sources raise ValueError, as MindSpore's do).

    Iterating raises RuntimeError under ``torch.distributed`` when the ranks'
    sharded, shuffled datasets disagree (see above), and when a sampler gives
    a row id outside the rows.
    """

    #: The error MindSpore raises for ``sampler`` with ``shuffle``/shards/``num_samples``
    #: (RuntimeError for its built-in datasets, ValueError for the Python sources).
    _SAMPLER_CONFLICT: type[Exception] = RuntimeError
    #: Whether :class:`PKSampler` may sample this source (MindSpore: not GeneratorDataset).
    _PK_SUPPORTED = True

    def __init__(
        self,
        num_samples: int | None = None,
        shuffle: bool | None = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        sampler: Any = None,
    ) -> None:
        super().__init__()
        if sampler is not None:
            self._check_sampler_arguments(sampler, num_samples, shuffle, num_shards, shard_id)
        if num_samples is not None:
            num_samples = check_int(num_samples, "num_samples", 1)
        if shuffle is not None:
            shuffle = check_bool(shuffle, "shuffle")
        if num_shards is None and shard_id is None and sampler is None:
            num_shards, shard_id = self._default_shard()
        if num_shards is not None:
            num_shards = check_int(num_shards, "num_shards", 1)
            if shard_id is None:
                raise ValueError("num_shards is specified and currently requires shard_id as well.")
            shard_id = check_int(shard_id, "shard_id", 0, num_shards - 1)
        elif shard_id is not None:
            check_int(shard_id, "shard_id", 0)
            raise ValueError("shard_id is specified but num_shards is not.")
        chain: BuiltinSampler | None = None
        if sampler is not None:
            chain = to_sampler(sampler, num_samples)
            self._check_pk(chain, ValueError)
            num_samples = None  # a list/iterable sampler took it (MindSpore's SubsetSampler(ids, num_samples))
        self._num_samples = num_samples
        self._shuffle = (sampler is None) if shuffle is None else shuffle
        self._sampler: BuiltinSampler | None = chain
        self._sampler_seeds_agreed = False
        self._subset: torch.Tensor | None = None
        self._epochs_drawn = 0
        self._columns_cache: dict[str, Any] | None = None
        # All shards must agree on each epoch's permutation: derive it from a
        # seed drawn once from torch's global RNG (equal on ranks seeded alike),
        # and under torch.distributed take rank 0's, agreed at the first epoch
        # (_agree_shard_seed): nothing here talks to the other ranks.
        group = _process_group_size() if num_shards else 1
        self._shards = _Shards(
            num_shards,
            shard_id,
            padded=group > 1,
            seed=int(torch.randint(0, 2**62, (1,)).item()) if num_shards and self._shuffle else 0,
            agreed=not (group > 1 and self._shuffle),
        )

    def _check_sampler_arguments(
        self, sampler: Any, num_samples: Any, shuffle: Any, num_shards: Any, shard_id: Any
    ) -> None:
        """Refuse ``sampler`` together with ``shuffle``, sharding or ``num_samples``, with MindSpore's words.

        Built-in datasets (MNIST) raise RuntimeError for any of the three, as
        MindSpore's ``check_sampler_shuffle_shard_options``; the Python sources
        (``_SAMPLER_CONFLICT = ValueError``) raise MindSpore's "Conflicting
        arguments" ValueError for a sampler object, and accept ``num_samples``
        with a list/iterable of ids (it caps them).
        """
        error = self._SAMPLER_CONFLICT
        if error is ValueError and isinstance(sampler, BuiltinSampler):
            if any(arg is not None for arg in (num_shards, shard_id, shuffle, num_samples)):
                raise ValueError(
                    f"Conflicting arguments during sampler assignments. num_samples: {num_samples}, "
                    f"num_shards: {num_shards}, shard_id: {shard_id}, shuffle: {shuffle}.{_SAMPLER_FIX}"
                )
        if shuffle is not None:
            raise error(f"sampler and shuffle cannot be specified at the same time.{_SAMPLER_FIX}")
        if num_shards is not None or shard_id is not None:
            raise error(f"sampler and sharding cannot be specified at the same time.{_SAMPLER_FIX}")
        if num_samples is not None and error is RuntimeError:
            raise error(f"sampler and num_samples cannot be specified at the same time.{_SAMPLER_FIX}")

    def _check_pk(self, chain: BuiltinSampler, error: type[Exception]) -> None:
        if not self._PK_SUPPORTED and any(isinstance(s, PKSampler) for s in chain._chain()):
            raise error(
                f"{type(self).__name__} doesn't support PKSampler. Group rows by class yourself (e.g. a "
                f"SubsetRandomSampler over each class's ids), or use MnistDataset."
            )

    # -- samplers ---------------------------------------------------------------------

    def _install_sampler(self, new_sampler: Any, replace: bool) -> None:
        """``use_sampler`` (``replace``: instead of the top sampler) / ``add_sampler`` (on top of the current order)."""
        if new_sampler is None:
            raise TypeError("Input sampler can not be None. Pass a sampler, e.g. ds.SequentialSampler().")
        if not isinstance(new_sampler, BuiltinSampler):
            raise TypeError(
                f"Input sampler is not an instance of a sampler: got {type(new_sampler).__name__}. Pass one of "
                f"mindspore.dataset's samplers (e.g. ds.DistributedSampler(2, 0)); a list of row ids goes to "
                f"the source's sampler= argument."
            )
        self._check_pk(new_sampler, RuntimeError)
        if replace:
            below = self._sampler.child_sampler if self._sampler is not None else None
            if self._sampler is None and self._subset is not None:
                below = _DefaultOrder(self)  # a split's rows stay, as MindSpore's split samplers do
        else:
            below = self._sampler if self._sampler is not None else _DefaultOrder(self)
        if below is not None:
            new_sampler.add_child(below)
        self._sampler = new_sampler
        self._sampler_seeds_agreed = False
        self._size = None
        self._plan = UNCHECKED

    def _sampler_ids(self, ctx: EpochContext | None, epoch: int) -> torch.Tensor:
        assert self._sampler is not None
        if ctx is not None and not self._sampler_seeds_agreed:
            self._agree_sampler_seeds()
        rows = self._source_rows()
        ids = self._sampler._ids(rows, _SamplerAccess(self, ctx, epoch))
        if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= rows):
            bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
            raise RuntimeError(
                f"Sample ID ({bad}) is out of bound, expected range [0, {rows - 1}]: the sampler "
                f"{self._sampler!r} of {type(self).__name__} gave it. A sampler must give ids of rows that exist."
            )
        return ids

    def _agree_sampler_seeds(self) -> None:
        """Under ``torch.distributed``, take rank 0's seed for every shuffled DistributedSampler (as for ``num_shards``)."""
        assert self._sampler is not None
        self._sampler_seeds_agreed = True
        if _process_group_size() <= 1:
            return
        for k, sampler in enumerate(self._sampler._chain()):
            if isinstance(sampler, DistributedSampler) and sampler.shuffle:
                sampler.seed = _agree_shard_seed(sampler.seed, f"{self._description()}, sampler {k}: {sampler!r}")

    def is_shuffled(self) -> bool:
        """Whether the rows come in a random order (MindSpore's ``MappableDataset.is_shuffled``)."""
        if self._sampler is None:
            return bool(self._shuffle)
        return self._sampler.is_shuffled()

    def is_sharded(self) -> bool:
        """Whether this dataset reads one shard of several (``num_shards`` > 1, or a sharding sampler)."""
        if self._sampler is None:
            return (self._shards.count or 1) > 1
        return self._sampler.is_sharded()

    def _class_labels(self, column: str) -> torch.Tensor:
        """The class of every row (int64), for :class:`PKSampler`: ``column`` if the source has it, else ``label``."""
        names = self._source_col_names()
        name = column if column in names else "label"
        if name not in names or not self.is_column_source():
            raise RuntimeError(
                f"PKSampler: {type(self).__name__} has no class column {column!r} (columns {names}); name the "
                f"column holding the class with PKSampler(class_column=...)."
            )
        values = self.columns()[name]
        array = values.numpy() if isinstance(values, torch.Tensor) else np.asarray(values)
        labels = numpy_to_tensor(np.asarray(array).astype(np.int64).reshape(len(array)))
        assert labels is not None  # int64 always converts
        return labels

    def _default_shard(self) -> tuple[int | None, int | None]:
        """``(num_shards, shard_id)`` to use when neither was given.

        ``(world_size, rank)`` when a ``torch.distributed`` process group of 2+
        ranks is initialised, else ``(None, None)`` (no sharding).
        """
        if _process_group_size() > 1:
            return dist.get_world_size(), dist.get_rank()
        return None, None

    def set_epoch(self, epoch: int) -> None:
        """Make the next epoch the ``epoch``-th (0-based) of the shuffle sequence (see :meth:`Dataset.set_epoch`)."""
        self._epochs_drawn = check_int(epoch, "epoch", 0)

    # -- what subclasses provide -------------------------------------------------

    def _source_col_names(self) -> list[str]:
        raise NotImplementedError

    def _source_rows(self) -> int:
        raise NotImplementedError

    def _load_columns(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _get_row(self, index: int) -> Row:
        raise NotImplementedError

    def is_mappable(self) -> bool:
        """Whether rows can be read by index (then ``split`` and samplers select rows directly)."""
        return True

    def is_column_source(self) -> bool:
        """Whether the rows come from :meth:`_load_columns` (whole columns in memory)."""
        return type(self)._load_columns is not SourceDataset._load_columns

    def columns(self) -> dict[str, Any]:
        """The loaded columns (torch tensors; numpy where torch has no dtype, e.g. strings), cached."""
        if self._columns_cache is None:
            loaded: dict[str, Any] = {}
            for name, array in self._load_columns().items():
                tensor = numpy_to_tensor(array) if isinstance(array, np.ndarray) else None
                loaded[name] = array if tensor is None else tensor  # strings, or a list of rows of different shapes
            self._columns_cache = loaded
        return self._columns_cache

    # -- Dataset hooks ------------------------------------------------------------

    def _col_names(self) -> list[str]:
        return self._source_col_names()

    def _needs_generator(self) -> bool:
        if self._sampler is None:
            return self._default_is_random()
        return any(s._random for s in self._sampler._chain())

    def _default_is_random(self) -> bool:
        return bool(self._shuffle) and self._shards.count is None

    def _base_rows(self) -> int:
        return self._source_rows() if self._subset is None else len(self._subset)

    def _count_rows(self) -> int:
        if self._sampler is not None:
            return self._sampler._count(self._source_rows(), _SamplerAccess(self, None, self._epochs_drawn))
        return self._default_count()

    def _default_count(self) -> int:
        rows = self._base_rows()
        if self._shards.count is not None:
            assert self._shards.index is not None
            if self._shards.padded:
                rows = -(-rows // self._shards.count)
            else:
                rows = len(range(self._shards.index, rows, self._shards.count))
        if self._num_samples is not None:
            rows = min(rows, self._num_samples)
        return rows

    def _epoch_indices(self, ctx: EpochContext) -> torch.Tensor:
        """Row indices of the next pass, after sampling, shuffling, sharding and ``num_samples``."""
        epoch = self._epochs_drawn
        self._epochs_drawn += 1
        if self._sampler is not None:
            return self._sampler_ids(ctx, epoch).contiguous()
        return self._default_indices(lambda: ctx.generator(self), epoch)

    def _default_indices(self, generator: Callable[[], torch.Generator], epoch: int) -> torch.Tensor:
        """The source's own order for pass ``epoch`` (no sampler): ``shuffle``, shards, ``num_samples``, a split's rows."""
        rows = self._base_rows()
        if not self._shuffle:
            order = torch.arange(rows)
        elif self._shards.count is None:
            order = torch.randperm(rows, generator=generator())
        else:
            if not self._shards.agreed:
                self._shards.seed = _agree_shard_seed(self._shards.seed, self._description())
                self._shards.agreed = True
            order = _seeded_permutation(self._shards.seed, epoch, rows)  # as a shuffled DistributedSampler's
        if self._subset is not None:
            order = self._subset[order]
        if self._shards.count is not None:
            if self._shards.padded and rows % self._shards.count:
                padded = -(-rows // self._shards.count) * self._shards.count
                order = order.repeat(-(-padded // rows))[:padded]  # wrap around to the epoch's first rows
            order = order[self._shards.index :: self._shards.count]
        if self._num_samples is not None:
            order = order[: self._num_samples]
        return order.contiguous()

    def _description(self) -> str:
        """What every rank's copy of a sharded dataset must share, in words (see :func:`_agree_shard_seed`)."""
        return (
            f"{type(self).__name__} of {self._base_rows()} rows, columns {self._source_col_names()}, "
            f"num_shards={self._shards.count}, num_samples={self._num_samples}"
            + (f", sampler {self._sampler!r}" if self._sampler is not None else "")
        )

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        indices = self._epoch_indices(ctx).tolist()
        if not self.is_column_source():
            get = self._get_row
            return (get(i) for i in indices)
        columns = list(self.columns().values())
        return ([c[i].clone() if isinstance(c, torch.Tensor) else np.array(c[i]) for c in columns] for i in indices)

    def _takes_sampler(self) -> bool:
        return self.is_mappable()

    def _check_splittable(self) -> None:
        if self._shards.count is not None or self.is_sharded():
            raise RuntimeError("Dataset should not be sharded before split.")

    def _split_rows(self, counts: list[int], randomize: bool) -> "tuple[Dataset, ...] | None":
        """Parts reading a random (``randomize``) or consecutive subset of this source's rows, in its order."""
        if not self.is_mappable():
            return None
        order = torch.randperm(sum(counts)) if randomize else torch.arange(sum(counts))
        starts = [sum(counts[:i]) for i in range(len(counts))]
        parts = [order[s : s + c] for s, c in builtins.zip(starts, counts)]
        if randomize:
            parts = [part.sort().values for part in parts]  # a random subset, in the source's order
        if self._subset is not None:
            parts = [self._subset[part] for part in parts]
        return tuple(self._with_subset(part.clone()) for part in parts)

    def _with_subset(self, subset: torch.Tensor) -> "SourceDataset":
        """A copy reading only the rows ``subset`` (for ``split``); loaded columns are shared."""
        part = copy.copy(self)
        part._shards = dataclasses.replace(self._shards)
        if self._sampler is not None:  # MindSpore's structure: SequentialSampler() over the part's positions
            positions = SubsetSampler(subset.tolist())
            positions.add_child(self._sampler)
            top = SequentialSampler()
            top.add_child(positions)
            part._sampler = top
            part._sampler_seeds_agreed = False
        else:
            part._subset = subset
        part._plan = UNCHECKED
        part._size = None
        part._epochs_run = 0
        part._epochs_drawn = 0
        return part


# --------------------------------------------------------------------------- GeneratorDataset

_ROW_TYPES = "int, float, str, bytes, numpy.ndarray, Tensor"


def _convert_item(value: Any, position: int | None) -> Any:
    """One column value of a generator's row, as MindSpore's ``_convert_row`` converts it."""
    if isinstance(value, np.number):  # a numpy scalar (e.g. a label read from an array)
        return np.asarray(value)
    if type(value) is np.ndarray:
        if value.dtype == object:
            raise TypeError(_object_message(position))
        return value
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, dict):
        if position is None:
            raise TypeError(f"Input data is expected to be {_ROW_TYPES} or list/tuple of them, but got dict.")
        raise TypeError(f"The {position + 1}th item of input data is expected to be {_ROW_TYPES}, but got dict.")
    if isinstance(value, bytes):
        return np.frombuffer(value, dtype=np.uint8)
    array = np.asarray(value)
    if array.dtype == object:
        raise TypeError(_object_message(position))
    return array


def _object_message(position: int | None) -> str:
    what = "the input" if position is None else f"{position + 1}th item of the input"
    return f"Data type of {what} or its converted Numpy array is expected to be int or float or str, but got object."


def _convert_row(row: Any) -> Row:
    if isinstance(row, (tuple, list)):
        return [_convert_item(v, i) for i, v in enumerate(row)]
    return [_convert_item(row, None)]


def _is_iterable(source: Any) -> bool:
    try:
        iter(source)
    except TypeError:
        return False
    return True


class GeneratorDataset(SourceDataset):
    """Rows from Python: a generator function, an iterable or a random-access object.

    ``mindspore.dataset.GeneratorDataset``. The kind of ``source`` is found as
    MindSpore does:

    * **random-access** (has ``__getitem__``; ``__len__`` required): row ``i``
      is ``source[i]``; shuffled by default, with ``num_samples``, ``sampler``
      and sharding (and, under ``torch.distributed``, sharded by rank as
      :class:`SourceDataset` describes);
    * **iterable** (``iter(source)`` works): a fresh ``iter(source)`` each
      epoch, in its own order (``shuffle`` is ignored, as in MindSpore). A
      one-pass iterator (a generator object ``gen()``) gives one epoch; when
      ``get_dataset_size`` (or ``len``) counts it first, the rows it read are
      kept and served as that epoch (instead of being lost to the count);
      ``output_shapes``/``output_types`` before that read its first row,
      which the epoch then lacks: pass a generator function to be safe;
    * **callable** (e.g. a generator function): ``source()`` each epoch.

    A row is a tuple/list (one column per item) or a single value (one
    column); Python ints become int64, floats float64, bytes a uint8 array.

    Args:
        source: The rows' origin, as above.
        column_names: Name(s) of the columns; required (MindSpore's ``schema``
            is not supported).
        column_types: Accepted as a list (MindSpore checks types in its C++
            engine; here each epoch's first row is checked against it).
        schema: Not supported (NotImplementedError); pass ``column_names``.
        num_samples: Cap on rows per epoch.
        num_parallel_workers: Accepted and ignored: rows are read in the
            calling thread.
        shuffle: Random order (random-access sources only); default True.
        sampler: A sampler (not :class:`~nbcallback.dataset.samplers.PKSampler`)
            or an iterable of row ids (random-access sources only; see
            :class:`SourceDataset`).
        num_shards: Number of shards (random-access sources only).
        shard_id: This dataset's shard.
        python_multiprocessing: Accepted and ignored.
        max_rowsize: Accepted and ignored.

    Raises:
        TypeError: ``source`` is neither callable, iterable nor random-access,
            or an argument has the wrong type.
        ValueError: No ``column_names``; ``sampler``/``num_shards`` with a
            source that is not random-access; ``sampler`` with ``shuffle``
            or shards (a sampler object also with ``num_samples``: MindSpore's
            "Conflicting arguments during sampler assignments"); a
            ``PKSampler``; only one of ``num_shards``/``shard_id``.
        RuntimeError: A random-access source without ``__len__``.
    """

    _SAMPLER_CONFLICT = ValueError  # MindSpore's Python sources raise ValueError
    _PK_SUPPORTED = False

    def __init__(
        self,
        source: Any,
        column_names: Union[str, Sequence[str], None] = None,
        column_types: Sequence[Any] | None = None,
        schema: Any = None,
        num_samples: int | None = None,
        num_parallel_workers: int = 1,
        shuffle: bool | None = None,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        python_multiprocessing: bool = True,
        max_rowsize: Union[int, list[int], None] = 6,
    ) -> None:
        if isinstance(source, builtins.zip):
            source = list(source)  # a zip object can be iterated only once
        random_access = hasattr(source, "__getitem__")
        if not (random_access or callable(source) or _is_iterable(source)):
            raise TypeError(
                "Input `source` function of GeneratorDataset should be callable, iterable or random accessible, "
                "commonly it should implement one of the method like yield, __getitem__ or __next__(__iter__)."
            )
        if schema is not None:
            raise NotImplementedError("GeneratorDataset: 'schema' is not supported by nbcallback; pass column_names.")
        if column_names is None:
            raise ValueError("Neither columns_names nor schema are provided.")
        names = check_columns(column_names, "column_names")
        if column_types is not None and not isinstance(column_types, list):
            raise type_error("column_types", column_types, (list,))
        if num_samples is not None:
            check_int(num_samples, "num_samples", 1)
        check_int(num_parallel_workers, "num_parallel_workers", 1)
        if shuffle is not None:  # checked for every kind of source, though only random access uses it
            check_bool(shuffle, "shuffle")
        check_bool(python_multiprocessing, "python_multiprocessing")
        _check_max_rowsize(max_rowsize)
        if (num_shards is None) != (shard_id is None):
            raise ValueError("num_shards and shard_id need to be passed in together.")
        if num_shards is not None:
            check_int(num_shards, "num_shards", 1)
            check_int(shard_id, "shard_id", 0)
            if shard_id >= num_shards:  # type: ignore[operator]
                raise ValueError("shard_id should be less than num_shards.")
        if not random_access:
            if sampler is not None:
                raise ValueError("sampler is not supported if source does not have attribute '__getitem__'.")
            if num_shards is not None:
                raise ValueError("num_shards is not supported if source does not have attribute '__getitem__'.")
        if sampler is not None and not isinstance(sampler, BuiltinSampler) and not _is_iterable(sampler):
            raise TypeError(
                "sampler should be either iterable or from mindspore.dataset.samplers. Pass e.g. "
                "ds.SequentialSampler() or a list of row ids."
            )
        if random_access and not hasattr(source, "__len__"):
            raise RuntimeError("Attempt to construct a random access dataset, '__len__' method is required!")
        self.source = source
        self._schema = _Schema(names, column_types)
        self._counted_rows: list[Row] | None = None
        super().__init__(
            num_samples=num_samples,
            shuffle=shuffle if random_access else False,
            num_shards=num_shards,
            shard_id=shard_id,
            sampler=sampler,
        )

    @property
    def _random_access(self) -> bool:
        """A source with ``__getitem__`` (and ``__len__``): rows by index, so samplers, shuffling and shards work."""
        return hasattr(self.source, "__getitem__")

    def _default_shard(self) -> tuple[int | None, int | None]:
        return super()._default_shard() if self._random_access else (None, None)

    def is_mappable(self) -> bool:
        return self._random_access

    def _source_col_names(self) -> list[str]:
        return list(self._schema.names)

    def _source_rows(self) -> int:
        return len(self.source)

    def _get_row(self, index: int) -> Row:
        return self._checked(_convert_row(self.source[index]))

    def _checked(self, row: Row) -> Row:
        if len(row) != len(self._schema.names):
            raise RuntimeError(
                f"GeneratorDataset: the source produced a row of {len(row)} column(s) but column_names names "
                f"{len(self._schema.names)}: {self._schema.names}. A tuple/list row gives one column per item; "
                f"return a tuple with one value per column."
            )
        return row

    def _count_rows(self) -> int:
        if self._random_access:
            return super()._count_rows()
        if hasattr(self.source, "__len__"):
            rows = len(self.source)
            return rows if self._num_samples is None else min(rows, self._num_samples)
        if _is_iterable(self.source) and iter(self.source) is self.source:
            # A one-pass iterator (a generator object): counting reads the only pass there is,
            # so its rows are kept and served as the first epoch.
            with preserved_rng():
                self._counted_rows = list(self._rows(EpochContext(self)))
            return len(self._counted_rows)
        return Dataset._count_rows(self)  # run once and count, as MindSpore does

    def _random_rows(self, indices: list[int]) -> Iterator[Row]:
        source, width, convert = self.source, len(self._schema.names), _convert_item
        for i in indices:
            row = source[i]
            if type(row) is tuple or type(row) is list:
                values = [v if type(v) is np.ndarray and v.dtype.kind != "O" else convert(v, k) for k, v in enumerate(row)]
            else:
                values = [convert(row, None)]
            if len(values) != width:
                self._checked(values)
            yield values

    def _iterable_rows(self) -> Iterator[Row]:
        """One pass of a callable or iterable source (or the rows its count kept)."""
        if self._counted_rows is not None:
            rows, self._counted_rows = self._counted_rows, None
            yield from rows
            return
        stream = self.source() if callable(self.source) and not _is_iterable(self.source) else iter(self.source)
        rows = (self._checked(_convert_row(r)) for r in stream)
        if self._num_samples is not None:
            rows = (r for r, _ in builtins.zip(rows, range(self._num_samples)))
        yield from rows

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        if self._random_access:
            rows = self._random_rows(self._epoch_indices(ctx).tolist())
        else:
            rows = self._iterable_rows()
        if self._schema.types is None:
            return rows
        return self._typed(rows)

    def _typed(self, rows: Iterator[Row]) -> Iterator[Row]:
        first = True
        for row in rows:
            if first:
                first = False
                for i, (value, wanted) in enumerate(builtins.zip(row, self._schema.types or [])):
                    if wanted is None:
                        continue
                    tensor = value if isinstance(value, torch.Tensor) else numpy_to_tensor(np.asarray(value)[None])
                    got = np.asarray(value).dtype if tensor is None else tensor.dtype  # str/bytes stay numpy
                    if got != to_torch_dtype(wanted, "column_types"):
                        raise RuntimeError(
                            f"GeneratorDataset: column {self._schema.names[i]!r} has dtype {got} but column_types "
                            f"says {wanted}."
                        )
            yield row

    def __repr__(self) -> str:
        return f"GeneratorDataset({type(self.source).__name__}, column_names={self._schema.names})"


def _check_max_rowsize(value: Any) -> None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value == -1):
        return
    if isinstance(value, list):
        if len(value) != 2:
            raise TypeError("max_rowsize should be a single integer or a list[in_rowsize, out_rowsize] of length 2.")
        for item in value:
            check_int(item, "max_rowsize", 1)
        return
    check_int(value, "max_rowsize", 1, INT32_MAX)


# --------------------------------------------------------------------------- NumpySlicesDataset


def _as_column(value: Any) -> Union[np.ndarray, list[np.ndarray]]:
    """One column: a numpy array, or a list of per-row arrays when the rows differ in shape."""
    if hasattr(value, "values") and not isinstance(value, (np.ndarray, list, tuple)):
        value = value.values  # a pandas Series
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    try:
        array = np.asarray(value)
    except ValueError:  # rows of different shapes
        array = None
    if array is None or (array.dtype == object and isinstance(value, (list, tuple))):
        return [np.asarray(row) for row in value]
    return array


class NumpySlicesDataset(SourceDataset):
    """Rows sliced from in-memory data along its first axis (``mindspore.dataset.NumpySlicesDataset``).

    ``data`` may be:

    * a list or a numpy array: one column (``[[1, 2], [3, 4]]`` is one column
      of two rows ``[1, 2]`` and ``[3, 4]``);
    * a tuple: one column per item;
    * a dict: one column per key, named by the keys (a pandas ``dict(df)``
      works too).

    Columns are named ``column_0``, ``column_1``, ... unless ``column_names``
    (or the dict's keys) name them. Rows are shuffled by default, as in
    MindSpore. The data is held as columns, so built-in ``map`` ops,
    ``shuffle``, ``batch`` etc. run on the whole-column fast path.

    Args:
        data: The data, as above.
        column_names: Name(s) for the columns.
        num_samples: Cap on rows per epoch.
        num_parallel_workers: Accepted and ignored.
        shuffle: Random order each epoch; default True.
        sampler: A sampler (not :class:`~nbcallback.dataset.samplers.PKSampler`),
            row ids, or None (see :class:`SourceDataset`). With ``shuffle``
            or shards it raises ValueError, as in MindSpore.
        num_shards: Number of shards (see :class:`SourceDataset`).
        shard_id: This dataset's shard.

    Raises:
        TypeError: ``data`` is not a list, tuple, dict or numpy array.
        ValueError: Empty data, columns of different lengths, or a wrong
            number of ``column_names``.
    """

    _SAMPLER_CONFLICT = ValueError  # MindSpore's Python sources raise ValueError
    _PK_SUPPORTED = False

    def __init__(
        self,
        data: Union[list[Any], tuple[Any, ...], dict[str, Any], np.ndarray],
        column_names: Union[str, Sequence[str], None] = None,
        num_samples: int | None = None,
        num_parallel_workers: int = 1,
        shuffle: bool | None = None,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
    ) -> None:
        if not isinstance(data, (list, tuple, dict, np.ndarray)):
            raise type_error("data", data, (list, tuple, dict, np.ndarray))
        if len(data) == 0:
            raise ValueError("Argument data cannot be empty")
        names = None if column_names is None else check_columns(column_names, "column_names")
        if isinstance(data, dict):
            for key, value in data.items():
                if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or getattr(value, "ndim", 1) == 0:
                    raise ValueError(
                        f"NumpySlicesDataset: the value of column {key!r} is {type(value).__name__}, which has "
                        f"no first axis to slice along; give each column a list or array of rows."
                    )
            arrays = [_as_column(list(v) if not hasattr(v, "__array__") else v) for v in data.values()]
            default = [str(k) for k in data]
        elif isinstance(data, tuple):
            if not isinstance(data[0], (list, np.ndarray)):
                raise type_error("data[0]", data[0], (list, np.ndarray))
            arrays = [_as_column(v) for v in data]
            default = [f"column_{i}" for i in range(len(arrays))]
        else:
            arrays = [_as_column(data)]
            default = ["column_0"]
        if names is not None and len(names) != len(arrays):
            suffix = " as data is list." if isinstance(data, (list, np.ndarray)) else "."
            raise ValueError(f"Num of input column names is {len(names)}, but required is {len(arrays)}{suffix}")
        for array in arrays:
            if isinstance(array, np.ndarray) and array.ndim == 0:
                raise ValueError("NumpySlicesDataset: every column must have a first axis to slice along.")
        if len({len(a) for a in arrays}) != 1:
            raise ValueError("Data length in each column is not equal.")
        check_int(num_parallel_workers, "num_parallel_workers", 1)
        self._names = names if names is not None else default
        self._arrays = arrays
        super().__init__(num_samples=num_samples, shuffle=shuffle, num_shards=num_shards, shard_id=shard_id, sampler=sampler)

    def _source_col_names(self) -> list[str]:
        return list(self._names)

    def _source_rows(self) -> int:
        return len(self._arrays[0])

    def _load_columns(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, array in builtins.zip(self._names, self._arrays):
            if isinstance(array, list):  # rows of different shapes: served row by row
                out[name] = array
                continue
            if not array.dtype.isnative:
                array = array.astype(array.dtype.newbyteorder("="))
            if array.dtype.kind in "iufcb" and (not array.flags.c_contiguous or not array.flags.writeable):
                array = np.ascontiguousarray(array).copy()
            out[name] = array
        return out

    def __repr__(self) -> str:
        return f"NumpySlicesDataset(columns={self._names}, rows={self._source_rows()})"

