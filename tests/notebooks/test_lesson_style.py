"""The notebooks read as lessons, not as our test notes (issue 32).

Read as a learner opens them, every committed notebook (English and Chinese, all ten):

* no ``# NBVAL_...`` comment in a code cell: the nbval markers live in the cell's tags
  (``nbval-check-output``, ``nbval-ignore-output``, ``nbval-skip``, ``nbval-raises-exception``);
* in the lessons (notebooks 1-4) no ``assert`` statement in a code cell (a check a learner would read
  as part of the lesson) and no markdown cell longer than about 250 words (a manual page, not a lesson);
* the Chinese twin's code cells carry the English cells' nbval tags (the code-cell equality test,
  ``test_zh_cn_code_cells.py``, compares the sources, where the markers used to be);
* the exercise notebook opens clean: no check output that shows a failure (``❌``, "Test case failed",
  "Error at line ...", a traceback) and no error output at all, so a learner's first sight is not a
  wall of red for work they have not done yet.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb")) + sorted((REPO / "notebooks" / "zh_CN").glob("*.ipynb"))
LESSONS = ("1_", "2_", "3_", "4_")
EXERCISES = "5_exercises.ipynb"
#: About 250 English words; a Chinese cell says the same in about 1.7 times as many counted units
#: (one per Chinese character, one per word of code or Latin text): 425.
MAX_WORDS = {"en": 250, "zh_CN": 425}
NBVAL_COMMENT = re.compile(r"#\s*NBVAL_[A-Z_]+")
CJK = re.compile(r"[\u4e00-\u9fff]")
CJK_PUNCTUATION = re.compile(r"[\u3000-\u303f\uff00-\uffef]")
#: What a failing check shows: otter-grader's "❌ Test case failed ... Error at line N in test qN",
#: nbcallback.exercises' fallback grader on Colab, or a traceback.
FAILING = re.compile(r"❌|Test case failed|Error at line \d+|Traceback \(most recent call last\)|\bfailed\b|失败")


def _id(path: Path) -> str:
    return str(path.relative_to(REPO / "notebooks"))


def _language(path: Path) -> str:
    return "zh_CN" if path.parent.name == "zh_CN" else "en"


def words(text: str, language: str = "en") -> int:
    """Words of a markdown cell: whitespace-separated tokens; in Chinese one per character (punctuation not counted)."""
    if language == "zh_CN":
        text = CJK_PUNCTUATION.sub(" ", text)
        return len(CJK.findall(text)) + len(CJK.sub(" ", text).split())
    return len(text.split())


def assert_lines(source: str) -> list[int]:
    """Line numbers (1-based) of ``assert`` statements in a code cell; IPython magics are skipped."""
    lines = ["pass" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return [n for n, line in enumerate(lines, 1) if re.match(r"\s*assert\b", line)]
    return sorted(node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert))


def output_text(output: nbformat.NotebookNode) -> str:
    if output.output_type == "stream":
        return output.text
    if output.output_type == "error":
        return f"{output.ename}: {output.evalue}\n" + "\n".join(output.traceback)
    data = output.get("data", {})
    return "\n".join(str(data[kind]) for kind in ("text/plain", "text/html", "text/markdown") if kind in data)


def test_the_notebooks_are_found() -> None:
    names = {_id(path) for path in NOTEBOOKS}
    for stem in ("1_callback_tutorial", "2_builtin_callbacks", "3_custom_callbacks", "4_widgets", "5_exercises"):
        assert {f"{stem}.ipynb", f"zh_CN/{stem}.ipynb"} <= names, stem


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_id)
def test_no_nbval_comments_in_code_cells(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    found = [(index, match.group()) for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"
             for match in NBVAL_COMMENT.finditer(cell.source)]
    assert not found, (
        f"{_id(path)}: nbval markers written as comments in code cells {found}; a learner reads them as part of the "
        "lesson. Remove the comment and tag the cell instead (cell metadata \"tags\": [\"nbval-check-output\"], "
        "or nbval-ignore-output / nbval-skip / nbval-raises-exception)")


def _nbval_tags(path: Path) -> list[list[str]]:
    notebook = nbformat.read(path, as_version=4)
    return [sorted(tag for tag in cell.metadata.get("tags", []) if tag.startswith(("nbval-", "raises-exception")))
            for cell in notebook.cells if cell.cell_type == "code"]


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if _language(p) == "en"], ids=_id)
def test_chinese_twin_has_the_same_nbval_tags(path: Path) -> None:
    twin = path.parent / "zh_CN" / path.name
    english, chinese = _nbval_tags(path), _nbval_tags(twin)
    different = [index for index, (en, zh) in enumerate(zip(english, chinese)) if en != zh]
    assert len(english) == len(chinese) and not different, (
        f"zh_CN/{path.name}: the nbval tags of code cells {different} differ from {path.name}'s; copy the English "
        "cell's metadata tags into the Chinese cell")


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name.startswith(LESSONS)], ids=_id)
def test_lessons_have_no_assert_statements(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    found = [(index, line) for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"
             for line in assert_lines(cell.source)]
    assert not found, (
        f"{_id(path)}: assert statements in code cells (cell, line) {found}; show the value with print() instead "
        "and let nbval compare it (tag the cell nbval-check-output), or move the check into tests/")


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name.startswith(LESSONS)], ids=_id)
def test_lesson_markdown_cells_are_short(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    limit = MAX_WORDS[_language(path)]
    long = [(index, words(cell.source, _language(path))) for index, cell in enumerate(notebook.cells)
            if cell.cell_type == "markdown" and words(cell.source, _language(path)) > limit]
    assert not long, (
        f"{_id(path)}: markdown cells over {limit} words (cell, words) {long}; split the cell around its code, "
        "or move reference material to a page under docs/ and link it")


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name == EXERCISES], ids=_id)
def test_exercise_notebook_opens_without_failing_checks(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    found = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            text = output_text(output)
            match = FAILING.search(text)
            if output.output_type == "error" or match:
                found.append((index, match.group() if match else output.get("ename")))
    assert not found, (
        f"{_id(path)}: outputs that show failing checks or errors (cell, what) {found}; commit the exercise "
        "notebook with the checks' outputs cleared (or with the passing result of the reference solution)")


# --- the checks themselves ----------------------------------------------------------------------


def test_words_count_chinese_characters_and_latin_words() -> None:
    assert words("Stop **early** when `loss` stalls.") == 5
    assert words("当`loss`停滞时提前停止。", "zh_CN") == 8 + 1


def test_assert_lines_finds_asserts_and_skips_magics() -> None:
    assert assert_lines("x = 1\nassert x == 1, 'x'\nif x:\n    assert x\n") == [2, 4]
    assert assert_lines("%load_ext tensorboard\n!pip list\nprint('assertion')\n") == []
    assert assert_lines("x = 'assert'\n") == []


def test_failing_check_shapes_are_recognised() -> None:
    otter = ("q1 results:\n    q1 - 1 result:\n        \u274c Test case failed\n        Error at line 76 in test q1:\n"
             "        AssertionError: expected 3 lines but your callback printed nothing")
    for text in (otter, "Traceback (most recent call last):\n  File ...", "q1 failed: 1 of 2 checks"):
        assert FAILING.search(text), text
    assert not FAILING.search("q1 passed! 🎉\n")
