"""Dataset callbacks (``mindspore.dataset.DSCallback`` / ``WaitedDSCallback``).

A :class:`DSCallback` given to ``Dataset.map(..., callbacks=...)`` is called by
that ``map`` as rows pass through it:

* ``ds_begin`` once, when the pipeline first runs (context ``0, 0, 0``);
* ``ds_epoch_begin`` when the map receives the first row of an epoch
  (``cur_step_num_in_epoch`` 0);
* ``ds_step_begin`` / ``ds_step_end`` around the map's work on a row, every
  ``step_size`` rows (rows 1, 1 + step_size, ... of each epoch);
* ``ds_epoch_end`` when the epoch ends.

A *step* is a row through the map (a map after ``batch`` sees batches), counted
over every ``repeat`` of an epoch; ``cur_step_num`` counts on over epochs.
Introspection (``get_dataset_size``, ``output_shapes`` ...) never calls them.

**Epochs and runs.** As in MindSpore, an iterator (``create_tuple_iterator`` /
``create_dict_iterator``) is one run: ``ds_begin`` once, epochs numbered from 1.
``for row in dataset`` and ``Model.train``/``fit`` (which iterate the dataset
once per epoch) share one run per dataset object, so its epochs number on;
a new ``Model.train``/``fit`` with a :class:`WaitedDSCallback` in the pipeline
starts a new run (``ds_begin`` again, epoch 1), as MindSpore's new iterator does.

:class:`WaitedDSCallback` lives in :mod:`._waited` and is imported when first
used (it subclasses ``nbcallback.train.Callback``; the rest of the dataset
package does not import ``nbcallback.train``).

**Threads.** As in MindSpore, a :class:`WaitedDSCallback` waits on a
``threading.Event`` (at most ``config.get_callback_timeout()`` seconds, then
``RuntimeError("ds_step_begin timed out after ... second(s).")``) until
training has ended the previous step or epoch. nbcallback's pipeline runs
lazily in the thread that iterates it. Inside ``Model`` that is the training
thread, so the next row is only produced when ``Model`` asks for it, after the
previous step's callbacks ran: the event is already set and nothing waits.
A pipeline iterated in another thread (a consumer thread, while training or
your code calls ``step_end``/``epoch_end``/``end`` in this one) waits as in
MindSpore.

Where nbcallback differs: where the waiting thread is the one that would set
the event, waiting could never end, and the RuntimeError comes at once,
quoting MindSpore's message and naming the fix. That is the thread running the
callback's training when a step is asked for before training ended the
previous one (a ``step_size`` other than the rows per training step, or
``Model(prefetch=True)``, which reads one batch ahead), and, while no training
with the callback has begun, the thread that made the callback (the pipeline
iterated without training, or a ``Model.train`` whose callbacks lack it).
After training ended (also after ``request_stop()``) the ``sync_*`` hooks are
called without waiting, with the last training context, as in MindSpore.

``from nbcallback.dataset.callback import DSCallback, WaitedDSCallback`` is
MindSpore's ``mindspore.dataset.callback`` import.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from ._validate import INT32_MAX, check_int, type_error

if TYPE_CHECKING:
    from ._waited import WaitedDSCallback
    from .iterators import Row

__all__ = ["DSCallback", "DSRunContext", "WaitedDSCallback"]

_DS_HOOKS = ("ds_begin", "ds_epoch_begin", "ds_epoch_end", "ds_step_begin", "ds_step_end")


class DSRunContext:
    """What a dataset callback hook receives (MindSpore's ``ds_run_context``).

    Attributes:
        cur_epoch_num: 1-based epoch of the run (0 in ``ds_begin``).
        cur_step_num_in_epoch: 1-based step within the epoch (0 before its first step).
        cur_step_num: 1-based step counted over the whole run.
    """

    __slots__ = ("cur_epoch_num", "cur_step_num_in_epoch", "cur_step_num")

    def __init__(self, cur_epoch_num: int = 0, cur_step_num_in_epoch: int = 0, cur_step_num: int = 0) -> None:
        self.cur_epoch_num = cur_epoch_num
        self.cur_step_num_in_epoch = cur_step_num_in_epoch
        self.cur_step_num = cur_step_num

    def __repr__(self) -> str:
        return (
            f"DSRunContext(cur_epoch_num={self.cur_epoch_num}, "
            f"cur_step_num_in_epoch={self.cur_step_num_in_epoch}, cur_step_num={self.cur_step_num})"
        )


class DSCallback:
    """Base class of dataset callbacks (``mindspore.dataset.DSCallback``).

    Subclass it, override the hooks you need and pass an instance to
    ``Dataset.map(..., callbacks=...)``. Each hook receives a
    :class:`DSRunContext`. See :mod:`nbcallback.dataset.callbacks` for when each
    hook is called.

    Args:
        step_size: Rows between two ``ds_step_begin``/``ds_step_end`` calls; 1 calls
            them for every row.

    Raises:
        TypeError: ``step_size`` is not an int.
        ValueError: ``step_size`` is not in ``[1, 2147483647]``.
        AttributeError: When the pipeline runs, if the subclass overrides none of the hooks.

    Example::

        class PrintInfo(DSCallback):
            def ds_epoch_end(self, ds_run_context):
                print(ds_run_context.cur_epoch_num, ds_run_context.cur_step_num)

        dataset = dataset.map(operations=lambda x: x, callbacks=PrintInfo())
    """

    def __init__(self, step_size: int = 1) -> None:
        self.step_size = check_int(step_size, "step_size", 1, INT32_MAX)

    def ds_begin(self, ds_run_context: DSRunContext) -> None:
        """Called once, before the pipeline produces its first row."""

    def ds_epoch_begin(self, ds_run_context: DSRunContext) -> None:
        """Called when an epoch starts."""

    def ds_epoch_end(self, ds_run_context: DSRunContext) -> None:
        """Called after an epoch's last row."""

    def ds_step_begin(self, ds_run_context: DSRunContext) -> None:
        """Called before the map works on a row (every ``step_size`` rows)."""

    def ds_step_end(self, ds_run_context: DSRunContext) -> None:
        """Called after the map worked on a row (every ``step_size`` rows)."""

    def _ds_hooks(self) -> dict[str, Callable[[DSRunContext], None]]:
        """The hooks the pipeline calls: those the subclass overrides (MindSpore's ``create_runtime_obj``)."""
        cls = type(self)
        hooks = {name: getattr(self, name) for name in _DS_HOOKS if getattr(cls, name) is not getattr(DSCallback, name)}
        if not hooks:
            raise AttributeError(
                f"{cls.__name__}: Provided Callback class did not override any of the 6 callback methods. "
                f"Override at least one of {', '.join(_DS_HOOKS)}."
            )
        return hooks


def check_callbacks(callbacks: Any) -> tuple[DSCallback, ...]:
    """The ``callbacks`` argument of ``map`` as a tuple: None, one DSCallback or a list of them (MindSpore's check)."""
    if callbacks is None:
        return ()
    if isinstance(callbacks, DSCallback):
        return (callbacks,)
    if isinstance(callbacks, list):
        for i, callback in enumerate(callbacks):
            if not isinstance(callback, DSCallback):
                raise type_error(f"callbacks[{i}]", callback, (DSCallback,))
        return tuple(callbacks)
    raise type_error("callbacks", callbacks, (list, DSCallback))


# --------------------------------------------------------------------------- the pipeline's side


class _MapHooks:
    """The callbacks of one ``map`` node in one run: its step counters and the hooks to call."""

    def __init__(self, callbacks: Sequence[DSCallback]) -> None:
        self.entries = [(cb.step_size, cb._ds_hooks()) for cb in callbacks]
        self.epoch = 0
        self.step_in_epoch = 0
        self.step = 0

    def _call(self, hook: str, context: DSRunContext, stepped: bool = False) -> None:
        for step_size, hooks in self.entries:
            fn = hooks.get(hook)
            if fn is not None and (not stepped or (context.cur_step_num_in_epoch - 1) % step_size == 0):
                fn(context)

    def begin(self) -> None:
        self._call("ds_begin", DSRunContext(0, 0, 0))

    def epoch_begin(self, epoch: int) -> None:
        self.epoch = epoch
        self.step_in_epoch = 0
        self._call("ds_epoch_begin", DSRunContext(epoch, 0, self.step))

    def epoch_end(self) -> None:
        self._call("ds_epoch_end", DSRunContext(self.epoch, self.step_in_epoch, self.step))


class CallbackRun:
    """The dataset callbacks' state for one run of a pipeline (MindSpore: one iterator).

    The top-level epoch calls :meth:`start_epoch` / :meth:`end_epoch`; each ``map``
    with callbacks wraps its rows with :meth:`map_rows`.
    """

    def __init__(self) -> None:
        self.epoch = 0
        self._maps: dict[int, _MapHooks] = {}
        self._started: list[_MapHooks] = []  # maps whose epoch began, in that order
        self._train_runs: dict[int, int] = {}

    def start_epoch(self, callbacks: Sequence[DSCallback] = ()) -> None:
        """A new top-level epoch; a training that began (a WaitedDSCallback's ``begin``) since the last one starts a new run."""
        runs = {id(cb): cb._train_runs for cb in callbacks if hasattr(cb, "_train_runs")}
        if any(self._train_runs.get(key, 0) != value for key, value in runs.items()) and self.epoch:
            self.epoch = 0
            self._maps.clear()
        self._train_runs = runs
        self.epoch += 1
        self._started = []

    def end_epoch(self) -> None:
        """The top-level epoch ended: ``ds_epoch_end`` of every map that ran in it."""
        started, self._started = self._started, []
        for hooks in started:
            hooks.epoch_end()

    def epoch_rows(self, stream: Iterator[Any]) -> Iterator[Any]:
        """The top-level stream of one epoch, ending the epoch after its last element."""
        yield from stream
        self.end_epoch()

    def map_rows(self, node: Any, callbacks: Sequence[DSCallback], body: Callable[[Iterator["Row"]], Iterator["Row"]], stream: Iterator["Row"]) -> Iterator["Row"]:
        """``body`` (the map's work) over ``stream``, with the hooks of ``callbacks`` around each row."""
        hooks = self._maps.get(id(node))
        if hooks is None:
            hooks = self._maps[id(node)] = _MapHooks(callbacks)
            hooks.begin()
        return self._after(hooks, body(self._before(hooks, stream)))

    def _before(self, hooks: _MapHooks, stream: Iterator["Row"]) -> Iterator["Row"]:
        for row in stream:
            if hooks.epoch != self.epoch:
                hooks.epoch_begin(self.epoch)
                self._started.append(hooks)
            hooks.step_in_epoch += 1
            hooks.step += 1
            hooks._call("ds_step_begin", DSRunContext(self.epoch, hooks.step_in_epoch, hooks.step), stepped=True)
            yield row

    @staticmethod
    def _after(hooks: _MapHooks, stream: Iterator["Row"]) -> Iterator["Row"]:
        for row in stream:
            hooks._call("ds_step_end", DSRunContext(hooks.epoch, hooks.step_in_epoch, hooks.step), stepped=True)
            yield row


def pipeline_callbacks(dataset: Any) -> list[DSCallback]:
    """Every dataset callback of the maps in ``dataset``'s pipeline (empty for most pipelines)."""
    found: list[DSCallback] = []
    stack, seen = [dataset], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        found.extend(getattr(node, "_callbacks", ()))
        stack.extend(node._inputs)
    return found


def __getattr__(name: str) -> Any:
    """``WaitedDSCallback`` on first use (it imports ``nbcallback.train``)."""
    if name == "WaitedDSCallback":
        from ._waited import WaitedDSCallback

        return WaitedDSCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
