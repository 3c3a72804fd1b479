"""``Model(compile=...)``: torch.compile behind a flag, without changing what users see."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from nbcallback.train import Model, load_checkpoint, save_checkpoint


def _data(steps: int = 6) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    return [(torch.randn(16, 8, generator=generator), torch.randint(0, 2, (16,), generator=generator))
            for _ in range(steps)]


def test_compiled_network_trains_and_keeps_its_parameter_names(tmp_path) -> None:
    torch.manual_seed(0)
    network = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    names = list(network.state_dict())
    before = [p.detach().clone() for p in network.parameters()]
    # The "eager" backend runs dynamo's capture without needing a C++ compiler: fast and portable.
    model = Model(network, nn.CrossEntropyLoss(), torch.optim.SGD(network.parameters(), 0.1),
                  metrics={"accuracy"}, compile={"backend": "eager"})
    model.train(2, _data())
    assert any(not torch.equal(a, b) for a, b in zip(before, network.parameters())), "the weights did not move"
    assert list(network.state_dict()) == names  # no "_orig_mod." prefix: checkpoints stay interchangeable
    assert 0.0 <= model.eval(_data(2))["accuracy"] <= 1.0
    path = tmp_path / "compiled.ckpt"
    save_checkpoint(network, str(path))
    plain = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    load_checkpoint(str(path), plain)
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), network.state_dict().values()))


@pytest.mark.parametrize("value", ["yes", 1, ["eager"]])
def test_compile_argument_is_checked(value) -> None:
    network = nn.Linear(8, 2)
    with pytest.raises(TypeError, match="'compile' must be True/False or a dict"):
        Model(network, nn.CrossEntropyLoss(), torch.optim.SGD(network.parameters(), 0.1), compile=value)
