import pytest
import torch
from torch import nn

from nbcallback.train import LearningRateScheduler, Model
from tests.callbacks.support import Recorder, toy_batches, toy_model, toy_net


def learning_rate_function(lr, cur_step_num):
    # MindSpore's docstring example, with a shorter period.
    if cur_step_num % 3 == 0:
        lr = lr * 0.1
    return lr


def test_rate_used_by_each_step():
    model, _, opt = toy_model(lr=1.0)
    used = Recorder("on_train_step_begin", lambda cb: opt.param_groups[0]["lr"])
    model.train(2, toy_batches(128), callbacks=[used, LearningRateScheduler(learning_rate_function)])
    assert used.values == pytest.approx([1.0, 1.0, 1.0, 0.1, 0.1, 0.1, 0.01, 0.01])


def test_every_param_group_gets_its_own_rate():
    net = toy_net()
    params = list(net.parameters())
    opt = torch.optim.SGD([{"params": params[:2], "lr": 1.0}, {"params": params[2:], "lr": 0.5}])
    seen = []
    scheduler = LearningRateScheduler(lambda lr, step: seen.append((lr, step)) or lr / 2)
    Model(net, nn.CrossEntropyLoss(), opt).train(1, toy_batches(64), callbacks=scheduler)
    assert seen == [(1.0, 1), (0.5, 1), (0.5, 2), (0.25, 2)]
    assert [g["lr"] for g in opt.param_groups] == [0.25, 0.125]


def test_unchanged_value_is_not_written():
    model, _, opt = toy_model(lr=torch.tensor(0.1))
    lr = opt.param_groups[0]["lr"]
    model.train(1, toy_batches(64), callbacks=LearningRateScheduler(lambda lr, step: lr))
    assert opt.param_groups[0]["lr"] is lr


def test_argument_and_return_checks():
    with pytest.raises(TypeError, match="'learning_rate_function' must be a function"):
        LearningRateScheduler(0.1)
    model, _, _ = toy_model()
    with pytest.raises(TypeError, match="must return a number"):
        model.train(1, toy_batches(64), callbacks=LearningRateScheduler(lambda lr, step: "0.1"))
    with pytest.raises(ValueError, match="finite rate >= 0"):
        model.train(1, toy_batches(64), callbacks=LearningRateScheduler(lambda lr, step: -lr))
    with pytest.raises(ValueError, match="has no optimizer"):
        Model(toy_net(), nn.CrossEntropyLoss()).train(1, toy_batches(64), callbacks=LearningRateScheduler(lambda lr, s: lr))


def test_numpy_scalars_are_accepted():
    import numpy as np

    model, _, opt = toy_model(lr=1.0)
    model.train(1, toy_batches(64), callbacks=LearningRateScheduler(lambda lr, step: np.float32(0.5)))
    assert opt.param_groups[0]["lr"] == 0.5
