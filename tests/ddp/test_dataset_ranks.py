"""Sharded datasets whose ranks differ: no collective when a dataset is built, a clear error when ranks disagree.

Two gloo processes (``dataset_ranks_worker.py``), no MNIST: the datasets are ``NumpySlicesDataset``s,
sharded by rank because a process group of 2 is initialised, and shuffled (their default).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.ddp.support import run_job

pytestmark = pytest.mark.ddp

WORKER = Path(__file__).with_name("dataset_ranks_worker.py")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    out = tmp_path_factory.mktemp("dataset_ranks")
    # Bounded: a rank that hangs fails the test (run_job stops the job) instead of blocking the suite.
    proc = run_job(WORKER, [str(out)], timeout=150)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]


def test_building_a_dataset_makes_no_collective(ranks: list[dict]) -> None:
    assert ranks[0]["extra_size"] == 3  # rank 0's extra dataset: 6 rows, its shard of 2
    for result in ranks:
        assert result["construction_collectives"] == []


def test_an_extra_dataset_on_one_rank_leaves_the_shared_one_sharded_alike(ranks: list[dict]) -> None:
    # Regression: rank 0's extra dataset took the broadcast meant for rank 1's shared one, and the
    # shared one's broadcast on rank 0 then waited for ever.
    rank0, rank1 = (result["seen"] for result in ranks)
    for epoch in range(2):
        assert len(rank0[epoch]) == len(rank1[epoch]) == 5
        assert sorted(rank0[epoch] + rank1[epoch]) == list(range(10)), "the ranks' shards overlap"
    assert rank0[0] + rank1[0] != rank0[1] + rank1[1], "the two epochs had the same order"


def test_ranks_iterating_different_datasets_get_an_error_naming_both(ranks: list[dict]) -> None:
    for rank, result in enumerate(ranks):
        message = result["different"]["error"]
        assert message is not None, f"rank {rank} iterated a dataset unlike rank {1 - rank}'s without an error"
        assert "NumpySlicesDataset of 10 rows" in message and "NumpySlicesDataset of 12 rows" in message
        assert "every rank must iterate the same sharded, shuffled datasets in the same order" in message


def test_a_dataset_only_one_rank_iterates_fails_after_the_timeout_instead_of_hanging(ranks: list[dict]) -> None:
    message = ranks[1]["alone"]["error"]
    assert message is not None
    assert "rank 0 did not start iterating" in message and "NumpySlicesDataset of 8 rows" in message
    assert "num_shards=1, shard_id=0" in message  # the fix for a dataset that one rank reads alone
