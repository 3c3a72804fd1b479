"""On an accelerator an ordinary training step costs what the bare PyTorch step costs.

A step that neither prints nor saves must add no host synchronisation and at
most one device operation to the bare step (``loss_fn(net(x), y)``,
``zero_grad``, ``backward``, ``step``). On a GPU a model of the tutorial's size
is bound by kernel launches, so every extra operation per step shows in the
epoch time.

The operations are counted with a ``TorchDispatchMode``: every operation on a
tensor off the CPU (views, profiler markers and the allocator's
``record_stream`` excluded: they launch nothing), and every read
of a tensor's value on the host (``aten._local_scalar_dense``: ``.item()``,
``float(t)``, ``bool(t)``), which is what synchronises with a GPU.

Without a GPU the run happens on the ``meta`` device: tensors without data,
whose ``device.type`` is not ``'cpu'``, so ``Model`` and ``LossMonitor`` take
the same branches as on CUDA. The counter answers a host read on ``meta`` with
a stand-in value (a loss of 0.5, no flag set, no index found), counting it, and
a copy to the CPU with zeros (for the checkpoint file). With a GPU the same counts run on CUDA too.
"""
from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from nbcallback.train import Callback, CheckpointConfig, LossMonitor, Model, ModelCheckpoint, TimeMonitor

STEPS = 12
BATCH = 16
DEVICES = ["meta"] + (["cuda"] if torch.cuda.is_available() else [])
_HOST_READ = torch.ops.aten._local_scalar_dense.default
_COPY = torch.ops.aten._to_copy.default


#: Operations that launch nothing on the device: the caching allocator's note of a stream.
_BOOKKEEPING = {torch.ops.aten.record_stream.default}


def _on_device(*values: object) -> bool:
    """Whether an operation touches a tensor off the CPU (host-only work, e.g. pinning a batch, launches nothing)."""
    return any(isinstance(leaf, torch.Tensor) and leaf.device.type != "cpu" for leaf in tree_leaves(values))


def _stand_in(dtype: torch.dtype) -> object:
    """What a host read of a ``meta`` tensor returns: a finite loss, no flag set, no index found."""
    if dtype is torch.bool:
        return False
    return 0.5 if dtype.is_floating_point else -1


class DeviceOps(TorchDispatchMode):
    """Counts device operations (``ops``) and host reads (``host_reads``) dispatched while active."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []
        self.host_reads = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        source = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if func is _HOST_READ:
            self.host_reads += 1
            if source is not None and source.device.type == "meta":
                return _stand_in(source.dtype)
            return func(*args, **kwargs)
        if func is _COPY and source is not None and source.device.type == "meta" and str(kwargs.get("device")) == "cpu":
            return torch.zeros(source.shape, dtype=kwargs.get("dtype") or source.dtype)  # a checkpoint's copy
        out = func(*args, **kwargs)
        if func.namespace != "profiler" and not func.is_view and func not in _BOOKKEEPING and _on_device(args, out):
            self.ops.append(func.name())
        return out

    def mark(self) -> tuple[int, int]:
        return len(self.ops), self.host_reads


def _network(device: str) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    network = nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    return network, torch.optim.SGD(network.parameters(), lr=1e-2, momentum=0.9)


def _batches(device: str) -> list[tuple[torch.Tensor, torch.Tensor]]:
    images = torch.randn(STEPS * BATCH, 1, 28, 28)
    labels = torch.randint(0, 10, (STEPS * BATCH,))
    return [(images[i:i + BATCH].to(device), labels[i:i + BATCH].to(device)) for i in range(0, STEPS * BATCH, BATCH)]


def _per_step(marks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(device ops, host reads) of steps 3 .. STEPS-1: neither the first (warm-up) nor the last (saves)."""
    return [(b[0] - a[0], b[1] - a[1]) for a, b in zip(marks[1:-2], marks[2:-1])]


def bare_steps(device: str, copy_to: str | None = None) -> list[tuple[int, int]]:
    """The bare PyTorch loop (``copy_to``: batches copied there first, as a loop over CPU data does)."""
    network, optimizer = _network(copy_to or device)
    loss_fn = nn.CrossEntropyLoss()
    counter, marks = DeviceOps(), []
    with counter:
        for images, labels in _batches(device):
            if copy_to is not None:
                images, labels = images.to(copy_to, non_blocking=True), labels.to(copy_to, non_blocking=True)
            loss = loss_fn(network(images), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            marks.append(counter.mark())
    return _per_step(marks)


class _Mark(Callback):
    def __init__(self, counter: DeviceOps) -> None:
        self.counter, self.marks = counter, []

    def on_train_step_end(self, run_context) -> None:
        self.marks.append(self.counter.mark())


def model_steps(device: str, callbacks: list[Callback], data_device: str | None = None, **model_kwargs) -> list[tuple[int, int]]:
    network, optimizer = _network(device)
    model = Model(network, nn.CrossEntropyLoss(), optimizer, metrics={"accuracy"}, device=device, **model_kwargs)
    counter = DeviceOps()
    mark = _Mark(counter)
    with counter:
        model.train(1, _batches(data_device or device), callbacks=[*callbacks, mark])
    assert len(mark.marks) == STEPS
    return _per_step(mark.marks)


def tutorial_callbacks(folder) -> list[Callback]:
    """The tutorial's three: nothing is printed or saved before the last step."""
    config = CheckpointConfig(save_checkpoint_steps=1875, keep_checkpoint_max=10)
    return [LossMonitor(300), TimeMonitor(), ModelCheckpoint(prefix="mnist", directory=str(folder), config=config)]


@pytest.mark.parametrize("device", DEVICES)
def test_ordinary_step_with_the_tutorial_callbacks_costs_the_bare_step(device, tmp_path, capsys):
    bare = bare_steps(device)
    ours = model_steps(device, tutorial_callbacks(tmp_path))
    assert {reads for _, reads in bare} == {0}
    for (ops, reads), (bare_ops, _) in zip(ours, bare):
        assert reads == 0, "an ordinary step read a tensor on the host (a GPU synchronisation)"
        assert ops <= bare_ops + 1, f"{ops} device operations per step against the bare loop's {bare_ops}"
    assert (tmp_path / f"mnist-1_{STEPS}.ckpt").is_file()  # the final save still happens
    assert "Train epoch time:" in capsys.readouterr().out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("make", [lambda _: LossMonitor(300), lambda _: TimeMonitor(), lambda folder: ModelCheckpoint(
    prefix="one", directory=str(folder), config=CheckpointConfig(save_checkpoint_steps=1875))],
    ids=["LossMonitor", "TimeMonitor", "ModelCheckpoint"])
def test_each_tutorial_callback_adds_no_operation_per_step(device, make, tmp_path, capsys):
    alone = model_steps(device, [])
    with_it = model_steps(device, [make(tmp_path)])
    assert with_it == alone


@pytest.mark.parametrize("device", DEVICES)
def test_the_loop_alone_adds_no_operation_to_the_bare_step(device):
    bare = bare_steps(device)
    ours = model_steps(device, [])
    assert [ops for ops, _ in ours] == [ops for ops, _ in bare]  # the detached loss is a view: no kernel
    assert {reads for _, reads in ours} == {0}


@pytest.mark.parametrize("device", DEVICES)
def test_prefetched_cpu_batches_cost_what_a_bare_loop_copying_them_costs(device, tmp_path, capsys):
    bare = bare_steps("cpu", copy_to=device)
    ours = model_steps(device, tutorial_callbacks(tmp_path), data_device="cpu", prefetch=True)
    assert [ops for ops, _ in ours] == [ops for ops, _ in bare]
    assert {reads for _, reads in ours} == {0}


def test_only_print_steps_read_the_loss_on_the_host():
    """A print step checks the kept losses (one host read) and reads its own loss for the line (one more)."""
    network, optimizer = _network("meta")
    model = Model(network, nn.CrossEntropyLoss(), optimizer, device="meta")
    counter = DeviceOps()
    mark = _Mark(counter)
    with counter:
        model.train(1, _batches("meta"), callbacks=[LossMonitor(4), mark])
    reads = [b[1] - a[1] for a, b in zip(mark.marks, mark.marks[1:])]  # steps 2..12
    assert [step for step, count in enumerate(reads, start=2) if count] == [4, 8, 12]
    assert all(count <= 2 for count in reads)


@pytest.mark.parametrize(("fused", "reads_per_step"), [(True, 0), (False, 1)], ids=["fused", "not-fused"])
def test_float16_loss_scaling_reads_the_host_each_step_unless_the_optimizer_is_fused(fused, reads_per_step):
    """What ``amp_level`` costs where it means float16 with a GradScaler (a GPU without bfloat16).

    ``GradScaler.step`` reads ``found_inf`` on the host to skip the step of an
    overflowing batch, unless the optimizer takes it on the device (``fused=True``
    for SGD, Adam, AdamW): one host read per step, or none. The CPU runs the same
    code path as CUDA here (its float16 autocast and its GradScaler).
    """
    import functools

    from nbcallback.train.cells import TrainOneStepCell

    torch.manual_seed(0)
    network = nn.Linear(8, 3)
    optimizer = torch.optim.SGD(network.parameters(), lr=0.1, momentum=0.9, fused=fused)
    autocast = functools.partial(torch.autocast, device_type="cpu", dtype=torch.float16)
    cell = TrainOneStepCell(network, nn.CrossEntropyLoss(), optimizer, autocast, torch.amp.GradScaler("cpu"))
    images, labels = torch.randn(16, 8), torch.randint(0, 3, (16,))
    cell(images, labels)  # the scaler's first step allocates its state
    counter = DeviceOps()
    with counter:
        for _ in range(5):
            cell(images, labels)
    assert counter.host_reads == 5 * reads_per_step
