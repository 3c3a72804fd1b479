"""MindSpore's "Callback Mechanism" tutorial (seed 000), ported block by block onto nbcallback.

Only these changes are made to the tutorial's code: a torch network, ``torch.optim.SGD``,
``from nbcallback.train import …``, ``nbcallback.save_checkpoint`` for ``ms.save_checkpoint``,
``float(cb_params.net_outputs)`` for ``.asnumpy()`` and ``download_mnist`` from the loopback
mirror. The whole sequence runs once (module fixture, full MNIST on one thread); each test
checks what one block printed or wrote.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
from torch import nn

import nbcallback

STEPS_PER_EPOCH = 938  # 60000 / 64, drop_remainder=False


# --------------------------------------------------------------------------- the tutorial's code


def datapipe(path, batch_size):
    from nbcallback.dataset import MnistDataset, transforms, vision

    image_transforms = [
        vision.Rescale(1.0 / 255.0, 0),
        vision.Normalize(mean=(0.1307,), std=(0.3081,)),
        vision.HWC2CHW(),
    ]
    label_transform = transforms.TypeCast(torch.int32)

    dataset = MnistDataset(path)
    dataset = dataset.map(image_transforms, 'image')
    dataset = dataset.map(label_transform, 'label')
    dataset = dataset.batch(batch_size)
    return dataset


class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_relu_sequential = nn.Sequential(
            nn.Linear(28 * 28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.dense_relu_sequential(x)
        return logits


class StopTimeMonitor(nbcallback.train.Callback):

    def __init__(self, run_time):
        """Define the initialization process."""
        super(StopTimeMonitor, self).__init__()
        self.run_time = run_time            # Define the execution time.

    def on_train_begin(self, run_context):
        """Operations when training is started."""
        cb_params = run_context.original_args()
        cb_params.init_time = time.time()   # Obtain the current timestamp as the training start time.
        print(f"Begin training, time is: {cb_params.init_time}")

    def on_train_step_end(self, run_context):
        """Operations after each step ends."""
        cb_params = run_context.original_args()
        epoch_num = cb_params.cur_epoch_num  # Obtain the epoch value.
        step_num = cb_params.cur_step_num    # Obtain the step value.
        loss = cb_params.net_outputs         # Obtain the loss value.
        cur_time = time.time()               # Obtain the current timestamp.

        if (cur_time - cb_params.init_time) > self.run_time:
            print(f"End training, time: {cur_time}, epoch: {epoch_num}, step: {step_num}, loss:{loss}")
            run_context.request_stop()       # Stop training.


class SaveCkptMonitor(nbcallback.train.Callback):
    """Define the initialization process."""

    def __init__(self, loss):
        super(SaveCkptMonitor, self).__init__()
        self.loss = loss  # Defines the loss threshold.

    def on_train_step_end(self, run_context):
        """Define the operation to be performed when a step ends."""
        cb_params = run_context.original_args()
        cur_loss = float(cb_params.net_outputs)  # Obtain the current loss value.

        # If the current loss value is less than the preset threshold, the training stops.
        if cur_loss < self.loss:
            # Name the file to be saved.
            file_name = f"./checkpoint/{cb_params.cur_epoch_num}_{cb_params.cur_step_num}.ckpt"
            # Save the network model.
            nbcallback.save_checkpoint(save_obj=cb_params.train_network, ckpt_file_name=file_name)
            print("Saved checkpoint, loss:{:8.7f}, current step num:{:4}.".format(cur_loss, cb_params.cur_step_num))


# --------------------------------------------------------------------------- running it once


@dataclass
class Stage:
    out: str = ""
    error: BaseException | None = None
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    def lines(self) -> list[str]:
        if self.error is not None:
            raise AssertionError(f"this tutorial block raised {self.error!r}") from self.error
        return self.out.splitlines()


@dataclass
class Tutorial:
    root: Path
    stages: dict[str, Stage] = field(default_factory=dict)

    def run(self, name: str, block: Callable[[Stage], Any], needs: tuple[str, ...] = ()) -> None:
        stage = Stage()
        self.stages[name] = stage
        for dep in needs:
            if self.stages[dep].error is not None:
                stage.error = RuntimeError(f"skipped: block {dep!r} failed")
                return
        buffer = io.StringIO()
        start = time.perf_counter()
        try:
            with contextlib.redirect_stdout(buffer):
                block(stage)
        except Exception as exc:  # reported by the tests that read this stage
            stage.error = exc
        stage.seconds = time.perf_counter() - start
        stage.out = buffer.getvalue()

    def __getitem__(self, name: str) -> Stage:
        return self.stages[name]


@pytest.fixture(scope="module")
def tutorial(mnist_mirror, tmp_path_factory):
    pytest.importorskip("nbcallback.dataset")
    from nbcallback.dataset import download_mnist
    from nbcallback.train import CheckpointConfig, LossMonitor, Model, ModelCheckpoint, TimeMonitor

    root = tmp_path_factory.mktemp("tutorial")
    result = Tutorial(root)
    env: dict[str, Any] = {}
    torch.manual_seed(0)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)

        def setup(stage):
            path = download_mnist("./", url=mnist_mirror, replace=True, progress=False)
            stage.extra["path"] = path
            env["train_dataset"] = datapipe('MNIST_Data/train', 64)
            env["test_dataset"] = datapipe('MNIST_Data/test', 64)
            model = Network()
            loss_fn = nn.CrossEntropyLoss()
            optimizer = torch.optim.SGD(model.parameters(), 1e-2)
            env["model"] = model
            env["trainer"] = Model(model, loss_fn=loss_fn, optimizer=optimizer, metrics={'accuracy'})

        def model_checkpoint(stage):
            # Set the configuration information of the saved model.
            config = CheckpointConfig(save_checkpoint_steps=1875, keep_checkpoint_max=10)
            # Instantiate the saved model callback API and define the storage path and prefix.
            ckpt_callback = ModelCheckpoint(prefix="mnist", directory="./checkpoint", config=config)
            # Start training and load the saved model and parameter callback function.
            env["trainer"].train(1, env["train_dataset"], callbacks=[ckpt_callback])
            stage.extra["files"] = sorted(os.listdir("./checkpoint"))
            stage.extra["latest"] = ckpt_callback.latest_ckpt_file_name

        def loss_monitor(stage):
            env["loss_monitor"] = LossMonitor(300)
            env["trainer"].train(1, env["train_dataset"], callbacks=[env["loss_monitor"]])

        def fit(stage):
            env["trainer"].fit(1, env["train_dataset"], env["test_dataset"], callbacks=[env["loss_monitor"]])

        def time_monitor(stage):
            time_monitor = TimeMonitor()
            env["trainer"].train(1, env["train_dataset"], callbacks=[time_monitor])

        def stop_time(stage):
            datasize = env["train_dataset"].get_dataset_size()
            stage.extra["datasize"] = datasize
            env["trainer"].train(5, env["train_dataset"], callbacks=[LossMonitor(datasize), StopTimeMonitor(4)])

        def save_ckpt(stage):
            before = set(os.listdir("./checkpoint"))
            env["trainer"].train(1, env["train_dataset"], callbacks=[SaveCkptMonitor(0.05)])
            stage.extra["new_files"] = sorted(set(os.listdir("./checkpoint")) - before)

        result.run("setup", setup)
        result.run("checkpoint", model_checkpoint, needs=("setup",))
        result.run("loss_monitor", loss_monitor, needs=("setup",))
        result.run("fit", fit, needs=("loss_monitor",))
        result.run("time_monitor", time_monitor, needs=("setup",))
        result.run("stop_time", stop_time, needs=("setup",))
        result.run("save_ckpt", save_ckpt, needs=("checkpoint",))
    result.env = env
    return result


LOSS_LINE = re.compile(r"^epoch: 1 step: (300|600|900), loss is \d+\.\d+")


def test_setup_downloads_through_mirror(tutorial):
    tutorial["setup"].lines()
    path = tutorial["setup"].extra["path"]
    assert (tutorial.root / path).resolve() == (tutorial.root / "MNIST_Data").resolve()
    assert tutorial.env["train_dataset"].get_dataset_size() == STEPS_PER_EPOCH
    assert tutorial.env["test_dataset"].get_dataset_size() == 157
    image, label = next(iter(tutorial.env["train_dataset"]))
    assert image.shape == (64, 1, 28, 28) and image.dtype == torch.float32
    assert label.dtype == torch.int32


def test_model_checkpoint_files(tutorial):
    stage = tutorial["checkpoint"]
    assert stage.lines() == []
    assert stage.extra["files"] == ["mnist-1_938.ckpt", "mnist-graph.meta"]
    assert stage.extra["latest"] == str(tutorial.root / "checkpoint" / "mnist-1_938.ckpt")
    fresh = Network()
    not_loaded, _ = nbcallback.load_param_into_net(
        fresh, nbcallback.load_checkpoint(str(tutorial.root / "checkpoint" / "mnist-1_938.ckpt")))
    assert not_loaded == []


def test_loss_monitor_lines(tutorial):
    lines = tutorial["loss_monitor"].lines()
    assert len(lines) == 3, lines
    assert [LOSS_LINE.match(l).group(1) for l in lines] == ["300", "600", "900"]


def test_fit_prints_loss_and_eval_result(tutorial):
    lines = tutorial["fit"].lines()
    assert len(lines) == 4, lines
    assert [LOSS_LINE.match(l).group(1) for l in lines[:3]] == ["300", "600", "900"]
    match = re.fullmatch(r"Eval result: epoch 1, metrics: \{'accuracy': (0\.9\d*)\}", lines[3])
    assert match, lines[3]
    assert float(match.group(1)) >= 0.92


def test_time_monitor_line(tutorial):
    lines = tutorial["time_monitor"].lines()
    assert len(lines) == 1
    match = re.fullmatch(r"Train epoch time: (\d+\.\d{3}) ms, per step time: (\d+\.\d{3}) ms", lines[0])
    assert match, lines
    epoch_ms, step_ms = float(match.group(1)), float(match.group(2))
    assert abs(epoch_ms / STEPS_PER_EPOCH - step_ms) <= 0.0015
    assert epoch_ms <= tutorial["time_monitor"].seconds * 1000 + 1


def test_stop_time_monitor(tutorial):
    stage = tutorial["stop_time"]
    lines = stage.lines()
    begin = re.fullmatch(r"Begin training, time is: (\d+\.\d+)", lines[0])
    assert begin, lines
    end = re.fullmatch(r"End training, time: (\d+\.\d+), epoch: (\d+), step: (\d+), loss:(\d+\.\d+(e-\d+)?)", lines[-1])
    assert end, lines
    elapsed = float(end.group(1)) - float(begin.group(1))
    epoch, step = int(end.group(2)), int(end.group(3))
    assert 4.0 < elapsed <= stage.seconds  # past the budget, within the run measured around train()
    # The stop took effect at once: a run that went on would print the End line again on each later step
    # (the condition stays true), so one End line means the step that printed it was the last one.
    assert sum(line.startswith("End training") for line in lines) == 1, lines
    assert step < 5 * STEPS_PER_EPOCH and (step - 1) // STEPS_PER_EPOCH + 1 == epoch  # before the 5 epochs asked
    # LossMonitor(datasize) printed once per completed epoch, nothing else in between
    middle = lines[1:-1]
    assert middle == [l for l in middle if re.fullmatch(rf"epoch: \d step: {STEPS_PER_EPOCH}, loss is \d+\.\d+.*", l)]
    assert len(middle) == epoch - 1


def test_save_ckpt_monitor(tutorial):
    stage = tutorial["save_ckpt"]
    lines = stage.lines()
    assert lines, "no step reached a loss below 0.05"
    steps = []
    for line in lines:
        match = re.fullmatch(r"Saved checkpoint, loss:(\d\.\d{7}), current step num:\s*(\d+)\.", line)
        assert match, line
        assert float(match.group(1)) < 0.05
        steps.append(int(match.group(2)))
    assert len(line.split("num:")[1]) >= 5  # {:4} pads the step number
    assert stage.extra["new_files"] == sorted(f"1_{s}.ckpt" for s in steps)
    entries = nbcallback.load_checkpoint(str(tutorial.root / "checkpoint" / f"1_{steps[-1]}.ckpt"))
    assert "dense_relu_sequential.0.weight" in entries


# --------------------------------------------------------------------------- nbcallback.tutorial's helpers
# Notebooks 2-4 import these instead of repeating a setup cell (issue 32); they run without MNIST.


def test_new_trainer_starts_every_section_from_the_same_network():
    from nbcallback.tutorial import Network, new_trainer

    first, second = new_trainer(), new_trainer()
    assert isinstance(first.predict_network, Network)
    for a, b in zip(first.predict_network.state_dict().values(), second.predict_network.state_dict().values()):
        assert torch.equal(a, b)
    other = new_trainer(seed=1).predict_network.state_dict()["dense_relu_sequential.0.weight"]
    assert not torch.equal(other, first.predict_network.state_dict()["dense_relu_sequential.0.weight"])
    assert new_trainer(lr=0.5).train_network.optimizer.param_groups[0]["lr"] == 0.5


def test_tree_lists_a_folder_like_the_tutorial(tmp_path, capsys):
    from nbcallback.tutorial import tree

    for name in ("b.ckpt", "a.ckpt", "graph.meta"):
        (tmp_path / name).write_bytes(b"")
    tree(tmp_path)
    assert capsys.readouterr().out.splitlines() == [str(tmp_path), "├── a.ckpt", "├── b.ckpt", "└── graph.meta"]
