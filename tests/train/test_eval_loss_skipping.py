"""``Model.eval`` skips the per-batch loss only where nothing can observe it."""
from __future__ import annotations

import torch
from torch import nn

from nbcallback.train import Callback, Model


class CountingLoss(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.inner = nn.CrossEntropyLoss()

    def forward(self, logits, labels):
        self.calls += 1
        return self.inner(logits, labels)


def _batches(n: int = 7) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(16, 8, generator=generator), torch.randint(0, 3, (16,), generator=generator))
            for _ in range(n)]


def _model(metrics) -> tuple[Model, CountingLoss, nn.Module]:
    torch.manual_seed(0)
    network = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    loss = CountingLoss()
    return Model(network, loss, torch.optim.SGD(network.parameters(), 0.1), metrics=metrics), loss, network


class LastOutputs(Callback):
    def on_eval_end(self, run_context):
        self.outputs = run_context.original_args().net_outputs


def test_accuracy_only_eval_computes_the_loss_once_and_net_outputs_stay_complete() -> None:
    model, loss, network = _model({"accuracy"})
    data = _batches()
    seen = LastOutputs()
    accuracy = model.eval(data, callbacks=[seen])["accuracy"]
    assert loss.calls == 1  # only the last batch, for net_outputs at on_eval_end
    with torch.no_grad():
        logits = [network(x) for x, _ in data]
        expected = sum(int((out.argmax(1) == y).sum()) for out, (_, y) in zip(logits, data)) / (16 * len(data))
        last_loss = nn.functional.cross_entropy(logits[-1], data[-1][1])
    assert accuracy == expected
    loss_value, last_logits, label = seen.outputs
    assert torch.allclose(loss_value, last_loss) and torch.equal(label, data[-1][1])
    assert torch.allclose(last_logits, logits[-1])


def test_the_loss_is_computed_per_batch_when_something_reads_it() -> None:
    model, loss, _ = _model({"accuracy", "loss"})
    result = model.eval(_batches())
    assert loss.calls == 7 and result["loss"] > 0

    class StepHook(Callback):
        def on_eval_step_end(self, run_context):
            self.loss = run_context.original_args().net_outputs[0]

    model, loss, _ = _model({"accuracy"})
    hook = StepHook()
    model.eval(_batches(), callbacks=[hook])
    assert loss.calls == 7 and hook.loss is not None

    model, loss, _ = _model({"accuracy"})
    model.fit(1, _batches(3), _batches(), callbacks=[])  # fit reports eval_loss: every batch counts
    assert loss.calls == 3 + 7
