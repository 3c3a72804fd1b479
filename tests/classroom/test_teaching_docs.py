"""The teacher pages in English and Chinese stay in step (issue 44, item 7), and say what the code does.

docs/teaching.md and docs/teaching.zh-CN.md, notebooks/exercises/README.md and README.zh-CN.md: the same sections
(by heading level), the same tables (rows and columns), the same code blocks (their commands; the Chinese pages
grade with the Chinese autograder and translate comments), and each names the same project files. A section
added to one page and not to the other fails here."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAIRS = [("docs/teaching.md", "docs/teaching.zh-CN.md"),
         ("notebooks/exercises/README.md", "notebooks/exercises/README.zh-CN.md"),
         ("docs/distributed.md", "docs/distributed.zh-CN.md")]
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_PATH = re.compile(r"`((?:notebooks|tests|binder|nbcallback|docs|benchmarks)/[^`\s]*)`")


def _outline(text: str) -> dict[str, object]:
    body = _FENCE.sub("", text)
    tables = [len([line for line in block.splitlines() if line.startswith("|")])
              for block in re.split(r"\n\s*\n", body) if block.lstrip().startswith("|")]
    return {
        "headings": [len(m.group(1)) for m in re.finditer(r"^(#+) ", body, re.MULTILINE)],
        "tables": tables,
        "columns": [line.count("|") for line in body.splitlines() if line.startswith("|")],
    }


def _commands(text: str) -> list[str]:
    """The code blocks' lines without comments, with the language-specific autograder folder made the same."""
    blocks = []
    for block in _FENCE.findall(text):
        lines = [re.sub(r"\s+#.*$", "", line).rstrip() for line in block.splitlines()]
        blocks.append("\n".join(line.replace("dist_zh_CN/", "dist/") for line in lines if line.strip()))
    return blocks


@pytest.mark.parametrize(("english", "chinese"), PAIRS)
def test_the_chinese_page_has_the_english_pages_sections_tables_and_commands(english: str, chinese: str) -> None:
    en, zh = (REPO / english).read_text(encoding="utf-8"), (REPO / chinese).read_text(encoding="utf-8")
    assert _outline(en) == _outline(zh)
    en_commands, zh_commands = _commands(en), _commands(zh)
    assert len(en_commands) == len(zh_commands)
    for a, b in zip(en_commands, zh_commands):
        if a != b:  # a translated comment in a Python block or an output sample in the other language
            assert a.split("\n")[0].split()[:2] == b.split("\n")[0].split()[:2] or "AssertionError" in a + b, (a, b)
    assert set(_PATH.findall(en)) == set(_PATH.findall(zh)), set(_PATH.findall(en)) ^ set(_PATH.findall(zh))
    for page in (en, zh):
        assert "@@" not in page


@pytest.mark.parametrize("page", sorted({name for pair in PAIRS for name in pair}))
def test_every_project_file_the_page_names_exists(page: str) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    missing = [path for path in set(_PATH.findall(text))
               if "*" not in path and "<" not in path and "…" not in path and "dist" not in path
               and not (REPO / path.rstrip("/")).exists()]
    assert not missing, missing
