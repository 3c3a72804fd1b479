"""An ordinary training step runs only a few of nbcallback's own Python functions.

On a GPU the tutorial's MLP is bound by Python and kernel launches, so every
function the loop or a callback calls per step shows in the epoch time (the
device operations are counted in ``test_step_ops.py``). These tests count, with
``sys.setprofile``, the Python functions of the ``nbcallback`` package entered
during ordinary steps (neither the first nor the last: no print, no save), a
count no other load on the machine can change:

* a callback is called only on the hooks it implements: one without step hooks
  is never entered per step, and ``Model`` skips the dispatch when no callback
  acts on a step hook;
* ``ModelCheckpoint`` on a step that saves nothing only checks its schedule;
  ``LossMonitor`` reads the loss (on the CPU) and nothing more;
* the loop itself stays within a fixed budget of calls.
"""
from __future__ import annotations

import collections
import contextlib
import io
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import torch
from torch import nn

import nbcallback
from nbcallback.train import Callback, CheckpointConfig, LossMonitor, Model, ModelCheckpoint, TimeMonitor
from nbcallback.train.callback import CallbackManager
from tests.perf.test_step_ops import DeviceOps

PACKAGE = str(Path(nbcallback.__file__).parent)
STEPS, FIRST, LAST = 12, 4, 10  # steps FIRST+1 .. LAST are traced


class TracedEpoch:
    """Batches that trace the nbcallback functions called between batch FIRST and batch LAST."""

    def __init__(self, device: str = "cpu") -> None:
        torch.manual_seed(0)
        self.batches = [(torch.randn(4, 3).to(device), torch.randint(0, 2, (4,)).to(device)) for _ in range(STEPS)]
        self.calls: collections.Counter[str] = collections.Counter()

    def __len__(self) -> int:
        return STEPS

    def _profile(self, frame, event, arg) -> None:
        code = frame.f_code
        if event == "call" and code.co_filename.startswith(PACKAGE):
            self.calls[f"{Path(code.co_filename).stem}.{code.co_qualname}"] += 1

    def __iter__(self):
        for index, batch in enumerate(self.batches):
            if index == FIRST:
                sys.setprofile(self._profile)
            elif index == LAST:
                sys.setprofile(None)
            yield batch

    def per_step(self) -> dict[str, float]:
        """Calls per traced step, by ``module.function``; the tracer's own generator frames left out."""
        steps = LAST - FIRST
        return {name: count / steps for name, count in self.calls.items() if "TracedEpoch" not in name}


def _traced_run(callbacks: list[Callback], device: str = "cpu") -> dict[str, float]:
    """Calls per ordinary step; on ``meta`` (an accelerator's code path, see test_step_ops) under ``DeviceOps``,
    which answers the host reads of the print step, the epoch-end check and the final checkpoint."""
    network = nn.Linear(3, 2).to(device)
    model = Model(network, nn.CrossEntropyLoss(), torch.optim.SGD(network.parameters(), lr=0.1), device=device)
    data = TracedEpoch(device)
    with redirect_stdout(io.StringIO()), (DeviceOps() if device == "meta" else contextlib.nullcontext()):
        model.train(1, data, callbacks=callbacks)
    return data.per_step()


def _tutorial(folder: Path) -> list[Callback]:
    config = CheckpointConfig(save_checkpoint_steps=1875, keep_checkpoint_max=10)
    return [LossMonitor(300), TimeMonitor(), ModelCheckpoint(prefix="mnist", directory=str(folder), config=config)]


class EpochOnly(Callback):
    def __init__(self) -> None:
        self.epochs = 0

    def on_train_epoch_end(self, run_context) -> None:
        self.epochs += 1


def test_a_callback_without_step_hooks_is_never_called_per_step():
    quiet = EpochOnly()
    alone = _traced_run([])
    with_it = _traced_run([quiet])
    assert with_it == alone  # not one call more per step: no dispatch, no base-class forwarding
    assert quiet.epochs == 1
    assert not any("_run" in name for name in alone)  # the loop skips the hooks nobody implements
    with CallbackManager([quiet]) as manager:
        assert manager.runner("on_train_step_end") is None
        assert manager.runner("on_train_epoch_end") is not None


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_the_loop_calls_a_fixed_handful_of_functions_per_step(device):
    calls = _traced_run([], device)
    # The batch's tuple (on a device: its copy check, one comprehension), the training cell's forward
    # (its loss, the (data, label) split) and the stop vote.
    assert sum(calls.values()) <= (5 if device == "cpu" else 6), calls


def test_model_checkpoint_only_checks_its_schedule_on_a_step_that_saves_nothing(tmp_path):
    config = CheckpointConfig(save_checkpoint_steps=1875, keep_checkpoint_max=10)
    alone = _traced_run([])
    calls = _traced_run([ModelCheckpoint(prefix="mnist", directory=str(tmp_path), config=config)])
    added = {name: calls[name] - alone.get(name, 0) for name in calls if calls[name] != alone.get(name, 0)}
    assert added == {
        "callback.CallbackManager._run": 1,
        "callback.Callback.on_train_step_end": 1,  # MindSpore's forwarding to the legacy step_end
        "checkpoint.ModelCheckpoint.step_end": 1,
        "callback.RunContext.original_args": 1,
        "checkpoint.ModelCheckpoint._due": 1,
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mnist-1_12.ckpt", "mnist-graph.meta"]


def test_a_callable_prefix_is_still_asked_on_every_step(tmp_path):
    """MindSpore calls a callable prefix/directory on each step; the ordinary-step shortcut keeps that."""
    asked = []

    def prefix(cb_params) -> str:
        asked.append(cb_params.cur_step_num)
        return f"run-{cb_params.cur_step_num}"

    _traced_run([ModelCheckpoint(prefix=prefix, directory=str(tmp_path), config=CheckpointConfig(save_checkpoint_steps=5))])
    assert asked[:STEPS] == list(range(1, STEPS + 1))
    assert {p.name for p in tmp_path.glob("*.ckpt")} == {"run-5.ckpt", "run-10.ckpt", "run-12.ckpt"}


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_the_tutorial_callbacks_add_a_bounded_number_of_calls_per_step(device, tmp_path):
    alone = _traced_run([], device)
    calls = _traced_run(_tutorial(tmp_path), device)
    added = sum(calls.values()) - sum(alone.values())
    # LossMonitor: forwarding, step_end, original_args, then on the CPU loss_value, on a device keeping the
    # loss (step_in_epoch, add); TimeMonitor: its two step hooks (data_time); ModelCheckpoint: forwarding,
    # step_end, original_args, _due; the manager: one _run per step hook.
    assert added <= (12 if device == "cpu" else 13), calls
    for name in ("distributed.acts_on_rank", "checkpoint.ModelCheckpoint._resolve_names",
                 "checkpoint.ModelCheckpoint._save_ckpt", "loss_monitor.LossMonitor._raise_if_unchecked_bad",
                 "loss_monitor._UncheckedLosses.first_non_finite"):
        assert name not in calls, f"{name} runs on every ordinary step"
    if device == "cpu":
        assert "_validation.step_in_epoch" not in calls  # only where a line is printed or an error raised
    assert (tmp_path / f"mnist-1_{STEPS}.ckpt").is_file()
