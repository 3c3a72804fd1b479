"""Google Colab, as far as it can be tested without Colab (issue 20).

Colab cannot run here, so its pieces are replayed:

* ``notebooks/colab_cells.py --check``: every tutorial carries the "Open in Colab" badge and the
  ``colab-install`` cell (fast).
* ``host()`` says ``'colab'`` when ``google.colab`` is imported, and the Dashboard's Stop / lr
  controls are then offered only through ``run_in_background`` (fast).
* In a fresh virtual environment holding Colab's preinstalled versions
  (``colab_versions.txt``: ipywidgets 7.7.1, ipykernel 6.17.1, IPython 7.34 ...; torch 2.13.0,
  this machine's wheel, instead of Colab's 2.11.0), with a stand-in ``google.colab`` package on
  ``PYTHONPATH`` imported by the kernel at start-up as Colab's kernel does:

  - the committed install cell installs nbcallback from the checkout (``NBCALLBACK_PIP_SOURCE``)
    and replaces none of Colab's packages;
  - every notebook that offers itself on Colab (it carries the ``colab-install`` cell; English and
    Chinese) runs through nbval, its own install cell included, as Colab opens it from GitHub: the
    notebook file alone in a folder (no checkout beside it), MNIST downloaded by the notebook (from
    the loopback mirror), the exercises' test files fetched from ``$NBCALLBACK_TESTS_URL`` (a loopback
    copy of the repository's ``notebooks/tests`` folders). Notebook 1 ends with checks that the
    widgets chose what works on Colab (a live anywidget view, Colab's custom widget manager enabled,
    no controls in a foreground run, controls with ``run_in_background``).

The venv is built once per session (``tests/binder/replay.py``) and the English and Chinese
notebooks run side by side; under pytest-xdist its tests run on one worker (``COLAB_GROUP``). The venv tests carry the ``binder`` marker, as the other
fresh-environment replays.
"""
from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.binder.replay import NOTEBOOKS, NotebookRun, checkout_copy, make_venv, pip_env, run, run_notebooks, shared
from tests.support.mirror import LoopbackServer

REPO = Path(__file__).resolve().parents[2]
VERSIONS = Path(__file__).with_name("colab_versions.txt")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")
#: This machine has one torch wheel; Colab's own (2.11.0+cpu) cannot be installed here.
LOCAL_TORCH = "2.13.0"
#: Under pytest-xdist the tests sharing the Colab venv run on one worker, and apart from the Binder replay's
#: group (tests/conftest.py): the two replays share only the checkout copy, so they can run side by side.
COLAB_GROUP = "colab-replay"
def _load_colab_cells():
    spec = importlib.util.spec_from_file_location("nbcallback_colab_cells", REPO / "notebooks" / "colab_cells.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


colab_cells = _load_colab_cells()


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def colab_pins() -> dict[str, str]:
    """``name -> version`` of colab_versions.txt (names normalised as pip does)."""
    pins = {}
    for line in VERSIONS.read_text().splitlines():
        match = PIN.match(line.split("#", 1)[0].strip())
        if match:
            pins[_norm(match.group(1))] = match.group(2)
    return pins


def install_cell(relative: str = "1_callback_tutorial.ipynb") -> str:
    notebook = nbformat.read(REPO / "notebooks" / relative, as_version=4)
    (cell,) = [c for c in notebook.cells if c.get("id") == colab_cells.CELL_ID]
    return cell.source


# --- fast ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("relative", colab_cells.NOTEBOOKS)
def test_notebooks_carry_the_colab_badge_and_install_cell(relative: str) -> None:
    assert colab_cells.main(["--check", relative]) == 0, f"run python notebooks/colab_cells.py {relative}"
    notebook = nbformat.read(REPO / "notebooks" / relative, as_version=4)
    first_md = next(i for i, c in enumerate(notebook.cells) if c.cell_type == "markdown")
    assert colab_cells.colab_url(relative) in notebook.cells[first_md].source
    cell = notebook.cells[first_md + 1]
    assert cell.get("id") == colab_cells.CELL_ID and not cell.outputs, "outside Colab the install cell prints nothing"
    assert notebook.cells.index(cell) < min(i for i, c in enumerate(notebook.cells)
                                            if c.cell_type == "code" and "download_mnist" in c.source)


def test_colab_cells_inserts_once_and_updates_in_place(tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title\n\nText."),
        nbformat.v4.new_code_cell("import nbcallback"),
    ])
    once = colab_cells.update(copy.deepcopy(notebook), "3_custom_callbacks.ipynb")
    assert [c.get("id") for c in once.cells][1] == colab_cells.CELL_ID
    assert once.cells[0].source.startswith("# Title\n\n[![Open In Colab](")
    assert once.cells[0].source.endswith(")\n\nText.")
    assert colab_cells.is_current(once, "3_custom_callbacks.ipynb")
    assert nbformat.writes(colab_cells.update(copy.deepcopy(once), "3_custom_callbacks.ipynb")) == nbformat.writes(once)
    # An outdated cell and badge are replaced, not duplicated.
    once.cells[1].source = "old"
    once.cells[0].source = once.cells[0].source.replace("/main/", "/old-branch/")
    again = colab_cells.update(once, "3_custom_callbacks.ipynb")
    assert len(again.cells) == 3 and again.cells[0].source.count("colab-badge.svg") == 1
    assert "/main/notebooks/3_custom_callbacks.ipynb" in again.cells[0].source
    assert again.cells[1].source == colab_cells.install_source("en")
    assert "保留了" in colab_cells.install_source("zh_CN")


def test_install_cell_does_nothing_outside_colab() -> None:
    code = "import sys\nassert 'google.colab' not in sys.modules\nexec(compile(sys.stdin.read(), 'cell', 'exec'))\nprint('done')"
    result = subprocess.run([sys.executable, "-c", code], input=install_cell(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n"


def test_widgets_detect_colab_and_offer_controls_through_run_in_background(monkeypatch: pytest.MonkeyPatch) -> None:
    from nbcallback.widgets.env import describe_frontend_support, host

    monkeypatch.setitem(sys.modules, "google.colab", type(sys)("google.colab"))
    assert host({}) == "colab"
    # Colab's ipykernel (6.17) has no subshells and its front end queues clicks behind a busy cell.
    assert describe_frontend_support("widget", background=False, subshells=False) == {"controls": False, "hint": "hint_interrupt"}
    assert describe_frontend_support("widget", background=False, subshells=True)["controls"] is False
    assert describe_frontend_support("widget", background=True, subshells=False) == {"controls": True, "hint": ""}


def test_colab_versions_satisfy_nbcallbacks_requirements() -> None:
    """pip keeps Colab's pins only if nbcallback's own bounds admit them (ipywidgets 7.7.1 there)."""
    from packaging.requirements import Requirement

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    pins = colab_pins()
    assert pins["ipywidgets"] == "7.7.1" and "anywidget" in pins and "ipykernel" in pins
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for text in dependencies:
        requirement = Requirement(text)
        version = pins.get(_norm(requirement.name))
        if version is not None:
            assert requirement.specifier.contains(version, prereleases=True), f"{text} excludes Colab's {version}"
    assert set(colab_cells.KEEP) >= {"torch", "ipywidgets", "ipykernel", "anywidget"}


# --- a fresh environment with Colab's versions -------------------------------------------------------

STUB_COLAB = '''"""A stand-in for Colab's ``google.colab`` (tests/classroom/test_colab.py)."""
from google.colab import output  # noqa: F401  (Colab's kernel has it imported)
'''
STUB_OUTPUT = '''"""A stand-in for ``google.colab.output``: records what anywidget asks of it."""
import types

enable_calls = 0
_widgets = types.SimpleNamespace(_installed_url="https://example.invalid/colab-widget-manager.js")


def enable_custom_widget_manager():
    global enable_calls
    enable_calls += 1
'''


def _build_colab_env(factory: pytest.TempPathFactory, root: Path) -> dict[str, Any]:
    repo = checkout_copy(factory)
    python = make_venv(root / "venv", torch=LOCAL_TORCH)
    pins = colab_pins()
    constraints = root / "colab-constraints.txt"
    constraints.write_text("".join(f"{name}=={version}\n" for name, version in pins.items() if name != "torch"))
    run([python, "-m", "pip", "install", "-q", f"torch=={LOCAL_TORCH}", "-r", constraints], env=pip_env(), timeout=900)
    # The test tools, under Colab's pins (nbval must not bring a newer ipykernel or jupyter_client).
    run([python, "-m", "pip", "install", "-q", "-c", constraints, "pytest", "nbval", "nbformat"], env=pip_env(), timeout=600)

    stub = root / "stub"
    (stub / "google" / "colab" / "output").mkdir(parents=True)  # no google/__init__.py: google is a namespace package
    (stub / "google" / "colab" / "__init__.py").write_text(STUB_COLAB)
    (stub / "google" / "colab" / "output" / "__init__.py").write_text(STUB_OUTPUT)
    ipython_dir = root / "ipython"
    (ipython_dir / "profile_default" / "startup").mkdir(parents=True)
    (ipython_dir / "profile_default" / "startup" / "00-colab.py").write_text("import google.colab\n")
    home = root / "home"
    home.mkdir()
    env = {
        **pip_env(),
        "HOME": str(home),
        "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(python.parent.parent),
        "PYTHONPATH": str(stub),
        "IPYTHONDIR": str(ipython_dir),
        "NBCALLBACK_PIP_SOURCE": str(repo),
        "OMP_NUM_THREADS": "1",
    }
    for name in ("NBCALLBACK_DISPLAY", "NBCALLBACK_DATA", "NBCALLBACK_MNIST_URL", "NBCALLBACK_TESTS_URL", "XDG_CACHE_HOME",
                 "JUPYTER_PATH", "JUPYTER_CONFIG_DIR", "MPLCONFIGDIR"):
        env.pop(name, None)
    return {"python": python, "env": env, "home": home, "root": root, "repo": repo}


@pytest.fixture
def colab_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A venv with Colab's versions (torch: this machine's), the stand-in google.colab, and its environment;
    one per session."""
    return shared(tmp_path_factory, "colab-env", lambda root: _build_colab_env(tmp_path_factory, root))


def _installed(python: Path, env: dict[str, str]) -> dict[str, str]:
    probe = ("import json, importlib.metadata as m\n"
             "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")
    # From the home folder: in the checkout, a nbcallback.egg-info there would count as installed.
    found = json.loads(run([str(python), "-c", probe], env=env, cwd=env["HOME"]).stdout)
    return {_norm(name): version for name, version in found.items()}


def _assert_colab_pins_kept(installed: dict[str, str]) -> None:
    for name, version in colab_pins().items():
        expected = f"{LOCAL_TORCH}+cpu" if name == "torch" else version
        assert installed.get(name) == expected, f"{name}: {installed.get(name)} installed, Colab has {expected}"


@pytest.mark.binder
@pytest.mark.xdist_group(COLAB_GROUP)
def test_install_cell_on_colab_keeps_colabs_packages(colab_env: dict[str, Any]) -> None:
    python, env, home, repo_copy = colab_env["python"], colab_env["env"], colab_env["home"], colab_env["repo"]
    _assert_colab_pins_kept(_installed(python, env))
    assert "nbcallback" not in _installed(python, env)

    run_cell = "import google.colab, sys\nexec(compile(sys.stdin.read(), 'colab-install', 'exec'))"
    first = subprocess.run([str(python), "-c", run_cell], input=install_cell(), capture_output=True, text=True,
                           cwd=home, env=env, timeout=900)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert f"nbcallback installed from {repo_copy}; kept torch=={LOCAL_TORCH}+cpu" in first.stdout
    assert "ipywidgets==7.7.1" in first.stdout

    installed = _installed(python, env)
    _assert_colab_pins_kept(installed)
    assert installed["nbcallback"] == "0.1.0" and "download" in installed
    located = run([str(python), "-c", "import nbcallback.widgets, nbcallback; print(nbcallback.__file__)"], cwd=home, env=env)
    assert located.stdout.strip().startswith(str(python.parent.parent)), "installed into the environment, not run from the checkout"

    # Run again (a student re-runs the cell): nbcallback is there, nothing to do. The Chinese cell is the same code.
    again = subprocess.run([str(python), "-c", run_cell], input=install_cell("zh_CN/1_callback_tutorial.ipynb"),
                           capture_output=True, text=True, cwd=home, env=env, timeout=300)
    assert again.returncode == 0 and again.stdout == "", again.stdout + again.stderr


#: Appended to a copy of notebook 1: what the widgets chose on "Colab".
CHECKS = '''\
import google.colab.output
import ipywidgets
from nbcallback.widgets import Dashboard, run_in_background
from nbcallback.widgets.env import host, kernel_supports_subshells, resolve_display

assert ipywidgets.__version__ == "7.7.1", ipywidgets.__version__
assert host() == "colab" and resolve_display() == "widget", (host(), resolve_display())
assert not kernel_supports_subshells()  # ipykernel 6.17: clicks wait behind a busy cell

import nbcallback.widgets.board as _base

made = []
_choose = _base.choose_renderer
def _spy(mode, parts, **options):
    renderer = _choose(mode, parts, **options)
    made.append((mode, "controls" in renderer.parts, renderer.on_stop is not None, renderer.hint))
    return renderer
_base.choose_renderer = _spy

small = datapipe(path / "test", 64)
Model(model, loss_fn=loss_fn, optimizer=optimizer).train(1, small, callbacks=[Dashboard()])
assert made[-1][:3] == ("widget", False, False) and made[-1][3], made  # foreground: no controls, a hint to interrupt
run = run_in_background(Model(model, loss_fn=loss_fn, optimizer=optimizer).train, 1, small, callbacks=[Dashboard()])
run.wait(timeout=300)
assert made[-1][:3] == ("widget", True, True), made  # run_in_background: Stop and lr act on Colab
assert google.colab.output.enable_calls >= 1  # anywidget turned on Colab's custom widget manager
print("colab checks passed")
'''


def _first_markdown(cells: list[Any]) -> Any:
    return next(c for c in cells if c.cell_type == "markdown")


def notebooks_on_colab() -> list[str]:
    """The notebooks (of :data:`NOTEBOOKS`) that offer themselves on Colab: an "Open in Colab" badge under the title."""
    return [name for name in NOTEBOOKS
            if "colab-badge.svg" in _first_markdown(nbformat.read(REPO / name, as_version=4).cells).source]


def test_every_notebook_offered_on_colab_carries_the_install_cell() -> None:
    """The Colab replay below runs every notebook with a badge; each must carry the install cell under its title
    (by content: notebook 5 is generated by otter assign, which renumbers cell ids)."""
    on_colab = notebooks_on_colab()
    assert {"notebooks/1_callback_tutorial.ipynb", "notebooks/zh_CN/4_widgets.ipynb"} <= set(on_colab), on_colab
    for name in on_colab:
        cells = nbformat.read(REPO / name, as_version=4).cells
        after_title = cells[cells.index(_first_markdown(cells)) + 1]
        lang = "zh_CN" if "/zh_CN/" in name else "en"
        assert after_title.source == colab_cells.install_source(lang), f"{name}: a Colab badge without the install cell"


def _colab_notebook_run(factory: pytest.TempPathFactory, colab_env: dict[str, Any], mnist_mirror: str) -> NotebookRun:
    """Every notebook with a Colab badge, once per session, as Colab runs it (see the module's docstring)."""

    def build(scratch: Path) -> NotebookRun:
        python, env, repo = colab_env["python"], colab_env["env"], colab_env["repo"]
        if "nbcallback" not in _installed(python, env):  # one install, not two at once from the two runs' first cells
            cell = "import google.colab, sys\nexec(compile(sys.stdin.read(), 'colab-install', 'exec'))"
            subprocess.run([str(python), "-c", cell], input=install_cell(), capture_output=True, text=True,
                           cwd=colab_env["home"], env=env, timeout=900, check=True)
        content = scratch / "content"  # Colab's working folder: the notebook, and nothing of the repository
        names = [name.removeprefix("notebooks/") for name in notebooks_on_colab()]
        for relative in names:
            notebook = nbformat.read(repo / "notebooks" / relative, as_version=4)
            if relative == "1_callback_tutorial.ipynb":
                notebook.cells.append(nbformat.v4.new_code_cell(CHECKS))
            (content / relative).parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, content / relative)
        with LoopbackServer(repo / "notebooks") as tests_server:
            part_env = {
                "en": {"NBCALLBACK_TESTS_URL": f"{tests_server.url}/tests"},
                "zh_CN": {"NBCALLBACK_TESTS_URL": f"{tests_server.url}/zh_CN/tests"},
            }
            return run_notebooks([python], names, cwd=content, env={**env, "NBCALLBACK_MNIST_URL": mnist_mirror},
                                 scratch=scratch, part_env=part_env,
                                 nbval_options=["--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout=900"])

    return shared(factory, "colab-notebooks", build)


@pytest.mark.binder
@pytest.mark.xdist_group(COLAB_GROUP)
def test_every_notebook_on_colab(tmp_path_factory: pytest.TempPathFactory, colab_env: dict[str, Any],
                                 mnist_mirror: str) -> None:
    """Each notebook with a Colab badge, every cell, in Colab's versions; notebook 1 also checks the widgets'
    choices there (CHECKS). Colab's packages are still Colab's afterwards: each install cell kept them."""
    notebooks = _colab_notebook_run(tmp_path_factory, colab_env, mnist_mirror)
    expected = [name.removeprefix("notebooks/") for name in notebooks_on_colab()]
    assert not notebooks.problems(expected), notebooks.report(expected)
    _assert_colab_pins_kept(_installed(colab_env["python"], colab_env["env"]))
