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
import sys
import threading
import time
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


class _QuietServer(http.server.ThreadingHTTPServer):
    # Clients (the ``download`` package's probes, tests that time out) hang up
    # mid-response on purpose; don't print a traceback for each of those.
    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


Fault = Callable[[http.server.BaseHTTPRequestHandler], bool]


def on_paths(faults: dict[str, Fault]) -> Fault:
    """Combine faults keyed by request path (e.g. ``"/loop.zip"``); other paths are served normally."""

    def fault(handler: http.server.BaseHTTPRequestHandler) -> bool:
        chosen = faults.get(handler.path.split("?", 1)[0])
        return chosen(handler) if chosen is not None else False

    return fault


def redirect_loop() -> Fault:
    """Answer with a 302 pointing back at the same path, forever."""

    def fault(handler: http.server.BaseHTTPRequestHandler) -> bool:
        handler.send_response(302)
        handler.send_header("Location", handler.path)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
        return True

    return fault


def _served_bytes(handler: http.server.BaseHTTPRequestHandler) -> bytes:
    folder = Path(getattr(handler, "directory", "."))
    return (folder / handler.path.split("?", 1)[0].lstrip("/")).read_bytes()


def cut_short(fraction: float = 0.5) -> Fault:
    """Announce the file's full Content-Length, send only ``fraction`` of it, then close."""

    def fault(handler: http.server.BaseHTTPRequestHandler) -> bool:
        data = _served_bytes(handler)
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        try:
            handler.wfile.write(data[: int(len(data) * fraction)])
            handler.wfile.flush()
        except OSError:
            pass
        handler.close_connection = True
        return True

    return fault


def stall(seconds: float, sent: int = 1024) -> Fault:
    """Send the headers and the first ``sent`` bytes, then stop talking for ``seconds``."""

    def fault(handler: http.server.BaseHTTPRequestHandler) -> bool:
        data = _served_bytes(handler)
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        try:
            handler.wfile.write(data[:sent])
            handler.wfile.flush()
            time.sleep(seconds)
        except OSError:
            pass
        handler.close_connection = True
        return True

    return fault


class LoopbackServer:
    """Serve one folder over HTTP on 127.0.0.1 in a daemon thread.

    ``fault`` is an optional callable receiving the request handler; it may
    write its own (broken) response and return True to take over the request.
    """

    def __init__(self, folder: Path, fault: Callable[[http.server.BaseHTTPRequestHandler], bool] | None = None):
        handler = type("Handler", (_QuietHandler,), {"fault": staticmethod(fault) if fault else None})
        self._httpd = _QuietServer(("127.0.0.1", 0), functools.partial(handler, directory=str(folder)))
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
