"""The widgets' message table: every word in English and Simplified Chinese, picked by ``lang`` or
``NBCALLBACK_LANG`` (issue #19: one table, no key missing in either language)."""
from __future__ import annotations

import string

import pytest

from nbcallback.widgets.words import LANG_ENV_VAR, LANGS, MESSAGES, Msg, Words, resolve_lang


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def test_every_catalog_has_every_key_with_the_same_placeholders() -> None:
    assert LANGS == ("en", "zh_CN")  # messages/*.json, English first
    english = MESSAGES["en"]
    for lang in LANGS[1:]:
        other = MESSAGES[lang]
        assert set(english) == set(other), (lang, sorted(set(english) ^ set(other)))
        for key, text in english.items():
            assert _fields(text) == _fields(other[key]), (lang, key)


def test_chinese_messages_are_translated() -> None:
    # Words that stay as they are in Chinese: units, code names and empty-looking templates.
    same = {key for key, text in MESSAGES["en"].items() if MESSAGES["zh_CN"][key] == text}
    assert same <= {"source_code"}, same
    for key, text in MESSAGES["zh_CN"].items():
        letters = [c for c in text.format(**{f: "" for f in _fields(text)}) if c.isascii() and c.isalpha()]
        assert key == "source_code" or "save_path" in text or "KeyboardInterrupt" in text or "request_stop" in text \
            or "Ctrl-C" in text or len(letters) <= 3, (key, text)


def test_lang_argument_then_environment_then_english(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LANG_ENV_VAR, raising=False)
    assert resolve_lang() == "en"
    monkeypatch.setenv(LANG_ENV_VAR, "zh-CN")
    assert resolve_lang() == "zh_CN"
    assert resolve_lang("en") == "en"
    for alias in ("zh", "zh_CN", "ZH-cn", "zh-Hans"):
        assert resolve_lang(alias) == "zh_CN"


def test_an_unknown_language_names_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"lang='fr' has no message table; use one of \('en', 'zh_CN'\)"):
        resolve_lang("fr")
    monkeypatch.setenv(LANG_ENV_VAR, "de")
    with pytest.raises(ValueError, match="NBCALLBACK_LANG='de'"):
        resolve_lang()


def test_a_message_is_english_text_and_can_be_said_again_in_chinese() -> None:
    where = Msg("where_epoch", epoch=2, step=312)
    msg = Msg("stopped_by_user", where=where, source=Msg("source_button"))
    assert msg == "stopped by user at epoch 2, step 312 (Stop button)"
    assert Words("zh_CN").say(msg) == "已由用户停止，停在第 2 轮第 312 步（停止按钮）"
    assert Words("en").say(msg) == msg
    assert Words("zh_CN").say("plain text") == "plain text"


def test_callbacks_take_lang_and_reject_a_bad_one() -> None:
    from nbcallback.widgets import Dashboard, ProgressBar

    assert ProgressBar(display="off", lang="zh_CN").settings.words.lang == "zh_CN"
    with pytest.raises(ValueError, match="no message table"):
        Dashboard(display="off", lang="klingon")


def test_a_chinese_progress_bar_writes_chinese_in_text_mode() -> None:
    import io

    import numpy as np
    import torch
    from torch import nn

    from nbcallback.dataset import NumpySlicesDataset
    from nbcallback.train import Model
    from nbcallback.widgets import ProgressBar

    torch.set_num_threads(1)
    torch.manual_seed(0)
    x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    data = NumpySlicesDataset({"x": x, "y": (x[:, 0] > 0).astype("int64")}, shuffle=False).batch(16)
    net = nn.Linear(4, 2)
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1), metrics={"accuracy"})
    out = io.StringIO()
    model.fit(2, data, data, callbacks=[ProgressBar(display="text", lang="zh_CN", file=out)])
    text = out.getvalue()
    assert "训练：2 轮 x 4 步，含验证" in text
    assert "训练已完成：2/2 轮，8/8 步" in text
    assert "轮次" in text and "用时" in text
    assert "Training" not in text and "epochs" not in text and "finished" not in text
