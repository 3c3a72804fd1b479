"""``LambdaCallback``: a callback built from plain functions, without writing a class."""
from __future__ import annotations

from typing import Callable, Optional

from nbcallback.train.callback import EVAL_HOOKS, LEGACY_OF, TRAIN_HOOKS, Callback, RunContext

__all__ = ["LambdaCallback"]

Hook = Optional[Callable[[RunContext], None]]


def _noop(run_context: RunContext) -> None:
    return None


class LambdaCallback(Callback):
    """Call the given functions at the matching hooks.

    Every argument is ``None`` (do nothing) or a function taking the
    :class:`RunContext`, named after the hook it fills:
    ``on_train_begin``, ``on_train_epoch_begin``, ``on_train_step_begin``,
    ``on_train_step_end``, ``on_train_epoch_end``, ``on_train_end`` and the
    ``on_eval_*`` counterparts.

    Example::

        print_loss = LambdaCallback(
            on_train_epoch_end=lambda rc: print(float(rc.original_args().net_outputs)))
        model.train(2, train_dataset, callbacks=[print_loss])

    As in MindSpore, the functions replace the hook methods on the instance,
    so the MindSpore 1.x names (``step_end`` …) are never reached. Because
    ``LambdaCallback`` is a built-in name, ``Model.fit`` does not give it the
    ``on_eval_*`` hooks of its validation runs; they run in ``Model.eval``.
    (Subclass :class:`Callback` for a callback that sees fit's validation.)

    Raises:
        TypeError: an argument is neither None nor callable (the message names it).
    """

    def __init__(
        self,
        on_train_epoch_begin: Hook = None,
        on_train_epoch_end: Hook = None,
        on_train_step_begin: Hook = None,
        on_train_step_end: Hook = None,
        on_train_begin: Hook = None,
        on_train_end: Hook = None,
        on_eval_epoch_begin: Hook = None,
        on_eval_epoch_end: Hook = None,
        on_eval_step_begin: Hook = None,
        on_eval_step_end: Hook = None,
        on_eval_begin: Hook = None,
        on_eval_end: Hook = None,
    ) -> None:
        super().__init__()
        given = dict(locals())
        for hook in TRAIN_HOOKS + EVAL_HOOKS:
            function = given[hook]
            if function is not None and not callable(function):
                raise TypeError(
                    f"For 'LambdaCallback', the argument '{hook}' must be a function taking run_context, "
                    f"but got {function!r} of type {type(function).__name__}."
                )
            if function is not None:
                setattr(self, hook, function)
            elif getattr(type(self), LEGACY_OF[hook]) is not getattr(Callback, LEGACY_OF[hook]):
                # A subclass defining a 1.x method must not have it reached through the hook.
                setattr(self, hook, _noop)
            # else: the inherited hook only reaches empty methods; the trainer skips it.
