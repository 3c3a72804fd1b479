"""The sampler classes on nbcallback's sources: sharding, seeding, errors, the fast path, sizes.

MindSpore's own sampler tests are ported in ``tests/dataset/mindspore/test_sampler.py``;
these check what a user of nbcallback relies on beyond them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch

import nbcallback.dataset as ds
from nbcallback.dataset import _fast_path, transforms, vision

torch.set_num_threads(1)


def labels_of(dataset: ds.Dataset) -> list[int]:
    """One epoch's ``label`` column (the tiny MNIST's labels are the row ids)."""
    return [int(item["label"]) for item in dataset.create_dict_iterator(num_epochs=1, output_numpy=True)]


class RandomAccess:
    """A random-access source for GeneratorDataset: row ``i`` is ``(i * 10, i)``."""

    def __init__(self, rows: int = 12) -> None:
        self.rows = rows

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        return np.array(index * 10), np.array(index)

    def __len__(self) -> int:
        return self.rows


def mnist(make_mnist: Callable[..., Path], **kwargs: Any) -> ds.MnistDataset:
    return ds.MnistDataset(make_mnist(), usage="train", **kwargs)


# --------------------------------------------------------------------------- sharding


@pytest.mark.parametrize("shuffle", [True, False])
def test_distributed_sampler_reads_the_rows_num_shards_reads_on_mnist(
    make_mnist: Callable[..., Path], shuffle: bool
) -> None:
    for shard_id in range(4):  # 100 rows, 4 shards: equal shards, no padding either way
        torch.manual_seed(11)  # every shard (rank) built under the same seed
        by_args = mnist(make_mnist, num_shards=4, shard_id=shard_id, shuffle=shuffle)
        torch.manual_seed(11)
        by_sampler = mnist(make_mnist)
        by_sampler.use_sampler(ds.DistributedSampler(4, shard_id, shuffle=shuffle))
        assert by_sampler.get_dataset_size() == by_args.get_dataset_size() == 25
        for _epoch in range(2):
            assert labels_of(by_sampler) == labels_of(by_args)


@pytest.mark.parametrize("shuffle", [True, False])
def test_distributed_sampler_reads_the_rows_num_shards_reads_on_a_generator(shuffle: bool) -> None:
    for shard_id in range(3):
        torch.manual_seed(5)
        sampler = ds.DistributedSampler(3, shard_id, shuffle=shuffle)
        by_sampler = ds.GeneratorDataset(RandomAccess(12), ["x", "label"], sampler=sampler)
        torch.manual_seed(5)
        by_args = ds.GeneratorDataset(RandomAccess(12), ["x", "label"], num_shards=3, shard_id=shard_id, shuffle=shuffle)
        first, second = labels_of(by_sampler), labels_of(by_sampler)
        assert [first, second] == [labels_of(by_args), labels_of(by_args)]
        if shuffle:
            assert first != second  # a new permutation every epoch, the same on every shard


def test_shards_of_a_distributed_sampler_cover_the_rows_and_reshuffle_together() -> None:
    def shards(epochs: int) -> list[list[list[int]]]:
        out = []
        for shard_id in range(2):
            torch.manual_seed(3)
            data = ds.NumpySlicesDataset({"label": list(range(10))}, sampler=ds.DistributedSampler(2, shard_id))
            out.append([labels_of(data) for _ in range(epochs)])
        return out

    zero, one = shards(3)
    for epoch in range(3):
        assert sorted(zero[epoch] + one[epoch]) == list(range(10))
    assert zero[0] != zero[1]


def test_distributed_sampler_pads_shards_as_mindspore_where_num_shards_in_one_process_does_not() -> None:
    # 10 rows in 3 shards: MindSpore's DistributedSampler wraps around to give every shard ceil(10/3) = 4 rows;
    # nbcallback's num_shards pads only under torch.distributed (one process: disjoint strided shards).
    padded = ds.NumpySlicesDataset({"label": list(range(10))}, sampler=ds.DistributedSampler(3, 2, shuffle=False))
    strided = ds.NumpySlicesDataset({"label": list(range(10))}, num_shards=3, shard_id=2, shuffle=False)
    assert labels_of(padded) == [2, 5, 8, 1] and padded.get_dataset_size() == 4
    assert labels_of(strided) == [2, 5, 8] and strided.get_dataset_size() == 3


def test_num_samples_caps_each_distributed_shard() -> None:
    data = ds.NumpySlicesDataset({"label": list(range(20))}, sampler=ds.DistributedSampler(4, 1, False, num_samples=3))
    assert labels_of(data) == [1, 5, 9] and data.get_dataset_size() == 3


def test_split_then_distributed_sampler_shards_the_part() -> None:
    data = ds.NumpySlicesDataset({"label": list(range(10))}, shuffle=False)
    train, test = data.split([0.6, 0.4], randomize=False)
    train.use_sampler(ds.DistributedSampler(2, 1, shuffle=False))
    assert labels_of(train) == [1, 3, 5] and train.get_dataset_size() == 3
    assert labels_of(test) == [6, 7, 8, 9]


def test_a_dataset_sharded_by_a_sampler_is_not_split_as_mindspore_refuses_it() -> None:
    data = ds.NumpySlicesDataset({"label": list(range(10))}, sampler=ds.DistributedSampler(2, 0, shuffle=False))
    with pytest.raises(RuntimeError, match="should not be sharded before split"):
        data.split([0.5, 0.5], randomize=False)


def test_add_sampler_samples_the_current_order(make_mnist: Callable[..., Path]) -> None:
    data = mnist(make_mnist, shuffle=False)
    data.add_sampler(ds.DistributedSampler(10, 3, shuffle=False))
    assert labels_of(data) == list(range(3, 100, 10)) and data.get_dataset_size() == 10
    data = mnist(make_mnist, shuffle=False)
    data.use_sampler(ds.SequentialSampler(start_index=90))
    assert labels_of(data) == list(range(90, 100)) and data.get_dataset_size() == 10


# --------------------------------------------------------------------------- seeding


def test_random_sampler_reads_the_order_the_default_shuffle_reads(make_mnist: Callable[..., Path]) -> None:
    ds.config.set_seed(21)
    default = mnist(make_mnist)
    expected = [labels_of(default), labels_of(default)]
    ds.config.set_seed(21)
    sampled = mnist(make_mnist)
    sampled.use_sampler(ds.RandomSampler())
    assert [labels_of(sampled), labels_of(sampled)] == expected
    assert expected[0] != expected[1]


SAMPLERS: dict[str, Callable[[], ds.BuiltinSampler]] = {
    "random": lambda: ds.RandomSampler(),
    "random-replacement": lambda: ds.RandomSampler(replacement=True, num_samples=30),
    "subset-random": lambda: ds.SubsetRandomSampler(list(range(0, 100, 3))),
    "weighted": lambda: ds.WeightedRandomSampler([float(i % 7) for i in range(100)], num_samples=40),
    "weighted-no-replacement": lambda: ds.WeightedRandomSampler([1.0] * 50, 20, replacement=False),
    "distributed": lambda: ds.DistributedSampler(3, 1),
    "pk": lambda: ds.PKSampler(3, shuffle=True),
    "chain": lambda: _chain(),
}


def _chain() -> ds.BuiltinSampler:
    parent = ds.DistributedSampler(2, 0, shuffle=False)
    parent.add_child(ds.RandomSampler(num_samples=50))
    return parent


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_random_samplers_are_seeded_by_set_seed_and_reshuffle_every_epoch(
    make_mnist: Callable[..., Path], name: str
) -> None:
    folder = make_mnist()

    def run() -> list[list[int]]:
        ds.config.set_seed(99)
        data = ds.MnistDataset(folder, usage="train")
        data.use_sampler(SAMPLERS[name]())
        size = data.get_dataset_size()
        epochs = [labels_of(data) for _ in range(3)]
        assert all(len(epoch) == size for epoch in epochs)
        return epochs

    first = run()
    assert run() == first
    assert first[0] != first[1] or first[1] != first[2]


def test_get_dataset_size_leaves_the_random_streams_alone(make_mnist: Callable[..., Path]) -> None:
    def orders(ask_size: bool) -> list[int]:
        ds.config.set_seed(4)
        data = mnist(make_mnist)
        sampler = ds.PKSampler(2)
        sampler.add_child(ds.RandomSampler(num_samples=60))
        data.use_sampler(sampler)
        if ask_size:
            assert data.get_dataset_size() == 120  # 60 rows of 60 classes (label = row id), 2 each
        return labels_of(data)

    assert orders(True) == orders(False)


def test_pk_sampler_reads_num_val_rows_of_every_class(make_mnist: Callable[..., Path]) -> None:
    data = mnist(make_mnist)  # labels 0..99: the tiny MNIST's label is the row id
    data.use_sampler(ds.PKSampler(2, num_samples=7))
    labels = labels_of(data)
    assert labels == [0, 0, 1, 1, 2, 2, 3] and data.get_dataset_size() == 7


# --------------------------------------------------------------------------- errors


class Builtin(ds.SourceDataset):
    """A built-in source (as MnistDataset): MindSpore's RuntimeError rules for sampler arguments."""

    def _source_col_names(self) -> list[str]:
        return ["label"]

    def _source_rows(self) -> int:
        return 6

    def _load_columns(self) -> dict[str, np.ndarray]:
        return {"label": np.arange(6)}


@pytest.mark.parametrize(
    ("build", "error", "words"),
    [
        (lambda: Builtin(sampler=ds.RandomSampler(), shuffle=True), RuntimeError,
         r"sampler and shuffle cannot be specified at the same time\. .*pass sampler= alone"),
        (lambda: Builtin(sampler=[1, 2], num_shards=2, shard_id=0), RuntimeError,
         r"sampler and sharding cannot be specified at the same time\. .*pass sampler= alone"),
        (lambda: Builtin(sampler=[1, 2], num_samples=1), RuntimeError,
         r"sampler and num_samples cannot be specified at the same time"),
        (lambda: ds.NumpySlicesDataset([1, 2], sampler=ds.RandomSampler(), num_samples=1), ValueError,
         r"Conflicting arguments during sampler assignments\. num_samples: 1, .*pass sampler= alone"),
        (lambda: ds.GeneratorDataset(RandomAccess(), ["x", "l"], sampler=ds.SequentialSampler(), shuffle=False),
         ValueError, r"Conflicting arguments during sampler assignments\. .*shuffle: False"),
        (lambda: ds.GeneratorDataset(RandomAccess(), ["x", "l"], sampler=ds.PKSampler(2)), ValueError,
         r"GeneratorDataset doesn't support PKSampler\. .*use MnistDataset"),
        (lambda: ds.GeneratorDataset(iter([(1,)]), ["x"], sampler=ds.SequentialSampler()), ValueError,
         r"sampler is not supported if source does not have attribute '__getitem__'"),
        (lambda: ds.NumpySlicesDataset([1, 2], sampler="ab"), TypeError,
         r"Unsupported sampler object of type \(<class 'str'>\)\. Pass a sampler"),
        (lambda: ds.SequentialSampler(start_index=-1), RuntimeError, r"start_index_ must be greater than or equal to 0"),
        (lambda: ds.SequentialSampler(num_samples=-2), ValueError, r"num_samples exceeds the boundary .*pass an int >= 0"),
        (lambda: ds.RandomSampler(replacement=1), TypeError, r"replacement must be a boolean value but was: 1\. Pass True"),
        (lambda: ds.DistributedSampler(0, 0), RuntimeError, r"num_shards must be greater than 0, but got: 0"),
        (lambda: ds.DistributedSampler(2, 2), RuntimeError, r"shard_id must be in range \[0, 2\), but got: 2"),
        (lambda: ds.DistributedSampler(2, 0, shuffle="yes"), TypeError, r"shuffle must be a boolean value"),
        (lambda: ds.PKSampler(0), RuntimeError, r"PKSampler: num_val must be greater than 0, but got: 0"),
        (lambda: ds.PKSampler(2, num_class=3), NotImplementedError, r"num_class .*leave it None"),
        (lambda: ds.WeightedRandomSampler([]), RuntimeError, r"weights vector must not be empty"),
        (lambda: ds.WeightedRandomSampler([1, -1]), RuntimeError, r"must not contain negative numbers, got: weights\[1\] = -1"),
        (lambda: ds.WeightedRandomSampler([0, 0.0]), RuntimeError, r"must not be all zero"),
        (lambda: ds.WeightedRandomSampler(["a"]), TypeError, r"type of weights element must be number, but got w\[0\]: a"),
        (lambda: ds.SubsetSampler([1, 2.0]), TypeError, r"Type of indices element must be int, but got list\[1\]: 2\.0"),
    ],
)
def test_errors_name_the_argument_and_the_fix(build: Callable[[], Any], error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        build()


@pytest.mark.parametrize(
    ("sampler", "words"),
    [
        (lambda: ds.SequentialSampler(start_index=6), r"start_index must be less than num_rows, but got start_index: 6, "
         r"num_rows: 6\. Give SequentialSampler a start_index below 6"),
        (lambda: ds.WeightedRandomSampler([1.0] * 7), r"size of sample weights must be less than or equal to num of data.*"
         r"weight size: 7, num of data: 6"),
        (lambda: ds.WeightedRandomSampler([1, 1, 0], num_samples=3, replacement=False),
         r"without replacement.*weight size: 2 \(non-zero\), num_samples: 3\. Lower num_samples, or pass replacement=True"),
        (lambda: ds.IterSampler([0, 9]), r"Sample ID \(9\) is out of bound, expected range \[0, 5\]"),
    ],
)
def test_errors_when_the_pipeline_starts(sampler: Callable[[], ds.BuiltinSampler], words: str) -> None:
    data = Builtin(sampler=sampler())
    with pytest.raises(RuntimeError, match=words):
        list(data)


def test_use_sampler_on_a_pipeline_says_to_call_it_on_the_source() -> None:
    batched = ds.NumpySlicesDataset([1, 2, 3], shuffle=False).batch(2)
    with pytest.raises(AttributeError, match=r"BatchDataset\.use_sampler\(\): .*call use_sampler on that source"):
        batched.use_sampler(ds.SequentialSampler())
    with pytest.raises(TypeError, match="Input sampler can not be None"):
        ds.NumpySlicesDataset([1, 2, 3]).use_sampler(None)
    generated = ds.GeneratorDataset(RandomAccess(), ["x", "l"])
    with pytest.raises(RuntimeError, match="GeneratorDataset doesn't support PKSampler"):
        generated.add_sampler(ds.PKSampler(1))


# --------------------------------------------------------------------------- the fast path


def source(sampler: ds.BuiltinSampler) -> ds.Dataset:
    images = (np.arange(40 * 4 * 4, dtype=np.int64).reshape(40, 4, 4, 1) % 251).astype(np.uint8)
    return ds.NumpySlicesDataset({"image": images, "label": np.arange(40) % 10}, sampler=sampler)


def tutorial(sampler: ds.BuiltinSampler) -> ds.Dataset:
    return (
        source(sampler)
        .map([vision.Rescale(1 / 255, 0), vision.Normalize((0.5,), (0.25,)), vision.HWC2CHW()], "image")
        .map(transforms.TypeCast(torch.int64), "label")
        .batch(6)
    )


FAST_SAMPLERS: dict[str, Callable[[], ds.BuiltinSampler]] = {
    "sequential": lambda: ds.SequentialSampler(3, 30),
    "random": lambda: ds.RandomSampler(),
    "random-replacement": lambda: ds.RandomSampler(True, 25),
    "distributed": lambda: ds.DistributedSampler(3, 2),
    "subset": lambda: ds.SubsetSampler([5, 1, 1, 39]),
    "subset-random": lambda: ds.SubsetRandomSampler(range(0, 40, 2)),
    "weighted": lambda: ds.WeightedRandomSampler([1.0, 2.0, 0.0, 4.0] * 10),
    "chain": lambda: _chain_of_three(),
}


def _chain_of_three() -> ds.BuiltinSampler:
    top = ds.SequentialSampler(1, 20)
    middle = ds.DistributedSampler(2, 1)
    middle.add_child(ds.RandomSampler(num_samples=35))
    top.add_child(middle)
    return top


def epochs(dataset: ds.Dataset, count: int = 2) -> list[list[Any]]:
    return [list(dataset) for _ in range(count)]


@pytest.mark.parametrize("name", sorted(FAST_SAMPLERS))
def test_fast_path_with_a_sampler_matches_the_row_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ds.config.set_seed(7)
    fast_dataset = tutorial(FAST_SAMPLERS[name]())
    fast = epochs(fast_dataset)
    assert _fast_path.plan_for(fast_dataset) is not None  # samplers keep the whole-column path
    with monkeypatch.context() as patch:
        patch.setattr(_fast_path, "plan_for", lambda dataset: None)
        ds.config.set_seed(7)
        plain_dataset = tutorial(FAST_SAMPLERS[name]())
        plain = epochs(plain_dataset)
        assert plain_dataset.get_dataset_size() == fast_dataset.get_dataset_size() == len(plain[0])
    for fast_epoch, plain_epoch in zip(fast, plain):
        assert len(fast_epoch) == len(plain_epoch) > 0
        for f, p in zip(fast_epoch, plain_epoch):
            assert all(torch.equal(a, b) and a.dtype == b.dtype for a, b in zip(f, p))


def test_fast_path_with_pk_on_mnist_matches_the_row_path(
    make_mnist: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_mnist()

    def build() -> ds.Dataset:
        data = ds.MnistDataset(folder, usage="train")
        data.use_sampler(ds.PKSampler(1, shuffle=True, num_samples=40))
        return data.map(transforms.TypeCast(torch.int64), "label").batch(8)

    ds.config.set_seed(2)
    fast = epochs(build())
    monkeypatch.setattr(_fast_path, "plan_for", lambda dataset: None)
    ds.config.set_seed(2)
    plain = epochs(build())
    for f_epoch, p_epoch in zip(fast, plain):
        assert len(f_epoch) == 5
        assert all(torch.equal(a, b) for f, p in zip(f_epoch, p_epoch) for a, b in zip(f, p))


# --------------------------------------------------------------------------- sizes and user samplers


def test_get_dataset_size_follows_use_sampler() -> None:
    data = ds.NumpySlicesDataset(list(range(10)), shuffle=False)
    assert data.get_dataset_size() == 10
    data.use_sampler(ds.SubsetSampler([3, 4, 5]))
    assert data.get_dataset_size() == 3 and [int(r[0]) for r in data] == [3, 4, 5]
    data.use_sampler(ds.RandomSampler(num_samples=4))
    assert data.get_dataset_size() == 4 and len(list(data)) == 4


def test_a_python_sampler_is_reset_between_passes() -> None:
    class Reverse(ds.Sampler):
        def __init__(self) -> None:
            super().__init__()
            self.resets = 0

        def __iter__(self):  # type: ignore[no-untyped-def]
            return iter(range(self.dataset_size - 1, -1, -1))

        def reset(self) -> None:
            self.resets += 1

    sampler = Reverse()
    data = ds.NumpySlicesDataset(list(range(4)), sampler=sampler).repeat(3)
    assert [int(r[0]) for r in data] == [3, 2, 1, 0] * 3
    assert sampler.resets == 2 and data.get_dataset_size() == 12


def test_a_one_pass_iterator_of_ids_is_read_every_epoch() -> None:
    data = ds.NumpySlicesDataset(list(range(5)), sampler=iter([4, 0, 2]))
    assert [[int(r[0]) for r in data] for _ in range(2)] == [[4, 0, 2], [4, 0, 2]]


def test_get_num_samples_and_get_child_follow_mindspore() -> None:
    parent = ds.SequentialSampler(num_samples=5)
    assert parent.get_num_samples() == 5 and parent.get_child() is None
    child = ds.RandomSampler(num_samples=3)
    parent.add_child(child)
    assert parent.get_child() is child and parent.get_num_samples() == 3
    assert ds.SubsetSampler([1, 2, 3, 4]).get_num_samples() == 4
    assert ds.SubsetSampler([1, 2, 3, 4], 2).get_num_samples() == 2
    assert ds.RandomSampler().get_num_samples() is None
    assert parent.is_shuffled() and not parent.is_sharded()
    assert ds.DistributedSampler(2, 0).is_sharded() and not ds.DistributedSampler(2, 0, shuffle=False).is_shuffled()


def test_under_torch_distributed_a_shuffled_distributed_sampler_takes_the_agreed_seed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The ranks agree on rank 0's seed at the first epoch, as sharded sources do (tests/ddp runs the real agreement).
    from nbcallback.dataset import sources

    asked: list[str] = []

    def agree(seed: int, description: str) -> int:
        asked.append(description)
        return 12345

    sampler = ds.DistributedSampler(2, 1)
    data = ds.NumpySlicesDataset({"label": list(range(10))}, sampler=sampler)
    monkeypatch.setattr(sources, "_process_group_size", lambda: 2)
    monkeypatch.setattr(sources, "_agree_shard_seed", agree)
    first, second = labels_of(data), labels_of(data)
    assert sampler.seed == 12345 and len(asked) == 1 and "DistributedSampler(num_shards=2, shard_id=1" in asked[0]
    reference = ds.DistributedSampler(2, 1)
    reference.seed = 12345
    monkeypatch.setattr(sources, "_process_group_size", lambda: 1)
    expected = ds.NumpySlicesDataset({"label": list(range(10))}, sampler=reference)
    assert [first, second] == [labels_of(expected), labels_of(expected)]


def test_a_source_says_whether_it_is_shuffled_and_sharded() -> None:
    plain = ds.NumpySlicesDataset([1, 2, 3])
    assert plain.is_shuffled() and not plain.is_sharded()
    sharded = ds.NumpySlicesDataset([1, 2, 3], sampler=ds.DistributedSampler(2, 0, shuffle=False))
    assert sharded.is_sharded() and not sharded.is_shuffled()
    listed = ds.NumpySlicesDataset([1, 2, 3], sampler=[2, 0])
    assert not listed.is_shuffled() and not listed.is_sharded()
    assert ds.NumpySlicesDataset([1, 2, 3], num_shards=3, shard_id=1, shuffle=False).is_sharded()
