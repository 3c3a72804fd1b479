"""Ported from mindspore-ai/mindspore tests/ut/python/dataset/test_datasets_sharding.py.

MindSpore shards its test folders. test_imagefolder_shardings reads the
labels of testPK/data (44 images, 11 per class; ``class_indexing`` keeping two
folders leaves 22) with ``num_shards``/``shard_id``; here a built-in source
(:class:`tests.dataset.mindspore.test_sampler.Manifest`) of the same labels.
test_voc_shardings reads the first image dimension of testVOC2012's ten
images through a ``DistributedSampler``; here a NumpySlicesDataset of those
ten numbers. Assertions are kept.

Not ported: test_tfrecord_shardings1/4 (TFRecord files: no TFRecordDataset),
test_cifar10/cifar100/mnist_shardings (they assert the labels MindSpore's
own test folders hold), and test_manifest_shardings: its shard 1 of 5 rows
is padded to 3 rows by wrapping around, as MindSpore pads every shard, while
nbcallback pads ``num_shards`` shards only under ``torch.distributed`` (in
one process they are the disjoint strided shards; a ``DistributedSampler``
pads, as test_voc_shardings shows).
"""
from __future__ import annotations

import pytest

import nbcallback.dataset as ds

from .test_sampler import Manifest

VOC_FIRST_DIMS = [2268, 2268, 2268, 2268, 642, 607, 561, 596, 612, 2268]


@pytest.fixture(autouse=True)
def seeded() -> None:
    """MindSpore's tests run under its engine's fixed default seed; here a fixed seed, so no draw can flake."""
    ds.config.set_seed(58)


def test_imagefolder_shardings() -> None:
    def sharding_config(
        num_shards: int, shard_id: int, num_samples: int | None, shuffle: bool, class_index: dict[str, int],
        repeat_cnt: int = 1,
    ) -> list[int]:
        classes = 2 if class_index else 4  # class_indexing {"class1": 111, "class2": 999}: two folders
        data1 = Manifest(
            labels=[i // 11 for i in range(11 * classes)],
            num_samples=num_samples,
            num_shards=num_shards,
            shard_id=shard_id,
            shuffle=shuffle,
        ).repeat(repeat_cnt)
        return [int(item["label"]) for item in data1.create_dict_iterator(num_epochs=1, output_numpy=True)]

    # total 44 rows in dataset
    assert sharding_config(4, 0, 5, False, dict()) == [0, 0, 0, 1, 1]  # 5 rows
    assert sharding_config(4, 0, 12, False, dict()) == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3]  # 11 rows
    assert sharding_config(4, 3, None, False, dict()) == [0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]  # 11 rows
    assert sharding_config(1, 0, 55, False, dict()) == [0] * 11 + [1] * 11 + [2] * 11 + [3] * 11  # 44 rows
    assert sharding_config(2, 0, 55, False, dict()) == [0] * 6 + [1] * 5 + [2] * 6 + [3] * 5  # 22 rows
    assert sharding_config(2, 1, 55, False, dict()) == [0] * 5 + [1] * 6 + [2] * 5 + [3] * 6  # 22 rows
    # total 22 in dataset rows because of class indexing which takes only 2 folders
    assert len(sharding_config(4, 0, None, True, {"class1": 111, "class2": 999})) == 6
    assert len(sharding_config(4, 2, 3, True, {"class1": 111, "class2": 999})) == 3
    # test with repeat
    assert sharding_config(4, 0, 12, False, dict(), 3) == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3] * 3
    assert sharding_config(4, 0, 5, False, dict(), 5) == [0, 0, 0, 1, 1] * 5
    assert len(sharding_config(5, 1, None, True, {"class1": 111, "class2": 999}, 4)) == 20


def test_voc_shardings() -> None:
    def sharding_config(
        num_shards: int, shard_id: int, num_samples: int | None, shuffle: bool, repeat_cnt: int = 1
    ) -> list[int]:
        sampler = ds.DistributedSampler(num_shards, shard_id, shuffle=shuffle, num_samples=num_samples)
        data1 = ds.NumpySlicesDataset({"image": VOC_FIRST_DIMS}, sampler=sampler).repeat(repeat_cnt)
        return [int(item["image"]) for item in data1.create_dict_iterator(num_epochs=1, output_numpy=True)]

    # 3 shard_workers, 0th worker will get 0-th, 3nd, 6th and 9th image
    assert sharding_config(3, 0, None, False, 2) == [2268, 2268, 561, 2268] * 2
    # 3 shard_workers, 1st worker will get 1-st, 4nd, 7th and 0th image, the last one goes back bc of rounding up
    assert sharding_config(3, 1, 5, False, 3) == [2268, 642, 596, 2268] * 3
    # 3 shard_workers, 2nd worker will get 2nd, 5th, 8th and 11th (which is 1st)
    # then takes the first 2 bc num_samples = 2
    assert sharding_config(3, 2, 2, False, 4) == [2268, 607] * 4
    # test that each epoch, each shard_worker returns a different sample
    assert len(sharding_config(2, 0, None, True, 1)) == 5
    assert len(set(sharding_config(11, 0, None, True, 10))) > 1
