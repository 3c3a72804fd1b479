"""What the classroom replays share: fresh environments built once per test session, and a runner
that executes notebooks under nbval in two processes at once.

The replays (``tests/binder/test_binder_replay.py``, ``tests/classroom/test_devcontainer.py``,
``tests/classroom/test_colab.py``) each need a fresh virtual environment, which takes a minute or
two to install, and each runs all ten notebooks, which takes minutes on one core. So:

* the copy of the checkout and the Binder image (a venv from ``binder/requirements.txt``, then
  ``binder/postBuild``) are built once per session (:func:`shared`), whichever test asks first;
  the dev container builds the very same image (its ``postCreateCommand`` is Binder's two steps,
  ``test_devcontainer.py`` checks), so it uses that one;
* :func:`run_notebooks` runs the English notebooks and the Chinese ones in two pytest processes
  side by side (one torch thread each: the two cores of the CI machine), each with its own
  ``$XDG_CACHE_HOME`` so the two copies of a notebook never share a run folder;
* the Binder run is the suite's one run of the ten notebooks (tests/conftest.py deselects the main suite's
  own nbval items of them when it runs), with the same nbval options (the checkout's pyproject.toml), and it
  measures each notebook's memory and start-up as it goes (tests/classroom/_nbval_figures.py), which
  tests/classroom/test_binder_memory.py checks: one run, not three.

torch is never downloaded, nor unpacked again: where this interpreter has the pinned torch (2.13.0+cpu, this
machine's one CPU wheel, which is what pip would install from its local wheel folder), each replay venv sees that
install through links (:func:`link_local_torch`; pip finds the pin satisfied and still resolves and installs
torch's dependencies), which saves unpacking and byte-compiling 750 MB per venv (about 26 CPU s each, measured
2026-11-27). Elsewhere pip installs it from
the local wheel folder (the pip configuration every venv inherits); PyTorch's index is unreachable here
(``PIP_RETRIES=0`` makes pip give up on it at once).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

import pytest

REPO = Path(__file__).resolve().parents[2]
UNREACHABLE = "http://127.0.0.1:9/MNIST_Data.zip"  # discard port: nothing listens there
#: Every notebook a class opens, English then Chinese, relative to the repository root.
NOTEBOOKS: tuple[str, ...] = tuple(
    path.relative_to(REPO).as_posix()
    for folder in (REPO / "notebooks", REPO / "notebooks" / "zh_CN")
    for path in sorted(folder.glob("*.ipynb"))
)
#: Wall-clock seconds of each shared build (a build that needs another one first includes it): the checkout copy,
#: the venvs, the notebook runs; printed in the terminal summary by tests/conftest.py.
TIMINGS: dict[str, float] = {}
#: Further lines for that summary (each notebook's memory and start-up, from tests/classroom/test_binder_memory.py).
NOTES: list[str] = []

T = TypeVar("T")
_SHARED: dict[tuple[str, str], Any] = {}


def run(cmd: Sequence[str | os.PathLike[str]], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; fail the test with the end of its output when it exits non-zero."""
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


def make_venv(path: Path, *, torch: str | None = None) -> Path:
    """A fresh virtual environment (no system packages); returns its python.

    ``torch``: the torch version its requirements pin; when this interpreter has exactly that version, the venv
    sees it through links (:func:`link_local_torch`) instead of pip unpacking the same wheel into it again."""
    run([sys.executable, "-m", "venv", str(path)])
    python = path / "bin" / "python"
    if torch is not None:
        link_local_torch(python, torch)
    return python


def link_local_torch(python: Path, version: str) -> bool:
    """Let the venv of ``python`` find this interpreter's torch install, when it is ``version`` (PEP 440 match:
    ``2.13.0`` admits ``2.13.0+cpu``); returns whether it did.

    torch is 750 MB in 14,600 files from this machine's one local wheel: unpacking and byte-compiling it took about
    26 CPU s and 750 MB of disk writes per replay venv (two per session; Binder's whole ``pip install -r`` takes
    about 140 CPU s here). Instead, a folder beside the venv holds symbolic links to torch's top-level folders and
    its ``.dist-info`` in this interpreter's site-packages, and a ``.pth`` file in the venv puts that folder on
    ``sys.path`` after the venv's own site-packages (deleting the folder removes the links, never their targets).
    pip then finds the pinned torch installed ("Requirement already satisfied": the pin is still resolved against
    every other pin, and torch's own dependencies are still installed into the venv), ``pip freeze`` lists it, and
    the kernels import the very files pip would have unpacked. Only torch's console scripts (``torchrun``) are not
    in the venv's ``bin``; no notebook calls them. Any other version (or no torch here): nothing is linked and pip
    installs torch as usual."""
    from importlib import metadata

    from packaging.specifiers import SpecifierSet

    try:
        dist = metadata.distribution("torch")
    except metadata.PackageNotFoundError:
        return False
    if not SpecifierSet(f"=={version}").contains(dist.version, prereleases=True) or not dist.files:
        return False
    site = Path(str(dist.locate_file("")))
    tops = sorted({Path(str(entry)).parts[0] for entry in dist.files if not str(entry).startswith("..")})
    layer = python.parent.parent.parent / f"{python.parent.parent.name}-linked-torch"
    layer.mkdir()
    for name in tops:
        if (site / name).exists():
            (layer / name).symlink_to(site / name)
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    (Path(purelib) / "linked-torch.pth").write_text(f"{layer}\n")
    return True


def pip_env() -> dict[str, str]:
    # pip retries an unreachable index 5 times per package; the PyTorch index is
    # unreachable here and torch comes from the machine's local CPU wheel.
    return {**os.environ, "PIP_RETRIES": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def shared(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], T]) -> T:
    """``build(<a new temporary folder>)``, once per test session; a build that failed fails every later caller
    at once (with the same error) instead of being attempted again for minutes."""
    key = (str(factory.getbasetemp()), name)
    if key not in _SHARED:
        started = time.perf_counter()
        try:
            _SHARED[key] = build(factory.mktemp(name))
        except BaseException as exc:  # noqa: BLE001 - remembered and raised again for the next caller
            _SHARED[key] = exc
            raise
        finally:
            TIMINGS[name] = time.perf_counter() - started
    value = _SHARED[key]
    if isinstance(value, BaseException):
        raise RuntimeError(f"building {name!r} failed earlier in this session: {value}") from value
    return value


def checkout_copy(factory: pytest.TempPathFactory) -> Path:
    """The tracked (and not ignored untracked) files of the checkout, as Binder clones them, outside the working tree."""

    def build(folder: Path) -> Path:
        target = folder / "repo"
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                               text=True, check=True)
        for name in files.stdout.splitlines():
            source = REPO / name
            if source.is_file():
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / name)
        return target

    return shared(factory, "checkout", build)


# --------------------------------------------------------------------------- the Binder image


@dataclass(frozen=True)
class BinderImage:
    """A venv built as repo2docker builds the image: ``pip install -r binder/requirements.txt``, then
    ``binder/postBuild`` (run twice: the second time offline, as a rebuild from cache would)."""

    repo: Path
    python: Path
    home: Path
    env: dict[str, str]  # a Binder session's environment: HOME, the venv first on PATH, no data folder set
    postbuild_outputs: tuple[str, str]
    frozen: dict[str, str]  # name -> version installed by the recipe (pip freeze, names as pip normalises them)
    tools: str = field(default="")  # what was added afterwards to run the notebooks


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def freeze(python: Path, env: dict[str, str]) -> dict[str, str]:
    pins = {}
    for line in run([str(python), "-m", "pip", "freeze"], env=env).stdout.splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$", line.strip())
        if match:
            pins[norm(match.group(1))] = match.group(2)
    return pins


def binder_image(factory: pytest.TempPathFactory, mnist_mirror: str) -> BinderImage:
    """The Binder image, built once per session (also the dev container's: the same two steps)."""

    def build(root: Path) -> BinderImage:
        repo = checkout_copy(factory)
        pinned = re.search(r"^torch==(\S+)", (repo / "binder" / "requirements.txt").read_text(), re.MULTILINE)
        python = make_venv(root / "venv", torch=pinned.group(1) if pinned else None)
        run([python, "-m", "pip", "install", "-q", "-r", "binder/requirements.txt"], cwd=repo, env=pip_env(), timeout=900)
        home = root / "home"
        home.mkdir()
        env = {
            **pip_env(),
            "HOME": str(home),
            "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}",
            "VIRTUAL_ENV": str(python.parent.parent),
            "NBCALLBACK_MNIST_URL": mnist_mirror,
            "OMP_NUM_THREADS": "1",
        }
        for name in ("NBCALLBACK_DATA", "NBCALLBACK_DISPLAY", "PYTHONPATH", "XDG_CACHE_HOME", "JUPYTER_PATH",
                     "JUPYTER_CONFIG_DIR", "IPYTHONDIR", "MPLCONFIGDIR"):
            env.pop(name, None)
        first = run(["./binder/postBuild"], cwd=repo, env=env, timeout=600).stdout
        # A rebuild finds the data baked in: the download URL is a closed port now.
        second = run(["./binder/postBuild"], cwd=repo, env={**env, "NBCALLBACK_MNIST_URL": UNREACHABLE}, timeout=600).stdout
        env["NBCALLBACK_MNIST_URL"] = UNREACHABLE  # from here on, a download attempt fails
        frozen = freeze(python, env)
        # The test tools, kept to the image's versions (nbval must not bring another ipykernel or jupyter_client).
        constraints = root / "image-constraints.txt"
        constraints.write_text("".join(f"{name}=={version}\n" for name, version in frozen.items()))
        # pytest-xdist: the checkout's pytest options name it (-n), the replay runs with -n 0.
        tools = run([python, "-m", "pip", "install", "-q", "-c", constraints, "pytest", "nbval", "pytest-xdist"],
                    env=pip_env(), timeout=600).stdout
        return BinderImage(repo=repo, python=python, home=home, env=env, postbuild_outputs=(first, second),
                           frozen=frozen, tools=tools)

    return shared(factory, "binder-image", build)


# --------------------------------------------------------------------------- running notebooks


@dataclass(frozen=True)
class NotebookRun:
    """The outcome of nbval over some notebooks: per notebook, the cells that passed and those that did not."""

    passed: dict[str, int]
    failed: dict[str, list[str]]
    logs: tuple[str, ...]
    returncodes: tuple[int, ...]
    seconds: float
    #: per notebook (path as in ``passed``), what tests/classroom/_nbval_figures.py measured, when it was loaded
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)

    def problems(self, expected: Sequence[str]) -> list[str]:
        """What went wrong for the ``expected`` notebooks (empty when every cell of every one passed)."""
        out = []
        for notebook in expected:
            if self.failed.get(notebook):
                out.append(f"{notebook}: {', '.join(self.failed[notebook])} failed")
            elif not self.passed.get(notebook):
                out.append(f"{notebook}: no cell ran")
        if any(self.returncodes) and not out:
            out.append(f"nbval exited with {self.returncodes}")
        return out

    def report(self, expected: Sequence[str]) -> str:
        tails = "\n\n".join(log[-6000:] for log, code in zip(self.logs, self.returncodes) if code)
        return "\n".join(self.problems(expected)) + ("\n\n" + tails if tails else "")


#: A cell's line in ``pytest -v`` output; nbval names a notebook's items ``notebooks/1_callback_tutorial::ipynb::Cell 3``
#: (older versions: ``notebooks/1_callback_tutorial.ipynb::Cell 3``).
_ITEM = re.compile(r"^(\S+?)(?:\.|::)ipynb::(.+?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b", re.MULTILINE)


def run_notebooks(command: Sequence[str | os.PathLike[str]], notebooks: Sequence[str], *, cwd: Path, env: dict[str, str],
                  scratch: Path, nbval_options: Sequence[str] = (), part_env: dict[str, dict[str, str]] | None = None,
                  timeout: float = 1500) -> NotebookRun:
    """``command -m pytest`` (``command``: e.g. ``[python]`` or ``["./binder/start", "python"]``) over ``notebooks``
    (paths relative to ``cwd``) under nbval, the English ones and the Chinese ones in two processes at once, each
    with its own ``$XDG_CACHE_HOME`` and ``part_env[lang]``; returns what each cell did."""
    parts = {
        "en": [n for n in notebooks if "/zh_CN/" not in f"/{n}"],
        "zh_CN": [n for n in notebooks if "/zh_CN/" in f"/{n}"],
    }
    started = time.perf_counter()
    processes = []
    for lang, part in parts.items():
        if not part:
            continue
        cache = scratch / lang / "cache"
        cache.mkdir(parents=True, exist_ok=True)
        log = (scratch / f"{lang}.log").open("w+")
        argv = [*map(str, command), "-m", "pytest", "-v", "-p", "no:cacheprovider", *nbval_options, *part]
        part_environment = {**env, "XDG_CACHE_HOME": str(cache), "NBCALLBACK_NOTEBOOK_FIGURES": str(scratch / f"{lang}-figures.jsonl"),
                            **(part_env or {}).get(lang, {})}
        proc = subprocess.Popen(argv, cwd=cwd, env=part_environment, stdout=log, stderr=subprocess.STDOUT, text=True)
        processes.append((proc, log))
    logs, codes = [], []
    deadline = time.monotonic() + timeout
    for proc, log in processes:
        try:
            codes.append(proc.wait(timeout=max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append(proc.wait())
        log.seek(0)
        logs.append(log.read())
        log.close()
    passed: dict[str, int] = {}
    failed: dict[str, list[str]] = {}
    for text in logs:
        for stem, cell, outcome in _ITEM.findall(text):
            notebook = f"{stem}.ipynb"
            if outcome == "PASSED":
                passed[notebook] = passed.get(notebook, 0) + 1
            else:
                failed.setdefault(notebook, []).append(f"{cell} {outcome}")
    figures: dict[str, dict[str, Any]] = {}
    for lang in parts:
        path = scratch / f"{lang}-figures.jsonl"
        if path.exists():
            for line in path.read_text().splitlines():
                entry = json.loads(line)
                figures[entry.pop("notebook")] = entry
    return NotebookRun(passed=passed, failed=failed, logs=tuple(logs), returncodes=tuple(codes),
                       seconds=time.perf_counter() - started, figures=figures)


def binder_notebook_run(factory: pytest.TempPathFactory, mnist_mirror: str) -> NotebookRun:
    """All ten notebooks in the Binder image, started through ``binder/start`` as Binder starts the server,
    offline (the baked-in data; the download URL is a closed port), under the checkout's nbval options, each
    notebook's memory and start-up measured (``figures``). Once per session."""

    def build(scratch: Path) -> NotebookRun:
        image = binder_image(factory, mnist_mirror)
        return run_notebooks(["./binder/start", "python"], NOTEBOOKS, cwd=image.repo, env=image.env, scratch=scratch,
                             nbval_options=["-n", "0", "-p", "tests.classroom._nbval_figures"])

    return shared(factory, "binder-notebooks", build)
