"""Real servers on 127.0.0.1 for tests: a free port, a stdlib server served from a thread, a
scripted model server (`Loopback`: answers written by the test), and the real
`llama_cpp.server` with the bundled GGUF."""

from __future__ import annotations

import contextlib
import importlib.util
import json
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


# --------------------------------------------------------------------------- a scripted server


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def _handle(self) -> None:
        if self.command == "GET" and self.path.rstrip("/").endswith(("/props", "/models")):
            # the provider's look for the server's context window: this server announces none
            # (kept apart, so that `requests` numbers the scripted answers only)
            with self.server.loopback.lock:
                self.server.loopback.probes.append(self.path)
            self.send_json(404, {"error": "not found"})
            return
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        loop = self.server.loopback
        with loop.lock:
            index = len(loop.requests)
            loop.requests.append(
                {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
            )
        loop.respond(self, index)

    do_GET = _handle
    do_POST = _handle

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # helpers for responders
    def send_json(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def abort(self) -> None:
        """Drop the connection in the middle of a response."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


class _Server(QuietServer):
    loopback: Loopback


Responder = Callable[[Handler, int], None]


class Loopback:
    """A stdlib HTTP server on 127.0.0.1 whose answers are scripted by `respond(handler, n)`."""

    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self.requests: list[dict[str, Any]] = []
        self.probes: list[str] = []  # paths of the context-window look-ups (GET /props, /models)
        self.lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), Handler)
        self.server.loopback = self
        self.close = start_serving(self.server)
        self.url = base_url(self.server)


def openai_sse(h: Handler, tokens: list[str]) -> None:
    h.start_sse()
    for t in tokens:
        doc = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": t}}]}
        h.chunk(f"data: {json.dumps(doc)}\n\n")
    h.chunk("data: [DONE]\n\n")
    h.end_chunks()
