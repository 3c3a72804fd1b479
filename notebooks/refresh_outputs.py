"""Re-execute the tutorial notebooks in fresh kernels and save them with their outputs.

The committed outputs are what GitHub shows, so they must come from a real run,
never from editing. Run from the repository root::

    python notebooks/refresh_outputs.py                 # every notebook
    python notebooks/refresh_outputs.py 1_callback_tutorial.ipynb

MNIST is the copy in ``$NBCALLBACK_DATA`` or ``~/.cache/nbcallback`` (as for
the notebooks themselves); when missing it comes from ``$NBCALLBACK_MNIST_URL`` if set; otherwise the script serves
``../shared/data/MNIST_Data.zip`` on 127.0.0.1 (as the tests do) when that file
exists, else the kernels download from the default hosts. Kernels run with one
torch thread, like CI.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _mirror() -> contextlib.AbstractContextManager[str | None]:
    if os.environ.get("NBCALLBACK_MNIST_URL"):
        return contextlib.nullcontext(os.environ["NBCALLBACK_MNIST_URL"])
    sys.path.insert(0, str(REPO))
    from tests.support.mirror import LoopbackServer, mnist_zip

    try:
        source = mnist_zip()
    except FileNotFoundError:
        return contextlib.nullcontext(None)

    @contextlib.contextmanager
    def serve() -> "contextlib.Generator[str, None, None]":
        with tempfile.TemporaryDirectory() as folder:
            shutil.copy(source, Path(folder) / "MNIST_Data.zip")
            with LoopbackServer(Path(folder)) as server:
                yield f"{server.url}/MNIST_Data.zip"

    return serve()


def execute(path: Path, timeout: int = 600) -> float:
    """Run ``path`` top to bottom in a fresh kernel (cwd = its folder) and save it in place."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,  # no execution timestamps in the cells' metadata: a rerun changes only what ran differently
        resources={"metadata": {"path": str(path.parent)}},
    )
    started = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - started
    notebook.metadata.pop("widgets", None)  # nbcallback closes its widgets; no saved widget state
    nbformat.validate(notebook)
    nbformat.write(notebook, path)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebook names (default: every .ipynb in notebooks/)")
    args = parser.parse_args()
    paths = [HERE / name for name in args.notebooks] or sorted(HERE.glob("*.ipynb"))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with _mirror() as url:
        if url:
            os.environ["NBCALLBACK_MNIST_URL"] = url
        # Fetch once up front (into $NBCALLBACK_DATA, else ~/.cache/nbcallback, where the kernels
        # look too), so the saved notebooks show the data listing, not a download.
        sys.path.insert(0, str(REPO))
        from nbcallback.dataset import download_mnist

        download_mnist(progress=False)
        for path in paths:
            print(f"{path.name}: {execute(path):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
