"""One rank of the 2-rank job of ``test_dataset_ranks.py``: datasets that differ between ranks.

Run by ``torch.distributed.run``; writes ``rank<r>.json`` into the folder given as the only argument.
The process group's timeout is short (``TIMEOUT_S``) so that a rank left waiting fails fast.

A. Rank 0 builds an extra sharded, shuffled dataset (it only looks at its size); then both ranks
   iterate the dataset they share for two epochs. No collective may be made while a dataset is built.
B. The ranks build datasets of different sizes and iterate them: each rank's error is recorded.
C. Rank 1 alone iterates an extra sharded, shuffled dataset: its error (after the process group's
   timeout, not a hang) is recorded; rank 0 waits for it through the store.
"""
from __future__ import annotations

import datetime
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d

from nbcallback.dataset import NumpySlicesDataset

TIMEOUT_S = 15
COLLECTIVES = ("broadcast", "all_reduce", "all_gather", "all_gather_object", "broadcast_object_list", "barrier")


def epochs(dataset: NumpySlicesDataset, count: int) -> list[list[int]]:
    iterator = dataset.create_tuple_iterator(num_epochs=count, output_numpy=True)
    return [[int(x) for (x,) in iterator] for _ in range(count)]


def error_of(action: Callable[[], Any]) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        action()
    except RuntimeError as exc:
        return {"error": str(exc), "seconds": time.perf_counter() - started}
    return {"error": None, "seconds": time.perf_counter() - started}


def main() -> None:
    out = Path(sys.argv[1])
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT_S))
    rank = dist.get_rank()
    store = distributed_c10d._get_default_store()
    torch.manual_seed(100 + rank)  # the ranks' global generators differ, as they do unseeded
    result: dict[str, Any] = {}

    # A. An extra dataset on rank 0 only; construction makes no collective.
    calls: list[str] = []
    plain = {name: getattr(dist, name) for name in COLLECTIVES}

    def counting(name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return plain[name](*args, **kwargs)

        return call

    for name in COLLECTIVES:
        setattr(dist, name, counting(name))
    try:
        if rank == 0:
            extra = NumpySlicesDataset({"y": np.arange(6)})
            result["extra_size"] = extra.get_dataset_size()
        shared = NumpySlicesDataset({"x": np.arange(10)})
    finally:
        for name in COLLECTIVES:
            setattr(dist, name, plain[name])
    result["construction_collectives"] = calls
    result["seen"] = epochs(shared, 2)

    # B. Different datasets on the two ranks.
    different = NumpySlicesDataset({"x": np.arange(10 + 2 * rank)})
    result["different"] = error_of(lambda: epochs(different, 1))

    # C. A dataset only rank 1 iterates.
    if rank == 1:
        alone = NumpySlicesDataset({"z": np.arange(8)})
        result["alone"] = error_of(lambda: epochs(alone, 1))
        store.set("test/rank1_done", "1")
    else:
        store.wait(["test/rank1_done"], datetime.timedelta(seconds=10 * TIMEOUT_S))

    (out / f"rank{rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
