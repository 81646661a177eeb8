"""Run the API with uvicorn on a socket bound first, so that the address printed (with the
port the system chose for `--port 0`) is the one that answers."""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable

from coderag_tui.errors import ConfigError
from coderag_tui.server.auth import Tokens
from coderag_tui.workspace import Workspace


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on accepted sockets that say TCP, and
    # without it each response waited ~40 ms for a delayed ACK (headers and body are two writes)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}",
                          "choose another --port, or stop what uses it") from None
    sock.listen(128)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(workspace: Workspace, host: str, port: int, tokens: Tokens,
          announce: Callable[[str], None] | None = None) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM), then close the workspace. Once listening,
    one line says where on stderr, and `announce(url)` is called."""
    import uvicorn

    from coderag_tui.server.app import create_app

    tokens.check_host(host)
    sock = bind(host, port)
    app = create_app(workspace, tokens)
    # no access log: paths are enough to debug, and nothing a client sends is worth a line
    # an answer being streamed gets a few seconds to end when the server is stopped
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    names = ", ".join(workspace.services)
    auth = "tokens required" if tokens.required else "no tokens (loopback only)"
    print(f"coderag: serving {names} on {url_of(sock)} ({auth})", file=sys.stderr, flush=True)
    if announce is not None:
        announce(url_of(sock))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        workspace.close()
