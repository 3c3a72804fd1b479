"""Dataset pipelines: sources, ``map``, ``batch`` and epoch iterators.

The API follows ``mindspore.dataset`` (each op returns a *new* dataset and the
original is left unchanged), but the engine is built for PyTorch on a CPU:

* **Built-in ops run once, on whole columns.** ``map`` with
  :class:`~nbcallback.dataset.transforms.TensorOperation` ops (Rescale,
  Normalize, HWC2CHW, TypeCast, ...) transforms the full ``(N, ...)`` column in
  a few vectorised passes the first time the pipeline is iterated, and caches
  the result: those ops are deterministic, so every epoch would compute the
  same values anyway.
* **Python callables run per sample, every epoch.** Any other callable given
  to ``map`` (a lambda, a random augmentation) is applied to each row at
  iteration time, receiving numpy arrays like in MindSpore, so random
  augmentations are re-drawn every epoch. Built-in ops placed *after* such a
  callable on the same column also run per sample.
* **Batches are index gathers.** Each epoch draws one permutation and every
  batch is ``torch.index_select(column, 0, indices)`` on the cached
  contiguous tensors: as cheap as slicing pre-processed tensors by hand.

Shuffling draws from torch's global RNG (``torch.randperm``), so
``torch.manual_seed`` makes epochs reproducible; when the dataset is sharded,
the order comes from a generator seeded by ``(seed, epoch)`` so that every
shard sees the same permutation. Under ``torch.distributed`` a source shards
itself by rank (see :class:`SourceDataset`).
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence, Union

import numpy as np
import torch

from ._validate import check_bool, check_columns, check_int, type_error
from .transforms import TensorOperation

__all__ = ["Dataset", "SourceDataset", "DatasetIterator"]

Operation = Callable[..., Any]
Row = list[Any]

# ``map``/``batch`` keyword arguments of MindSpore that only tune its worker
# pools: accepted and ignored here (everything runs in the calling thread).
_IGNORED_MAP_KWARGS = frozenset({"python_multiprocessing", "max_rowsize"})
_UNSUPPORTED_MAP_KWARGS = frozenset({"cache", "callbacks", "offload"})
_IGNORED_BATCH_KWARGS = frozenset({"python_multiprocessing", "max_rowsize"})
_UNSUPPORTED_BATCH_KWARGS = frozenset({"per_batch_map", "input_columns", "output_columns", "pad_info"})
# index_select has no kernels for these; plain indexing does.
_NO_INDEX_SELECT = frozenset({torch.uint16, torch.uint32, torch.uint64})
_MASK64 = (1 << 64) - 1


# --------------------------------------------------------------------------- stages


@dataclass(frozen=True)
class _MapStage:
    operations: tuple[Operation, ...]
    input_columns: tuple[str, ...]
    output_columns: tuple[str, ...]

    def run(self, args: Sequence[Any]) -> tuple[Any, ...]:
        """Apply the ops in order to one row's input values."""
        values = tuple(args)
        for op in self.operations:
            if not isinstance(op, TensorOperation):
                values = tuple(_to_numpy(v) for v in values)  # Python callables see numpy, as in MindSpore
            result = op(*values)
            values = result if isinstance(result, tuple) else (result,)
        if len(values) != len(self.output_columns):
            raise RuntimeError(
                f"map: the operations on {list(self.input_columns)} returned {len(values)} value(s) "
                f"but output_columns names {len(self.output_columns)}: {list(self.output_columns)}."
            )
        return values


@dataclass(frozen=True)
class _BatchStage:
    batch_size: int
    drop_remainder: bool

    def count(self, rows: int) -> int:
        """Number of batches made from ``rows`` rows."""
        return rows // self.batch_size if self.drop_remainder else -(-rows // self.batch_size)


def _layout(names: Sequence[str], inputs: Sequence[str], outputs: Sequence[str]) -> list[str]:
    """Column order after a map: the outputs take the place of the inputs."""
    first = min(names.index(c) for c in inputs)
    after = [n for n in names[first:] if n not in inputs]
    clash = [o for o in outputs if o in names[:first] or o in after]
    if clash:
        raise ValueError(
            f"output_columns {clash} already exist in the dataset (columns {list(names)}); "
            f"choose new names or include them in input_columns."
        )
    return list(names[:first]) + list(outputs) + after


# --------------------------------------------------------------------------- values


def _to_numpy(value: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _to_torch(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value
    array = np.asarray(value)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    elif not array.flags.writeable or any(stride < 0 for stride in array.strides):
        array = np.array(array, copy=True, order="C")  # e.g. np.flip views, read-only buffers
    try:
        return torch.from_numpy(array)
    except TypeError:
        return array  # no tensor equivalent (e.g. strings): left as numpy


def _stack(values: Sequence[Any], column: str) -> Any:
    if all(isinstance(v, torch.Tensor) for v in values):
        shapes = {tuple(v.shape) for v in values}
        if len(shapes) == 1:
            return torch.stack(list(values))
    else:
        arrays = [_to_numpy(v) for v in values]
        shapes = {a.shape for a in arrays}
        if len(shapes) == 1:
            return np.stack(arrays)
    raise RuntimeError(
        f"batch: the rows of column {column!r} have different shapes {sorted(shapes)[:4]}; "
        f"every row of a batch must have the same shape."
    )


def _gatherer(column: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    if column.dtype in _NO_INDEX_SELECT:
        return column.__getitem__
    return functools.partial(torch.index_select, column, 0)


# --------------------------------------------------------------------------- distributed


def _process_group_size() -> int:
    """World size of an initialised ``torch.distributed`` process group, else 1 (imported lazily)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return 1


def _broadcast_seed(seed: int) -> int:
    """Rank 0's ``seed``, on every rank."""
    import torch.distributed as dist

    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    value = torch.tensor([seed], dtype=torch.int64, device=device)
    dist.broadcast(value, src=0)
    return int(value.item())


# --------------------------------------------------------------------------- plan


@dataclass
class _Plan:
    """What iterating a pipeline needs, built once and cached on the dataset iterated.

    ``columns`` are full-length tensors after every column-level op; ``lazy``
    holds the maps that must run per row; ``post`` the stages after the first
    batch, which run per batch.
    """

    source: "SourceDataset"
    columns: dict[str, torch.Tensor]
    owned: set[str]
    names: list[str]
    lazy: list[_MapStage] = field(default_factory=list)
    lazy_touched: set[str] = field(default_factory=set)
    lazy_outputs: set[str] = field(default_factory=set)
    row_names: list[str] = field(default_factory=list)
    batch: _BatchStage | None = None
    post: list[tuple[Union[_MapStage, _BatchStage], list[str], list[str]]] = field(default_factory=list)

    def fork(self) -> "_Plan":
        """A copy that can be extended without touching this plan or its tensors."""
        return _Plan(
            self.source,
            dict(self.columns),
            set(),
            list(self.names),
            list(self.lazy),
            set(self.lazy_touched),
            set(self.lazy_outputs),
            list(self.row_names),
            self.batch,
            list(self.post),
        )

    def add_map(self, stage: _MapStage, names_after: list[str]) -> None:
        if self.batch is not None:
            self.post.append((stage, list(self.names), names_after))
            self.names = names_after
            return
        ops = stage.operations
        name = stage.input_columns[0]
        # Column-level work must not change what an earlier per-row map reads.
        untouched = not self.lazy_touched.intersection((name, stage.output_columns[0]))
        if len(stage.input_columns) == 1 and untouched:
            column, owned = self.columns[name], name in self.owned
            done = 0
            while done < len(ops) and isinstance(ops[done], TensorOperation):
                try:
                    column, owned = ops[done]._apply_column(column, owned)
                except (RuntimeError, TypeError, ValueError) as exc:
                    raise type(exc)(f"{exc} (map over column {name!r})") from exc
                done += 1
            if done:
                del self.columns[name]
                self.owned.discard(name)
                target = stage.output_columns[0] if done == len(ops) else name
                self.columns[target] = column
                if owned:
                    self.owned.add(target)
                if done == len(ops):
                    self.names = names_after
                    return
                stage = _MapStage(ops[done:], stage.input_columns, stage.output_columns)
        self.lazy.append(stage)
        self.lazy_touched.update(stage.input_columns, stage.output_columns)
        self.lazy_outputs.update(stage.output_columns)
        self.names = names_after

    def add_batch(self, stage: _BatchStage) -> None:
        if self.batch is None:
            self.batch = stage
            self.row_names = list(self.names)
        else:
            self.post.append((stage, list(self.names), list(self.names)))

    # ------------------------------------------------------------------ epochs

    def _lazy_row(self, i: int, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for stage in self.lazy:
            args = [values[n] if n in values else arrays[n][i].copy() for n in stage.input_columns]
            outs = stage.run(args)
            for n in stage.input_columns:
                values.pop(n, None)
            values.update(zip(stage.output_columns, outs))
        return values

    def _rows(self, indices: torch.Tensor, names: Sequence[str], do_copy: bool) -> Iterator[Row]:
        eager = {n: self.columns[n] for n in names if n not in self.lazy_outputs}
        if not self.lazy:
            cols = [eager[n] for n in names]
            for i in indices.tolist():
                yield [c[i].clone() if do_copy else c[i] for c in cols]
            return
        arrays = {n: t.numpy() for n, t in self.columns.items() if n in self.lazy_touched}
        for i in indices.tolist():
            lazy = self._lazy_row(i, arrays)
            yield [lazy[n] if n in lazy else (eager[n][i].clone() if do_copy else eager[n][i]) for n in names]

    def _batches(self, indices: torch.Tensor, names: Sequence[str]) -> Iterator[Row]:
        assert self.batch is not None
        chunks = list(indices.split(self.batch.batch_size))
        if chunks and self.batch.drop_remainder and len(chunks[-1]) < self.batch.batch_size:
            chunks.pop()
        gathers = {n: _gatherer(self.columns[n]) for n in names if n not in self.lazy_outputs}
        if not self.lazy:
            fns = [gathers[n] for n in names]
            return (_gather_all(fns, idx) for idx in chunks)
        return self._lazy_batches(chunks, names, gathers)

    def _lazy_batches(
        self, chunks: list[torch.Tensor], names: Sequence[str], gathers: dict[str, Callable[[torch.Tensor], torch.Tensor]]
    ) -> Iterator[Row]:
        arrays = {n: t.numpy() for n, t in self.columns.items() if n in self.lazy_touched}
        lazy_names = [n for n in names if n in self.lazy_outputs]
        for idx in chunks:
            rows = [self._lazy_row(i, arrays) for i in idx.tolist()]
            stacked = {n: _to_torch(_stack([r[n] for r in rows], n)) for n in lazy_names}
            yield [stacked[n] if n in stacked else gathers[n](idx) for n in names]

    def epoch(self, columns: Sequence[str], output_numpy: bool, do_copy: bool, as_dict: bool) -> Iterator[Any]:
        """Start one epoch now (drawing its order) and return an iterator over its elements."""
        indices = self.source._epoch_indices()
        fast = self.batch is not None and not self.lazy and not self.post
        if fast:
            assert self.batch is not None
            chunks = list(indices.split(self.batch.batch_size))
            if chunks and self.batch.drop_remainder and len(chunks[-1]) < self.batch.batch_size:
                chunks.pop()
            fns = [_gatherer(self.columns[n]) for n in columns]
            return _fast_epoch(fns, chunks, list(columns), output_numpy, as_dict)
        if self.batch is None:
            stream: Iterator[Row] = self._rows(indices, self.row_names or self.names, do_copy)
        else:
            stream = self._batches(indices, self.row_names)
        for stage, before, after in self.post:
            if isinstance(stage, _MapStage):
                stream = _post_map(stream, stage, before, after)
            else:
                stream = _post_batch(stream, stage, before)
        select = [self.names.index(c) for c in columns]
        return _finish(stream, select, list(columns), output_numpy, as_dict)


def _gather_all(fns: list[Callable[[torch.Tensor], torch.Tensor]], idx: torch.Tensor) -> Row:
    return [f(idx) for f in fns]


def _fast_epoch(
    fns: list[Callable[[torch.Tensor], torch.Tensor]],
    chunks: list[torch.Tensor],
    names: list[str],
    output_numpy: bool,
    as_dict: bool,
) -> Iterator[Any]:
    # The hot loop of training: keep it to one list comprehension per batch.
    if as_dict:
        for idx in chunks:
            yield {n: (f(idx).numpy() if output_numpy else f(idx)) for n, f in zip(names, fns)}
    elif output_numpy:
        for idx in chunks:
            yield [f(idx).numpy() for f in fns]
    else:
        for idx in chunks:
            yield [f(idx) for f in fns]


def _post_map(stream: Iterator[Row], stage: _MapStage, before: list[str], after: list[str]) -> Iterator[Row]:
    where = [before.index(n) for n in stage.input_columns]
    for element in stream:
        values = dict(zip(before, element))
        values.update(zip(stage.output_columns, stage.run([element[i] for i in where])))
        yield [values[n] for n in after]


def _post_batch(stream: Iterator[Row], stage: _BatchStage, names: list[str]) -> Iterator[Row]:
    pending: list[Row] = []
    for element in stream:
        pending.append(element)
        if len(pending) == stage.batch_size:
            yield [_to_torch(_stack([e[j] for e in pending], n)) for j, n in enumerate(names)]
            pending = []
    if pending and not stage.drop_remainder:
        yield [_to_torch(_stack([e[j] for e in pending], n)) for j, n in enumerate(names)]


def _finish(stream: Iterator[Row], select: list[int], names: list[str], output_numpy: bool, as_dict: bool) -> Iterator[Any]:
    convert = _to_numpy if output_numpy else _to_torch
    for element in stream:
        values = [convert(element[j]) for j in select]
        yield dict(zip(names, values)) if as_dict else values


# --------------------------------------------------------------------------- datasets


class Dataset:
    """Base class of every dataset and pipeline stage (``mindspore.dataset.Dataset``).

    Datasets are immutable descriptions: :meth:`map` and :meth:`batch` return
    new datasets. The work (decoding, column-level transforms) happens the
    first time a dataset is iterated and is cached on that dataset object, so
    iterate the same object every epoch.

    Iterating with ``for`` runs one epoch and yields lists with one element
    per column (torch tensors); every ``for`` loop starts a new epoch with a
    new shuffle order.
    """

    def __init__(self, parent: "Dataset | None" = None) -> None:
        self._parent = parent
        self._plan: _Plan | None = None
        self._size: int | None = None

    # -- hooks for subclasses --------------------------------------------------

    def _col_names(self) -> list[str]:
        raise NotImplementedError

    def _count_rows(self) -> int:
        raise NotImplementedError

    def _extend(self, plan: _Plan) -> None:
        raise NotImplementedError

    def _base_plan(self) -> _Plan:
        raise NotImplementedError

    def _get_plan(self, cache: bool) -> _Plan:
        if self._plan is not None:
            return self._plan
        chain: list[Dataset] = []
        node: Dataset = self
        while node._plan is None and node._parent is not None:
            chain.append(node)
            node = node._parent
        plan = node._plan.fork() if node._plan is not None else node._base_plan()
        for stage in reversed(chain):
            stage._extend(plan)
        if cache:
            self._plan = plan
        return plan

    # -- pipeline operations ---------------------------------------------------

    def map(
        self,
        operations: Union[Operation, Sequence[Operation]],
        input_columns: Union[str, Sequence[str], None] = None,
        output_columns: Union[str, Sequence[str], None] = None,
        column_order: Any = None,
        num_parallel_workers: int | None = None,
        **kwargs: Any,
    ) -> "Dataset":
        """Apply operations to columns; returns a new dataset.

        Built-in ops (:class:`~nbcallback.dataset.transforms.TensorOperation`)
        are applied once to the whole column and cached; any other callable is
        applied per row at iteration time, receives numpy arrays (one per input
        column) and may return one value or a tuple (one per output column). A
        random augmentation written as a Python callable is therefore re-drawn
        every epoch.

        Args:
            operations: One operation or a list of them, applied in order; each
                one's outputs are the next one's inputs.
            input_columns: Column name or list of names fed to the first
                operation. Default: the first column.
            output_columns: Names of the columns produced by the last
                operation; they take the place of the input columns. Default:
                the input column names (transform in place).
            column_order: Removed in MindSpore 2.x; passing it raises ValueError.
            num_parallel_workers: Accepted for compatibility and ignored (the
                vectorised column ops do not benefit from workers).
            **kwargs: ``python_multiprocessing`` and ``max_rowsize`` are
                accepted and ignored; ``cache``, ``callbacks`` and ``offload``
                raise NotImplementedError.

        Returns:
            The new dataset; ``self`` is unchanged.

        Raises:
            ValueError: ``column_order`` given, unknown input column, empty
                operation list, or output names clashing with other columns.
            TypeError: An operation is not callable or a column argument has
                the wrong type.
        """
        if column_order is not None:
            raise ValueError(
                "The parameter 'column_order' has been deleted from map() (as in MindSpore 2.x): "
                "output_columns now take the place of input_columns."
            )
        _check_kwargs("map", kwargs, _IGNORED_MAP_KWARGS, _UNSUPPORTED_MAP_KWARGS)
        if num_parallel_workers is not None:
            check_int(num_parallel_workers, "num_parallel_workers", 1)
        ops = list(operations) if isinstance(operations, (list, tuple)) else [operations]
        if not ops:
            raise ValueError("operations must hold at least one operation.")
        for i, op in enumerate(ops):
            if not callable(op):
                raise TypeError(f"operations[{i}] with value {op!r} is not callable.")
        names = self.get_col_names()
        inputs = [names[0]] if input_columns is None else check_columns(input_columns, "input_columns")
        for column in inputs:
            if column not in names:
                raise ValueError(f"Invalid column name {column!r} in input_columns: the dataset has columns {names}.")
        outputs = list(inputs) if output_columns is None else check_columns(output_columns, "output_columns")
        if isinstance(ops[0], TensorOperation) and len(inputs) != 1:
            raise ValueError(
                f"{type(ops[0]).__name__} transforms one column, but input_columns names {len(inputs)}: {inputs}."
            )
        if all(isinstance(op, TensorOperation) for op in ops) and len(outputs) != 1:
            raise ValueError(f"Built-in operations produce one column, but output_columns names {len(outputs)}: {outputs}.")
        names_after = _layout(names, inputs, outputs)
        return MapDataset(self, _MapStage(tuple(ops), tuple(inputs), tuple(outputs)), names_after)

    def batch(
        self,
        batch_size: int,
        drop_remainder: bool = False,
        num_parallel_workers: int | None = None,
        **kwargs: Any,
    ) -> "Dataset":
        """Group consecutive rows into batches; returns a new dataset.

        Every column of a batch is the rows stacked along a new first axis, so
        all rows of a column must share one shape.

        Args:
            batch_size: Rows per batch, a positive int.
            drop_remainder: Drop the last batch if it has fewer than
                ``batch_size`` rows (60,000 rows / 64 -> 937 batches instead of 938).
            num_parallel_workers: Accepted for compatibility and ignored.
            **kwargs: ``python_multiprocessing`` and ``max_rowsize`` are
                accepted and ignored; ``per_batch_map``, ``input_columns``,
                ``output_columns`` and ``pad_info`` raise NotImplementedError.

        Returns:
            The new dataset; ``self`` is unchanged.

        Raises:
            TypeError: ``batch_size`` is not an int or ``drop_remainder`` not a bool.
            ValueError: ``batch_size`` is not positive.
        """
        _check_kwargs("batch", kwargs, _IGNORED_BATCH_KWARGS, _UNSUPPORTED_BATCH_KWARGS)
        size = check_int(batch_size, "batch_size", 1)
        drop = check_bool(drop_remainder, "drop_remainder")
        if num_parallel_workers is not None:
            check_int(num_parallel_workers, "num_parallel_workers", 1)
        return BatchDataset(self, _BatchStage(size, drop))

    # -- introspection ---------------------------------------------------------

    def get_dataset_size(self) -> int:
        """Number of elements one epoch yields (batches after :meth:`batch`, else rows).

        Computed from file headers and arguments, without decoding any data;
        warns when the dataset is empty.
        """
        size = self._rows()
        if size == 0:
            warnings.warn(f"{type(self).__name__}: the dataset is empty (0 rows per epoch).", stacklevel=2)
        return size

    def _rows(self) -> int:
        if self._size is None:
            self._size = self._count_rows()
        return self._size

    def get_col_names(self) -> list[str]:
        """Names of the columns each element holds, in order."""
        return list(self._col_names())

    def get_batch_size(self) -> int:
        """Batch size of the last :meth:`batch` in the pipeline, 1 if there is none."""
        node: Dataset | None = self
        while node is not None:
            if isinstance(node, BatchDataset):
                return node._stage.batch_size
            node = node._parent
        return 1

    def __len__(self) -> int:
        """Same as :meth:`get_dataset_size`, without the empty-dataset warning."""
        return self._rows()

    # -- iteration -------------------------------------------------------------

    def _epoch(self, columns: Sequence[str] | None, output_numpy: bool, do_copy: bool, as_dict: bool) -> Iterator[Any]:
        plan = self._get_plan(cache=True)
        return plan.epoch(list(columns) if columns is not None else plan.names, output_numpy, do_copy, as_dict)

    def __iter__(self) -> Iterator[Row]:
        """One epoch of lists (one torch tensor per column); each call starts a new epoch."""
        return self._epoch(None, False, True, False)

    def create_tuple_iterator(
        self,
        columns: Union[str, Sequence[str], None] = None,
        num_epochs: int = -1,
        output_numpy: bool = False,
        do_copy: bool = True,
    ) -> "DatasetIterator":
        """Iterator over elements as lists, one value per column.

        Iterating the returned object (``for`` or ``next``) runs one epoch;
        iterating it again runs the next epoch, with a new shuffle order.

        Args:
            columns: Column name or names to return, in that order. Default: all.
            num_epochs: How many epochs the iterator may run; -1 for no limit.
            output_numpy: Return numpy arrays instead of torch tensors.
            do_copy: For unbatched rows, return copies rather than views of the
                cached columns (batches are always fresh tensors).

        Returns:
            The iterator.

        Raises:
            ValueError: Unknown column or ``num_epochs`` out of range.
            TypeError: Wrong argument types.
        """
        names = self.get_col_names()
        selected = None if columns is None else check_columns(columns, "columns")
        for column in selected or ():
            if column not in names:
                raise ValueError(f"Invalid column name {column!r} in columns: the dataset has columns {names}.")
        return DatasetIterator(self, selected, num_epochs, output_numpy, do_copy, as_dict=False)

    def create_dict_iterator(
        self, num_epochs: int = -1, output_numpy: bool = False, do_copy: bool = True
    ) -> "DatasetIterator":
        """Iterator over elements as dicts ``{column name: value}``.

        Args:
            num_epochs: How many epochs the iterator may run; -1 for no limit.
            output_numpy: Return numpy arrays instead of torch tensors.
            do_copy: For unbatched rows, return copies rather than views of the
                cached columns.

        Returns:
            The iterator (see :meth:`create_tuple_iterator` for epochs).
        """
        return DatasetIterator(self, None, num_epochs, output_numpy, do_copy, as_dict=True)

    def set_epoch(self, epoch: int) -> None:
        """Make the next epoch the ``epoch``-th (0-based) of the source's shuffle sequence.

        Sharded sources draw epoch ``k``'s order from ``(seed, k)``, the same on
        every shard; ``Model`` calls this at the start of every training epoch
        of a data-parallel run, so all ranks agree on the order even if one of
        them iterated the dataset an extra time. Forwarded to the source.
        """
        if self._parent is not None:
            self._parent.set_epoch(epoch)

    def reset(self) -> None:
        """Prepare for the next epoch (MindSpore calls this between epochs).

        Every ``for`` loop over a dataset already starts a fresh epoch and the
        cached transforms stay valid, so there is nothing to discard; this is
        kept so code written for MindSpore (or a trainer that calls it) works.
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}(columns={self.get_col_names()})"


def _check_kwargs(method: str, kwargs: dict[str, Any], ignored: frozenset[str], unsupported: frozenset[str]) -> None:
    for name in kwargs:
        if name in unsupported:
            raise NotImplementedError(f"{method}(): the argument {name!r} is not supported by nbcallback.")
        if name not in ignored:
            raise TypeError(f"{method}() got an unexpected keyword argument {name!r}")


class MapDataset(Dataset):
    """The result of :meth:`Dataset.map`."""

    def __init__(self, parent: Dataset, stage: _MapStage, names: list[str]) -> None:
        super().__init__(parent)
        self._stage = stage
        self._names = names

    def _col_names(self) -> list[str]:
        return self._names

    def _count_rows(self) -> int:
        assert self._parent is not None
        return self._parent._rows()

    def _extend(self, plan: _Plan) -> None:
        plan.add_map(self._stage, list(self._names))

    def __repr__(self) -> str:
        ops = ", ".join(repr(op) for op in self._stage.operations)
        return f"{self._parent!r}.map([{ops}], input_columns={list(self._stage.input_columns)})"


class BatchDataset(Dataset):
    """The result of :meth:`Dataset.batch`."""

    def __init__(self, parent: Dataset, stage: _BatchStage) -> None:
        super().__init__(parent)
        self._stage = stage

    def _col_names(self) -> list[str]:
        assert self._parent is not None
        return self._parent.get_col_names()

    def _count_rows(self) -> int:
        assert self._parent is not None
        return self._stage.count(self._parent._rows())

    def _extend(self, plan: _Plan) -> None:
        plan.add_batch(self._stage)

    def __repr__(self) -> str:
        return f"{self._parent!r}.batch({self._stage.batch_size}, drop_remainder={self._stage.drop_remainder})"


class SourceDataset(Dataset):
    """Base of datasets that read rows from storage: sampling, shuffling, sharding.

    Subclasses provide :meth:`_source_col_names`, :meth:`_source_rows` (cheap,
    e.g. from file headers) and :meth:`_load_columns` (the decoded data, one
    numpy array per column, rows along axis 0); the data is loaded once, on
    first use, and cached.

    Args:
        num_samples: Cap on the rows per epoch (per shard when sharded); a
            positive int, or None for all rows. With shuffling, a new random
            subset is drawn each epoch.
        shuffle: Random order each epoch (default: True); False keeps file order.
        num_shards: Split the rows into this many disjoint shards (strided:
            shard ``k`` gets positions ``k, k + num_shards, ...`` of the epoch
            order, so shard sizes differ by at most one). Needs ``shard_id``.
        shard_id: Which shard this dataset reads, in ``[0, num_shards)``.

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
    * The shuffle seed is drawn on rank 0 and broadcast (a collective: every
      rank creates its datasets in the same order); epoch ``k``'s order comes
      from ``(seed, k)`` (see :meth:`set_epoch`), identical on every rank.

    Without a process group (one process) explicit shards are strided and
    unpadded, as described above.

    Raises:
        TypeError: An argument has the wrong type (bools are not ints).
        ValueError: Out-of-range values, or only one of ``num_shards`` /
            ``shard_id`` given.
    """

    def __init__(
        self,
        num_samples: int | None = None,
        shuffle: bool | None = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
    ) -> None:
        super().__init__(None)
        if num_samples is not None:
            num_samples = check_int(num_samples, "num_samples", 1)
        if shuffle is not None:
            shuffle = check_bool(shuffle, "shuffle")
        if num_shards is None and shard_id is None:
            num_shards, shard_id = self._default_shard()
        if num_shards is not None:
            num_shards = check_int(num_shards, "num_shards", 1)
            if shard_id is None:
                raise ValueError("num_shards is specified and currently requires shard_id as well.")
            shard_id = check_int(shard_id, "shard_id", 0, num_shards - 1)
        elif shard_id is not None:
            check_int(shard_id, "shard_id", 0)
            raise ValueError("shard_id is specified but num_shards is not.")
        self._num_samples = num_samples
        self._shuffle = True if shuffle is None else shuffle
        self._num_shards = num_shards
        self._shard_id = shard_id
        self._epochs_drawn = 0
        # All shards must agree on each epoch's permutation: derive it from a
        # seed drawn once from torch's global RNG (equal on ranks seeded alike),
        # and under torch.distributed take rank 0's.
        group = _process_group_size() if num_shards else 1
        self._pad_shards = group > 1
        self._shard_seed = int(torch.randint(0, 2**62, (1,)).item()) if num_shards and self._shuffle else 0
        if group > 1 and self._shuffle:
            self._shard_seed = _broadcast_seed(self._shard_seed)
        self._tensors: dict[str, torch.Tensor] | None = None

    def _default_shard(self) -> tuple[int | None, int | None]:
        """``(num_shards, shard_id)`` to use when neither was given.

        ``(world_size, rank)`` when a ``torch.distributed`` process group of 2+
        ranks is initialised, else ``(None, None)`` (no sharding).
        """
        if _process_group_size() > 1:
            import torch.distributed as dist

            return dist.get_world_size(), dist.get_rank()
        return None, None

    def set_epoch(self, epoch: int) -> None:
        """Make the next epoch the ``epoch``-th (0-based) of the shuffle sequence (see :meth:`Dataset.set_epoch`)."""
        self._epochs_drawn = check_int(epoch, "epoch", 0)

    def _source_col_names(self) -> list[str]:
        raise NotImplementedError

    def _source_rows(self) -> int:
        raise NotImplementedError

    def _load_columns(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _col_names(self) -> list[str]:
        return self._source_col_names()

    def _count_rows(self) -> int:
        rows = self._source_rows()
        if self._num_shards is not None:
            assert self._shard_id is not None
            if self._pad_shards:
                rows = -(-rows // self._num_shards)
            else:
                rows = len(range(self._shard_id, rows, self._num_shards))
        if self._num_samples is not None:
            rows = min(rows, self._num_samples)
        return rows

    def _base_plan(self) -> _Plan:
        if self._tensors is None:
            self._tensors = {name: torch.from_numpy(a) for name, a in self._load_columns().items()}
        return _Plan(self, dict(self._tensors), set(), self._source_col_names())

    def _epoch_indices(self) -> torch.Tensor:
        """Row indices of the next epoch, after shuffling, sharding and ``num_samples``."""
        rows = self._source_rows()
        epoch = self._epochs_drawn
        self._epochs_drawn += 1
        if not self._shuffle:
            order = torch.arange(rows)
        elif self._num_shards is None:
            order = torch.randperm(rows)
        else:
            generator = torch.Generator()
            generator.manual_seed((self._shard_seed * 0x9E3779B97F4A7C15 + epoch) & _MASK64)
            order = torch.randperm(rows, generator=generator)
        if self._num_shards is not None:
            if self._pad_shards and rows % self._num_shards:
                padded = -(-rows // self._num_shards) * self._num_shards
                order = order.repeat(-(-padded // rows))[:padded]  # wrap around to the epoch's first rows
            order = order[self._shard_id :: self._num_shards]
        if self._num_samples is not None:
            order = order[: self._num_samples]
        return order.contiguous()


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
        dataset: Dataset,
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

    def _start(self) -> Iterator[Any]:
        if self._num_epochs != -1 and self._epochs_started >= self._num_epochs:
            raise RuntimeError(
                f"This iterator has already run its num_epochs={self._num_epochs} epoch(s); create a new "
                f"iterator, or pass num_epochs=-1 for no limit."
            )
        self._epochs_started += 1
        stream = self._dataset._epoch(self._columns, self._output_numpy, self._do_copy, self._as_dict)
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
        """Forwarded to the dataset (see :meth:`Dataset.set_epoch`)."""
        self._dataset.set_epoch(epoch)

    @property
    def epochs_started(self) -> int:
        """How many epochs this iterator has started."""
        return self._epochs_started
