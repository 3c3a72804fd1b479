"""A loopback HTTP server that plays the part of the MNIST download host.

Tests never reach the internet: they serve ``../shared/data/MNIST_Data.zip``
(and files they build themselves) from 127.0.0.1 and point
:func:`nbcallback.dataset.download_mnist` at it, so the real download path is
what gets tested.
"""
from __future__ import annotations

import functools
import http.server
import os
import threading
from pathlib import Path
from typing import Callable

SHARED_ENV = "NBCALLBACK_SHARED"


def shared_dir() -> Path:
    """The ``shared/`` folder that sits beside the checkout (or ``$NBCALLBACK_SHARED``)."""
    if os.environ.get(SHARED_ENV):
        return Path(os.environ[SHARED_ENV])
    return Path(__file__).resolve().parents[3] / "shared"


def mnist_zip() -> Path:
    path = shared_dir() / "data" / "MNIST_Data.zip"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: the tests need ../shared/data/MNIST_Data.zip beside the "
            f"checkout (or set {SHARED_ENV} to the shared folder)"
        )
    return path


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    # A hook a test may install to misbehave on some paths (close early, lie about
    # Content-Length, redirect forever ...). Returning True means "handled".
    fault: Callable[["_QuietHandler"], bool] | None = None

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        fault = type(self).fault
        if fault is not None and fault(self):
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class LoopbackServer:
    """Serve one folder over HTTP on 127.0.0.1 in a daemon thread.

    ``fault`` is an optional callable receiving the request handler; it may
    write its own (broken) response and return True to take over the request.
    """

    def __init__(self, folder: Path, fault: Callable[[http.server.BaseHTTPRequestHandler], bool] | None = None):
        handler = type("Handler", (_QuietHandler,), {"fault": staticmethod(fault) if fault else None})
        self._httpd = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler, directory=str(folder))
        )
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> "LoopbackServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
