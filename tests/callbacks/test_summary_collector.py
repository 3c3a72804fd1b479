import importlib.util
import os

import pytest
import torch

from nbcallback.train import Callback, SummaryCollector
from tests.callbacks.support import Scripted, same_weights, toy_batches, toy_model, weights


def _read(folder):
    from tensorboard.backend.event_processing import event_accumulator as ea

    acc = ea.EventAccumulator(
        str(folder), size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.TENSORS: 0, ea.IMAGES: 0}
    )
    acc.Reload()
    return acc


def _text(acc, tag):
    import numpy as np

    events = acc.Tensors(tag)
    return events, np.array(events[-1].tensor_proto.string_val)[0].decode()


def test_event_files_hold_scalars_histograms_graph_and_lineage(tmp_path):
    model, _, _ = toy_model(metrics={"accuracy": Scripted([0.5, 0.75])})
    collector = SummaryCollector(
        tmp_path / "summary", collect_freq=3, custom_lineage_data={"team": "nb", "version": 2}
    )
    model.fit(2, toy_batches(256), toy_batches(64), callbacks=[collector])
    assert collector.writer is None  # closed by __exit__
    acc = _read(tmp_path / "summary")
    tags = acc.Tags()
    assert [e.step for e in acc.Scalars("loss/auto")] == [1, 3, 6, 9, 12, 15]
    assert [e.value for e in acc.Scalars("learning_rate/auto")] == pytest.approx([0.1] * 6)
    assert [(e.step, e.value) for e in acc.Scalars("eval/accuracy")] == [(8, 0.5), (16, 0.75)]
    assert [e.step for e in acc.Scalars("eval/eval_loss")] == [8, 16]
    assert sorted(tags["histograms"]) == ["1.bias/auto", "1.weight/auto", "3.bias/auto", "3.weight/auto"]
    assert [e.step for e in acc.Histograms("1.weight/auto")] == [1, 3, 6, 9, 12, 15]
    assert tags["graph"] is True
    assert "input_data/auto" in tags["images"]
    events, lineage = _text(acc, "lineage/train/text_summary")
    assert "| optimizer | SGD |" in lineage and "| cur_step_num | 16 |" in lineage and "| team | nb |" in lineage
    assert "accuracy" in _text(acc, "lineage/eval/text_summary")[1]
    assert "| version | 2 |" in _text(acc, "lineage/custom/text_summary")[1]
    assert "list" in _text(acc, "dataset_graph/text_summary")[1]


def test_specified_data_without_defaults(tmp_path):
    model, _, _ = toy_model()
    collector = SummaryCollector(
        tmp_path, collect_freq=4, collect_specified_data={"collect_metric": True}, keep_default_action=False
    )
    model.train(1, toy_batches(256), callbacks=collector)
    tags = _read(tmp_path).Tags()
    assert sorted(tags["scalars"]) == ["learning_rate/auto", "loss/auto"]
    assert tags["histograms"] == [] and tags["graph"] is False and tags["images"] == [] and tags["tensors"] == []


def test_histogram_regular_selects_parameters(tmp_path):
    model, _, _ = toy_model()
    collector = SummaryCollector(tmp_path, collect_specified_data={"histogram_regular": r"3\."})
    model.train(1, toy_batches(64), callbacks=collector)
    assert sorted(_read(tmp_path).Tags()["histograms"]) == ["3.bias/auto", "3.weight/auto"]


def test_collecting_does_not_change_training(tmp_path):
    runs = []
    for callbacks in ([], [SummaryCollector(tmp_path, collect_freq=1)]):
        model, net, _ = toy_model(dropout=0.5)
        torch.manual_seed(5)
        model.train(2, toy_batches(128), callbacks=callbacks)
        runs.append(weights(net))
    assert same_weights(*runs)


class Boom(Callback):
    def on_train_step_end(self, run_context):
        if run_context.original_args().cur_step_num == 2:
            raise RuntimeError("boom")


def test_writer_is_closed_when_training_raises(tmp_path):
    model, _, _ = toy_model()
    collector = SummaryCollector(tmp_path, collect_freq=1)
    with pytest.raises(RuntimeError, match="boom"):
        model.train(1, toy_batches(128), callbacks=[collector, Boom()])
    assert collector.writer is None
    assert [e.step for e in _read(tmp_path).Scalars("loss/auto")] == [1, 2]


def test_graph_failure_is_a_warning(tmp_path, monkeypatch):
    from torch.utils.tensorboard import SummaryWriter

    def broken(self, *args, **kwargs):
        raise RuntimeError("cannot trace this")

    monkeypatch.setattr(SummaryWriter, "add_graph", broken)
    model, _, _ = toy_model()
    with pytest.warns(RuntimeWarning, match="could not trace the network graph .*cannot trace this"):
        model.train(1, toy_batches(64), callbacks=SummaryCollector(tmp_path))
    assert _read(tmp_path).Tags()["graph"] is False


def test_max_file_size_stops_writing(tmp_path):
    model, _, _ = toy_model()
    with pytest.warns(RuntimeWarning, match="larger than max_file_size=100 bytes"):
        model.train(1, toy_batches(256), callbacks=SummaryCollector(tmp_path, collect_freq=1, max_file_size=100))
    assert [e.step for e in _read(tmp_path).Scalars("loss/auto")] == [1]


def test_export_npy(tmp_path):
    model, _, _ = toy_model()
    model.train(1, toy_batches(64), callbacks=SummaryCollector(tmp_path, export_options={"tensor_format": "npy"}))
    (export,) = [p for p in tmp_path.iterdir() if p.name.startswith("export_")]
    assert sorted(os.listdir(export / "tensor")) == ["1.bias_1.npy", "1.weight_1.npy", "3.bias_1.npy", "3.weight_1.npy"]


def test_model_eval_writes_metrics(tmp_path):
    model, _, _ = toy_model(metrics={"accuracy"})
    result = model.eval(toy_batches(64), callbacks=SummaryCollector(tmp_path))
    acc = _read(tmp_path)
    assert acc.Scalars("eval/accuracy")[0].value == pytest.approx(result["accuracy"])


def test_only_one_collector_per_list(tmp_path):
    model, _, _ = toy_model()
    with pytest.raises(ValueError) as error:
        model.train(1, toy_batches(64), callbacks=[SummaryCollector(tmp_path / "a"), SummaryCollector(tmp_path / "b")])
    assert str(error.value) == (
        "There are more than one SummaryCollector instance in callback list,but expected only one SummaryCollector "
        "instance."
    )


@pytest.mark.parametrize("name", ["collect_freq", "collect_tensor_freq", "max_file_size"])
def test_positive_int_arguments(tmp_path, name):
    with pytest.raises(ValueError, match=rf'^For "SummaryCollector", the value of `{name}` should be greater than 0, but got `0`\.$'):
        SummaryCollector(tmp_path, **{name: 0})
    with pytest.raises(TypeError, match=name):
        SummaryCollector(tmp_path, **{name: 1.5})


def test_other_argument_checks(tmp_path):
    with pytest.raises(ValueError, match=r"the keys \['collect_loss'\] are unsupported"):
        SummaryCollector(tmp_path, collect_specified_data={"collect_loss": True})
    with pytest.raises(TypeError, match="collect_graph"):
        SummaryCollector(tmp_path, collect_specified_data={"collect_graph": "yes"})
    with pytest.raises(ValueError, match="not a valid regular expression"):
        SummaryCollector(tmp_path, collect_specified_data={"histogram_regular": "("})
    with pytest.raises(ValueError, match="nothing would be collected"):
        SummaryCollector(tmp_path, keep_default_action=False)
    with pytest.raises(TypeError, match="custom_lineage_data"):
        SummaryCollector(tmp_path, custom_lineage_data={"a": [1]})
    with pytest.raises(ValueError, match="tensor_format"):
        SummaryCollector(tmp_path, export_options={"tensor_format": "csv"})
    with pytest.warns(UserWarning, match="collect_landscape"):
        SummaryCollector(tmp_path, collect_specified_data={"collect_landscape": {"landscape_size": 40}})


def test_missing_tensorboard_names_the_extra(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorboard" else real(name, *a))
    with pytest.raises(ImportError, match=r'pip install "nbcallback\[tensorboard\]"'):
        SummaryCollector(tmp_path)
