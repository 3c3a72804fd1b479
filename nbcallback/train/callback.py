"""The callback mechanism: :class:`Callback`, :class:`RunContext` and the list runner.

This reproduces MindSpore 2.3's rules (see ``mindspore.train.Callback``):

* The trainer only ever calls the ``on_train_*`` / ``on_eval_*`` hooks.  The
  base class forwards each of them to the legacy name of the same phase
  (``on_train_step_end`` and ``on_eval_step_end`` both call ``step_end``), so a
  subclass written against MindSpore 1.x keeps working, and a subclass that only
  overrides ``step_end`` sees train *and* eval steps.
* Callbacks run in list order.  The list is entered as context managers before
  the run and exited in reverse order afterwards, also when the run raises.
* ``RunContext.original_args()`` hands every callback the same mutable
  :class:`CallbackParams` dict; a value one callback stores there is visible to
  the others for the rest of the run.

This module is also MindSpore 1.x's public path ``mindspore.train.callback``:
``from nbcallback.train.callback import ModelCheckpoint, LossMonitor`` works. The
built-ins live in their own modules (which import this one); they are reached
here lazily (PEP 562 ``__getattr__``), so the names are aliases of the same
classes and importing the mechanism does not import every built-in.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import sys
import warnings
from typing import Any, Callable, Iterable, Iterator

#: The built-in callbacks, reached lazily from here (``mindspore.train.callback``'s
#: public names), with the module that defines each.
_BUILTINS = {
    "ModelCheckpoint": "nbcallback.train.checkpoint",
    "CheckpointConfig": "nbcallback.train.checkpoint",
    "LossMonitor": "nbcallback.train.loss_monitor",
    "TimeMonitor": "nbcallback.train.time_monitor",
    "SummaryCollector": "nbcallback.train.summary_collector",
    "LearningRateScheduler": "nbcallback.train.lr_scheduler",
    "History": "nbcallback.train.history",
    "LambdaCallback": "nbcallback.train.lambda_callback",
    "ReduceLROnPlateau": "nbcallback.train.reduce_lr_on_plateau",
    "EarlyStopping": "nbcallback.train.early_stopping",
    "OnRequestExit": "nbcallback.train.on_request_exit",
    "BackupAndRestore": "nbcallback.train.backup_and_restore",
    # nbcallback's own additions (not in MindSpore):
    "TerminateOnNaN": "nbcallback.train.terminate_on_nan",
    "BestCheckpoint": "nbcallback.train.best_checkpoint",
    "HookTrace": "nbcallback.train.hook_trace",
    "CallbackProfiler": "nbcallback.train.profiler",
}

__all__ = [
    "Callback",
    "CallbackParams",
    "CallbackParamError",
    "RunContext",
    "TRAIN_HOOKS",
    "EVAL_HOOKS",
    "LEGACY_HOOKS",
    *_BUILTINS,
]

#: The hooks the trainer calls during ``Model.train`` (and the training part of ``fit``).
TRAIN_HOOKS = (
    "on_train_begin",
    "on_train_epoch_begin",
    "on_train_step_begin",
    "on_train_step_end",
    "on_train_epoch_end",
    "on_train_end",
)
#: The hooks the trainer calls during ``Model.eval`` and fit's validation runs.
EVAL_HOOKS = (
    "on_eval_begin",
    "on_eval_epoch_begin",
    "on_eval_step_begin",
    "on_eval_step_end",
    "on_eval_epoch_end",
    "on_eval_end",
)
#: MindSpore 1.x names; the base class forwards the ``on_*`` hooks to them.
LEGACY_HOOKS = ("begin", "epoch_begin", "step_begin", "step_end", "epoch_end", "end")

#: ``on_*`` hook -> the legacy method its base implementation forwards to.
LEGACY_OF = {
    hook: legacy
    for hooks in (TRAIN_HOOKS, EVAL_HOOKS)
    for hook, legacy in zip(hooks, LEGACY_HOOKS)
}


class CallbackParamError(KeyError, AttributeError):
    """A key missing from :class:`CallbackParams`.

    It is both a ``KeyError`` (what MindSpore raises, so ``except KeyError`` in
    ported code still works) and an ``AttributeError`` (so ``hasattr`` and
    ``getattr(cb_params, name, default)`` behave as Python users expect).
    """

    def __str__(self) -> str:  # KeyError would print the repr of the key only
        return str(self.args[0]) if self.args else ""


class CallbackParams(dict):
    """The ``cb_params`` dict shared by all callbacks of a run, with attribute access.

    ``cb_params.cur_step_num`` and ``cb_params["cur_step_num"]`` are the same
    thing; assigning an attribute stores a key.  Which keys exist when is
    documented on :class:`nbcallback.train.Model`.
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            if name.startswith("__"):
                # Keep Python's protocols (copy, pickle, ...) working normally.
                raise AttributeError(name) from None
            available = ", ".join(sorted(map(str, self))) or "none"
            raise CallbackParamError(
                f"cb_params has no key {name!r} at this point of the run "
                f"(available: {available})"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise CallbackParamError(f"cb_params has no key {name!r}") from None

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | {k for k in self if isinstance(k, str)})


class RunContext:
    """What a callback gets on every hook: the run's parameters and a stop switch.

    Args:
        original_args: the dict shared by the callbacks of this run (a
            :class:`CallbackParams` when created by ``Model``).

    The trainer makes one ``RunContext`` per training run and a separate one for
    every evaluation run, so ``request_stop()`` during fit's validation ends that
    validation only, not the training.
    """

    __slots__ = ("_original_args", "_stop_requested")

    def __init__(self, original_args: dict) -> None:
        if not isinstance(original_args, dict):
            raise TypeError(
                "The argument 'original_args' of RunContext should be dict type, "
                f"but got {type(original_args)}."
            )
        self._original_args = original_args
        self._stop_requested = False

    def original_args(self) -> CallbackParams:
        """The shared parameter dict (``cb_params``); callbacks may add keys to it."""
        return self._original_args  # type: ignore[return-value]

    def request_stop(self) -> None:
        """Ask the trainer to stop after the current step.

        The rest of the epoch is skipped; fit's validation, ``on_train_epoch_end``
        and ``on_train_end`` still run, so checkpoints and summaries are completed.
        """
        self._stop_requested = True

    def get_stop_requested(self) -> bool:
        """Whether :meth:`request_stop` has been called on this context."""
        return self._stop_requested


class Callback:
    """Base class of everything that observes or steers a run.

    Override the hooks you need; each takes the :class:`RunContext` and returns
    nothing.  Training calls ``on_train_begin``, then per epoch
    ``on_train_epoch_begin``, per step ``on_train_step_begin`` /
    ``on_train_step_end``, then ``on_train_epoch_end``, and finally
    ``on_train_end``.  Evaluation calls the ``on_eval_*`` hooks in the same
    pattern.

    The base implementation of every ``on_*`` hook calls the MindSpore 1.x
    method of the same phase (``begin``, ``epoch_begin``, ``step_begin``,
    ``step_end``, ``epoch_end``, ``end``), which do nothing by default.  So a
    class that overrides ``step_end`` is called after every train **and** eval
    step; override ``on_train_step_end`` to see training steps only.  ``Model.fit``
    refuses custom callbacks that define the legacy names (MindSpore does too),
    because their eval-phase calls would mix validation steps into training logic.

    A callback is also a context manager: the trainer enters every callback before
    the run and exits them in reverse order afterwards, also when the run fails.
    Acquire resources (files, writers, signal handlers) in ``__enter__`` and
    release them in ``__exit__``.  ``__exit__`` must not swallow exceptions unless
    it means to: a truthy return value suppresses the error, as ``contextlib.ExitStack``
    does.

    Example (the ``mindspore.train.Callback`` docstring example)::

        class Print_info(Callback):
            def step_end(self, run_context):
                cb_params = run_context.original_args()
                print("step_num: ", cb_params.cur_step_num)
    """

    def __enter__(self) -> "Callback":
        return self

    def __exit__(self, *exc_info: object) -> bool | None:
        return None

    # Legacy (MindSpore 1.x) hooks: empty by default.
    def begin(self, run_context: RunContext) -> None:
        """Called once before the network runs (train or eval)."""

    def epoch_begin(self, run_context: RunContext) -> None:
        """Called before each epoch (train or eval)."""

    def epoch_end(self, run_context: RunContext) -> None:
        """Called after each epoch (train or eval)."""

    def step_begin(self, run_context: RunContext) -> None:
        """Called before each step (train or eval)."""

    def step_end(self, run_context: RunContext) -> None:
        """Called after each step (train or eval)."""

    def end(self, run_context: RunContext) -> None:
        """Called once after the run (train or eval)."""

    # Training hooks.
    def on_train_begin(self, run_context: RunContext) -> None:
        """Called once before training starts. Defaults to :meth:`begin`."""
        self.begin(run_context)

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        """Called before each training epoch. Defaults to :meth:`epoch_begin`."""
        self.epoch_begin(run_context)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        """Called after each training epoch (after fit's validation, when it runs).

        Defaults to :meth:`epoch_end`.
        """
        self.epoch_end(run_context)

    def on_train_step_begin(self, run_context: RunContext) -> None:
        """Called before each training step. Defaults to :meth:`step_begin`."""
        self.step_begin(run_context)

    def on_train_step_end(self, run_context: RunContext) -> None:
        """Called after each training step. Defaults to :meth:`step_end`."""
        self.step_end(run_context)

    def on_train_end(self, run_context: RunContext) -> None:
        """Called once after training, also after ``request_stop()``. Defaults to :meth:`end`.

        As in MindSpore, it is *not* called when the run raises (an error in a step or a
        callback, ``KeyboardInterrupt``): ``__exit__`` is, so release resources there.
        """
        self.end(run_context)

    # Evaluation hooks.
    def on_eval_begin(self, run_context: RunContext) -> None:
        """Called once before evaluation starts. Defaults to :meth:`begin`."""
        self.begin(run_context)

    def on_eval_epoch_begin(self, run_context: RunContext) -> None:
        """Called before the evaluation pass. Defaults to :meth:`epoch_begin`."""
        self.epoch_begin(run_context)

    def on_eval_epoch_end(self, run_context: RunContext) -> None:
        """Called after the evaluation pass. Defaults to :meth:`epoch_end`."""
        self.epoch_end(run_context)

    def on_eval_step_begin(self, run_context: RunContext) -> None:
        """Called before each evaluation step. Defaults to :meth:`step_begin`."""
        self.step_begin(run_context)

    def on_eval_step_end(self, run_context: RunContext) -> None:
        """Called after each evaluation step. Defaults to :meth:`step_end`."""
        self.step_end(run_context)

    def on_eval_end(self, run_context: RunContext) -> None:
        """Called once after evaluation; ``cb_params.metrics`` is set. Defaults to :meth:`end`.

        Not called when the evaluation raises (``__exit__`` is).
        """
        self.end(run_context)


def _training_only(self: Callback, run_context: RunContext) -> None:
    """Does nothing: this built-in acts on training only (see :class:`BuiltinCallback`)."""


_training_only.nb_noop = True  # type: ignore[attr-defined]


class BuiltinCallback(Callback):
    """Base of the built-ins that implement MindSpore's legacy names (``step_end``, ``end`` …).

    As in MindSpore, such a built-in defines the legacy method (``LossMonitor.step_end``,
    ``ModelCheckpoint.step_end`` / ``end``, ``History.begin`` / ``epoch_end`` …) and the
    trainer reaches it through :class:`Callback`'s forwarding (``on_train_step_end`` calls
    ``step_end``). So calling ``step_end(run_context)`` directly does what a training step
    does, and a subclass that overrides ``step_end`` and calls ``super().step_end(run_context)``
    keeps the built-in's printing or saving.

    Difference from MindSpore, on purpose: the ``on_eval_*`` hooks of these built-ins do
    nothing. In MindSpore they forward to the same legacy methods, so
    ``Model.eval(ds, callbacks=[LossMonitor()])`` prints evaluation losses as if they were
    training steps, ``ModelCheckpoint`` fails on the missing ``train_network`` and ``History``
    records the evaluation as a training epoch. (``Model.fit`` never gives them eval hooks,
    in MindSpore either.)
    """

    on_eval_begin = _training_only
    on_eval_epoch_begin = _training_only
    on_eval_step_begin = _training_only
    on_eval_step_end = _training_only
    on_eval_epoch_end = _training_only
    on_eval_end = _training_only


def _describe(callback: object) -> str:
    return type(callback).__qualname__


def _note(exc: BaseException, text: str) -> None:
    """Attach ``text`` to ``exc`` without changing its type (PEP 678 notes)."""
    if hasattr(exc, "add_note"):
        exc.add_note(text)
    else:  # Python 3.10: keep the information where tools look for it.
        exc.__notes__ = [*getattr(exc, "__notes__", []), text]  # type: ignore[attr-defined]


def _is_noop(callback: Callback, hook: str) -> bool:
    """True when calling ``hook`` on ``callback`` would only reach the empty base methods."""
    method = getattr(callback, hook)
    func = getattr(method, "__func__", None)
    if getattr(func, "nb_noop", False):
        return True
    if func is not getattr(Callback, hook):
        return False
    legacy = getattr(callback, LEGACY_OF[hook])
    return getattr(legacy, "__func__", None) is getattr(Callback, LEGACY_OF[hook])


class CallbackManager(Callback):
    """Runs a list of callbacks in order; itself a :class:`Callback`.

    Args:
        callbacks: ``None``, one :class:`Callback`, or a list/tuple of them.

    Raises:
        TypeError: an element is not a ``Callback`` (the message names it).

    Dispatch skips callbacks whose hook would only reach the empty base methods;
    that is invisible to callbacks and keeps a long list cheap on every step: a
    callback without step hooks is never called per step.
    An exception raised by a callback propagates unchanged, with a note naming
    the callback class and the hook.
    """

    def __init__(self, callbacks: Callback | Iterable[Callback] | None) -> None:
        self._callbacks: list[Callback] = normalize_callbacks(callbacks)
        self._stack: contextlib.ExitStack | None = None
        self._dispatch: dict[str, list[tuple[Callback, Callable[[RunContext], None]]]] = {}
        self._build_dispatch()

    @property
    def callbacks(self) -> list[Callback]:
        """The managed callbacks, in call order."""
        return self._callbacks

    def __iter__(self) -> Iterator[Callback]:
        return iter(self._callbacks)

    def __len__(self) -> int:
        return len(self._callbacks)

    def __enter__(self) -> "CallbackManager":
        if self._stack is None:
            self._stack = contextlib.ExitStack()
            entered: list[Callback] = []
            try:
                for callback in self._callbacks:
                    target = self._stack.enter_context(callback)
                    if not isinstance(target, Callback):
                        warnings.warn(
                            f"{_describe(callback)}.__enter__ returned {type(target).__name__}; "
                            "please return 'self' or a Callback as the enter target.",
                            stacklevel=2,
                        )
                        target = callback
                    entered.append(target)
            except BaseException:
                stack, self._stack = self._stack, None
                # Exit the callbacks already entered with the error, as a failing run does
                # (close() would tell them the run ended normally); the error always propagates.
                stack.__exit__(*sys.exc_info())
                raise
            self._callbacks = entered
            self._build_dispatch()
            for callback in entered:  # a seam for CallbackProfiler: it times the others' hooks
                instrument = getattr(type(callback), "_instrument_dispatch", None)
                if instrument is not None:
                    self._dispatch = instrument(callback, self._dispatch)
        return self

    def __exit__(self, *exc_info: Any) -> bool | None:
        if self._stack is None:
            return None
        stack, self._stack = self._stack, None
        return stack.__exit__(*exc_info)

    def _build_dispatch(self) -> None:
        self._dispatch = {
            hook: [(cb, getattr(cb, hook)) for cb in self._callbacks if not _is_noop(cb, hook)]
            for hook in TRAIN_HOOKS + EVAL_HOOKS
        }

    def _run(self, hook: str, run_context: RunContext) -> None:
        for callback, method in self._dispatch[hook]:
            try:
                method(run_context)
            except BaseException as exc:
                _note(exc, f"raised in callback {_describe(callback)}.{hook}")
                raise

    def has_hook(self, hook: str) -> bool:
        """Whether any managed callback does something on ``hook``."""
        return bool(self._dispatch[hook])

    def runner(self, hook: str) -> Callable[[RunContext], None] | None:
        """What the trainer calls on every step: runs ``hook`` as ``getattr(self, hook)`` does.

        ``None`` when no callback acts on ``hook``, so the trainer skips the call.
        Ask after entering the manager (the callbacks and the dispatch are final then).
        """
        return functools.partial(self._run, hook) if self._dispatch[hook] else None

    def _run_legacy(self, name: str, run_context: RunContext) -> None:
        for callback in self._callbacks:
            try:
                getattr(callback, name)(run_context)
            except BaseException as exc:
                _note(exc, f"raised in callback {_describe(callback)}.{name}")
                raise

    # The legacy names, as MindSpore's manager has them: each calls the same name on every
    # callback in order (the trainer itself only calls the on_* hooks).
    def begin(self, run_context: RunContext) -> None:
        self._run_legacy("begin", run_context)

    def epoch_begin(self, run_context: RunContext) -> None:
        self._run_legacy("epoch_begin", run_context)

    def step_begin(self, run_context: RunContext) -> None:
        self._run_legacy("step_begin", run_context)

    def step_end(self, run_context: RunContext) -> None:
        self._run_legacy("step_end", run_context)

    def epoch_end(self, run_context: RunContext) -> None:
        self._run_legacy("epoch_end", run_context)

    def end(self, run_context: RunContext) -> None:
        self._run_legacy("end", run_context)

    def on_train_begin(self, run_context: RunContext) -> None:
        self._run("on_train_begin", run_context)

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self._run("on_train_epoch_begin", run_context)

    def on_train_step_begin(self, run_context: RunContext) -> None:
        self._run("on_train_step_begin", run_context)

    def on_train_step_end(self, run_context: RunContext) -> None:
        self._run("on_train_step_end", run_context)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        self._run("on_train_epoch_end", run_context)

    def on_train_end(self, run_context: RunContext) -> None:
        self._run("on_train_end", run_context)

    def on_eval_begin(self, run_context: RunContext) -> None:
        self._run("on_eval_begin", run_context)

    def on_eval_epoch_begin(self, run_context: RunContext) -> None:
        self._run("on_eval_epoch_begin", run_context)

    def on_eval_step_begin(self, run_context: RunContext) -> None:
        self._run("on_eval_step_begin", run_context)

    def on_eval_step_end(self, run_context: RunContext) -> None:
        self._run("on_eval_step_end", run_context)

    def on_eval_epoch_end(self, run_context: RunContext) -> None:
        self._run("on_eval_epoch_end", run_context)

    def on_eval_end(self, run_context: RunContext) -> None:
        self._run("on_eval_end", run_context)


def normalize_callbacks(callbacks: Callback | Iterable[Callback] | None) -> list[Callback]:
    """Turn the user's ``callbacks`` argument into a new list, validating each element.

    Raises:
        TypeError: naming the offending element and its position.
    """
    if callbacks is None:
        return []
    if isinstance(callbacks, Callback):
        return [callbacks]
    if isinstance(callbacks, (list, tuple)):
        result = list(callbacks)
        for index, callback in enumerate(result):
            if not isinstance(callback, Callback):
                hint = ""
                if isinstance(callback, type) and issubclass(callback, Callback):
                    hint = f"; did you mean {callback.__name__}() (an instance)?"
                raise TypeError(
                    "When the 'callbacks' is a list, the elements in 'callbacks' must be "
                    f"Callback functions, but element {index} is {callback!r} "
                    f"of type {type(callback).__name__}{hint}"
                )
        return result
    raise TypeError(
        "The 'callbacks' is not a Callback or a list of Callback, "
        f"but got {callbacks!r} of type {type(callbacks).__name__}."
    )


#: MindSpore's private names for the same classes (``mindspore.train.callback._CallbackManager``,
#: ``_InternalCallbackParam``), used by code and tests written against MindSpore.
_CallbackManager = CallbackManager
_InternalCallbackParam = CallbackParams


def __getattr__(name: str) -> Any:
    """The built-in callbacks, imported on first use (they import this module)."""
    module_name = _BUILTINS.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_BUILTINS))
