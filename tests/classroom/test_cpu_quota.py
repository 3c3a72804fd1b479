"""torch's threads kept to the CPUs a process may really use (issue 44, item 3): nbcallback._cpu.

A Binder pod, a Codespace or a JupyterHub user sees every core of its node but gets a CPU quota; torch would
start one thread per core. The quota is faked here with cgroup files in a temporary folder (v2 and v1, nested,
a container's view), the affinity with ``os.sched_setaffinity``; torch's real thread count is read in a fresh
interpreter."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nbcallback import _cpu

REPO = Path(__file__).resolve().parents[2]


def _cgroup_v2(tmp_path: Path, limits: dict[str, str], relative: str = "/user.slice/pod/kernel") -> tuple[Path, Path]:
    """A cgroup v2 tree: ``limits`` maps a folder (relative to the root, '' for the root) to its cpu.max."""
    root = tmp_path / "cgroup"
    for folder in ["", *[relative[: i] for i in range(1, len(relative) + 1) if relative[i:i + 1] in ("/", "")]]:
        (root / folder.strip("/")).mkdir(parents=True, exist_ok=True)
    for folder, value in limits.items():
        (root / folder.strip("/") / "cpu.max").write_text(value + "\n")
    proc = tmp_path / "proc_self_cgroup"
    proc.write_text(f"0::{relative}\n")
    return root, proc


def _cgroup_v1(tmp_path: Path, quota: int, period: int, relative: str = "/docker/abc", mounted: bool = True) -> tuple[Path, Path]:
    root = tmp_path / "cgroup1"
    folder = root / "cpu,cpuacct" / relative.strip("/") if mounted else root / "cpu,cpuacct"
    folder.mkdir(parents=True)
    (folder / "cpu.cfs_quota_us").write_text(f"{quota}\n")
    (folder / "cpu.cfs_period_us").write_text(f"{period}\n")
    proc = tmp_path / "proc_self_cgroup1"
    proc.write_text(f"12:memory:{relative}\n4:cpu,cpuacct:{relative}\n1:name=systemd:{relative}\n")
    return root, proc


def test_cgroup_v2_quota_of_the_cgroup_or_any_above_it(tmp_path: Path) -> None:
    root, proc = _cgroup_v2(tmp_path, {"": "max 100000", "user.slice/pod": "150000 100000",
                                       "user.slice/pod/kernel": "max 100000"})
    assert _cpu.cgroup_cpu_quota(root, proc) == pytest.approx(1.5)  # the pod's limit applies to the kernel below it
    assert _cpu.usable_cpus(root, proc) == 1  # rounded down: never more threads than the quota


def test_no_quota_leaves_the_affinity(tmp_path: Path) -> None:
    root, proc = _cgroup_v2(tmp_path, {"": "max 100000"})
    assert _cpu.cgroup_cpu_quota(root, proc) is None
    assert _cpu.usable_cpus(root, proc) == _cpu.affinity_cpus()
    assert _cpu.cgroup_cpu_quota(tmp_path / "absent", tmp_path / "absent.txt") is None  # not Linux, no cgroups


def test_cgroup_v1_quota_also_where_the_container_sees_its_cgroup_as_the_root(tmp_path: Path) -> None:
    root, proc = _cgroup_v1(tmp_path, 200000, 100000)
    assert _cpu.cgroup_cpu_quota(root, proc) == pytest.approx(2.0)
    assert _cpu.usable_cpus(root, proc) == min(2, _cpu.affinity_cpus())
    inside, proc_inside = _cgroup_v1(tmp_path / "container", 50000, 100000, mounted=False)
    assert _cpu.cgroup_cpu_quota(inside, proc_inside) == pytest.approx(0.5)
    assert _cpu.usable_cpus(inside, proc_inside) == 1  # half a CPU still runs one thread
    no_quota, proc_none = _cgroup_v1(tmp_path / "none", -1, 100000)
    assert _cpu.cgroup_cpu_quota(no_quota, proc_none) is None


def _torch_threads(code: str, env: dict[str, str]) -> list[str]:
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def _env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "OMP_NUM_THREADS"}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return {**env, **extra}


def test_a_faked_quota_lowers_torchs_threads_and_the_users_choice_wins(tmp_path: Path) -> None:
    """torch started with 2 threads (as on a 2-core node): a 1-CPU quota leaves 1; OMP_NUM_THREADS set, or a
    lower count the user chose, is kept; torch.set_num_threads after the import sets what it says."""
    root, proc = _cgroup_v2(tmp_path, {"user.slice": "100000 100000"})
    code = (
        "import sys, torch\n"
        "from pathlib import Path\n"
        "torch.set_num_threads(int(sys.argv[1]))\n"
        "from nbcallback import _cpu\n"
        f"print(_cpu.limit_torch_threads(Path({str(root)!r}), Path({str(proc)!r})), torch.get_num_threads())\n"
        "torch.set_num_threads(2)\n"
        "print(torch.get_num_threads())\n"
    )
    for start, env, expected in ((2, _env(), ["1", "1", "2"]),
                                 (2, _env(OMP_NUM_THREADS="2"), ["None", "2", "2"]),
                                 (1, _env(), ["None", "1", "2"])):
        assert _torch_threads(code.replace("sys.argv[1]", str(start)), env) == expected, (start, env.get("OMP_NUM_THREADS"))


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no affinity masks on this platform")
def test_importing_nbcallback_train_keeps_torch_to_the_affinity() -> None:
    """The real wiring: a process pinned to one CPU, torch on 2 threads; importing nbcallback.train leaves 1.
    With OMP_NUM_THREADS set it leaves what torch had."""
    code = (
        "import os, torch\n"
        "os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})\n"
        "torch.set_num_threads(2)\n"
        "import nbcallback.train\n"
        "print(torch.get_num_threads())\n"
    )
    assert _torch_threads(code, _env()) == ["1"]
    assert _torch_threads(code, _env(OMP_NUM_THREADS="2")) == ["2"]
