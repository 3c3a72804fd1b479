"""Which renderer to use: notebook widgets, static HTML, terminal text, or nothing.

Resolution order (first match wins):

1. ``rank_id != 0`` in ``cb_params`` (distributed training): ``'off'``, so only
   rank 0 draws.
2. The callback's ``display=`` argument, when it is not ``'auto'``.
3. The ``NBCALLBACK_DISPLAY`` environment variable, when set (CI, docs builds).
4. Detection: an IPython *kernel* (Jupyter, VS Code, Colab) with anywidget
   importable, or a running marimo notebook -> ``'widget'``; Databricks
   runtimes -> ``'static'`` (their widget support differs;
   huggingface/transformers#17406 shows raw objects there); anything else ->
   ``'text'``.

``'text'`` then becomes ``'tty'`` (one line rewritten with ``\\r``) when the
stream is a terminal, else ``'log'`` (plain lines at a sane interval, no
``\\r`` or escape codes, so CI logs and redirected files stay readable;
keras-team/keras#7523).

Nothing here imports IPython, anywidget or marimo: the kernel checks look at
``sys.modules`` (IPython is always imported in a kernel, marimo in a marimo
notebook), and the anywidget check only asks whether the package can be found.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any, Mapping, TextIO

__all__ = ["DISPLAY_MODES", "ENV_VAR", "resolve_display", "in_notebook_kernel", "kernel_supports_subshells", "host"]

#: What ``display=`` accepts.  ``'final'`` shows nothing live and only the final
#: snapshot (docs builds: one HTML+PNG per run, no widget state at all).
DISPLAY_MODES = ("auto", "widget", "static", "final", "text", "off")
#: The environment variable that overrides ``display='auto'``.
ENV_VAR = "NBCALLBACK_DISPLAY"

_NOTEBOOK_MODES = frozenset({"widget", "static", "final"})


def in_marimo() -> bool:
    """True while a marimo notebook runs this code (edit or run mode)."""
    marimo = sys.modules.get("marimo")
    running = getattr(marimo, "running_in_notebook", None)
    try:
        return bool(running()) if callable(running) else False
    except Exception:  # an old or partial marimo: not a notebook we can draw in
        return False


def host(environ: Mapping[str, str] | None = None) -> str:
    """Where the notebook runs, as far as the kernel can tell: ``'marimo'``, ``'colab'``,
    ``'vscode'`` (a hint only: ``VSCODE_PID`` / ``VSCODE_CWD``) or ``'jupyter'``."""
    environ = os.environ if environ is None else environ
    if in_marimo():
        return "marimo"
    if "google.colab" in sys.modules:
        return "colab"
    if "VSCODE_PID" in environ or "VSCODE_CWD" in environ:
        return "vscode"
    return "jupyter"


def in_notebook_kernel() -> bool:
    """True inside a Jupyter kernel or a marimo notebook (not a terminal IPython, not plain Python)."""
    if in_marimo():
        return True
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if callable(get_ipython) else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def kernel_supports_subshells() -> bool:
    """True when the running kernel advertises ``kernel subshells`` (ipykernel >= 7).

    Front ends that send comm messages over subshells (JupyterLab >= 4.4,
    setting ``commsOverSubshells``) can then deliver a widget click while a cell
    is busy.
    """
    return bool(getattr(running_kernel(), "_supports_kernel_subshells", False))


def running_kernel() -> Any:
    """The ipykernel kernel running this code, or None (a script, a terminal IPython, marimo)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    shell = ipython.get_ipython() if callable(getattr(ipython, "get_ipython", None)) else None
    return getattr(shell, "kernel", None)


def _widgets_importable() -> bool:
    return importlib.util.find_spec("anywidget") is not None


def _is_tty(stream: TextIO | None) -> bool:
    isatty = getattr(stream, "isatty", None)
    if not callable(isatty):
        return False
    try:
        return bool(isatty())
    except (ValueError, OSError):  # a closed or detached stream
        return False


def resolve_display(
    requested: str = "auto",
    *,
    rank: int = 0,
    stream: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
    notebook: bool | None = None,
) -> str:
    """The concrete renderer name: ``'widget'``, ``'static'``, ``'final'``, ``'tty'``, ``'log'`` or ``'off'``.

    Args:
        requested: the callback's ``display=`` argument (one of :data:`DISPLAY_MODES`).
        rank: ``cb_params.rank_id``; only rank 0 displays anything.
        stream: where text goes (``sys.stdout`` when None), to tell a TTY from a log.
        environ: the environment (``os.environ`` when None).
        notebook: override the kernel detection (tests).

    Raises:
        ValueError: an unknown mode in ``requested`` or in ``NBCALLBACK_DISPLAY``.
    """
    if requested not in DISPLAY_MODES:
        raise ValueError(f"display must be one of {DISPLAY_MODES}, got {requested!r}")
    if rank != 0:
        return "off"
    environ = os.environ if environ is None else environ
    mode = requested
    if mode == "auto":
        from_env = environ.get(ENV_VAR, "").strip().lower()
        if from_env:
            if from_env not in DISPLAY_MODES:
                raise ValueError(f"{ENV_VAR} must be one of {DISPLAY_MODES}, got {from_env!r}")
            mode = from_env
    kernel = in_notebook_kernel() if notebook is None else notebook
    if mode == "auto":
        if kernel and environ.get("DATABRICKS_RUNTIME_VERSION"):
            mode = "static"
        elif kernel and _widgets_importable():
            mode = "widget"
        elif kernel:
            mode = "static"
        else:
            mode = "text"
    if mode in _NOTEBOOK_MODES and not kernel:
        # Widgets or HTML outside a kernel would print reprs; fall back to text.
        mode = "text"
    if mode == "widget" and not _widgets_importable():
        mode = "static"
    if mode == "text":
        stream = sys.stdout if stream is None else stream
        mode = "tty" if _is_tty(stream) else "log"
    return mode


def describe_frontend_support(mode: str, background: bool, subshells: bool, where: str | None = None) -> dict[str, Any]:
    """Whether the Stop / lr controls can act while the run trains, and the one hint to show.

    Returns ``{'controls': bool, 'hint': key}``, the hint as a key of the
    message table (:mod:`nbcallback.widgets.words`; '' for none).  Controls act during a
    foreground run only where clicks reach a busy kernel: JupyterLab >= 4.4 /
    Notebook >= 7.4 with a kernel that has subshells (ipykernel >= 7).  VS Code,
    Colab and marimo queue them until the cell ends, so the controls are shown
    only for ``run_in_background`` there.
    """
    if mode != "widget":
        return {"controls": False, "hint": ""}
    where = host() if where is None else where
    if background:
        return {"controls": True, "hint": ""}
    if subshells and where == "jupyter":
        return {"controls": True, "hint": "hint_subshells"}
    if where == "marimo":
        return {"controls": False, "hint": "hint_marimo"}
    return {"controls": False, "hint": "hint_interrupt"}
