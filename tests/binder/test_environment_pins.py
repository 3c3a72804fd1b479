"""One source of truth for the classroom environment: pyproject.toml's dependencies.

Binder (``binder/requirements.txt``, then ``binder/postBuild``) and the dev container
(``.devcontainer/devcontainer.json``: the same two steps) install nbcallback with ``--no-deps``
after the pinned requirements, so a runtime dependency that is not pinned there is simply not
installed: ``anywidget`` was missing and notebook 4 failed on Binder at its first widget cell.

These tests read the dependencies from pyproject.toml (``[project] dependencies``, and the
``notebook`` and ``teach`` extras a class needs: JupyterLab, the kernel, otter-grader for the
exercises) and fail when one is not pinned (``name==version`` inside the declared bounds) in
``binder/requirements.txt``, or when an install step would skip it (``--no-deps`` without the pin,
or the requirements installed with ``--no-deps``). A second set of tests deletes each
dependency from a copy of the file and checks that the check names it.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

from tests.classroom.test_devcontainer import load_devcontainer

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parents[2]
REQUIREMENTS = REPO / "binder" / "requirements.txt"
POSTBUILD = REPO / "binder" / "postBuild"
#: Extras of pyproject.toml that the classroom image serves besides the runtime dependencies.
CLASSROOM_EXTRAS = ("notebook", "teach")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(\S+)$")


def norm(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def project_requirements(extras: tuple[str, ...] = ()) -> list[Requirement]:
    """``[project] dependencies`` of pyproject.toml, then those of ``extras``."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    texts = list(project["dependencies"])
    for extra in extras:
        texts += project["optional-dependencies"][extra]
    return [Requirement(text) for text in texts]


def pinned(requirements_text: str) -> dict[str, str]:
    """``name -> version`` of every ``name==version`` line (comments, options and blank lines skipped)."""
    pins: dict[str, str] = {}
    for line in requirements_text.splitlines():
        match = _PIN.match(line.split("#", 1)[0].strip())
        if match:
            pins[norm(match.group(1))] = match.group(3)
    return pins


def unpinned(requirements: list[Requirement], requirements_text: str) -> list[str]:
    """One line per requirement that ``requirements_text`` does not pin to a version inside its bounds."""
    pins = pinned(requirements_text)
    problems = []
    for requirement in requirements:
        version = pins.get(norm(requirement.name))
        if version is None:
            problems.append(f"{requirement.name} ({requirement}) is not pinned: add {requirement.name}==<version>")
            continue
        try:
            inside = requirement.specifier.contains(Version(version), prereleases=True)
        except InvalidVersion:
            inside = False
        if not inside:
            problems.append(f"{requirement.name}=={version} is outside pyproject.toml's {requirement}")
    return problems


def pip_installs(script: str) -> list[list[str]]:
    """The words after ``pip install`` of every pip install in a shell script or command line."""
    installs = []
    for line in script.replace("&&", "\n").replace(";", "\n").splitlines():
        words = shlex.split(line.split("#", 1)[0]) if "pip" in line else []
        for i in range(len(words) - 1):
            if words[i].endswith("pip") and words[i + 1] == "install":
                installs.append(words[i + 2:])
                break
    return installs


def skipped_dependencies(requirements: list[Requirement], requirements_text: str, scripts: dict[str, str]) -> list[str]:
    """What the install steps would leave out: each ``--no-deps`` install of nbcallback relies on the pins,
    and the pinned requirements themselves must be installed with their own dependencies."""
    problems = []
    for where, script in scripts.items():
        for words in pip_installs(script):
            from_requirements = any(w in ("-r", "--requirement") for w in words) and "binder/requirements.txt" in words
            installs_project = "." in words or any(w in ("-e", "--editable") and n == "." for w, n in zip(words, words[1:]))
            if "--no-deps" in words and from_requirements:
                problems.append(f"{where}: binder/requirements.txt installed with --no-deps: the pins' own dependencies "
                                "(e.g. anywidget's psygnal) would be missing; drop --no-deps")
            if "--no-deps" in words and installs_project:
                problems += [f"{where} installs nbcallback with --no-deps: {p}" for p in unpinned(requirements, requirements_text)]
    return problems


def install_scripts() -> dict[str, str]:
    return {
        "binder/postBuild": POSTBUILD.read_text(encoding="utf-8"),
        ".devcontainer/devcontainer.json postCreateCommand": load_devcontainer()["postCreateCommand"],
    }


# --------------------------------------------------------------------------- the files as committed


def test_every_runtime_dependency_is_pinned_for_binder() -> None:
    problems = unpinned(project_requirements(), REQUIREMENTS.read_text(encoding="utf-8"))
    assert not problems, "binder/requirements.txt must pin every runtime dependency of nbcallback:\n" + "\n".join(problems)


def test_the_classroom_extras_are_pinned_for_binder() -> None:
    problems = unpinned(project_requirements(CLASSROOM_EXTRAS)[len(project_requirements()):],
                        REQUIREMENTS.read_text(encoding="utf-8"))
    assert not problems, "binder/requirements.txt must pin what a class needs:\n" + "\n".join(problems)


def test_no_install_step_skips_a_dependency() -> None:
    scripts = install_scripts()
    # The steps are where the test looks for them: postBuild installs the project, the dev container
    # installs Binder's requirements then runs postBuild.
    assert any("." in words for words in pip_installs(scripts["binder/postBuild"])), "postBuild no longer installs nbcallback"
    assert any("binder/requirements.txt" in words for words in pip_installs(scripts[".devcontainer/devcontainer.json postCreateCommand"]))
    problems = skipped_dependencies(project_requirements(CLASSROOM_EXTRAS), REQUIREMENTS.read_text(encoding="utf-8"), scripts)
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- the check catches what it must


def _without(text: str, name: str) -> str:
    """``text`` without the line that pins ``name``."""
    kept = [line for line in text.splitlines() if norm(name) not in pinned(line)]
    return "\n".join(kept) + "\n"


@pytest.mark.parametrize("dependency", list(dict.fromkeys(r.name for r in project_requirements(CLASSROOM_EXTRAS))))
def test_removing_a_pin_is_caught(dependency: str) -> None:
    """Deleting any dependency's line from (a copy of) binder/requirements.txt fails both checks, naming it."""
    requirements = project_requirements(CLASSROOM_EXTRAS)
    text = REQUIREMENTS.read_text(encoding="utf-8")
    assert norm(dependency) in pinned(text)
    removed = _without(text, dependency)
    assert norm(dependency) not in pinned(removed)
    problems = unpinned(requirements, removed)
    assert problems and all(p.startswith(f"{dependency} (") and "is not pinned" in p for p in problems), problems
    skipped = skipped_dependencies(requirements, removed, install_scripts())
    assert skipped and all(s.startswith(f"binder/postBuild installs nbcallback with --no-deps: {dependency} (")
                           for s in skipped), skipped


def test_a_pin_outside_the_declared_bounds_is_caught() -> None:
    text = REQUIREMENTS.read_text(encoding="utf-8").replace("\nanywidget==", "\nanywidget==0.1.0\n#", 1)
    assert pinned(text)["anywidget"] == "0.1.0"
    problems = unpinned(project_requirements(), text)
    assert problems == ["anywidget==0.1.0 is outside pyproject.toml's anywidget>=0.9"], problems


def test_requirements_installed_without_their_dependencies_are_caught() -> None:
    text = REQUIREMENTS.read_text(encoding="utf-8")
    scripts = {"postCreateCommand": "python -m pip install --no-deps -r binder/requirements.txt && ./binder/postBuild"}
    problems = skipped_dependencies(project_requirements(), text, scripts)
    assert len(problems) == 1 and "installed with --no-deps" in problems[0], problems
    # With the dependencies installed, nothing is skipped.
    scripts = {"postCreateCommand": "python -m pip install -r binder/requirements.txt && ./binder/postBuild"}
    assert skipped_dependencies(project_requirements(), text, scripts) == []
