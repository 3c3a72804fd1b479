"""An ordinary training step runs only a few of nbcallback's own Python functions.

On a GPU the tutorial's MLP is bound by Python and kernel launches, so every
function the loop or a callback calls per step shows in the epoch time (the
device operations are counted in ``test_step_ops.py``). These tests count, with
``sys.setprofile``, the Python functions of the ``nbcallback`` package entered
during ordinary steps (neither the first nor the last: no print, no save), a
count no other load on the machine can change. Each call is charged to the
callback whose hook it runs in (the hook itself, MindSpore's forwarding to a
legacy name and whatever they call), or else to the loop (the trainer and the
dispatch to the callbacks). The budgets are counts per step, in total and per
callback; no test names the functions that make them up, so a rename or a
refactor that keeps the counts passes:

* a callback is called only on the hooks it implements: one without step hooks
  costs no call per step, and ``Model`` skips the dispatch when no callback
  acts on a step hook;
* ``ModelCheckpoint`` on a step that saves nothing only checks its schedule;
  ``LossMonitor`` reads the loss (on the CPU) and nothing more;
* the loop itself stays within a fixed budget of calls, plus one dispatch per
  step hook that some callback implements.
"""
from __future__ import annotations

import collections
import contextlib
import io
import sys
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch import nn

import nbcallback
from nbcallback.train import Callback, CheckpointConfig, LossMonitor, Model, ModelCheckpoint, TimeMonitor
from tests.perf.test_step_ops import DeviceOps

PACKAGE = str(Path(nbcallback.__file__).parent)
STEPS, FIRST, LAST = 12, 4, 10  # steps FIRST+1 .. LAST are traced
#: What the calls outside every callback's hooks are charged to: the trainer's loop and its dispatch.
LOOP = "loop"


@dataclass(frozen=True)
class StepCalls:
    """Calls per ordinary step: in total, the loop's, and each callback's (by class name)."""

    total: float
    loop: float
    by_callback: dict[str, float]
    by_function: dict[str, float]  # for the failure messages only: no test asserts a function's name


class TracedEpoch:
    """Batches that count the nbcallback functions called between batch FIRST and batch LAST, charging each call
    to the callback (of ``callbacks``) whose hook is running, or to the loop."""

    def __init__(self, device: str = "cpu", callbacks: list[Callback] = ()) -> None:
        torch.manual_seed(0)
        self.batches = [(torch.randn(4, 3).to(device), torch.randint(0, 2, (4,)).to(device)) for _ in range(STEPS)]
        self.owners = {id(callback): type(callback).__name__ for callback in callbacks}
        self.calls: collections.Counter[str] = collections.Counter()
        self.functions: collections.Counter[str] = collections.Counter()
        self._hook: tuple[object, str, str] | None = None  # the callback hook's frame, its owner, its file

    def __len__(self) -> int:
        return STEPS

    def _profile(self, frame, event, arg) -> None:
        if event == "return":
            if self._hook is not None and frame is self._hook[0]:
                self._hook = None
            return
        if event != "call":
            return
        code = frame.f_code
        if self._hook is None and code.co_argcount and code.co_varnames[0] == "self":
            owner = self.owners.get(id(frame.f_locals.get("self")))
            if owner is not None:  # a hook of one of the callbacks begins: it and all it calls are that callback's
                self._hook = (frame, owner, code.co_filename)
        owner, own_file = (self._hook[1], self._hook[2]) if self._hook is not None else (LOOP, PACKAGE)
        if code.co_filename.startswith(PACKAGE) or code.co_filename == own_file:
            self.calls[owner] += 1
            self.functions[f"{Path(code.co_filename).stem}.{code.co_qualname}"] += 1

    def __iter__(self):
        for index, batch in enumerate(self.batches):
            if index == FIRST:
                sys.setprofile(self._profile)
            elif index == LAST:
                sys.setprofile(None)
            yield batch

    def per_step(self) -> StepCalls:
        steps = LAST - FIRST
        by_callback = {owner: 0.0 for owner in self.owners.values()}
        by_callback.update({owner: count / steps for owner, count in self.calls.items() if owner != LOOP})
        return StepCalls(
            total=sum(self.calls.values()) / steps,
            loop=self.calls[LOOP] / steps,
            by_callback=by_callback,
            by_function={name: count / steps for name, count in self.functions.items()},
        )


def _traced_run(callbacks: list[Callback], device: str = "cpu") -> StepCalls:
    """Calls per ordinary step; on ``meta`` (an accelerator's code path, see test_step_ops) under ``DeviceOps``,
    which answers the host reads of the print step, the epoch-end check and the final checkpoint."""
    network = nn.Linear(3, 2).to(device)
    model = Model(network, nn.CrossEntropyLoss(), torch.optim.SGD(network.parameters(), lr=0.1), device=device)
    data = TracedEpoch(device, callbacks)
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
    assert with_it.by_callback == {"EpochOnly": 0}, with_it.by_function
    # Not one call more per step: no dispatch to it, no base-class forwarding, no other work in the loop.
    assert (with_it.total, with_it.loop) == (alone.total, alone.loop), (with_it.by_function, alone.by_function)
    assert quiet.epochs == 1


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_the_loop_calls_a_fixed_handful_of_functions_per_step(device):
    calls = _traced_run([], device)
    # The batch's tuple (on a device: its copy check, one comprehension), the training cell's forward
    # (its loss, the (data, label) split) and the stop vote: no dispatch when no callback acts on a step.
    assert calls.total == calls.loop <= (5 if device == "cpu" else 6), calls.by_function


def test_model_checkpoint_only_checks_its_schedule_on_a_step_that_saves_nothing(tmp_path):
    config = CheckpointConfig(save_checkpoint_steps=1875, keep_checkpoint_max=10)
    alone = _traced_run([])
    calls = _traced_run([ModelCheckpoint(prefix="mnist", directory=str(tmp_path), config=config)])
    # Its hook: MindSpore's forwarding from on_train_step_end to the legacy step_end, step_end, its read of the
    # run's parameters and the schedule check. Nothing that names, writes or lists files.
    assert calls.by_callback["ModelCheckpoint"] <= 4, calls.by_function
    assert calls.loop - alone.loop <= 1, calls.by_function  # the dispatch to on_train_step_end
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


#: Calls per ordinary step each tutorial callback may make (CPU, accelerator). LossMonitor: the forwarding to
#: step_end, step_end, its read of the run's parameters and the loss read (on an accelerator it keeps the loss on
#: the device: its step in the epoch, then the append); TimeMonitor: its two step hooks; ModelCheckpoint: as above.
TUTORIAL_BUDGET = {"LossMonitor": (4, 5), "TimeMonitor": (2, 2), "ModelCheckpoint": (4, 4)}
#: Step hooks the tutorial's callbacks implement (on_train_step_begin, on_train_step_end): one dispatch each.
TUTORIAL_STEP_HOOKS = 2


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_the_tutorial_callbacks_add_a_bounded_number_of_calls_per_step(device, tmp_path):
    alone = _traced_run([], device)
    calls = _traced_run(_tutorial(tmp_path), device)
    column = 0 if device == "cpu" else 1
    for name, budget in TUTORIAL_BUDGET.items():
        assert calls.by_callback[name] <= budget[column], (name, calls.by_callback, calls.by_function)
    assert calls.loop - alone.loop <= TUTORIAL_STEP_HOOKS, calls.by_function
    assert calls.total - alone.total <= sum(budget[column] for budget in TUTORIAL_BUDGET.values()) + TUTORIAL_STEP_HOOKS
    assert (tmp_path / f"mnist-1_{STEPS}.ckpt").is_file()
