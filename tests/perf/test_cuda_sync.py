"""On a GPU, ordinary training and evaluation steps never synchronise the host with the device.

``torch.cuda.set_sync_debug_mode('error')`` turns every synchronising call
(``.item()``, ``float(tensor)``, ``nonzero``, a blocking copy ...) into an
error. It is switched on from the first callback's step-begin hook to the
last callback's step-end hook, for the steps that are not print steps, so it
covers the training step itself and every tutorial callback.
"""
from __future__ import annotations

import pytest
import torch
from torch import nn

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="needs a CUDA device (checks that ordinary steps do not synchronise the host with the GPU)",
)

STEPS = 12


def _model(amp_level: str):
    from nbcallback.train import Model

    torch.manual_seed(0)
    network = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                            nn.Linear(512, 10))
    optimizer = torch.optim.SGD(network.parameters(), lr=1e-2)
    return Model(network, nn.CrossEntropyLoss(), optimizer, metrics={"accuracy", "loss"}, amp_level=amp_level,
                 device="cuda")


def _batches():
    generator = torch.Generator(device="cuda").manual_seed(0)
    images = torch.randn(STEPS * 64, 1, 28, 28, device="cuda", generator=generator)
    labels = torch.randint(0, 10, (STEPS * 64,), device="cuda", generator=generator)
    return [(images[i:i + 64], labels[i:i + 64]) for i in range(0, STEPS * 64, 64)]


def _guards(phase: str):
    from nbcallback.train import Callback

    class Strict(Callback):
        """First in the list: from here on, a synchronisation raises."""

    class Relaxed(Callback):
        """Last in the list: back to normal after every callback's step-end hook."""

    def begin(run_context) -> None:
        step = run_context.original_args().cur_step_num
        if 1 < step < STEPS:  # the first step allocates and warms up; the last one may print and save
            torch.cuda.set_sync_debug_mode("error")

    def end(run_context) -> None:
        torch.cuda.set_sync_debug_mode("default")

    strict, relaxed = Strict(), Relaxed()
    setattr(strict, f"on_{phase}_step_begin", begin)
    setattr(relaxed, f"on_{phase}_step_end", end)
    return strict, relaxed


@pytest.mark.parametrize("amp_level", ["O0", "O2"])
def test_training_steps_do_not_synchronise(tmp_path, amp_level):
    from nbcallback.train import CheckpointConfig, LossMonitor, ModelCheckpoint, TimeMonitor

    if amp_level == "O2" and not torch.cuda.is_bf16_supported():
        pytest.skip("O2 without bfloat16 uses float16 with a GradScaler, whose step() reads found_inf on the host")
    model = _model(amp_level)
    strict, relaxed = _guards("train")
    config = CheckpointConfig(save_checkpoint_steps=1875, keep_checkpoint_max=10)
    callbacks = [strict, LossMonitor(1000), TimeMonitor(),
                 ModelCheckpoint(prefix="mnist", directory=str(tmp_path), config=config), relaxed]
    try:
        model.train(1, _batches(), callbacks=callbacks)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert (tmp_path / f"mnist-1_{STEPS}.ckpt").is_file()


def test_evaluation_steps_do_not_synchronise():
    model = _model("O0")
    strict, relaxed = _guards("eval")
    try:
        metrics = model.eval(_batches(), callbacks=[strict, relaxed])
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert 0.0 <= metrics["accuracy"] <= 1.0
