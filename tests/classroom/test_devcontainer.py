"""The dev container (Codespaces, VS Code) is binder/ in another wrapper.

``.devcontainer/devcontainer.json`` is JSON with comments (the dev container
spec allows ``//`` and ``/* */`` comments and trailing commas). The tests parse
it, check it agrees with ``binder/`` (the Python version of ``runtime.txt``,
the packages of ``apt.txt``, the pins of ``requirements.txt``, the data folder
of ``start``), replay its ``onCreateCommand`` (the apt step) with a stand-in
``apt-get``, and replay its ``postCreateCommand``.

``postCreateCommand`` is Binder's recipe, word for word: ``pip install -r binder/requirements.txt``,
then ``./binder/postBuild`` (:func:`test_post_create_command_is_binders_recipe` holds it to that).
So the environment it builds is the Binder image that ``tests/binder/test_binder_replay.py``
builds in a fresh virtual environment, and this replay uses that image (built once per session,
see ``tests/binder/replay.py``): the command is run there again (it must succeed and find the
data), Binder's pins are what is installed, the notebooks' data step works offline with the
container's ``containerEnv``, and all ten notebooks pass in that image with that data folder
(one run serves both replays: the container's ``NBCALLBACK_DATA`` is the folder ``binder/start``
sets, checked here). A dev container whose recipe differs from Binder's must get its own
environment and notebook run here.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.binder.replay import NOTEBOOKS, UNREACHABLE, binder_image, binder_notebook_run, run

REPO = Path(__file__).resolve().parents[2]
DEVCONTAINER = REPO / ".devcontainer" / "devcontainer.json"
BINDER = REPO / "binder"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")


def strip_jsonc(text: str) -> str:
    """JSON with comments -> JSON: drop ``//`` and ``/* */`` comments and trailing commas, never inside strings."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError("unterminated /* comment in devcontainer.json")
            i = end + 2
        elif char == ",":
            j = i + 1
            while j < n and (text[j].isspace() or text.startswith("//", j) or text.startswith("/*", j)):
                if text.startswith("//", j):
                    j = text.find("\n", j) if "\n" in text[j:] else n
                elif text.startswith("/*", j):
                    j = text.find("*/", j + 2) + 2
                else:
                    j += 1
            if j < n and text[j] in "]}":
                i += 1  # a trailing comma
                continue
            out.append(char)
            i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


def load_devcontainer() -> dict[str, Any]:
    return json.loads(strip_jsonc(DEVCONTAINER.read_text()))


def binder_pins() -> dict[str, str]:
    """``name -> version`` pinned in binder/requirements.txt (names normalised as pip does)."""
    pins = {}
    for line in (BINDER / "requirements.txt").read_text().splitlines():
        match = PIN.match(line.split("#", 1)[0].strip())
        if match:
            pins[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(2)
    return pins


def test_strip_jsonc_keeps_strings_and_drops_comments() -> None:
    text = '{\n  // a comment\n  "url": "https://x.org/a//b", /* block\n */ "list": [1, 2,],\n  "s": "a /* b */ c",\n}'
    assert json.loads(strip_jsonc(text)) == {"url": "https://x.org/a//b", "list": [1, 2], "s": "a /* b */ c"}


def test_devcontainer_agrees_with_binder() -> None:
    config = load_devcontainer()

    # A standard Python image, of the Python that Binder builds (runtime.txt: "python-3.11").
    runtime = (BINDER / "runtime.txt").read_text().strip()
    python = runtime.removeprefix("python-")
    image = config["image"]
    assert image.startswith("mcr.microsoft.com/devcontainers/python:"), image
    tag = image.rsplit(":", 1)[1]
    assert re.search(rf"(^|-){re.escape(python)}(-|$)", tag), f"{image} is not Python {python} ({runtime})"

    # postCreateCommand installs Binder's pins (the file itself, or the same versions inline), then postBuild.
    command = config["postCreateCommand"]
    assert isinstance(command, str), "postCreateCommand: one shell line, so the test can replay it"
    words = shlex.split(command)
    requirement_files = [words[i + 1] for i, word in enumerate(words[:-1]) if word in ("-r", "--requirement")]
    assert requirement_files == ["binder/requirements.txt"], f"installs {requirement_files}, not binder's pins"
    pins = binder_pins()
    assert pins["torch"].endswith("+cpu") and "jupyterlab" in pins and "ipykernel" in pins
    for word in words:
        match = PIN.match(word)
        if match:
            name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
            assert pins.get(name) == match.group(2), f"{word} disagrees with binder/requirements.txt"
    assert "./binder/postBuild" in words, "the project and the data are installed by binder/postBuild"
    assert command.index("binder/requirements.txt") < command.index("binder/postBuild"), "pins (torch) first, then the project"

    # The Debian packages: binder/apt.txt's, before the pip install.
    assert "binder/apt.txt" in config["onCreateCommand"], "onCreateCommand installs binder/apt.txt's packages"

    # The data folder: binder/start's default, in the container user's home.
    user = config.get("remoteUser", "vscode")
    assert 'NBCALLBACK_DATA="${NBCALLBACK_DATA:-$HOME/data}"' in (BINDER / "start").read_text()
    assert config["containerEnv"]["NBCALLBACK_DATA"] == f"/home/{user}/data"

    # JupyterLab's port, and the editor's Python and Jupyter support.
    assert 8888 in config["forwardPorts"], "forward JupyterLab's port 8888"
    extensions = config["customizations"]["vscode"]["extensions"]
    assert {"ms-python.python", "ms-toolsai.jupyter"} <= set(extensions)
    for path in config["customizations"].get("codespaces", {}).get("openFiles", []):
        assert (REPO / path).is_file(), f"openFiles names {path}, which does not exist"


IMPORT = re.compile(r"^\s*(?:import|from)\s+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


def notebook_imports() -> set[str]:
    """Top-level modules imported by the code cells of the notebooks in notebooks/."""
    modules: set[str] = set()
    for notebook in sorted((REPO / "notebooks").glob("*.ipynb")):
        for cell in json.loads(notebook.read_text())["cells"]:
            if cell["cell_type"] == "code":
                modules.update(IMPORT.findall("".join(cell["source"])))
    return modules


def apt_packages() -> list[str]:
    """The package names of binder/apt.txt (comments and blank lines dropped)."""
    return [word for line in (BINDER / "apt.txt").read_text().splitlines() for word in line.split("#", 1)[0].split()]


def test_replay_on_create_command_installs_binder_apt_packages(tmp_path: Path) -> None:
    # sudo and apt-get are stand-ins that log their arguments: the command line is what is tested.
    shims = tmp_path / "bin"
    shims.mkdir()
    log = tmp_path / "apt.log"
    (shims / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    (shims / "apt-get").write_text(f'#!/bin/sh\necho "$@" >> {shlex.quote(str(log))}\n')
    for shim in shims.iterdir():
        shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}
    run(["bash", "-c", load_devcontainer()["onCreateCommand"]], cwd=REPO, env=env, timeout=60)

    calls = [line.split() for line in log.read_text().splitlines()]
    packages = apt_packages()
    assert packages, "binder/apt.txt lists no package"
    assert calls[0] == ["update"], calls
    assert len(calls) == 2 and calls[1][0] == "install" and "-y" in calls[1], calls
    assert [word for word in calls[1][1:] if not word.startswith("-")] == packages


def post_create_steps(command: str) -> list[list[str]]:
    """The commands of ``postCreateCommand`` (split at ``&&``), each as its words."""
    return [shlex.split(step) for step in command.split("&&")]


def test_post_create_command_is_binders_recipe() -> None:
    """The dev container builds exactly Binder's image: Binder's pins with their dependencies, then postBuild.
    The slow replay below relies on it (it shares the Binder replay's environment)."""
    steps = post_create_steps(load_devcontainer()["postCreateCommand"])
    assert steps == [["python", "-m", "pip", "install", "-r", "binder/requirements.txt"], ["./binder/postBuild"]], (
        f"postCreateCommand is no longer Binder's recipe ({steps}): give the dev container replay its own "
        "virtual environment and notebook run in tests/classroom/test_devcontainer.py"
    )


@pytest.mark.binder
def test_replay_post_create_command(tmp_path_factory: pytest.TempPathFactory, mnist_mirror: str) -> None:
    config = load_devcontainer()
    image = binder_image(tmp_path_factory, mnist_mirror)
    home = image.home
    user_home = f"/home/{config.get('remoteUser', 'vscode')}"
    container_env = {key: value.replace(user_home, str(home)) for key, value in config["containerEnv"].items()}
    env = {**image.env, **container_env, "NBCALLBACK_MNIST_URL": mnist_mirror}

    # The command itself runs in the image (again: pip finds every pin installed, postBuild finds the data).
    created = run(["bash", "-c", config["postCreateCommand"]], cwd=image.repo, env=env, timeout=900)
    assert "MNIST ready" in created.stdout

    # Binder's pins are what the recipe installed.
    for name, version in binder_pins().items():
        assert image.frozen.get(name) == version, f"{name}: installed {image.frozen.get(name)}, binder pins {version}"

    # nbcallback is the repository's, editable; the Jupyter stack is there.
    located = run([image.python, "-c", "import nbcallback; print(nbcallback.__file__)"], env=env, cwd=home)
    assert located.stdout.strip().startswith(str(image.repo))
    kernels = run([image.python, "-m", "jupyter", "kernelspec", "list"], env=env)
    assert "python3" in kernels.stdout

    # Every module the notebooks import is installed (a student's first cell must not fail).
    modules = notebook_imports()
    assert {"torch", "nbcallback", "matplotlib"} <= modules
    probe = "import importlib.util, sys; print(' '.join(sorted(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None)))"
    missing = run([image.python, "-c", probe, *sorted(modules)], cwd=home, env=env).stdout.split()
    assert not missing, f"the notebooks import {missing}, which binder/requirements.txt does not install"

    # The notebooks' data step finds the baked-in data with no download (the URL is a closed port), in the
    # folder the container's environment names, which is the folder binder/start gives the Binder run.
    data_step = (
        "from nbcallback.dataset import MnistDataset, download_mnist\n"
        "path = download_mnist(progress=False)  # as the notebooks: $NBCALLBACK_DATA\n"
        "print(path, MnistDataset(path / 'train').get_dataset_size())"
    )
    offline = run([image.python, "-c", data_step], cwd=image.repo / "notebooks", env={**env, "NBCALLBACK_MNIST_URL": UNREACHABLE})
    assert offline.stdout.split() == [str(home / "data" / "MNIST_Data"), "60000"]
    through_start = run(["./binder/start", "python", "-c", "import os; print(os.environ['NBCALLBACK_DATA'])"],
                        cwd=image.repo, env=image.env, timeout=120)
    assert through_start.stdout.strip() == container_env["NBCALLBACK_DATA"]

    # Every notebook, every cell, in this environment with this data folder, offline.
    notebooks = binder_notebook_run(tmp_path_factory, mnist_mirror)
    assert not notebooks.problems(NOTEBOOKS), notebooks.report(NOTEBOOKS)
