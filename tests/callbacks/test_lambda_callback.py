import pytest

from nbcallback.train import Callback, LambdaCallback
from nbcallback.train.callback import EVAL_HOOKS, TRAIN_HOOKS
from tests.callbacks.support import toy_batches, toy_model


def _recording(calls):
    return {hook: (lambda rc, hook=hook: calls.append(hook)) for hook in TRAIN_HOOKS + EVAL_HOOKS}


def test_every_train_hook_in_order():
    calls = []
    model, _, _ = toy_model()
    model.train(1, toy_batches(64), callbacks=[LambdaCallback(**_recording(calls))])
    assert calls == [
        "on_train_begin",
        "on_train_epoch_begin",
        "on_train_step_begin",
        "on_train_step_end",
        "on_train_step_begin",
        "on_train_step_end",
        "on_train_epoch_end",
        "on_train_end",
    ]


def test_every_eval_hook_in_model_eval():
    calls = []
    model, _, _ = toy_model(metrics={"accuracy"})
    model.eval(toy_batches(64), callbacks=[LambdaCallback(**_recording(calls))])
    assert calls == [
        "on_eval_begin",
        "on_eval_epoch_begin",
        "on_eval_step_begin",
        "on_eval_step_end",
        "on_eval_step_begin",
        "on_eval_step_end",
        "on_eval_epoch_end",
        "on_eval_end",
    ]


def test_fit_validation_does_not_call_eval_functions():
    calls = []
    model, _, _ = toy_model(metrics={"accuracy"})
    model.fit(1, toy_batches(64), toy_batches(64), callbacks=[LambdaCallback(**_recording(calls))])
    assert not any(c.startswith("on_eval") for c in calls)
    assert calls[-2:] == ["on_train_epoch_end", "on_train_end"]


def test_functions_see_cb_params():
    steps = []
    model, _, _ = toy_model()
    model.train(2, toy_batches(64), callbacks=LambdaCallback(on_train_step_end=lambda rc: steps.append(rc.original_args().cur_step_num)))
    assert steps == [1, 2, 3, 4]


def test_non_callable_is_rejected_with_its_name():
    with pytest.raises(TypeError, match="'on_train_epoch_end' must be a function"):
        LambdaCallback(on_train_epoch_end=3)


def test_legacy_methods_of_a_subclass_are_not_reached():
    reached = []

    class Sub(LambdaCallback):
        def step_end(self, run_context):
            reached.append("legacy")

    model, _, _ = toy_model()
    with pytest.warns(FutureWarning, match="step_end"):
        model.train(1, toy_batches(64), callbacks=[Sub()])
    assert reached == []


def test_stop_request_from_a_function():
    model, _, _ = toy_model()
    steps = []

    def stop_at_3(rc):
        steps.append(rc.original_args().cur_step_num)
        if rc.original_args().cur_step_num == 3:
            rc.request_stop()

    model.train(5, toy_batches(64), callbacks=LambdaCallback(on_train_step_end=stop_at_3))
    assert steps == [1, 2, 3]
    assert isinstance(LambdaCallback(), Callback)
