"""Which renderer to use: notebook widgets, static HTML, terminal text, or nothing.

Resolution order (first match wins):

1. ``rank_id != 0`` in ``cb_params`` (distributed training): ``'off'``, so only
   rank 0 draws.
2. The callback's ``display=`` argument, when it is not ``'auto'``.
3. The ``NBCALLBACK_DISPLAY`` environment variable, when set (CI, docs builds).
4. Detection: an IPython *kernel* (Jupyter, VS Code, Colab) with ipywidgets
   importable -> ``'widget'``; Databricks runtimes -> ``'static'`` (their widget
   support differs; huggingface/transformers#17406 shows raw objects there);
   anything else -> ``'text'``.

``'text'`` then becomes ``'tty'`` (one line rewritten with ``\\r``) when the
stream is a terminal, else ``'log'`` (plain lines at a sane interval, no
``\\r`` or escape codes, so CI logs and redirected files stay readable;
keras-team/keras#7523).

Nothing here imports IPython or ipywidgets: the kernel check looks at
``sys.modules`` (IPython is always imported in a kernel), and the ipywidgets
check only asks whether the package can be found.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any, Mapping, TextIO

__all__ = ["DISPLAY_MODES", "ENV_VAR", "resolve_display", "in_notebook_kernel", "kernel_supports_subshells", "usable_cpus"]

#: What ``display=`` accepts.  ``'final'`` shows nothing live and only the final
#: snapshot (docs builds: one HTML+PNG per run, no widget state at all).
DISPLAY_MODES = ("auto", "widget", "static", "final", "text", "off")
#: The environment variable that overrides ``display='auto'``.
ENV_VAR = "NBCALLBACK_DISPLAY"

_NOTEBOOK_MODES = frozenset({"widget", "static", "final"})


def in_notebook_kernel() -> bool:
    """True inside a Jupyter kernel (not a terminal IPython, not plain Python)."""
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
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython() if callable(getattr(ipython, "get_ipython", None)) else None
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return False
    supported = getattr(kernel, "_supports_kernel_subshells", None)
    return bool(supported)


def _widgets_importable() -> bool:
    return importlib.util.find_spec("ipywidgets") is not None


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


def describe_frontend_support(mode: str, background: bool, subshells: bool) -> dict[str, Any]:
    """Whether the Stop/LR controls can act during a run, and the hint to show.

    Returns ``{'controls': bool, 'hint': str}``.
    """
    if mode != "widget":
        return {"controls": False, "hint": ""}
    if background:
        return {"controls": True, "hint": "Stop and lr act at the next step."}
    if subshells:
        return {
            "controls": True,
            "hint": "Stop and lr act at the next step in JupyterLab ≥ 4.4 (comms over subshells); "
            "elsewhere press ■ (interrupt) to stop gracefully.",
        }
    return {
        "controls": False,
        "hint": "Press ■ (interrupt kernel) to stop gracefully after the current step. "
        "For a Stop button and lr control here, use nbcallback.widgets.run_in_background(...) "
        "or ipykernel ≥ 7 with JupyterLab ≥ 4.4.",
    }


def usable_cpus(cgroup_root: str = "/sys/fs/cgroup") -> int:
    """CPUs this process may really use: its affinity mask, capped by a cgroup CPU quota.

    Containers (Binder, Kubernetes, ``docker --cpus``) often show every host
    CPU in ``os.cpu_count()`` and the affinity mask while a quota allows one or
    two; a plot helper process would then compete with training for that
    quota.  cgroup v2 ``cpu.max`` and v1 ``cpu.cfs_quota_us`` are read.
    """
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 1
    quota = _cgroup_cpu_quota(cgroup_root)
    if quota is not None:
        count = min(count, max(1, int(quota)))
    return count


def _cgroup_cpu_quota(root: str) -> float | None:
    """The cgroup's CPU quota in CPUs (1.5 = one and a half), or None when unlimited or unknown."""
    try:
        with open(os.path.join(root, "cpu.max")) as handle:  # cgroup v2: "max 100000" or "150000 100000"
            fields = handle.read().split()
        if len(fields) == 2 and fields[0] != "max" and int(fields[1]) > 0:
            return int(fields[0]) / int(fields[1])
        return None
    except (OSError, ValueError):
        pass
    try:  # cgroup v1
        with open(os.path.join(root, "cpu", "cpu.cfs_quota_us")) as handle:
            quota = int(handle.read())
        with open(os.path.join(root, "cpu", "cpu.cfs_period_us")) as handle:
            period = int(handle.read())
    except (OSError, ValueError):
        return None
    return quota / period if quota > 0 and period > 0 else None
