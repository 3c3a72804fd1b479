import math
import warnings

import numpy as np
import pytest

from nbcallback.train import EarlyStopping, History
from tests.callbacks.support import (
    Recorder,
    Scripted,
    fake_context,
    same_weights,
    toy_batches,
    toy_model,
    weights,
)


def _fit(values, epochs=8, monitor="score", model_kwargs=None, **kwargs):
    model, net, _ = toy_model(metrics={"score": Scripted(values)}, **(model_kwargs or {}))
    stopper = EarlyStopping(monitor=monitor, **kwargs)
    history = History()
    snapshots = Recorder("on_train_epoch_end", lambda cb: weights(net))
    model.fit(epochs, toy_batches(128), toy_batches(64), callbacks=[history, snapshots, stopper])
    return stopper, history, snapshots, net


def test_stops_after_patience_epochs_without_improvement():
    stopper, history, _, _ = _fit([0.5, 0.6, 0.6, 0.55, 0.9], mode="max", patience=2)
    assert stopper.stopped_epoch == 4
    assert stopper.best == 0.6 and stopper.best_epoch == 2
    assert history.epoch["epoch"] == [1, 2, 3, 4]


def test_auto_mode_maximises_accuracy_like_metrics_and_minimises_losses():
    assert EarlyStopping(monitor="accuracy")._direction == "max"
    assert EarlyStopping(monitor="eval_loss")._direction == "min"
    assert EarlyStopping(monitor="loss")._direction == "min"
    assert EarlyStopping(monitor="accuracy", mode="min")._direction == "min"


def test_restore_best_weights(capsys):
    stopper, _, snapshots, net = _fit(
        [0.9, 0.8, 0.95, 0.7, 0.7, 0.7], mode="max", patience=2, restore_best_weights=True, verbose=True
    )
    assert stopper.stopped_epoch == 5 and stopper.best_epoch == 3
    assert same_weights(weights(net), snapshots.values[2])
    assert not same_weights(weights(net), snapshots.values[4])
    out = capsys.readouterr().out.splitlines()
    assert out == ["Restoring model weights from the end of the best epoch.", "Epoch 00005: early stopping"]


def test_without_restore_the_last_weights_stay():
    stopper, _, snapshots, net = _fit([0.9, 0.8, 0.7], mode="max", patience=2)
    assert stopper.stopped_epoch == 3
    assert same_weights(weights(net), snapshots.values[-1])


def test_patience_zero_stops_at_first_epoch_without_improvement():
    # Documented behaviour; MindSpore's code stops after the first evaluated epoch whatever the value.
    stopper, history, _, _ = _fit([0.3, 0.2, 0.1, 0.1], mode="min", patience=0)
    assert stopper.stopped_epoch == 4
    assert len(history.epoch["epoch"]) == 4


def test_min_delta_is_the_smallest_improvement():
    stopper, _, _, _ = _fit([1.0, 0.95, 0.9, 0.5], mode="min", patience=2, min_delta=0.1)
    assert stopper.stopped_epoch == 3 and stopper.best == 1.0


def test_baseline_is_the_baseline_not_min_delta():
    stopper = EarlyStopping(min_delta=0.5, baseline=0.1)
    assert stopper.baseline == 0.1 and stopper.min_delta == 0.5
    # Improving epochs that do not beat the baseline still count as waiting.
    stopper, _, _, _ = _fit([0.5, 0.6, 0.7, 0.8], mode="max", patience=2, baseline=0.9)
    assert stopper.stopped_epoch == 2


def test_baseline_beaten_resets_wait():
    stopper, _, _, _ = _fit([0.95, 0.96, 0.97, 0.97, 0.97], mode="max", patience=2, baseline=0.9)
    assert stopper.stopped_epoch == 5


def test_a_zero_value_is_a_value_not_missing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stopper, _, _, _ = _fit([0.3, 0.0, 0.0, 0.0], mode="min", patience=2)
    assert stopper.best == 0.0 and stopper.best_epoch == 2 and stopper.stopped_epoch == 4


def test_epochs_without_validation_are_skipped_quietly():
    model, _, _ = toy_model(metrics={"score": Scripted([0.5, 0.4, 0.3])})
    stopper = EarlyStopping(monitor="score", mode="max", patience=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(6, toy_batches(128), toy_batches(64), valid_frequency=2, callbacks=[stopper])
    assert stopper.stopped_epoch == 4


def test_missing_monitor_warns_and_never_stops():
    model, _, _ = toy_model(metrics={"accuracy"})
    stopper = EarlyStopping(monitor="acc", patience=0)
    history = History()
    with pytest.warns(UserWarning, match=r"Early stopping is conditioned on acc, which is not available\. Available choices are: \['accuracy', 'eval_loss', 'loss'\]"):
        model.fit(2, toy_batches(128), toy_batches(64), callbacks=[stopper, history])
    assert stopper.stopped_epoch == 0 and len(history.epoch["epoch"]) == 2


def test_eval_monitor_in_plain_train_warns():
    model, _, _ = toy_model()
    with pytest.warns(UserWarning, match="eval_loss, which is not available"):
        model.train(1, toy_batches(64), callbacks=[EarlyStopping()])


def test_monitor_training_loss_in_train():
    model, _, _ = toy_model(lr=0.0)  # a constant network: the last-step loss repeats exactly
    stopper = EarlyStopping(monitor="loss", patience=1)
    model.train(5, toy_batches(64), callbacks=[stopper])
    assert stopper.stopped_epoch == 2


def test_eval_loss_monitor_in_fit_uses_validation_loss():
    model, _, _ = toy_model(lr=0.0, metrics={"accuracy"})
    stopper = EarlyStopping(patience=2)
    model.fit(6, toy_batches(128), toy_batches(64), callbacks=[stopper])
    assert stopper.stopped_epoch == 3 and stopper.best_epoch == 1 and math.isfinite(stopper.best)


def test_non_scalar_monitor_is_rejected():
    stopper = EarlyStopping(monitor="vec", mode="max")
    stopper.on_train_begin(fake_context())
    with pytest.raises(ValueError, match="EarlyStopping only supports scalar monitor now."):
        stopper.on_train_epoch_end(fake_context(cur_epoch_num=1, eval_results={"vec": np.array([0.1, 0.2])}))


def test_argument_checks():
    with pytest.raises(ValueError, match=r"^mode should be 'auto', 'min' or 'max', but got maximum\.$"):
        EarlyStopping(mode="maximum")
    with pytest.raises(TypeError, match="'patience'"):
        EarlyStopping(patience=1.5)
    with pytest.raises(ValueError, match="'patience'"):
        EarlyStopping(patience=-1)
    with pytest.raises(TypeError, match="'verbose'"):
        EarlyStopping(verbose=1)
    with pytest.raises(TypeError, match="'min_delta'"):
        EarlyStopping(min_delta="0.1")
    with pytest.raises(TypeError, match="'baseline'"):
        EarlyStopping(baseline=True)
    with pytest.raises(TypeError, match="'monitor'"):
        EarlyStopping(monitor=None)
    with pytest.raises(TypeError, match="'restore_best_weights'"):
        EarlyStopping(restore_best_weights="yes")
    assert EarlyStopping(min_delta=-0.2).min_delta == 0.2


def test_state_is_reset_each_run():
    model, _, _ = toy_model(metrics={"score": Scripted([0.5, 0.4, 0.6, 0.5])})
    stopper = EarlyStopping(monitor="score", mode="max", patience=1)
    model.fit(3, toy_batches(128), toy_batches(64), callbacks=[stopper])
    assert stopper.stopped_epoch == 2
    model.fit(3, toy_batches(128), toy_batches(64), callbacks=[stopper])
    assert stopper.stopped_epoch == 2 and stopper.best == 0.6
