"""The Chinese subset font shipped with the package: it holds every character nbcallback draws, it installs with
the package, and its license travels beside it.

A new or changed message in ``messages/zh_CN.json`` with a character the font lacks fails here (it would draw a
box in the final PNG on a machine with no CJK font): rebuild the font with ``nbcallback/widgets/fonts/build_subset.py``.
"""
from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = ROOT / "nbcallback" / "widgets" / "messages"
SUBSET_FONT = ROOT / "nbcallback" / "widgets" / "fonts" / "nbcallback-sans-sc-subset.otf"
SUBSET_FAMILY = "nbcallback Sans SC"  # plot.SUBSET_FAMILY


def _catalog_chars(lang: str, non_ascii_only: bool = False) -> set[str]:
    texts = json.loads((MESSAGES / f"{lang}.json").read_text(encoding="utf-8")).values()
    return {char for text in texts for char in text if not (non_ascii_only and ord(char) < 0x7F)}


def _font_chars() -> set[str]:
    from matplotlib.ft2font import FT2Font

    return {chr(code) for code in FT2Font(str(SUBSET_FONT)).get_charmap()}


def test_every_character_of_the_chinese_catalog_is_in_the_shipped_font() -> None:
    missing = sorted(_catalog_chars("zh_CN") - _font_chars())
    assert not missing, (f"messages/zh_CN.json uses {missing}, which {SUBSET_FONT.name} lacks: the final PNG would "
                         "draw boxes there without a CJK font; run nbcallback/widgets/fonts/build_subset.py")


def test_the_english_catalogs_non_ascii_characters_are_in_it_too() -> None:
    assert _catalog_chars("en", non_ascii_only=True) <= _font_chars()  # '…', '■'


def test_the_check_sees_a_character_the_font_lacks() -> None:
    assert "精" not in _font_chars()  # the font is a subset: the test above would catch a new word


def test_the_font_is_small_named_apart_and_licensed() -> None:
    from matplotlib.ft2font import FT2Font

    assert SUBSET_FONT.stat().st_size < 100_000  # tens of KB, not the 16 MB of the full font
    assert FT2Font(str(SUBSET_FONT)).family_name == SUBSET_FAMILY  # never shadows an installed Noto Sans CJK SC
    license_text = (SUBSET_FONT.parent / "OFL.txt").read_text(encoding="utf-8")
    assert "SIL OPEN FONT LICENSE Version 1.1" in license_text and "Noto Sans CJK SC" in license_text


def test_the_font_and_its_license_are_package_data() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = pyproject.split("[tool.setuptools.package-data]", 1)[1]
    patterns = ast.literal_eval(re.search(r'^"nbcallback\.widgets" = (\[.*\])$', section, re.M).group(1))
    package = SUBSET_FONT.parents[1]
    for path in (SUBSET_FONT, SUBSET_FONT.parent / "OFL.txt"):
        relative = path.relative_to(package)
        assert any(relative.match(pattern) for pattern in patterns), (relative, patterns)


def test_the_build_script_lists_the_catalogs_characters() -> None:
    sys.path.insert(0, str(SUBSET_FONT.parent))
    try:
        import build_subset
    finally:
        sys.path.remove(str(SUBSET_FONT.parent))
    wanted = set(build_subset.characters())
    assert _catalog_chars("zh_CN") <= wanted and _catalog_chars("en", non_ascii_only=True) <= wanted
    assert wanted <= _font_chars()  # the shipped font was built from the catalogs as they are now


def test_the_words_nbcallback_draws_are_in_the_font() -> None:
    from nbcallback.widgets.words import Words

    w = Words("zh_CN")
    drawn = "".join(w(key) for key in ("panel_loss", "panel_lr", "legend_train", "legend_eval", "legend_lr",
                                       "axis_step"))
    assert set(drawn) <= _font_chars(), sorted(set(drawn) - _font_chars())
