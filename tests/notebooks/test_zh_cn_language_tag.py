"""The Chinese notebooks may ask for the widgets' Chinese words: ``"en"`` → ``"zh_CN"`` is the one code change allowed."""
from __future__ import annotations

import pytest

from tests.notebooks.test_zh_cn_code_cells import sync_code

EN = 'import os\nos.environ["NBCALLBACK_LANG"] = "en"  # the widgets\' words\nProgressBar(lang="en")\n'
ZH = 'import os\nos.environ["NBCALLBACK_LANG"] = "zh_CN"  # 小部件的文字\nProgressBar(lang="zh_CN")\n'


def test_the_language_tag_may_be_chinese() -> None:
    assert sync_code.compare_cells(EN, ZH) is None


@pytest.mark.parametrize("chinese", [
    EN.replace('"en"', '"fr"', 1),  # another language is not the twin
    EN.replace('"NBCALLBACK_LANG"', '"zh_CN"'),  # a key is not a language tag
    ZH.replace('"zh_CN"', "'zh_CN' + ''", 1),  # an expression is code
])
def test_anything_else_is_still_code(chinese: str) -> None:
    assert sync_code.compare_cells(EN, chinese) is not None
