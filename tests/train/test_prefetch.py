"""Device prefetch: batches copied to the training device one batch ahead (``nbcallback.train.prefetch``).

Without a GPU the one-ahead order, the pass-through and ``Model``'s switch are
checked on the ``meta`` device (plain copies); with one, the CUDA path (pinned
memory, a side stream) is checked against training without prefetch.
"""
from __future__ import annotations

import pytest
import torch
from torch import nn

from nbcallback.train import Callback, Model
from nbcallback.train.prefetch import prefetch_to_device

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (pinned copies on a side stream)")


def logged_source(count: int, log: list[str]):
    for index in range(count):
        log.append(f"made {index}")
        yield torch.full((2, 3), float(index)), torch.tensor([index]), f"name {index}"


def test_each_batch_is_on_the_device_and_the_next_one_is_already_made():
    log: list[str] = []
    seen = []
    for images, labels, name in prefetch_to_device(logged_source(3, log), torch.device("meta")):
        log.append(f"used {name[-1]}")
        seen.append((images.device.type, labels.device.type, name))
    assert seen == [("meta", "meta", f"name {i}") for i in range(3)]  # non-tensors pass through
    assert log == ["made 0", "made 1", "used 0", "made 2", "used 1", "used 2"]


def test_batches_keep_their_container_types_and_values_on_a_plain_device():
    batches = [[torch.tensor([1.0]), 7], (torch.tensor([2.0]),), torch.tensor([3.0])]
    out = list(prefetch_to_device(batches, torch.device("cpu")))
    assert isinstance(out[0], list) and out[0][1] == 7 and torch.equal(out[0][0], batches[0][0])
    assert isinstance(out[1], tuple) and torch.equal(out[1][0], batches[1][0])
    assert torch.equal(out[2], batches[2])


def test_batches_already_on_the_device_pass_through_untouched():
    batches = [(torch.empty(2, device="meta"), torch.empty(2, device="meta")) for _ in range(3)]
    out = list(prefetch_to_device(iter(batches), torch.device("meta")))
    assert all(a is b for a, b in zip(out, batches))


def test_an_empty_source_and_a_failing_source():
    assert list(prefetch_to_device([], torch.device("meta"))) == []

    def failing():
        yield torch.zeros(1)
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError, match="disk gone"):
        list(prefetch_to_device(failing(), torch.device("meta")))


def _model(device: str, **kwargs) -> Model:
    torch.manual_seed(0)
    network = nn.Linear(4, 3).to(device)
    return Model(network, nn.CrossEntropyLoss(), torch.optim.SGD(network.parameters(), 0.1), device=device, **kwargs)


def test_model_prefetches_only_where_asked_and_off_the_cpu():
    assert _model("cpu")._prefetch is False
    assert _model("cpu", prefetch=True)._prefetch is False  # nothing to copy on the CPU
    assert _model("meta")._prefetch is False  # off by default, also for a GPU
    assert _model("meta", prefetch=True)._prefetch is True
    with pytest.raises(TypeError, match=r"'prefetch' must be True or False, but got str"):
        _model("cpu", prefetch="yes")
    with pytest.raises(TypeError, match=r"'prefetch' must be True or False, but got NoneType"):
        _model("cpu", prefetch=None)


class Where(Callback):
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def on_train_step_begin(self, run_context):
        images, labels = run_context.original_args().train_dataset_element
        self.log.append(f"step {images.device.type}")

    def on_train_step_end(self, run_context):
        if run_context.original_args().cur_step_num == 2:
            run_context.request_stop()


def test_model_trains_on_prefetched_batches_and_stops_with_one_batch_drawn_ahead():
    log: list[str] = []

    class Source:
        def __len__(self) -> int:
            return 5

        def __iter__(self):
            for index in range(5):
                log.append(f"made {index}")
                yield torch.zeros(8, 4), torch.zeros(8, dtype=torch.int64)

    _model("meta", prefetch=True).train(1, Source(), callbacks=Where(log))
    assert log == ["made 0", "made 1", "step meta", "made 2", "step meta"]


@needs_cuda
def test_cuda_prefetch_trains_the_same_weights_as_plain_copies():
    torch.manual_seed(1)
    data = [(torch.randn(32, 4), torch.randint(0, 3, (32,))) for _ in range(20)]
    weights = []
    for prefetch in (False, True):
        model = _model("cuda", prefetch=prefetch)
        assert model._prefetch is prefetch
        model.train(2, data)
        weights.append(model.predict_network.weight.detach().cpu())
    assert torch.allclose(weights[0], weights[1])


@needs_cuda
def test_cuda_prefetch_copies_from_pinned_memory_on_a_side_stream(monkeypatch):
    from nbcallback.train import prefetch

    pinned, streams = [], []
    real_pin, real_start = torch.Tensor.pin_memory, prefetch._CudaCopier.start

    def pin(tensor, *args, **kwargs):
        pinned.append(tensor.shape)
        return real_pin(tensor, *args, **kwargs)

    def start(self, batch):
        streams.append(self.side != torch.cuda.current_stream())
        return real_start(self, batch)

    monkeypatch.setattr(torch.Tensor, "pin_memory", pin)
    monkeypatch.setattr(prefetch._CudaCopier, "start", start)
    source = [(torch.randn(4, 4), torch.arange(4)) for _ in range(3)]
    out = list(prefetch_to_device(source, torch.device("cuda")))
    torch.cuda.synchronize()
    assert len(pinned) == 6 and streams == [True, True, True]
    for (images, labels), (cpu_images, cpu_labels) in zip(out, source):
        assert images.is_cuda and labels.is_cuda
        assert torch.equal(images.cpu(), cpu_images) and torch.equal(labels.cpu(), cpu_labels)
