import pytest
import torch
from torch import nn

from nbcallback.train import Model, ReduceLROnPlateau
from tests.callbacks.support import Recorder, Scripted, toy_batches, toy_net


def _model(values, group_lrs=(0.1,), tensor_lr=False):
    torch.manual_seed(0)
    net = toy_net()
    params = list(net.parameters())
    if len(group_lrs) == 1:
        groups = [{"params": params, "lr": torch.tensor(group_lrs[0]) if tensor_lr else group_lrs[0]}]
    else:
        groups = [{"params": params[:2], "lr": group_lrs[0]}, {"params": params[2:], "lr": group_lrs[1]}]
    opt = torch.optim.SGD(groups, lr=group_lrs[0])
    return Model(net, nn.CrossEntropyLoss(), opt, metrics={"score": Scripted(values)}), opt


def _run(values, epochs, group_lrs=(0.1,), **kwargs):
    model, opt = _model(values, group_lrs)
    lrs = Recorder("on_train_epoch_end", lambda cb: [float(g["lr"]) for g in cb.optimizer.param_groups])
    model.fit(epochs, toy_batches(64), toy_batches(64), callbacks=[ReduceLROnPlateau(monitor="score", **kwargs), lrs])
    return lrs.values


def test_every_param_group_is_reduced_down_to_min_lr():
    lrs = _run([1.0, 1.0, 0.9, 0.9, 0.9, 0.9], 6, group_lrs=(0.1, 0.01), mode="min", factor=0.5, patience=1, min_lr=0.004)
    expected = [
        [0.1, 0.01],
        [0.05, 0.005],
        [0.05, 0.005],
        [0.025, 0.004],
        [0.0125, 0.004],
        [0.00625, 0.004],
    ]
    assert [pytest.approx(row) for row in expected] == lrs


def test_cooldown():
    lrs = _run([1.0], 7, group_lrs=(1.0,), mode="min", factor=0.5, patience=1, cooldown=2)
    assert [g[0] for g in lrs] == [1.0, 0.5, 0.5, 0.25, 0.25, 0.125, 0.125]


def test_default_patience_ten():
    lrs = _run([1.0], 12, group_lrs=(1.0,))
    assert [g[0] for g in lrs] == pytest.approx([1.0] * 10 + [0.1, 0.1])


def test_max_mode_and_verbose_line(capsys):
    lrs = _run([0.5, 0.6, 0.6, 0.6], 4, group_lrs=(1.0,), mode="max", factor=0.5, patience=2, verbose=True)
    assert [g[0] for g in lrs] == [1.0, 1.0, 1.0, 0.5]
    assert capsys.readouterr().out == "Epoch 00004: ReduceLROnPlateau reducing learning rate to 0.5.\n"


def test_tensor_learning_rate_is_updated_in_place():
    model, opt = _model([1.0], tensor_lr=True)
    lr_tensor = opt.param_groups[0]["lr"]
    model.fit(2, toy_batches(64), toy_batches(64), callbacks=[ReduceLROnPlateau(monitor="score", patience=1, factor=0.5)])
    assert opt.param_groups[0]["lr"] is lr_tensor and float(lr_tensor) == pytest.approx(0.05)


def test_monitor_training_loss():
    torch.manual_seed(0)
    net = toy_net()
    opt = torch.optim.SGD(net.parameters(), lr=0.0)
    model = Model(net, nn.CrossEntropyLoss(), opt)
    model.train(3, toy_batches(64), callbacks=[ReduceLROnPlateau(monitor="loss", patience=1, factor=0.5, min_lr=0)])
    assert opt.param_groups[0]["lr"] == 0.0  # lr 0 is not > min_lr 0: left alone


def test_missing_monitor_warns_with_mindspore_text():
    model, opt = _model([1.0])
    with pytest.warns(UserWarning, match="Learning rate reduction is conditioned on acc, which is not available"):
        model.fit(1, toy_batches(64), toy_batches(64), callbacks=[ReduceLROnPlateau(monitor="acc", patience=0)])
    assert opt.param_groups[0]["lr"] == 0.1


def test_needs_an_optimizer():
    model = Model(toy_net(), nn.CrossEntropyLoss())
    with pytest.raises(ValueError, match="has no optimizer"):
        model.train(1, toy_batches(64), callbacks=[ReduceLROnPlateau()])


@pytest.mark.parametrize("factor", [1.0, 0.0, 1.5, -0.1])
def test_factor_must_be_inside_zero_one(factor):
    with pytest.raises(ValueError, match=r"'factor' must be in range of \(0.0, 1.0\)"):
        ReduceLROnPlateau(factor=factor)


def test_argument_checks():
    with pytest.raises(TypeError, match="'factor'"):
        ReduceLROnPlateau(factor=True)
    with pytest.raises(ValueError, match=r"^mode should be 'auto', 'min' or 'max', but got up\.$"):
        ReduceLROnPlateau(mode="up")
    with pytest.raises(ValueError, match="'min_lr' must be >= 0"):
        ReduceLROnPlateau(min_lr=-1)
    with pytest.raises(TypeError, match="'cooldown'"):
        ReduceLROnPlateau(cooldown=None)
    with pytest.raises(ValueError, match="'patience'"):
        ReduceLROnPlateau(patience=-2)
