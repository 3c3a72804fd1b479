"""``Model``: argument checks, metrics, eval/predict, initial_epoch, valid_frequency, AMP, resume."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from nbcallback.train import Callback, Metric, Model, get_metric_fn

from .helpers import Recorder, blobs, make_model, mlp, regression


# --------------------------------------------------------------------------- argument validation


def test_epoch_must_exceed_initial_epoch():
    model = make_model()
    for method, where in ((lambda **k: model.train(**k, train_dataset=blobs(1)), "Model.train"),
                          (lambda **k: model.fit(**k, train_dataset=blobs(1)), "Model.fit")):
        with pytest.raises(ValueError) as info:
            method(epoch=2, initial_epoch=2)
        assert str(info.value) == (
            f"For '{where}', the parameter 'epoch' must bigger than parameter 'initial_epoch', but got the "
            "parameter 'epoch' is 2, 'initial_epoch' is 2."
        )
    with pytest.raises(ValueError, match="'epoch' must bigger"):
        model.train(1, blobs(1), initial_epoch=3)


def test_run_argument_types():
    model = make_model()
    with pytest.raises(TypeError, match="dataset_sink_mode"):
        model.train(1, blobs(1), dataset_sink_mode=1)
    with pytest.raises(TypeError, match="epoch"):
        model.train(1.0, blobs(1))
    with pytest.raises(ValueError, match="epoch"):
        model.train(0, blobs(1))
    with pytest.raises(TypeError, match="initial_epoch"):
        model.train(2, blobs(1), initial_epoch=None)
    with pytest.raises(ValueError, match=r"The argument 'sink_size' must be -1 or positive, but got 0\."):
        model.train(1, blobs(1), sink_size=0)
    with pytest.raises(ValueError, match="There is no valid data in dataset, please check dataset file firstly."):
        model.train(1, [])
    with pytest.raises(ValueError, match="'train_dataset' should return two elements, but got 3"):
        model.train(1, [(torch.zeros(2, 8), torch.zeros(2, dtype=torch.long), torch.zeros(2))])
    model.train(1, blobs(1), dataset_sink_mode=True, sink_size=5)  # accepted, no effect


def test_bad_kwargs():
    net = mlp()
    with pytest.raises(ValueError) as info:
        Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1), foo=1)
    assert str(info.value) == (
        "The argument in 'kwargs' should be 'loss_scale_manager' or 'keep_batchnorm_fp32' or "
        "'boost_config_dict' or 'acc_level', but got 'foo'."
    )
    Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1), keep_batchnorm_fp32=True,
          loss_scale_manager=None, boost_config_dict={}, acc_level="O0")


def test_constructor_type_checks():
    with pytest.raises(TypeError, match="network"):
        Model("net")
    net = mlp()
    with pytest.raises(TypeError, match="optimizer"):
        Model(net, nn.CrossEntropyLoss(), optimizer="sgd")
    with pytest.raises(ValueError, match="Auto mixed precision will not work because 'optimizer' is None."):
        Model(net, nn.CrossEntropyLoss(), amp_level="O1")
    with pytest.raises(ValueError, match="O3"):
        Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1), amp_level="O3")
    with pytest.raises(ValueError, match="amp_level"):
        Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1), amp_level="O7")


def test_metrics_without_loss_fn_or_eval_network():
    net = mlp()
    with pytest.raises(ValueError) as info:
        Model(net, None, torch.optim.SGD(net.parameters(), 0.1), metrics={"accuracy"})
    assert str(info.value).startswith("If `metrics` is set, `eval_network` must not be None.")


def test_metric_arguments():
    net = mlp()
    opt = torch.optim.SGD(net.parameters(), 0.1)
    with pytest.raises(KeyError, match="unsupported metric nope"):
        Model(net, nn.CrossEntropyLoss(), opt, metrics={"nope"})
    with pytest.raises(TypeError, match="'m'"):
        Model(net, nn.CrossEntropyLoss(), opt, metrics={"m": object()})
    with pytest.raises(TypeError, match="metrics"):
        Model(net, nn.CrossEntropyLoss(), opt, metrics="accuracy")
    with pytest.raises(ValueError, match="eval_indexes"):
        Model(net, nn.CrossEntropyLoss(), opt, metrics={"accuracy"}, eval_network=net, eval_indexes=[0, 1])


def test_eval_indexes_tuple_refused_like_mindspore():
    """mindspore/train/model.py ``_check_eval_indexes``-style rule: a list of 3 or None; a tuple is a ValueError."""
    net = mlp()
    opt = torch.optim.SGD(net.parameters(), 0.1)
    with pytest.raises(ValueError) as info:
        Model(net, nn.CrossEntropyLoss(), opt, metrics={"accuracy"}, eval_network=net, eval_indexes=(1, 2, 3))
    assert str(info.value).startswith(
        "The argument 'eval_indexes' must be a list or None. If 'eval_indexes' is a list, length of it must be three."
    )
    assert "eval_indexes=[0, 1, 2]" in str(info.value)
    with pytest.raises(ValueError, match="list of 3 ints"):
        Model(net, nn.CrossEntropyLoss(), opt, metrics={"accuracy"}, eval_network=net, eval_indexes=[0, "1", 2])
    # Only checked with metrics and an eval_network, as in MindSpore.
    Model(net, nn.CrossEntropyLoss(), opt, eval_network=net, eval_indexes=(1, 2, 3))
    model = Model(net, nn.CrossEntropyLoss(), opt, metrics={"accuracy"}, eval_network=net, eval_indexes=[0, 1, 2])
    assert model._eval_indexes == (0, 1, 2)


@pytest.mark.parametrize("metrics", [(), [], ["accuracy"], ("accuracy",), "accuracy", 3])
def test_metrics_must_be_none_dict_or_set(metrics):
    """MindSpore ``get_metrics``: TypeError for anything but None, a dict or a set."""
    net = mlp()
    opt = torch.optim.SGD(net.parameters(), 0.1)
    with pytest.raises(TypeError) as info:
        Model(net, nn.CrossEntropyLoss(), opt, metrics=metrics)
    message = str(info.value)
    assert message.startswith("For 'get_metrics', the argument 'metrics' must be None, dict or set, but got ")
    if metrics not in ((), []) and not isinstance(metrics, int):
        assert "metrics={'accuracy'}" in message  # the fix


def test_metrics_dict_of_metric_objects_and_empty_containers():
    from nbcallback.train import MAE, Accuracy

    net = mlp()
    opt = torch.optim.SGD(net.parameters(), 0.1)
    model = Model(net, nn.CrossEntropyLoss(), opt, metrics={"acc": Accuracy(), "top": Accuracy()})
    assert set(model.eval(blobs(2))) == {"acc", "top"}
    with pytest.raises(TypeError) as info:
        Model(net, nn.CrossEntropyLoss(), opt, metrics={1: MAE()})
    assert str(info.value).startswith(
        "For 'get_metrics', if 'metrics' is dict, the key in 'metrics' must be string and value in 'metrics' must be Metric"
    )
    for empty in (set(), {}):
        with pytest.raises(ValueError, match="can not be None or empty"):
            Model(net, nn.CrossEntropyLoss(), opt, metrics=empty).eval(blobs(1))


def test_mae_metric_in_model_regression():
    """``metrics={'mae': MAE()}`` as in MindSpore's regression tutorial (linear fit)."""
    from nbcallback.train import MAE, MSE
    from tests.train.helpers import regression

    torch.manual_seed(0)
    net = nn.Linear(4, 1)
    model = Model(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), 0.05), metrics={"mae": MAE(), "mse": MSE()})
    data = regression(8)
    before = model.eval(data)
    model.train(20, data)
    after = model.eval(data)
    assert after["mae"] < before["mae"] / 10 and after["mse"] < before["mse"] / 50
    x = torch.cat([b[0] for b in data])
    y = torch.cat([b[1] for b in data])
    with torch.no_grad():
        expected = (net(x) - y).abs().mean().item()
    assert after["mae"] == pytest.approx(expected, rel=1e-5)


def test_fit_checks():
    no_metrics = make_model(metrics=None)
    with pytest.raises(ValueError) as info:
        no_metrics.fit(1, blobs(1), blobs(1))
    assert str(info.value) == (
        "For 'Model.fit', if valid_dataset is not None, the model argument 'metrics' can not be None or empty, "
        "you should set the argument 'metrics' for model."
    )
    no_metrics.fit(1, blobs(1))  # no valid_dataset: plain training
    with pytest.raises(TypeError, match=("For 'Model.fit', the type of 'valid_frequency' must be a list or an "
                                         "integer, but got type")):
        make_model().fit(1, blobs(1), blobs(1), valid_frequency=1.0)
    with pytest.raises(ValueError, match="valid_frequency"):
        make_model().fit(1, blobs(1), blobs(1), valid_frequency=0)


def test_eval_without_metrics():
    with pytest.raises(ValueError) as info:
        make_model(metrics=None).eval(blobs(1))
    assert str(info.value) == (
        "For Model.eval, the model argument 'metrics' can not be None or empty, you should set the argument "
        "'metrics' for model."
    )


def test_optimizer_over_other_network_refused():
    net, other = mlp(), mlp(seed=1)
    with pytest.raises(ValueError, match="none of the optimizer's parameters belong to 'network'"):
        Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(other.parameters(), 0.1))


# --------------------------------------------------------------------------- training behaviour


def test_training_learns_with_int32_labels():
    data = blobs(8, label_dtype=torch.int32)
    model = make_model()
    before = model.eval(data)["accuracy"]
    model.train(5, data)
    after = model.eval(data)
    assert after["accuracy"] >= 0.9 and after["accuracy"] >= before
    assert type(after["accuracy"]) is float


class _ValidationAccuracy(Callback):
    """The accuracy of fit's validation, per epoch."""

    def __init__(self) -> None:
        self.accuracy: list[float] = []

    def on_train_epoch_end(self, run_context):
        self.accuracy.append(run_context.original_args()["eval_results"]["accuracy"])


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.int64])
def test_labels_of_other_integer_types(dtype):
    # uint8 (MNIST's label type), int16 and int64 labels train and validate as int32 ones do.
    data = blobs(8, label_dtype=dtype)
    model = make_model()
    before = model.eval(data)["accuracy"]
    validation = _ValidationAccuracy()
    model.fit(5, data, data, callbacks=[validation])
    assert len(validation.accuracy) == 5
    assert validation.accuracy[-1] >= 0.9 and validation.accuracy[-1] >= before
    assert model.eval(data)["accuracy"] == validation.accuracy[-1]


def test_forward_only_without_optimizer_and_network_returning_loss():
    net = mlp()
    before = [p.clone() for p in net.parameters()]
    Model(net, nn.CrossEntropyLoss()).train(1, blobs(2))
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters()))

    class LossNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = mlp()

        def forward(self, x, y):
            return nn.functional.cross_entropy(self.body(x), y)

    lossnet = LossNet()
    w0 = lossnet.body[0].weight.clone()
    Model(lossnet, None, torch.optim.SGD(lossnet.parameters(), 0.1)).train(1, blobs(2))
    assert not torch.equal(w0, lossnet.body[0].weight)


def test_dataloader_and_reset():
    from torch.utils.data import DataLoader, TensorDataset

    xs = torch.cat([x for x, _ in blobs(4)])
    ys = torch.cat([y for _, y in blobs(4)])
    loader = DataLoader(TensorDataset(xs, ys), batch_size=16, shuffle=True)
    model = make_model()
    model.fit(2, loader, loader)
    assert model.eval(loader)["accuracy"] > 0.5

    class Resettable(list):
        resets = 0

        def reset(self):
            Resettable.resets += 1

    make_model().fit(2, Resettable(blobs(2)), Resettable(blobs(2)))
    assert Resettable.resets == 4  # train + valid after each epoch


def test_initial_epoch_semantics():
    rec = Recorder(snapshot=lambda hook, cb: (cb.get("cur_epoch_num"), cb.get("cur_step_num"), cb.get("epoch_num")))
    make_model().train(4, blobs(2), callbacks=rec, initial_epoch=2)
    begins = [s for h, s in rec.snaps if h == "on_train_epoch_begin"]
    assert begins == [(3, 0, 2), (4, 2, 2)]
    steps = [s[1] for h, s in rec.snaps if h == "on_train_step_end"]
    assert steps == [1, 2, 3, 4]


@pytest.mark.parametrize("frequency, expected", [(1, [1, 2, 3, 4]), (2, [2, 4]), (3, [3]), ([1, 4], [1, 4]),
                                                 ([2, 3], [2, 3]), ([], [])])
def test_valid_frequency(frequency, expected):
    rec = Recorder(snapshot=lambda hook, cb: cb.get("cur_epoch_num"))
    make_model().fit(4, blobs(1), blobs(1), valid_frequency=frequency, callbacks=rec)
    assert [s for h, s in rec.snaps if h == "on_eval_begin"] == expected


@pytest.mark.parametrize("frequency", [(0, 2), (2,), 1.0, "2", True])
def test_valid_frequency_type_is_checked_like_mindspore(frequency):
    """MindSpore's fit accepts an int or a list only (tuple -> TypeError naming the type)."""
    with pytest.raises(TypeError, match=r"For 'Model.fit', the type of 'valid_frequency' must be a list or an integer"):
        make_model().fit(2, blobs(1), blobs(1), valid_frequency=frequency)


def test_valid_frequency_list_of_non_ints_refused():
    with pytest.raises(TypeError, match="valid_frequency"):
        make_model().fit(2, blobs(1), blobs(1), valid_frequency=[1.0])


def test_valid_frequency_with_initial_epoch_uses_absolute_epoch():
    rec = Recorder(snapshot=lambda hook, cb: cb.get("cur_epoch_num"))
    make_model().fit(4, blobs(1), blobs(1), valid_frequency=2, callbacks=rec, initial_epoch=1)
    assert [s for h, s in rec.snaps if h == "on_eval_begin"] == [2, 4]


def test_amp_o1_on_cpu_trains():
    data = blobs(8)
    model = make_model(amp_level="O1")
    losses = []

    class Grab(Callback):
        def on_train_step_end(self, run_context):
            losses.append(float(run_context.original_args().net_outputs))

    model.train(5, data, callbacks=Grab())
    assert sum(losses[-8:]) < sum(losses[:8])
    assert model.eval(data)["accuracy"] >= 0.8
    assert model.predict_network[0].weight.dtype is torch.float32
    make_model(amp_level="O2").train(1, data)
    make_model(amp_level="auto").train(1, data)


# --------------------------------------------------------------------------- metrics / eval / predict


def test_eval_every_builtin_metric_name():
    data = blobs(4, n_classes=6)
    names = {"accuracy", "acc", "loss", "top_1_accuracy", "top_5_accuracy", "precision", "recall", "F1"}
    model = make_model(n_classes=6, metrics=names)
    model.train(3, data)
    result = model.eval(data)
    assert set(result) == names
    for name in ("accuracy", "acc", "loss", "top_1_accuracy", "top_5_accuracy"):
        assert type(result[name]) is float, name
    for name in ("precision", "recall", "F1"):
        assert isinstance(result[name], list) and len(result[name]) == 6
        assert all(type(v) is float and 0.0 <= v <= 1.0 for v in result[name])

    net = model.predict_network
    with torch.no_grad():
        logits = torch.cat([net(x) for x, _ in data])
        labels = torch.cat([y for _, y in data])
        losses = [nn.functional.cross_entropy(net(x), y).item() for x, y in data]
    pred = logits.argmax(1)
    acc = (pred == labels).float().mean().item()
    assert result["accuracy"] == pytest.approx(acc) and result["acc"] == pytest.approx(acc)
    assert result["top_1_accuracy"] == pytest.approx(acc)
    top5 = (logits.topk(5, 1).indices == labels[:, None]).any(1).float().mean().item()
    assert result["top_5_accuracy"] == pytest.approx(top5) and top5 >= acc
    assert result["loss"] == pytest.approx(sum(losses) / len(losses), rel=1e-5)
    for c in range(6):
        tp = ((pred == c) & (labels == c)).sum().item()
        p = (pred == c).sum().item()
        a = (labels == c).sum().item()
        prec = tp / p if p else 0.0
        rec = tp / a if a else 0.0
        assert result["precision"][c] == pytest.approx(prec)
        assert result["recall"][c] == pytest.approx(rec)
        assert result["F1"][c] == pytest.approx(2 * tp / (p + a) if p + a else 0.0)


def test_mae_mse_with_regression_net():
    data = regression(4)
    torch.manual_seed(0)
    net = nn.Linear(4, 1)
    model = Model(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), 0.05), metrics={"mae", "mse", "loss"})
    model.train(10, data)
    result = model.eval(data)
    with torch.no_grad():
        pred = torch.cat([net(x) for x, _ in data])
        target = torch.cat([y for _, y in data])
    assert result["mae"] == pytest.approx((pred - target).abs().mean().item(), rel=1e-5)
    assert result["mse"] == pytest.approx(((pred - target) ** 2).mean().item(), rel=1e-5)
    assert all(type(v) is float for v in result.values())
    assert result["mse"] < 1.0


def test_user_metric_object():
    class CountSamples:  # duck-typed, not a Metric subclass
        def clear(self):
            self.n = 0

        def update(self, logits, labels):
            self.n += len(labels)

        def eval(self):
            return self.n

    class MeanLogit(Metric):
        def clear(self):
            self.values = []

        def update(self, logits, labels):
            self.values.append(logits.mean().item())

        def eval(self):
            return sum(self.values) / len(self.values)

    net = mlp()
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1),
                  metrics={"count": CountSamples(), "mean": MeanLogit(), "acc": get_metric_fn("accuracy")})
    result = model.eval(blobs(3))
    assert result["count"] == 48 and isinstance(result["mean"], float) and "acc" in result
    assert model.eval(blobs(2))["count"] == 32  # cleared between runs


def test_custom_eval_network_and_indexes():
    net = mlp()

    class EvalNet(nn.Module):
        def forward(self, x, y):
            out = net(x)
            return out, y, nn.functional.cross_entropy(out, y)

    model = Model(net, None, torch.optim.SGD(net.parameters(), 0.1), metrics={"accuracy", "loss"},
                  eval_network=EvalNet(), eval_indexes=[2, 0, 1])
    result = model.eval(blobs(2))
    assert set(result) == {"accuracy", "loss"}

    class Pair(nn.Module):
        def forward(self, x, y):
            return net(x), y

    model = Model(net, None, None, metrics={"accuracy"}, eval_network=Pair())
    assert 0 <= model.eval(blobs(2))["accuracy"] <= 1


def test_eval_loss_is_mean_over_all_batches():
    data = blobs(3)
    valid = blobs(3, seed=11) + [(torch.randn(5, 8), torch.randint(0, 3, (5,)))]  # uneven last batch
    seen = {}
    model = make_model(metrics={"accuracy", "loss"})

    class Grab(Callback):
        def on_train_epoch_end(self, run_context):
            cb = run_context.original_args()
            net = model.predict_network
            with torch.no_grad():
                losses = [nn.functional.cross_entropy(net(x), y).item() for x, y in valid]
            seen["expected"] = sum(losses) / len(losses)
            seen["last"] = losses[-1]
            seen["results"] = dict(cb.eval_results)

    model.fit(1, data, valid, callbacks=Grab())
    assert seen["results"]["eval_loss"] == pytest.approx(seen["expected"], rel=1e-5)
    assert seen["results"]["eval_loss"] != pytest.approx(seen["last"])
    assert seen["results"]["loss"] == pytest.approx(seen["expected"], rel=1e-5)


def test_eval_switches_to_eval_mode_and_back():
    modes = []

    class Probe(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = mlp()
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            modes.append(self.training)
            return self.drop(self.body(x))

    net = Probe()
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1), metrics={"accuracy"})
    model.fit(1, blobs(2), blobs(2))
    assert modes == [True, True, False, False]
    assert net.training


def test_predict():
    model = make_model()
    x = torch.randn(5, 8)
    out = model.predict(x)
    assert out.shape == (5, 3) and not out.requires_grad
    assert torch.allclose(out, model.predict_network(x))

    class NoneNet(nn.Module):
        def forward(self, x):
            return None

    with pytest.raises(RuntimeError, match="The output data can not be None, please check your net or input data."):
        Model(NoneNet()).predict(x)


# --------------------------------------------------------------------------- resume protocol


def test_resume_protocol():
    data = blobs(4)
    calls = []

    class Resume(Callback):
        def on_train_begin(self, run_context):
            run_context.resume_at(1, step_in_epoch=2, cur_step_num=6, after_skip=lambda: calls.append("after"))

    rec = Recorder(snapshot=lambda hook, cb: (cb.get("cur_epoch_num"), cb.get("cur_step_num"),
                                              cb.get("train_dataset_element")))
    make_model().train(3, data, callbacks=[Resume(), rec])
    steps = [s for h, s in rec.snaps if h == "on_train_step_begin"]
    assert [(e, n) for e, n, _ in steps] == [(2, 7), (2, 8), (3, 9), (3, 10), (3, 11), (3, 12)]
    assert torch.equal(steps[0][2][0], data[2][0])
    assert calls == ["after"]
    assert [s[0] for h, s in rec.snaps if h == "on_train_epoch_begin"] == [2, 3]


@pytest.mark.parametrize("resume", [{"epoch": 5}, {"epoch": 1, "step_in_epoch": 4}, {"epoch": 0, "cur_step_num": -1}])
def test_resume_protocol_invalid(resume):
    class Resume(Callback):
        def on_train_begin(self, run_context):
            run_context.resume_at(**resume)

    with pytest.raises(ValueError, match="Cannot resume"):
        make_model().train(3, blobs(4), callbacks=Resume())
