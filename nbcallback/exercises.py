"""The exercises' checks where otter-grader is not installed, as on Google Colab.

``notebooks/5_exercises.ipynb`` checks each answer with ``grader.check("q1")``. Its first cell uses
otter-grader where it can be imported, and this module where it cannot::

    try:
        import otter
        grader = otter.Notebook("5_exercises.ipynb")
    except ImportError:
        from nbcallback.exercises import Notebook
        grader = Notebook("5_exercises.ipynb", lang="en")

Google Colab ships ipywidgets 7.7.1 and otter-grader 7 requires ipywidgets >= 8.1.5, so otter-grader is not
installed there. :class:`Notebook` runs the same public test files (``tests/q1.py`` ..., otter's format:
functions decorated with ``otter.test_files.test_case``, read here without otter) against the notebook's
variables, and shows the result in otter's words and layout: ``q1 results:``, ``✅ Test case passed``,
``❌ Test case failed``, ``Error at line N in test q1:``, the line, and the ``AssertionError`` with the test's
feedback. It only checks: it keeps no log and exports nothing; teachers grade with otter-grader
(``otter run``, notebooks/exercises/README.md).

The test files come from the ``tests/`` folder beside the notebook (the working folder, as for otter). A
notebook opened in Colab from GitHub has no such folder: then they are downloaded, when first needed, from
the repository and branch of :mod:`nbcallback.repository` (``notebooks/tests/`` for ``lang="en"``,
``notebooks/zh_CN/tests/`` for ``lang="zh_CN"``), or from ``tests_url`` / ``$NBCALLBACK_TESTS_URL``
(a folder's address: ``<url>/q1.py`` ...), and kept in memory.
"""
from __future__ import annotations

import ast
import html
import inspect
import os
import random
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from textwrap import indent
from types import CodeType
from typing import Any, Callable

from nbcallback import repository

LANGS = ("en", "zh_CN")
#: A folder's address to download the test files from, instead of the repository's.
TESTS_URL_ENV = "NBCALLBACK_TESTS_URL"
#: Downloads stop at the first missing question file or here.
MAX_QUESTIONS = 100
_QUESTION = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TIMEOUT_S = 30


class test_case:  # noqa: N801 -- otter's name: the test files are written for ``otter.test_files.test_case``
    """Stands in for otter's ``test_case`` decorator: the test function and how it is shown."""

    def __init__(self, name: str | None = None, points: float | None = None, hidden: bool = False,
                 success_message: str | None = None, failure_message: str | None = None) -> None:
        self.name = name
        self.points = points
        self.hidden = hidden
        self.success_message = success_message
        self.failure_message = failure_message
        self.test_func: Callable[..., None] = lambda: None

    def __call__(self, test_func: Callable[..., None]) -> "test_case":
        self.test_func = test_func
        return self

    def call(self, env: dict[str, Any]) -> None:
        """Call the test with the notebook's variables of the same names (``env``: all of them), None where missing."""
        names = inspect.signature(self.test_func).parameters
        self.test_func(**{name: env if name == "env" else env.get(name) for name in names})


@dataclass(frozen=True)
class CaseResult:
    """One test case's outcome: ``message`` is what otter shows for it."""

    name: str
    passed: bool
    message: str
    hidden: bool = False
    success_message: str | None = None
    failure_message: str | None = None


class CheckResult:
    """One question's results, shown as otter-grader shows them (``repr``: the text; in a notebook, the HTML)."""

    def __init__(self, name: str, path: str, results: list[CaseResult]) -> None:
        self.name = name
        self.path = path
        self.test_case_results = results

    @property
    def passed_all(self) -> bool:
        return all(result.passed for result in self.test_case_results)

    def summary(self, public_only: bool = False) -> str:
        """The text of the results, as otter's ``TestFile.summary``."""
        results = [r for r in self.test_case_results if not (public_only and r.hidden)]
        if all(r.passed for r in results):
            text = f"{self.name} results: All test cases passed!"
            for result in results:
                if result.success_message is not None:
                    text += f"\n{result.name} message: {result.success_message}"
            return text
        parts = []
        for result in results:
            part = ""
            if result.passed and result.success_message is not None:
                part += f"{result.name} message: {result.success_message}\n\n"
            if not result.passed and result.failure_message is not None:
                part += f"{result.name} message: {result.failure_message}\n\n"
            part += f"{result.name} result:\n{indent(result.message.strip(), '    ')}\n\n"
            parts.append(part.strip())
        return f"{self.name} results:\n" + indent("\n\n".join(parts), "    ")

    def __repr__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        name = f"<pre style='display: inline;'>{html.escape(self.name)}</pre>"

        def line(result: CaseResult, message: str) -> str:
            return (f"<p><strong><pre style='display: inline;'>{html.escape(result.name)}</pre> message:</strong> "
                    f"{html.escape(message)}</p>")

        if self.passed_all:
            emoji = random.choice(["🍀", "🎉", "🌈", "🙌", "🚀", "🌟", "✨", "💯"])
            text = f"<p><strong>{name}</strong> passed! {emoji}</p>"
            return text + "".join(line(r, r.success_message) for r in self.test_case_results if r.success_message is not None)
        text = f"<p><strong style='color: red;'>{name} results:</strong></p>"
        for result in self.test_case_results:
            if result.passed and result.success_message is not None:
                text += line(result, result.success_message)
            if not result.passed and result.failure_message is not None:
                text += line(result, result.failure_message)
            text += f"<p><strong><pre style='display: inline;'>{html.escape(result.name)}</pre> result:</strong></p>"
            text += f"<pre>{html.escape(indent(result.message, '    '))}</pre>"
        return text


class AllResults:
    """Every question's results (``grader.check_all()``), shown as otter's ``GradingResults``."""

    def __init__(self, results: list[CheckResult]) -> None:
        self.results = {result.name: result for result in results}

    @property
    def passed_all(self) -> bool:
        return all(result.passed_all for result in self.results.values())

    def summary(self, public_only: bool = False) -> str:
        return "\n\n".join(result.summary(public_only) for result in self.results.values())

    def __repr__(self) -> str:
        return self.summary()


class TestFile:
    """A test file in otter's exception format (``name = "q1"`` and ``@test_case()`` functions), read without otter."""

    def __init__(self, source: str, path: str) -> None:
        self.source = source
        self.path = path
        self._lines = source.split("\n")
        tree = ast.parse(source, path)
        # ``from otter.test_files import test_case``: this module's stand-in is given instead.
        tree.body = [node for node in tree.body if not (
            isinstance(node, ast.ImportFrom) and node.module == "otter.test_files"
            and {alias.name for alias in node.names} <= {"test_case"} and all(a.asname is None for a in node.names))]
        code: CodeType = compile(tree, path, "exec")
        env: dict[str, Any] = {"test_case": test_case, "__name__": "nbcallback_exercise_tests"}
        exec(code, env)
        if not isinstance(env.get("name"), str):
            raise ValueError(f"the test file {path} does not define its question's name (name = \"q1\")")
        self.name: str = env["name"]
        self.test_cases = [value for value in env.values() if isinstance(value, test_case)]
        for number, case in enumerate(self.test_cases, 1):
            if case.name is None:
                case.name = f"{self.name} - {number}"

    def _error_message(self, error: Exception, case: test_case) -> str:
        """Otter's report of a failed case: the test file's line where the test stopped, and the error."""
        code = case.test_func.__code__
        line = code.co_firstlineno
        frame = error.__traceback__
        while frame is not None:
            if frame.tb_frame.f_code is code:
                line = frame.tb_lineno
                break
            frame = frame.tb_next
        shown = indent(self._lines[line - 1], "  ") if 0 < line <= len(self._lines) else ""
        return f"Error at line {line} in test {self.name}:\n{shown}\n{type(error).__name__}: {str(error).strip(chr(39))}"

    def run(self, env: dict[str, Any]) -> CheckResult:
        results = []
        for case in self.test_cases:
            passed, message = True, "✅ Test case passed"
            try:
                case.call(env)
            except Exception as error:  # a failed check, whatever the student's code raised
                passed, message = False, "❌ Test case failed\n" + self._error_message(error, case)
            results.append(CaseResult(str(case.name), passed, message, case.hidden, case.success_message,
                                      case.failure_message))
        return CheckResult(self.name, self.path, results)


class Notebook:
    """``grader = Notebook("5_exercises.ipynb", lang="en")``: ``grader.check("q1")`` and ``grader.check_all()``
    as otter-grader's ``otter.Notebook`` has them, without otter-grader.

    ``tests_dir``: the folder of the test files (``./tests``, as otter); where it does not exist, they are
    downloaded from ``tests_url`` (default: ``$NBCALLBACK_TESTS_URL``, else the repository's
    ``notebooks/tests`` or ``notebooks/zh_CN/tests``, by ``lang``).
    """

    def __init__(self, nb_path: str | None = None, tests_dir: str = "./tests", lang: str = "en",
                 tests_url: str | None = None) -> None:
        if lang not in LANGS:
            raise ValueError(f"lang={lang!r}: the exercises exist in {', '.join(map(repr, LANGS))}")
        self.nb_path = nb_path
        self.lang = lang
        self.tests_dir = Path(tests_dir)
        folder = "notebooks/tests" if lang == "en" else f"notebooks/{lang}/tests"
        self.tests_url = (tests_url or os.environ.get(TESTS_URL_ENV) or repository.raw_url(folder)).rstrip("/")
        self._downloaded: dict[str, str] = {}

    @property
    def downloads(self) -> bool:
        """Whether the test files are downloaded (there is no tests folder here)."""
        return not self.tests_dir.is_dir()

    def _url(self, question: str) -> str:
        return f"{self.tests_url}/{question}.py"

    def _download(self, question: str) -> str:
        if question not in self._downloaded:
            url = self._url(question)
            try:
                with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response:
                    self._downloaded[question] = response.read().decode("utf-8")
            except urllib.error.HTTPError as error:
                if error.code == 404:
                    raise FileNotFoundError(f"Test {question} does not exist (there is no {url})") from None
                raise ConnectionError(self._unreachable(question, url, f"HTTP {error.code} {error.reason}")) from None
            except (urllib.error.URLError, OSError) as error:
                reason = getattr(error, "reason", error)
                raise ConnectionError(self._unreachable(question, url, str(reason))) from None
        return self._downloaded[question]

    def _unreachable(self, question: str, url: str, reason: str) -> str:
        return (f"could not download the checks of {question} from {url} ({reason}). They come from the repository "
                f"when there is no tests/ folder beside the notebook: check the runtime's internet connection and run "
                f"the cell again, or put the repository's notebooks/tests folder into {self.tests_dir.resolve()}")

    def _test_file(self, question: str) -> TestFile:
        if not _QUESTION.match(question):
            raise ValueError(f"{question!r} is not a question's name (such as 'q1')")
        if self.downloads:
            return TestFile(self._download(question), self._url(question))
        path = self.tests_dir / f"{question}.py"
        if not path.is_file():
            raise FileNotFoundError(f"Test {question} does not exist (there is no {path})")
        return TestFile(path.read_text(encoding="utf-8"), str(path))

    def questions(self) -> list[str]:
        """The questions that have a test file, sorted (downloaded: q1, q2, ... up to the first missing one)."""
        if not self.downloads:
            return sorted(p.stem for p in self.tests_dir.glob("*.py") if p.name != "__init__.py")
        found = []
        for number in range(1, MAX_QUESTIONS + 1):
            try:
                self._download(f"q{number}")
            except FileNotFoundError:
                break
            found.append(f"q{number}")
        return sorted(found)

    def check(self, question: str, global_env: dict[str, Any] | None = None) -> CheckResult:
        """Run the question's tests against ``global_env`` (default: the variables of the cell that calls this)."""
        if global_env is None:
            caller = inspect.currentframe()
            assert caller is not None and caller.f_back is not None
            global_env = caller.f_back.f_globals
        return self._test_file(question).run(global_env)

    def check_all(self) -> AllResults:
        """Run every question's tests against the variables of the cell that calls this."""
        caller = inspect.currentframe()
        assert caller is not None and caller.f_back is not None
        env = caller.f_back.f_globals
        return AllResults([self.check(question, env) for question in self.questions()])
