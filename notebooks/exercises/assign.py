"""Generate the student notebook and the autograder from the teacher's master notebook.

    python notebooks/exercises/assign.py            # write notebooks/5_exercises.ipynb and notebooks/tests/
    python notebooks/exercises/assign.py --check    # exit 1 if the committed student version is stale
    python notebooks/exercises/assign.py --run-tests  # also run every test against the solution (about a minute)
    python notebooks/exercises/assign.py --lang zh_CN  # the Chinese version: notebooks/zh_CN/5_exercises.ipynb
    python notebooks/exercises/assign.py --lang all --check  # both languages

``--lang zh_CN`` does the same from ``master/zh_CN/5_exercises.ipynb`` (the Chinese master: same code and
tests, Chinese prose, comments and feedback messages) into ``--dist`` (default ``notebooks/exercises/dist_zh_CN/``,
git-ignored), copying the student notebook to ``notebooks/zh_CN/`` and its public tests (with Chinese feedback)
to ``notebooks/zh_CN/tests/``; the two markdown lines that ``otter assign`` writes in English are translated.

It runs ``otter assign`` on ``master/5_exercises.ipynb`` into ``--dist`` (default
``notebooks/exercises/dist/``, git-ignored), which then holds

- ``student/``: the notebook with ``...`` in place of the solutions and the public tests;
- ``autograder/``: the solution notebook, all tests (public and hidden) and
  ``5_exercises-autograder_<timestamp>.zip``, the file ``otter run``/``otter grade`` grade with.

and copies ``student/5_exercises.ipynb`` to ``notebooks/`` and ``student/tests/`` to
``notebooks/tests/``, then runs the student notebook once with
``notebooks/refresh_outputs.py`` so that it is committed with outputs, like the other
notebooks, except the check cells: run on the unsolved stubs every check fails, so their output is dropped
(a student sees the feedback by running them).
``otter assign`` gives the cells it adds random ids; they are renumbered
(``cell-000``, ``cell-001``, ...). ``--check`` compares sources, cell types and
metadata, not outputs.

An unchanged master gives the committed bytes on any machine: where a cell prints what is committed but for the
last digits of its floats (another CPU type or thread count sums in another order: a loss ``1.2647005319595337``
becomes ``1.2647004127502441``), the committed output is kept (:func:`kept_float_noise`) and assign.py says so.
"""
from __future__ import annotations

import argparse
import filecmp
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
MASTER = HERE / "master" / "5_exercises.ipynb"
NOTEBOOKS = HERE.parent
NAME = MASTER.name
LANGS = ("en", "zh_CN")
# The cells otter adds to run the checks: ``grader.check("q1")`` ... and ``grader.check_all()``.
CHECK_CELL = re.compile(r"\s*grader\.check(_all)?\(")
# Per language: the master, the folder the student version goes to, the default --dist.
MASTERS = {"en": MASTER, "zh_CN": HERE / "master" / "zh_CN" / NAME}
TARGETS = {"en": NOTEBOOKS, "zh_CN": NOTEBOOKS / "zh_CN"}
DISTS = {"en": HERE / "dist", "zh_CN": HERE / "dist_zh_CN"}
# What ``otter assign`` itself writes in English, and its translation (only the Chinese student version).
OTTER_TEXT = {
    "zh_CN": {
        "# Initialize Otter": "# 初始化Otter",
        "To double-check your work, the cell below will rerun all of the autograder tests.":
            "运行下面的单元格，再次执行所有自动评分测试，检查你的答案。",
    },
}


def run_otter_assign(dist: Path, run_tests: bool = False, lang: str = "en") -> Path:
    """Run ``otter assign`` on ``lang``'s master into ``dist`` (emptied first); return ``dist``."""
    master = MASTERS[lang]
    shutil.rmtree(dist, ignore_errors=True)
    command = [sys.executable, "-m", "otter", "assign", str(master), str(dist)]
    if not run_tests:
        command.insert(4, "--no-run-tests")
    subprocess.run(command, check=True, cwd=master.parent)
    return dist


def normalised_student_notebook(dist: Path, lang: str = "en") -> str:
    """The generated student notebook with stable cell ids (and otter's own lines translated), as the text to commit."""
    notebook = nbformat.read(dist / "student" / NAME, as_version=4)
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index:03d}"
        for english, translated in OTTER_TEXT.get(lang, {}).items():
            cell.source = cell.source.replace(english, translated)
    return nbformat.writes(notebook) + "\n"


def _without_outputs(text: str) -> list[object]:
    """What ``--check`` compares: the notebook's otter metadata and each cell's type, source and tags."""
    notebook = nbformat.reads(text, as_version=4)
    cells = [
        (cell.cell_type, cell.source, {key: cell.metadata.get(key) for key in ("tags", "editable", "deletable")})
        for cell in notebook.cells
    ]
    return [notebook.metadata.get("otter"), cells]


def stale_files(dist: Path, lang: str = "en") -> list[str]:
    """The committed files that differ from what ``dist`` (made from ``lang``'s master) says they should be."""
    stale = []
    committed = TARGETS[lang] / NAME
    if not committed.exists() or _without_outputs(committed.read_text(encoding="utf-8")) != _without_outputs(
        normalised_student_notebook(dist, lang)
    ):
        stale.append(str(committed))
    generated_tests = dist / "student" / "tests"
    committed_tests = TARGETS[lang] / "tests"
    names = {p.name for p in generated_tests.glob("*.py")} | {p.name for p in committed_tests.glob("*.py")}
    for name in sorted(names):
        ours, theirs = committed_tests / name, generated_tests / name
        if not (ours.exists() and theirs.exists() and filecmp.cmp(ours, theirs, shallow=False)):
            stale.append(str(ours))
    return stale


def install(dist: Path, lang: str = "en") -> int:
    """Copy the student notebook and its public tests next to the other notebooks of ``lang``, and run it.

    Returns how many cells kept their committed outputs because this run printed the same up to float noise
    (:func:`kept_float_noise`)."""
    target = TARGETS[lang]
    committed = nbformat.read(target / NAME, as_version=4) if (target / NAME).exists() else None
    (target / NAME).write_text(normalised_student_notebook(dist, lang), encoding="utf-8")
    shutil.rmtree(target / "tests", ignore_errors=True)
    shutil.copytree(dist / "student" / "tests", target / "tests")
    name = (target / NAME).relative_to(NOTEBOOKS).as_posix()
    # One torch thread, as the committed outputs; a teacher's OMP_NUM_THREADS wins (the outputs then differ in float
    # digits only, and kept_float_noise keeps the committed ones).
    threads = os.environ.get("OMP_NUM_THREADS") or "1"
    subprocess.run([sys.executable, str(NOTEBOOKS / "refresh_outputs.py"), "--threads", threads, name], check=True,
                   cwd=NOTEBOOKS.parent)
    without_check_outputs(target / NAME)
    return kept_float_noise(target / NAME, committed) if committed is not None else 0


#: A decimal number as the notebook prints it (a loss ``1.2647005319595337``, an accuracy ``0.683``, ``1e-05``).
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
#: How far apart two printed numbers may be and still be "the same number": the last float digits move with the
#: CPU's vector kernels and thread count (AVX2 vs AVX-512, one torch thread or two sum in another order); 0.1 %
#: is far above that (1e-7 relative after 150 steps) and far below what a changed exercise, seed or data order does.
FLOAT_NOISE = 1e-3


def same_up_to_float_noise(old: str, new: str) -> bool:
    """Whether two printed texts are the same but for numbers within :data:`FLOAT_NOISE` of each other."""
    if NUMBER.sub("#", old) != NUMBER.sub("#", new):
        return False
    for a, b in zip(NUMBER.findall(old), NUMBER.findall(new)):
        if not {".", "e", "E"} & set(a + b):  # integers (steps, epochs, counts) are exact
            if a != b:
                return False
            continue
        x, y = float(a), float(b)
        if abs(x - y) > FLOAT_NOISE * max(abs(x), abs(y)):
            return False
    return True


def _output_texts(outputs: list[nbformat.NotebookNode]) -> list[tuple[str, ...]]:
    texts = []
    for output in outputs:
        if output.get("output_type") == "stream":
            texts.append(("stream", output.get("name", ""), output.get("text", "")))
        else:
            data = output.get("data", {})
            texts.append((output.get("output_type", ""), *(f"{k}={data[k]}" for k in sorted(data))))
    return texts


def kept_float_noise(path: Path, committed: nbformat.NotebookNode) -> int:
    """Keep the committed outputs of every cell whose new outputs differ from them only in float noise.

    A teacher who runs assign.py on another machine, and CI on another CPU type, must not rewrite a committed loss
    ``1.2647005319595337`` as ``1.2647004127502441``: both are true, and the diff would be noise to commit. A cell
    whose source changed, or whose outputs differ in anything else (a line, a word, a number by more than
    :data:`FLOAT_NOISE`), gets this run's outputs. Returns the number of cells whose committed outputs were kept
    although this run printed other digits."""
    notebook = nbformat.read(path, as_version=4)
    kept = 0
    for cell, old in zip(notebook.cells, committed.cells):
        if cell.cell_type != "code" or old.cell_type != "code" or cell.source != old.source:
            continue
        new_texts, old_texts = _output_texts(cell.outputs), _output_texts(old.outputs)
        if new_texts == old_texts or len(new_texts) != len(old_texts):
            continue
        if all(len(n) == len(o) and all(same_up_to_float_noise(a, b) for a, b in zip(o, n))
               for n, o in zip(new_texts, old_texts)):
            cell.outputs = old.outputs
            kept += 1
    nbformat.write(notebook, path)
    return kept


def is_check_cell(cell: nbformat.NotebookNode) -> bool:
    """Whether ``cell`` is one of the cells ``otter assign`` adds to run the checks (``grader.check(...)``)."""
    return cell.cell_type == "code" and CHECK_CELL.match(cell.source) is not None


def without_check_outputs(path: Path) -> None:
    """Drop what the check cells printed in the run of the student notebook as handed out.

    Run on the unsolved stubs, every check fails; a notebook committed with those failures looks broken on
    first open. The check cells keep their execution count (the cell did run) and show nothing: a student
    sees their feedback when running them. The other cells keep the outputs of the real run.

    Consecutive pieces of one stream are joined into one output (as Jupyter shows them): where a line is
    split between two pieces depends on when the kernel flushed, which differs from run to run.
    """
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if is_check_cell(cell):
            cell.outputs = []
        elif cell.cell_type == "code":
            cell.outputs = joined_streams(cell.outputs)
    nbformat.write(notebook, path)


def joined_streams(outputs: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """``outputs`` with each run of consecutive ``stream`` outputs of the same name joined into one."""
    joined: list[nbformat.NotebookNode] = []
    for output in outputs:
        previous = joined[-1] if joined else None
        if (output.get("output_type") == "stream" and previous is not None
                and previous.get("output_type") == "stream" and previous.get("name") == output.get("name")):
            previous["text"] = previous["text"] + output["text"]
        else:
            joined.append(output)
    return joined


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", choices=[*LANGS, "all"], default="en",
                        help="which master: en (master/5_exercises.ipynb), zh_CN (master/zh_CN/5_exercises.ipynb) "
                             "or all (default: %(default)s)")
    parser.add_argument("--dist", type=Path, default=None,
                        help="where otter assign writes (default: notebooks/exercises/dist, or dist_zh_CN for zh_CN)")
    parser.add_argument("--check", action="store_true", help="only check that the committed student version is up to date")
    parser.add_argument("--run-tests", action="store_true", help="let otter assign run all tests against the solution")
    args = parser.parse_args(argv)
    langs = LANGS if args.lang == "all" else (args.lang,)
    if args.dist is not None and len(langs) > 1:
        parser.error("--dist needs a single --lang")
    status = 0
    for lang in langs:
        dist = run_otter_assign((args.dist or DISTS[lang]).resolve(), run_tests=args.run_tests, lang=lang)
        option = "" if lang == "en" else f" --lang {lang}"
        if args.check:
            stale = stale_files(dist, lang)
            if stale:
                print(f"The student version is out of date with {MASTERS[lang].relative_to(HERE)}: " + ", ".join(stale)
                      + f". Regenerate it with: python notebooks/exercises/assign.py{option}", file=sys.stderr)
                status = 1
            else:
                print(f"The student version ({lang}) is up to date.")
            continue
        kept = install(dist, lang)
        target = TARGETS[lang]
        print(f"Wrote {target / NAME} and {target / 'tests'}; the autograder is in {dist / 'autograder'}")
        if kept:
            print(f"Kept the committed outputs of {kept} cell(s) of {target / NAME}: this machine printed the same "
                  "numbers but for the last float digits (another CPU type or thread count sums in another order)")
    return status


if __name__ == "__main__":
    sys.exit(main())
