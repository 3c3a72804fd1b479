"""The display's core on its own: a ``Board`` fed through its run API with plain values, no ``Model``, no
``cb_params``, no ``RunContext`` (the feeder a framework's adapter would be)."""
from __future__ import annotations

import io

import pytest
import torch

from nbcallback.train import Callback
from nbcallback.widgets.board import Board
from tests.widgets.conftest import FakeClock


class TextBoard(Board):
    """A board that is no callback of any framework."""

    _PARTS = frozenset({"progress", "table"})


def _feed(board: Board, clock: FakeClock, *, stop_at: int | None = None) -> list[int]:
    """Two epochs of 10 steps with a validation after each, as a framework's hooks would feed them; returns the
    steps run (a True answer stops the loop, as ``run_context.request_stop()`` would)."""
    steps: list[int] = []
    with board:
        board.open_run("train", epochs=2, steps_per_epoch=10, eval_steps=3, has_validation=True)
        for epoch in (1, 2):
            board.epoch_begins(epoch, (epoch - 1) * 10)
            for step in range((epoch - 1) * 10 + 1, epoch * 10 + 1):
                clock.advance(0.1)
                steps.append(step)
                board.at.step = step
                if step == stop_at:
                    board.request_stop("button")
                if board.train_step(torch.tensor(1.0 / step)):
                    break
            else:
                board.eval_begins(3)
                for _ in range(3):
                    board.at.eval_step += 1
                    board.count_step(eval_phase=True)
                board.eval_ends({"loss": 0.5 / epoch})
                board.epoch_ends(validated=True)
                continue
            board.epoch_ends(validated=False)
            break
        board.run_ends()
    return steps


def test_a_board_fed_by_plain_values_shows_the_run_as_a_model_run_would() -> None:
    clock, out = FakeClock(), io.StringIO()
    board = TextBoard("text", file=out, clock=clock)
    assert not isinstance(board, Callback)
    assert _feed(board, clock) == list(range(1, 21))
    view = board.view()
    assert view.status == "finished"
    assert (view.epochs_done, view.steps_done, view.total_steps) == (2, 20, 20)
    assert [(row.epoch, row.step, row.values) for row in view.rows] == [(1, 10, {"loss": 0.5}), (2, 20, {"loss": 0.25})]
    assert view.last_loss == pytest.approx(1 / 20)
    assert "Training finished: 2/2 epochs, 20/20 steps" in out.getvalue()


def test_the_board_answers_true_where_a_stop_takes_effect_and_the_snapshot_says_where() -> None:
    clock = FakeClock()
    board = TextBoard("text", file=io.StringIO(), clock=clock)
    assert _feed(board, clock, stop_at=14) == list(range(1, 15))  # the step in progress ends, no other begins
    view = board.view()
    assert view.status == "stopped"
    assert view.status_text == "stopped by user at epoch 2, step 4 (Stop button)"
