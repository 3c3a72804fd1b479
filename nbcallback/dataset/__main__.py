"""``python -m nbcallback.dataset [ROOT]``: fetch and verify MNIST into ``ROOT/MNIST_Data``.

Used by ``binder/postBuild`` to bake the data into a classroom image; safe to
run again (verified data is not fetched twice). The source is
``$NBCALLBACK_MNIST_URL`` when set, else the tutorial's host and its mirrors.
"""
from __future__ import annotations

import argparse
import sys

from nbcallback.dataset.download import DownloadError, download_mnist


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nbcallback.dataset", description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=".", help="folder that receives MNIST_Data/ (default: .)")
    parser.add_argument("--url", default=None, help="one mirror replacing the defaults (zip or folder of .gz files)")
    parser.add_argument("--replace", action="store_true", help="download again even if verified data is present")
    parser.add_argument("--no-progress", action="store_true", help="hide the download progress bar")
    args = parser.parse_args(argv)
    try:
        path = download_mnist(args.root, url=args.url, replace=args.replace, progress=not args.no_progress)
    except DownloadError as exc:
        print(f"nbcallback.dataset: {exc}", file=sys.stderr)
        return 1
    print(f"MNIST ready in {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
