"""Where this copy of nbcallback lives on GitHub: the one place that says so.

The Binder, Colab and Codespaces badges, the notebooks' Colab install cells and the links in the READMEs and
docs point at ``REPOSITORY`` (``owner/name`` on GitHub) and ``BRANCH``; on Google Colab the exercises' checks
(:mod:`nbcallback.exercises`) download their tests from there. A teacher's fork rewrites them all with one
command, run in the clone of the fork::

    python -m nbcallback.fork alice/nbcallback --branch main   # this file and every badge, cell and link
    python -m nbcallback.fork --check                          # exit 1 and list the places that differ

(:mod:`nbcallback.fork`). Edit the two lines below by hand only together with ``python -m nbcallback.fork``
without arguments, which carries them into the badges, cells and links.

This module imports nothing: ``notebooks/colab_cells.py`` loads it from its file, so a clone uses its own.
"""
from __future__ import annotations

REPOSITORY = "nbcallback/nbcallback"
BRANCH = "main"


def github_url(repository: str = REPOSITORY) -> str:
    """The repository's page: ``https://github.com/<owner>/<name>``."""
    return f"https://github.com/{repository}"


def pip_source(repository: str = REPOSITORY, branch: str = BRANCH) -> str:
    """What ``pip install`` takes to install nbcallback from the branch: ``git+https://github.com/<owner>/<name>@<branch>``."""
    return f"git+{github_url(repository)}@{branch}"


def colab_url(path: str, repository: str = REPOSITORY, branch: str = BRANCH) -> str:
    """Colab's address for a notebook of the repository (``path`` from its root, e.g. ``notebooks/1_callback_tutorial.ipynb``)."""
    return f"https://colab.research.google.com/github/{repository}/blob/{branch}/{path}"


def binder_url(path: str, repository: str = REPOSITORY, branch: str = BRANCH) -> str:
    """mybinder.org's address that opens ``path`` (from the repository's root) in JupyterLab."""
    return f"https://mybinder.org/v2/gh/{repository}/{branch}?urlpath=lab/tree/{path}"


def codespaces_url(repository: str = REPOSITORY, branch: str = BRANCH) -> str:
    """The address that creates (or, with ``quickstart=1``, resumes) a codespace on the branch."""
    return f"https://codespaces.new/{repository}/tree/{branch}?quickstart=1"


def raw_url(path: str, repository: str = REPOSITORY, branch: str = BRANCH) -> str:
    """The address of a file's content on the branch (``path`` from the repository's root)."""
    return f"https://raw.githubusercontent.com/{repository}/{branch}/{path}"
