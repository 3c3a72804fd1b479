"""One rank joining a group through a store that outlives it, as torchrun's agent store does (``test_restart_store.py``).

Usage: ``store_worker.py MODE DELAY_S``: sleeps ``DELAY_S``, joins with ``init_distributed`` (MODE ``ours``)
or torch's ``init_process_group`` (MODE ``plain``), all-reduces a one, prints ``joined <sum>`` and waits to
be killed. The environment names the store (MASTER_ADDR/PORT, ``TORCHELASTIC_USE_AGENT_STORE=True``).
"""
from __future__ import annotations

import datetime
import faulthandler
import sys
import time

import torch
import torch.distributed as dist

faulthandler.dump_traceback_later(120, exit=True)  # never outlive the test

from nbcallback.train.distributed import init_distributed  # noqa: E402


def main() -> int:
    mode, delay = sys.argv[1], float(sys.argv[2])
    time.sleep(delay)
    if mode == "ours":
        init_distributed(backend="gloo")
    else:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    value = torch.ones(1)
    dist.all_reduce(value)
    print(f"joined {value.item():g}", flush=True)
    time.sleep(600)  # killed by the test, as torchrun kills a group
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
