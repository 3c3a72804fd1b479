"""Notebook 5's checks without otter-grader, as on Google Colab (issue 31, item 4).

Colab ships ipywidgets 7.7.1 and otter-grader 7 requires >= 8.1.5, so there the student notebook's checks cell
falls back to ``nbcallback.exercises.Notebook``, which runs the same ``tests/q*.py``. The committed checks cell
is run in two Python processes, one where ``import otter`` fails, and the feedback of the same answers
(as handed out, solved, and a typical wrong answer per question) must be the same text, in both languages.
On Colab the notebook has no ``tests/`` folder beside it: the test files are downloaded (here from a loopback
server standing in for GitHub).
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from nbcallback import exercises, repository
from tests.exercises import test_exercises as english
from tests.support.mirror import LoopbackServer

REPO = english.REPO
NOTEBOOKS = REPO / "notebooks"
FOLDERS = {"en": NOTEBOOKS, "zh_CN": NOTEBOOKS / "zh_CN"}
MASTERS = {"en": english.MASTER, "zh_CN": NOTEBOOKS / "exercises" / "master" / "zh_CN" / "5_exercises.ipynb"}
#: One typical wrong answer per question (test_exercises.py's), whose feedback does not depend on timing.
WRONG = {"q1": "q1 global step", "q2": "q2 own format", "q3": "q3 strictly above", "q4": "q4 ties overwrite",
         "q5": "q5 tensors", "q6": "q6 fixed patience", "q7": "q7 returns nothing"}

#: Runs in a fresh Python: the notebook's checks cell, then each scenario's answers and checks, in a namespace
#: of their own (as a notebook's), printing a JSON object of what each check shows (its repr, as otter's).
RUNNER = r'''
import json, sys
spec = json.load(sys.stdin)
if spec["block_otter"]:
    sys.modules["otter"] = None  # `import otter` raises ModuleNotFoundError, as where it is not installed
shown = {}
for scenario in spec["scenarios"]:
    env = {"__name__": "__main__"}
    exec(spec["checks_cell"], env)
    for source in scenario["code"]:
        exec(compile(source, "<answer>", "exec"), env)
    for call in scenario["calls"]:
        exec(f"result = {call}", env)
        result = env["result"]
        results = result.results.values() if hasattr(result, "results") else [result]  # check_all: every question's
        shown[f"{scenario['name']}: {call}"] = [repr(result), all(r.passed_all for r in results)]
grader = env["grader"]
print(json.dumps({"grader": type(grader).__module__ + "." + type(grader).__name__,
                  "otter_loaded": sorted(name for name, module in sys.modules.items()
                                         if name.split(".")[0] == "otter" and module is not None),
                  "shown": shown}))
'''


def _checks_cell(lang: str) -> str:
    notebook = nbformat.read(FOLDERS[lang] / "5_exercises.ipynb", as_version=4)
    (cell,) = [c for c in notebook.cells if c.cell_type == "code" and "grader = " in c.source]
    return cell.source


def _scenarios(lang: str) -> list[dict[str, Any]]:
    prelude = english.PRELUDE
    solution = english._solution_code(MASTERS[lang])
    student = english._student_code(FOLDERS[lang] / "5_exercises.ipynb")
    scenarios = [
        {"name": "as handed out", "code": [prelude, student], "calls": ["grader.check_all()"]},
        {"name": "solved", "code": [prelude, solution], "calls": ["grader.check_all()"]},
    ]
    for question, name in WRONG.items():
        _, _, wrong, _ = english.WRONG_ANSWERS[name]
        scenarios.append({"name": name, "code": [prelude, solution, wrong], "calls": [f'grader.check("{question}")']})
    return scenarios


def _run(lang: str, block_otter: bool, cwd: Path, env: dict[str, str] | None = None,
         scenarios: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec = {"block_otter": block_otter, "checks_cell": _checks_cell(lang), "scenarios": scenarios or _scenarios(lang)}
    run_env = {name: value for name, value in os.environ.items() if name != exercises.TESTS_URL_ENV}
    run_env.update({"OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO), **(env or {})})
    result = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(spec), cwd=cwd, env=run_env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


def _comparable(text: str) -> str:
    """The feedback without what differs from run to run: temporary folders, measured milliseconds."""
    return re.sub(r"\d+(?:\.\d+)? ms\b", "<t> ms", re.sub(r"/tmp/[^/'\s]+/", "/tmp/<folder>/", text))


def _student_folder(tmp_path: Path, lang: str, with_tests: bool = True) -> Path:
    """A folder like the notebook's (the notebook and, unless on 'Colab', its tests/), outside the checkout."""
    folder = tmp_path / lang
    folder.mkdir(parents=True)
    shutil.copy2(FOLDERS[lang] / "5_exercises.ipynb", folder / "5_exercises.ipynb")
    if with_tests:
        shutil.copytree(FOLDERS[lang] / "tests", folder / "tests")
    return folder


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_without_otter_the_checks_give_otters_feedback(lang: str, tmp_path: Path) -> None:
    folder = _student_folder(tmp_path, lang)
    with_otter = _run(lang, block_otter=False, cwd=folder)
    without = _run(lang, block_otter=True, cwd=folder)
    assert with_otter["grader"] == "otter.check.notebook.Notebook"
    assert without["grader"] == "nbcallback.exercises.Notebook" and without["otter_loaded"] == []
    assert without["shown"].keys() == with_otter["shown"].keys()
    for call, (text, passed) in with_otter["shown"].items():
        assert without["shown"][call][1] == passed, call
        assert _comparable(without["shown"][call][0]) == _comparable(text), call
    shown = without["shown"]
    # What a student sees: every question fails as handed out, passes solved, and a wrong answer names its mistake.
    assert shown["as handed out: grader.check_all()"][1] is False
    assert all(f"{q} results:\n    {q} - 1 result:\n        ❌ Test case failed\n        Error at line " in
               shown["as handed out: grader.check_all()"][0] for q in WRONG)
    assert shown["solved: grader.check_all()"] == [
        "\n\n".join(f"{q} results: All test cases passed!" for q in WRONG), True]
    feedback = english.WRONG_ANSWERS["q1 global step"][3] if lang == "en" else ["'epoch: 2 step: 4, loss is"]
    assert all(text in shown['q1 global step: grader.check("q1")'][0] for text in feedback)
    assert not any(passed for call, (_, passed) in shown.items() if call.startswith(tuple(WRONG.values())))


@pytest.mark.parametrize("lang", ["en", "zh_CN"])
def test_on_colab_the_tests_are_downloaded_from_the_repository(lang: str, tmp_path: Path) -> None:
    """No tests/ beside the notebook (Colab opens it from GitHub): the same checks come from the repository's
    notebooks/[zh_CN/]tests, here served by a loopback stand-in for raw.githubusercontent.com; nothing is written."""
    assert exercises.Notebook(lang=lang).tests_url == repository.raw_url(
        "notebooks/tests" if lang == "en" else "notebooks/zh_CN/tests")
    served = tmp_path / "served" / repository.REPOSITORY / repository.BRANCH / "notebooks"
    shutil.copytree(NOTEBOOKS / "tests", served / "tests")
    shutil.copytree(NOTEBOOKS / "zh_CN" / "tests", served / "zh_CN" / "tests")
    local = _student_folder(tmp_path, lang)
    colab = _student_folder(tmp_path / "colab", lang, with_tests=False)
    scenarios = [s for s in _scenarios(lang) if s["name"] in ("as handed out", "q3 strictly above")]
    with LoopbackServer(tmp_path / "served") as server:
        prefix = f"{server.url}/{repository.REPOSITORY}/{repository.BRANCH}/notebooks/"
        url = prefix + ("tests" if lang == "en" else "zh_CN/tests")
        downloaded = _run(lang, block_otter=True, cwd=colab, env={exercises.TESTS_URL_ENV: url}, scenarios=scenarios)
    from_folder = _run(lang, block_otter=True, cwd=local, scenarios=scenarios)
    assert downloaded["grader"] == "nbcallback.exercises.Notebook"
    assert {call: [_comparable(t), p] for call, (t, p) in downloaded["shown"].items()} == \
        {call: [_comparable(t), p] for call, (t, p) in from_folder["shown"].items()}
    handed_out = downloaded["shown"]["as handed out: grader.check_all()"][0]
    assert [line for line in handed_out.splitlines() if line.endswith(" results:")] == [f"{q} results:" for q in WRONG]
    assert sorted(p.name for p in colab.iterdir()) == ["5_exercises.ipynb"]  # kept in memory, not written


def test_unreachable_tests_say_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    grader = exercises.Notebook("5_exercises.ipynb", tests_url="http://127.0.0.1:9/notebooks/tests")
    with pytest.raises(ConnectionError, match=r"could not download the checks of q1 from "
                                              r"http://127\.0\.0\.1:9/notebooks/tests/q1\.py \(.*\)\. .*internet connection"):
        grader.check("q1", {})


def test_a_question_without_tests_and_a_bad_language_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(_student_folder(tmp_path, "en"))
    grader = exercises.Notebook("5_exercises.ipynb")
    assert grader.questions() == list(WRONG)
    with pytest.raises(FileNotFoundError, match=r"^Test q8 does not exist \(there is no tests/q8\.py\)$"):
        grader.check("q8", {})
    with pytest.raises(ValueError, match="is not a question's name"):
        grader.check("../q1", {})
    with pytest.raises(ValueError, match=r"lang='fr': the exercises exist in 'en', 'zh_CN'"):
        exercises.Notebook("5_exercises.ipynb", lang="fr")


def test_the_html_a_notebook_shows_holds_the_feedback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a notebook the result is drawn from its HTML (as otter's): the feedback is there, escaped."""
    monkeypatch.chdir(_student_folder(tmp_path, "en"))
    grader = exercises.Notebook("5_exercises.ipynb")
    env = english._namespace(english._solution_code(), english.WRONG_ANSWERS["q3 strictly above"][2])
    result = grader.check("q3", env)
    page = result._repr_html_()
    assert page.startswith("<p><strong style='color: red;'><pre style='display: inline;'>q3</pre> results:</strong></p>")
    assert html.escape(english.WRONG_ANSWERS["q3 strictly above"][3][0], quote=False) in page
    solved = grader.check("q3", english._namespace(english._solution_code()))
    assert re.fullmatch(r"<p><strong><pre style='display: inline;'>q3</pre></strong> passed! \S+</p>", solved._repr_html_())
