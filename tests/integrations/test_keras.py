"""KerasDashboard with the real Keras 3 on the torch backend, on a small model (CPU)."""
from __future__ import annotations

import io
import os
import sys
from typing import Any

import numpy as np
import pytest

if "keras" not in sys.modules:
    os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras", reason="Keras 3 is not installed: pip install 'nbcallback[keras]'")
if keras.backend.backend() != "torch":
    pytest.skip(f"Keras runs on {keras.backend.backend()!r} here; the adapter is tested on the torch backend "
                "(KERAS_BACKEND=torch)", allow_module_level=True)

from nbcallback.integrations import KerasDashboard  # noqa: E402


def _model() -> Any:
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _data() -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(0).normal(size=(320, 8)).astype("float32")
    return x, (x[:, :2].sum(1) > 0).astype("int64")


class AtBatch(keras.callbacks.Callback):
    def __init__(self, batch: int, action: Any) -> None:
        super().__init__()
        self.batch, self.action, self.calls = batch, action, 0

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self.calls += 1
        if self.calls == self.batch:
            self.action(self.model)


def test_keras_fit_shows_epochs_losses_and_validation() -> None:
    out = io.StringIO()
    dash = KerasDashboard(display="text", file=out)
    x, y = _data()
    history = _model().fit(x, y, epochs=3, batch_size=32, validation_split=0.2, callbacks=[dash], verbose=0)
    view = dash.board.view()
    assert view.status == "finished"
    assert (view.epochs, view.steps_per_epoch, view.steps_done) == (3, 8, 24)
    assert [row.step for row in view.rows] == [8, 16, 24]
    assert set(view.columns) == {"val_loss", "val_accuracy"}
    assert view.rows[-1].values["val_loss"] == pytest.approx(history.history["val_loss"][-1])
    assert view.last_loss == pytest.approx(history.history["loss"][-1])  # Keras's epoch mean at its end
    assert view.lr == pytest.approx(0.1)
    assert "Training finished: 3/3 epochs, 24/24 steps" in out.getvalue()


def test_keras_stop_sets_stop_training() -> None:
    dash = KerasDashboard(display="text", file=io.StringIO())
    x, y = _data()
    model = _model()
    history = model.fit(x, y, epochs=3, batch_size=32, callbacks=[AtBatch(12, lambda m: dash.board.request_stop(
        "button")), dash], verbose=0)
    assert model.stop_training
    assert len(history.history["loss"]) == 2  # epoch 2 ended early, epoch 3 never began
    assert dash.board.view().steps_done == 12
    assert dash.board.view().status_text == "stopped by user at epoch 2, step 2 (Stop button)"  # 10 a epoch


def test_keras_lr_box_sets_the_optimizer() -> None:
    dash = KerasDashboard(display="off")
    x, y = _data()
    model = _model()
    model.fit(x, y, epochs=1, batch_size=32, callbacks=[AtBatch(3, lambda m: dash.board.set_learning_rate(0.02)),
                                                         dash], verbose=0)
    assert float(model.optimizer.learning_rate) == pytest.approx(0.02)


def test_keras_after_a_failed_fit_the_next_fit_shows_a_new_run() -> None:
    class Broken(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if batch == 2:
                raise ArithmeticError("broken batch")

    dash = KerasDashboard(display="off")
    x, y = _data()
    model = _model()
    with pytest.raises(ArithmeticError):
        model.fit(x, y, epochs=1, batch_size=32, callbacks=[dash, Broken()], verbose=0)
    assert dash.board.view().status == "running"  # Keras has no hook for an exception
    model.fit(x, y, epochs=1, batch_size=32, callbacks=[dash], verbose=0)
    assert dash.board.view().status == "finished"
    assert dash.board.view().steps_done == 10
