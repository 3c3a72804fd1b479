"""Every word the widgets write, one table per language (English, Simplified Chinese).

Pick the language with ``lang=`` on a callback or the ``NBCALLBACK_LANG`` environment variable; English is the
default.  A :class:`Msg` is the English text that remembers its key and parameters, so a renderer can say it again
in the chosen language (``Words.say``).
"""
from __future__ import annotations

import os
from typing import Any, Mapping

__all__ = ["LANGS", "LANG_ENV_VAR", "MESSAGES", "Msg", "Words", "resolve_lang", "words"]

LANG_ENV_VAR = "NBCALLBACK_LANG"

MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        # status
        "starting": "starting",
        "running": "running",
        "running_validation": "running (validation)",
        "evaluating": "evaluating",
        "finished": "finished",
        "stopped_by_user": "stopped by user {where} ({source})",
        "stopped_by_user_plain": "stopped by user ({source})",
        "stopped_by_callback": "stopped {where} (a callback called request_stop())",
        "interrupted": "interrupted (KeyboardInterrupt) {where}",
        "failed": "failed with {error} {where}",
        "where_epoch": "at epoch {epoch}, step {step}",
        "run_progress": "epoch {epoch}/{epochs}, step {step}/{steps}",
        "list_separator": ", ",
        "where_step": "at step {step}",
        "where_validation": "{where} (during validation, eval step {eval_step})",
        "where_nowhere": "before the first step",
        "source_interrupt": "kernel interrupt",
        "removed_arg": "{owner}(): {names} no longer has an effect: the browser draws the live plot and the final "
                       "PNG has a fixed, sharp size. Remove the argument.",
        "removed_args": "{owner}(): {names} no longer have an effect: the browser draws the live plot and the final "
                        "PNG has a fixed, sharp size. Remove the arguments.",
        "source_button": "Stop button",
        "source_code": "request_stop()",
        "source_user": "user",
        "lr_set": "lr set to {lr} at step {step}",
        # progress
        "epoch_of": "epoch {epoch}/{last}",
        "evaluation": "evaluation",
        "train": "train",
        "eval": "eval",
        "samples": "samples",
        "total_eta": "total ETA {eta}",
        "loss_value": "loss {value}",
        "lr_value": "lr {value}",
        "summary_train": "Training {status}: {epochs_done}/{epochs} epochs, {steps_done}/{total_steps} steps, "
                         "in {elapsed}",
        "summary_eval": "Evaluation {status}: {steps} steps, in {elapsed}",
        "summary_loss": "loss {value}",
        # table
        "col_epoch": "epoch",
        "col_step": "step",
        "col_time": "time",
        "partial": "(partial)",
        "rows_omitted": "… {count} rows omitted …",
        "last_rows": "last {shown} of {total} evaluations",
        "last_rows_text": "(last {shown} of {total} evaluations)",
        # plot
        "panel_loss": "loss",
        "panel_lr": "learning rate",
        "legend_train": "train",
        "legend_eval": "eval",
        "legend_lr": "lr",
        "axis_step": "step",
        "plot_below": "(loss plot: the PNG output below)",
        "plot_pending": "(loss plot: drawn here when the run ends)",
        "plot_alt": "<loss plot, PNG: {summary}>",
        "no_plot_eval": "(no loss plot: an evaluation run has no training curve)",
        "no_plot_steps": "(no loss plot: no training step was recorded)",
        "no_plot_failed": "(no loss plot: it could not be drawn, see the warning above)",
        # controls and hints
        "stop": "Stop",
        "stopping": "stopping…",
        "lr": "lr",
        "apply": "set",
        "hint_subshells": "If Stop does nothing, press ■ (interrupt): training stops after this step.",
        "hint_marimo": "To stop early, interrupt the cell: training stops after the current step.",
        "hint_interrupt": "To stop early, press ■ (interrupt the kernel): training stops after the current step.",
        # text mode
        "log_training": "training: {epochs} epochs x {steps} steps",
        "log_with_validation": " with validation",
        "log_evaluation": "evaluation: {steps} steps",
        "text_plot_saved": "loss plot: {path}",
        "text_plot_none": "loss plot: not shown in text mode (pass save_path=... to keep the PNG)",
    },
    "zh_CN": {
        "starting": "正在启动",
        "running": "运行中",
        "running_validation": "运行中（验证）",
        "evaluating": "评估中",
        "finished": "已完成",
        "stopped_by_user": "已由用户停止，{where}（{source}）",
        "stopped_by_user_plain": "已由用户停止（{source}）",
        "stopped_by_callback": "已停止，{where}（某个回调调用了 request_stop()）",
        "interrupted": "已中断（KeyboardInterrupt），{where}",
        "failed": "出错：{error}，{where}",
        "where_epoch": "停在第 {epoch} 轮第 {step} 步",
        "run_progress": "第 {epoch}/{epochs} 轮，第 {step}/{steps} 步",
        "list_separator": "，",
        "where_step": "停在第 {step} 步",
        "where_validation": "{where}（验证中，第 {eval_step} 个验证步）",
        "where_nowhere": "第一步之前",
        "source_interrupt": "中断内核",
        "removed_arg": "{owner}()：{names} 已不再起作用：实时曲线由浏览器绘制，最终的 PNG 尺寸固定且清晰。请删除该参数。",
        "removed_args": "{owner}()：{names} 已不再起作用：实时曲线由浏览器绘制，最终的 PNG 尺寸固定且清晰。请删除这些参数。",
        "source_button": "停止按钮",
        "source_code": "request_stop()",
        "source_user": "用户",
        "lr_set": "第 {step} 步学习率设为 {lr}",
        "epoch_of": "第 {epoch}/{last} 轮",
        "evaluation": "评估",
        "train": "训练",
        "eval": "验证",
        "samples": "样本",
        "total_eta": "总剩余约 {eta}",
        "loss_value": "损失 {value}",
        "lr_value": "学习率 {value}",
        "summary_train": "训练{status}：{epochs_done}/{epochs} 轮，{steps_done}/{total_steps} 步，用时 {elapsed}",
        "summary_eval": "评估{status}：{steps} 步，用时 {elapsed}",
        "summary_loss": "损失 {value}",
        "col_epoch": "轮次",
        "col_step": "步数",
        "col_time": "用时",
        "partial": "（部分）",
        "rows_omitted": "…… 省略 {count} 行 ……",
        "last_rows": "最近 {shown} 次评估（共 {total} 次）",
        "last_rows_text": "（最近 {shown} 次评估，共 {total} 次）",
        "panel_loss": "损失",
        "panel_lr": "学习率",
        "legend_train": "训练",
        "legend_eval": "验证",
        "legend_lr": "学习率",
        "axis_step": "步数",
        "plot_below": "（损失曲线：见下方 PNG 输出）",
        "plot_pending": "（损失曲线：训练结束时画在这里）",
        "plot_alt": "<损失曲线 PNG：{summary}>",
        "no_plot_eval": "（没有损失曲线：评估没有训练曲线）",
        "no_plot_steps": "（没有损失曲线：没有记录到训练步）",
        "no_plot_failed": "（没有损失曲线：无法绘制，见上方警告）",
        "stop": "停止",
        "stopping": "正在停止…",
        "lr": "学习率",
        "apply": "设置",
        "hint_subshells": "如果停止按钮没有反应，请按 ■（中断内核）：训练会在当前步之后停止。",
        "hint_marimo": "要提前停止，请中断该单元：训练会在当前步之后停止。",
        "hint_interrupt": "要提前停止，请按 ■（中断内核）：训练会在当前步之后停止。",
        "log_training": "训练：{epochs} 轮 x {steps} 步",
        "log_with_validation": "，含验证",
        "log_evaluation": "评估：{steps} 步",
        "text_plot_saved": "损失曲线：{path}",
        "text_plot_none": "损失曲线：文本模式下不显示（传入 save_path=... 可保存 PNG）",
    },
}
LANGS = tuple(MESSAGES)
_ALIASES = {"en": "en", "en_us": "en", "zh": "zh_CN", "zh_cn": "zh_CN", "zh_hans": "zh_CN"}


def resolve_lang(lang: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """``lang``, else ``$NBCALLBACK_LANG``, else ``'en'``; ``zh``, ``zh-CN`` ... mean ``'zh_CN'``.

    Raises:
        ValueError: a language with no message table (the message names the ones there are).
    """
    environ = os.environ if environ is None else environ
    given = lang if lang is not None else environ.get(LANG_ENV_VAR, "").strip() or "en"
    found = _ALIASES.get(str(given).lower().replace("-", "_"))
    if found is None:
        origin = "lang" if lang is not None else LANG_ENV_VAR
        raise ValueError(f"{origin}={given!r} has no message table; use one of {LANGS} (or 'zh', 'zh-CN')")
    return found


class Msg(str):
    """A message: its English text, plus the key and parameters to say it in another language."""

    def __new__(cls, key: str, **params: Any) -> "Msg":
        msg = super().__new__(cls, MESSAGES["en"][key].format(**params))
        msg.key = key
        msg.params = params
        return msg


class Words:
    """The message table of one language: ``words("lr_set", lr="0.01", step=5)``, ``words.say(msg)``."""

    def __init__(self, lang: str | None = None) -> None:
        self.lang = resolve_lang(lang)
        self._table = MESSAGES[self.lang]

    def __call__(self, key: str, **params: Any) -> str:
        return self._table[key].format(**{name: self.say(value) for name, value in params.items()})

    def say(self, text: Any) -> Any:
        """``text`` in this language when it is a :class:`Msg` (nested ones too), else unchanged."""
        return self(text.key, **text.params) if isinstance(text, Msg) else text


words = Words("en")
