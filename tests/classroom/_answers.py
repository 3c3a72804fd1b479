"""What must never reach a student: the exercises' solutions and hidden tests, and a search for them.

The masters (``notebooks/exercises/master/``) define them: every line between ``# BEGIN SOLUTION`` and
``# END SOLUTION`` (whole cells and the blocks inside a cell), and every hidden test (a test cell whose config
says ``hidden: true``). :func:`leaks` searches a folder (a Binder image's home, a Codespace, a clone of a fork)
for any of them, and for the markers otter's formats use (a solution block in a notebook, a hidden
``@test_case``), so that a copy that moved or renamed the files is caught too.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MASTERS = (REPO / "notebooks" / "exercises" / "master" / "5_exercises.ipynb",
           REPO / "notebooks" / "exercises" / "master" / "zh_CN" / "5_exercises.ipynb")
#: Lines shorter than this are too common to be an answer (``run_context.request_stop()``, ``return``, ...).
_MIN_LINE = 30
#: Markers of otter's formats: a solution block in a notebook, a hidden test's config or decorator.
_NOTEBOOK_MARKS = re.compile(r"#\s*BEGIN SOLUTION|BEGIN TEST CONFIG|hidden:\s*true")
_PYTHON_MARKS = re.compile(r"@test_case\([^)]*hidden\s*=\s*True")
_HIDDEN_NAME = re.compile(r"^def (test_\w+)\(", re.MULTILINE)
_SKIPPED_DIRS = {".git", "__pycache__", ".ipynb_checkpoints"}


@dataclass(frozen=True)
class Answers:
    """The solution lines and hidden test names of the masters."""

    solution_lines: frozenset[str]
    hidden_tests: frozenset[str]


def _cells(path: Path) -> list[tuple[str, str]]:
    return [(cell["cell_type"], "".join(cell["source"])) for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]]


def answers(masters: tuple[Path, ...] = MASTERS, elsewhere: Path | None = REPO) -> Answers:
    """The masters' solution lines and hidden tests. A solution line counts when it is long enough to be
    telling and appears nowhere else in the ``elsewhere`` checkout (a student notebook's stub, a tutorial,
    the library itself, MindSpore's examples): only the masters and the tests of the exercises hold it."""
    solution: set[str] = set()
    hidden: set[str] = set()
    for master in masters:
        inside = False
        for kind, source in _cells(master):
            text = source.strip()
            if kind == "raw" and text == "# BEGIN SOLUTION":
                inside = True
                continue
            if kind == "raw" and text == "# END SOLUTION":
                inside = False
                continue
            if kind != "code":
                continue
            block = inside
            for line in source.splitlines():
                stripped = line.strip()
                if stripped == "# BEGIN SOLUTION":
                    block = True
                elif stripped == "# END SOLUTION":
                    block = inside
                elif block and len(stripped) >= _MIN_LINE:
                    solution.add(stripped)
            if "hidden: true" in source:
                hidden.update(_HIDDEN_NAME.findall(source))
    common = set()
    if elsewhere is not None:
        for path in _text_files(elsewhere):
            relative = path.relative_to(elsewhere).as_posix()
            if relative.startswith(("notebooks/exercises/master/", "tests/exercises/", "tests/classroom/")):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            common.update(line for line in solution if line in text)
    return Answers(frozenset(solution - common), frozenset(hidden))


def _text_files(root: Path) -> list[Path]:
    return [path for path in sorted(root.rglob("*"))
            if path.is_file() and not _SKIPPED_DIRS & set(path.relative_to(root).parts)
            and path.suffix in {".py", ".ipynb", ".md", ".txt", ".json", ".toml", ".cfg", ".yml", ".yaml", ""}]


def leaks(root: Path, known: Answers) -> list[str]:
    """``path: what`` for every file under ``root`` that holds a solution line, a hidden test or otter's markers
    of either (notebooks and Python files; the docs may name the markers, not hold answers)."""
    found = []
    for path in _text_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        relative = path.relative_to(root).as_posix()
        marks = {".ipynb": _NOTEBOOK_MARKS, ".py": _PYTHON_MARKS}.get(path.suffix)
        structure = marks.search(text) if marks is not None else None
        if structure:
            found.append(f"{relative}: {structure.group(0)!r}")
            continue
        names = [name for name in known.hidden_tests if name in text]
        if names:
            found.append(f"{relative}: the hidden test {sorted(names)[0]}")
            continue
        lines = [line for line in known.solution_lines if line in text]
        if lines:
            found.append(f"{relative}: the solution line {sorted(lines)[0]!r}")
    return found
