import pickle

import torch

from nbcallback.train import History, LambdaCallback
from tests.callbacks.support import Recorder, Scripted, fake_context, toy_batches, toy_model


def test_train_records_epochs_and_last_step_loss():
    model, _, _ = toy_model()
    history = History()
    last_loss = Recorder("on_train_epoch_end", lambda cb: float(cb.net_outputs))
    model.train(3, toy_batches(), callbacks=[history, last_loss])
    assert history.epoch == {"epoch": [1, 2, 3]}
    assert list(history.history) == ["net_output"]
    assert [float(v) for v in history.history["net_output"]] == last_loss.values
    assert all(isinstance(v, float) for v in history.history["net_output"])


def test_values_print_like_float32():
    history = History()
    history.on_train_begin(fake_context())
    history.on_train_epoch_end(fake_context(cur_epoch_num=1, net_outputs=torch.tensor(1.607877, dtype=torch.float32)))
    assert str(history.history) == "{'net_output': [1.607877]}"
    assert history.history["net_output"][0] == float(torch.tensor(1.607877))
    assert pickle.loads(pickle.dumps(history.history)) == history.history


def test_tuple_outputs_use_first_element_mean():
    history = History()
    history.on_train_begin(fake_context())
    outputs = (torch.tensor([1.0, 3.0]), torch.tensor(7.0))
    history.on_train_epoch_end(fake_context(cur_epoch_num=4, net_outputs=outputs))
    assert history.epoch == {"epoch": [4]}
    assert history.history["net_output"] == [2.0]


def test_fit_adds_metrics_of_validated_epochs_only():
    model, _, _ = toy_model(metrics={"accuracy": Scripted([0.5, 0.75])})
    history = History()
    model.fit(4, toy_batches(), toy_batches(128), valid_frequency=2, callbacks=[history])
    assert history.epoch["epoch"] == [1, 2, 3, 4]
    assert len(history.history["net_output"]) == 4
    assert history.history["accuracy"] == [0.5, 0.75]
    assert "eval_loss" not in history.history


def test_history_accumulates_across_runs_epoch_resets():
    model, _, _ = toy_model()
    history = History()
    model.train(2, toy_batches(), callbacks=history)
    model.train(1, toy_batches(), callbacks=history)
    assert history.epoch == {"epoch": [1]}
    assert len(history.history["net_output"]) == 3


def test_model_eval_is_not_recorded():
    model, _, _ = toy_model(metrics={"accuracy"})
    history = History()
    model.train(1, toy_batches(), callbacks=[history])
    model.eval(toy_batches(64), callbacks=[history])
    assert len(history.history["net_output"]) == 1


def test_history_is_internal_for_fit_eval_hooks():
    # History must not break fit's legacy-method check nor receive eval hooks.
    model, _, _ = toy_model(metrics={"accuracy"})
    seen = []
    model.fit(1, toy_batches(), toy_batches(64), callbacks=[History(), LambdaCallback(on_eval_end=lambda rc: seen.append(1))])
    assert seen == []
