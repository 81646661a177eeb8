"""Real servers on 127.0.0.1 for tests: a free port, a stdlib server served from a thread, and
the real `llama_cpp.server` with the bundled GGUF."""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest

HAVE_LLAMA_SERVER = (importlib.util.find_spec("llama_cpp") is not None
                     and importlib.util.find_spec("uvicorn") is not None)


def free_port() -> int:
    """A loopback port nothing listens on (bound once, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Serving(Protocol):
    server_address: Any

    def serve_forever(self, poll_interval: float = ...) -> None: ...
    def shutdown(self) -> None: ...
    def server_close(self) -> None: ...


def base_url(server: _Serving) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def start_serving(server: _Serving, poll: float = 0.05) -> Callable[[], None]:
    """Serve `server` (bound to 127.0.0.1) from a thread; returns the function that stops it."""
    thread = threading.Thread(target=server.serve_forever, args=(poll,), daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return stop


@contextlib.contextmanager
def serving(server: _Serving) -> Iterator[str]:
    """`start_serving` for a `with` block: yields the server's base URL."""
    stop = start_serving(server)
    try:
        yield base_url(server)
    finally:
        stop()


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True


@contextlib.contextmanager
def http_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[tuple[QuietServer, str]]:
    """A stdlib HTTP server on a free loopback port answering with `handler`: (server, base URL)."""
    server = QuietServer(("127.0.0.1", 0), handler)
    with serving(server) as url:
        yield server, url


class LlamaServer:
    """A running `llama_cpp.server`: its port, base URL and access log."""

    def __init__(self, port: int, log: Path) -> None:
        self.port, self.log = port, log
        self.url = f"http://127.0.0.1:{port}"

    def completions(self) -> int:
        """Chat completions the server has answered so far (from its access log)."""
        return self.log.read_text(errors="replace").count("POST /v1/chat/completions")


@contextlib.contextmanager
def start_llama_server(model: Path, folder: Path, n_ctx: int = 2048) -> Iterator[LlamaServer]:
    """Start the real llama_cpp.server on a free port and wait (90 s at most) until it answers."""
    port = free_port()
    log = folder / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", str(n_ctx), "--verbose", "False"],
            stdout=out, stderr=subprocess.STDOUT,
        )
    served = LlamaServer(port, log)
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited ({proc.returncode}): {log.read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{served.url}/v1/models", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer within 90 s: {log.read_text()[-2000:]}")
            time.sleep(0.3)
        yield served
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
