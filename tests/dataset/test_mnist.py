"""MnistDataset: columns, usage, shuffling, num_samples, sharding, validation and bad files."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import torch

from nbcallback.dataset import IdxError, MnistDataset
from tests.dataset.idx_files import idx_bytes, tiny_arrays, write_idx


def labels_of(dataset: MnistDataset) -> list[int]:
    """One epoch's label order (ids of the tiny datasets)."""
    return [int(label) for _, label in dataset]


# --------------------------------------------------------------------------- full MNIST


def test_full_mnist_columns(mnist_root: Path) -> None:
    train = MnistDataset(mnist_root / "train", shuffle=False)
    assert train.get_dataset_size() == len(train) == 60000
    assert train.get_col_names() == ["image", "label"]
    image, label = next(iter(train))
    assert image.shape == (28, 28, 1) and image.dtype == torch.uint8
    assert label.shape == () and label.dtype == torch.uint32
    assert int(label) == 5  # the first training digit of MNIST is a 5
    test = MnistDataset(mnist_root / "test", usage="test")
    assert test.get_dataset_size() == 10000
    with pytest.raises(FileNotFoundError, match=r"t10k-images-idx3-ubyte \(or t10k-images-idx3-ubyte.gz\) not found in .*train"):
        MnistDataset(mnist_root / "train", usage="test")


# --------------------------------------------------------------------------- usage


def test_usage(make_mnist: Callable[..., Path]) -> None:
    folder = make_mnist(train=100, test=30)
    assert labels_of(MnistDataset(folder, shuffle=False)) == list(range(100)) + list(range(100, 130))
    assert labels_of(MnistDataset(folder, usage="all", shuffle=False)) == list(range(130))
    assert labels_of(MnistDataset(folder, usage="train", shuffle=False)) == list(range(100))
    assert labels_of(MnistDataset(folder, usage="test", shuffle=False)) == list(range(100, 130))
    only_test = make_mnist(train=None, test=30, name="only_test")
    assert MnistDataset(only_test).get_dataset_size() == 30
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        MnistDataset(only_test, usage="all")


def test_gz_files_read_like_plain(make_mnist: Callable[..., Path]) -> None:
    plain = MnistDataset(make_mnist(gz=False, name="plain"), shuffle=False)
    packed = MnistDataset(make_mnist(gz=True, name="packed"), shuffle=False)
    for (a, b), (c, d) in zip(plain, packed):
        assert torch.equal(a, c) and torch.equal(b, d)


def test_image_content(make_mnist: Callable[..., Path]) -> None:
    for image, label in MnistDataset(make_mnist(), usage="train", shuffle=False):
        assert bool((image == int(label)).all())


# --------------------------------------------------------------------------- order


def test_shuffle_is_default_new_each_epoch_and_seeded(make_mnist: Callable[..., Path]) -> None:
    dataset = MnistDataset(make_mnist(), usage="train")
    torch.manual_seed(0)
    first, second = labels_of(dataset), labels_of(dataset)
    assert sorted(first) == sorted(second) == list(range(100))
    assert first != second and first != list(range(100))
    torch.manual_seed(0)
    again = MnistDataset(make_mnist(), usage="train")
    assert labels_of(again) == first and labels_of(again) == second


def test_shuffle_matches_a_bare_randperm(make_mnist: Callable[..., Path]) -> None:
    # Each epoch seeds a private generator from torch's global one (EpochContext).
    dataset = MnistDataset(make_mnist(), usage="train")
    torch.manual_seed(3)
    order = labels_of(dataset)
    torch.manual_seed(3)
    generator = torch.Generator()
    generator.manual_seed(int(torch.randint(0, 2**62, (1,)).item()))
    assert order == torch.randperm(100, generator=generator).tolist()


def test_num_samples(make_mnist: Callable[..., Path]) -> None:
    folder = make_mnist()
    assert labels_of(MnistDataset(folder, usage="train", num_samples=7, shuffle=False)) == list(range(7))
    shuffled = MnistDataset(folder, usage="train", num_samples=7)
    assert shuffled.get_dataset_size() == 7
    picked = labels_of(shuffled)
    assert len(set(picked)) == 7
    assert MnistDataset(folder, usage="train", num_samples=1000).get_dataset_size() == 100


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("num_shards", [1, 3, 4])
def test_shards_disjoint_and_covering(make_mnist: Callable[..., Path], shuffle: bool, num_shards: int) -> None:
    folder = make_mnist()
    shards = []
    for shard_id in range(num_shards):
        torch.manual_seed(1)  # every shard built under the same seed, as on DDP ranks
        shards.append(MnistDataset(folder, usage="train", shuffle=shuffle, num_shards=num_shards, shard_id=shard_id))
    for _epoch in range(2):
        seen = [labels_of(shard) for shard in shards]
        assert sum(len(s) for s in seen) == 100
        assert sorted(x for s in seen for x in s) == list(range(100))
        for shard, rows in zip(shards, seen):
            assert len(rows) == shard.get_dataset_size()
            assert max(len(s) for s in seen) - min(len(s) for s in seen) <= 1
    if shuffle and num_shards > 1:
        assert labels_of(shards[0]) != labels_of(shards[0])  # a new permutation every epoch


def test_num_samples_is_per_shard(make_mnist: Callable[..., Path]) -> None:
    folder = make_mnist()
    shards = []
    for k in range(4):
        torch.manual_seed(5)  # shards agree on the permutation when seeded alike (as DDP ranks are)
        shards.append(MnistDataset(folder, usage="train", num_samples=10, num_shards=4, shard_id=k))
    assert [s.get_dataset_size() for s in shards] == [10] * 4
    assert len({x for s in shards for x in labels_of(s)}) == 40


def test_default_shard_hook(make_mnist: Callable[..., Path]) -> None:
    dataset = MnistDataset(make_mnist())
    assert dataset._default_shard() == (None, None)

    class TwoRanks(MnistDataset):
        def _default_shard(self) -> tuple[int | None, int | None]:
            return 2, 1

    assert labels_of(TwoRanks(make_mnist(), usage="train", shuffle=False)) == list(range(1, 100, 2))


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"num_shards": 2}, ValueError, "num_shards is specified and currently requires shard_id as well"),
        ({"shard_id": 0}, ValueError, "shard_id is specified but num_shards is not"),
        ({"num_shards": 2, "shard_id": 2}, ValueError, r"Input shard_id is not within the required interval of \[0, 1\]\. Got 2"),
        ({"num_shards": 2, "shard_id": -1}, ValueError, r"Input shard_id is not within the required interval of \[0, 1\]"),
        ({"num_shards": 0, "shard_id": 0}, ValueError, r"Input num_shards is not within the required interval of \[1, 2147483647\]"),
        ({"num_shards": True, "shard_id": 0}, TypeError, r"Argument num_shards with value True is not of type \[<class 'int'>\]"),
        ({"num_shards": 2, "shard_id": 1.0}, TypeError, r"Argument shard_id with value 1.0"),
        ({"num_samples": 0}, ValueError, r"Input num_samples is not within the required interval of \[1, 2147483647\]"),
        ({"num_samples": "5"}, TypeError, r"Argument num_samples with value '5'"),
        ({"shuffle": "yes"}, TypeError, r"Argument shuffle with value 'yes' is not of type \[<class 'bool'>\]"),
        ({"usage": "val"}, ValueError, r"Input usage is not within the valid set of \['train', 'test', 'all'\], but got 'val'"),
        ({"usage": 1}, TypeError, r"Argument usage with value 1"),
        ({"num_parallel_workers": 0}, ValueError, r"Input num_parallel_workers is not within"),
        ({"sampler": object()}, TypeError, r"Unsupported sampler object of type \(<class 'object'>\)"),
        ({"sampler": [0], "shuffle": False}, RuntimeError, "sampler and shuffle cannot be specified at the same time"),
        ({"cache": object()}, NotImplementedError, "'cache' is not supported"),
    ],
)
def test_argument_validation(make_mnist: Callable[..., Path], kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        MnistDataset(make_mnist(), **kwargs)


def test_dataset_dir_type() -> None:
    with pytest.raises(TypeError, match="Argument dataset_dir with value None"):
        MnistDataset(None)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- bad files


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"dataset_dir '.*nowhere' does not exist"):
        MnistDataset(tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileNotFoundError, match=r"dataset_dir '.*file' is not a folder"):
        MnistDataset(tmp_path / "file")


def test_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no MNIST files in '.*'; expected train-images-idx3-ubyte"):
        MnistDataset(tmp_path)


def test_missing_labels_file(make_mnist: Callable[..., Path]) -> None:
    folder = make_mnist()
    (folder / "train-labels-idx1-ubyte").unlink()
    with pytest.raises(FileNotFoundError, match=r"train-labels-idx1-ubyte \(or train-labels-idx1-ubyte.gz\) not found in"):
        MnistDataset(folder, usage="train")


def test_swapped_files_wrong_magic(make_mnist: Callable[..., Path]) -> None:
    folder = make_mnist()
    images = folder / "train-images-idx3-ubyte"
    labels = folder / "train-labels-idx1-ubyte"
    data = images.read_bytes()
    images.write_bytes(labels.read_bytes())
    labels.write_bytes(data)
    with pytest.raises(IdxError, match=r"train-images-idx3-ubyte: wrong IDX magic number 0x00000801 .*expected 0x00000803"):
        MnistDataset(folder, usage="train")


def test_truncated_images(make_mnist: Callable[..., Path]) -> None:
    folder = make_mnist()
    path = folder / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(IdxError, match=r"train-images-idx3-ubyte: truncated IDX file or corrupt header: .*78400 bytes of data\) but the file holds only 78390"):
        MnistDataset(folder, usage="train")


def test_truncated_gz_images_fail_when_read(make_mnist: Callable[..., Path]) -> None:
    import gzip

    folder = make_mnist(gz=True)
    path = folder / "train-images-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes())[:-10]))
    dataset = MnistDataset(folder, usage="train")  # sizes of gzip data are only known once read
    with pytest.raises(IdxError, match=r"train-images-idx3-ubyte.gz: truncated IDX file"):
        next(iter(dataset))


def test_absurd_image_count(make_mnist: Callable[..., Path]) -> None:
    folder = make_mnist()
    images, _ = tiny_arrays(3)
    (folder / "train-images-idx3-ubyte").write_bytes(idx_bytes(images, dims=(10**9, 28, 28)))
    with pytest.raises(IdxError, match=r"the header declares shape \(1000000000, 28, 28\) \(784000000000 bytes of data\) but the file holds only 2352"):
        MnistDataset(folder, usage="train")


def test_count_mismatch(make_mnist: Callable[..., Path]) -> None:
    folder = make_mnist()
    _, labels = tiny_arrays(99)
    write_idx(folder / "train-labels-idx1-ubyte", labels)
    with pytest.raises(ValueError, match=r"image/label count mismatch: .*train-images-idx3-ubyte holds 100 images but .*train-labels-idx1-ubyte holds 99 labels"):
        MnistDataset(folder, usage="train")


def test_train_and_test_sizes_must_agree(make_mnist: Callable[..., Path]) -> None:
    folder = make_mnist()
    write_idx(folder / "t10k-images-idx3-ubyte", np.zeros((30, 14, 14), np.uint8))
    with pytest.raises(ValueError, match=r"the train and test images differ in size"):
        MnistDataset(folder)


def test_root_folder_hint(mnist_root: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no MNIST files in '.*MNIST_Data'.*Did you mean '.*MNIST_Data/train'"):
        MnistDataset(mnist_root)


def test_sampler_argument(make_mnist: Callable[..., Path]) -> None:
    import nbcallback.dataset as ds

    folder = make_mnist()
    for shard_id in range(4):
        torch.manual_seed(3)
        by_args = MnistDataset(folder, usage="train", num_shards=4, shard_id=shard_id)
        torch.manual_seed(3)
        by_sampler = MnistDataset(folder, usage="train", sampler=ds.DistributedSampler(4, shard_id))
        assert labels_of(by_sampler) == labels_of(by_args) and by_sampler.get_dataset_size() == 25
    ordered = MnistDataset(folder, usage="train", sampler=ds.SequentialSampler(start_index=95))
    assert labels_of(ordered) == [95, 96, 97, 98, 99] and ordered.get_dataset_size() == 5
    assert labels_of(MnistDataset(folder, usage="train", sampler=[7, 3])) == [7, 3]
