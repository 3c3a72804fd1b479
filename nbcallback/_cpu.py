"""How many CPUs this process may really use, and torch's thread count kept to it.

torch starts one intra-op thread per core it sees. In a container with a CPU quota (a mybinder.org pod, a
Codespace, a JupyterHub user, ``docker run --cpus``) it still sees every core of the node: 16 threads that share,
say, one CPU's worth of time run many times slower than one thread (they wait for each other and the quota
throttles them). :func:`usable_cpus` counts what the process may use: the CPUs of its affinity mask
(``taskset``, cpusets) and the cgroup's CPU quota (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` /
``cpu.cfs_period_us``), whichever is smaller, rounded down, at least 1. :func:`limit_torch_threads` lowers
torch's thread count to it; ``nbcallback.train`` calls it once, when it imports torch.

The user's choice wins: where ``OMP_NUM_THREADS`` is set, nothing changes; ``torch.set_num_threads(n)`` after
importing nbcallback (or ``python -m nbcallback --threads n``) sets what it says; a thread count already lower
than the usable CPUs is kept. Only Linux has cgroups; elsewhere the affinity (where the platform has one) or
``os.cpu_count()`` counts. Imports torch (``nbcallback.train`` does anyway).
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import torch

#: Where Linux mounts the cgroup file systems, and the file that names this process's cgroups.
CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")
_V1_CPU_DIRS = ("cpu", "cpu,cpuacct", "cpuacct,cpu")


def affinity_cpus() -> int:
    """The CPUs this process may be scheduled on (its affinity mask), or all of them where there is no mask."""
    process_cpu_count = getattr(os, "process_cpu_count", None)  # Python >= 3.13: affinity-aware
    if process_cpu_count is not None:
        return max(1, process_cpu_count() or 1)
    if hasattr(os, "sched_getaffinity"):
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _folders(mount: Path, relative: str) -> list[Path]:
    """``mount/relative`` and each folder above it up to ``mount`` (a limit anywhere above applies too)."""
    folders = [mount]
    current = mount
    for part in [p for p in relative.split("/") if p]:
        current = current / part
        folders.append(current)
    return folders


def cgroup_cpu_quota(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_SELF_CGROUP) -> float | None:
    """The CPU quota of this process's cgroups in CPUs (``1.5``: one and a half CPUs' time), or None if none.

    The smallest quota of the process's cgroup and of every cgroup above it, cgroup v2 or v1. Where the cgroup's
    own folder is not mounted (a container sees its cgroup as the root), the mount's root files count."""
    listing = _read(proc_cgroup)
    if listing is None:
        return None
    quotas: list[float] = []
    for line in listing.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, relative = rest.partition(":")
        if hierarchy == "0" and controllers == "":  # cgroup v2: cpu.max is "<quota> <period>" or "max <period>"
            for folder in _folders(root, relative):
                fields = (_read(folder / "cpu.max") or "").split()
                if len(fields) == 2 and fields[0] != "max":
                    try:
                        quota, period = int(fields[0]), int(fields[1])
                    except ValueError:
                        continue
                    if quota > 0 and period > 0:
                        quotas.append(quota / period)
        elif "cpu" in controllers.split(","):  # cgroup v1: cpu.cfs_quota_us is -1 where there is no quota
            for name in _V1_CPU_DIRS:
                for folder in _folders(root / name, relative):
                    quota_text, period_text = _read(folder / "cpu.cfs_quota_us"), _read(folder / "cpu.cfs_period_us")
                    try:
                        quota, period = int(quota_text or "-1"), int(period_text or "0")
                    except ValueError:
                        continue
                    if quota > 0 and period > 0:
                        quotas.append(quota / period)
    return min(quotas) if quotas else None


def usable_cpus(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_SELF_CGROUP) -> int:
    """The CPUs this process may really use: its affinity and its cgroup's CPU quota (rounded down), at least 1."""
    cpus = affinity_cpus()
    quota = cgroup_cpu_quota(root, proc_cgroup)
    if quota is not None:
        cpus = min(cpus, max(1, math.floor(quota + 1e-9)))
    return cpus


def limit_torch_threads(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_SELF_CGROUP) -> int | None:
    """Lower torch's intra-op thread count to :func:`usable_cpus` where ``OMP_NUM_THREADS`` is not set.

    Returns the new count, or None where nothing changed (``OMP_NUM_THREADS`` set, or torch already runs no
    more threads than that)."""
    if os.environ.get("OMP_NUM_THREADS", "").strip():
        return None
    usable = usable_cpus(root, proc_cgroup)
    if torch.get_num_threads() <= usable:
        return None
    torch.set_num_threads(usable)
    return usable
