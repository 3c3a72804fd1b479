"""The whole-column fast path: an optimisation of the row-by-row path in :mod:`~nbcallback.dataset.operations`.

A pipeline qualifies when it starts at a *column source* (MNIST,
``NumpySlicesDataset``: every row in memory as torch-compatible columns) and
every node up to and including the first plain ``batch`` is supported:

==================  ============================================================
node                on the fast path
==================  ============================================================
source              epoch order = a tensor of row indices (same draws as ``_rows``;
                    a ``sampler`` chain gives it the same way, so every sampler
                    keeps this path)
``map``             deterministic built-in ops (those
                    :func:`~nbcallback.dataset.transforms.is_cacheable` accepts)
                    run once on the whole column and are cached; random ops,
                    Python callables (and built-ins after them) run per row,
                    lazily, every epoch
``shuffle``         the same buffer shuffle, applied to the index tensor
``repeat(n)``       index tensors of ``n`` passes, concatenated (``repeat(-1)``
                    falls back)
``take``/``skip``   slices of the index tensor
``rename``          renames cached columns (falls back after a Python callable)
``project``         drops cached columns (falls back after a Python callable)
``batch``           ``torch.index_select`` of each column per batch (a
                    callable size, ``per_batch_map`` or padding fall back)
anything else       falls back: the node runs its ``_rows``, reading this
                    path's output for its input where that qualifies
==================  ============================================================

Everything above the first ``batch`` (``map`` of batches, ``take`` of
batches, ...) runs row by row on the batches this path makes. The tests in
``tests/dataset/test_fast_path.py`` check that both paths give identical
elements.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np
import torch

from .transforms import is_cacheable

if TYPE_CHECKING:
    from .datasets import Dataset
    from .iterators import EpochContext
    from .operations import MapStage
    from .sources import SourceDataset

Row = list[Any]
IndexFn = Callable[["EpochContext"], torch.Tensor]
# index_select has no kernels for these; plain indexing does.
_NO_INDEX_SELECT = frozenset({torch.uint16, torch.uint32, torch.uint64})


def _gatherer(column: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    if column.dtype in _NO_INDEX_SELECT:
        return column.__getitem__
    return functools.partial(torch.index_select, column, 0)


def shuffle_indices(indices: torch.Tensor, buffer_size: int, generator: torch.Generator) -> torch.Tensor:
    """:func:`~nbcallback.dataset.operations.buffer_shuffle` of an index tensor, with the same draws."""
    from .operations import buffer_shuffle

    if len(indices) <= buffer_size:
        return indices[torch.randperm(len(indices), generator=generator)]
    return torch.tensor(list(buffer_shuffle(indices.tolist(), buffer_size, generator)), dtype=indices.dtype)


# --------------------------------------------------------------------------- plan


@dataclass
class Plan:
    """What iterating a qualifying pipeline needs, built once and cached on the dataset iterated.

    ``columns`` are full-length tensors after every column-level op; ``lazy``
    holds the maps that must run per row; ``indices`` draws one pass's row
    order; ``batch`` is the first batch, if any.
    """

    source: "SourceDataset"
    columns: dict[str, torch.Tensor]
    owned: set[str]
    names: list[str]
    indices: IndexFn
    lazy: list["MapStage"] = field(default_factory=list)
    lazy_touched: set[str] = field(default_factory=set)
    lazy_outputs: set[str] = field(default_factory=set)
    row_names: list[str] = field(default_factory=list)
    batch: Any = None

    def fork(self) -> "Plan":
        """A copy that can be extended without touching this plan or its tensors."""
        return Plan(
            self.source,
            dict(self.columns),
            set(),
            list(self.names),
            self.indices,
            list(self.lazy),
            set(self.lazy_touched),
            set(self.lazy_outputs),
            list(self.row_names),
            self.batch,
        )

    # ------------------------------------------------------------------ building

    def add(self, node: "Dataset") -> None:
        """Extend the plan by ``node`` (one that :func:`_supported` accepted)."""
        from . import operations as ops

        if isinstance(node, ops.MapDataset):
            self._add_map(node._stage, list(node._names))
        elif isinstance(node, ops.BatchDataset):
            self.batch = node._stage
            self.row_names = list(self.names)
        elif isinstance(node, ops.ShuffleDataset):
            previous, size = self.indices, node._buffer_size
            self.indices = lambda ctx: shuffle_indices(previous(ctx), size, node.generator(ctx))
        elif isinstance(node, ops.RepeatDataset):
            previous, count = self.indices, node._count
            self.indices = lambda ctx: torch.cat([previous(ctx) for _ in range(count)])
        elif isinstance(node, ops.TakeDataset):
            previous, count = self.indices, node._count
            if count != -1:
                self.indices = lambda ctx: previous(ctx)[:count]
        elif isinstance(node, ops.SkipDataset):
            previous, count = self.indices, node._count
            self.indices = lambda ctx: previous(ctx)[count:]
        elif isinstance(node, ops.RenameDataset):
            mapping = dict(zip(self.names, node._names))
            self.columns = {mapping.get(n, n): c for n, c in self.columns.items()}
            self.owned = {mapping.get(n, n) for n in self.owned}
            self.names = list(node._names)
        elif isinstance(node, ops.ProjectDataset):
            self.names = list(node._names)
            self.columns = {n: c for n, c in self.columns.items() if n in self.names}
            self.owned &= set(self.names)
        else:  # pragma: no cover - _supported() guards this
            raise AssertionError(f"the fast path does not support {type(node).__name__}")

    def _add_map(self, stage: "MapStage", names_after: list[str]) -> None:
        from .operations import MapStage

        ops = stage.operations
        name = stage.input_columns[0]
        # Column-level work must not change what an earlier per-row map reads.
        untouched = not self.lazy_touched.intersection((name, stage.output_columns[0]))
        if len(stage.input_columns) == 1 and untouched:
            column, owned = self.columns[name], name in self.owned
            done = 0
            while done < len(ops) and is_cacheable(ops[done]):
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
                stage = MapStage(ops[done:], stage.input_columns, stage.output_columns)
        self.lazy.append(stage)
        self.lazy_touched.update(stage.input_columns, stage.output_columns)
        self.lazy_outputs.update(stage.output_columns)
        self.names = names_after

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

    def _chunks(self, indices: torch.Tensor) -> list[torch.Tensor]:
        size = self.batch.batch_size
        chunks = list(indices.split(size))
        if chunks and self.batch.drop_remainder and len(chunks[-1]) < size:
            chunks.pop()
        return chunks

    def _batches(self, chunks: list[torch.Tensor], names: Sequence[str]) -> Iterator[Row]:
        from .iterators import stack, to_torch

        gathers = {n: _gatherer(self.columns[n]) for n in names if n not in self.lazy_outputs}
        if not self.lazy:
            fns = [gathers[n] for n in names]
            for idx in chunks:
                yield [f(idx) for f in fns]
            return
        arrays = {n: t.numpy() for n, t in self.columns.items() if n in self.lazy_touched}
        lazy_names = [n for n in names if n in self.lazy_outputs]
        for idx in chunks:
            rows = [self._lazy_row(i, arrays) for i in idx.tolist()]
            stacked = {n: to_torch(stack([r[n] for r in rows], n)) for n in lazy_names}
            yield [stacked[n] if n in stacked else gathers[n](idx) for n in names]

    def stream(self, ctx: "EpochContext") -> Iterator[Row]:
        """One pass of this plan's elements, columns in ``names`` order (input of a row-by-row node)."""
        indices = self.indices(ctx)
        if self.batch is None:
            return self._rows(indices, self.names, ctx.do_copy)
        return self._batches(self._chunks(indices), self.names)

    def epoch(self, ctx: "EpochContext", columns: list[str], output_numpy: bool, as_dict: bool) -> Iterator[Any]:
        """Start one epoch now (drawing its order) and return an iterator over the user's elements."""
        from .iterators import finish

        indices = self.indices(ctx)
        if self.batch is not None and not self.lazy:
            fns = [_gatherer(self.columns[n]) for n in columns]
            return _fast_epoch(fns, self._chunks(indices), columns, output_numpy, as_dict)
        if self.batch is None:
            stream = self._rows(indices, self.names, ctx.do_copy)
        else:
            stream = self._batches(self._chunks(indices), self.names)
        return finish(stream, [self.names.index(c) for c in columns], columns, output_numpy, as_dict)


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


# --------------------------------------------------------------------------- which pipelines qualify


def _supported(node: "Dataset", below: list["Dataset"]) -> bool:
    """Whether ``node`` can extend a plan made of the nodes ``below`` (source side first)."""
    from . import operations as ops

    if any(isinstance(n, ops.BatchDataset) for n in below):
        return False  # the path ends at the first batch
    if isinstance(node, (ops.MapDataset, ops.ShuffleDataset, ops.TakeDataset, ops.SkipDataset)):
        return True
    if isinstance(node, ops.RepeatDataset):
        return node._count != -1
    if isinstance(node, ops.BatchDataset):
        return bool(node._stage.plain)
    if isinstance(node, (ops.RenameDataset, ops.ProjectDataset)):
        return not any(
            isinstance(n, ops.MapDataset) and not all(is_cacheable(op) for op in n._stage.operations)
            for n in below
        )
    return False


def _source_plan(source: "SourceDataset") -> Plan | None:
    if not source.is_column_source():
        return None
    columns = source.columns()
    if not all(isinstance(c, torch.Tensor) for c in columns.values()):
        return None  # e.g. a string column: numpy only
    return Plan(source, dict(columns), set(), source._source_col_names(), source._epoch_indices)


def plan_for(dataset: "Dataset") -> Plan | None:
    """The fast path's plan for iterating ``dataset``, or None when it does not qualify (cached on it).

    Walks down to the source, or to the nearest node that already has a plan
    (its column work is reused), checks every node on the way, then builds.
    Only the dataset iterated keeps its plan, so a chain of maps transforms a
    column in place instead of keeping every intermediate version.
    """
    if dataset._fast_checked:
        return dataset._plan
    from . import operations as ops
    from .sources import SourceDataset

    chain: list[Dataset] = []
    node = dataset
    while not (node is not dataset and node._fast_checked) and not isinstance(node, SourceDataset):
        if len(node._inputs) != 1:
            node = None  # type: ignore[assignment]  # zip, concat: several inputs
            break
        chain.append(node)
        node = node._inputs[0]
    plan: Plan | None = None
    if node is not None:
        nodes = list(reversed(chain))
        cached = node._fast_checked and node is not dataset
        qualifies = _qualifies(nodes, [])
        if qualifies and cached:
            base: Plan | None = node._plan
            if base is not None and (base.batch is None or not nodes):
                renames = any(isinstance(n, (ops.RenameDataset, ops.ProjectDataset)) for n in nodes)
                if not (renames and base.lazy):
                    plan = base.fork()
        elif qualifies:
            plan = _source_plan(node)  # type: ignore[arg-type]
        if plan is not None:
            for n in nodes:
                plan.add(n)
    dataset._plan = plan
    dataset._fast_checked = True
    return plan


def _qualifies(nodes: list["Dataset"], below: list["Dataset"]) -> bool:
    checked = list(below)
    for n in nodes:
        if not _supported(n, checked):
            return False
        checked.append(n)
    return True
