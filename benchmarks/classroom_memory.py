"""Memory of one and of two open notebooks, as a student on Binder has them (docs/teaching.md, mybinder.org).

A student runs notebook A to the end and leaves its kernel open (it keeps what it holds), then opens notebook B
and runs it: the pod holds both kernels. This runs the two in two real kernels (nbclient, every cell in order,
from the notebooks' folder), samples the resident memory of each kernel's process tree every 0.1 s
(tests/classroom/_procmem.py) and prints, in MiB: A's peak alone, A idle after its run, and the peak of A + B
while B runs. The JupyterLab server's own memory (about 110 MB) is not included.

    OMP_NUM_THREADS=1 python -m benchmarks.classroom_memory notebooks/1_callback_tutorial.ipynb notebooks/4_widgets.ipynb
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.classroom._procmem import tree_rss  # noqa: E402


class Sampler:
    """The summed RSS (MiB) of the kernels' process trees, sampled in a thread; the peak per label."""

    def __init__(self) -> None:
        self.pids: list[int] = []
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def now(self) -> float:
        return sum(tree_rss(pid)[0] for pid in self.pids) / 1024 / 1024  # bytes -> MiB

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, self.now())

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    args = parser.parse_args()
    books = [nbformat.read(path, as_version=4) for path in (args.first, args.second)]
    clients = [NotebookClient(book, timeout=600, kernel_name="python3", allow_errors=False,
                              resources={"metadata": {"path": str(path.parent)}})
               for book, path in zip(books, (args.first, args.second))]
    figures: dict[str, float] = {}
    with Sampler() as sampler:
        with clients[0].setup_kernel():
            sampler.pids.append(clients[0].km.provisioner.process.pid)
            for index, cell in enumerate(books[0].cells):
                clients[0].execute_cell(cell, index)
            figures["first_peak_mib"] = sampler.peak
            time.sleep(1)
            figures["first_idle_mib"] = sampler.now()
            sampler.peak = 0.0
            with clients[1].setup_kernel():
                sampler.pids.append(clients[1].km.provisioner.process.pid)
                for index, cell in enumerate(books[1].cells):
                    clients[1].execute_cell(cell, index)
                figures["both_peak_mib"] = sampler.peak
    print(json.dumps({"first": str(args.first), "second": str(args.second),
                      "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
                      **{k: round(v) for k, v in figures.items()}}, indent=1))


if __name__ == "__main__":
    main()
