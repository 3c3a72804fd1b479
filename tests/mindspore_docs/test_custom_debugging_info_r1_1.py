"""MindSpore tutorial "Custom Debugging Information" (r1.1), ported onto nbcallback.

Source: mindspore-ai/docs, branch r1.1, tutorials/training/source_en/advanced_use/custom_debugging_info.md
(https://www.mindspore.cn/tutorial/training/en/r1.1/advanced_use/custom_debugging_info.html).

The page's sections "Introduction to Callback" and "MindSpore Metrics" are ported with the README's
substitution table only (``mindspore.train.callback`` -> ``nbcallback.train.callback``; ``nn.Accuracy``,
``nn.Loss``, ``nn.Precision``, ``nn.Recall``, ``nn.F1`` -> the same names in ``nbcallback.train``;
``Tensor(np.array(...))`` -> ``torch.tensor(np.array(...))``; ``nn.Momentum(params, 0.01, 0.9)`` ->
``torch.optim.SGD(params, 0.01, momentum=0.9)``; ``SoftmaxCrossEntropyWithLogits(sparse=True,
reduction='mean')`` -> ``torch.nn.CrossEntropyLoss()``; ``save_checkpoint`` -> ``nbcallback.save_checkpoint``).
The page leaves ``model``, ``dataset``, ``Lenet``/``ResNet`` and ``epoch_size`` undefined: they come from
the same version's quick start (``LeNet5`` and ``create_dataset`` of test_quick_start_r1_1.py), with
``take`` keeping each run to a few hundred steps. The page's own typos (``SoftmaxCrossEntryWithLogits``,
``oprimizer``) are corrected: as printed they fail in MindSpore too. ``StopAtTime(run_time=10)`` means ten
minutes (``run_time*60``); the port uses ``run_time=0.05`` (3 s). "Print Operator" (``ops.Print``, Ascend
only) and "Data Dump" are MindSpore-graph features and are not ported.

What is checked: ``ModelCheckpoint()``'s defaults (``CKP-1_N.ckpt`` every step, the five newest kept,
``CKP-graph.meta``), ``LossMonitor()`` printing every step, ``SummaryCollector`` writing into
``./summary_dir``; ``StopAtTime`` written with the 1.x hooks ``begin``/``step_end`` stopping a 100-epoch
run after its budget and printing ``epoch:  E  step:  S  loss:  L``; ``SaveCallback`` calling
``model.eval`` inside ``step_end`` and saving ``<accuracy>.ckpt`` at each new best; ``Model(...,
callbacks=TimeMonitor())`` refused with ``ValueError`` as MindSpore's ``Model`` refuses unknown kwargs;
``model.eval`` returning the five metric keys; ``Accuracy`` on the page's example printing 0.6667.
"""
from __future__ import annotations

import os
import re
import time

import numpy as np
import pytest
import torch
from torch import nn

from tests.mindspore_docs.runner import Tutorial
from tests.mindspore_docs.test_quick_start_r1_1 import LeNet5, create_dataset

# --------------------------------------------------------------------------- the tutorial's code


def stop_at_time_class():
    from nbcallback.train.callback import Callback

    class StopAtTime(Callback):
        def __init__(self, run_time):
            super(StopAtTime, self).__init__()
            self.run_time = run_time*60

        def begin(self, run_context):
            cb_params = run_context.original_args()
            cb_params.init_time = time.time()

        def step_end(self, run_context):
            cb_params = run_context.original_args()
            epoch_num = cb_params.cur_epoch_num
            step_num = cb_params.cur_step_num
            loss = cb_params.net_outputs
            cur_time = time.time()
            if (cur_time - cb_params.init_time) > self.run_time:
                print("epoch: ", epoch_num, " step: ", step_num, " loss: ", loss)
                run_context.request_stop()

    return StopAtTime


def save_callback_class():
    from nbcallback import save_checkpoint
    from nbcallback.train.callback import Callback

    class SaveCallback(Callback):
        def __init__(self, model, eval_dataset):
            super(SaveCallback, self).__init__()
            self.model = model
            self.eval_dataset = eval_dataset
            self.acc = 0.5

        def step_end(self, run_context):
            cb_params = run_context.original_args()
            epoch_num = cb_params.cur_epoch_num
            result = self.model.eval(self.eval_dataset)
            if result['accuracy'] > self.acc:
                self.acc = result['accuracy']
                file_name = str(self.acc) + ".ckpt"
                save_checkpoint(save_obj=cb_params.train_network, ckpt_file_name=file_name)
                print("Save the maximum accuracy checkpoint,the accuracy is", self.acc)

    return SaveCallback


# --------------------------------------------------------------------------- running it once

TRAIN_STEPS = 600


@pytest.fixture(scope="module")
def tutorial(mnist_mirror, tmp_path_factory):
    pytest.importorskip("nbcallback.dataset")
    from nbcallback.dataset import download_mnist

    result = Tutorial(tmp_path_factory.mktemp("custom_debugging_info_r1_1"))
    env = result.env
    torch.manual_seed(0)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(result.root)

        def setup(stage):
            from nbcallback.train import Model

            download_mnist("./", url=mnist_mirror, progress=False)
            network = LeNet5()
            env["network"] = network
            env["model"] = Model(network, loss_fn=nn.CrossEntropyLoss(),
                                 optimizer=torch.optim.SGD(network.parameters(), 0.01, momentum=0.9),
                                 metrics={"accuracy"})
            env["dataset"] = create_dataset(os.path.join("MNIST_Data", "train")).take(TRAIN_STEPS)
            env["epoch"] = 1

        def callback_usage(stage):
            from nbcallback.train.callback import LossMonitor, ModelCheckpoint, SummaryCollector

            model, epoch, dataset = env["model"], env["epoch"], env["dataset"]
            ckpt_cb = ModelCheckpoint()
            loss_cb = LossMonitor()
            summary_cb = SummaryCollector(summary_dir='./summary_dir')
            model.train(epoch, dataset, callbacks=[ckpt_cb, loss_cb, summary_cb])
            stage.extra["files"] = sorted(f for f in os.listdir(".") if f.startswith("CKP"))
            stage.extra["summary"] = sorted(os.listdir("./summary_dir"))

        def stop_at_time(stage):
            StopAtTime = stop_at_time_class()
            model, dataset = env["model"], env["dataset"]
            start = time.time()
            stop_cb = StopAtTime(run_time=0.05)
            model.train(100, dataset, callbacks=stop_cb)
            stage.extra["seconds"] = time.time() - start

        def save_best(stage):
            from nbcallback.train import Model

            SaveCallback = save_callback_class()
            epoch_size = 1
            ds_train = create_dataset(os.path.join("MNIST_Data", "train")).take(300)
            ds_eval = create_dataset(os.path.join("MNIST_Data", "test")).take(5)
            before = set(os.listdir("."))
            network = LeNet5()
            loss = nn.CrossEntropyLoss()
            optimizer = torch.optim.SGD(network.parameters(), 0.01, 0.9)
            model = Model(network, loss_fn=loss, optimizer=optimizer, metrics={"accuracy"})
            model.train(epoch_size, train_dataset=ds_train, callbacks=SaveCallback(model, ds_eval))
            stage.extra["new_files"] = sorted(set(os.listdir(".")) - before)

        def metrics_block(stage):
            from nbcallback.train import F1, Accuracy, Loss, Model, Precision, Recall, TimeMonitor

            metrics = {
                'accuracy': Accuracy(),
                'loss': Loss(),
                'precision': Precision(),
                'recall': Recall(),
                'f1_score': F1()
            }
            net = env["network"]  # the page's ResNet(): the LeNet trained above
            loss = nn.CrossEntropyLoss()
            opt = torch.optim.SGD(net.parameters(), 0.01, momentum=0.9)
            with pytest.raises(ValueError, match="callbacks") as refused:
                Model(net, loss_fn=loss, optimizer=opt, metrics=metrics, callbacks=TimeMonitor())
            stage.extra["refused"] = str(refused.value)
            model = Model(net, loss_fn=loss, optimizer=opt, metrics=metrics)
            ds_eval = create_dataset(os.path.join("MNIST_Data", "test"))
            output = model.eval(ds_eval)
            stage.extra["output"] = output

        def accuracy_example(stage):
            from nbcallback.train import Accuracy

            x = torch.tensor(np.array([[0.2, 0.5], [0.3, 0.1], [0.9, 0.6]]))
            y = torch.tensor(np.array([1, 0, 1]))
            metric = Accuracy()
            metric.clear()
            metric.update(x, y)
            accuracy = metric.eval()
            print('Accuracy is ', accuracy)

        result.run("setup", setup)
        result.run("callback_usage", callback_usage, needs=("setup",))
        result.run("stop_at_time", stop_at_time, needs=("setup",))
        result.run("save_best", save_best, needs=("setup",))
        result.run("metrics", metrics_block, needs=("callback_usage",))
        result.run("accuracy_example", accuracy_example)
    return result


def test_default_model_checkpoint_loss_monitor_and_summary(tutorial):
    lines = tutorial["callback_usage"].lines()
    steps = [re.fullmatch(r"epoch: 1 step: (\d+), loss is \d+\.\d+(e-\d+)?", line) for line in lines]
    assert all(steps), lines[:3]
    assert [int(m.group(1)) for m in steps] == list(range(1, TRAIN_STEPS + 1))
    # CheckpointConfig(): save_checkpoint_steps=1, keep_checkpoint_max=5, prefix 'CKP' in the working folder
    expected = [f"CKP-1_{s}.ckpt" for s in range(TRAIN_STEPS - 4, TRAIN_STEPS + 1)] + ["CKP-graph.meta"]
    assert tutorial["callback_usage"].extra["files"] == sorted(expected)
    assert tutorial["callback_usage"].extra["summary"], "SummaryCollector wrote nothing into ./summary_dir"


def test_stop_at_time_with_legacy_hooks(tutorial):
    stage = tutorial["stop_at_time"]
    lines = stage.lines()
    assert len(lines) == 1, lines
    # print("epoch: ", e, " step: ", s, " loss: ", loss): print's separator doubles the spaces.
    match = re.fullmatch(r"epoch:  (\d+)  step:  (\d+)  loss:  (.+)", lines[0])
    assert match, lines
    epoch, step = int(match.group(1)), int(match.group(2))
    assert 1 <= epoch < 100 and (step - 1) // TRAIN_STEPS + 1 == epoch  # cur_step_num counts across epochs
    # cb_params.net_outputs is a 0-d torch tensor: print() shows "tensor(0.0123)" where MindSpore shows
    # the bare value (an f-string shows the bare value in both).
    assert re.fullmatch(r"tensor\(\d+\.\d+(e-\d+)?\)", match.group(3)), match.group(3)
    # Past the 3 s budget; that the stop took effect at once is the single line above (a run that went on would
    # print it again on every later step), and epoch < 100 says it stopped before the 100 epochs asked.
    assert stage.extra["seconds"] > 3.0


def test_save_callback_keeps_best_accuracy(tutorial):
    stage = tutorial["save_best"]
    lines = stage.lines()
    assert lines, "the accuracy never passed 0.5 in 300 steps"
    accuracies = []
    for line in lines:
        match = re.fullmatch(r"Save the maximum accuracy checkpoint,the accuracy is (0\.\d+|1\.0)", line)
        assert match, line
        accuracies.append(float(match.group(1)))
    assert accuracies == sorted(set(accuracies)) and accuracies[0] > 0.5
    assert stage.extra["new_files"] == sorted(f"{a}.ckpt" for a in accuracies)


def test_model_refuses_callbacks_argument(tutorial):
    tutorial["metrics"].lines()
    assert "callbacks" in tutorial["metrics"].extra["refused"]


def test_eval_returns_every_metric(tutorial):
    tutorial["metrics"].lines()
    output = tutorial["metrics"].extra["output"]
    assert set(output) == {'accuracy', 'loss', 'precision', 'recall', 'f1_score'}
    assert 0.8 <= output['accuracy'] <= 1.0  # LeNet after 600 steps of 32 images and StopAtTime's 3 s
    assert 0.0 < output['loss'] < 1.0
    for key in ('precision', 'recall', 'f1_score'):  # one value per class, as MindSpore's eval(average=False)
        values = np.asarray(output[key])
        assert values.shape == (10,), (key, values)
        assert ((0.0 <= values) & (values <= 1.0)).all()


def test_accuracy_example(tutorial):
    lines = tutorial["accuracy_example"].lines()
    match = re.fullmatch(r"Accuracy is  (0\.\d+)", lines[0])
    assert match, lines
    assert float(match.group(1)) == pytest.approx(2 / 3)  # the page prints 0.6667
