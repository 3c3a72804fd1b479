"""``LearningRateScheduler``: set the learning rate from a function of the step number."""
from __future__ import annotations

import math
import numbers
from typing import Callable

from nbcallback.train._params import optimizer_of, set_group_lr
from nbcallback.train.callback import BuiltinCallback, RunContext

__all__ = ["LearningRateScheduler"]


class LearningRateScheduler(BuiltinCallback):
    """After every training step, set the learning rate to ``learning_rate_function(lr, cur_step_num)``.

    Args:
        learning_rate_function: ``f(lr, cur_step_num) -> new_lr`` where ``lr`` is the
            current rate (a float) and ``cur_step_num`` the global step just
            finished (1-based, counted across epochs). Called once per param group
            of the torch optimizer, with that group's rate.

    The new rate is used from the next step on; a value equal to the current one
    (relative tolerance 1e-10) leaves the group untouched.

    Example (MindSpore's docstring)::

        def learning_rate_function(lr, cur_step_num):
            if cur_step_num % 1000 == 0:
                lr = lr * 0.1
            return lr

        model.train(1, dataset, callbacks=[LearningRateScheduler(learning_rate_function)])

    As in MindSpore, the update is the legacy ``step_end`` (reached through
    ``on_train_step_end``). Only training steps change the rate (MindSpore's version also fires on the
    steps of ``Model.eval`` and fails there for lack of an optimizer).
    The state of the schedule is the step number and the current rates, both of
    which :class:`BackupAndRestore` restores.

    Raises:
        TypeError: ``learning_rate_function`` is not callable, or returns
            something that is not a real number.
        ValueError: it returns a negative or non-finite rate; the model has no optimizer.
    """

    def __init__(self, learning_rate_function: Callable[[float, int], float]) -> None:
        super().__init__()
        if not callable(learning_rate_function):
            raise TypeError(
                "For 'LearningRateScheduler', the argument 'learning_rate_function' must be a function "
                f"f(lr, cur_step_num) -> new_lr, but got {type(learning_rate_function).__name__}."
            )
        self.learning_rate_function = learning_rate_function

    def on_train_begin(self, run_context: RunContext) -> None:
        optimizer_of(run_context.original_args(), "LearningRateScheduler")

    def step_end(self, run_context: RunContext) -> None:
        """Apply ``learning_rate_function`` to every param group's rate."""
        cb_params = run_context.original_args()
        optimizer = optimizer_of(cb_params, "LearningRateScheduler")
        step = cb_params["cur_step_num"]
        for group in optimizer.param_groups:
            lr = float(group["lr"])
            new_lr = self.learning_rate_function(lr, step)
            if isinstance(new_lr, bool) or not isinstance(new_lr, numbers.Real):
                if hasattr(new_lr, "item") and getattr(new_lr, "ndim", None) == 0:
                    new_lr = new_lr.item()
                else:
                    raise TypeError(
                        "For 'LearningRateScheduler', 'learning_rate_function' must return a number, but "
                        f"returned {new_lr!r} of type {type(new_lr).__name__} at step {step}."
                    )
            new_lr = float(new_lr)
            if not math.isfinite(new_lr) or new_lr < 0:
                raise ValueError(
                    "For 'LearningRateScheduler', 'learning_rate_function' must return a finite rate >= 0, "
                    f"but returned {new_lr} at step {step}."
                )
            if not math.isclose(lr, new_lr, rel_tol=1e-10):
                set_group_lr(group, new_lr)
