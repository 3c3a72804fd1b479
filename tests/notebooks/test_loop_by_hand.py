"""Notebook 1b's hand-written loop is what ``Model.train`` and ``Model.fit`` do (issue 43).

The lesson claims that its 40-line loop calls the same hooks in the same order, with the same record, as
``Model.train``. Here the loop is taken from the notebook itself (the cells tagged ``loop-by-hand``, English and
Chinese) and run beside ``Model`` on a tiny dataset: a change to either side that makes the claim false fails.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pytest
import torch
from torch import nn

from nbcallback.dataset import NumpySlicesDataset
from nbcallback.train import Callback, HookTrace, LossMonitor, Model, RunContext

REPO = Path(__file__).resolve().parents[2]
LESSONS = [REPO / "notebooks" / "1b_the_loop_by_hand.ipynb", REPO / "notebooks" / "zh_CN" / "1b_the_loop_by_hand.ipynb"]
FIELDS = ("cur_epoch_num", "cur_step_num", "net_outputs", "metrics")


def _lesson_loop(path: Path) -> dict[str, Any]:
    """The names the lesson's ``loop-by-hand`` cells define (``Params``, ``Context``, ``call``, ``train`` …)."""
    notebook = nbformat.read(path, as_version=4)
    cells = [cell.source for cell in notebook.cells if "loop-by-hand" in cell.metadata.get("tags", [])]
    assert len(cells) >= 2, f"{path.name}: the cells tagged loop-by-hand (the record and the loop) are missing"
    namespace: dict[str, Any] = {"torch": torch, "nn": nn}
    for source in cells:
        exec(compile(source, f"{path.name}:loop-by-hand", "exec"), namespace)
    return namespace


def _data(rows: int, seed: int) -> NumpySlicesDataset:
    generator = np.random.default_rng(seed)
    images = generator.normal(size=(rows, 1, 4, 4)).astype(np.float32)
    labels = generator.integers(0, 3, size=rows).astype(np.int64)
    return NumpySlicesDataset((images, labels), column_names=["image", "label"], shuffle=False).batch(4)


def _network() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 3))


class StopAt(Callback):
    """Request a stop at one global step, or at the end of one epoch."""

    def __init__(self, step: int | None = None, epoch: int | None = None) -> None:
        super().__init__()
        self.step, self.epoch = step, epoch

    def on_train_step_end(self, run_context: RunContext) -> None:
        if run_context.original_args().cur_step_num == self.step:
            run_context.request_stop()

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        if run_context.original_args().cur_epoch_num == self.epoch:
            run_context.request_stop()


def _both(lesson: dict[str, Any], epochs: int, make_callbacks: Any,
          with_valid: bool = False) -> tuple[HookTrace, HookTrace, bool]:
    """(the lesson loop's trace, Model's trace, same final weights) for the same network, data and callbacks."""
    train, valid = _data(40, 1), _data(12, 2) if with_valid else None
    hand_network = _network()
    hand_trace = HookTrace(keep_steps=100, fields=FIELDS)
    lesson["train"](epochs, hand_network, nn.CrossEntropyLoss(), torch.optim.SGD(hand_network.parameters(), 0.1),
                    train, [*make_callbacks(), hand_trace], valid_dataset=valid)
    network = _network()
    model = Model(network, nn.CrossEntropyLoss(), torch.optim.SGD(network.parameters(), 0.1), metrics={"accuracy"})
    model_trace = HookTrace(keep_steps=100, fields=FIELDS)
    if valid is None:
        model.train(epochs, train, callbacks=[*make_callbacks(), model_trace])
    else:
        model.fit(epochs, train, valid, callbacks=[*make_callbacks(), model_trace])
    same = all(torch.equal(a, b) for a, b in zip(hand_network.state_dict().values(), network.state_dict().values()))
    return hand_trace, model_trace, same


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.relative_to(REPO / "notebooks").as_posix())
def test_the_lessons_loop_calls_the_hooks_of_model_train(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hand, model, same_weights = _both(_lesson_loop(path), 2, lambda: [LossMonitor(3)])
    assert str(hand) == str(model)  # hooks, order, the callbacks acting, the record's changes (losses included)
    assert str(hand).count("on_train_step_end") == 20 and same_weights
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 12 and printed[:6] == printed[6:], printed  # LossMonitor printed the same six lines


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.relative_to(REPO / "notebooks").as_posix())
def test_request_stop_mid_epoch_ends_both_loops_the_same_way(path: Path) -> None:
    """The one rule: the current step finishes, no further step starts, the epoch-end and train-end hooks run."""
    hand, model, same_weights = _both(_lesson_loop(path), 3, lambda: [StopAt(step=13)])
    assert str(hand) == str(model) and same_weights
    text = str(hand)
    assert text.count("on_train_step_end") == 13 and "stop_requested: True" in text
    assert text.rstrip().endswith("on_train_end: -") and text.count("on_train_epoch_end") == 2


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.relative_to(REPO / "notebooks").as_posix())
def test_a_stop_at_an_epoch_end_after_validation_matches_fit(path: Path) -> None:
    """With a validation set the lesson's loop is a small ``fit``: the metrics are there at ``on_train_epoch_end``
    (its loop has no ``on_eval_*`` hooks, which Model's validation calls: those lines are left out)."""
    hand, model, same_weights = _both(_lesson_loop(path), 4, lambda: [StopAt(epoch=2)], with_valid=True)

    def train_hooks(trace: HookTrace) -> list[tuple[Any, ...]]:
        # The record's changes differ around the validation (Model counts its steps in cur_step_num, then restores it).
        return [(call.hook, call.epoch, call.step) for call in trace.hooks if call.phase == "train"]

    assert train_hooks(hand) == train_hooks(model) and same_weights
    epoch_ends = [call for call in hand.hooks if call.hook == "on_train_epoch_end"]
    assert len(epoch_ends) == 2 and "accuracy" in epoch_ends[0].changes["metrics"]  # validated before the epoch end
    assert [call.hook for call in model.hooks if call.phase == "validation"][:1] == ["on_eval_begin"]
