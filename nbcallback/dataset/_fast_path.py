"""The whole-column fast path: an optimisation of the row-by-row path of each operation.

A pipeline qualifies when it starts at a *column source* (MNIST,
``NumpySlicesDataset``: every row in memory as torch-compatible columns) and
every node up to and including the first plain ``batch`` joins the
:class:`Plan`. Each operation says how it joins in its own ``_join_plan`` method
(next to its ``_rows``, in :mod:`~nbcallback.dataset.operations`), using the
plan's verbs: :meth:`Plan.add_map`, :meth:`Plan.reorder`,
:meth:`Plan.rename`, :meth:`Plan.project`, :meth:`Plan.end_with_batch`. Today:

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
                    lazily, every epoch; a map with dataset callbacks falls back
``shuffle``         the same buffer shuffle, applied to the index tensor
``repeat(n)``       index tensors of ``n`` passes, concatenated (``repeat(-1)``
                    falls back)
``take``/``skip``   slices of the index tensor
``rename``          renames cached columns (falls back after a per-row map)
``project``         drops cached columns (falls back after a per-row map)
``batch``           ``torch.index_select`` of each column per batch (a
                    callable size, ``per_batch_map`` or padding fall back)
anything else       falls back (the default ``Dataset._join_plan``): the node runs
                    its ``_rows``, reading this path's output for its input
                    where that qualifies
==================  ============================================================

Everything above the first ``batch`` (``map`` of batches, ``take`` of
batches, ...) runs row by row on the batches this path makes. The tests in
``tests/dataset/test_fast_path.py`` check that both paths give identical
elements.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np
import torch

from .iterators import Output, Row, stack, to_torch
from .transforms import is_cacheable

if TYPE_CHECKING:
    from .datasets import Dataset
    from .iterators import EpochContext
    from .operations import BatchStage, MapStage

IndexFn = Callable[["EpochContext"], torch.Tensor]
# index_select has no kernels for these; plain indexing does.
_NO_INDEX_SELECT = frozenset({torch.uint16, torch.uint32, torch.uint64})


class _Unchecked:
    """The value of ``Dataset._plan`` before :func:`plan_for` looked at the dataset."""

    def __repr__(self) -> str:
        return "UNCHECKED"


UNCHECKED: Any = _Unchecked()


def _gatherer(column: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    if column.dtype in _NO_INDEX_SELECT:
        return column.__getitem__
    return functools.partial(torch.index_select, column, 0)


# --------------------------------------------------------------------------- plan


@dataclass
class Plan:
    """What iterating a qualifying pipeline needs, built once and cached on the dataset iterated.

    ``columns`` are full-length tensors after every column-level op; ``lazy``
    holds the maps that must run per row; ``indices`` draws one pass's row
    order; ``batch`` is the first batch, if any.
    """

    columns: dict[str, torch.Tensor]
    owned: set[str]
    names: list[str]
    indices: IndexFn
    lazy: list["MapStage"] = field(default_factory=list)
    lazy_touched: set[str] = field(default_factory=set)
    lazy_outputs: set[str] = field(default_factory=set)
    batch: "BatchStage | None" = None

    def fork(self) -> "Plan":
        """A copy that can be extended without touching this plan or its tensors."""
        return dataclasses.replace(
            self,
            columns=dict(self.columns),
            owned=set(),
            names=list(self.names),
            lazy=list(self.lazy),
            lazy_touched=set(self.lazy_touched),
            lazy_outputs=set(self.lazy_outputs),
        )

    # ------------------------------------------------------------------ the verbs operations use

    def reorder(self, step: Callable[[IndexFn, "EpochContext"], torch.Tensor]) -> None:
        """A pass's row order becomes ``step(draw, ctx)``, ``draw(ctx)`` drawing the order so far (shuffle, repeat ...)."""
        previous = self.indices
        self.indices = lambda ctx: step(previous, ctx)

    def rename(self, names: list[str]) -> None:
        """The columns, in order, get the names ``names`` (``rename``)."""
        mapping = dict(zip(self.names, names))
        self.columns = {mapping.get(n, n): c for n, c in self.columns.items()}
        self.owned = {mapping.get(n, n) for n in self.owned}
        self.names = list(names)

    def project(self, names: list[str]) -> None:
        """Keep the columns ``names``, in that order (``project``)."""
        self.names = list(names)
        self.columns = {n: c for n, c in self.columns.items() if n in self.names}
        self.owned &= set(self.names)

    def end_with_batch(self, stage: "BatchStage") -> None:
        """The path ends at this plain ``batch``: each element is a batch of ``stage.batch_size`` rows."""
        self.batch = stage

    def add_map(self, stage: "MapStage", names_after: list[str]) -> None:
        """A ``map``: cacheable leading ops run now on the whole column, the rest per row every epoch."""
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
                stage = dataclasses.replace(stage, operations=ops[done:])
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
        assert self.batch is not None and isinstance(self.batch.batch_size, int)
        size = self.batch.batch_size
        chunks = list(indices.split(size))
        if chunks and self.batch.drop_remainder and len(chunks[-1]) < size:
            chunks.pop()
        return chunks

    def _batches(self, chunks: list[torch.Tensor], names: Sequence[str]) -> Iterator[Row]:
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

    def stream(self, ctx: "EpochContext", out: Output | None = None) -> Iterator[Any]:
        """``Dataset._stream`` on this plan: one pass (drawing its order now), see :class:`~.datasets.Dataset`."""
        indices = self.indices(ctx)
        if out is not None and self.batch is not None and not self.lazy:
            fns = [_gatherer(self.columns[n]) for n in out.names]
            return _fast_epoch(fns, self._chunks(indices), out)
        if self.batch is None:
            rows = self._rows(indices, self.names, ctx.do_copy)
        else:
            rows = self._batches(self._chunks(indices), self.names)
        return rows if out is None else out(rows)


def _fast_epoch(fns: list[Callable[[torch.Tensor], torch.Tensor]], chunks: list[torch.Tensor], out: Output) -> Iterator[Any]:
    # The hot loop of training: keep it to one list comprehension per batch.
    if out.as_dict:
        names, to_numpy = out.names, out.numpy
        for idx in chunks:
            yield {n: (f(idx).numpy() if to_numpy else f(idx)) for n, f in zip(names, fns)}
    elif out.numpy:
        for idx in chunks:
            yield [f(idx).numpy() for f in fns]
    else:
        for idx in chunks:
            yield [f(idx) for f in fns]


# --------------------------------------------------------------------------- building


def source_plan(source: Any) -> Plan | None:
    """The plan of a source (a node without inputs): its columns and its epoch order, or None (a row source)."""
    if not source.is_column_source():
        return None
    columns = source.columns()
    if not all(isinstance(c, torch.Tensor) for c in columns.values()):
        return None  # e.g. a string column: numpy only
    return Plan(dict(columns), set(), source.get_col_names(), source._epoch_indices)


def plan_for(dataset: "Dataset") -> Plan | None:
    """The fast path's plan for iterating ``dataset``, or None when it does not qualify (cached on it).

    Walks down to the source, or to the nearest node that already has a plan
    (its column work is reused), then lets each node on the way up join
    (``node._join_plan(plan)``). Where a node does not join, the plan made so far
    is kept by that node's input (which its ``_rows`` reads next), and
    ``dataset`` gets None. Only the dataset iterated keeps its plan, so a
    chain of maps transforms a column in place instead of keeping every
    intermediate version.
    """
    if dataset._plan is not UNCHECKED:
        return dataset._plan
    chain: list[Dataset] = []
    node = dataset
    while (node is dataset or node._plan is UNCHECKED) and node._inputs:
        if len(node._inputs) != 1:  # zip, concat: several inputs
            dataset._plan = None
            return None
        chain.append(node)
        node = node._inputs[0]
    if node._plan is UNCHECKED or node is dataset:
        plan = source_plan(node)
    else:
        plan = node._plan.fork() if node._plan is not None else None
    if node is dataset:
        dataset._plan = plan
        return plan
    for below, current in zip([node, *reversed(chain)], reversed(chain)):
        if plan is None:
            break
        if plan.batch is not None or not current._join_plan(plan):  # the path ends at the first batch
            if below is not node:
                below._plan = plan
            plan = None
    dataset._plan = plan
    return plan
