"""Put the Google Colab badge and install cell into the tutorial notebooks (issue 20).

Each notebook gets

* an "Open in Colab" badge in its first markdown cell, under the title, linking
  ``https://colab.research.google.com/github/<owner>/<name>/blob/<branch>/notebooks/<path>``, the repository
  and branch of ``nbcallback/repository.py`` (a fork points them at itself with ``python -m nbcallback.fork``);
* a code cell with the id ``colab-install`` right after that markdown cell. Outside
  Colab it does nothing (no output, so the committed outputs and nbval stay as they
  were). On Colab (``google.colab`` imported in the kernel, as ``nbcallback.widgets.env.host``
  checks) it pip-installs nbcallback from the repository (``$NBCALLBACK_PIP_SOURCE``,
  default ``git+https://github.com/<owner>/<name>@<branch>``) with Colab's own torch,
  ipywidgets, ipykernel ... pinned to their installed versions, so pip replaces none of
  them. The data comes, as everywhere, from the notebook's own ``download_mnist()`` cell.
  The plumbing stays out of a learner's way (issue 32): the cell's first line is a Colab form title
  (Colab shows the title, not the code) and its metadata folds it in JupyterLab (``jupyter.source_hidden``).

The Chinese notebooks get the same code with Chinese comments and message (``sync_code.py``
accepts those). ``5_exercises.ipynb`` is generated from the exercises' masters
(``notebooks/exercises/assign.py``), so its badge and cell go into the masters (``MASTERS``), with the
address of the student notebook; regenerate it afterwards. On Colab its checks run without otter-grader
(``nbcallback.exercises``: otter-grader 7 requires ipywidgets >= 8.1.5, which would replace Colab's 7.7.1).

Run from the repository root::

    python notebooks/colab_cells.py            # insert or update, in every notebook below
    python notebooks/colab_cells.py --check    # exit 1 if a notebook is out of date
    python notebooks/colab_cells.py 1_callback_tutorial.ipynb zh_CN/1_callback_tutorial.ipynb

Updating a notebook keeps its other cells and outputs; an inserted install cell has no
outputs (it prints nothing outside Colab), so the notebook need not be re-executed, but
``python notebooks/refresh_outputs.py <name>`` keeps the execution counts in order.
"""
from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import nbformat

HERE = Path(__file__).resolve().parent


def _load_repository() -> ModuleType:
    """This checkout's nbcallback/repository.py (not an installed nbcallback's: a fork's clone uses its own)."""
    spec = importlib.util.spec_from_file_location("nbcallback_checkout_repository", HERE.parent / "nbcallback" / "repository.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


repository = _load_repository()
REPOSITORY = repository.REPOSITORY
REPO_URL = repository.github_url(REPOSITORY)
BRANCH = repository.BRANCH
CELL_ID = "colab-install"
#: The notebooks that get the Colab cells, relative to notebooks/.
#: Every lesson notebook (1, 1b, 2, 3, 3b, 4 ...) in both languages; notebook 5 is generated (MASTERS below).
NOTEBOOKS = tuple(
    f"{prefix}{path.name}"
    for prefix in ("", "zh_CN/")
    for path in sorted(HERE.glob("[0-9]*.ipynb"))
    if path.name != "5_exercises.ipynb"
)
#: Notebook 5 is generated from the exercises' masters by notebooks/exercises/assign.py: its cells go into the
#: master (relative to notebooks/), with the address of the student notebook it becomes.
MASTERS = {
    "exercises/master/5_exercises.ipynb": "5_exercises.ipynb",
    "exercises/master/zh_CN/5_exercises.ipynb": "zh_CN/5_exercises.ipynb",
}
BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
_BADGE_LINE = re.compile(r"^\[!\[[^\]]*\]\(https://colab\.research\.google\.com/assets/[^)]*\)\]\([^)]*\)[ \t]*$", re.MULTILINE)

#: Packages Colab preinstalls that the install must not replace: nbcallback's own dependencies
#: and the kernel / widget stack the Colab front end is built for (ipywidgets 7.7.1 there).
KEEP = ("torch", "numpy", "matplotlib", "tqdm", "ipywidgets", "widgetsnbextension", "anywidget",
        "ipykernel", "ipython", "jupyter_client", "traitlets")

#: The install cell; only its comment and its message are translated (the code cells of the
#: two languages must be the same code).
INSTALL_CELL = '''\
{title}
import sys

if "google.colab" in sys.modules:
    import contextlib, importlib.util, os, subprocess, tempfile
    from importlib.metadata import PackageNotFoundError, version

    if importlib.util.find_spec("nbcallback") is None:
        keep = []  {keep_comment}
        for name in {keep}:
            with contextlib.suppress(PackageNotFoundError):
                keep.append(f"{{name}}=={{version(name)}}")
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as pins:
            pins.write("\\n".join(keep) + "\\n")
        source = os.environ.get("NBCALLBACK_PIP_SOURCE", "{source}")
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-c", pins.name, source],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(done.stdout[-3000:] + done.stderr[-3000:])
        print({message})
'''
#: The cell's first line is a Colab form title: Colab shows the title and folds the code away
#: (``display-mode: "form"``); JupyterLab folds it too (``jupyter.source_hidden`` in its metadata).
WORDS = {
    "en": {
        "title": '#@title Install nbcallback on Google Colab (elsewhere this cell does nothing) { display-mode: "form" }',
        "keep_comment": "# Colab's own torch, ipywidgets ... pinned, so that pip replaces none of them",
        "message": "f\"nbcallback installed from {source}; kept {', '.join(keep)}\"",
    },
    "zh_CN": {
        "title": '#@title 在Google Colab上安装nbcallback（在其他环境中本单元格什么也不做） { display-mode: "form" }',
        "keep_comment": "# 固定Colab自带的torch、ipywidgets等的版本，pip不会替换它们",
        "message": "f\"已从{source}安装nbcallback；保留了{', '.join(keep)}\"",
    },
}
#: Metadata of the install cell: folded in JupyterLab / Notebook 7, as the form title folds it on Colab.
CELL_METADATA = {"jupyter": {"source_hidden": True}}


def _language(relative: str) -> str:
    return "zh_CN" if relative.startswith("zh_CN/") else "en"


def install_source(language: str = "en") -> str:
    """The install cell's code for one language."""
    keep = "(" + ", ".join(f'"{name}"' for name in KEEP) + ")"
    source = repository.pip_source(REPOSITORY, BRANCH)
    return INSTALL_CELL.format(keep=keep, source=source, **WORDS[language]).rstrip("\n")


def colab_url(relative: str) -> str:
    """Colab's address for a notebook of this folder (``relative``: e.g. ``zh_CN/1_callback_tutorial.ipynb``)."""
    return repository.colab_url(f"notebooks/{relative}", REPOSITORY, BRANCH)


def badge(relative: str) -> str:
    return f"[![Open In Colab]({BADGE_IMAGE})]({colab_url(relative)})"


def _with_badge(source: str, relative: str) -> str:
    line = badge(relative)
    if _BADGE_LINE.search(source):
        return _BADGE_LINE.sub(lambda _: line, source, count=1)
    title, newline, rest = source.partition("\n")
    if title.startswith("#"):  # under the title, as a paragraph of its own
        return f"{title}\n\n{line}\n" + (rest if rest.startswith("\n") else "\n" + rest if rest else "")
    return f"{line}\n\n{source}"


def update(notebook: nbformat.NotebookNode, relative: str) -> nbformat.NotebookNode:
    """The notebook with the badge and the install cell in place (changed in place, and returned)."""
    cells = notebook.cells
    code = install_source(_language(relative))
    existing = [i for i, cell in enumerate(cells) if cell.get("id") == CELL_ID]
    if existing:
        cell = cells.pop(existing[0])
        if cell.source != code:
            cell.source = code
            cell.outputs, cell.execution_count = [], None
            cell.metadata.pop("execution", None)
    else:
        cell = nbformat.v4.new_code_cell(code)
        cell["id"] = CELL_ID
    for key, value in CELL_METADATA.items():
        cell.metadata[key] = dict(value)
    first_md = next(i for i, cell in enumerate(cells) if cell.cell_type == "markdown")
    cells[first_md].source = _with_badge(cells[first_md].source, relative)
    cells.insert(first_md + 1, cell)
    return notebook


def is_current(notebook: nbformat.NotebookNode, relative: str) -> bool:
    import copy

    before = nbformat.writes(notebook)
    return nbformat.writes(update(copy.deepcopy(notebook), relative)) == before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*",
                        help=f"paths relative to notebooks/ (default: {', '.join((*NOTEBOOKS, *MASTERS))})")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook is out of date")
    args = parser.parse_args(argv)
    generated = {opened: master for master, opened in MASTERS.items()}
    status = 0
    for relative in args.notebooks or (*NOTEBOOKS, *MASTERS):
        relative = generated.get(relative, relative)  # 5_exercises.ipynb: its master
        opened = MASTERS.get(relative, relative)
        then = f", then python notebooks/exercises/assign.py --lang {'zh_CN' if _language(opened) == 'zh_CN' else 'en'}" \
            if relative in MASTERS else ""
        path = HERE / relative
        notebook = nbformat.read(path, as_version=4)
        if is_current(notebook, opened):
            continue
        if args.check:
            print(f"{relative}: the Colab badge or install cell is missing or out of date; "
                  f"run python notebooks/colab_cells.py {relative}{then}")
            status = 1
            continue
        nbformat.write(update(notebook, opened), path)
        print(f"{relative}: updated" + (f"; now run{then.removeprefix(', then')}" if then else ""))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
