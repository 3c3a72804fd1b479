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

The seams between the loop and the callbacks are declared here, once, as
documented methods: the hooks (``on_train_*``, ``on_eval_*``, and nbcallback's
:meth:`Callback.on_train_backward_end` and :meth:`Callback.on_train_exception`),
:meth:`Callback.instrument_hooks`, and the requests a callback makes through its
:class:`RunContext` (:meth:`~RunContext.request_stop`, :meth:`~RunContext.resume_at`,
:meth:`~RunContext.skip_optimizer_step`). Which callbacks receive fit's
validation hooks is :func:`receives_fit_eval_hooks`.

This module is also MindSpore 1.x's public path ``mindspore.train.callback``:
``from nbcallback.train.callback import ModelCheckpoint, LossMonitor`` works. The
built-ins live in their own modules (which import this one); every callback class
that ``nbcallback.train`` exports (and ``CheckpointConfig``) is reached here
lazily (PEP 562 ``__getattr__``), so the names are aliases of the same classes
and a new built-in needs no entry in this module.
"""
from __future__ import annotations

import contextlib
import functools
import sys
import warnings
from typing import Any, Callable, Iterable, Iterator, Mapping

#: The names of the mechanism itself; ``__all__`` adds the built-in callbacks (see ``__getattr__``).
_MECHANISM = (
    "Callback",
    "CallbackParams",
    "CallbackParamError",
    "RunContext",
    "TRAIN_HOOKS",
    "EVAL_HOOKS",
    "LEGACY_HOOKS",
    "INTERNAL_CALLBACK_NAMES",
    "receives_fit_eval_hooks",
)

#: Class names MindSpore treats as its own callbacks (``mindspore.train.callback.__all__``).
#: In ``fit``, only callbacks whose class name is *not* here (plus ``TimeMonitor``)
#: receive the ``on_eval_*`` hooks of the validation runs (:func:`receives_fit_eval_hooks`).
INTERNAL_CALLBACK_NAMES = frozenset(
    {
        "Callback", "LossMonitor", "TimeMonitor", "ModelCheckpoint", "SummaryCollector",
        "CheckpointConfig", "RunContext", "LearningRateScheduler", "SummaryLandscape", "History",
        "LambdaCallback", "ReduceLROnPlateau", "EarlyStopping", "OnRequestExit", "BackupAndRestore",
    }
)

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
#: nbcallback's hook between ``backward`` and the optimizer step (MindSpore has none): see
#: :meth:`Callback.on_train_backward_end`. Not in :data:`TRAIN_HOOKS`, which are MindSpore's six.
BACKWARD_HOOK = "on_train_backward_end"
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

    Besides :meth:`request_stop` (MindSpore's), a callback may ask the training loop
    for two things nbcallback adds: :meth:`resume_at` (continue an earlier run,
    from ``on_train_begin``) and :meth:`skip_optimizer_step` (from
    :meth:`Callback.on_train_backward_end`).
    """

    __slots__ = ("_original_args", "_stop_requested", "_resume", "_skip_step")

    def __init__(self, original_args: dict) -> None:
        if not isinstance(original_args, dict):
            raise TypeError(
                "The argument 'original_args' of RunContext should be dict type, "
                f"but got {type(original_args)}."
            )
        self._original_args = original_args
        self._stop_requested = False
        self._resume: dict[str, Any] | None = None
        self._skip_step = False

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

    def resume_at(
        self,
        epoch: int,
        step_in_epoch: int = 0,
        cur_step_num: int = 0,
        after_skip: Callable[[], None] | None = None,
    ) -> None:
        """Ask the training loop to continue an earlier run instead of starting at its first epoch.

        Args:
            epoch: the 0-based index of the epoch to enter (the number of epochs
                already complete); within ``initial_epoch .. epoch`` of the call.
            step_in_epoch: batches of that epoch already trained: the loop draws
                and drops them without running any hook.
            cur_step_num: the global step counter to continue from.
            after_skip: called once those batches are dropped (e.g. to restore the
                random-number state of that moment).

        Valid in ``on_train_begin`` only (the loop reads the request right after
        it); a later call does nothing. The loop raises ``ValueError`` (``Cannot
        resume …``) for a point outside the run. :class:`~nbcallback.train.BackupAndRestore`
        uses it; an nbcallback addition (MindSpore's resume only reloads weights).
        """
        self._resume = {
            "epoch": epoch,
            "step_in_epoch": step_in_epoch,
            "cur_step_num": cur_step_num,
            "after_skip": after_skip,
        }

    def skip_optimizer_step(self) -> None:
        """Skip this step's ``optimizer.step()`` and keep the gradients for the next step.

        Valid in :meth:`Callback.on_train_backward_end`. The step's gradients stay
        in ``param.grad`` and the next step's backward adds to them (its
        ``zero_grad`` is skipped too): gradient accumulation. The loss of the step
        is still ``cb_params.net_outputs`` and every other hook runs as usual.
        Under float16 loss scaling (``amp_level='O1'`` on CUDA) a skipped step is
        refused with a ``RuntimeError``: the scaled gradients cannot be kept.
        """
        self._skip_step = True


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

    nbcallback adds three methods a callback may implement (MindSpore has none of
    them; none has a legacy name, and only the callbacks that override one are called):

    * :meth:`on_train_backward_end`: after each training step's ``backward``, before
      its optimizer step (gradient clipping, accumulation with
      :meth:`RunContext.skip_optimizer_step`);
    * :meth:`on_train_exception`: when a training run raises (a breakpoint checkpoint);
    * :meth:`instrument_hooks`: once per run, to wrap the other callbacks' hook
      methods (``CallbackProfiler`` times them this way);
    * :meth:`state_dict` / :meth:`load_state_dict`: what ``BackupAndRestore`` keeps
      of this callback so that a resumed run continues as the uninterrupted one.

    To resume an earlier run, call :meth:`RunContext.resume_at` in ``on_train_begin``.

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

    # nbcallback's seams (no MindSpore equivalent; empty by default, called only when overridden).
    def on_train_backward_end(self, run_context: RunContext) -> None:
        """Called after each training step's ``backward``, before ``optimizer.step()``.

        The gradients are in ``param.grad`` of ``cb_params.network``'s parameters
        (the optimizer is ``cb_params.optimizer``), unscaled when float16 loss
        scaling is on; change them in place (``torch.nn.utils.clip_grad_norm_``) or
        call ``run_context.skip_optimizer_step()`` to accumulate them into the next
        step. ``cb_params.net_outputs`` is not set yet (it is the loss of the
        previous step); ``on_train_step_end`` follows the optimizer step.

        MindSpore has no such hook (its ``TrainOneStepCell`` is one compiled graph);
        it is fastai's ``after_backward`` and Lightning's ``on_before_optimizer_step``.
        It runs only when ``Model`` has an optimizer. When no callback of the run
        overrides it, the step is exactly the one without it (nothing is called,
        no device operation is added). Do not read tensors as numbers here on a GPU:
        that waits for the device on every step.
        """

    def on_train_exception(self, run_context: RunContext, step_in_epoch: int) -> None:
        """Called when a training run raises (an error, ``KeyboardInterrupt``), before the error propagates.

        Args:
            run_context: the run's parameters as they were when it failed.
            step_in_epoch: the step of the failing epoch that was running (1-based),
                0 when that epoch had run no step yet.

        Called after every callback's ``__exit__``, in list order, on the callbacks
        that override it; ``on_train_end`` is not called for a failed run. An
        error raised here replaces the run's (which stays attached as its context).
        :class:`~nbcallback.train.ModelCheckpoint` writes its
        ``exception_save`` breakpoint checkpoint here (MindSpore does this in its
        ``Model``, for the last ``ModelCheckpoint`` of the list).
        """

    def instrument_hooks(self, dispatch: "Dispatch") -> "Dispatch":
        """Return the table of hook calls the run will make, changed as this callback needs.

        Args:
            dispatch: ``{hook name: [(callback, bound method), ...]}``: for each hook,
                the callbacks that act on it, in call order.

        Called once per run, after the callbacks are entered, on each callback that
        overrides it (in list order; each gets the previous one's table). The run
        then calls exactly the methods of the returned table: wrapping them times or
        traces the other callbacks without changing them (``CallbackProfiler``).
        The default returns ``dispatch`` unchanged.
        """
        return dispatch

    def state_dict(self) -> dict[str, Any]:
        """What this callback needs for a resumed run to continue as the uninterrupted one would.

        :class:`~nbcallback.train.BackupAndRestore` keeps it in each backup, for the
        callbacks that override this method: plain values (numbers, strings, lists,
        dicts; stored as JSON) and tensors at the top level of the dict (stored as
        tensors). When the resumed run re-enters the backed-up epoch it gives the same
        dict back to :meth:`load_state_dict` of the callback at the same position of
        the list, if it has the same class. The default keeps nothing. (Lightning's
        callbacks have the same pair; MindSpore's have none.)
        """
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Take back what :meth:`state_dict` returned (plain values and tensors in one dict)."""


Callback.on_train_backward_end.nb_noop = True  # type: ignore[attr-defined]

#: The table :meth:`Callback.instrument_hooks` receives and returns.
Dispatch = dict[str, list[tuple[Callback, Callable[[RunContext], None]]]]


def overrides(callback: Callback, method: str) -> bool:
    """Whether ``callback``'s class replaces :class:`Callback`'s ``method``."""
    return getattr(type(callback), method) is not getattr(Callback, method)


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


def receives_fit_eval_hooks(callback: Callback) -> bool:
    """Whether ``Model.fit`` calls ``callback``'s ``on_eval_*`` hooks during its validation runs.

    MindSpore's rule, kept: every callback except MindSpore's own built-ins (a class
    *named* as in :data:`INTERNAL_CALLBACK_NAMES`), and ``TimeMonitor`` anyway.
    nbcallback's additions (``TerminateOnNaN``, ``HookTrace`` …) and every user
    callback receive them. The one definition the trainer and ``HookTrace`` use.
    """
    name = type(callback).__name__
    return name not in INTERNAL_CALLBACK_NAMES or name == "TimeMonitor"


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
        self._dispatch: Dispatch = {}
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
            for callback in entered:
                if overrides(callback, "instrument_hooks"):
                    self._dispatch = callback.instrument_hooks(self._dispatch)
        return self

    def __exit__(self, *exc_info: Any) -> bool | None:
        if self._stack is None:
            return None
        stack, self._stack = self._stack, None
        return stack.__exit__(*exc_info)

    def _build_dispatch(self) -> None:
        self._dispatch = {
            hook: [(cb, getattr(cb, hook)) for cb in self._callbacks if not _is_noop(cb, hook)]
            for hook in (*TRAIN_HOOKS, BACKWARD_HOOK, *EVAL_HOOKS)
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

    def backward_end_runner(self, run_context: RunContext) -> Callable[[], bool] | None:
        """What the training step calls between ``backward`` and the optimizer step.

        Runs :meth:`Callback.on_train_backward_end` of the callbacks that act on it
        and returns whether the optimizer step is to be taken (``False`` after
        :meth:`RunContext.skip_optimizer_step`). ``None`` when no callback acts on
        it: the step then runs as if the hook did not exist. Ask after entering.
        """
        if not self._dispatch[BACKWARD_HOOK]:
            return None
        run = functools.partial(self._run, BACKWARD_HOOK, run_context)

        def backward_end() -> bool:
            run_context._skip_step = False
            run()
            return not run_context._skip_step

        return backward_end

    def on_train_exception(self, run_context: RunContext, step_in_epoch: int) -> None:
        """Call :meth:`Callback.on_train_exception` of each callback that overrides it, in order."""
        for callback in self._callbacks:
            if overrides(callback, "on_train_exception"):
                try:
                    callback.on_train_exception(run_context, step_in_epoch)
                except BaseException as exc:
                    _note(exc, f"raised in callback {_describe(callback)}.on_train_exception")
                    raise

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

    def on_train_backward_end(self, run_context: RunContext) -> None:
        self._run(BACKWARD_HOOK, run_context)

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


def _builtins() -> dict[str, Any]:
    """The callback classes ``nbcallback.train`` exports, and ``CheckpointConfig``, by name.

    Read from the package (imported before this module, as its parent); empty while
    the package itself is still being imported.
    """
    package = sys.modules.get("nbcallback.train")
    found = {}
    for name in getattr(package, "__all__", ()):
        value = getattr(package, name, None)
        if name == "CheckpointConfig" or (isinstance(value, type) and issubclass(value, Callback)):
            if value is not None and name not in _MECHANISM:
                found[name] = value
    return found


def __getattr__(name: str) -> Any:
    """``__all__`` and the built-in callbacks, reached on first use (their modules import this one)."""
    if name == "__all__":
        return [*_MECHANISM, *_builtins()]
    value = _builtins().get(name) if not name.startswith("__") else None
    if value is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_builtins()))
