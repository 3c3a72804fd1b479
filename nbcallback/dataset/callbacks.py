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

**Threads (where nbcallback differs).** MindSpore runs the pipeline in its own
threads, so :class:`WaitedDSCallback` waits on a ``threading.Event`` (at most
``config.get_callback_timeout()`` seconds) until training has finished the
previous step or epoch. nbcallback's pipeline runs lazily in the thread that
iterates it -- the training loop -- so the next row is only produced when
``Model`` asks for it, after the previous step's callbacks ran: there is
nothing to wait for, and no thread or event is used. When the previous step
has *not* ended (a ``step_size`` other than the number of rows per training
step, or ``Model(prefetch=True)``, which reads one batch ahead), waiting could
never succeed; MindSpore times out, nbcallback raises the RuntimeError at once.
A pipeline iterated outside ``Model`` (no training has begun) runs without
calling ``sync_epoch_begin``/``sync_step_begin``: there is no training context
to hand them. After training ended (also after ``request_stop()``) they are
called without waiting, with the last training context, as in MindSpore.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from nbcallback.train.callback import Callback, RunContext

from ._validate import INT32_MAX, check_int, type_error

if TYPE_CHECKING:
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


class WaitedDSCallback(Callback, DSCallback):
    """A dataset callback synchronised with training (``mindspore.dataset.WaitedDSCallback``).

    Pass the *same* object to ``Dataset.map(..., callbacks=...)`` and to
    ``Model.train``/``fit(callbacks=...)``. Before the pipeline produces the
    next epoch (or step), after training finished the previous one, it calls
    ``sync_epoch_begin(train_run_context, ds_run_context)`` (or
    ``sync_step_begin``): ``train_run_context`` is the training
    :class:`~nbcallback.train.RunContext` of that epoch's (step's) end, so
    ``train_run_context.original_args().net_outputs`` is its last loss. As in
    MindSpore, the calls happen from the second epoch (step) on. Typical use:
    change augmentation parameters from the last epoch's loss.

    Args:
        step_size: Rows per step, normally the batch size when the ``map`` comes
            before ``batch`` (1 when it comes after).

    Raises:
        RuntimeError: When the pipeline is asked for the next step before training
            ended the previous one (``step_size`` not the rows per training step,
            or ``Model(prefetch=True)``); MindSpore waits ``callback_timeout`` seconds
            and raises, nbcallback raises at once (see the module docstring).
        AttributeError: When the pipeline runs, if neither ``sync_epoch_begin``
            nor ``sync_step_begin`` is overridden.

    Where nbcallback differs: no thread or event is used (the pipeline runs in the
    training thread); outside ``Model`` the ``sync_*`` hooks are not called; the
    evaluation of ``Model.fit`` does not count as a training step or end.
    """

    def __init__(self, step_size: int = 1) -> None:
        DSCallback.__init__(self, step_size)
        self.step_run_context: RunContext | None = None
        self.epoch_run_context: RunContext | None = None
        self.training_ended = False
        self._training = False
        self._step_done = False
        self._epoch_done = False
        self._train_runs = 0  # incremented at each training begin: the pipeline starts a new run

    def sync_epoch_begin(self, train_run_context: Any, ds_run_context: DSRunContext) -> None:
        """Called before the pipeline starts an epoch (from the second on), after training ended the previous one."""

    def sync_step_begin(self, train_run_context: Any, ds_run_context: DSRunContext) -> None:
        """Called before the pipeline produces a step (from the second on), after training ended the previous one."""

    # -- the training side (called by Model through Callback's hooks) ----------------

    def begin(self, run_context: RunContext) -> None:
        """Internal: training begins; the pipeline's next epoch starts a new run."""
        self._training = True
        self.training_ended = False
        self._step_done = self._epoch_done = False
        self._train_runs += 1

    def step_end(self, run_context: RunContext) -> None:
        """Internal: training ended a step; the pipeline may produce the next one."""
        self.step_run_context = run_context
        self._step_done = True

    def epoch_end(self, run_context: RunContext) -> None:
        """Internal: training ended an epoch; the pipeline may start the next one."""
        self.epoch_run_context = run_context
        self._epoch_done = True

    def end(self, run_context: RunContext) -> None:
        """Internal: training ended (also after ``request_stop()``); the pipeline no longer waits."""
        self.epoch_end(run_context)
        self.step_end(run_context)
        self.training_ended = True
        self._training = False

    # Evaluation (Model.eval, fit's validation) is neither a training step nor its end.
    def on_eval_begin(self, run_context: RunContext) -> None:
        """Does nothing: evaluation does not synchronise the training pipeline."""

    def on_eval_epoch_begin(self, run_context: RunContext) -> None:
        """Does nothing: evaluation does not synchronise the training pipeline."""

    def on_eval_epoch_end(self, run_context: RunContext) -> None:
        """Does nothing: evaluation does not synchronise the training pipeline."""

    def on_eval_step_begin(self, run_context: RunContext) -> None:
        """Does nothing: evaluation does not synchronise the training pipeline."""

    def on_eval_step_end(self, run_context: RunContext) -> None:
        """Does nothing: evaluation does not synchronise the training pipeline."""

    def on_eval_end(self, run_context: RunContext) -> None:
        """Does nothing: evaluation does not synchronise the training pipeline."""

    # -- the pipeline side ---------------------------------------------------------

    def ds_epoch_begin(self, ds_run_context: DSRunContext) -> None:
        """Internal: calls :meth:`sync_epoch_begin` from the second epoch on, once training ended the previous one."""
        if ds_run_context.cur_epoch_num > 1 and self._ready("epoch", ds_run_context):
            self.sync_epoch_begin(self.epoch_run_context, ds_run_context)

    def ds_step_begin(self, ds_run_context: DSRunContext) -> None:
        """Internal: calls :meth:`sync_step_begin` from the second step on, once training ended the previous one."""
        if ds_run_context.cur_step_num > self.step_size and self._ready("step", ds_run_context):
            self.sync_step_begin(self.step_run_context, ds_run_context)

    def _ready(self, what: str, ds_run_context: DSRunContext) -> bool:
        """Whether to call the ``sync_*`` hook now; consumes the training side's signal."""
        if self.training_ended:
            return True
        if not self._training:
            return False  # the pipeline runs outside Model: no training context to synchronise with
        flag = f"_{what}_done"
        if getattr(self, flag):
            setattr(self, flag, False)
            return True
        number = ds_run_context.cur_epoch_num if what == "epoch" else ds_run_context.cur_step_num
        raise RuntimeError(
            f"ds_{what}_begin of {type(self).__name__}: the pipeline was asked for {what} {number} before "
            f"training ended the previous {what}, so it would wait forever (MindSpore times out after "
            f"config.get_callback_timeout() seconds). Set step_size to the rows of one training step "
            f"(the batch size when the map comes before batch; now {self.step_size}), and train with "
            f"Model(prefetch=False), which reads no batch ahead."
        )

    def _ds_hooks(self) -> dict[str, Callable[[DSRunContext], None]]:
        cls = type(self)
        hooks: dict[str, Callable[[DSRunContext], None]] = {}
        if cls.sync_epoch_begin is not WaitedDSCallback.sync_epoch_begin:
            hooks["ds_epoch_begin"] = self.ds_epoch_begin
        if cls.sync_step_begin is not WaitedDSCallback.sync_step_begin:
            hooks["ds_step_begin"] = self.ds_step_begin
        if not hooks:
            raise AttributeError(
                f"{cls.__name__}: Provided Callback class did not override any of the 6 callback methods. "
                f"A WaitedDSCallback overrides sync_epoch_begin and/or sync_step_begin."
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

    def start_epoch(self, waited: Sequence[WaitedDSCallback] = ()) -> None:
        """A new top-level epoch; a training that began since the last one starts a new run."""
        runs = {id(cb): cb._train_runs for cb in waited}
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
