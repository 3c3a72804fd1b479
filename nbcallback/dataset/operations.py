"""Dataset operations: the node each :class:`~nbcallback.dataset.Dataset` method returns.

Each operation is one class, registered with
:func:`~nbcallback.dataset.datasets.operation` under its method's name, that
owns everything about it: ``__init__`` checks the method's arguments (with
MindSpore's messages); ``_rows`` is its meaning, row by row (the reference
path, used whenever the whole-column fast path does not cover a pipeline, and
what the fast path must reproduce exactly); ``_join_plan`` says how it joins
the fast path (:mod:`nbcallback.dataset._fast_path`; by default it does not).

==============================  ==========================================
:class:`MapDataset`             ``map``
:class:`BatchDataset`           ``batch``
:class:`PaddedBatchDataset`     ``padded_batch``
:class:`ShuffleDataset`         ``shuffle`` (:func:`buffer_shuffle`)
:class:`RepeatDataset`          ``repeat``
:class:`TakeDataset`            ``take``
:class:`SkipDataset`            ``skip``
:class:`RenameDataset`          ``rename``
:class:`ProjectDataset`         ``project``
:class:`ConcatDataset`          ``concat`` / ``+``
:class:`ZipDataset`             ``zip``
:class:`FilterDataset`          ``filter``
:class:`SyncWaitDataset`        ``sync_wait`` / ``sync_update``
:func:`split`                   ``split``
==============================  ==========================================

A new operation is this module's class (``@operation("name")``; ``__init__(self,
parent, *args)`` checks, ``_col_names``, ``_count_rows``, ``_rows``, and
``_join_plan`` if whole columns can do it) plus the documented method on
:class:`~nbcallback.dataset.Dataset` that returns ``self._operations["name"](self, *args)``.
"""
from __future__ import annotations

import builtins
import itertools
import numbers
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar, Union

import numpy as np
import torch

from ._fast_path import Plan
from ._validate import (
    INT32_MAX,
    check_bool,
    check_columns,
    check_int,
    check_known_columns,
    check_workers,
    positional_params,
    type_error,
)
from .callbacks import check_callbacks
from .config import get_callback_timeout
from .datasets import Dataset, operation
from .iterators import EpochContext, Row, stack, to_numpy
from .transforms import Compose, TensorOperation

__all__ = [
    "BatchDataset",
    "BatchInfo",
    "ConcatDataset",
    "FilterDataset",
    "MapDataset",
    "ProjectDataset",
    "RenameDataset",
    "RepeatDataset",
    "ShuffleDataset",
    "SkipDataset",
    "SyncWaitDataset",
    "TakeDataset",
    "ZipDataset",
    "buffer_shuffle",
    "split",
]

T = TypeVar("T")
Operation = Callable[..., Any]
_DRAWS = 1024  # random slots drawn at a time by buffer_shuffle


# ``map``/``batch`` keyword arguments of MindSpore that only tune its worker
# pools: accepted and ignored here (everything runs in the calling thread).
_IGNORED_MAP_KWARGS = frozenset({"python_multiprocessing", "max_rowsize"})
_UNSUPPORTED_MAP_KWARGS = frozenset({"cache", "offload"})
_BATCH_KWARGS = frozenset({"per_batch_map", "input_columns", "output_columns", "python_multiprocessing", "max_rowsize"})


def _check_kwargs(method: str, kwargs: dict[str, Any], ignored: frozenset[str], unsupported: frozenset[str]) -> None:
    for name in kwargs:
        if name in unsupported:
            raise NotImplementedError(f"{method}(): the argument {name!r} is not supported by nbcallback.")
        if name not in ignored:
            raise TypeError(f"{method}() got an unexpected keyword argument {name!r}")


def _is_int(value: Any) -> bool:
    """An int for MindSpore's count arguments (numpy ints too; bools are not)."""
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Integral)


# --------------------------------------------------------------------------- map


def _expand(operations: Any) -> list[Operation]:
    """The op list of ``map``: a Compose is replaced by its ops (so built-ins keep the column path)."""
    ops = list(operations) if isinstance(operations, (list, tuple)) else [operations]
    expanded: list[Operation] = []
    for op in ops:
        if isinstance(op, Compose):
            expanded.extend(_expand(list(op.transforms)))
        else:
            expanded.append(op)
    return expanded


@dataclass(frozen=True)
class MapStage:
    """The ops of one ``map`` and the columns they read and write."""

    operations: tuple[Operation, ...]
    input_columns: tuple[str, ...]
    output_columns: tuple[str, ...]

    def run(self, args: Sequence[Any]) -> tuple[Any, ...]:
        """Apply the ops in order to one row's input values (Python callables see numpy)."""
        values = tuple(args)
        for op in self.operations:
            if isinstance(op, TensorOperation):
                try:
                    result = op(*values)
                except (RuntimeError, TypeError, ValueError) as exc:
                    raise type(exc)(f"{exc} (map over column {self.input_columns[0]!r})") from exc
            else:
                result = op(*[v if type(v) is np.ndarray else to_numpy(v) for v in values])
                if type(result) is not np.ndarray or result.dtype.kind == "O":  # a numeric array needs no check
                    _check_results(op, result, self.input_columns)
            values = result if isinstance(result, tuple) else (result,)
        if len(values) != len(self.output_columns):
            raise RuntimeError(
                f"map: the operations on {list(self.input_columns)} returned {len(values)} value(s) "
                f"but output_columns names {len(self.output_columns)}: {list(self.output_columns)}."
            )
        return values


def _check_results(op: Operation, result: Any, columns: Sequence[str]) -> None:
    """Refuse what a Python callable returned that is no column value (None, a dict, objects)."""
    for value in result if isinstance(result, tuple) else (result,):
        if value is None or isinstance(value, dict) or (type(value) is np.ndarray and value.dtype.kind == "O"):
            what = type(value).__name__ if type(value) is not np.ndarray else "an array of Python objects"
            raise RuntimeError(
                f"map: {getattr(op, '__name__', type(op).__name__)} on columns {list(columns)} returned "
                f"{what}; a Python operation must return a numpy array, a number, a str or bytes "
                f"(or a tuple of them, one per output column)."
            )


def map_layout(names: Sequence[str], inputs: Sequence[str], outputs: Sequence[str]) -> list[str]:
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


def _picks(before: Sequence[str], inputs: Sequence[str], after: Sequence[str], outputs: Sequence[str]) -> list[int]:
    """Where each column of ``after`` is in ``row + outputs`` (the row laid out as ``before``)."""
    width = len(before)
    return [width + list(outputs).index(n) if n in outputs else list(before).index(n) for n in after]


@operation("map")
class MapDataset(Dataset):
    """The result of :meth:`Dataset.map` (``callbacks``: its dataset callbacks, see :mod:`.callbacks`)."""

    def __init__(
        self,
        parent: Dataset,
        operations: Union[Operation, Sequence[Operation]],
        input_columns: Union[str, Sequence[str], None] = None,
        output_columns: Union[str, Sequence[str], None] = None,
        column_order: Any = None,
        num_parallel_workers: int | None = None,
        **kwargs: Any,
    ) -> None:
        if column_order is not None:
            raise ValueError(
                "The parameter 'column_order' had been deleted in map operation. Please use '.project' "
                "operation instead: dataset.map(ops, input_columns, output_columns).project(column_order)."
            )
        callbacks = check_callbacks(kwargs.pop("callbacks", None))
        _check_kwargs("map", kwargs, _IGNORED_MAP_KWARGS, _UNSUPPORTED_MAP_KWARGS)
        check_workers(num_parallel_workers)
        ops = _expand(operations)
        if not ops:
            raise ValueError("operations must hold at least one operation.")
        for i, op in enumerate(ops):
            if not callable(op):
                raise TypeError(f"operations[{i}] with value {op!r} is not callable.")
        names = parent.get_col_names()
        inputs = [names[0]] if input_columns is None else check_columns(input_columns, "input_columns")
        check_known_columns(names, inputs, "input_columns")
        outputs = list(inputs) if output_columns is None else check_columns(output_columns, "output_columns")
        if isinstance(ops[0], TensorOperation) and len(inputs) != 1:
            raise ValueError(
                f"{type(ops[0]).__name__} transforms one column, but input_columns names {len(inputs)}: {inputs}."
            )
        if all(isinstance(op, TensorOperation) for op in ops) and len(outputs) != 1:
            raise ValueError(f"Built-in operations produce one column, but output_columns names {len(outputs)}: {outputs}.")
        super().__init__([parent])
        self._names = map_layout(names, inputs, outputs)
        self._stage = MapStage(tuple(ops), tuple(inputs), tuple(outputs))
        self._callbacks = tuple(callbacks)

    def _join_plan(self, plan: Plan) -> bool:
        # With dataset callbacks the hooks must see every row: this map (and all above it) runs row by row.
        if self._callbacks:
            return False
        plan.add_map(self._stage, list(self._names))
        return True

    def _col_names(self) -> list[str]:
        return self._names

    def _count_rows(self) -> int:
        return self._inputs[0]._rows_per_epoch()

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        parent = self._inputs[0]
        before = parent.get_col_names()
        where = [before.index(n) for n in self._stage.input_columns]
        stage = self._stage
        if len(stage.operations) == 1 and len(where) == 1 and len(stage.output_columns) == 1:
            j = where[0]
            body: Callable[[Iterator[Row]], Iterator[Row]] = lambda stream: self._one_column(stream, j)  # noqa: E731
        else:
            picks = _picks(before, stage.input_columns, self._names, stage.output_columns)
            body = lambda stream: self._general(stream, where, picks)  # noqa: E731
        if self._callbacks and ctx.ds_callbacks is not None:
            return ctx.ds_callbacks.map_rows(self, self._callbacks, body, parent._stream(ctx))
        return body(parent._stream(ctx))

    def _general(self, stream: Iterator[Row], where: list[int], picks: list[int]) -> Iterator[Row]:
        run = self._stage.run
        for row in stream:
            combined = row + list(run([row[i] for i in where]))
            yield [combined[i] for i in picks]

    def _one_column(self, stream: Iterator[Row], j: int) -> Iterator[Row]:
        # One op, one column in, one out: the output takes the input's place (map_layout). The op runs
        # through MapStage.run, as on the general path, so its result gets the same checks.
        run = self._stage.run
        for row in stream:
            (row[j],) = run([row[j]])
            yield row

    def __repr__(self) -> str:
        ops = ", ".join(repr(op) for op in self._stage.operations)
        return f"{self._inputs[0]!r}.map([{ops}], input_columns={list(self._stage.input_columns)})"


# --------------------------------------------------------------------------- batch


class BatchInfo:
    """What a callable ``batch_size`` and ``per_batch_map`` are told (``mindspore.dataset.BatchInfo``).

    Args:
        batch_num: 0-based number of the batch within the epoch.
        epoch_num: 0-based number of the epoch.
    """

    def __init__(self, batch_num: int, epoch_num: int) -> None:
        self._batch_num = batch_num
        self._epoch_num = epoch_num

    def get_batch_num(self) -> int:
        """0-based number of the batch within the epoch."""
        return self._batch_num

    def get_epoch_num(self) -> int:
        """0-based number of the epoch."""
        return self._epoch_num


@dataclass(frozen=True)
class BatchStage:
    """Arguments of one ``batch`` / ``padded_batch``."""

    batch_size: Union[int, Callable[[BatchInfo], int]]
    drop_remainder: bool
    per_batch_map: Callable[..., Any] | None = None
    input_columns: tuple[str, ...] = ()
    output_columns: tuple[str, ...] = ()
    pad_info: dict[str, tuple[Any, Any]] | None = None

    @property
    def plain(self) -> bool:
        """An int size, no per_batch_map and no padding: rows are only stacked."""
        return isinstance(self.batch_size, int) and self.per_batch_map is None and self.pad_info is None

    def count(self, rows: int) -> int:
        """Number of batches made from ``rows`` rows (int batch sizes only)."""
        assert isinstance(self.batch_size, int)
        return rows // self.batch_size if self.drop_remainder else -(-rows // self.batch_size)


def check_pad_info(pad_info: Any, names: list[str]) -> dict[str, tuple[Any, Any]]:
    """Validate ``padded_batch``'s ``pad_info`` as MindSpore's ``check_pad_info`` does."""
    if pad_info is None:
        return {}
    if not isinstance(pad_info, dict):
        raise TypeError(f"Argument pad_info with value {pad_info!r} is not of type [<class 'dict'>], but got {type(pad_info)}.")
    for column, value in pad_info.items():
        if not isinstance(column, str):
            raise TypeError(f"Argument pad_info key with value {column!r} is not of type [<class 'str'>].")
        if column not in names:
            raise ValueError(f"pad_info: column {column!r} does not exist in the dataset (columns {names}).")
        if not isinstance(value, tuple) or len(value) != 2:
            raise ValueError("value of pad_info should be a tuple of size 2.")
        shape, pad_value = value
        if shape is not None:
            if not isinstance(shape, list):
                raise TypeError(f"pad_info[{column!r}][0] (the shape) should be a list or None, but got {type(shape)}.")
            for dim in shape:
                if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0):
                    raise ValueError(f"pad_info[{column!r}][0]: every dimension should be a positive int or None, got {dim!r}.")
        if pad_value is not None and not isinstance(pad_value, (int, float, str, bytes)):
            raise TypeError(f"pad_info[{column!r}][1] (the pad value) should be int, float, str or bytes.")
    return dict(pad_info)


def _pad_column(values: list[np.ndarray], shape: list[Any] | None, pad_value: Any, column: str) -> np.ndarray:
    ranks = {v.ndim for v in values}
    if len(ranks) != 1:
        raise RuntimeError(f"padded_batch: the rows of column {column!r} differ in rank {sorted(ranks)}.")
    largest = [max(v.shape[d] for v in values) for d in range(ranks.pop())]
    target = largest if shape is None else [largest[d] if s is None else s for d, s in enumerate(shape)]
    if len(target) != len(largest):
        raise RuntimeError(f"padded_batch: pad shape {shape} for column {column!r} has the wrong rank {len(largest)}.")
    out = np.full([len(values), *target], 0 if pad_value is None else pad_value, dtype=values[0].dtype)
    for i, v in enumerate(values):
        if any(a > b for a, b in builtins.zip(v.shape, target)):
            raise RuntimeError(f"padded_batch: a row of column {column!r} of shape {v.shape} exceeds the pad shape {target}.")
        out[(i, *[slice(0, a) for a in v.shape])] = v
    return out


@operation("batch")
class BatchDataset(Dataset):
    """The result of :meth:`Dataset.batch` (and, as :class:`PaddedBatchDataset`, of ``padded_batch``)."""

    def __init__(
        self,
        parent: Dataset,
        batch_size: Union[int, Callable[[Any], int]],
        drop_remainder: bool = False,
        num_parallel_workers: int | None = None,
        **kwargs: Any,
    ) -> None:
        if "pad_info" in kwargs:
            raise TypeError("batch() got an unexpected keyword argument 'pad_info' (in MindSpore 2.x, use padded_batch).")
        _check_kwargs("batch", kwargs, _BATCH_KWARGS, frozenset())
        if callable(batch_size) and not isinstance(batch_size, (numbers.Integral, np.integer)):
            if positional_params(batch_size) != 1:
                raise ValueError("callable batch_size should take one parameter (BatchInfo).")
            size: Any = batch_size
        elif isinstance(batch_size, (numbers.Integral, np.integer)):
            size = check_int(int(batch_size), "batch_size", 1)  # True counts as 1, as in MindSpore
        else:
            raise TypeError(f"batch_size should either be an int or a callable, but got {type(batch_size)}.")
        drop = check_bool(drop_remainder, "drop_remainder")
        check_workers(num_parallel_workers)
        per_batch_map = kwargs.get("per_batch_map")
        input_columns = kwargs.get("input_columns")
        output_columns = kwargs.get("output_columns")
        names = parent.get_col_names()
        inputs: list[str] | None = None
        outputs: list[str] | None = None
        if per_batch_map is not None:
            if not callable(per_batch_map):
                raise TypeError(f"per_batch_map should be a callable, but got {type(per_batch_map)}.")
            inputs = names if input_columns is None else check_columns(input_columns, "input_columns")
            check_known_columns(names, inputs, "input_columns")
            params = positional_params(per_batch_map)
            if input_columns is not None and params is not None and params != len(inputs) + 1:
                raise ValueError("The signature of per_batch_map should match with input columns.")
            outputs = list(inputs) if output_columns is None else check_columns(output_columns, "output_columns")
        elif input_columns is not None:
            raise ValueError("input_columns can be specified only when per_batch_map is set.")
        elif output_columns is not None:
            raise ValueError("output_columns can be specified only when per_batch_map is set.")
        names_after = names if inputs is None else map_layout(names, inputs, outputs or [])
        self._start(parent, BatchStage(size, drop, per_batch_map, tuple(inputs or ()), tuple(outputs or ())), names_after)

    def _start(self, parent: Dataset, stage: BatchStage, names: list[str]) -> None:
        super().__init__([parent])
        self._stage = stage
        self._names = names
        if isinstance(stage.batch_size, int):  # as MindSpore: a sync_wait below releases whole batches
            for node in _below(parent):
                if isinstance(node, SyncWaitDataset):
                    node._pair.scale(stage.batch_size)

    def _col_names(self) -> list[str]:
        return self._names

    def _join_plan(self, plan: Plan) -> bool:
        if not self._stage.plain:
            return False  # a callable size, per_batch_map or padding: row by row
        plan.end_with_batch(self._stage)
        return True

    def get_batch_size(self) -> int:
        size = self._stage.batch_size
        return size if isinstance(size, int) else -1

    def _count_rows(self) -> int:
        if isinstance(self._stage.batch_size, int):
            return self._stage.count(self._inputs[0]._rows_per_epoch())
        return super()._count_rows()

    def _make(self, rows: list[Row], names: list[str], info: BatchInfo) -> Row:
        stage = self._stage
        if stage.pad_info is not None:
            padded = []
            for j, n in enumerate(names):
                shape, value = stage.pad_info.get(n, (None, None))
                padded.append(_pad_column([to_numpy(r[j]) for r in rows], shape, value, n))
            return padded
        if stage.per_batch_map is None:
            return [stack([r[j] for r in rows], n) for j, n in enumerate(names)]
        where = [names.index(n) for n in stage.input_columns]
        lists = [[to_numpy(r[j]) for r in rows] for j in where]
        outs = stage.per_batch_map(*lists, info)
        if isinstance(outs, list):  # MindSpore casts a returned list to the tuple of columns
            outs = tuple(outs)
        if not isinstance(outs, tuple):
            raise RuntimeError(
                f"Invalid per_batch_map, 'per_batch_map' function should return a tuple (one list or array "
                f"per output column), but got {type(outs).__name__}; write `return (column,)` for one column."
            )
        if len(outs) != len(stage.output_columns):
            raise RuntimeError(
                f"per_batch_map returned {len(outs)} column(s) but output_columns names "
                f"{len(stage.output_columns)}: {list(stage.output_columns)}; return a tuple with one "
                f"list or array per output column."
            )
        made = [stack([r[j] for r in rows], n) if n not in stage.input_columns else None for j, n in enumerate(names)]
        outputs = [np.stack(o) if isinstance(o, list) else np.asarray(o) for o in outs]
        combined = made + outputs
        return [combined[i] for i in _picks(names, stage.input_columns, self._names, stage.output_columns)]

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        stage = self._stage
        names = self._inputs[0].get_col_names()
        number = 0

        def next_size() -> int:
            if isinstance(stage.batch_size, int):
                return stage.batch_size
            size = stage.batch_size(BatchInfo(number, ctx.epoch))
            if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
                raise ValueError(f"batch_size: the callable returned {size!r}; it must return a positive int.")
            return int(size)

        size = next_size()
        pending: list[Row] = []
        for row in self._inputs[0]._stream(ctx):
            pending.append(row)
            if len(pending) == size:
                yield self._make(pending, names, BatchInfo(number, ctx.epoch))
                pending = []
                number += 1
                size = next_size()
        if pending and not stage.drop_remainder:
            yield self._make(pending, names, BatchInfo(number, ctx.epoch))

    def __repr__(self) -> str:
        return f"{self._inputs[0]!r}.batch({self._stage.batch_size!r}, drop_remainder={self._stage.drop_remainder})"


@operation("padded_batch")
class PaddedBatchDataset(BatchDataset):
    """The result of :meth:`Dataset.padded_batch`: a batch whose rows are padded to one shape."""

    def __init__(
        self,
        parent: Dataset,
        batch_size: int,
        drop_remainder: bool = False,
        num_parallel_workers: int | None = None,
        pad_info: dict[str, Any] | None = None,
    ) -> None:
        size = check_int(batch_size, "batch_size", 1)
        drop = check_bool(drop_remainder, "drop_remainder")
        check_workers(num_parallel_workers)
        names = parent.get_col_names()
        info = check_pad_info(pad_info, names)
        self._start(parent, BatchStage(size, drop, pad_info=info), names)


# --------------------------------------------------------------------------- shuffle / repeat / take / skip


def buffer_shuffle(items: Iterable[T], buffer_size: int, generator: torch.Generator) -> Iterator[T]:
    """MindSpore's shuffle buffer: emit a random buffered item, put the next incoming one in its place.

    When the whole stream fits in the buffer (``len <= buffer_size``) this is
    a uniform permutation, ``torch.randperm(len, generator=generator)``. The
    fast path relies on exactly this sequence of draws.
    """
    it = iter(items)
    buffer = list(itertools.islice(it, buffer_size))
    end = object()
    pending: Any = next(it, end)
    if pending is not end:
        while pending is not end:
            for slot in torch.randint(0, buffer_size, (_DRAWS,), generator=generator).tolist():
                yield buffer[slot]
                buffer[slot] = pending
                pending = next(it, end)
                if pending is end:
                    break
    for i in torch.randperm(len(buffer), generator=generator).tolist():
        yield buffer[i]


def shuffle_indices(indices: torch.Tensor, buffer_size: int, generator: torch.Generator) -> torch.Tensor:
    """:func:`buffer_shuffle` of an index tensor (the fast path's ``shuffle``), with the same draws."""
    if len(indices) <= buffer_size:
        return indices[torch.randperm(len(indices), generator=generator)]
    return torch.tensor(list(buffer_shuffle(indices.tolist(), buffer_size, generator)), dtype=indices.dtype)


@operation("shuffle")
class ShuffleDataset(Dataset):
    """The result of :meth:`Dataset.shuffle` (``seed``: a fixed order every epoch, for ``split``)."""

    def __init__(self, parent: Dataset, buffer_size: int, *, seed: int | None = None) -> None:
        buffer_size = check_int(buffer_size, "buffer_size", 2)
        if any(isinstance(node, SyncWaitDataset) for node in _below(parent)):
            raise RuntimeError(
                "No shuffle after sync operators. A shuffle reads rows ahead, past the rows a sync_wait "
                "releases: shuffle before sync_wait."
            )
        super().__init__([parent])
        self._buffer_size = buffer_size
        self._seed = seed

    def _col_names(self) -> list[str]:
        return self._inputs[0].get_col_names()

    def _count_rows(self) -> int:
        return self._inputs[0]._rows_per_epoch()

    def _needs_generator(self) -> bool:
        return self._seed is None

    def generator(self, ctx: EpochContext) -> torch.Generator:
        """This epoch's generator: drawn by the epoch, or the fixed seed's."""
        if self._seed is None:
            return ctx.generator(self)
        generator = torch.Generator()
        generator.manual_seed(self._seed)
        return generator

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        return buffer_shuffle(self._inputs[0]._stream(ctx), self._buffer_size, self.generator(ctx))

    def _join_plan(self, plan: Plan) -> bool:
        size = self._buffer_size
        plan.reorder(lambda draw, ctx: shuffle_indices(draw(ctx), size, self.generator(ctx)))
        return True


@operation("repeat")
class RepeatDataset(Dataset):
    """The result of :meth:`Dataset.repeat` (``count`` -1: forever)."""

    def __init__(self, parent: Dataset, count: int | None = None) -> None:
        if count is not None:
            if not _is_int(count):
                raise type_error("count", count, (int, type(None)))
            count = int(count)
            if (count <= 0 and count != -1) or count > INT32_MAX:
                raise ValueError("count should be either -1 or positive integer, range[1, INT32_MAX].")
        super().__init__([parent])
        self._count = -1 if count is None else count

    def get_repeat_count(self) -> int:
        return self._count

    def _join_plan(self, plan: Plan) -> bool:
        count = self._count
        if count == -1:
            return False  # forever: row by row
        plan.reorder(lambda draw, ctx: torch.cat([draw(ctx) for _ in range(count)]))  # a new order per pass
        return True

    def _col_names(self) -> list[str]:
        return self._inputs[0].get_col_names()

    def _count_rows(self) -> int:
        rows = self._inputs[0]._rows_per_epoch()
        # As MindSpore: an endless repeat reports its input's size.
        return rows if self._count == -1 else rows * self._count

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        done = 0
        while self._count == -1 or done < self._count:
            empty = True
            for row in self._inputs[0]._stream(ctx):
                empty = False
                yield row
            done += 1
            if empty and self._count == -1:
                return  # an empty input would loop forever


@operation("take")
class TakeDataset(Dataset):
    """The result of :meth:`Dataset.take`."""

    def __init__(self, parent: Dataset, count: int = -1) -> None:
        if not _is_int(count):
            raise type_error("count", count, (int,))
        count = int(count)
        if count != -1 and not 0 < count <= INT32_MAX:
            raise ValueError(f"count should be either -1 or within the required interval of (0, {INT32_MAX}], got {count}.")
        super().__init__([parent])
        self._count = count

    def _join_plan(self, plan: Plan) -> bool:
        count = self._count
        if count != -1:
            plan.reorder(lambda draw, ctx: draw(ctx)[:count])
        return True

    def _col_names(self) -> list[str]:
        return self._inputs[0].get_col_names()

    def _count_rows(self) -> int:
        rows = self._inputs[0]._rows_per_epoch()
        return rows if self._count == -1 else min(rows, self._count)

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        stream = self._inputs[0]._stream(ctx)
        return stream if self._count == -1 else itertools.islice(stream, self._count)


@operation("skip")
class SkipDataset(Dataset):
    """The result of :meth:`Dataset.skip`."""

    def __init__(self, parent: Dataset, count: int) -> None:
        count = check_int(count, "count", 0)
        super().__init__([parent])
        self._count = count

    def _join_plan(self, plan: Plan) -> bool:
        count = self._count
        plan.reorder(lambda draw, ctx: draw(ctx)[count:])
        return True

    def _col_names(self) -> list[str]:
        return self._inputs[0].get_col_names()

    def _count_rows(self) -> int:
        return max(0, self._inputs[0]._rows_per_epoch() - self._count)

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        return itertools.islice(self._inputs[0]._stream(ctx), self._count, None)


# --------------------------------------------------------------------------- columns


class _ColumnsDataset(Dataset):
    """The parent's rows under other column names (base of rename and project)."""

    _names: list[str]

    @staticmethod
    def _existing(method: str, wanted: list[str], parent: Dataset) -> list[str]:
        """The parent's column names, once every name in ``wanted`` is one of them (RuntimeError naming it)."""
        names = parent.get_col_names()
        for column in wanted:
            if column not in names:
                raise RuntimeError(f"{method}: column {column!r} does not exist in the dataset (columns {names}).")
        return names

    def _col_names(self) -> list[str]:
        return self._names

    def _count_rows(self) -> int:
        return self._inputs[0]._rows_per_epoch()

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        return self._inputs[0]._stream(ctx)

    def _join_plan(self, plan: Plan) -> bool:
        if plan.lazy:
            return False  # a per-row map below reads and writes its columns by their old names
        self._name_columns(plan)
        return True

    def _name_columns(self, plan: Plan) -> None:
        """The plan's step: its columns renamed (``plan.rename``) or picked (``plan.project``)."""
        raise NotImplementedError


@operation("rename")
class RenameDataset(_ColumnsDataset):
    """The result of :meth:`Dataset.rename`: same rows, new names."""

    def __init__(
        self, parent: Dataset, input_columns: Union[str, Sequence[str]], output_columns: Union[str, Sequence[str]]
    ) -> None:
        inputs = check_columns(input_columns, "input_columns")
        outputs = check_columns(output_columns, "output_columns")
        if len(inputs) != len(outputs):
            raise ValueError("Number of column in input_columns and output_columns is not equal.")
        names = self._existing("rename", inputs, parent)
        mapping = dict(builtins.zip(inputs, outputs))
        after = [mapping.get(n, n) for n in names]
        if len(set(after)) != len(after):
            raise RuntimeError(f"rename: the new column names {after} are not unique.")
        super().__init__([parent])
        self._names = after

    def _name_columns(self, plan: Plan) -> None:
        plan.rename(self._names)


@operation("project")
class ProjectDataset(_ColumnsDataset):
    """The result of :meth:`Dataset.project`: some columns, in a new order."""

    def __init__(self, parent: Dataset, columns: Union[str, Sequence[str]]) -> None:
        selected = check_columns(columns, "columns")
        self._existing("project", selected, parent)
        super().__init__([parent])
        self._names = selected

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        before = self._inputs[0].get_col_names()
        where = [before.index(n) for n in self._names]
        for row in self._inputs[0]._stream(ctx):
            yield [row[i] for i in where]

    def _name_columns(self, plan: Plan) -> None:
        plan.project(self._names)


# --------------------------------------------------------------------------- several inputs


@operation("concat")
class ConcatDataset(Dataset):
    """The result of :meth:`Dataset.concat` / ``+``: the inputs' rows one after the other.

    As in MindSpore, the inputs must agree on column names, and on each
    column's rank and dtype; a mismatch raises RuntimeError when the pipeline
    runs (names are checked first, before any row is read).
    """

    def __init__(self, parent: Dataset, datasets: Union[Dataset, list[Dataset]]) -> None:
        if not isinstance(datasets, (Dataset, list)):
            raise type_error("datasets", datasets, (Dataset, list))
        others = [datasets] if isinstance(datasets, Dataset) else list(datasets)
        for i, other in enumerate(others):  # MindSpore's check_concat names the item
            if not isinstance(other, Dataset):
                raise type_error(f"dataset[{i}]", other, (Dataset,))
        flat: list[Dataset] = []
        for dataset in [parent, *others]:  # (a + b) + c reads as one concat of three
            flat.extend(dataset._inputs if type(dataset) is ConcatDataset else [dataset])
        super().__init__(flat)

    def _col_names(self) -> list[str]:
        return self._inputs[0].get_col_names()

    def _count_rows(self) -> int:
        return sum(d._rows_per_epoch() for d in self._inputs)

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        names = self._inputs[0].get_col_names()
        for dataset in self._inputs[1:]:
            if dataset.get_col_names() != names:
                raise RuntimeError(
                    f"concat: the datasets' column names differ ({names} and {dataset.get_col_names()}); "
                    f"every dataset must have the same columns in the same order (use rename/project)."
                )
        signature: list[tuple[int, Any]] | None = None
        for dataset in self._inputs:
            first = True
            for row in dataset._stream(ctx):
                if first:
                    first = False
                    current = [(to_numpy(v).ndim, to_numpy(v).dtype) for v in row]
                    if signature is None:
                        signature = current
                    elif current != signature:
                        raise RuntimeError(
                            f"concat: the datasets' columns differ in rank or type ({signature} and {current}); "
                            f"every dataset must give each column the same rank and dtype."
                        )
                yield row


@operation("zip")
class ZipDataset(Dataset):
    """The result of :meth:`Dataset.zip`: the inputs' columns side by side, as long as the shortest.

    Raises:
        RuntimeError: Two inputs share a column name.
    """

    def __init__(self, parent: Dataset, datasets: Union[Dataset, tuple[Dataset, ...]]) -> None:
        if isinstance(datasets, Dataset):
            others: tuple[Dataset, ...] = (datasets,)
        elif isinstance(datasets, tuple) and all(isinstance(d, Dataset) for d in datasets):
            others = datasets
        else:
            raise type_error("datasets", datasets, (tuple, Dataset))
        datasets = (parent, *others)
        names: list[str] = []
        for dataset in datasets:
            for name in dataset.get_col_names():
                if name in names:
                    raise RuntimeError(
                        f"zip: column name {name!r} appears in more than one dataset; rename the columns "
                        f"before zipping (dataset.rename(...))."
                    )
                names.append(name)
        super().__init__(datasets)
        self._names = names

    def _col_names(self) -> list[str]:
        return self._names

    def _count_rows(self) -> int:
        return min(d._rows_per_epoch() for d in self._inputs)

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        for rows in builtins.zip(*(d._stream(ctx) for d in self._inputs)):
            yield [value for row in rows for value in row]


@operation("filter")
class FilterDataset(Dataset):
    """The result of :meth:`Dataset.filter`: rows for which the predicate is true."""

    def __init__(
        self,
        parent: Dataset,
        predicate: Callable[..., Any],
        input_columns: Union[str, Sequence[str], None] = None,
        num_parallel_workers: int | None = None,
    ) -> None:
        if not callable(predicate):
            raise TypeError("Predicate should be a Python function or a callable Python object.")
        check_workers(num_parallel_workers)
        names = parent.get_col_names()
        inputs = list(names) if input_columns is None else check_columns(input_columns, "input_columns")
        check_known_columns(names, inputs, "input_columns")
        super().__init__([parent])
        self._predicate = predicate
        self._columns = inputs

    def _col_names(self) -> list[str]:
        return self._inputs[0].get_col_names()

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        names = self._inputs[0].get_col_names()
        where = [names.index(n) for n in self._columns]
        predicate = self._predicate
        for row in self._inputs[0]._stream(ctx):
            if bool(np.all(predicate(*[to_numpy(row[i]) for i in where]))):
                yield row


# --------------------------------------------------------------------------- sync_wait


def _below(dataset: Dataset) -> Iterator[Dataset]:
    """``dataset`` and every node under it."""
    stack_ = [dataset]
    while stack_:
        node = stack_.pop()
        yield node
        stack_.extend(node._inputs)


class ReleasePair:
    """The condition of one ``sync_wait`` (MindSpore's ``BlockReleasePair``).

    ``row_count`` starts at minus the rows released at the start of an epoch;
    each row passing adds one, each ``sync_update`` subtracts the rows it
    releases. A row asked for while ``row_count >= 0`` waits on a condition
    variable, as in MindSpore, until ``sync_update`` or ``disable_sync`` (from
    another thread) or ``config.get_callback_timeout()`` seconds; after the
    timeout it warns and disables the condition, and rows pass freely.

    Where nbcallback differs: the pipeline runs in the thread that iterates it,
    so when that is also the thread that calls ``sync_update`` (the last one
    that did; before the first call, the one that built the ``sync_wait``)
    nothing could end the wait: the warning comes and the condition is
    disabled at once.
    """

    def __init__(self, condition_name: str, num_batch: int, callback: Callable[[Any], Any] | None) -> None:
        self.condition_name = condition_name
        self.default_rows = num_batch
        self.row_count = -num_batch
        self.callback = callback
        self._disabled = False
        self.epoch: EpochContext | None = None
        self._cv = threading.Condition()
        self._releaser = threading.current_thread()  # the thread expected to call sync_update

    @property
    def disabled(self) -> bool:
        """Whether rows pass without waiting (``disable_sync``, a failed ``sync_update``, or a timeout)."""
        return self._disabled

    @disabled.setter
    def disabled(self, value: bool) -> None:
        with self._cv:
            self._disabled = value
            self._cv.notify_all()  # a row waiting in another thread passes now

    def scale(self, batch_size: int) -> None:
        """A ``batch`` above: release whole batches of rows (MindSpore's ``update_batched_size``)."""
        with self._cv:
            self.row_count *= batch_size
            self.default_rows *= batch_size

    def start(self, ctx: EpochContext) -> None:
        """At an epoch's first rows: release ``num_batch`` batches again."""
        with self._cv:
            if self.epoch is not ctx:
                self.epoch = ctx
                self.row_count = -self.default_rows
                self._cv.notify_all()

    def block(self) -> None:
        """Let one row through once released (waiting for ``sync_update``, or disabling the condition)."""
        with self._cv:
            if self.row_count >= 0 and not self._disabled:
                timeout = get_callback_timeout()
                if threading.current_thread() is self._releaser:
                    self._disable_with_warning(
                        f"sync_wait({self.condition_name!r}): the pipeline was asked for more rows than sync_update "
                        f"released, in the thread that calls dataset.sync_update(condition_name="
                        f"{self.condition_name!r}), so waiting could never end: nbcallback disables this sync_wait "
                        f"at once, where MindSpore waits config.get_callback_timeout() = {timeout} second(s) and "
                        f"warns 'Timeout happened in sync_wait'. Call sync_update after each batch you take from "
                        f"the iterator (or iterate the dataset in another thread)."
                    )
                elif not self._cv.wait_for(lambda: self.row_count < 0 or self._disabled, timeout):
                    self._disable_with_warning(
                        "Timeout happened in sync_wait, maybe dataset.sync_update(condition=...) is not added after "
                        f"dataset.create_dict_iterator(...), now disabling lock. (sync_wait({self.condition_name!r}) "
                        f"waited config.get_callback_timeout() = {timeout} second(s) for dataset.sync_update("
                        f"condition_name={self.condition_name!r}) from another thread: call it after each batch "
                        f"taken from the iterator, or raise the timeout with ds.config.set_callback_timeout(seconds).)"
                    )
            self.row_count += 1

    def _disable_with_warning(self, message: str) -> None:
        self._disabled = True
        self._cv.notify_all()
        warnings.warn(message, RuntimeWarning, stacklevel=4)

    def release(self, pass_rows: int | None = None, data: Any = None) -> None:
        """``sync_update``: release ``pass_rows`` rows (default: ``num_batch`` batches) and call the callback."""
        with self._cv:
            self._releaser = threading.current_thread()
            self.row_count -= self.default_rows if pass_rows is None else pass_rows
            if self.callback is not None:
                self.callback(data)
            self._cv.notify_all()


@operation("sync_wait")
class SyncWaitDataset(Dataset):
    """The result of :meth:`Dataset.sync_wait`: rows pass as ``sync_update`` releases them (row path only)."""

    def __init__(
        self, parent: Dataset, condition_name: str, num_batch: int = 1, callback: Callable[[Any], Any] | None = None
    ) -> None:
        if not isinstance(condition_name, str):
            raise type_error("condition_name", condition_name, (str,))
        if not _is_int(num_batch):
            raise type_error("num_batch", num_batch, (int,))
        if callback is not None and not callable(callback):
            raise TypeError(f"callback should be a callable or None, but got {type(callback)}.")
        num_batch = int(num_batch)
        if num_batch <= 0:
            raise ValueError("num_batch need to be greater than 0.")
        if condition_name in parent._sync_pairs():
            raise RuntimeError(
                f"Condition name is already in use: {condition_name!r} names another sync_wait of this pipeline; "
                f"give each sync_wait its own condition_name."
            )
        super().__init__([parent])
        self._pair = ReleasePair(condition_name, num_batch, callback)

    def _sync_pairs(self) -> dict[str, Any]:
        return {self._pair.condition_name: self._pair, **self._inputs[0]._sync_pairs()}

    def _col_names(self) -> list[str]:
        return self._inputs[0].get_col_names()

    def _count_rows(self) -> int:
        return self._inputs[0]._rows_per_epoch()

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        pair = self._pair
        pair.start(ctx)
        for row in self._inputs[0]._stream(ctx):
            pair.block()
            yield row


# --------------------------------------------------------------------------- split


def _check_sizes(sizes: Any, randomize: Any) -> list[Union[int, float]]:
    if not isinstance(sizes, list):
        raise TypeError(f"Argument sizes with value {sizes!r} is not of type [<class 'list'>], but got {type(sizes)}.")
    if isinstance(randomize, (bool, np.bool_)) is False:
        raise TypeError(f"Argument randomize with value {randomize!r} is not of type [<class 'bool'>], but got {type(randomize)}.")
    if not sizes:
        raise ValueError("sizes cannot be empty.")
    all_int = all(isinstance(s, int) and not isinstance(s, bool) for s in sizes)
    all_float = all(isinstance(s, float) for s in sizes)
    if not (all_int or all_float):
        raise ValueError("sizes should be list of int or list of float.")
    if all_int and any(s <= 0 for s in sizes):
        raise ValueError("sizes is a list of int, but there should be no negative or zero numbers.")
    if all_float:
        if any(not 0 < s <= 1 for s in sizes):
            raise ValueError("sizes is a list of float, but there should be no numbers outside the range (0, 1].")
        if abs(sum(sizes) - 1) > 1e-5:
            raise ValueError("sizes is a list of float, but the percentages do not sum up to 1.")
    return list(sizes)


def absolute_sizes(sizes: list[Union[int, float]], rows: int) -> list[int]:
    """Row counts of the parts (MindSpore's rounding of float sizes)."""
    if all(isinstance(s, int) for s in sizes):
        if sum(sizes) != rows:  # type: ignore[arg-type]
            raise RuntimeError(f"Sum of split sizes {sum(sizes)} is not equal to dataset size {rows}.")
        return [int(s) for s in sizes]
    counts = []
    for fraction in sizes:
        count = int(round(fraction * rows))
        if count == 0:
            raise RuntimeError(f"Split percentage {fraction} is too small.")
        counts.append(count)
    total = sum(counts)
    if total < rows:  # more rows to place: the first part takes them
        counts[0] += rows - total
    elif total > rows:  # too many: the first part that can give them up does
        excess = total - rows
        for i, count in enumerate(counts):
            if count - excess > 0:
                counts[i] -= excess
                break
    if sum(counts) != rows:
        raise RuntimeError(f"Sum of calculated split sizes {total} is not equal to dataset size {rows}.")
    return counts


@operation("split")
def split(dataset: Dataset, sizes: Sequence[Union[int, float]], randomize: bool = True) -> tuple[Dataset, ...]:
    """Split ``dataset`` into disjoint datasets of ``sizes`` rows (or fractions summing to 1).

    Float sizes are rounded as MindSpore does (``round(f * n)``, the first part
    absorbing the difference). On a source dataset (MNIST, ``NumpySlicesDataset``,
    a random-access ``GeneratorDataset``) each part reads a subset of the
    source's rows: with ``randomize`` a random subset drawn once now (torch's
    global generator) read in the source's order, else consecutive rows; a
    shuffling source still shuffles within its part each epoch. On any other pipeline each part is
    ``shuffle(10000)`` with one fixed seed (``randomize``), then ``skip``/``take``.

    Raises:
        TypeError: ``sizes`` is not a list or ``randomize`` not a bool.
        ValueError: Bad ``sizes`` (empty, mixed, out of range, not summing to 1).
        RuntimeError: The dataset is empty, sharded, or int sizes do not sum to its size.
    """
    checked = _check_sizes(sizes, randomize)
    dataset._check_splittable()
    rows = dataset._rows_per_epoch()
    if rows <= 0:
        raise RuntimeError("dataset_size is unknown, unable to split.")
    counts = absolute_sizes(checked, rows)
    starts = [sum(counts[:i]) for i in range(len(counts))]
    by_rows = dataset._split_rows(counts, randomize)  # a source reading rows by index: subsets of its rows
    if by_rows is not None:
        return by_rows
    seed = int(torch.randint(0, 2**62, (1,)).item()) if randomize else None
    parts: list[Dataset] = []
    for start, count in builtins.zip(starts, counts):
        part: Dataset = ShuffleDataset(dataset, 10000, seed=seed) if seed is not None else dataset
        if start:
            part = part.skip(start)
        parts.append(part.take(count))
    return tuple(parts)

