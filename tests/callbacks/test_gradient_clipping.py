"""The hook between backward and the optimizer step: GradientClipping, and gradient accumulation as a callback."""
from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn

from nbcallback.train import Callback, GradientClipping, Model, RunContext


def _problem(n_batches: int = 6, batch: int = 8, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, 5, generator=gen) * 4, torch.randint(0, 3, (batch,), generator=gen)) for _ in range(n_batches)]


def _net(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 3))


def _model(net: nn.Module, lr: float = 0.5, momentum: float = 0.0) -> Model:
    return Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr, momentum=momentum))


def _norms_at_optimizer_step(model: Model) -> list[float]:
    """The total gradient norm each time the optimizer steps (read in its step pre-hook)."""
    norms: list[float] = []
    optimizer = model.train_network.optimizer

    def record(opt, args, kwargs) -> None:
        grads = [p.grad for group in opt.param_groups for p in group["params"] if p.grad is not None]
        norms.append(float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))))

    optimizer.register_step_pre_hook(record)
    return norms


def test_the_gradient_norm_at_the_optimizer_step_is_at_most_max_norm() -> None:
    data = _problem()
    plain = _model(_net())
    unclipped = _norms_at_optimizer_step(plain)
    plain.train(1, data)
    assert max(unclipped) > 1.0  # the problem has large gradients, so clipping at 0.5 has work to do

    clipped_model = _model(_net())
    clipped = _norms_at_optimizer_step(clipped_model)
    clipper = GradientClipping(max_norm=0.5)
    clipped_model.train(1, data, callbacks=[clipper])
    assert len(clipped) == len(data)
    assert all(norm <= 0.5 * (1 + 1e-5) for norm in clipped), clipped
    assert float(clipper.last_norm) > 0.5  # the norm before clipping, kept as a device tensor


def test_clipped_training_is_the_hand_written_loop_with_clip_grad_norm() -> None:
    data = _problem()
    net = _net()
    _model(net).train(2, data, callbacks=[GradientClipping(max_norm=0.3, norm_type=math.inf)])

    reference = _net()
    optimizer = torch.optim.SGD(reference.parameters(), 0.5)
    for _ in range(2):
        for x, y in data:
            optimizer.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(reference(x), y).backward()
            nn.utils.clip_grad_norm_(reference.parameters(), 0.3, math.inf)
            optimizer.step()
    for got, expected in zip(net.parameters(), reference.parameters()):
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)


def test_a_norm_above_every_gradient_changes_nothing() -> None:
    data = _problem()
    without, with_hook = _net(), _net()
    _model(without).train(1, data)
    _model(with_hook).train(1, data, callbacks=[GradientClipping(max_norm=1e9)])
    for a, b in zip(without.parameters(), with_hook.parameters()):
        assert torch.equal(a, b)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"max_norm": 0}, ValueError, "'max_norm' must be a positive finite number"),
        ({"max_norm": math.inf}, ValueError, "'max_norm' must be a positive finite number"),
        ({"max_norm": "1"}, TypeError, "'max_norm' must be int or float, but got str"),
        ({"max_norm": 1.0, "norm_type": -2}, ValueError, "'norm_type' must be positive or math.inf"),
        ({"max_norm": True}, TypeError, "'max_norm' must be int or float, but got bool"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        GradientClipping(**kwargs)


def test_a_model_without_optimizer_is_told_what_the_hook_needs() -> None:
    net = _net()
    with pytest.raises(ValueError, match="no optimizer"):
        Model(net, nn.CrossEntropyLoss()).train(1, _problem(), callbacks=[GradientClipping(1.0)])


# --------------------------------------------------------------------------- accumulation as a callback


class GradientAccumulation(Callback):
    """Take the optimizer step once every ``steps`` steps, on the mean of their gradients (the docs' example)."""

    def __init__(self, steps: int) -> None:
        self.steps = steps

    def on_train_backward_end(self, run_context: RunContext) -> None:
        cb_params = run_context.original_args()
        if cb_params.cur_step_num % self.steps:
            run_context.skip_optimizer_step()  # keep these gradients; the next backward adds to them
            return
        for group in cb_params.optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad.div_(self.steps)


@pytest.mark.parametrize("optimizer", ["sgd-momentum", "adam"])
def test_accumulating_k_steps_is_one_step_on_a_k_times_larger_batch(optimizer) -> None:
    k, micro = 4, _problem(n_batches=8, batch=8)
    large = [(torch.cat([x for x, _ in micro[i:i + k]]), torch.cat([y for _, y in micro[i:i + k]]))
             for i in range(0, len(micro), k)]

    def build(net: nn.Module) -> Model:
        if optimizer == "adam":
            return Model(net, nn.CrossEntropyLoss(), torch.optim.Adam(net.parameters(), 1e-2))
        return _model(net, lr=0.3, momentum=0.9)

    accumulated, reference = _net(), _net()
    steps_taken: list[int] = []
    model = build(accumulated)
    model.train_network.optimizer.register_step_post_hook(lambda *a: steps_taken.append(1))
    model.train(1, micro, callbacks=[GradientAccumulation(k)])
    build(reference).train(1, large)

    assert len(steps_taken) == len(micro) // k  # one optimizer step per window
    for got, expected in zip(accumulated.parameters(), reference.parameters()):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_hooks_and_losses_of_skipped_steps_are_as_usual() -> None:
    """A skipped optimizer step is still a step for the callbacks: every hook runs, net_outputs is its loss."""
    seen: list[tuple[str, int]] = []

    class Watch(Callback):
        def on_train_step_begin(self, run_context: RunContext) -> None:
            seen.append(("begin", run_context.original_args().cur_step_num))

        def on_train_backward_end(self, run_context: RunContext) -> None:
            params = run_context.original_args().network.parameters()
            assert all(p.grad is not None for p in params)  # backward has run
            seen.append(("backward_end", run_context.original_args().cur_step_num))

        def on_train_step_end(self, run_context: RunContext) -> None:
            loss = run_context.original_args().net_outputs
            assert loss.ndim == 0 and not loss.requires_grad
            seen.append(("end", run_context.original_args().cur_step_num))

    _model(_net()).train(1, _problem(n_batches=4), callbacks=[GradientAccumulation(2), Watch()])
    assert seen == [(hook, step) for step in range(1, 5) for hook in ("begin", "backward_end", "end")]


def test_a_window_left_open_at_the_end_of_a_run_does_not_leak_into_the_next_run() -> None:
    data = _problem(n_batches=3)
    net = _net()
    model = _model(net)
    model.train(1, data, callbacks=[GradientAccumulation(2)])  # step 3 is skipped: its gradients are left
    assert model.train_network.backward_end is None
    after_first = copy.deepcopy(net)
    model.train(1, data[:1], callbacks=[GradientAccumulation(1)])  # its first step starts from zero gradients
    reference = copy.deepcopy(after_first)
    optimizer = torch.optim.SGD(reference.parameters(), 0.5)
    nn.functional.cross_entropy(reference(data[0][0]), data[0][1]).backward()
    optimizer.step()
    for got, expected in zip(net.parameters(), reference.parameters()):
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)


def test_skipping_a_step_under_float16_loss_scaling_is_refused() -> None:
    from nbcallback.train.cells import TrainOneStepCell

    net = _net()
    cell = TrainOneStepCell(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1),
                            grad_scaler=torch.amp.GradScaler("cpu"))
    cell.set_backward_end(lambda: False)
    x, y = _problem(n_batches=1)[0]
    with pytest.raises(RuntimeError, match="not supported with float16 loss scaling"):
        cell(x, y)


# --------------------------------------------------------------------------- cost on an accelerator


@pytest.mark.parametrize("device", ["meta"] + (["cuda"] if torch.cuda.is_available() else []))
def test_clipping_and_accumulation_read_nothing_on_the_host(device) -> None:
    """The hook adds device operations only (the clipping's kernels), never a host read: no GPU wait per step."""
    from tests.perf.test_step_ops import model_steps

    plain = model_steps(device, [])
    clipped = model_steps(device, [GradientClipping(1.0)])
    accumulated = model_steps(device, [GradientAccumulation(2)])
    assert {reads for _, reads in plain + clipped + accumulated} == {0}
    assert all(ops > plain_ops for (ops, _), (plain_ops, _) in zip(clipped, plain))  # it does clip, on the device
