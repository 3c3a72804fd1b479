"""``HookTrace``: the hooks a run called, in order, with what changed in ``cb_params`` (nbcallback's own)."""
from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from nbcallback.train import Callback, HookTrace, LossMonitor, Model, TimeMonitor
from nbcallback.train.hook_trace import Folded, HookCall

FIELDS = ("mode", "epoch_num", "batch_num", "cur_epoch_num", "cur_step_num")


def _model() -> Model:
    torch.manual_seed(0)
    network = nn.Linear(4, 3)
    return Model(network, nn.CrossEntropyLoss(), torch.optim.SGD(network.parameters(), 0.1), metrics={"accuracy"})


def _data(batches: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(8, 4, generator=generator), torch.randint(0, 3, (8,), generator=generator)) for _ in range(batches)]


class StopAtStep(Callback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_step_end(self, run_context) -> None:
        if run_context.original_args().cur_step_num == self.step:
            run_context.request_stop()


FIT_OUTLINE = """\
on_train_begin: LossMonitor (begin)   {mode: 'train', epoch_num: 2, batch_num: 6, cur_step_num: 0}
epoch 1
  on_train_epoch_begin: TimeMonitor (epoch_begin)   {cur_epoch_num: 1}
  step 1
    on_train_step_begin: TimeMonitor   {cur_step_num: 1}
    on_train_step_end: LossMonitor (step_end), TimeMonitor, StopAtStep
  step 2
    on_train_step_begin: TimeMonitor   {cur_step_num: 2}
    on_train_step_end: LossMonitor (step_end), TimeMonitor, StopAtStep
  … 2 more steps …
  step 5
    on_train_step_begin: TimeMonitor   {cur_step_num: 5}
    on_train_step_end: LossMonitor (step_end), TimeMonitor, StopAtStep
  step 6
    on_train_step_begin: TimeMonitor   {cur_step_num: 6}
    on_train_step_end: LossMonitor (step_end), TimeMonitor, StopAtStep
  validation (inside fit)
    on_eval_begin: -   {mode: 'eval', batch_num: 3, cur_step_num: 0}
    on_eval_epoch_begin: TimeMonitor (epoch_begin)
    step 1
      on_eval_step_begin: -   {cur_step_num: 1}
      on_eval_step_end: -
    step 2
      on_eval_step_begin: -   {cur_step_num: 2}
      on_eval_step_end: -
    step 3
      on_eval_step_begin: -   {cur_step_num: 3}
      on_eval_step_end: -
    on_eval_epoch_end: TimeMonitor (epoch_end)
    on_eval_end: -
  on_train_epoch_end: LossMonitor, TimeMonitor (epoch_end)   {mode: 'train', batch_num: 6, cur_step_num: 6}
epoch 2
  on_train_epoch_begin: TimeMonitor (epoch_begin)   {cur_epoch_num: 2}
  step 1
    on_train_step_begin: TimeMonitor   {cur_step_num: 7}
    on_train_step_end: LossMonitor (step_end), TimeMonitor, StopAtStep
  step 2
    on_train_step_begin: TimeMonitor   {cur_step_num: 8}
    on_train_step_end: LossMonitor (step_end), TimeMonitor, StopAtStep
  step 3
    on_train_step_begin: TimeMonitor   {cur_step_num: 9}
    on_train_step_end: LossMonitor (step_end), TimeMonitor, StopAtStep   {stop_requested: True}
  validation (inside fit)
    on_eval_begin: -   {mode: 'eval', batch_num: 3, cur_step_num: 0}
    on_eval_epoch_begin: TimeMonitor (epoch_begin)
    step 1
      on_eval_step_begin: -   {cur_step_num: 1}
      on_eval_step_end: -
    step 2
      on_eval_step_begin: -   {cur_step_num: 2}
      on_eval_step_end: -
    step 3
      on_eval_step_begin: -   {cur_step_num: 3}
      on_eval_step_end: -
    on_eval_epoch_end: TimeMonitor (epoch_end)
    on_eval_end: -
  on_train_epoch_end: LossMonitor, TimeMonitor (epoch_end)   {mode: 'train', batch_num: 6, cur_step_num: 9}
on_train_end: -"""


def test_fit_with_a_stop_in_epoch_2_gives_the_outline_of_what_ran(capsys):
    """Nested validation, legacy-name forwarding (LossMonitor.step_end), the stop where it was asked, folding."""
    trace = HookTrace(fields=FIELDS)
    data = _data(6)
    _model().fit(2, data, data[:3], callbacks=[LossMonitor(100), TimeMonitor(), StopAtStep(9), trace])
    assert str(trace) == FIT_OUTLINE
    steps = [(call.phase, call.epoch, call.step) for call in trace.hooks if call.hook == "on_train_step_end"]
    assert steps == [("train", 1, 1), ("train", 1, 2), ("train", 1, 5), ("train", 1, 6),
                     ("train", 2, 1), ("train", 2, 2), ("train", 2, 3)]
    assert [entry for entry in trace.entries if isinstance(entry, Folded)] == [Folded("train", 1, 2)]


def test_loss_and_metrics_are_recorded_as_plain_values():
    losses = []

    class Losses(Callback):
        def on_train_step_end(self, run_context):
            losses.append(round(float(run_context.original_args().net_outputs), 4))

    trace = HookTrace(keep_steps=10)
    data = _data(3)
    _model().fit(1, data, data[:2], callbacks=[Losses(), trace])
    recorded = [call.changes["net_outputs"] for call in trace.hooks if call.hook == "on_train_step_end"]
    assert recorded == losses
    eval_end = next(call for call in trace.hooks if call.hook == "on_eval_end")
    assert set(eval_end.changes["metrics"]) == {"accuracy"}
    assert set(eval_end.changes["eval_results"]) == {"accuracy", "eval_loss"}
    eval_step = next(call for call in trace.hooks if call.hook == "on_eval_step_end")
    loss, logits, label = eval_step.changes["net_outputs"]  # (loss, logits, label) of WithEvalCell
    assert isinstance(loss, float) and logits == "tensor[8×3]" and label == "tensor[8]"
    assert isinstance(trace.hooks[0], HookCall) and trace.hooks[0].hook == "on_train_begin"


def test_model_eval_is_traced_alone_and_steps_fold_with_keep_steps():
    trace = HookTrace(keep_steps=1, fields=("cur_step_num",))
    _model().eval(_data(5), callbacks=trace)
    assert str(trace).splitlines() == [
        "on_eval_begin: -   {cur_step_num: 0}",
        "on_eval_epoch_begin: -",
        "step 1",
        "  on_eval_step_begin: -   {cur_step_num: 1}",
        "  on_eval_step_end: -",
        "… 3 more steps …",
        "step 5",
        "  on_eval_step_begin: -   {cur_step_num: 5}",
        "  on_eval_step_end: -",
        "on_eval_epoch_end: -",
        "on_eval_end: -",
    ]
    assert {call.phase for call in trace.hooks} == {"eval"}


def test_keep_steps_zero_folds_every_step_and_a_new_run_starts_a_new_trace():
    trace = HookTrace(keep_steps=0, fields=())
    model = _model()
    model.train(1, _data(4), callbacks=trace)
    assert [entry for entry in trace.entries if isinstance(entry, Folded)] == [Folded("train", 1, 4)]
    model.train(1, _data(2), callbacks=trace)
    assert [entry.count for entry in trace.entries if isinstance(entry, Folded)] == [2]


def test_html_view_has_a_row_per_line():
    trace = HookTrace(fields=("cur_step_num",))
    _model().train(1, _data(3), callbacks=[TimeMonitor(), trace])
    page = trace._repr_html_()
    assert page.count("<tr>") == len(str(trace).splitlines()) + 1  # + the header
    assert "<code>on_train_step_end</code>" in page and "{cur_step_num: 3}" in page and "TimeMonitor" in page
    rows = re.findall(r"<tr><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td></tr>", page)
    assert len(rows) == page.count("<tr>") - 1
    assert all("{" not in acting for _, acting, _ in rows), "the changes belong in their own column"
    assert "<code></code>" not in page  # a heading row has no empty code box
    assert any(changed == "<code>{cur_step_num: 3}</code>" for _, _, changed in rows)


class Legacy(Callback):
    """A MindSpore 1.x callback: only the legacy name."""

    def step_end(self, run_context):
        pass


def test_explain_gives_the_order_without_running():
    assert HookTrace.explain([LossMonitor(), TimeMonitor(), Legacy()], mode="train") == "\n".join([
        "Model.train",
        "  on_train_begin: LossMonitor (begin ← on_train_begin)",
        "  for each epoch:",
        "    on_train_epoch_begin: TimeMonitor (epoch_begin ← on_train_epoch_begin)",
        "    for each step:",
        "      on_train_step_begin: TimeMonitor",
        "      on_train_step_end: LossMonitor (step_end ← on_train_step_end), TimeMonitor, Legacy (step_end ← on_train_step_end)",
        "    on_train_epoch_end: LossMonitor, TimeMonitor (epoch_end ← on_train_epoch_end)",
        "  on_train_end: -",
    ])
    fit = HookTrace.explain([LossMonitor(), TimeMonitor()], mode="fit").splitlines()
    assert fit[fit.index("    validation (when due):") + 2] == "      on_eval_epoch_begin: TimeMonitor (epoch_begin ← on_eval_epoch_begin)"
    assert HookTrace.explain(None, mode="eval").splitlines()[0] == "Model.eval"


def test_bad_arguments_are_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"'keep_steps' must be an int >= 0, but got -1"):
        HookTrace(keep_steps=-1)
    with pytest.raises(TypeError, match=r"'fields' must be a list of cb_params names, but got 'mode'"):
        HookTrace(fields="mode")
    with pytest.raises(ValueError, match=r"'mode' must be 'train', 'fit' or 'eval', but got 'predict'"):
        HookTrace.explain([], mode="predict")


def test_ipython_text_view_is_the_printed_outline():
    from IPython.lib.pretty import pretty

    trace = HookTrace()
    _model().train(1, _data(2), callbacks=trace)
    assert pretty(trace) == str(trace) and "on_train_begin" in pretty(trace)
