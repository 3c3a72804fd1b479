"""A teacher's fork: ``python -m nbcallback.fork owner/name --branch b`` (issue 31, item 3).

The repository and branch live in ``nbcallback/repository.py``; the command rewrites every badge, Colab
install cell and link, and ``--check`` lists the places that point elsewhere. Tested as a teacher uses it: on
a copy of the checkout (the files git tracks or would track, in a fresh git repository), outside the
working tree.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import nbformat
import pytest

from nbcallback import fork
from tests.notebooks.test_zh_cn_code_cells import sync_code

REPO = Path(__file__).resolve().parents[2]
FORK = "alice-teach/dl-class"
BRANCH = "fall-2026"
#: Where the upstream name may stay in a fork: the tests and the module that recognises upstream links.
ALLOWED = ("tests/", "nbcallback/fork.py")
#: Added to the copy before the fork: a link to the upstream project and one to another project.
EXTRA_DOC = """# Links
The project: https://github.com/nbcallback/nbcallback/issues and its tree https://github.com/nbcallback/nbcallback/tree/main/docs.
Colab's runtime listing: https://github.com/googlecolab/backend-info/blob/a724079/pip-freeze.txt.
"""


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def _git(*args: str, cwd: Path) -> str:
    result = subprocess.run(["git", "-c", "user.name=Teacher", "-c", "user.email=teacher@example.invalid", *args],
                            cwd=cwd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _fork_command(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m nbcallback.fork ...`` in ``cwd``, importing the nbcallback of ``cwd`` (as in a fork's clone)."""
    return subprocess.run([sys.executable, "-m", "nbcallback.fork", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=300)


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _make_copy(target: Path) -> Path:
    """The checkout's files as a fresh git repository with one commit (a teacher's clone of the fork)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    for name in files:
        if (REPO / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target / name)
    (target / "docs" / "links-for-the-fork-test.md").write_text(EXTRA_DOC, encoding="utf-8")
    _git("init", "-q", cwd=target)
    _git("add", "-A", cwd=target)
    _git("commit", "-q", "-m", "upstream", cwd=target)
    return target


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout's files as a fresh git repository with one commit (a teacher's clone of the fork)."""
    return _make_copy(tmp_path_factory.mktemp("fork") / "dl-class")


@pytest.fixture(scope="module")
def forked(copy: Path) -> tuple[Path, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """The copy before (``--check`` against the fork) and after ``python -m nbcallback.fork FORK --branch BRANCH``."""
    before = _fork_command("--check", FORK, "--branch", BRANCH, cwd=copy / "notebooks")
    result = _fork_command(FORK, "--branch", BRANCH, cwd=copy / "notebooks")  # from a subfolder of the clone
    return copy, before, result


def _files_with(root: Path, needle: str) -> list[str]:
    """Every file under ``root`` (not .git) whose bytes hold ``needle``, case-insensitively, relative."""
    found = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_file() and not relative.startswith(".git/") and needle.lower().encode() in path.read_bytes().lower():
            found.append(relative)
    return found


def _notebooks(root: Path) -> list[Path]:
    return sorted(p for p in (root / "notebooks").rglob("*.ipynb") if "dist" not in p.relative_to(root).parts)


def _colab_badges(text: str) -> list[str]:
    """The links of the notebook's "Open in Colab" badges (not the badge's picture)."""
    return re.findall(r"\]\((https://colab\.research\.google\.com/github/[^)\s]*)\)", text)


# --- main itself -------------------------------------------------------------------------------------


def test_check_passes_on_the_checkout() -> None:
    result = _fork_command("--check", cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    from nbcallback import repository

    assert f"points at {repository.REPOSITORY} (branch {repository.BRANCH})" in result.stdout
    assert fork.stale_places(REPO) == []


def test_check_lists_the_places_of_another_repository() -> None:
    """``--check`` against another repository names every badge and install cell, with the fix; nothing is written."""
    result = _fork_command("--check", "someone/else", cwd=REPO)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert re.match(r"\d+ place\(s\) do not point at someone/else \(branch main\):", lines[0]), lines[0]
    assert any(line.startswith("  README.md:") and "mybinder.org/v2/gh/" in line for line in lines)
    assert any(line.startswith("  notebooks/zh_CN/1_callback_tutorial.ipynb:") and "git+https://github.com/" in line
               for line in lines)
    assert lines[-1] == "Rewrite them with: python -m nbcallback.fork someone/else --branch main"
    assert fork.stale_places(REPO) == []


@pytest.mark.parametrize("argument", ["alice", "alice/", "/dl-class", "alice/dl class", "https://gitlab.com/alice/x",
                                      "alice/nb/extra", "-alice/x", "alice-/x", "alice/..", "alice/x."])
def test_a_malformed_repository_is_refused(argument: str) -> None:
    with pytest.raises(fork.ForkError, match=f"^{re.escape(repr(argument))} is not a GitHub repository: give it as owner/name"):
        fork.parse_repository(argument)


@pytest.mark.parametrize("branch", ["feature/x", "a b", "..", "-x", "main.lock", ""])
def test_a_branch_that_cannot_go_into_the_links_is_refused(branch: str) -> None:
    with pytest.raises(fork.ForkError, match=f"^{re.escape(repr(branch))} cannot be the branch: use a branch name of"):
        fork.parse_branch(branch)


def test_bad_input_is_reported_in_one_line_and_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, expected in ((["alice/dl class"], "'alice/dl class' is not a GitHub repository"),
                           (["alice/nbcallback", "--branch", "feature/x"], "'feature/x' cannot be the branch")):
        with pytest.raises(SystemExit) as stop:
            fork.main([*argv, "--root", str(REPO)])
        assert stop.value.code == 2
        error = capsys.readouterr().err
        assert error.startswith(f"python -m nbcallback.fork: error: {expected}") and error.count("\n") == 1, error
    assert fork.stale_places(REPO) == []  # nothing was written


@pytest.mark.parametrize("argument", ["alice/nbcallback", " alice/nbcallback ", "alice/nbcallback.git",
                                      "https://github.com/alice/nbcallback", "https://github.com/alice/nbcallback/",
                                      "https://github.com/alice/nbcallback.git", "git@github.com:alice/nbcallback.git"])
def test_the_forks_address_is_taken_as_well_as_owner_name(argument: str) -> None:
    assert fork.parse_repository(argument) == "alice/nbcallback"


def test_outside_a_checkout_the_error_says_where_to_run_it(tmp_path: Path) -> None:
    result = _fork_command("--check", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "is not in a clone of nbcallback" in result.stderr and "pass --root" in result.stderr


# --- a fork --------------------------------------------------------------------------------------------


def test_check_lists_the_stale_places_before_the_fork(forked: tuple[Path, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]) -> None:
    _, before, _ = forked
    assert before.returncode == 1
    assert f"do not point at {FORK} (branch {BRANCH})" in before.stderr
    for place in ("nbcallback/repository.py:", "README.md:5:", "README.zh-CN.md:6:", "docs/teaching.md:",
                  "notebooks/1_callback_tutorial.ipynb:", "notebooks/zh_CN/4_widgets.ipynb:"):
        assert f"\n  {place}" in before.stderr, place


def test_no_upstream_link_is_left_in_a_fork(forked: tuple[Path, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]) -> None:
    root, _, result = forked
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"now points at {FORK} (branch {BRANCH})" in result.stdout
    left = [name for name in _files_with(root, fork.UPSTREAM) if not name.startswith(ALLOWED)]
    assert not left, f"{fork.UPSTREAM} is still named in {left}"
    # What a learner clicks or runs: the README badges, the notebooks' badges and install cells, the docs.
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert (f"(https://mybinder.org/v2/gh/{FORK}/{BRANCH}?urlpath=lab/tree/notebooks/1_callback_tutorial.ipynb)"
            in readme)
    assert f"(https://colab.research.google.com/github/{FORK}/blob/{BRANCH}/notebooks/1_callback_tutorial.ipynb)" in readme
    zh_readme = (root / "README.zh-CN.md").read_text(encoding="utf-8")
    assert f"https://colab.research.google.com/github/{FORK}/blob/{BRANCH}/notebooks/zh_CN/1_callback_tutorial.ipynb" in zh_readme
    teaching = (root / "docs" / "teaching.md").read_text(encoding="utf-8")
    assert f"https://mybinder.org/v2/gh/{FORK}/{BRANCH}?" in teaching and f"git+https://github.com/{FORK}@{BRANCH}" in teaching
    extra = (root / "docs" / "links-for-the-fork-test.md").read_text(encoding="utf-8")
    assert f"https://github.com/{FORK}/issues" in extra and f"https://github.com/{FORK}/tree/{BRANCH}/docs." in extra
    assert "https://github.com/googlecolab/backend-info/blob/a724079/" in extra  # another project: left alone

    badged = 0
    for path in _notebooks(root):
        relative = path.relative_to(root / "notebooks").as_posix()
        text = path.read_text(encoding="utf-8")
        for badge in _colab_badges(text):
            badged += 1
            assert badge.startswith(f"https://colab.research.google.com/github/{FORK}/blob/{BRANCH}/notebooks/"), (relative, badge)
            opened = badge.split(f"/blob/{BRANCH}/", 1)[1]
            assert (root / opened).is_file(), f"{relative}: the badge opens {opened}, which is not in the repository"
        if "NBCALLBACK_PIP_SOURCE" in text:
            assert f'\\"git+https://github.com/{FORK}@{BRANCH}\\"' in text, relative
    assert badged >= 12  # notebooks 1-5 in English and Chinese, and the exercises' two masters
    for student in ("5_exercises.ipynb", "zh_CN/5_exercises.ipynb"):
        text = (root / "notebooks" / student).read_text(encoding="utf-8")
        assert f"https://colab.research.google.com/github/{FORK}/blob/{BRANCH}/notebooks/{student})" in text, student


def test_the_fork_changed_links_only(forked: tuple[Path, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]) -> None:
    """Every changed line names the fork, the notebooks are the same notebooks (cells, outputs), and the
    English and Chinese notebooks still run the same code."""
    root, _, result = forked
    assert result.returncode == 0, result.stdout + result.stderr
    diff = _git("diff", "-U0", "--", ".", ":!nbcallback/repository.py", cwd=root)
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed
    for line in changed:
        if line.startswith("+"):
            assert (FORK in line or f"Create codespace on {BRANCH}" in line) and fork.UPSTREAM not in line, line
        else:
            assert (fork.UPSTREAM in line or "Create codespace on main" in line) and FORK not in line, line
    for path in _notebooks(root):
        relative = path.relative_to(root).as_posix()
        notebook = json.loads(path.read_text(encoding="utf-8"))  # still JSON
        nbformat.validate(nbformat.from_dict(notebook))
        original = json.loads(_git("show", f"HEAD:{relative}", cwd=root))
        assert [(c["cell_type"], c.get("outputs")) for c in notebook["cells"]] == \
            [(c["cell_type"], c.get("outputs")) for c in original["cells"]], relative
    for english in sorted((root / "notebooks").glob("*.ipynb")):
        assert not sync_code.compare(english, root / "notebooks" / "zh_CN" / english.name), english.name
    changed_files = set(_git("diff", "--name-only", cwd=root).split())
    assert changed_files == {m.group(1) for m in re.finditer(r"^(\S+): ", result.stdout, re.MULTILINE)}
    assert "nbcallback/repository.py" in changed_files


def test_after_the_fork_every_check_agrees(forked: tuple[Path, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]) -> None:
    """``--check`` passes in the fork, nbcallback/repository.py names it, the Colab cells generator
    (``notebooks/colab_cells.py --check``) writes the same badges and cells from it, and the student version of
    notebook 5 is what ``notebooks/exercises/assign.py`` makes of the rewritten masters."""
    root, _, result = forked
    assert result.returncode == 0, result.stdout + result.stderr
    check = _fork_command("--check", cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr
    repository = _load(root / "nbcallback" / "repository.py", "forked_repository")
    assert (repository.REPOSITORY, repository.BRANCH) == (FORK, BRANCH)
    cells = subprocess.run([sys.executable, "notebooks/colab_cells.py", "--check"], cwd=root, env=_env(),
                           capture_output=True, text=True, timeout=300)
    assert cells.returncode == 0, cells.stdout + cells.stderr
    # Notebook 5 is still what the exercises' generator makes of its (rewritten) masters.
    assign = subprocess.run([sys.executable, "notebooks/exercises/assign.py", "--lang", "all", "--check"], cwd=root,
                            env=_env(), capture_output=True, text=True, timeout=600)
    assert assign.returncode == 0, assign.stdout[-3000:] + assign.stderr[-3000:]
    again = _fork_command(cwd=root)  # nothing left to do
    assert again.returncode == 0 and again.stdout.startswith("Nothing to change"), again.stdout + again.stderr


def test_a_stale_badge_in_a_fork_is_reported_then_rewritten(forked: tuple[Path, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    """A notebook copied in later from upstream (its badge naming nbcallback/nbcallback): --check names it, the
    command without arguments rewrites it from nbcallback/repository.py. Also without git."""
    root, _, result = forked
    assert result.returncode == 0, result.stdout + result.stderr
    clone = tmp_path / "nogit"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".git"))
    shutil.copy2(REPO / "notebooks" / "3_custom_callbacks.ipynb", clone / "notebooks" / "extra.ipynb")
    check = _fork_command("--check", cwd=clone)
    assert check.returncode == 1
    stale = [line.strip() for line in check.stderr.splitlines() if line.startswith("  ")]
    assert stale and all(line.startswith("notebooks/extra.ipynb:") for line in stale), check.stderr
    assert check.stderr.splitlines()[-1] == "Rewrite them with: python -m nbcallback.fork"
    fixed = _fork_command(cwd=clone)
    assert fixed.returncode == 0 and "notebooks/extra.ipynb: 2 link(s) rewritten" in fixed.stdout, fixed.stdout + fixed.stderr
    assert _fork_command("--check", cwd=clone).returncode == 0
    assert fork.UPSTREAM not in (clone / "notebooks" / "extra.ipynb").read_text(encoding="utf-8")


def test_the_clone_line_and_codespaces_follow_the_fork(forked: tuple[Path, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    """The README's clone line names the folder the clone makes, the Codespaces badge (next to Binder's and
    Colab's) opens the fork's branch, the teacher pages name the branch to create a codespace on; a reverted
    one of each is listed by --check."""
    root, _, result = forked
    assert result.returncode == 0, result.stdout + result.stderr
    name = FORK.split("/")[1]
    for readme in ("README.md", "README.zh-CN.md"):
        text = (root / readme).read_text(encoding="utf-8")
        assert f"git clone https://github.com/{FORK} && cd {name}`" in text, readme
        assert f"(https://codespaces.new/{FORK}/tree/{BRANCH}?quickstart=1)" in text, readme
        assert f"({_load(root / 'nbcallback' / 'repository.py', 'forked_repo_cs').codespaces_url()})" in text, readme
        badges = [line.split("]")[0] for line in text.splitlines()[:8] if line.startswith("[![")]
        assert badges == ["[![Binder", "[![Open In Colab", "[![Open in GitHub Codespaces"], readme
    for page in ("docs/teaching.md", "docs/teaching.zh-CN.md"):
        text = (root / page).read_text(encoding="utf-8")
        assert f"Create codespace on {BRANCH}" in text and "Create codespace on main" not in text, page
        assert f"https://codespaces.new/{FORK}/tree/{BRANCH}" in text, page

    clone = tmp_path / "reverted"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".git"))
    readme = clone / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace(f"&& cd {name}`", "&& cd nbcallback`")
                      .replace(f"codespaces.new/{FORK}/tree/{BRANCH}", "codespaces.new/nbcallback/nbcallback/tree/main"),
                      encoding="utf-8")
    page = clone / "docs" / "teaching.md"
    page.write_text(page.read_text(encoding="utf-8").replace(f"Create codespace on {BRANCH}", "Create codespace on main"),
                    encoding="utf-8")
    check = _fork_command("--check", cwd=clone)
    assert check.returncode == 1
    stale = check.stderr
    line = next(n for n, text in enumerate(readme.read_text(encoding="utf-8").splitlines(), 1) if "&& cd nbcallback`" in text)
    assert f"README.md:{line}: git clone https://github.com/{FORK} && cd nbcallback (should be git clone https://github.com/{FORK} && cd {name})" in stale, stale
    assert f"https://codespaces.new/nbcallback/nbcallback/tree/main (should be https://codespaces.new/{FORK}/tree/{BRANCH})" in stale
    assert f"docs/teaching.md:" in stale and f"Create codespace on main (should be Create codespace on {BRANCH})" in stale
    assert _fork_command(cwd=clone).returncode == 0
    assert _fork_command("--check", cwd=clone).returncode == 0


def test_private_masters_keep_the_answers_out_of_the_fork(tmp_path: Path) -> None:
    """``--private-masters``: git stops tracking the masters and the exercises' tests (the teacher keeps them on
    disk, where assign.py reads them) and says so; a clone of the pushed fork (what Binder, Codespaces and
    GitHub show) holds no solution and no hidden test."""
    from tests.classroom._answers import answers, leaks

    root = _make_copy(tmp_path / "dl-class")
    known = answers()
    assert known.hidden_tests and known.solution_lines
    assert leaks(root, known), "the upstream checkout holds the masters: the search must find them"
    result = _fork_command(FORK, "--branch", BRANCH, "--private-masters", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    for folder in fork.PRIVATE:
        assert f"{folder}/: " in result.stdout and "no longer tracked by git, kept on this disk" in result.stdout
        assert (root / folder).is_dir()  # still on the teacher's disk
        assert f"/{folder}/" in (root / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".gitignore: now ignores" in result.stdout
    assert (root / "notebooks" / "exercises" / "master" / "5_exercises.ipynb").is_file()
    assert _fork_command("--check", cwd=root).returncode == 0
    _git("commit", "-q", "-am", "fork", cwd=root)
    assert _git("status", "--porcelain", cwd=root) == ""  # the masters are ignored, not left lying around
    pushed = tmp_path / "pushed"
    _git("clone", "-q", str(root), str(pushed), cwd=tmp_path)
    assert not leaks(pushed, known), leaks(pushed, known)
    assert (pushed / "notebooks" / "5_exercises.ipynb").is_file() and (pushed / "notebooks" / "tests" / "q1.py").is_file()
    again = _fork_command("--private-masters", cwd=root)  # nothing left to do
    assert again.returncode == 0 and again.stdout.startswith("Nothing to change"), again.stdout + again.stderr


def test_without_private_masters_the_command_says_how(forked: tuple[Path, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]) -> None:
    _, _, result = forked
    assert "are still in the fork, readable by anyone on GitHub" in result.stdout
    assert f"python -m nbcallback.fork {FORK} --branch {BRANCH} --private-masters" in result.stdout


def test_private_masters_without_git_is_refused(tmp_path: Path) -> None:
    clone = tmp_path / "nogit"
    for name in ("pyproject.toml", "nbcallback/repository.py"):
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, clone / name)
    result = _fork_command("--private-masters", cwd=clone)
    assert result.returncode == 2 and "--private-masters needs the clone's git repository" in result.stderr
    assert "Traceback" not in result.stderr
