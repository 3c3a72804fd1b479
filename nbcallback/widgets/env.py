"""Which renderer to use, and where the notebook runs.  Nothing here imports IPython, anywidget or marimo: the
checks read ``sys.modules`` and only ask whether anywidget can be found."""
from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any, Mapping, TextIO

__all__ = ["DISPLAY_MODES", "ENV_VAR", "resolve_display", "in_notebook_kernel", "kernel_supports_subshells", "host"]

#: What ``display=`` accepts (``'final'``: nothing live, only the final snapshot).
DISPLAY_MODES = ("auto", "widget", "static", "final", "text", "off")
ENV_VAR = "NBCALLBACK_DISPLAY"


def in_marimo() -> bool:
    """True while a marimo notebook runs this code."""
    running = getattr(sys.modules.get("marimo"), "running_in_notebook", None)
    try:
        return callable(running) and bool(running())
    except Exception:  # an old or partial marimo: not a notebook we can draw in
        return False


def host(environ: Mapping[str, str] | None = None) -> str:
    """Where the notebook runs: ``'marimo'``, ``'colab'``, ``'vscode'`` (``VSCODE_PID`` / ``VSCODE_CWD``: a hint
    only) or ``'jupyter'``."""
    environ = os.environ if environ is None else environ
    if in_marimo():
        return "marimo"
    if "google.colab" in sys.modules:
        return "colab"
    return "vscode" if "VSCODE_PID" in environ or "VSCODE_CWD" in environ else "jupyter"


def running_kernel() -> Any:
    """The ipykernel kernel running this code, or None (a script, a terminal IPython, marimo)."""
    get_ipython = getattr(sys.modules.get("IPython"), "get_ipython", None)
    return getattr(get_ipython() if callable(get_ipython) else None, "kernel", None)


def in_notebook_kernel() -> bool:
    """True inside a Jupyter kernel or a marimo notebook (not a terminal IPython, not plain Python)."""
    return in_marimo() or running_kernel() is not None


def kernel_supports_subshells() -> bool:
    """True when the kernel has subshells (ipykernel >= 7), so JupyterLab >= 4.4 can deliver clicks to a busy one."""
    return bool(getattr(running_kernel(), "_supports_kernel_subshells", False))


def is_tty(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (False for a closed or detached stream, or one without ``isatty``)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def resolve_display(
    requested: str = "auto",
    *,
    rank: int = 0,
    stream: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
    notebook: bool | None = None,
) -> str:
    """The concrete renderer: ``'widget'``, ``'static'``, ``'final'``, ``'tty'``, ``'log'`` or ``'off'``.

    First match wins: a non-zero rank -> ``'off'``; ``requested``; ``$NBCALLBACK_DISPLAY``; detection (a notebook
    kernel -> ``'widget'``, or ``'static'`` on Databricks or without anywidget; else ``'text'``).  ``'text'`` is
    ``'tty'`` (one ``\\r`` line) on a terminal, else ``'log'`` (plain lines, no escape codes).

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
        mode = environ.get(ENV_VAR, "").strip().lower() or "auto"
        if mode not in DISPLAY_MODES:
            raise ValueError(f"{ENV_VAR} must be one of {DISPLAY_MODES}, got {mode!r}")
    if mode == "auto":
        mode = "static" if environ.get("DATABRICKS_RUNTIME_VERSION") else "widget"
    if mode in ("widget", "static", "final") and not (in_notebook_kernel() if notebook is None else notebook):
        mode = "text"  # widgets or HTML outside a kernel would print reprs
    if mode == "widget" and importlib.util.find_spec("anywidget") is None:
        mode = "static"
    if mode == "text":
        stream = sys.stdout if stream is None else stream
        mode = "tty" if is_tty(stream) else "log"
    return mode


def describe_frontend_support(mode: str, background: bool, subshells: bool, where: str | None = None) -> dict[str, Any]:
    """``{'controls': bool, 'hint': message key or ''}``: a foreground run's clicks reach a busy kernel only in
    JupyterLab >= 4.4 / Notebook >= 7.4 with subshells; VS Code, Colab and marimo need ``run_in_background``."""
    if mode != "widget" or background:
        return {"controls": mode == "widget", "hint": ""}
    where = host() if where is None else where
    if subshells and where == "jupyter":
        return {"controls": True, "hint": "hint_subshells"}
    return {"controls": False, "hint": "hint_marimo" if where == "marimo" else "hint_interrupt"}
