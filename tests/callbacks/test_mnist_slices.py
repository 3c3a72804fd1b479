"""The callbacks in real training on small MNIST slices (the tutorial's LeNet5 and pipeline)."""
import pytest
import torch
from torch import nn

from nbcallback.train import (
    BestCheckpoint,
    EarlyStopping,
    History,
    LossMonitor,
    Model,
    ReduceLROnPlateau,
    SummaryCollector,
    load_checkpoint,
)
from tests.callbacks.support import LeNet5, Recorder, mnist, same_weights, weights


def test_fit_with_history_early_stopping_plateau_best_checkpoint_and_summary(mnist_root, tmp_path, capsys):
    torch.manual_seed(0)
    net = LeNet5()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    model = Model(net, nn.CrossEntropyLoss(), opt, metrics={"accuracy"})
    train = mnist(mnist_root / "train", num_samples=2000)
    valid = mnist(mnist_root / "test", num_samples=500, shuffle=False)
    history = History()
    stopper = EarlyStopping(monitor="accuracy", patience=1, restore_best_weights=True, verbose=True)
    best = BestCheckpoint(tmp_path / "best")
    lrs = Recorder("on_train_epoch_end", lambda cb: opt.param_groups[0]["lr"])
    snapshots = Recorder("on_train_epoch_end", lambda cb: weights(net))
    eval_losses = Recorder("on_train_epoch_end", lambda cb: cb.eval_results["eval_loss"])
    callbacks = [
        LossMonitor(16),
        history,
        snapshots,
        eval_losses,
        ReduceLROnPlateau(monitor="eval_loss", patience=1, factor=0.5, verbose=True),
        lrs,
        best,
        SummaryCollector(tmp_path / "summary", collect_freq=8),
        stopper,
    ]
    model.fit(6, train, valid, callbacks=callbacks)
    epochs = history.epoch["epoch"]
    accuracy = history.history["accuracy"]
    out = capsys.readouterr().out
    assert epochs == list(range(1, len(epochs) + 1))
    assert len(history.history["net_output"]) == len(accuracy) == len(epochs)
    assert out.startswith("epoch: 1 step: 16, loss is ")
    assert f"Eval result: epoch 1, metrics: {{'accuracy': {accuracy[0]}}}" in out
    assert accuracy[0] > 0.5  # it learns

    # BestCheckpoint holds the best epoch's weights: evaluating them gives the best accuracy.
    assert best.best == max(accuracy) and best.best_epoch == accuracy.index(max(accuracy)) + 1
    fresh = LeNet5()
    load_checkpoint(best.best_ckpt_file_name, net=fresh)
    assert same_weights(weights(fresh), snapshots.values[best.best_epoch - 1])
    assert Model(fresh, nn.CrossEntropyLoss(), metrics={"accuracy"}).eval(valid)["accuracy"] == max(accuracy)

    # EarlyStopping: stopped after `patience` epochs without a new best, weights restored to that best.
    if stopper.stopped_epoch:
        assert stopper.stopped_epoch == epochs[-1] and stopper.best_epoch == best.best_epoch
        assert max(accuracy[stopper.best_epoch:]) <= max(accuracy)
        assert same_weights(weights(net), snapshots.values[best.best_epoch - 1])
        assert out.rstrip().endswith("Epoch %05d: early stopping" % stopper.stopped_epoch)
    else:
        assert len(epochs) == 6

    # ReduceLROnPlateau (patience 1) halved the rate after each epoch whose eval_loss did not improve.
    expected, lr, best_loss = [], 0.05, float("inf")
    for epoch, loss in enumerate(eval_losses.values, start=1):
        if loss < best_loss - 1e-4:
            best_loss = loss
        else:
            lr *= 0.5
            assert f"Epoch {epoch:05d}: ReduceLROnPlateau reducing learning rate to {lr}." in out
        expected.append(lr)
    assert lrs.values == expected

    from tensorboard.backend.event_processing import event_accumulator as ea

    acc = ea.EventAccumulator(str(tmp_path / "summary"), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    tags = acc.Tags()
    steps = len(epochs) * 32
    assert [e.step for e in acc.Scalars("loss/auto")] == [1] + list(range(8, steps + 1, 8))
    assert [e.value for e in acc.Scalars("eval/accuracy")] == pytest.approx(accuracy)
    assert "conv1.weight/auto" in tags["histograms"] and tags["graph"] is True
    assert tags["images"] == ["input_data/auto"]
