"""``History``: keep the per-epoch training loss and validation metrics in a dict."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch

from nbcallback.train.callback import BuiltinCallback, RunContext

__all__ = ["History"]


class _Float32(float):
    """A Python float that prints like the float32 it came from (``1.607877``, not ``1.6078770160675049``).

    MindSpore's History stores numpy float32 scalars, so its lists print short;
    with numpy 2 those would print as ``np.float32(1.607877)``. This keeps the
    short form while being an ordinary float for arithmetic, plotting and JSON.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return str(np.float32(float(self)))

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Float32, (float(self),))


def _epoch_loss(net_outputs: Any) -> Any:
    """MindSpore's rule: a tuple/list gives its first element, a tensor its mean."""
    if isinstance(net_outputs, (tuple, list)):
        net_outputs = net_outputs[0] if net_outputs else None
    if isinstance(net_outputs, torch.Tensor):
        return _Float32(float(net_outputs.detach().float().mean().cpu()))
    return net_outputs


class History(BuiltinCallback):
    """Record the training loss and the validation metrics of every epoch.

    Attributes:
        epoch: ``{'epoch': [1, 2, …]}``, the epoch numbers of the last run (reset
            when a run begins).
        history: ``{'net_output': [loss of epoch 1, …], 'accuracy': […], …}``.
            ``net_output`` is the training loss of each epoch's **last step**
            (what MindSpore records); in ``Model.fit`` the metrics of the epochs
            that validated are appended under their names (so with
            ``valid_frequency > 1`` those lists are shorter than ``net_output``).
            Not reset between runs: a second ``train`` call appends.

    Example (MindSpore's docstring)::

        history_cb = History()
        model.train(2, train_dataset, callbacks=[history_cb])
        print(history_cb.epoch)    # {'epoch': [1, 2]}
        print(history_cb.history)  # {'net_output': [1.607877, 1.6033841]}

    As in MindSpore, the recording is done by the legacy ``begin`` / ``epoch_end``
    methods (reached through ``on_train_begin`` / ``on_train_epoch_end``).
    Only training epochs are recorded. (MindSpore's History also records the
    pass of ``Model.eval(..., callbacks=[history])`` under ``net_output``,
    mixing an evaluation loss into the training losses; nbcallback does not.)
    """

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list[Any]] = {}
        self.epoch: dict[str, list[int]] = {"epoch": []}

    def begin(self, run_context: RunContext) -> None:
        """Start a new ``epoch`` record (``history`` is kept)."""
        self.epoch = {"epoch": []}

    def epoch_end(self, run_context: RunContext) -> None:
        """Append the epoch number, its last step's loss and fit's metrics."""
        cb_params = run_context.original_args()
        self.epoch["epoch"].append(cb_params.get("cur_epoch_num", 1))
        record: dict[str, Any] = {}
        if "net_outputs" in cb_params:
            record["net_output"] = _epoch_loss(cb_params["net_outputs"])
        metrics = cb_params.get("metrics")
        if isinstance(metrics, Mapping):
            record.update(metrics)
        for key, value in record.items():
            self.history.setdefault(key, []).append(value)

    def state_dict(self) -> dict[str, Any]:
        """What a resumed run needs to continue as the uninterrupted one (kept by BackupAndRestore)."""
        return {"epoch": list(self.epoch["epoch"]), "history": {k: [_plain(v) for v in vs] for k, vs in self.history.items()}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.epoch = {"epoch": list(state["epoch"])}
        self.history = {
            k: [_Float32(v) if k == "net_output" and isinstance(v, float) else v for v in vs]
            for k, vs in state["history"].items()
        }


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return float(value)
    return value
