"""``Dataset``: the base class of every source and operation (``mindspore.dataset.Dataset``).

Every operation is a method that returns a *new* dataset (the receiver is
left unchanged). The method hands its arguments to the one class in
:mod:`nbcallback.dataset.operations` that implements the operation (its
checks with MindSpore's messages, its rows, its fast-path step); see
:func:`operation` and the class docstring of :class:`Dataset`:

==================  =====================================================
``map``             apply transforms / Python callables to columns
``batch``           group rows (``per_batch_map``, callable batch size)
``padded_batch``    group rows of different shapes, padding them
``shuffle``         buffer shuffle, a new order every epoch
``repeat``          run the pipeline below ``count`` times per epoch
``take`` / ``skip`` the first ``count`` rows / all but them
``rename``          rename columns
``project``         keep (and reorder) columns
``concat`` / ``+``  rows of several datasets, one after the other
``zip``             columns of several datasets side by side
``filter``          keep rows a predicate accepts
``split``           disjoint parts of given sizes
``sync_wait``       rows pass as ``sync_update`` releases them
==================  =====================================================

``map(..., callbacks=...)`` takes dataset callbacks
(:mod:`nbcallback.dataset.callbacks`).

Iterating a dataset runs one epoch (the iteration protocol is in the
docstring of :class:`Dataset`). Where it can, the epoch runs on whole cached
columns (:mod:`nbcallback.dataset._fast_path`); otherwise row by row through
each node's ``_rows`` (the reference behaviour, in :mod:`~nbcallback.dataset.operations`).
Everything runs in the calling thread: ``num_parallel_workers`` and
``python_multiprocessing`` are accepted and ignored.
"""
from __future__ import annotations

import builtins
import numbers
import warnings
from types import MappingProxyType
from typing import Any, Callable, ClassVar, Iterator, Sequence, TypeVar, Union

import numpy as np

from . import _fast_path
from ._validate import check_bool, check_columns, check_known_columns, type_error
from .callbacks import CallbackRun, pipeline_callbacks
from .iterators import DatasetIterator, EpochContext, Output, Row, preserved_rng, to_numpy

__all__ = ["Dataset"]

Operation = Callable[..., Any]

# Methods of MindSpore's Dataset that nbcallback does not have, and why (named when one is called).
_NOT_PROVIDED = MappingProxyType(
    {
        "save": "nbcallback writes no MindRecord files; save arrays with numpy or torch.save",
        "to_device": "there is no device queue; Model moves each batch to the network's device",
        "device_que": "there is no device queue; Model moves each batch to the network's device",
        "send": "there is no device queue; Model moves each batch to the network's device",
        "bucket_batch_by_length": "use padded_batch, or batch with per_batch_map",
        "build_vocab": "the text API (mindspore.dataset.text) is not provided",
        "build_sentencepiece_vocab": "the text API (mindspore.dataset.text) is not provided",
    }
)


T = TypeVar("T", bound=Callable[..., Any])


def operation(name: str) -> Callable[[T], T]:
    """Register the class (or function) that builds ``Dataset.<name>(...)`` (used in :mod:`.operations`).

    ``Dataset.<name>(*args)`` returns ``registered(self, *args)``. This keeps each method's
    MindSpore signature and documentation here while its checks, rows and fast-path plan live in
    one class next to the others, without this module importing that one (which imports this).
    """

    def register(made: T) -> T:
        Dataset._operations[name] = made
        return made

    return register


class Dataset:
    """Base class of every dataset and pipeline stage (``mindspore.dataset.Dataset``).

    Datasets are immutable descriptions: every operation returns a new
    dataset. Work (decoding, column-level transforms) happens the first time
    a dataset is iterated and is cached on that dataset object, so iterate
    the same object every epoch.

    Iterating with ``for`` runs one epoch and yields lists with one element
    per column (torch tensors); every ``for`` loop starts a new epoch with a
    new shuffle order.

    **Operations.** Each method below (``map``, ``batch`` ...) hands its
    arguments to the one class that implements the operation (in
    :mod:`~nbcallback.dataset.operations`, registered with :func:`operation`):
    its ``__init__`` checks the arguments with MindSpore's messages, its
    ``_rows`` is the meaning row by row, its ``_join_plan`` how it joins the
    whole-column fast path (:mod:`~nbcallback.dataset._fast_path`).

    **The iteration protocol** (the only one; every epoch goes through it):

    1. ``_epoch(...)`` starts an epoch for the user: an
       :class:`~nbcallback.dataset.iterators.EpochContext` (the epoch's random
       generators, drawn now), the dataset callbacks' run, and an
       :class:`~nbcallback.dataset.iterators.Output` (columns picked,
       converted to torch or numpy, lists or dicts); it returns
       ``_stream(ctx, out)``.
    2. ``_stream(ctx, out=None)`` is what anything reads from a node: the fast
       path's ``Plan.stream(ctx, out)`` where
       :func:`~nbcallback.dataset._fast_path.plan_for` covers the node, else
       ``out(self._rows(ctx))``. Without ``out`` the elements are raw rows
       (lists in ``get_col_names()`` order), as a node reads its inputs.
    3. ``_rows(ctx)`` is each node's own meaning, row by row (the reference
       path the fast path is tested equal to); it reads its inputs through
       their ``_stream(ctx)``.
    """

    #: What each method builds: operation name -> the class (or function) :func:`operation` registered.
    _operations: ClassVar[dict[str, Callable[..., Any]]] = {}

    def __init__(self, inputs: Sequence["Dataset"] = ()) -> None:
        self._inputs: tuple[Dataset, ...] = tuple(inputs)
        self._plan: Any = _fast_path.UNCHECKED  # the fast path's plan, or None, once plan_for looked
        self._size: int | None = None
        self._epochs_run = 0

    @property
    def _parent(self) -> "Dataset | None":
        return self._inputs[0] if self._inputs else None

    # -- hooks for subclasses (operations and sources) ----------------------------

    def _col_names(self) -> list[str]:
        raise NotImplementedError

    def _count_rows(self) -> int:
        """Rows (or batches) per epoch; the default runs one epoch and counts."""
        with preserved_rng():
            return sum(1 for _ in self._rows(EpochContext(self)))

    def _rows(self, ctx: EpochContext) -> Iterator[Row]:
        """One epoch, row by row: the reference (plain) path of every node (see the iteration protocol)."""
        raise NotImplementedError

    def _join_plan(self, plan: "_fast_path.Plan") -> bool:
        """Extend the fast path's ``plan`` by this node, or return False (``plan`` untouched): it runs ``_rows``."""
        return False

    def _needs_generator(self) -> bool:
        """Whether this node draws random numbers (then :class:`EpochContext` seeds a generator for it)."""
        return False

    def _takes_sampler(self) -> bool:
        """Whether ``use_sampler``/``add_sampler`` apply to this node (a source reading rows by index)."""
        return False

    def _sync_pairs(self) -> dict[str, Any]:
        """The ``sync_wait`` conditions ``sync_update`` reaches, nearest first (down each node's first input)."""
        return self._inputs[0]._sync_pairs() if self._inputs else {}

    def _check_splittable(self) -> None:
        """Raise when :meth:`split` must refuse this dataset (a sharded source does)."""

    def _split_rows(self, counts: list[int], randomize: bool) -> "tuple[Dataset, ...] | None":
        """``split`` into parts of ``counts`` rows by selecting rows directly (a source), else None."""
        return None

    def _stream(self, ctx: EpochContext, out: Output | None = None) -> Iterator[Any]:
        """This node's elements for one epoch (step 2 of the iteration protocol)."""
        plan = _fast_path.plan_for(self)
        if plan is not None:
            return plan.stream(ctx, out)
        return self._rows(ctx) if out is None else out(self._rows(ctx))

    # -- operations --------------------------------------------------------------

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

        Deterministic built-in ops (a
        :class:`~nbcallback.dataset.transforms.TensorOperation` declaring
        ``random = False``, also inside a
        :class:`~nbcallback.dataset.transforms.Compose`) are applied once to
        the whole column and cached when the pipeline allows it; random ops
        run per row, every epoch; any other callable is applied per row at
        iteration time, receives numpy arrays (one per input column) and may
        return one value or a tuple (one per output column). A random
        augmentation written as a Python callable is therefore re-drawn every
        epoch.

        Args:
            operations: One operation or a list of them, applied in order; each
                one's outputs are the next one's inputs.
            input_columns: Column name or list of names fed to the first
                operation. Default: the first column (as in MindSpore).
            output_columns: Names of the columns produced by the last
                operation; they take the place of the input columns. Default:
                the input column names (transform in place).
            column_order: Removed in MindSpore 2.x; passing it raises ValueError.
            num_parallel_workers: Accepted and ignored (one thread).
            **kwargs: ``callbacks``: a :class:`~nbcallback.dataset.DSCallback`
                or a list of them, called as rows pass through this map (see
                :mod:`nbcallback.dataset.callbacks`; such a map, and the
                pipeline above it, runs row by row). ``python_multiprocessing``
                and ``max_rowsize`` are accepted and ignored; ``cache`` and
                ``offload`` raise NotImplementedError.

        Returns:
            The new dataset; ``self`` is unchanged.

        Raises:
            ValueError: ``column_order`` given, unknown input column, empty
                operation list, or output names clashing with other columns.
            TypeError: An operation is not callable, a column argument has
                the wrong type, or ``callbacks`` is neither a DSCallback nor a
                list of them.
        """
        return self._operations["map"](
            self, operations, input_columns, output_columns, column_order, num_parallel_workers, **kwargs
        )

    def batch(
        self,
        batch_size: Union[int, Callable[[Any], int]],
        drop_remainder: bool = False,
        num_parallel_workers: int | None = None,
        **kwargs: Any,
    ) -> "Dataset":
        """Group consecutive rows into batches; returns a new dataset.

        Every column of a batch is the rows stacked along a new first axis, so
        all rows of a column must share one shape (see :meth:`padded_batch`).

        Args:
            batch_size: Rows per batch, an int in ``[1, 2147483647]``, or a
                callable taking a :class:`~nbcallback.dataset.operations.BatchInfo`
                and returning the size of the next batch.
            drop_remainder: Drop the last batch if it has fewer than
                ``batch_size`` rows (60,000 rows / 64 -> 937 batches instead of 938).
            num_parallel_workers: Accepted and ignored (one thread).
            **kwargs: ``per_batch_map`` (a callable receiving, for each of
                ``input_columns``, the list of the batch's rows as numpy arrays,
                then a ``BatchInfo``; it returns a tuple (or list) with one
                list/array per output column, else RuntimeError), ``input_columns`` (default: all columns),
                ``output_columns`` (default: the input columns; needed when
                the count changes); ``python_multiprocessing`` and
                ``max_rowsize`` are accepted and ignored.

        Returns:
            The new dataset; ``self`` is unchanged.

        Raises:
            TypeError: ``batch_size`` is neither an int nor a callable, or
                ``drop_remainder`` is not a bool.
            ValueError: ``batch_size`` out of range, a callable batch size
                that does not take one parameter, ``input_columns`` without
                ``per_batch_map``, or a ``per_batch_map`` whose parameters do
                not match ``input_columns``.
        """
        return self._operations["batch"](self, batch_size, drop_remainder, num_parallel_workers, **kwargs)

    def padded_batch(
        self,
        batch_size: int,
        drop_remainder: bool = False,
        num_parallel_workers: int | None = None,
        pad_info: dict[str, Any] | None = None,
    ) -> "Dataset":
        """Batch rows of different shapes, padding each to a common shape (MindSpore 2.x).

        Args:
            batch_size: Rows per batch, a positive int.
            drop_remainder: Drop a last, smaller batch.
            num_parallel_workers: Accepted and ignored.
            pad_info: ``{column: (shape, pad_value)}``; ``shape`` a list of
                ints/None (None: the largest in the batch) or None (the batch
                maximum on every axis); unlisted columns pad to the batch
                maximum with 0. Default: every column so padded.

        Returns:
            The new dataset.

        Raises:
            TypeError / ValueError: Bad arguments, as :meth:`batch` and MindSpore's ``check_pad_info``.
        """
        return self._operations["padded_batch"](self, batch_size, drop_remainder, num_parallel_workers, pad_info)

    def shuffle(self, buffer_size: int) -> "Dataset":
        """Shuffle rows through a buffer of ``buffer_size`` rows; a new order every epoch.

        The buffer holds the first ``buffer_size`` rows; each next row takes
        the place of a random buffered row, which is emitted. A buffer at
        least as large as the dataset gives a uniform shuffle of all rows.
        Orders come from torch's global generator (seed with
        :func:`nbcallback.dataset.config.set_seed` or ``torch.manual_seed``).

        Args:
            buffer_size: An int in ``[2, 2147483647]``.

        Raises:
            TypeError: ``buffer_size`` is not an int.
            ValueError: ``buffer_size`` is out of range.
        """
        return self._operations["shuffle"](self, buffer_size)

    def repeat(self, count: int | None = None) -> "Dataset":
        """Run the pipeline below ``count`` times per epoch (None or -1: forever).

        ``repeat`` before ``batch`` makes batches that span repetitions;
        ``batch(...).repeat(n)`` repeats the batches (``get_dataset_size`` is
        ``n`` times the batch count either way, up to the remainder).

        Raises:
            TypeError: ``count`` is neither an int nor None.
            ValueError: ``count`` is 0, below -1 or above 2147483647.
        """
        return self._operations["repeat"](self, count)

    def take(self, count: int = -1) -> "Dataset":
        """The first ``count`` elements (rows, or batches after ``batch``); -1 for all.

        Raises:
            TypeError: ``count`` is not an int.
            ValueError: ``count`` is neither -1 nor in ``(0, 2147483647]``.
        """
        return self._operations["take"](self, count)

    def skip(self, count: int) -> "Dataset":
        """All but the first ``count`` elements.

        Raises:
            TypeError: ``count`` is not an int.
            ValueError: ``count`` is not in ``[0, 2147483647]``.
        """
        return self._operations["skip"](self, count)

    def rename(self, input_columns: Union[str, Sequence[str]], output_columns: Union[str, Sequence[str]]) -> "Dataset":
        """Rename columns, keeping their order.

        Raises:
            TypeError / ValueError: Bad column arguments, or different counts.
            RuntimeError: A column is not in the dataset, or a new name clashes.
        """
        return self._operations["rename"](self, input_columns, output_columns)

    def project(self, columns: Union[str, Sequence[str]]) -> "Dataset":
        """Keep only ``columns``, in that order.

        Raises:
            TypeError / ValueError: Bad column argument.
            RuntimeError: A column is not in the dataset.
        """
        return self._operations["project"](self, columns)

    def concat(self, datasets: Union["Dataset", list["Dataset"]]) -> "Dataset":
        """The rows of this dataset, then those of each of ``datasets``.

        Args:
            datasets: A dataset or a list of datasets with the same column names.

        Raises:
            TypeError: ``datasets`` is not a Dataset or a list of them.
            RuntimeError: The column names differ.
        """
        return self._operations["concat"](self, datasets)

    def __add__(self, other: "Dataset") -> "Dataset":
        return self.concat(other)

    def zip(self, datasets: Union["Dataset", tuple["Dataset", ...]]) -> "Dataset":
        """Columns of this dataset and of ``datasets`` side by side; as long as the shortest.

        Raises:
            TypeError: ``datasets`` is not a Dataset or a tuple of them.
            RuntimeError: Two inputs share a column name.
        """
        return self._operations["zip"](self, datasets)

    def filter(
        self,
        predicate: Callable[..., Any],
        input_columns: Union[str, Sequence[str], None] = None,
        num_parallel_workers: int | None = None,
    ) -> "Dataset":
        """Keep the rows for which ``predicate(*columns)`` is true.

        The predicate receives numpy arrays of ``input_columns`` (every column
        if None). The size of a filtered dataset is found by running it once.

        Raises:
            TypeError: ``predicate`` is not callable.
            ValueError: Unknown column.
        """
        return self._operations["filter"](self, predicate, input_columns, num_parallel_workers)

    def split(self, sizes: Sequence[Union[int, float]], randomize: bool = True) -> tuple["Dataset", ...]:
        """Split into disjoint datasets of the given sizes (see :func:`nbcallback.dataset.operations.split`)."""
        return self._operations["split"](self, sizes, randomize)

    def sync_wait(self, condition_name: str, num_batch: int = 1, callback: Callable[[Any], Any] | None = None) -> "Dataset":
        """Let rows pass only as :meth:`sync_update` releases them; returns a new dataset.

        At the start of each epoch ``num_batch`` batches pass (rows, times the
        size of each ``batch`` built on top, as in MindSpore); then each
        ``sync_update(condition_name)`` releases ``num_batch`` more and calls
        ``callback(data)``. Use it to change a transform's parameters from the
        training loop before the next batch is made.

        A row asked for before ``sync_update`` released it waits, as in
        MindSpore, until ``sync_update`` or ``disable_sync`` from another
        thread, or ``config.get_callback_timeout()`` seconds; then a
        RuntimeWarning ("Timeout happened in sync_wait ...") and the rows flow
        freely from then on.

        Where nbcallback differs: the pipeline runs in the thread that iterates
        it. When that thread is the one that calls ``sync_update`` (the last
        one that did; before the first call, the one that built this
        ``sync_wait``), the wait could never end, so the condition is disabled
        at once with the RuntimeWarning. Iterating in a consumer thread while
        another thread calls ``sync_update`` blocks as in MindSpore.

        Args:
            condition_name: The name :meth:`sync_update` uses; unique in the pipeline.
            num_batch: Batches released at the start of each epoch and by each
                ``sync_update`` without ``num_batch``.
            callback: Called with ``sync_update``'s ``data``.

        Raises:
            TypeError: ``condition_name`` is not a str, ``num_batch`` not an int.
            ValueError: ``num_batch`` is not positive.
            RuntimeError: ``condition_name`` is already used by a ``sync_wait``
                below; a ``shuffle`` is later added on top (no shuffle after sync).
        """
        return self._operations["sync_wait"](self, condition_name, num_batch, callback)

    def sync_update(self, condition_name: str, num_batch: int | None = None, data: Any = None) -> None:
        """Release ``num_batch`` batches of the ``sync_wait`` named ``condition_name`` and call its callback.

        Call it on the dataset you iterate, after taking a batch.

        Args:
            condition_name: The name given to :meth:`sync_wait`.
            num_batch: Batches to release (times this dataset's batch size);
                None: the ``num_batch`` given to ``sync_wait``.
            data: Passed to the ``sync_wait``'s callback.

        Raises:
            RuntimeError: ``num_batch`` is not a positive int, or no
                ``sync_wait`` below has that name (both disable the pipeline's
                sync_wait first, as in MindSpore).
            TypeError: ``condition_name`` is not a str.
        """
        if (
            isinstance(num_batch, (bool, np.bool_))
            or (num_batch is not None and not isinstance(num_batch, numbers.Integral))
            or (num_batch is not None and num_batch <= 0)
        ):
            self.disable_sync()
            raise RuntimeError(f"Sync_update batch size can only be positive integer, got: {num_batch}.")
        if not isinstance(condition_name, str):
            raise type_error("condition_name", condition_name, (str,))
        notifiers = self._sync_pairs()
        if condition_name not in notifiers:
            self.disable_sync()
            raise RuntimeError(
                f"Condition name not found: {condition_name!r}; the sync_wait conditions of this pipeline are "
                f"{sorted(notifiers)}. Call sync_update on the dataset you iterate, with a sync_wait's name."
            )
        pass_rows = None if num_batch is None else int(num_batch) * self.get_batch_size()
        notifiers[condition_name].release(pass_rows, data)

    def disable_sync(self) -> None:
        """Let rows pass freely through the nearest ``sync_wait`` below (MindSpore's ``disable_sync``)."""
        for pair in self._sync_pairs().values():
            pair.disabled = True
            return

    # -- samplers (MindSpore's MappableDataset methods) ---------------------------

    def use_sampler(self, new_sampler: Any) -> None:
        """Read rows with ``new_sampler`` from now on, instead of this source's sampler (or shuffle/shards).

        As in MindSpore, this changes the dataset in place and returns None:
        the top sampler is replaced and its child, if any, stays (so on a part
        made by :meth:`split`, the new sampler samples that part's rows, e.g.
        ``train.use_sampler(ds.DistributedSampler(2, rank))`` shards it).
        Call it on the source before building a pipeline on it.

        Raises:
            TypeError: ``new_sampler`` is None or not a sampler.
            AttributeError: This dataset is not a source that reads rows by
                index (a ``map``/``batch``/... node, or a ``GeneratorDataset``
                over an iterable): call it on the source.
        """
        self._source_for_sampler("use_sampler")._install_sampler(new_sampler, replace=True)

    def add_sampler(self, new_sampler: Any) -> None:
        """Put ``new_sampler`` on top of this source's current order (in place, returns None).

        The rows the current sampler (or ``shuffle``/``num_samples``/shards)
        picks flow into ``new_sampler``, which samples them as MindSpore's
        child samplers do: ``MnistDataset(path, shuffle=False).add_sampler(ds.DistributedSampler(2, 0, shuffle=False))``
        reads every second row.

        Raises:
            TypeError: ``new_sampler`` is not a sampler.
            RuntimeError: ``new_sampler`` already has a child, or is a
                ``PKSampler`` on a ``GeneratorDataset``/``NumpySlicesDataset``.
            AttributeError: As :meth:`use_sampler`.
        """
        self._source_for_sampler("add_sampler")._install_sampler(new_sampler, replace=False)

    def _source_for_sampler(self, method: str) -> Any:
        if self._takes_sampler():
            return self
        raise AttributeError(
            f"{type(self).__name__}.{method}(): only a source that reads rows by index takes a sampler "
            f"(MnistDataset, NumpySlicesDataset, a GeneratorDataset over an object with __getitem__); call "
            f"{method} on that source before map/batch/..., or pass sampler= when creating it."
        )

    # -- introspection ---------------------------------------------------------

    def get_dataset_size(self) -> int:
        """Number of elements one epoch yields (batches after :meth:`batch`, else rows).

        Known without reading data for sources and most operations; a
        ``filter``, a callable batch size or a generator without ``__len__``
        make it run the pipeline once (global RNG states are restored after).
        Warns when the dataset is empty.
        """
        size = self._rows_per_epoch()
        if size == 0:
            warnings.warn(f"{type(self).__name__}: the dataset is empty (0 rows per epoch).", stacklevel=2)
        return size

    def _rows_per_epoch(self) -> int:
        if self._size is None:
            self._size = self._count_rows()
        return self._size

    def get_col_names(self) -> list[str]:
        """Names of the columns each element holds, in order."""
        return list(self._col_names())

    def get_batch_size(self) -> int:
        """Batch size of the last :meth:`batch` in the pipeline, 1 if there is none (-1 if callable)."""
        return self._inputs[0].get_batch_size() if self._inputs else 1  # a batch node answers for itself

    def get_repeat_count(self) -> int:
        """Count of the last :meth:`repeat` in the pipeline, 1 if there is none (-1: forever)."""
        return self._inputs[0].get_repeat_count() if self._inputs else 1  # a repeat node answers for itself

    def _first_row(self) -> list[np.ndarray]:
        with preserved_rng():
            for row in self._stream(EpochContext(self)):
                return [to_numpy(v) for v in row]
        return []

    def output_shapes(self, estimate: bool = False) -> list[list[int]]:
        """Shapes of the first element's columns (``estimate``: over all elements, varying axes None).

        An empty dataset gives ``[]``, as in MindSpore.
        """
        check_bool(estimate, "estimate")
        if not estimate:
            return [list(v.shape) for v in self._first_row()]
        shapes: list[list[int | None]] | None = None
        with preserved_rng():
            for row in self._stream(EpochContext(self)):
                current = [list(to_numpy(v).shape) for v in row]
                if shapes is None:
                    shapes = current  # type: ignore[assignment]
                    continue
                for old, new in builtins.zip(shapes, current):
                    if len(old) != len(new):
                        old[:] = [None] * len(old)
                    else:
                        old[:] = [a if a == b else None for a, b in builtins.zip(old, new)]
        return shapes or []  # type: ignore[return-value]

    def output_types(self) -> list[np.dtype]:
        """Numpy dtypes of the first element's columns (``[]`` for an empty dataset)."""
        return [v.dtype for v in self._first_row()]

    def __len__(self) -> int:
        """Same as :meth:`get_dataset_size`, without the empty-dataset warning."""
        return self._rows_per_epoch()

    # -- iteration -------------------------------------------------------------

    def _epoch(
        self, columns: Sequence[str] | None, output_numpy: bool, do_copy: bool, as_dict: bool, owner: Any = None
    ) -> Iterator[Any]:
        """Start one epoch for the user (step 1 of the iteration protocol); ``owner``: the iterator, if any."""
        ctx = EpochContext(self, self._epochs_run)
        ctx.do_copy = do_copy
        self._epochs_run += 1
        names = self.get_col_names()
        selected = list(columns) if columns is not None else names
        out = Output(selected, [names.index(c) for c in selected], output_numpy, as_dict)
        dataset_callbacks = pipeline_callbacks(self)
        if dataset_callbacks:  # one run per iterator (``owner``), else per dataset object (see .callbacks)
            holder = self if owner is None else owner
            run = holder.__dict__.get("_ds_callbacks") or CallbackRun()
            holder.__dict__["_ds_callbacks"] = run
            run.start_epoch(dataset_callbacks)
            ctx.ds_callbacks = run
            return run.epoch_rows(out(self._rows(ctx)))  # row by row: the hooks see every row
        return self._stream(ctx, out)

    def __iter__(self) -> Iterator[Row]:
        """One epoch of lists (one torch tensor per column); each call starts a new epoch."""
        return self._epoch(None, False, True, False)

    def create_tuple_iterator(
        self,
        columns: Union[str, Sequence[str], None] = None,
        num_epochs: int = -1,
        output_numpy: bool = False,
        do_copy: bool = True,
    ) -> DatasetIterator:
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
        check_known_columns(names, selected or [], "columns")
        return DatasetIterator(self, selected, num_epochs, output_numpy, do_copy, as_dict=False)

    def create_dict_iterator(
        self, num_epochs: int = -1, output_numpy: bool = False, do_copy: bool = True
    ) -> DatasetIterator:
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
        """Make the next epoch the ``epoch``-th (0-based) of the sources' shuffle sequence.

        Sharded sources draw epoch ``k``'s order from ``(seed, k)``, the same on
        every shard; ``Model`` calls this at the start of every training epoch
        of a data-parallel run, so all ranks agree on the order even if one of
        them iterated the dataset an extra time. Forwarded to the sources.
        (An nbcallback addition: MindSpore 2.3 has no ``Dataset.set_epoch``.)
        """
        for node in self._inputs:
            node.set_epoch(epoch)

    def reset(self) -> None:
        """Prepare for the next epoch (MindSpore calls this between epochs).

        Every ``for`` loop over a dataset already starts a fresh epoch and the
        cached transforms stay valid, so there is nothing to discard; this is
        kept so code written for MindSpore (or a trainer that calls it) works.
        """

    def __getattr__(self, name: str) -> Any:
        """Only reached for a missing attribute: name MindSpore's methods nbcallback lacks, and why."""
        reason = _NOT_PROVIDED.get(name)
        if reason is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        raise AttributeError(f"{type(self).__name__}.{name}() of MindSpore is not supported by nbcallback: {reason}.")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(columns={self.get_col_names()})"


def zip(datasets: tuple[Dataset, ...]) -> Dataset:  # noqa: A001 - MindSpore's name
    """``mindspore.dataset.zip``: the columns of several datasets side by side.

    Raises:
        TypeError: ``datasets`` is not a tuple of datasets.
        ValueError: Fewer than two datasets.
    """
    if not isinstance(datasets, tuple):
        raise type_error("datasets", datasets, (tuple,))
    if len(datasets) <= 1:
        raise ValueError("Can't zip empty or just one dataset!")
    for i, dataset in enumerate(datasets):
        if not isinstance(dataset, Dataset):
            raise TypeError(f"Invalid dataset, expected Dataset object but got {type(dataset)}!")
    return datasets[0].zip(datasets[1:])

