import math

import pytest
import torch
from torch import nn

from nbcallback.train import History, LambdaCallback, LossMonitor, Model, TerminateOnNaN
from tests.callbacks.support import toy_batches, toy_net


class PoisonedLoss(nn.Module):
    """Cross-entropy that turns into ``bad`` from the ``at``-th call on."""

    def __init__(self, at, bad=math.nan):
        super().__init__()
        self.calls, self.at, self.bad = 0, at, bad

    def forward(self, logits, labels):
        self.calls += 1
        loss = nn.functional.cross_entropy(logits, labels)
        return loss * self.bad if self.calls >= self.at else loss


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_stops_quietly_and_finishes_the_run(bad, capsys):
    net = toy_net()
    model = Model(net, PoisonedLoss(at=6, bad=bad), torch.optim.SGD(net.parameters(), lr=0.1))
    stopper, history = TerminateOnNaN(), History()
    ended = []
    model.train(5, toy_batches(128), callbacks=[stopper, history, LambdaCallback(on_train_end=lambda rc: ended.append(1))])
    assert (stopper.stopped_epoch, stopper.stopped_step) == (2, 6)
    assert history.epoch["epoch"] == [1, 2] and ended == [1]
    assert capsys.readouterr().out == ""


def test_healthy_training_is_untouched():
    net = toy_net()
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    stopper, history = TerminateOnNaN(), History()
    model.train(2, toy_batches(128), callbacks=[stopper, history])
    assert stopper.stopped_step == 0 and history.epoch["epoch"] == [1, 2]


def test_loss_monitor_still_raises_when_present():
    net = toy_net()
    model = Model(net, PoisonedLoss(at=2), torch.optim.SGD(net.parameters(), lr=0.1))
    with pytest.raises(ValueError, match="loss is NAN or INF"):
        model.train(1, toy_batches(128), callbacks=[TerminateOnNaN(), LossMonitor(0)])
