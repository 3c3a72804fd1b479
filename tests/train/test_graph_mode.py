"""Graph mode (``set_context(mode=GRAPH_MODE)``, ``Model(graph_mode=...)``): the captured step gives eager's results.

One eager run and one graph-mode run of the same ``fit`` (a tiny MLP, SGD with momentum, 2 epochs of 6
batches whose last one is smaller, a learning-rate schedule, the Dashboard's lr setter, a callback that
freezes a layer mid-run, ModelCheckpoint, HookTrace) are compared: per-step losses and final weights
within ``TOLERANCE``, the hooks and what they saw identical, the graph run's checkpoint loadable by an
eager network. They compile with ``aot_eager`` (torch.compile's capture and autograd, no code
generation: seconds); one small test compiles with inductor, the default on the CPU.
"""
from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from nbcallback import GRAPH_MODE, PYNATIVE_MODE, context, get_context, set_context
from nbcallback.train import (
    Callback,
    CheckpointConfig,
    HookTrace,
    LearningRateScheduler,
    Model,
    ModelCheckpoint,
    load_checkpoint,
    load_param_into_net,
)
from nbcallback.train import graph
from nbcallback.train.cells import TrainOneStepCell
from nbcallback.train.graph import GraphModeWarning, GraphStep, compile_options, eager_reason, uses_cuda_graphs
from nbcallback.widgets.controls import apply_learning_rate
from tests.train.helpers import blobs, make_model, mlp

#: Largest difference allowed between an eager and a graph-mode loss or weight (float32; the same
#: operations, in another order where the compiler fuses them).
TOLERANCE = 1e-5
EPOCHS = 2
AOT_EAGER = {"backend": "aot_eager"}


@pytest.fixture(autouse=True)
def _pynative_again():
    yield
    set_context(mode=PYNATIVE_MODE)


def _train_data() -> list[tuple[torch.Tensor, torch.Tensor]]:
    return blobs(5, 16) + blobs(1, 7, seed=3)  # the last batch is smaller: drop_remainder=False


class Record(Callback):
    """Per step: the loss, the type of the learning rate the callbacks see, and how many graphs torch.compile made."""

    def __init__(self) -> None:
        self.losses: list[float] = []
        self.lr_types: set[type] = set()
        self.graphs: list[int] = []
        self.outputs: set[tuple[Any, ...]] = set()

    def on_train_step_end(self, run_context: Any) -> None:
        cb_params = run_context.original_args()
        loss = cb_params.net_outputs
        self.outputs.add((type(loss), loss.dim(), loss.requires_grad, loss.device))
        self.losses.append(float(loss))
        self.lr_types |= {type(group["lr"]) for group in cb_params.optimizer.param_groups}
        self.graphs.append(torch._dynamo.utils.counters["stats"]["unique_graphs"])


class EditNetwork(Callback):
    """At step 8, what a user's callback might do: freeze the first layer; at step 9, the Dashboard's lr box."""

    def on_train_step_end(self, run_context: Any) -> None:
        cb_params = run_context.original_args()
        if cb_params.cur_step_num == 8:
            cb_params.network[0].weight.requires_grad_(False)
        if cb_params.cur_step_num == 9:
            apply_learning_rate(cb_params.optimizer, 0.2)


def _fit(graph_mode: Any, folder: Path) -> dict[str, Any]:
    model = make_model(momentum=0.9, graph_mode=graph_mode)
    record, trace = Record(), HookTrace(keep_steps=100)
    checkpoints = ModelCheckpoint(prefix="net", directory=str(folder),
                                  config=CheckpointConfig(save_checkpoint_steps=6, keep_checkpoint_max=1))
    schedule = LearningRateScheduler(lambda lr, step: lr * 0.5 if step == 4 else lr)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        model.fit(EPOCHS, _train_data(), blobs(2, 16, seed=5),
                  callbacks=[schedule, EditNetwork(), record, checkpoints, trace])
    return {"model": model, "record": record, "trace": trace, "stdout": out.getvalue(),
            "checkpoint": sorted(folder.glob("*.ckpt"))[-1]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    compiled_before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    eager = _fit(False, tmp_path_factory.mktemp("eager"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphModeWarning)  # no silent fallback to eager
        captured = _fit(AOT_EAGER, tmp_path_factory.mktemp("graph"))
    captured["graphs"] = torch._dynamo.utils.counters["stats"]["unique_graphs"] - compiled_before
    return eager, captured


def test_graph_mode_gives_the_eager_losses_and_weights(runs) -> None:
    eager, captured = runs
    assert len(captured["record"].losses) == len(eager["record"].losses) == 12
    assert captured["record"].losses == pytest.approx(eager["record"].losses, abs=TOLERANCE)
    for (name, a), (_, b) in zip(eager["model"].predict_network.named_parameters(),
                                 captured["model"].predict_network.named_parameters()):
        assert torch.allclose(a, b, atol=TOLERANCE), name
    # net_outputs is what eager gives: a detached 0-d tensor, still on the model's device.
    assert captured["record"].outputs == eager["record"].outputs == {(torch.Tensor, 0, False, eager["model"].device)}
    # The run was really captured: torch.compile produced graphs, and printed the first step's time once.
    assert captured["graphs"] > 0
    assert captured["stdout"].count("Graph mode: the training step was captured and compiled in") == 1
    assert "Graph mode" not in eager["stdout"]


def test_learning_rate_changes_apply_at_the_next_step_as_in_eager(runs) -> None:
    eager, captured = runs
    for run in (eager, captured):
        group = run["model"]._optimizer.param_groups[0]
        assert type(group["lr"]) is float and group["lr"] == pytest.approx(0.2)  # the lr box's value, a float
        assert run["record"].lr_types == {float}  # callbacks never see the tensor the compiled step reads
    # The steps after each change (4: halved, 9: raised to 0.2) give eager's losses; a stale rate would not.
    assert captured["record"].losses[4:] == pytest.approx(eager["record"].losses[4:], abs=TOLERANCE)
    # ... without compiling again: steps 5 and 10 (the first at a new rate) reuse the graphs of the step before.
    graphs = captured["record"].graphs
    assert graphs[4] == graphs[3] and graphs[9] == graphs[8], graphs


def test_the_frozen_layer_stays_frozen_in_graph_mode(runs) -> None:
    eager, captured = runs
    weight = captured["model"].predict_network[0].weight
    assert not weight.requires_grad
    assert torch.allclose(weight, eager["model"].predict_network[0].weight, atol=TOLERANCE)


def test_every_hook_fires_in_the_same_order_with_the_same_cb_params(runs) -> None:
    eager, captured = runs
    eager_hooks, graph_hooks = eager["trace"].hooks, captured["trace"].hooks
    assert len(graph_hooks) == len(eager_hooks)
    for a, b in zip(eager_hooks, graph_hooks):
        assert (a.hook, a.phase, a.epoch, a.step, a.callbacks) == (b.hook, b.phase, b.epoch, b.step, b.callbacks)
        assert set(a.changes) == set(b.changes)
        for key, value in a.changes.items():
            if isinstance(value, (float, dict)):  # the loss, the metrics and eval_loss
                assert b.changes[key] == pytest.approx(value, abs=TOLERANCE), (a.hook, key)
            else:
                assert b.changes[key] == value, (a.hook, key)


def test_a_graph_mode_checkpoint_loads_into_an_eager_network(runs) -> None:
    _, captured = runs
    assert captured["checkpoint"].name.startswith("net-2_")
    fresh = mlp(seed=7)
    not_loaded, _ = load_param_into_net(fresh, load_checkpoint(str(captured["checkpoint"])))
    assert not not_loaded
    device = captured["model"].device
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(9)).to(device)
    with torch.no_grad():
        assert torch.equal(fresh.to(device)(x), captured["model"].predict_network(x))


def test_inductor_the_default_backend_on_the_cpu_matches_eager() -> None:
    data = blobs(3, 16)
    losses = {}
    for mode in (PYNATIVE_MODE, GRAPH_MODE):
        set_context(mode=mode)
        model, record = make_model(), Record()
        with contextlib.redirect_stdout(io.StringIO()):
            model.train(1, data, callbacks=[record])
        losses[mode] = record.losses
    # inductor's defaults (on the CPU; on CUDA with CUDA graphs: benchmarks/gpu_check.sh runs this file there)
    assert isinstance(model._graph.captured, GraphStep) and model._graph.captured.options == compile_options(model.device)
    assert losses[GRAPH_MODE] == pytest.approx(losses[PYNATIVE_MODE], abs=TOLERANCE)


# ------------------------------------------------------------------ the choice, without compiling


def test_set_context_graph_mode_drives_models_unless_they_decide() -> None:
    assert get_context("mode") == PYNATIVE_MODE  # MindSpore 2.x's default: eager
    model = make_model()
    assert model._graph.step(model.train_network) is model.train_network
    context.set_context(mode=context.GRAPH_MODE, device_target="CPU")  # MindSpore 1.x's spelling runs too
    assert get_context("mode") == GRAPH_MODE
    assert isinstance(model._graph.step(model.train_network), GraphStep)  # read when a run starts
    kept_eager = make_model(graph_mode=False)
    assert kept_eager._graph.step(kept_eager.train_network) is kept_eager.train_network


def test_the_same_model_reuses_its_captured_step() -> None:
    model = make_model(graph_mode=AOT_EAGER)
    first = model._graph.step(model.train_network)
    assert model._graph.step(model.train_network) is first


def test_compile_options_use_cuda_graphs_on_a_gpu_only() -> None:
    cpu, cuda = torch.device("cpu"), torch.device("cuda", 0)
    assert compile_options(cpu) == {}
    assert compile_options(cuda) == {"mode": "reduce-overhead"}
    assert compile_options(cuda, {"mode": "max-autotune-no-cudagraphs"}) == {"mode": "max-autotune-no-cudagraphs"}
    assert compile_options(cuda, AOT_EAGER) == AOT_EAGER
    assert uses_cuda_graphs(cuda, compile_options(cuda))
    assert uses_cuda_graphs(cuda, {"backend": "cudagraphs"})
    assert not uses_cuda_graphs(cuda, {"mode": "max-autotune-no-cudagraphs"})
    assert not uses_cuda_graphs(cpu, {"mode": "reduce-overhead"})
    assert not uses_cuda_graphs(cuda, AOT_EAGER)


def test_what_graph_mode_cannot_capture_is_named() -> None:
    network = mlp()
    optimizer = torch.optim.SGD(network.parameters(), 0.1)
    cell = TrainOneStepCell(network, nn.CrossEntropyLoss(), optimizer)
    cpu = torch.device("cpu")
    assert eager_reason(cell, cpu, AOT_EAGER) is None
    assert "no optimizer" in eager_reason(network, cpu, AOT_EAGER)
    scaled = TrainOneStepCell(network, nn.CrossEntropyLoss(), optimizer, grad_scaler=object())
    assert "float16 loss scaling" in eager_reason(scaled, cpu, AOT_EAGER)
    assert "DDP" in eager_reason(cell, cpu, AOT_EAGER, distributed=True)


def test_a_hook_inside_the_step_keeps_the_run_eager(monkeypatch) -> None:
    class Manager:  # a run whose callbacks act on a hook between backward and the optimizer step
        def runner(self, hook: str) -> Any:
            return print if hook == "on_train_step_grads" else None

    monkeypatch.setattr(graph, "TRAIN_HOOKS", graph.TRAIN_HOOKS + ("on_train_step_grads",))
    cell = make_model().train_network
    reason = eager_reason(cell, torch.device("cpu"), AOT_EAGER, Manager())
    assert "on_train_step_grads" in reason and "between backward and the optimizer step" in reason


def test_gradient_clipping_keeps_the_run_eager_and_clips() -> None:
    """A callback on on_train_backward_end (here GradientClipping) runs between backward and the optimizer step,
    which a captured step cannot call: graph mode says so once and trains eagerly, with the clipping applied."""
    from nbcallback.train import GradientClipping

    data = blobs(3, 16)
    eager, record = make_model(), Record()
    eager.train(1, data, callbacks=[GradientClipping(0.01), record])
    graphed, graphed_record = make_model(graph_mode=AOT_EAGER), Record()
    with pytest.warns(GraphModeWarning, match="on_train_backward_end") as caught:
        graphed.train(1, data, callbacks=[GradientClipping(0.01), graphed_record])
    assert len([w for w in caught if issubclass(w.category, GraphModeWarning)]) == 1
    assert graphed_record.losses == record.losses  # the eager, clipped step itself: identical
    unclipped = Record()
    make_model().train(1, data, callbacks=[unclipped])
    assert unclipped.losses[1:] != record.losses[1:]  # the clipping did act


def test_without_torch_compile_the_run_trains_eagerly_with_one_warning(monkeypatch) -> None:
    data = blobs(3, 16)
    eager, record = make_model(), Record()
    eager.train(1, data, callbacks=[record])
    monkeypatch.setattr(torch._dynamo, "is_dynamo_supported", lambda: False)
    fallback, fallback_record = make_model(graph_mode=True), Record()
    with pytest.warns(GraphModeWarning, match="trains eagerly, because torch.compile is not supported") as caught:
        fallback.train(1, data, callbacks=[fallback_record])
    assert len([w for w in caught if issubclass(w.category, GraphModeWarning)]) == 1
    assert fallback_record.losses == record.losses  # the eager step itself: identical


def test_inductor_without_a_cxx_compiler_is_named(monkeypatch) -> None:
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(graph.shutil, "which", lambda name: None)
    cell = make_model().train_network
    reason = eager_reason(cell, torch.device("cpu"), compile_options(torch.device("cpu")))
    assert "C++ compiler" in reason and "aot_eager" in reason
    assert eager_reason(cell, torch.device("cpu"), AOT_EAGER) is None


def test_a_model_without_optimizer_warns_and_runs_its_forward_passes() -> None:
    network = mlp()
    model = Model(network, nn.CrossEntropyLoss(), graph_mode=True)
    with pytest.warns(GraphModeWarning, match="no optimizer"):
        model.train(1, blobs(2, 16))


def test_a_step_torch_compile_cannot_build_fails_clearly_before_training() -> None:
    def broken_backend(graph_module: Any, example_inputs: Any) -> Any:
        raise NotImplementedError("this backend compiles nothing")

    model = make_model(graph_mode={"backend": broken_backend})
    before = [p.detach().clone() for p in model.predict_network.parameters()]
    with pytest.raises(RuntimeError, match=r"Graph mode: torch.compile could not run the captured training step "
                                           r"\(BackendCompilerFailed.*graph_mode=False"):
        model.train(1, blobs(2, 16))
    assert all(torch.equal(a, b) for a, b in zip(before, model.predict_network.parameters()))  # nothing half-done


@pytest.mark.parametrize("value", ["graph", 0, ["aot_eager"]])
def test_the_graph_mode_argument_is_checked(value) -> None:
    with pytest.raises(TypeError, match="'graph_mode' must be None"):
        make_model(graph_mode=value)


# ------------------------------------------------------------------ set_context's checks (MindSpore's messages)


def test_set_context_refuses_a_mode_that_does_not_exist() -> None:
    with pytest.raises(ValueError, match=r"the argument 'mode' should be context.GRAPH_MODE \(0\) or "
                                         r"context.PYNATIVE_MODE \(1\), but got 2\."):
        set_context(mode=2)
    with pytest.raises(TypeError, match="The parameter 'mode' must be <class 'int'>, but got <class 'str'>"):
        set_context(mode="GRAPH_MODE")
    assert get_context("mode") == PYNATIVE_MODE  # nothing changed


def test_set_context_names_what_it_supports() -> None:
    with pytest.raises(ValueError, match="the keyword argument save_graphs is not recognized!.*'mode'"):
        set_context(save_graphs=True)
    with pytest.raises(ValueError, match="'device_target' must be one of"):
        set_context(device_target="TPU")
    with pytest.raises(ValueError, match="the argument jit_level is not recognized"):
        get_context("jit_level")
    where = make_model().device
    set_context(device_target="Ascend", device_id=1)  # accepted for ported code; Model(device=...) decides
    assert make_model().device == where


# ------------------------------------------------------------------ the GPU check's report (benchmarks/cuda.py)


def test_the_gpu_benchmark_reports_graph_mode_as_a_speed_against_the_eager_bare_loop() -> None:
    from benchmarks.cuda import GRAPH_VARIANTS, REFERENCE, TARGETS, report

    assert {REFERENCE[name] for name in GRAPH_VARIANTS} == {"bare"} and TARGETS["nbcallback_graph"] == ("bare", 0.2)
    seconds = {"median": 1.0, "min": 1.0, "max": 1.0}
    result = {
        "meta": {"device": "NVIDIA H200", "torch": "2.x", "cuda": "13", "rounds": 5, "steps_per_epoch": 938,
                 "compile_seconds": {"nbcallback_graph": 41.5}},
        "seconds": {"bare": seconds, "nbcallback_graph": seconds},
        "ratios": {"nbcallback_graph": {"median": 0.125, "min": 0.1, "max": 0.25, "reference": "bare"}},
        "targets": {"nbcallback_graph": {"reference": "bare", "target": 0.2, "met": True}},
        "per_step": {},
    }
    text = report(result)
    assert ("graph mode: nbcallback_graph trains at 8.00x the eager bare loop's speed (paired median; 4.00-10.00x), "
            "first step 41.5 s (compilation) - target >= 5x") in text
    assert "| nbcallback_graph | 1000 ms [1000-1000] | 0.125 [0.100-0.250] vs bare | <= 0.2 met |" in text
