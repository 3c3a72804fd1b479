"""The Chinese exercises (notebooks/zh_CN/5_exercises.ipynb) and their otter-grader checks.

The twin of ``test_exercises.py``: the Chinese master
(``notebooks/exercises/master/zh_CN/5_exercises.ipynb``) has the English master's code and
tests, with Chinese prose, comments and feedback; ``python notebooks/exercises/assign.py --lang
zh_CN`` makes the student version and its public tests (``notebooks/zh_CN/tests/``).

* the Chinese masters' code cells, and the public test files, are the English ones token for
  token (only comments and translated messages differ), so both languages grade alike;
* the Chinese reference solution passes every public and hidden test;
* each public check rejects the same wrong answers as the English one, with Chinese feedback
  that names what was expected and what the callback did;
* the committed student version is what ``otter assign`` makes of the Chinese master, and a
  teacher grades a Chinese submission locally with ``otter run``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from otter.test_files import ExceptionTestFile

from tests.exercises import test_exercises as english
from tests.notebooks.test_zh_cn_code_cells import sync_code

REPO = english.REPO
NOTEBOOKS = REPO / "notebooks"
MASTER = NOTEBOOKS / "exercises" / "master" / "zh_CN" / "5_exercises.ipynb"
STUDENT = NOTEBOOKS / "zh_CN" / "5_exercises.ipynb"
PUBLIC_TESTS = NOTEBOOKS / "zh_CN" / "tests"
QUESTIONS = english.QUESTIONS
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def _solution_cells() -> list[str]:
    return english._solution_cells(MASTER)


def _solution_code() -> str:
    return english._solution_code(MASTER)


def _student_code() -> str:
    return english._student_code(STUDENT)


def _check(question: str, env: dict[str, Any], tests: Path = PUBLIC_TESTS) -> ExceptionTestFile:
    return english._check(question, env, tests)


@pytest.fixture(scope="module")
def solution() -> dict[str, Any]:
    return english._namespace(_solution_code())


@pytest.fixture(scope="module")
def assigned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``otter assign`` of the Chinese master (without running its tests): student/ and autograder/."""
    return english._assign_module().run_otter_assign(tmp_path_factory.mktemp("otter_zh") / "dist", lang="zh_CN")


# ----------------------------------------------------------------------------- the same exercises as in English


def test_the_chinese_master_is_the_english_master_translated() -> None:
    differences = sync_code.compare(english.MASTER, MASTER)
    assert not differences, (
        "the Chinese master's code differs from the English master's (only comments and translated messages may):\n\n"
        + "\n\n".join(str(d) for d in differences)
    )
    en = nbformat.read(english.MASTER, as_version=4)
    zh = nbformat.read(MASTER, as_version=4)
    assert [c.cell_type for c in zh.cells] == [c.cell_type for c in en.cells]
    # The raw cells (assignment config, question names and points, BEGIN/END markers) are the same.
    assert [c.source for c in zh.cells if c.cell_type == "raw"] == [c.source for c in en.cells if c.cell_type == "raw"]
    for index, cell in enumerate(zh.cells):
        if cell.cell_type == "markdown":
            assert CJK.search(cell.source), f"markdown cell {index} of the Chinese master is not translated"
    assert zh.metadata.get("kernelspec") == en.metadata.get("kernelspec")


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_chinese_public_tests_are_the_english_ones(question: str) -> None:
    """Same test cases, points and assertions; only the feedback messages are Chinese."""
    en_file = ExceptionTestFile.from_file(str(english.PUBLIC_TESTS / f"{question}.py"))
    zh_file = ExceptionTestFile.from_file(str(PUBLIC_TESTS / f"{question}.py"))
    assert [(c.name, c.points, c.hidden) for c in zh_file.test_cases] == \
        [(c.name, c.points, c.hidden) for c in en_file.test_cases]
    assert zh_file.all_or_nothing == en_file.all_or_nothing
    en_text = (english.PUBLIC_TESTS / f"{question}.py").read_text(encoding="utf-8")
    zh_text = (PUBLIC_TESTS / f"{question}.py").read_text(encoding="utf-8")
    assert sync_code.compare_cells(en_text, zh_text) is None
    assert CJK.search(zh_text)


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
    stale = english._assign_module().stale_files(assigned, "zh_CN")
    assert not stale, f"stale: {stale}; regenerate with `python notebooks/exercises/assign.py --lang zh_CN`"


def test_students_get_the_public_tests_only(assigned: Path) -> None:
    english.students_get_the_public_tests_only(assigned, PUBLIC_TESTS, STUDENT)


def test_student_notebook_checks_every_question_in_chinese() -> None:
    student = nbformat.read(STUDENT, as_version=4)
    sources = [cell.source for cell in student.cells if cell.cell_type == "code"]
    assert '    grader = otter.Notebook("5_exercises.ipynb")' in sources[1].splitlines()
    assert '    grader = Notebook("5_exercises.ipynb", lang="zh_CN")' in sources[1].splitlines()
    for question in QUESTIONS:
        assert f'grader.check("{question}")' in sources
    # otter assign's own English lines are translated too.
    for index, cell in enumerate(student.cells):
        if cell.cell_type == "markdown":
            assert CJK.search(cell.source), f"markdown cell {index} is not translated: {cell.source!r}"
    assert "Initialize Otter" not in sources[1] and CJK.search(sources[0]) and CJK.search(sources[1])
    # Committed from a real run, but the check cells show nothing: on the unsolved stubs every check fails, and a
    # student sees the (Chinese) feedback by running one (test_placeholders_fail_the_checks_with_feedback).
    code = [cell for cell in student.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "the student notebook was not run before it was committed"
    shown = {cell.source: cell.outputs for cell in code if cell.source.startswith("grader.check")}
    assert len(shown) == len(QUESTIONS) + 1 and not any(shown.values()), shown
    assert any("训练集批次数" in output.get("text", "") for cell in code for output in cell.outputs)


@pytest.mark.parametrize("question", QUESTIONS)
def test_placeholders_fail_the_checks_with_feedback(question: str) -> None:
    result = _check(question, english._namespace(_student_code()))
    assert not result.passed_all
    for case in result.test_case_results:
        assert not case.passed
        assert "AssertionError" in case.message and "抛出" not in case.message, case.message
        assert CJK.search(case.message.split("AssertionError", 1)[1]), case.message
        assert not english.unbalanced_quotes(english._feedback(case.message)), case.message


# ----------------------------------------------------------------------------- wrong answers

# The English wrong answers (test_exercises.WRONG_ANSWERS), with the Chinese feedback each must get.
FEEDBACK = {
    "q1 wrong format": ["LossLine(1)，1个epoch，每个epoch 3个step：预期打印 'epoch: 1 step: 1, loss is 0.",
                        "但你的回调打印了 'epoch 1 step 1 loss 0.",
                        re.compile(r"但你的回调打印了 'epoch 1 step 1 loss 0\.\d+'。$")],
    "q1 prints nothing": ["LossLine(1)，1个epoch，每个epoch 3个step：预期打印3行，但你的回调什么也没有打印："
                          "请在on_train_step_end中用print()打印每一行",
                          re.compile(r"第一行是 'epoch: 1 step: 1, loss is 0\.\d+'。$")],
    "q1 a line missing": ["LossLine(2)，2个epoch，每个epoch 3个step：预期打印3行，但你的回调打印了1行",
                          re.compile(r"缺少的第一行是 'epoch: 2 step: 1, loss is \d\.\d+'。$")],
    "q1 an extra line": ["LossLine(1)，1个epoch，每个epoch 3个step：预期打印3行，但你的回调还多打印了 'training done'。"],
    "q1 global step": ["LossLine(2)，2个epoch，每个epoch 3个step：预期打印 'epoch: 2 step: 1, loss is",
                       "但你的回调打印了 'epoch: 2 step: 4, loss is"],
    "q1 ignores per_print_times": ["预期打印 'epoch: 1 step: 2, loss is", "但你的回调打印了 'epoch: 1 step: 1, loss is"],
    "q2 seconds": ["epoch 1运行了3个step，每个step至少50 ms，因此至少用时150 ms，但你打印的是0.",
                   "（单位应是毫秒，不是秒？）"],
    # Which epoch overshoots first depends on the machine's load; the feedback is the same.
    "q2 clock never restarted": ["ms，但你打印的是", "请在每个epoch开始时重新开始计时（on_train_epoch_begin）"],
    "q2 wrong division": ["每个step的时间是epoch时间除以该epoch的3个step（cb_params.batch_num）", "但你打印的是"],
    "q2 own format": ["预期打印形如 'Train epoch time: 152.345 ms, per step time: 50.782 ms' 的行，"
                      "但你的回调打印了 'epoch took", re.compile(r"但你的回调打印了 'epoch took \d+\.\d ms'。$")],
    "q2 prints nothing": ["2个epoch，每个epoch 3个step：预期每个epoch打印一行，但你的回调什么也没有打印："
                          "请在on_train_epoch_end中用print()打印这一行"],
    "q2 error in a hook": ["使用你的回调训练时抛出了AttributeError：'EpochTimer' object has no attribute 'started'"
                           "（定义EpochTimer的单元格第5行，在on_train_epoch_end中）"],
    "q3 stops on a step": ["训练在epoch 1的中途停止了（在全局step 1之后；每个epoch有2个step）",
                           "你的回调在on_train_step_end中请求了停止，那时该epoch的最后一个step还没有运行；请改为在"
                           "验证之后的on_train_epoch_end中请求停止（那里的cb_params.metrics保存着验证结果）"],
    "q3 stops at the next epoch's start": ["训练在epoch 4的中途停止了（在全局step 7之后；每个epoch有2个step）：你的回调"
                                           "在on_train_epoch_begin中请求了停止"],
    "q3 strictly above": ["各epoch的验证精度为[0.6, 0.8, 0.9, 0.95]，target=0.8时，训练应在epoch 2之后停止"
                          "（accuracy 0.8 >= 0.8），但实际运行了3个epoch：你的回调在epoch 3之后请求了停止，那时的精度是0.9"
                          "；epoch 2之后的精度正好等于目标（0.8），而达到目标就算数：请用>=比较，而不是>"],
    "q3 never stops": ["各epoch的验证精度为[0.5, 0.7, 0.85, 0.9, 0.95]，target=0.8时，训练应在epoch 3之后停止"
                       "（accuracy 0.85 >= 0.8），但实际运行了5个epoch：你的回调从未调用run_context.request_stop()："
                       "请在on_train_epoch_end中，当精度达到目标时调用它"],
    "q4 never saves": ["各epoch的accuracy为[0.5, 0.8, 0.7, 0.9, 0.6]，预期在self.file_name有一个检查点，但没有找到："
                       "请在值变好时用nbcallback.save_checkpoint(cb_params.network, self.file_name, append_dict=...)保存"],
    "q4 the run's epoch count": ["各epoch的accuracy为[0.5, 0.8, 0.7, 0.9, 0.6]，最佳的是epoch 4（0.9），但检查点中记录的是"
                                 "epoch 5：5是cb_params.epoch_num，即整个训练的epoch数；刚结束的epoch是cb_params.cur_epoch_num"],
    "q4 saves every epoch": ["各epoch的accuracy为[0.5, 0.8, 0.7, 0.9, 0.6]，最佳的是epoch 4（0.9），"
                             "但检查点中记录的是epoch 5"],
    "q4 ties overwrite": ["各epoch的accuracy为[0.6, 0.75, 0.75, 0.7]，最佳的是epoch 2（0.75），但检查点中记录的是epoch 3"],
    "q4 no epoch entry": ["检查点中没有'epoch'条目（只有['bias', 'weight']）", "请把append_dict="],
    "q4 wrong weights": ["检查点中记录的是epoch 4，但其权重不是网络在该epoch结束时的权重"],
    "q5 no list": ["训练结束后，cb_params中没有'grad_norms'：请在on_train_begin中创建列表"],
    "q5 empty list": ["cb_params.grad_norms是空的：请在on_train_step_end中把该step的梯度范数追加到其中"],
    "q5 sum of norms": ["step 1：预期梯度范数为", "但cb_params.grad_norms[0]是", "这是各个参数的范数之和"],
    "q5 tensors": ["cb_params.grad_norms[0]是Tensor：请追加Python的float"],
    "q5 once per epoch": ["2个epoch，每个epoch 3个step：预期cb_params.grad_norms是每个step一个值的列表（共6个值），但它是["],
    "q6 last step loss": ["各epoch的平均loss为[1.0, 0.75, 0.75, 0.75, 0.5, 0.5, 0.5, 0.5]，patience=2时，预期学习率"
                          "在各epoch之后依次为[0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025]，但实际为[0.1, 0.1, 0.05, 0.05,",
                          "第一处不同在epoch 3之后：预期0.1，实际为0.05；你的回调依据的是每个epoch最后一个step的loss"
                          "（on_train_epoch_end中的cb_params.net_outputs），而不是该epoch的平均值：请在on_train_step_end"
                          "中累加cb_params.net_outputs，并在on_train_epoch_end中除以step数"],
    "q6 fixed patience": ["patience=3时，预期学习率在各epoch之后依次为[0.1, 0.1, 0.1, 0.05, 0.05, 0.05]",
                          "第一处不同在epoch 3之后：预期0.1，实际为0.05"],
    "q6 never changes the learning rate": ["但实际为[0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]；第一处不同在epoch 4之后："
                                           "预期0.05，实际为0.1；你的回调从未改变学习率：请把"
                                           "cb_params.optimizer.param_groups中每个group的group['lr']减半"],
    "q7 the first row": ["slowest_callback返回的行'loop: data, cb_params, dispatch, the rest'的kind是'loop'："
                         "只有kind为'callback'的行才是回调的钩子（训练步、验证和循环是训练器自己的时间）"],
    "q7 returns nothing": ["slowest_callback(profiler)应当返回profiler.rows中的一行（一个ProfileRow），但它返回了None"],
    "q7 the label": ["slowest_callback(profiler)应当返回profiler.rows中的一行（一个ProfileRow），但它返回了"
                     "'ModelCheckpoint.on_train_step_end (step_end)'；请返回这一行本身，而不是它的label"],
    "q7 the slowest single call": ["slowest_callback返回了'SaveBest.on_train_end'，而不是"
                                   "'ModelCheckpoint.on_train_step_end (step_end)'（total_s最大的回调行）；这是单次调用最慢（mean_us）的钩子："
                                   "最慢的回调是总耗时（total_s）最多的那个"],
    "q7 the fastest callback": ["在回调各行（label, total_s）为[('ModelCheckpoint.on_train_step_end (step_end)', 1.5), "
                                "('SaveBest.on_train_end', 0.6), ('LossMonitor.on_train_step_end (step_end)', 0.5)]的"
                                "分析结果中，slowest_callback返回了'LossMonitor.on_train_step_end (step_end)'，而不是"
                                "'ModelCheckpoint.on_train_step_end (step_end)'（total_s最大的回调行）"],
    "q7 a callback named in advance": ["在一次真实运行中（2个epoch，几个快的回调中有一个每个epoch之后睡眠0.1 s的回调Slow），"
                                       "slowest_callback返回了None，而不是'Slow.on_train_epoch_end'，即total_s最大的回调行"],
    "q7 an error in slowest_callback": ["slowest_callback抛出了TypeError：'list' object is not callable"
                                        "（定义slowest_callback的单元格第3行）"],
    "q7 saves every step": ["2个epoch，每个epoch 5个step（steps_per_epoch=5）：预期每个epoch一个检查点，在该epoch最后一个"
                            "step之后保存（文件名以['-1_5.ckpt', '-2_5.ckpt']结尾），但ModelCheckpoint写出了"
                            "['epoch-2_1.ckpt', 'epoch-2_2.ckpt', 'epoch-2_3.ckpt', 'epoch-2_4.ckpt', 'epoch-2_5.ckpt']；"
                            "它每1个step保存一次，而每个epoch有5个step：请给ModelCheckpoint传入"
                            "CheckpointConfig(save_checkpoint_steps=steps_per_epoch)，这样它在每个epoch最后一个step之后保存"],
    "q7 one step short": ["但ModelCheckpoint写出了['epoch-1_4.ckpt', 'epoch-2_3.ckpt', 'epoch-2_5.ckpt']；它每4个step保存"
                          "一次，而每个epoch有5个step：请给ModelCheckpoint传入CheckpointConfig(save_checkpoint_steps="
                          "steps_per_epoch)"],
    "q7 the notebook's steps per epoch": ["但ModelCheckpoint写出了['epoch-2_5.ckpt']",
                                          re.compile(r"写出了\['epoch-2_5\.ckpt'\]$")],
    "q7 another directory": ["但ModelCheckpoint写出了[]；请把传入的目录交给ModelCheckpoint（directory=directory）"],
    "q7 the config instead": ["epoch_checkpoint(directory, 5)应当返回一个ModelCheckpoint，但它返回了CheckpointConfig"],
    "q7 an error in epoch_checkpoint": ["epoch_checkpoint抛出了TypeError：For 'CheckpointConfig', 'save_checkpoint_steps': The input value "
                                        "must be int, but got 'str'.（定义epoch_checkpoint的单元格第3行）"],
}


def test_every_english_wrong_answer_has_chinese_feedback() -> None:
    assert sorted(FEEDBACK) == sorted(english.WRONG_ANSWERS)


@pytest.mark.parametrize("name", sorted(english.WRONG_ANSWERS))
def test_each_check_rejects_a_wrong_answer_and_says_why_in_chinese(solution: dict[str, Any], name: str) -> None:
    question, case_index, source, _ = english.WRONG_ANSWERS[name]
    feedback = FEEDBACK[name]
    result = _check(question, english._namespace(_solution_code(), source))
    case = result.test_case_results[case_index]
    assert not case.passed, f"{name}: the check accepted a wrong answer"
    for text in feedback:
        assert english.has_feedback(text, case.message), \
            f"{name}: {english._shown(text)!r} not in the feedback:\n{case.message}"
    assert not english.unbalanced_quotes(english._feedback(case.message)), f"{name}: a quote is lost in\n{case.message}"
    # The summary grader.check shows in the notebook carries the same feedback.
    assert english.has_feedback(feedback[0], result.summary(public_only=True))


# ----------------------------------------------------------------------------- a broken answer cell

# The English broken cells (test_exercises.BROKEN_CELLS), with the Chinese feedback each must get.
BROKEN_FEEDBACK = {
    "q1 NameError in the answer cell": ["定义LossLine的单元格（编号为[2]的那个）在第1行出现NameError：name 'Callbak' is not "
                                        "defined；请改正后重新运行该单元格，再运行这个检查"],
    "q2 SyntaxError in the answer cell": ["定义EpochTimer的单元格（编号为[2]的那个）在第7行出现SyntaxError：'(' was never "
                                          "closed；请改正后重新运行该单元格，再运行这个检查"],
    "q3 setup cell not run": ["定义StopAtAccuracy的单元格（编号为[1]的那个）在第1行出现NameError：name 'Callback' is "
                              "not defined，因为内核启动（或重启）以来还没有运行过设置单元格：请先运行靠近顶部的设置单元格"],
    "q4 nothing run since a restart": ["没有名为SaveBest的类：请先运行定义它的单元格（内核重启后，请先运行靠近顶部的设置单元格），"
                                       "再运行这个检查"],
    "q4 answer cell not run": ["没有名为SaveBest的类：请先运行定义它的单元格，再运行这个检查"],
    "q4 return outside a function": ["定义SaveBest的单元格（编号为[2]的那个）在第5行出现SyntaxError：'return' outside "
                                     "function；请改正后重新运行该单元格，再运行这个检查"],
    "q5 SyntaxError after a good run": ["定义GradNorms的单元格（编号为[3]的那个）在第7行出现SyntaxError：'[' was never "
                                        "closed；请改正后重新运行该单元格，再运行这个检查"],
    "q6 IndentationError in the answer cell": ["定义HalveLROnPlateau的单元格（编号为[2]的那个）在第7行出现IndentationError："
                                               "expected an indented block after function definition on line 6"],
    "q7 SyntaxError in the answer cell": ["（编号为[2]的那个）在第5行出现SyntaxError：Generator expression must be "
                                          "parenthesized；请改正后重新运行该单元格，再运行这个检查"],
    "q7 answer cell not run": ["没有名为", "的函数：请先运行定义它的单元格，再运行这个检查"],
}


def test_every_english_broken_cell_has_chinese_feedback() -> None:
    assert sorted(BROKEN_FEEDBACK) == sorted(english.BROKEN_CELLS)


@pytest.mark.parametrize("name", sorted(english.BROKEN_CELLS))
def test_a_broken_answer_cell_is_named_with_its_line_in_chinese(name: str) -> None:
    question, cells, failing, _ = english.BROKEN_CELLS[name]
    feedback = BROKEN_FEEDBACK[name]
    env, failures = english._kernel_namespace(*cells)
    assert failures == failing, f"{name}: the cells that failed are {failures}"
    result = _check(question, env)
    assert not result.passed_all
    for case in result.test_case_results:
        for text in feedback:
            assert text in case.message, f"{name}: {text!r} not in the feedback:\n{case.message}"
        assert not english.unbalanced_quotes(english._feedback(case.message)), case.message
    assert feedback[0] in result.summary(public_only=True)


def test_grader_check_in_a_kernel_names_the_broken_cell_in_chinese(tmp_path: Path) -> None:
    cells = [english.SETUP, english.BROKEN_CELLS["q1 NameError in the answer cell"][1][1],
             english.BROKEN_CELLS["q2 SyntaxError in the answer cell"][1][1]]
    shown = english.checks_in_a_kernel(PUBLIC_TESTS, cells, ["q1", "q2"], tmp_path)
    assert "定义LossLine的单元格（编号为[3]的那个）在第1行出现NameError：name 'Callbak' is not defined" in shown[0], shown[0]
    assert "定义EpochTimer的单元格（编号为[4]的那个）在第7行出现SyntaxError：'(' was never closed" in shown[1], shown[1]


def test_after_a_kernel_restart_the_check_says_to_run_the_setup_cell_in_chinese(tmp_path: Path) -> None:
    answer = next(cell for cell in english._solution_cells(MASTER) if cell.startswith("class StopAtAccuracy"))
    before, after = english.restart_replay(PUBLIC_TESTS, answer, "q3", tmp_path)
    assert "q3 results: All test cases passed!" in before, before
    assert ("定义StopAtAccuracy的单元格（编号为[2]的那个）在第1行出现NameError：name 'Callback' is not defined，"
            "因为内核启动（或重启）以来还没有运行过设置单元格：请先运行靠近顶部的设置单元格") in after, after
    assert "请改正后重新运行该单元格" not in after, after


def test_the_hidden_tests_catch_what_the_public_ones_miss(solution: dict[str, Any], assigned: Path) -> None:
    env = english._namespace(english.one_group_answer(_solution_code()))
    assert _check("q6", env).passed_all
    hidden = _check("q6", env, assigned / "autograder" / "tests")
    assert not hidden.passed_all
    assert "预期两个参数组的学习率在各epoch之后依次为" in hidden.summary()


def test_the_hidden_tests_catch_a_fixed_number_of_steps(solution: dict[str, Any], assigned: Path) -> None:
    env = english._namespace(_solution_code(), english.FIXED_STEPS)
    assert _check("q7", env).passed_all
    hidden = _check("q7", env, assigned / "autograder" / "tests")
    assert not hidden.passed_all
    assert "3个epoch，每个epoch 4个step（steps_per_epoch=4）：预期每个epoch一个检查点" in hidden.summary()


# ----------------------------------------------------------------------------- grading without Docker


def test_otter_run_grades_a_chinese_submission_locally(assigned: Path, mnist_mirror: str, tmp_path: Path) -> None:
    """What a teacher runs per submission: solved q1-q3, left q4-q7 as handed out."""
    scores, public = english.otter_run_three_solved(STUDENT, MASTER, assigned, tmp_path)
    assert scores == {"q1": 3, "q2": 3, "q3": 3, "q4": 0, "q5": 0, "q6": 0, "q7": 0}, scores
    assert "预期在" in public and "cb_params中没有'grad_norms'" in public
