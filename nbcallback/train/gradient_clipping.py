"""``GradientClipping``: clip the gradients' norm before every optimizer step."""
from __future__ import annotations

import math
import numbers
import torch

from nbcallback.train._params import optimizer_of
from nbcallback.train.callback import Callback, RunContext

__all__ = ["GradientClipping"]


class GradientClipping(Callback):
    """Scale the gradients down so that their total norm is at most ``max_norm``, before each optimizer step.

    Args:
        max_norm: the largest total norm the optimizer step sees (a positive number).
        norm_type: the p of the p-norm over all gradients together (``2.0``; ``math.inf``
            for the largest absolute value).

    It calls ``torch.nn.utils.clip_grad_norm_`` on the parameters of
    ``cb_params.optimizer`` in :meth:`~nbcallback.train.Callback.on_train_backward_end`,
    the hook between backward and the optimizer step (gradients are unscaled
    first under float16 loss scaling). Nothing is read back to the host: on a GPU
    it adds a few kernels per step and no wait.

    Attributes:
        last_norm: the total norm of the gradients before clipping at the last step,
            a 0-d tensor on the device (``float(clipper.last_norm)`` reads it), or
            ``None`` before the first step.

    An nbcallback addition: MindSpore clips inside the training cell
    (``nn.ClipByNorm`` / ``ops.clip_by_global_norm`` in a custom ``TrainOneStepCell``),
    since its callbacks cannot reach the gradients.

    Raises:
        TypeError / ValueError: a bad ``max_norm`` or ``norm_type``.
        ValueError (at the start of training): the ``Model`` has no optimizer.
    """

    def __init__(self, max_norm: float, norm_type: float = 2.0) -> None:
        super().__init__()
        owner = "GradientClipping"
        for name, value in (("max_norm", max_norm), ("norm_type", norm_type)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"For '{owner}', the argument '{name}' must be int or float, but got {type(value).__name__}.")
        if not (math.isfinite(max_norm) and max_norm > 0):
            raise ValueError(f"For '{owner}', the argument 'max_norm' must be a positive finite number, but got {max_norm}.")
        if math.isnan(norm_type) or norm_type <= 0:
            raise ValueError(f"For '{owner}', the argument 'norm_type' must be positive or math.inf, but got {norm_type}.")
        self.max_norm = float(max_norm)
        self.norm_type = float(norm_type)
        self.last_norm: torch.Tensor | None = None
        self._parameters: list[torch.Tensor] = []

    def on_train_begin(self, run_context: RunContext) -> None:
        optimizer = optimizer_of(run_context.original_args(), "GradientClipping", "whose gradients could be clipped")
        self._parameters = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
        self.last_norm = None

    def on_train_backward_end(self, run_context: RunContext) -> None:
        """Clip the gradients of the optimizer's parameters in place."""
        self.last_norm = torch.nn.utils.clip_grad_norm_(self._parameters, self.max_norm, self.norm_type)

    def __repr__(self) -> str:
        return f"GradientClipping(max_norm={self.max_norm}, norm_type={self.norm_type})"
