"""``cb_params``: which keys exist when (spec §3.3–3.5), attribute access, sharing between callbacks."""
from __future__ import annotations

import copy
import pickle

import pytest
import torch

from nbcallback.train import Callback, CallbackParamError, CallbackParams, LossMonitor

from .helpers import Recorder, blobs, make_model

TRAIN_KEYS = {
    "train_network", "epoch_num", "batch_num", "mode", "loss_fn", "optimizer", "parallel_mode",
    "device_number", "train_dataset", "list_callback", "train_dataset_element", "network",
    "last_save_ckpt_step", "latest_ckpt_file", "cur_step_num", "dataset_sink_mode",
}


def snap(hook, cb):
    return {
        "keys": set(cb),
        "cur_step_num": cb.get("cur_step_num"),
        "cur_epoch_num": cb.get("cur_epoch_num"),
        "batch_num": cb.get("batch_num"),
        "mode": cb.get("mode"),
        "metrics": copy.deepcopy(cb.get("metrics")),
        "eval_results": copy.deepcopy(cb.get("eval_results")),
        "net_outputs": cb.get("net_outputs"),
        "element": cb.get("train_dataset_element"),
        "eval_element": cb.get("eval_dataset_element"),
    }


def snaps_of(rec, hook):
    return [s for h, s in rec.snaps if h == hook]


def test_train_keys_and_values():
    data = blobs(3)
    model = make_model()
    rec = Recorder(snapshot=snap)
    other = LossMonitor(0)
    model.train(2, data, callbacks=[rec, other])
    begin = snaps_of(rec, "on_train_begin")[0]
    assert TRAIN_KEYS <= begin["keys"]
    assert "cur_epoch_num" not in begin["keys"] and "net_outputs" not in begin["keys"]
    assert begin["cur_step_num"] == 0 and begin["mode"] == "train" and begin["batch_num"] == 3

    steps = snaps_of(rec, "on_train_step_begin")
    assert [s["cur_step_num"] for s in steps] == [1, 2, 3, 4, 5, 6]  # global across epochs
    assert [s["cur_epoch_num"] for s in steps] == [1, 1, 1, 2, 2, 2]
    assert torch.equal(steps[0]["element"][0], data[0][0])
    ends = snaps_of(rec, "on_train_step_end")
    assert all(isinstance(s["net_outputs"], torch.Tensor) and s["net_outputs"].dim() == 0 for s in ends)
    assert [s["cur_step_num"] for s in ends] == [1, 2, 3, 4, 5, 6]
    assert all(s["metrics"] is None for s in ends)
    assert [s["cur_epoch_num"] for s in snaps_of(rec, "on_train_epoch_begin")] == [1, 2]


def test_train_static_values():
    seen = {}

    class Grab(Callback):
        def on_train_begin(self, run_context):
            seen.update(run_context.original_args())

    data = blobs(2)
    model = make_model()
    grab, lm = Grab(), LossMonitor(0)
    cbs = [grab, lm]
    model.train(3, data, callbacks=cbs, initial_epoch=1)
    assert seen["epoch_num"] == 2
    assert seen["train_network"] is model.train_network
    assert seen["network"] is model.predict_network
    assert seen["loss_fn"] is model._loss_fn and seen["optimizer"] is model._optimizer
    assert seen["train_dataset"] is data
    assert seen["list_callback"] == [grab, lm] and seen["list_callback"] is not cbs
    assert seen["parallel_mode"] == "stand_alone" and seen["device_number"] == 1
    assert seen["dataset_sink_mode"] is False and seen["train_dataset_element"] is None
    assert seen["last_save_ckpt_step"] is None and seen["latest_ckpt_file"] is None


def test_eval_keys():
    rec = Recorder(snapshot=snap)
    model = make_model()
    model.eval(blobs(2), callbacks=rec)
    begin = snaps_of(rec, "on_eval_begin")[0]
    assert {"eval_network", "valid_dataset", "batch_num", "mode", "cur_step_num", "list_callback",
            "network", "dataset_sink_mode"} <= begin["keys"]
    assert begin["mode"] == "eval" and begin["cur_step_num"] == 0 and begin["batch_num"] == 2
    assert "cur_epoch_num" not in begin["keys"] and "epoch_num" not in begin["keys"]
    steps = snaps_of(rec, "on_eval_step_end")
    assert [s["cur_step_num"] for s in steps] == [1, 2]
    loss, logits, label = steps[0]["net_outputs"]
    assert loss.dim() == 0 and logits.shape == (16, 3) and label.shape == (16,)
    assert steps[0]["eval_element"] is not None
    assert snaps_of(rec, "on_eval_epoch_end")[0]["metrics"] is None
    assert set(snaps_of(rec, "on_eval_end")[0]["metrics"]) == {"accuracy"}
    assert snaps_of(rec, "on_eval_end")[0]["eval_results"] is None  # only fit's validation has them


def test_fit_validation_keys_and_metrics_lifetime():
    rec = Recorder(snapshot=snap)
    model = make_model(metrics={"accuracy", "loss"})
    model.fit(3, blobs(3), blobs(2, seed=9), valid_frequency=[2, 3], callbacks=rec)

    eval_begins = snaps_of(rec, "on_eval_begin")
    assert len(eval_begins) == 2
    for s, epoch in zip(eval_begins, (2, 3)):
        assert s["mode"] == "eval" and s["cur_step_num"] == 0 and s["batch_num"] == 2
        assert s["cur_epoch_num"] == epoch
        assert {"eval_network", "valid_dataset"} <= s["keys"]
    assert [s["cur_step_num"] for s in snaps_of(rec, "on_eval_step_end")] == [1, 2, 1, 2]
    eval_ends = snaps_of(rec, "on_eval_end")
    assert len(eval_ends) == 2
    for s in eval_ends:  # MindSpore sets metrics and eval_results before on_eval_end (spec §4.5)
        assert set(s["metrics"]) == {"accuracy", "loss"}
        assert set(s["eval_results"]) == {"accuracy", "loss", "eval_loss"}

    epoch_ends = snaps_of(rec, "on_train_epoch_end")
    assert epoch_ends[0]["metrics"] is None and epoch_ends[0]["eval_results"] is None
    for s in epoch_ends[1:]:
        assert s["mode"] == "train" and s["batch_num"] == 3
        assert set(s["metrics"]) == {"accuracy", "loss"}
        assert set(s["eval_results"]) == {"accuracy", "loss", "eval_loss"}
        assert s["eval_results"]["accuracy"] == s["metrics"]["accuracy"]
    # cur_step_num restored after validation and keeps counting
    assert epoch_ends[1]["cur_step_num"] == 6 and epoch_ends[2]["cur_step_num"] == 9
    assert isinstance(epoch_ends[1]["net_outputs"], torch.Tensor)
    assert [s["cur_step_num"] for s in snaps_of(rec, "on_train_step_begin")] == list(range(1, 10))
    # popped after on_train_epoch_end
    for s in snaps_of(rec, "on_train_epoch_begin") + snaps_of(rec, "on_train_end"):
        assert s["metrics"] is None and s["eval_results"] is None


def test_missing_key_is_key_error_and_attribute_error():
    seen = {}

    class Probe(Callback):
        def on_train_begin(self, run_context):
            cb = run_context.original_args()
            seen["hasattr"] = hasattr(cb, "cur_epoch_num")
            seen["getattr"] = getattr(cb, "cur_epoch_num", "default")
            try:
                cb.cur_epoch_num
            except KeyError as exc:
                seen["key"] = exc
            try:
                cb.also_missing
            except AttributeError as exc:
                seen["attr"] = exc

    make_model().train(1, blobs(1), callbacks=Probe())
    assert seen["hasattr"] is False and seen["getattr"] == "default"
    assert isinstance(seen["key"], CallbackParamError) and "cur_epoch_num" in str(seen["key"])
    assert isinstance(seen["attr"], KeyError)


def test_callback_params_dict_behaviour():
    cb = CallbackParams(a=1)
    cb.b = 2
    assert cb["b"] == 2 and cb.a == 1 and cb.get("zz") is None and "a" in cb
    assert cb.pop("a") == 1
    del cb.b
    with pytest.raises(KeyError):
        del cb.b
    with pytest.raises(KeyError):
        cb["zz"]
    assert copy.deepcopy(CallbackParams(x=[1])) == {"x": [1]}
    assert pickle.loads(pickle.dumps(CallbackParams(x=1))) == {"x": 1}
    assert isinstance(CallbackParams(), dict)


def test_values_added_by_one_callback_visible_to_another():
    seen = []

    class Writer(Callback):
        def on_train_begin(self, run_context):
            run_context.original_args().init_time = 123.0

        def on_train_step_end(self, run_context):
            run_context.original_args()["last_step"] = run_context.original_args().cur_step_num

    class Reader(Callback):
        def on_train_step_end(self, run_context):
            cb = run_context.original_args()
            seen.append((cb.init_time, cb.last_step))

        def on_train_end(self, run_context):
            seen.append(run_context.original_args()["init_time"])

    make_model().train(2, blobs(2), callbacks=[Writer(), Reader()])
    assert seen == [(123.0, 1), (123.0, 2), (123.0, 3), (123.0, 4), 123.0]


def test_each_run_gets_fresh_params():
    seen = []

    class Probe(Callback):
        def on_train_begin(self, run_context):
            cb = run_context.original_args()
            seen.append("marker" in cb)
            cb.marker = 1

    model = make_model()
    model.train(1, blobs(1), callbacks=Probe())
    model.train(1, blobs(1), callbacks=Probe())
    assert seen == [False, False]
