"""The graded exercises (notebooks/5_exercises.ipynb) and their otter-grader checks.

* the reference solution of the master notebook passes every public and hidden test;
* each public check rejects a typical wrong answer, and its feedback names what was
  expected and what the callback did (the text ``grader.check`` shows a student);
* the committed student version is what ``otter assign`` makes of the master, its
  placeholders fail the checks with feedback instead of crashing them, and only public
  tests reach students;
* a teacher grades a submission locally, without Docker, with ``otter run``.

nbval runs both notebooks too (pyproject's testpaths): the student version with its
placeholders, and the master, whose test cells run all tests against the solution on
the real MNIST subset.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from otter.test_files import ExceptionTestFile

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
MASTER = NOTEBOOKS / "exercises" / "master" / "5_exercises.ipynb"
STUDENT = NOTEBOOKS / "5_exercises.ipynb"
PUBLIC_TESTS = NOTEBOOKS / "tests"
QUESTIONS = ["q1", "q2", "q3", "q4", "q5", "q6", "q7"]

# What the answer cells may use besides what they import: the notebook's setup cell imports these.
PRELUDE = """
import os
import time

import torch
from torch import nn

import nbcallback
from nbcallback.train import Callback, Model
"""


def _assign_module() -> Any:
    spec = importlib.util.spec_from_file_location("exercises_assign", NOTEBOOKS / "exercises" / "assign.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _solution_cells(master: Path = MASTER) -> list[str]:
    """The code cells between the raw ``# BEGIN SOLUTION`` and ``# END SOLUTION`` cells of a master."""
    notebook = nbformat.read(master, as_version=4)
    inside, code = False, []
    for cell in notebook.cells:
        text = cell.source.strip()
        if cell.cell_type == "raw" and text == "# BEGIN SOLUTION":
            inside = True
        elif cell.cell_type == "raw" and text == "# END SOLUTION":
            inside = False
        elif inside and cell.cell_type == "code":
            code.append(cell.source)
    return code


def _solution_code(master: Path = MASTER) -> str:
    return "\n\n".join(_solution_cells(master))


def _student_code(student: Path = STUDENT) -> str:
    notebook = nbformat.read(student, as_version=4)
    return "\n\n".join(c.source for c in notebook.cells if "otter_answer_cell" in c.metadata.get("tags", []))


def _namespace(*sources: str) -> dict[str, Any]:
    env: dict[str, Any] = {}
    for source in (PRELUDE, *sources):
        exec(compile(source, "<answer>", "exec"), env)
    return env


def _check(question: str, env: dict[str, Any], tests: Path = PUBLIC_TESTS) -> ExceptionTestFile:
    """Run one question's test file against ``env``, as ``grader.check(question)`` does."""
    test_file = ExceptionTestFile.from_file(str(tests / f"{question}.py"))
    test_file.run(env)
    return test_file


def _kernel_namespace(*cells: str) -> tuple[dict[str, Any], dict[int, type[BaseException]]]:
    """What a notebook kernel holds after running ``cells`` in order, as the checks see it: IPython's input
    history ``In`` (``In[n]`` is the cell numbered ``[n]`` in the notebook's margin) and the names of the cells
    that ran. As in Jupyter, a cell that fails stops there and the next cell still runs; the failures are
    returned by cell number, so a test can tell that the broken cell really failed."""
    env: dict[str, Any] = {"In": [""]}
    failures: dict[int, type[BaseException]] = {}
    for number, source in enumerate(cells, 1):
        env["In"].append(source)
        try:
            exec(compile(source, f"<cell {number}>", "exec"), env)
        except Exception as error:  # the notebook shows its traceback under the cell; the kernel goes on
            failures[number] = type(error)
    return env, failures


def _feedback(case_message: str) -> str:
    """The feedback a check shows for a failed case: otter's text after ``AssertionError: ``."""
    assert "AssertionError: " in case_message, case_message
    return case_message.split("AssertionError: ", 1)[1]


def unbalanced_quotes(feedback: str) -> bool:
    """Whether a quoted text in ``feedback`` lost a quote (otter strips a message's first and last ``'``).

    Apostrophes between two letters (``LossMonitor's``) are not quotes."""
    quotes = re.sub(r"(?<=[A-Za-z])'(?=[A-Za-z])", "", feedback)
    return quotes.count("'") % 2 == 1


def has_feedback(text: str | re.Pattern[str], message: str) -> bool:
    """``text`` (a plain string, or a pattern) is in ``message``."""
    return bool(text.search(message)) if isinstance(text, re.Pattern) else text in message


def _shown(text: str | re.Pattern[str]) -> str:
    return text.pattern if isinstance(text, re.Pattern) else text


@pytest.fixture(scope="module")
def solution() -> dict[str, Any]:
    return _namespace(_solution_code())


@pytest.fixture(scope="module")
def assigned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``otter assign`` of the master (without running its tests): student/ and autograder/."""
    return _assign_module().run_otter_assign(tmp_path_factory.mktemp("otter") / "dist")


# ----------------------------------------------------------------------------- the solution


@pytest.mark.parametrize("question", QUESTIONS)
def test_solution_passes_the_public_checks(solution: dict[str, Any], question: str) -> None:
    result = _check(question, solution)
    assert result.passed_all, result.summary()


def test_solution_passes_every_hidden_test(solution: dict[str, Any], assigned: Path) -> None:
    hidden = 0
    for question in QUESTIONS:
        result = _check(question, solution, assigned / "autograder" / "tests")
        assert result.passed_all, result.summary()
        hidden += sum(case.hidden for case in result.test_cases)
    assert hidden >= len(QUESTIONS), "every question should have hidden tests for the teacher"


# ----------------------------------------------------------------------------- the student version


def test_committed_student_version_is_what_otter_assign_makes(assigned: Path) -> None:
    stale = _assign_module().stale_files(assigned)
    assert not stale, f"stale: {stale}; regenerate with `python notebooks/exercises/assign.py`"


def students_get_the_public_tests_only(assigned: Path, public_tests: Path = PUBLIC_TESTS, student: Path = STUDENT) -> None:
    """The student version holds the public test cases only, and no solution or test config."""
    for question in QUESTIONS:
        public = ExceptionTestFile.from_file(str(public_tests / f"{question}.py")).test_cases
        every = ExceptionTestFile.from_file(str(assigned / "autograder" / "tests" / f"{question}.py")).test_cases
        assert public and not any(case.hidden for case in public)
        assert any(case.hidden for case in every)
        assert len(every) > len(public)
    notebook = nbformat.read(student, as_version=4)
    text = "\n".join(cell.source for cell in notebook.cells)
    assert "SOLUTION" not in text and "TEST CONFIG" not in text and "def test_q" not in text
    for source in _student_code(student).split("\n\nclass ")[1:]:
        assert "    ..." in source and "request_stop" not in source and "save_checkpoint" not in source


def test_students_get_the_public_tests_only(assigned: Path) -> None:
    students_get_the_public_tests_only(assigned)


def test_student_notebook_checks_every_question() -> None:
    student = nbformat.read(STUDENT, as_version=4)
    sources = [cell.source for cell in student.cells if cell.cell_type == "code"]
    # The Colab install cell, then the checks: otter-grader's, or without it (Colab) nbcallback's runner of the same tests.
    assert 'if "google.colab" in sys.modules:' in sources[0]
    assert '    grader = otter.Notebook("5_exercises.ipynb")' in sources[1].splitlines()
    assert '    grader = Notebook("5_exercises.ipynb", lang="en")' in sources[1].splitlines()
    for question in QUESTIONS:
        assert f'grader.check("{question}")' in sources


def test_student_notebook_opens_without_failing_checks() -> None:
    """Committed from a real run (every code cell ran, the setup cell printed), but the check cells show nothing:
    on the unsolved stubs every check fails, and a notebook that opens on a wall of failures looks broken."""
    student = nbformat.read(STUDENT, as_version=4)
    code = [cell for cell in student.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "the student notebook was not run before it was committed"
    shown = {cell.source: cell.outputs for cell in code if cell.source.startswith("grader.check")}
    assert len(shown) == len(QUESTIONS) + 1 and not any(shown.values()), shown
    assert any("train batches: 30" in output.get("text", "") for cell in code for output in cell.outputs)


def test_assign_drops_only_the_check_cells_outputs(tmp_path: Path) -> None:
    """``assign.py``'s last step: the check cells (``grader.check(...)``, ``grader.check_all()``) lose their
    output and keep their execution count; every other cell keeps what the run printed."""
    assign = _assign_module()
    notebook = nbformat.v4.new_notebook()
    failed = nbformat.v4.new_output("stream", text="q1 results:\n    ❌ Test case failed\n")
    printed = nbformat.v4.new_output("stream", text="train batches: 30\n")
    sources = ['print("train batches:", 30)', 'grader.check("q1")', "grader.check_all()", "# grader.check is below"]
    for count, source in enumerate(sources, 1):
        cell = nbformat.v4.new_code_cell(source, execution_count=count)
        cell.outputs = [printed if count in (1, 4) else failed]
        notebook.cells.append(cell)
    path = tmp_path / "5_exercises.ipynb"
    nbformat.write(notebook, path)
    assign.without_check_outputs(path)
    cells = nbformat.read(path, as_version=4).cells
    assert [len(cell.outputs) for cell in cells] == [1, 0, 0, 1]
    assert [cell.execution_count for cell in cells] == [1, 2, 3, 4]


def test_assign_joins_the_pieces_of_a_stream(tmp_path: Path) -> None:
    """A line the kernel flushed in two pieces is committed as one output, so that two runs write the same file."""
    assign = _assign_module()
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("new_trainer().fit(1, train_dataset, test_dataset)", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", text="Eval result: epoch 1, metrics: {'accuracy': 0.683}"),
                    nbformat.v4.new_output("stream", text="\n"),
                    nbformat.v4.new_output("stream", name="stderr", text="a warning\n"),
                    nbformat.v4.new_output("stream", text="done\n")]
    notebook.cells.append(cell)
    path = tmp_path / "5_exercises.ipynb"
    nbformat.write(notebook, path)
    assign.without_check_outputs(path)
    (cell,) = nbformat.read(path, as_version=4).cells
    assert [(output.name, output.text) for output in cell.outputs] == [
        ("stdout", "Eval result: epoch 1, metrics: {'accuracy': 0.683}\n"), ("stderr", "a warning\n"),
        ("stdout", "done\n")]


@pytest.mark.parametrize("question", QUESTIONS)
def test_placeholders_fail_the_checks_with_feedback(question: str) -> None:
    result = _check(question, _namespace(_student_code()))
    assert not result.passed_all
    for case in result.test_case_results:
        assert not case.passed
        assert "AssertionError" in case.message and "raised" not in case.message, case.message
        assert not unbalanced_quotes(_feedback(case.message)), case.message


# ----------------------------------------------------------------------------- wrong answers

WRONG_ANSWERS = {
    "q1 wrong format": ("q1", 0, '''
class LossLine(Callback):
    def __init__(self, per_print_times=1):
        super().__init__()
        self.per_print_times = per_print_times

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        step = (cb_params.cur_step_num - 1) % cb_params.batch_num + 1
        print(f"epoch {cb_params.cur_epoch_num} step {step} loss {float(cb_params.net_outputs)}")
''', ["expected the line 'epoch: 1 step: 1, loss is 0.", "but your callback printed 'epoch 1 step 1 loss 0.",
      # otter strips the last quote of a message: the feedback goes on after the quoted line
      re.compile(r"but your callback printed 'epoch 1 step 1 loss 0\.\d+'\.$")]),
    "q1 prints nothing": ("q1", 0, '''
class LossLine(Callback):
    def __init__(self, per_print_times=1):
        super().__init__()
        self.per_print_times = per_print_times

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        step = (cb_params.cur_step_num - 1) % cb_params.batch_num + 1
        self.line = f"epoch: {cb_params.cur_epoch_num} step: {step}, loss is {float(cb_params.net_outputs)}"
''', ["LossLine(1), one epoch of 3 steps: expected 3 lines but your callback printed nothing: print each line "
      "with print() in on_train_step_end", re.compile(r"the first one is 'epoch: 1 step: 1, loss is 0\.\d+'\.$")]),
    "q1 a line missing": ("q1", 1, '''
class LossLine(Callback):
    def __init__(self, per_print_times=1):
        super().__init__()
        self.per_print_times = per_print_times

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        if cb_params.cur_epoch_num == 1 and cb_params.cur_step_num % self.per_print_times == 0:
            print(f"epoch: 1 step: {cb_params.cur_step_num}, loss is {float(cb_params.net_outputs)}")
''', ["LossLine(2), two epochs of 3 steps: expected 3 lines but your callback printed 1",
      re.compile(r"the first missing line is 'epoch: 2 step: 1, loss is \d\.\d+'\.$")]),
    "q1 an extra line": ("q1", 0, '''
class LossLine(Callback):
    def __init__(self, per_print_times=1):
        super().__init__()
        self.per_print_times = per_print_times

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        step = (cb_params.cur_step_num - 1) % cb_params.batch_num + 1
        print(f"epoch: {cb_params.cur_epoch_num} step: {step}, loss is {float(cb_params.net_outputs)}")

    def on_train_end(self, run_context):
        print("training done")
''', ["LossLine(1), one epoch of 3 steps: expected 3 lines but your callback also printed 'training done'."]),
    "q1 global step": ("q1", 1, '''
class LossLine(Callback):
    def __init__(self, per_print_times=1):
        super().__init__()
        self.per_print_times = per_print_times

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        if cb_params.cur_step_num % self.per_print_times == 0:
            print(f"epoch: {cb_params.cur_epoch_num} step: {cb_params.cur_step_num}, loss is {float(cb_params.net_outputs)}")
''', ["LossLine(2), two epochs of 3 steps: expected the line 'epoch: 2 step: 1, loss is",
      "but your callback printed 'epoch: 2 step: 4, loss is"]),
    "q1 ignores per_print_times": ("q1", 1, '''
class LossLine(Callback):
    def __init__(self, per_print_times=1):
        super().__init__()

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        step = (cb_params.cur_step_num - 1) % cb_params.batch_num + 1
        print(f"epoch: {cb_params.cur_epoch_num} step: {step}, loss is {float(cb_params.net_outputs)}")
''', ["expected the line 'epoch: 1 step: 2, loss is", "but your callback printed 'epoch: 1 step: 1, loss is"]),
    "q2 seconds": ("q2", 0, '''
class EpochTimer(Callback):
    def on_train_epoch_begin(self, run_context):
        self.started = time.perf_counter()

    def on_train_epoch_end(self, run_context):
        seconds = time.perf_counter() - self.started
        print("Train epoch time: {:5.3f} ms, per step time: {:5.3f} ms".format(seconds, seconds / 3))
''', ["epoch 1 ran 3 steps of at least 50 ms, so it took at least 150 ms, but your line says 0.",
      "(milliseconds, not seconds?)"]),
    "q2 clock never restarted": ("q2", 0, '''
class EpochTimer(Callback):
    def on_train_begin(self, run_context):
        self.started = time.perf_counter()

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        ms = (time.perf_counter() - self.started) * 1000
        print("Train epoch time: {:5.3f} ms, per step time: {:5.3f} ms".format(ms, ms / cb_params.batch_num))
''', ["ms but your line says", "start the clock again at the beginning of every epoch"]),
    "q2 wrong division": ("q2", 0, '''
class EpochTimer(Callback):
    def on_train_epoch_begin(self, run_context):
        self.started = time.perf_counter()

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        ms = (time.perf_counter() - self.started) * 1000
        print("Train epoch time: {:5.3f} ms, per step time: {:5.3f} ms".format(ms, ms / cb_params.cur_step_num))
''', ["the per step time is the epoch time divided by the 3 steps of the epoch (cb_params.batch_num)",
      "but your line says"]),
    "q2 own format": ("q2", 0, '''
class EpochTimer(Callback):
    def on_train_epoch_begin(self, run_context):
        self.started = time.perf_counter()

    def on_train_epoch_end(self, run_context):
        print(f"epoch took {(time.perf_counter() - self.started) * 1000:.1f} ms")
''', ["expected a line like 'Train epoch time: 152.345 ms, per step time: 50.782 ms' but your callback printed 'epoch took",
      re.compile(r"but your callback printed 'epoch took \d+\.\d ms'\.$")]),
    "q2 prints nothing": ("q2", 0, '''
class EpochTimer(Callback):
    def on_train_epoch_begin(self, run_context):
        self.started = time.perf_counter()

    def on_train_epoch_end(self, run_context):
        self.ms = (time.perf_counter() - self.started) * 1000
''', ["2 epochs of 3 steps: expected one line per epoch but your callback printed nothing: print the line with "
      "print() in on_train_epoch_end"]),
    # Line 5 of this source (which starts with an empty line) reads self.started, never set.
    "q2 error in a hook": ("q2", 0, '''
class EpochTimer(Callback):
    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        ms = (time.perf_counter() - self.started) * 1000
        print("Train epoch time: {:5.3f} ms, per step time: {:5.3f} ms".format(ms, ms / cb_params.batch_num))
''', ["training with your callback raised AttributeError: 'EpochTimer' object has no attribute 'started' "
      "(in the cell that defines EpochTimer, line 5, in on_train_epoch_end)"]),
    "q3 stops on a step": ("q3", 0, '''
class StopAtAccuracy(Callback):
    def __init__(self, target):
        super().__init__()
        self.target = target

    def on_train_step_end(self, run_context):
        run_context.request_stop()
''', ["training stopped in the middle of epoch 1 (after global step 1; each epoch has 2 steps)",
      "your callback requested the stop in on_train_step_end, before the epoch's last step; request it in "
      "on_train_epoch_end instead, after the validation (cb_params.metrics holds its result there)"]),
    # The stop requested at the next epoch's start: the feedback names that hook, not a step hook.
    "q3 stops at the next epoch's start": ("q3", 0, '''
class StopAtAccuracy(Callback):
    def __init__(self, target):
        super().__init__()
        self.target = target

    def on_train_epoch_end(self, run_context):
        self.reached = run_context.original_args().metrics["accuracy"] >= self.target

    def on_train_epoch_begin(self, run_context):
        if getattr(self, "reached", False):
            run_context.request_stop()
''', ["training stopped in the middle of epoch 4 (after global step 7; each epoch has 2 steps): your callback "
      "requested the stop in on_train_epoch_begin, before the epoch's last step; request it in on_train_epoch_end "
      "instead, after the validation (cb_params.metrics holds its result there)"]),
    "q3 strictly above": ("q3", 1, '''
class StopAtAccuracy(Callback):
    def __init__(self, target):
        super().__init__()
        self.target = target

    def on_train_epoch_end(self, run_context):
        if run_context.original_args().metrics["accuracy"] > self.target:
            run_context.request_stop()
''', ["with validation accuracies [0.6, 0.8, 0.9, 0.95] per epoch and target=0.8, training should stop after "
      "epoch 2 (accuracy 0.8 >= 0.8), but it ran 3 epochs: your callback requested the stop after epoch 3, where "
      "the accuracy was 0.9; after epoch 2 the accuracy equals the target (0.8), and reaching the target counts: "
      "compare with >=, not >"]),
    "q3 never stops": ("q3", 0, '''
class StopAtAccuracy(Callback):
    def __init__(self, target):
        super().__init__()
        self.target = target

    def on_train_epoch_end(self, run_context):
        accuracy = run_context.original_args().metrics["accuracy"]
        if accuracy >= self.target:
            self.reached = accuracy
''', ["with validation accuracies [0.5, 0.7, 0.85, 0.9, 0.95] per epoch and target=0.8, training should stop after "
      "epoch 3 (accuracy 0.85 >= 0.8), but it ran 5 epochs: your callback never called run_context.request_stop(): "
      "call it in on_train_epoch_end once the accuracy reaches the target"]),
    "q4 never saves": ("q4", 0, '''
class SaveBest(Callback):
    def __init__(self, file_name, monitor="accuracy"):
        super().__init__()
        self.file_name, self.monitor, self.best = file_name, monitor, float("-inf")

    def on_train_epoch_end(self, run_context):
        value = run_context.original_args().metrics[self.monitor]
        if value > self.best:
            self.best = value
''', ["with accuracy [0.5, 0.8, 0.7, 0.9, 0.6] per epoch, expected a checkpoint at self.file_name but there is none: "
      "save one with nbcallback.save_checkpoint(cb_params.network, self.file_name, append_dict=...) when the value "
      "improves"]),
    # MindSpore's cb_params.epoch_num is the run's number of epochs, not the current one.
    "q4 the run's epoch count": ("q4", 0, '''
class SaveBest(Callback):
    def __init__(self, file_name, monitor="accuracy"):
        super().__init__()
        self.file_name, self.monitor, self.best = file_name, monitor, None

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        value = cb_params.metrics[self.monitor]
        if self.best is None or value > self.best:
            self.best = value
            nbcallback.save_checkpoint(cb_params.network, self.file_name,
                                       append_dict={"epoch": cb_params.epoch_num, self.monitor: value})
''', ["with accuracy [0.5, 0.8, 0.7, 0.9, 0.6] per epoch, the best is epoch 4 (0.9), but the checkpoint says "
      "epoch 5: 5 is cb_params.epoch_num, the number of epochs of the whole run; the epoch that just ended is "
      "cb_params.cur_epoch_num"]),
    "q4 saves every epoch": ("q4", 0, '''
class SaveBest(Callback):
    def __init__(self, file_name, monitor="accuracy"):
        super().__init__()
        self.file_name, self.monitor = file_name, monitor

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        nbcallback.save_checkpoint(cb_params.network, self.file_name, append_dict={"epoch": cb_params.cur_epoch_num})
''', ["with accuracy [0.5, 0.8, 0.7, 0.9, 0.6] per epoch, the best is epoch 4 (0.9), but the checkpoint says epoch 5"]),
    "q4 ties overwrite": ("q4", 1, '''
class SaveBest(Callback):
    def __init__(self, file_name, monitor="accuracy"):
        super().__init__()
        self.file_name, self.monitor, self.best = file_name, monitor, float("-inf")

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        value = cb_params.metrics[self.monitor]
        if value >= self.best:
            self.best = value
            nbcallback.save_checkpoint(cb_params.network, self.file_name, append_dict={"epoch": cb_params.cur_epoch_num})
''', ["with accuracy [0.6, 0.75, 0.75, 0.7] per epoch, the best is epoch 2 (0.75), but the checkpoint says epoch 3"]),
    "q4 no epoch entry": ("q4", 0, '''
class SaveBest(Callback):
    def __init__(self, file_name, monitor="accuracy"):
        super().__init__()
        self.file_name, self.monitor, self.best = file_name, monitor, float("-inf")

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        if cb_params.metrics[self.monitor] > self.best:
            self.best = cb_params.metrics[self.monitor]
            nbcallback.save_checkpoint(cb_params.network, self.file_name)
''', ["the checkpoint has no 'epoch' entry (it has ['bias', 'weight'])", "pass append_dict="]),
    "q4 wrong weights": ("q4", 0, '''
import copy

class SaveBest(Callback):
    def __init__(self, file_name, monitor="accuracy"):
        super().__init__()
        self.file_name, self.monitor, self.best = file_name, monitor, float("-inf")

    def on_train_begin(self, run_context):
        self.initial = copy.deepcopy(run_context.original_args().network)

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        if cb_params.metrics[self.monitor] > self.best:
            self.best = cb_params.metrics[self.monitor]
            nbcallback.save_checkpoint(self.initial, self.file_name, append_dict={"epoch": cb_params.cur_epoch_num})
''', ["the checkpoint says epoch 4 but its weights are not the network's weights at the end of that epoch"]),
    "q5 no list": ("q5", 0, '''
class GradNorms(Callback):
    def on_train_step_end(self, run_context):
        self.last = 1.0
''', ["after training, cb_params has no 'grad_norms': create the list in on_train_begin"]),
    "q5 empty list": ("q5", 0, '''
class GradNorms(Callback):
    def on_train_begin(self, run_context):
        run_context.original_args().grad_norms = []

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        self.norm = float(torch.cat([p.grad.flatten() for p in cb_params.network.parameters()]).norm())
''', ["cb_params.grad_norms is empty: append the step's gradient norm to it in on_train_step_end"]),
    "q5 sum of norms": ("q5", 0, '''
class GradNorms(Callback):
    def on_train_begin(self, run_context):
        run_context.original_args().grad_norms = []

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        cb_params.grad_norms.append(sum(float(p.grad.norm()) for p in cb_params.network.parameters()))
''', ["step 1: expected the gradient norm", "but cb_params.grad_norms[0] is",
      "that is the sum of the per-parameter norms"]),
    "q5 tensors": ("q5", 0, '''
class GradNorms(Callback):
    def on_train_begin(self, run_context):
        run_context.original_args().grad_norms = []

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        grads = [p.grad for p in cb_params.network.parameters()]
        cb_params.grad_norms.append(torch.cat([g.flatten() for g in grads]).norm())
''', ["cb_params.grad_norms[0] is a Tensor: append a Python float"]),
    "q5 once per epoch": ("q5", 0, '''
class GradNorms(Callback):
    def on_train_begin(self, run_context):
        run_context.original_args().grad_norms = []

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        grads = [p.grad for p in cb_params.network.parameters()]
        cb_params.grad_norms.append(float(torch.cat([g.flatten() for g in grads]).norm()))
''', ["2 epochs of 3 steps: expected cb_params.grad_norms to be a list with one value per step (6 values) but it is ["]),
    "q6 last step loss": ("q6", 0, '''
class HalveLROnPlateau(Callback):
    def __init__(self, patience=2):
        super().__init__()
        self.patience, self.best, self.wait = patience, float("inf"), 0

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        loss = float(cb_params.net_outputs)
        if loss < self.best:
            self.best, self.wait = loss, 0
            return
        self.wait += 1
        if self.wait >= self.patience:
            for group in cb_params.optimizer.param_groups:
                group["lr"] /= 2
            self.wait = 0
''', ["with epoch mean losses [1.0, 0.75, 0.75, 0.75, 0.5, 0.5, 0.5, 0.5] and patience=2, expected the learning rate "
      "after each epoch to be [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025], but it was [0.1, 0.1, 0.05, 0.05,",
      "the first difference is after epoch 3: expected 0.1, got 0.05; your callback follows each epoch's last step "
      "loss (cb_params.net_outputs in on_train_epoch_end), not the epoch's mean: add up cb_params.net_outputs in "
      "on_train_step_end and divide by the number of steps in on_train_epoch_end"]),
    "q6 fixed patience": ("q6", 1, '''
class HalveLROnPlateau(Callback):
    def __init__(self, patience=2):
        super().__init__()

    def on_train_begin(self, run_context):
        self.best, self.wait = float("inf"), 0

    def on_train_epoch_begin(self, run_context):
        self.losses = []

    def on_train_step_end(self, run_context):
        self.losses.append(float(run_context.original_args().net_outputs))

    def on_train_epoch_end(self, run_context):
        mean = sum(self.losses) / len(self.losses)
        if mean < self.best:
            self.best, self.wait = mean, 0
            return
        self.wait += 1
        if self.wait >= 2:
            for group in run_context.original_args().optimizer.param_groups:
                group["lr"] /= 2
            self.wait = 0
''', ["and patience=3, expected the learning rate after each epoch to be [0.1, 0.1, 0.1, 0.05, 0.05, 0.05]",
      "the first difference is after epoch 3: expected 0.1, got 0.05"]),
    "q6 never changes the learning rate": ("q6", 0, '''
class HalveLROnPlateau(Callback):
    def __init__(self, patience=2):
        super().__init__()
        self.patience, self.best, self.wait = patience, float("inf"), 0

    def on_train_epoch_begin(self, run_context):
        self.losses = []

    def on_train_step_end(self, run_context):
        self.losses.append(float(run_context.original_args().net_outputs))

    def on_train_epoch_end(self, run_context):
        mean = sum(self.losses) / len(self.losses)
        if mean < self.best:
            self.best, self.wait = mean, 0
        else:
            self.wait += 1
''', ["but it was [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]; the first difference is after epoch 4: expected 0.05, "
      "got 0.1; your callback never changed the learning rate: halve group['lr'] for every group in "
      "cb_params.optimizer.param_groups"]),
    "q7 the first row": ("q7", 0, '''
def slowest_callback(profiler):
    return profiler.rows[0]
''', ["slowest_callback returned the row 'loop: data, cb_params, dispatch, the rest' of kind 'loop': only the rows "
      "of kind 'callback' are the hooks of callbacks (the step, the evaluation and the loop are the trainer's own time)"]),
    "q7 returns nothing": ("q7", 0, '''
def slowest_callback(profiler):
    rows = [row for row in profiler.rows if row.kind == "callback"]
    rows.sort(key=lambda row: row.total_s)
''', ["slowest_callback(profiler) should return one of profiler.rows (a ProfileRow), but it returned None"]),
    "q7 the label": ("q7", 0, '''
def slowest_callback(profiler):
    return max((row for row in profiler.rows if row.kind == "callback"), key=lambda row: row.total_s).label
''', ["slowest_callback(profiler) should return one of profiler.rows (a ProfileRow), but it returned "
      "'ModelCheckpoint.on_train_step_end (step_end)'; return the row itself, not its label"]),
    "q7 the slowest single call": ("q7", 0, '''
def slowest_callback(profiler):
    return max((row for row in profiler.rows if row.kind == "callback"), key=lambda row: row.mean_us)
''', ["slowest_callback returned 'SaveBest.on_train_end', not 'ModelCheckpoint.on_train_step_end (step_end)', the "
      "callback row with the largest total_s; that is the hook whose single call is the slowest (mean_us): the "
      "slowest callback is the one that took the most time in all (total_s)"]),
    "q7 the fastest callback": ("q7", 0, '''
def slowest_callback(profiler):
    return min((row for row in profiler.rows if row.kind == "callback"), key=lambda row: row.total_s)
''', ["in a profile whose callback rows (label, total_s) are [('ModelCheckpoint.on_train_step_end (step_end)', 1.5), "
      "('SaveBest.on_train_end', 0.6), ('LossMonitor.on_train_step_end (step_end)', 0.5)], slowest_callback returned "
      "'LossMonitor.on_train_step_end (step_end)', not 'ModelCheckpoint.on_train_step_end (step_end)', the callback "
      "row with the largest total_s"]),
    # Right on the made-up profile (ModelCheckpoint is its slowest callback), wrong on a real run.
    "q7 a callback named in advance": ("q7", 0, '''
def slowest_callback(profiler):
    return next((row for row in profiler.rows if row.name == "ModelCheckpoint"), None)
''', ["in a real run (2 epochs, a callback Slow that sleeps 0.1 s after each epoch among fast ones), "
      "slowest_callback returned None, not 'Slow.on_train_epoch_end', the callback row with the largest total_s"]),
    "q7 an error in slowest_callback": ("q7", 0, '''
def slowest_callback(profiler):
    return max(profiler.rows(), key=lambda row: row.total_s)
''', ["slowest_callback raised TypeError: 'list' object is not callable (in the cell that defines slowest_callback, "
      "line 3)"]),
    "q7 saves every step": ("q7", 1, '''
def epoch_checkpoint(directory, steps_per_epoch):
    return ModelCheckpoint(prefix="epoch", directory=directory)
''', ["2 epochs of 5 steps (steps_per_epoch=5): expected one checkpoint per epoch, after its last step (file names "
      "ending in ['-1_5.ckpt', '-2_5.ckpt']), but the ModelCheckpoint wrote ['epoch-2_1.ckpt', 'epoch-2_2.ckpt', "
      "'epoch-2_3.ckpt', 'epoch-2_4.ckpt', 'epoch-2_5.ckpt']; it saves every 1 step(s), and an epoch has 5: give "
      "ModelCheckpoint CheckpointConfig(save_checkpoint_steps=steps_per_epoch), which saves after each epoch's last "
      "step"]),
    # A config of its own, one step short: the feedback says how often it saves, not what the default does.
    "q7 one step short": ("q7", 1, '''
def epoch_checkpoint(directory, steps_per_epoch):
    config = CheckpointConfig(save_checkpoint_steps=steps_per_epoch - 1)
    return ModelCheckpoint(prefix="epoch", directory=directory, config=config)
''', ["but the ModelCheckpoint wrote ['epoch-1_4.ckpt', 'epoch-2_3.ckpt', 'epoch-2_5.ckpt']; it saves every 4 "
      "step(s), and an epoch has 5: give ModelCheckpoint CheckpointConfig(save_checkpoint_steps=steps_per_epoch), "
      "which saves after each epoch's last step"]),
    "q7 the notebook's steps per epoch": ("q7", 1, '''
def epoch_checkpoint(directory, steps_per_epoch):
    return ModelCheckpoint(prefix="epoch", directory=directory, config=CheckpointConfig(save_checkpoint_steps=30))
''', ["but the ModelCheckpoint wrote ['epoch-2_5.ckpt']", re.compile(r"wrote \['epoch-2_5\.ckpt'\]$")]),
    "q7 another directory": ("q7", 1, '''
def epoch_checkpoint(directory, steps_per_epoch):
    config = CheckpointConfig(save_checkpoint_steps=steps_per_epoch)
    return ModelCheckpoint(prefix="epoch", directory=os.path.join(directory, "checkpoints"), config=config)
''', ["but the ModelCheckpoint wrote []; give ModelCheckpoint the directory it is given (directory=directory)"]),
    "q7 the config instead": ("q7", 1, '''
def epoch_checkpoint(directory, steps_per_epoch):
    return CheckpointConfig(save_checkpoint_steps=steps_per_epoch)
''', ["epoch_checkpoint(directory, 5) should return a ModelCheckpoint, but it returned CheckpointConfig"]),
    "q7 an error in epoch_checkpoint": ("q7", 1, '''
def epoch_checkpoint(directory, steps_per_epoch):
    config = CheckpointConfig(save_checkpoint_steps="steps_per_epoch")
    return ModelCheckpoint(prefix="epoch", directory=directory, config=config)
''', ["epoch_checkpoint raised TypeError: For 'CheckpointConfig', 'save_checkpoint_steps': The input value must be "
      "int, but got 'str'. (in the cell that defines epoch_checkpoint, line 3)"]),
}


@pytest.mark.parametrize("name", sorted(WRONG_ANSWERS))
def test_each_check_rejects_a_wrong_answer_and_says_why(solution: dict[str, Any], name: str) -> None:
    question, case_index, source, feedback = WRONG_ANSWERS[name]
    result = _check(question, _namespace(_solution_code(), source))
    case = result.test_case_results[case_index]
    assert not case.passed, f"{name}: the check accepted a wrong answer"
    for text in feedback:
        assert has_feedback(text, case.message), f"{name}: {_shown(text)!r} not in the feedback:\n{case.message}"
    # otter strips the first and last quote of a message: no quoted text may lose one.
    assert not unbalanced_quotes(_feedback(case.message)), f"{name}: a quote is lost in\n{case.message}"
    # The feedback names no temporary folder (the committed notebook shows it, and it changes every run).
    assert tempfile.gettempdir() not in case.message, case.message
    # The summary grader.check shows in the notebook carries the same feedback.
    assert has_feedback(feedback[0], result.summary(public_only=True))


# ----------------------------------------------------------------------------- a broken answer cell

# Cells as a student runs them (the setup cell's imports first, as the notebook's first code cell does).
SETUP = PRELUDE.strip()
GOOD_GRAD_NORMS = """\
class GradNorms(Callback):
    def on_train_begin(self, run_context):
        run_context.original_args().grad_norms = []

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        squares = [p.grad.pow(2).sum() for p in cb_params.network.parameters() if p.grad is not None]
        cb_params.grad_norms.append(float(torch.stack(squares).sum().sqrt()))"""
BROKEN_CELLS = {
    # question: the cells run, in order (cell n is numbered [n]); the cells that fail, and how; the feedback
    "q1 NameError in the answer cell": ("q1", [SETUP, """\
class LossLine(Callbak):
    def on_train_step_end(self, run_context):
        print(run_context.original_args().cur_step_num)"""], {2: NameError}, [
        "the cell that defines LossLine (the one numbered [2]) fails at line 1 with NameError: name 'Callbak' is "
        "not defined; fix it, run that cell again, then this check"]),
    "q2 SyntaxError in the answer cell": ("q2", [SETUP, """\
class EpochTimer(Callback):
    def on_train_epoch_begin(self, run_context):
        self.started = time.perf_counter()

    def on_train_epoch_end(self, run_context):
        ms = (time.perf_counter() - self.started) * 1000
        print("Train epoch time: {:5.3f} ms".format(ms)"""], {2: SyntaxError}, [
        "the cell that defines EpochTimer (the one numbered [2]) fails at line 7 with SyntaxError: '(' was never "
        "closed; fix it, run that cell again, then this check"]),
    "q3 setup cell not run": ("q3", ["""\
class StopAtAccuracy(Callback):
    def __init__(self, target):
        super().__init__()
        self.target = target"""], {1: NameError}, [
        "the cell that defines StopAtAccuracy (the one numbered [1]) fails at line 1 with NameError: name "
        "'Callback' is not defined, because the setup cell has not run since the kernel started: run the setup cell "
        "near the top first (it imports Callback and defines new_trainer; or run every cell above this one), then the "
        "cell that defines StopAtAccuracy, then this check"]),
    # After a restart, the check run before the answer cell: the same pointer to the setup cell.
    "q4 nothing run since a restart": ("q4", [], {}, [
        "there is no class named SaveBest: run the cell that defines it (after a kernel restart, run the setup cell "
        "near the top first), then this check"]),
    "q4 answer cell not run": ("q4", [SETUP], {}, [
        "there is no class named SaveBest: run the cell that defines it, then this check"]),
    # Parsed, but not compiled: Python finds this one only when it compiles the cell, before running any of it.
    "q4 return outside a function": ("q4", [SETUP, """\
class SaveBest(Callback):
    def __init__(self, file_name, monitor="accuracy"):
        super().__init__()
        self.file_name, self.monitor = file_name, monitor
    return"""], {2: SyntaxError}, [
        "the cell that defines SaveBest (the one numbered [2]) fails at line 5 with SyntaxError: 'return' outside "
        "function; fix it, run that cell again, then this check"]),
    # The class of the first run is still there; the check says the cell's last run failed, not what it
    # makes of the old class.
    "q5 SyntaxError after a good run": ("q5", [SETUP, GOOD_GRAD_NORMS, GOOD_GRAD_NORMS.replace(
        "if p.grad is not None]", "if p.grad is not None")], {3: SyntaxError}, [
        "the cell that defines GradNorms (the one numbered [3]) fails at line 7 with SyntaxError: '[' was never "
        "closed; fix it, run that cell again, then this check"]),
    "q6 IndentationError in the answer cell": ("q6", [SETUP, """\
class HalveLROnPlateau(Callback):
    def __init__(self, patience=2):
        super().__init__()
        self.patience = patience

    def on_train_begin(self, run_context):
    self.best = float("inf")"""], {2: IndentationError}, [
        "the cell that defines HalveLROnPlateau (the one numbered [2]) fails at line 7 with IndentationError: "
        "expected an indented block after function definition on line 6"]),
    # Exercise 7 defines two functions in one cell: each check names its own function and the same line.
    "q7 SyntaxError in the answer cell": ("q7", [SETUP, """\
from nbcallback.train import CallbackProfiler, CheckpointConfig, ModelCheckpoint


def slowest_callback(profiler):
    return max(row for row in profiler.rows if row.kind == "callback", key=lambda row: row.total_s)


def epoch_checkpoint(directory, steps_per_epoch):
    ..."""], {2: SyntaxError}, [
        "(the one numbered [2]) fails at line 5 with SyntaxError: Generator expression must be parenthesized; fix "
        "it, run that cell again, then this check"]),
    "q7 answer cell not run": ("q7", [SETUP], {}, [
        "there is no function named ", ": run the cell that defines it, then this check"]),
}


@pytest.mark.parametrize("name", sorted(BROKEN_CELLS))
def test_a_broken_answer_cell_is_named_with_its_line(name: str) -> None:
    """A cell that did not run is reported as such, with its number and the line, not as a missing class."""
    question, cells, failing, feedback = BROKEN_CELLS[name]
    env, failures = _kernel_namespace(*cells)
    assert failures == failing, f"{name}: the cells that failed are {failures}"
    result = _check(question, env)
    assert not result.passed_all
    for case in result.test_case_results:
        for text in feedback:
            assert text in case.message, f"{name}: {text!r} not in the feedback:\n{case.message}"
        assert not unbalanced_quotes(_feedback(case.message)), case.message
    assert feedback[0] in result.summary(public_only=True)


def checks_in_a_kernel(tests: Path, cells: list[str], questions: list[str], folder: Path) -> list[str]:
    """Run ``cells`` in a fresh notebook kernel as a student does, then ``grader.check(question)`` in a cell of
    its own for each question; return what each check cell shows."""
    notebook = nbformat.v4.new_notebook()
    setup = f"import otter\ngrader = otter.Notebook(tests_dir={str(tests)!r})"
    checks = [f'grader.check("{question}")' for question in questions]
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in [setup, *cells, *checks]]
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True, record_timing=False,
                            resources={"metadata": {"path": str(folder)}})
    client.execute()
    return [
        "".join(output.get("text", "") + output.get("data", {}).get("text/plain", "") for output in cell.outputs)
        for cell in notebook.cells[-len(questions):]
    ]


def test_grader_check_in_a_kernel_names_the_broken_cell(tmp_path: Path) -> None:
    """The same in Jupyter: IPython keeps each cell's source in ``In``, numbered as in the notebook's margin."""
    cells = [SETUP, BROKEN_CELLS["q1 NameError in the answer cell"][1][1],
             BROKEN_CELLS["q2 SyntaxError in the answer cell"][1][1]]
    shown = checks_in_a_kernel(PUBLIC_TESTS, cells, ["q1", "q2"], tmp_path)
    # The setup cell is [1] here, so the answer cells are [3] and [4].
    assert "the cell that defines LossLine (the one numbered [3]) fails at line 1 with NameError: name 'Callbak' " \
        "is not defined" in shown[0], shown[0]
    assert "the cell that defines EpochTimer (the one numbered [4]) fails at line 7 with SyntaxError: '(' was never " \
        "closed" in shown[1], shown[1]


def restart_replay(tests: Path, answer: str, question: str, folder: Path) -> tuple[str, str]:
    """A student's session in a real kernel: the checks cell, the setup, the answer cell and its check (it
    passes); then *Kernel > Restart*, and only the checks cell, the answer cell and its check again. What the
    two checks show."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3", cwd=str(folder))
    try:
        def run(code: str) -> str:
            shown: list[str] = []

            def keep(message: dict[str, Any]) -> None:
                content = message["content"]
                shown.append(content.get("text", "") + content.get("data", {}).get("text/plain", "")
                             + "\n".join(content.get("traceback", [])))

            client.execute_interactive(code, timeout=300, output_hook=keep)
            return "".join(shown)

        grader = f"import otter\ngrader = otter.Notebook(tests_dir={str(tests)!r})"
        check = f'grader.check("{question}")'
        for cell in (grader, SETUP, answer):
            run(cell)
        before = run(check)
        manager.restart_kernel(now=True)
        client.wait_for_ready(timeout=120)
        run(grader)
        run(answer)
        return before, run(check)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_after_a_kernel_restart_the_check_says_to_run_the_setup_cell(tmp_path: Path) -> None:
    """Issue 44: after a restart, a student who runs only the checks cell, the answer cell and its check is told
    to run the setup cell first, not to fix a cell that is right."""
    answer = next(cell for cell in _solution_cells() if cell.startswith("class StopAtAccuracy"))
    before, after = restart_replay(PUBLIC_TESTS, answer, "q3", tmp_path)
    assert "q3 results: All test cases passed!" in before, before
    assert ("the cell that defines StopAtAccuracy (the one numbered [2]) fails at line 1 with NameError: name "
            "'Callback' is not defined, because the setup cell has not run since the kernel started: run the setup "
            "cell near the top first") in after, after
    assert "fix it, run that cell again" not in after, after


def test_every_public_check_is_shown_a_wrong_answer() -> None:
    cases = {(question, index) for question, index, _, _ in WRONG_ANSWERS.values()}
    for question in QUESTIONS:
        count = len(ExceptionTestFile.from_file(str(PUBLIC_TESTS / f"{question}.py")).test_cases)
        missing = [index for index in range(count) if (question, index) not in cases]
        assert not missing, f"{question}: public checks {missing} have no wrong-answer test"


def one_group_answer(solution_code: str) -> str:
    """Halving only the first parameter group: passes the public checks (one group), not the hidden ones."""
    one_group = solution_code.replace(
        'for group in cb_params.optimizer.param_groups:\n                group["lr"] /= 2',
        'cb_params.optimizer.param_groups[0]["lr"] /= 2',
    )
    assert one_group != solution_code
    return one_group


def test_the_hidden_tests_catch_what_the_public_ones_miss(solution: dict[str, Any], assigned: Path) -> None:
    env = _namespace(one_group_answer(_solution_code()))
    assert _check("q6", env).passed_all
    hidden = _check("q6", env, assigned / "autograder" / "tests")
    assert not hidden.passed_all
    assert "learning rates of the two parameter groups" in hidden.summary()


#: Saving every 5 steps: right for the public check's 5 steps per epoch, not for the hidden one's 4.
FIXED_STEPS = '''
def epoch_checkpoint(directory, steps_per_epoch):
    return ModelCheckpoint(prefix="epoch", directory=directory, config=CheckpointConfig(save_checkpoint_steps=5))
'''


def test_the_hidden_tests_catch_a_fixed_number_of_steps(solution: dict[str, Any], assigned: Path) -> None:
    env = _namespace(_solution_code(), FIXED_STEPS)
    assert _check("q7", env).passed_all
    hidden = _check("q7", env, assigned / "autograder" / "tests")
    assert not hidden.passed_all
    assert "3 epochs of 4 steps (steps_per_epoch=4): expected one checkpoint per epoch" in hidden.summary()


# ----------------------------------------------------------------------------- grading without Docker


def otter_run_three_solved(student: Path, master: Path, assigned: Path, tmp_path: Path) -> tuple[dict[str, int], str]:
    """What a teacher runs per submission (``otter run``): a student notebook with q1-q3 solved and
    q4-q7 as handed out; returns the scores per question and the public tests' output."""
    submission_notebook = nbformat.read(student, as_version=4)
    answers = [c for c in submission_notebook.cells if "otter_answer_cell" in c.metadata.get("tags", [])]
    solutions = _solution_cells(master)
    assert len(answers) == len(solutions) == len(QUESTIONS)
    for answer, solution_source in list(zip(answers, solutions))[:3]:
        answer.source = solution_source
    submission = tmp_path / "submissions" / "student_a.ipynb"
    submission.parent.mkdir()
    nbformat.write(submission_notebook, submission)
    (tmp_path / "out").mkdir()
    zips = sorted((assigned / "autograder").glob("*.zip"))
    env = {**os.environ, "NBCALLBACK_DATA": str(tmp_path / "data"), "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "otter", "run", "-a", str(zips[-1]), "-o", str(tmp_path / "out"), str(submission)],
        cwd=submission.parent, env=env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["tests"]
    scores = {test["name"]: test["score"] for test in results if test["name"] in QUESTIONS}
    public = next(test["output"] for test in results if test["name"] == "Public Tests")
    return scores, public


def test_otter_run_grades_a_submission_locally(assigned: Path, mnist_mirror: str, tmp_path: Path) -> None:
    """What a teacher runs per submission: solved q1-q3, left q4-q7 as handed out."""
    scores, public = otter_run_three_solved(STUDENT, MASTER, assigned, tmp_path)
    assert scores == {"q1": 3, "q2": 3, "q3": 3, "q4": 0, "q5": 0, "q6": 0, "q7": 0}, scores
    assert "expected a checkpoint at" in public and "cb_params has no 'grad_norms'" in public
