"""Ported from mindspore-ai/mindspore tests/ut/python/dataset/test_sync_wait.py.

Every test is ported with its assertions. Differences: the MindSpore tests
that only iterate (test_simple_shuffle_sync, test_two_sync,
test_multiple_iterators) also assert here that the whole dataset came through
and that no sync_wait had to be disabled (a sync_wait that times out warns,
and one iterated in the thread that calls sync_update warns and disables
itself at once, see ``Dataset.sync_wait``), which is what MindSpore checks
implicitly by not timing out. test_sync_exception_01 is also asserted with the
condition deeper in the pipeline. test_sync_timeout is new: MindSpore's
timeout warning when sync_update is missing, for a pipeline iterated in a
consumer thread (after ``config.get_callback_timeout()`` seconds, here a
fraction of one) and in the thread that would call sync_update (at once).
"""
from __future__ import annotations

import warnings
from typing import Any, Iterator

import numpy as np
import pytest

import nbcallback.dataset as ds
from tests.dataset.waiting import callback_timeout, in_thread


def gen() -> Iterator[tuple[np.ndarray]]:
    for i in range(100):
        yield (np.array(i),)


class Augment:
    def __init__(self, loss: Any) -> None:
        self.loss = loss

    def preprocess(self, input_: Any) -> Any:
        return input_

    def update(self, data: Any) -> None:
        self.loss = data["loss"]


@pytest.fixture(autouse=True)
def no_disabled_sync() -> Iterator[None]:
    """A sync_wait that had to be disabled warns: none of these tests may need it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=r"(sync_wait\(|Timeout happened in sync_wait)", category=RuntimeWarning)
        yield


def test_simple_sync_wait() -> None:
    batch_size = 4
    dataset = ds.GeneratorDataset(gen, column_names=["input"])

    aug = Augment(0)
    dataset = dataset.sync_wait(condition_name="policy", callback=aug.update)
    dataset = dataset.map(input_columns=["input"], operations=[aug.preprocess])
    dataset = dataset.batch(batch_size)
    count = 0
    for data in dataset.create_dict_iterator(num_epochs=1):
        assert data["input"][0] == count
        count += batch_size
        data = {"loss": count}
        dataset.sync_update(condition_name="policy", data=data)
    assert count == 100 and aug.loss == 100


def test_simple_shuffle_sync() -> None:
    shuffle_size = 4
    batch_size = 10

    dataset = ds.GeneratorDataset(gen, column_names=["input"])

    aug = Augment(0)
    dataset = dataset.shuffle(shuffle_size)
    dataset = dataset.sync_wait(condition_name="policy", callback=aug.update)
    dataset = dataset.map(input_columns=["input"], operations=[aug.preprocess])
    dataset = dataset.batch(batch_size)

    count = 0
    seen = []
    for data in dataset.create_dict_iterator(num_epochs=1):
        count += 1
        seen.extend(int(v) for v in data["input"])
        data = {"loss": count}
        dataset.sync_update(condition_name="policy", data=data)
    assert count == 10 and sorted(seen) == list(range(100))


def test_two_sync() -> None:
    batch_size = 6

    dataset = ds.GeneratorDataset(gen, column_names=["input"])

    aug = Augment(0)
    # notice that with our design, we need to have step_size = shuffle size
    dataset = dataset.sync_wait(condition_name="every batch", callback=aug.update)

    dataset = dataset.map(input_columns=["input"], operations=[aug.preprocess])

    dataset = dataset.sync_wait(num_batch=2, condition_name="every 2 batches")

    dataset = dataset.batch(batch_size)

    count = 0
    for data in dataset.create_dict_iterator(num_epochs=1):
        count += 1
        data = {"loss": count}
        dataset.sync_update(condition_name="every batch", data=data)
        if count % 2 == 0:
            dataset.sync_update(condition_name="every 2 batches")
    assert count == 17 and aug.loss == 17


def test_sync_epoch() -> None:
    batch_size = 30
    dataset = ds.GeneratorDataset(gen, column_names=["input"])

    aug = Augment(0)
    dataset = dataset.sync_wait(condition_name="policy", callback=aug.update)
    dataset = dataset.map(input_columns=["input"], operations=[aug.preprocess])
    dataset = dataset.batch(batch_size, drop_remainder=True)

    for _ in range(3):
        aug.update({"loss": 0})
        count = 0
        for data in dataset.create_dict_iterator(num_epochs=1):
            assert data["input"][0] == count
            count += batch_size
            data = {"loss": count}
            dataset.sync_update(condition_name="policy", data=data)
        assert count == 90


def test_multiple_iterators() -> None:
    batch_size = 30
    dataset = ds.GeneratorDataset(gen, column_names=["input"])

    aug = Augment(0)
    dataset = dataset.sync_wait(condition_name="policy", callback=aug.update)
    dataset = dataset.map(input_columns=["input"], operations=[aug.preprocess])
    dataset = dataset.batch(batch_size, drop_remainder=True)
    # 2nd dataset
    dataset2 = ds.GeneratorDataset(gen, column_names=["input"])

    aug = Augment(0)
    dataset2 = dataset2.sync_wait(condition_name="policy", callback=aug.update)
    dataset2 = dataset2.map(input_columns=["input"], operations=[aug.preprocess])
    dataset2 = dataset2.batch(batch_size, drop_remainder=True)

    pairs = 0
    for item1, item2 in zip(dataset.create_dict_iterator(num_epochs=1), dataset2.create_dict_iterator(num_epochs=1)):
        assert item1["input"][0] == item2["input"][0]
        data1 = {"loss": item1["input"][0]}
        data2 = {"loss": item2["input"][0]}
        dataset.sync_update(condition_name="policy", data=data1)
        dataset2.sync_update(condition_name="policy", data=data2)
        pairs += 1
    assert pairs == 3 and aug.loss == 60


def test_sync_exception_01() -> None:
    shuffle_size = 4

    dataset = ds.GeneratorDataset(gen, column_names=["input"])

    aug = Augment(0)
    dataset = dataset.sync_wait(condition_name="policy", callback=aug.update)
    dataset = dataset.map(input_columns=["input"], operations=[aug.preprocess])

    with pytest.raises(RuntimeError) as e:
        dataset.shuffle(shuffle_size)
    assert "No shuffle after sync operators" in str(e.value)
    with pytest.raises(RuntimeError, match="No shuffle after sync operators"):
        dataset.batch(2).shuffle(shuffle_size)


def test_sync_exception_02() -> None:
    dataset = ds.GeneratorDataset(gen, column_names=["input"])

    aug = Augment(0)
    dataset = dataset.sync_wait(condition_name="every batch", callback=aug.update)

    dataset = dataset.map(input_columns=["input"], operations=[aug.preprocess])

    with pytest.raises(RuntimeError) as e:
        dataset.sync_wait(num_batch=2, condition_name="every batch")
    assert "Condition name is already in use" in str(e.value)


def test_sync_exception_03() -> None:
    dataset = ds.GeneratorDataset(gen, column_names=["input"])

    aug = Augment(0)
    # try to create dataset with batch_size < 0
    with pytest.raises(ValueError) as e:
        dataset.sync_wait(condition_name="every batch", num_batch=-1, callback=aug.update)
    assert "num_batch need to be greater than 0." in str(e.value)


def test_sync_exception_04() -> None:
    dataset = ds.GeneratorDataset(gen, column_names=["input"])

    aug = Augment(0)
    # try to create dataset with batch_size < 0
    dataset = dataset.sync_wait(condition_name="every batch", callback=aug.update)
    dataset = dataset.map(input_columns=["input"], operations=[aug.preprocess])
    count = 0
    with pytest.raises(RuntimeError) as e:
        for _ in dataset.create_dict_iterator(num_epochs=1):
            count += 1
            data = {"loss": count}
            dataset.sync_update(condition_name="every batch", num_batch=-1, data=data)
    assert "Sync_update batch size can only be positive" in str(e.value)


def test_sync_exception_05() -> None:
    dataset = ds.GeneratorDataset(gen, column_names=["input"])
    count = 0
    aug = Augment(0)
    # try to create dataset with batch_size < 0
    dataset = dataset.sync_wait(condition_name="every batch", callback=aug.update)
    dataset = dataset.map(input_columns=["input"], operations=[aug.preprocess])
    with pytest.raises(RuntimeError) as e:
        for _ in dataset.create_dict_iterator(num_epochs=1):
            dataset.disable_sync()
            count += 1
            data = {"loss": count}
            dataset.disable_sync()
            dataset.sync_update(condition_name="every", data=data)
    assert "Condition name not found" in str(e.value)


def test_sync_timeout() -> None:
    # MindSpore: the row waits callback_timeout seconds, then a warning and the sync_wait is disabled.
    dataset = ds.GeneratorDataset(gen, column_names=["input"]).sync_wait(condition_name="policy").batch(10)
    with callback_timeout(0.2), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = in_thread(lambda: [int(v) for batch in dataset.create_tuple_iterator(num_epochs=1) for v in batch[0]])
    assert rows == list(range(100))
    assert [str(w.message)[:40] for w in caught] == ["Timeout happened in sync_wait, maybe dat"]


def test_sync_timeout_in_the_thread_that_calls_sync_update() -> None:
    # Nothing else could call sync_update: nbcallback warns and disables the sync_wait at once.
    dataset = ds.GeneratorDataset(gen, column_names=["input"]).sync_wait(condition_name="policy").batch(10)
    with pytest.warns(RuntimeWarning, match="sync_update"):
        rows = [int(v) for batch in dataset.create_tuple_iterator(num_epochs=1) for v in batch[0]]
    assert rows == list(range(100))
