"""The Binder setup, checked without Docker.

1. ``repo2docker --no-build`` renders binder/ into a Dockerfile (catches a bad
   runtime.txt, a missing postBuild, a root-owned image ...).
2. A replay of the build in a fresh virtual environment (:func:`tests.binder.replay.binder_image`):
   install exactly ``binder/requirements.txt`` (torch from the machine's CPU wheel), run
   ``postBuild`` twice against the loopback mirror (the second run must not download: its mirror
   is unreachable), start through ``binder/start``, and run every notebook a class opens (the
   five English and the five Chinese ones) under nbval with the baked-in data, offline.

The image and the notebook run are built once per session and shared with the dev container's
replay (tests/classroom/test_devcontainer.py), whose recipe is the same two steps.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.binder.replay import (  # noqa: F401 (re-exported for the other replays)
    NOTEBOOKS,
    REPO,
    UNREACHABLE,
    binder_image,
    binder_notebook_run,
    checkout_copy,
    make_venv,
    pip_env,
    run,
)

pytestmark = pytest.mark.binder


@pytest.fixture
def repo_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tracked files of the checkout (as Binder clones them), outside the working tree; one copy per session."""
    return checkout_copy(tmp_path_factory)


def test_replays_cover_every_notebook() -> None:
    """Every notebook of the course (1, 1b, 2, 3, 3b, 4, 5) in each language: a notebook added later is replayed
    without editing the tests."""
    english = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))
    chinese = sorted(p.name for p in (REPO / "notebooks" / "zh_CN").glob("*.ipynb"))
    assert english == chinese and len(english) >= 7, (english, chinese)
    assert list(NOTEBOOKS) == [f"notebooks/{n}" for n in english] + [f"notebooks/zh_CN/{n}" for n in chinese]


def test_repo2docker_renders_the_binder_folder(repo_copy: Path, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "r2d")
    # --no-compile: repo2docker runs once here; byte-compiling all it brings costs more than that run.
    run([python, "-m", "pip", "install", "-q", "--no-compile", "jupyter-repo2docker"], env=pip_env(), timeout=600)
    result = run(
        [python.parent / "repo2docker", "--no-build", "--no-run", "--user-id", "1000", "--user-name", "jovyan", repo_copy],
        timeout=120,
    )
    rendered = result.stdout + result.stderr
    assert "RUN ./binder/postBuild" in rendered
    assert "R2D_ENTRYPOINT" in rendered and "binder/start" in rendered
    assert 'pip install --no-cache-dir -r "binder/requirements.txt"' in rendered
    assert "conda environment for python=3.11" in rendered  # runtime.txt was honoured
    assert "fonts-noto-cjk" in rendered  # apt.txt was honoured: a CJK font for Chinese plot labels


def test_replay_build(tmp_path_factory: pytest.TempPathFactory, mnist_mirror: str) -> None:
    requirements = (REPO / "binder" / "requirements.txt").read_text()
    assert "torch==2.13.0+cpu" in requirements and "download.pytorch.org/whl/cpu" in requirements
    image = binder_image(tmp_path_factory, mnist_mirror)

    first, second = image.postbuild_outputs
    data = image.home / "data" / "MNIST_Data"
    assert {p.name for p in (data / "train").iterdir()} >= {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"}
    assert "MNIST ready" in first
    # Idempotent, and offline: the second build step found the data without any download.
    assert "MNIST ready" in second
    # postBuild installed the package into the image's environment, not anywhere else.
    located = run([image.python, "-c", "import nbcallback; print(nbcallback.__file__)"], env=image.env, cwd=image.home)
    assert located.stdout.strip().startswith(str(image.repo))
    # Every runtime dependency came from binder/requirements.txt (postBuild adds nbcallback with --no-deps).
    run([image.python, "-c", "import anywidget, ipywidgets, matplotlib, download, tqdm, torch, numpy"],
        env=image.env, cwd=image.home)

    started = run(["./binder/start", "python", "-c", "import os, nbcallback; print(os.environ['NBCALLBACK_DATA'])"],
                  cwd=image.repo, env=image.env, timeout=120)
    assert started.stdout.strip() == str(image.home / "data")


def test_replay_every_notebook_through_binder_start(tmp_path_factory: pytest.TempPathFactory, mnist_mirror: str) -> None:
    """All ten notebooks, every cell, as a student runs them on Binder: started through binder/start,
    the data baked in by postBuild, and any download attempt failing (the URL is a closed port)."""
    image = binder_image(tmp_path_factory, mnist_mirror)
    assert image.env["NBCALLBACK_MNIST_URL"] == UNREACHABLE and "NBCALLBACK_DATA" not in image.env
    notebooks = binder_notebook_run(tmp_path_factory, mnist_mirror)
    assert not notebooks.problems(NOTEBOOKS), notebooks.report(NOTEBOOKS)
    assert set(notebooks.passed) == set(NOTEBOOKS)


def test_the_binder_image_holds_no_answer(tmp_path_factory: pytest.TempPathFactory, mnist_mirror: str) -> None:
    """Issue 44: what a class opens on Binder (and in a Codespace: the same two steps) holds no solution and no
    hidden test. The same search finds them in the checkout, so it is not searching for nothing."""
    from tests.classroom._answers import answers, leaks

    known = answers()
    assert leaks(REPO / "notebooks" / "exercises", known), "the masters hold the answers: the search must find them"
    image = binder_image(tmp_path_factory, mnist_mirror)
    first, second = image.postbuild_outputs
    for folder in ("notebooks/exercises/master", "tests/exercises"):
        assert f"Removed {folder} (the exercises' solutions and hidden tests" in first, first
        assert not (image.repo / folder).exists()
    assert "Removed" not in second  # a rebuild has nothing left to remove
    assert not leaks(image.repo, known), leaks(image.repo, known)
    assert not leaks(image.home, known), leaks(image.home, known)
    # What the class uses is still there: the student notebooks and their public tests.
    for name in ("notebooks/5_exercises.ipynb", "notebooks/zh_CN/5_exercises.ipynb", "notebooks/tests/q7.py",
                 "notebooks/zh_CN/tests/q7.py"):
        assert (image.repo / name).is_file(), name


def test_postbuild_keeps_the_masters_for_a_teacher(tmp_path: Path) -> None:
    """NBCALLBACK_KEEP_MASTERS=1 (a teacher's own Codespace): postBuild's removal step leaves the masters. Only the
    removal step runs here (the install and the data steps are stubbed out)."""
    import shutil
    import subprocess

    for name in ("binder/postBuild", "notebooks/exercises/master/5_exercises.ipynb"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, tmp_path / name)
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "python").write_text("#!/bin/sh\nexit 0\n")
    (stub / "python").chmod(0o755)
    env = {"PATH": f"{stub}:/usr/bin:/bin", "HOME": str(tmp_path)}
    kept = subprocess.run(["bash", "binder/postBuild"], cwd=tmp_path, env={**env, "NBCALLBACK_KEEP_MASTERS": "1"},
                          capture_output=True, text=True, timeout=60)
    assert kept.returncode == 0, kept.stderr
    assert (tmp_path / "notebooks/exercises/master/5_exercises.ipynb").is_file() and "Removed" not in kept.stdout
    removed = subprocess.run(["bash", "binder/postBuild"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert removed.returncode == 0, removed.stderr
    assert not (tmp_path / "notebooks/exercises/master").exists() and "Removed notebooks/exercises/master" in removed.stdout
