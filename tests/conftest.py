"""Fixtures shared by every test suite.

* Torch runs on one thread: on a shared 2-core machine the default of one
  thread per core can slow an epoch twenty-fold when the other core is busy.
* MNIST comes from a loopback mirror of ``../shared/data/MNIST_Data.zip``
  through :func:`nbcallback.dataset.download_mnist`, the real download path.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import torch

from tests.support.mirror import LoopbackServer, mnist_zip

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))


@pytest.fixture(scope="session")
def mnist_mirror(tmp_path_factory: pytest.TempPathFactory):
    """An HTTP server on 127.0.0.1 serving ``MNIST_Data.zip``; yields the zip's URL.

    ``NBCALLBACK_MNIST_URL`` is set for the session so kernels and subprocesses
    started by the tests download from it too.
    """
    folder = tmp_path_factory.mktemp("mirror")
    shutil.copy(mnist_zip(), folder / "MNIST_Data.zip")
    with LoopbackServer(folder) as server:
        url = f"{server.url}/MNIST_Data.zip"
        previous = os.environ.get("NBCALLBACK_MNIST_URL")
        os.environ["NBCALLBACK_MNIST_URL"] = url
        try:
            yield url
        finally:
            if previous is None:
                os.environ.pop("NBCALLBACK_MNIST_URL", None)
            else:
                os.environ["NBCALLBACK_MNIST_URL"] = previous


@pytest.fixture(scope="session")
def mnist_root(mnist_mirror: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the verified ``MNIST_Data/`` tree, downloaded once per session."""
    from nbcallback.dataset import download_mnist

    root = tmp_path_factory.mktemp("mnist")
    download_mnist(root, url=mnist_mirror, progress=False)
    return root / "MNIST_Data"
