"""Run the API with uvicorn on a socket bound first, so that the address printed (with the
port the system chose for `--port 0`) is the one that answers."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from coderag_tui.config import ServerSettings
from coderag_tui.errors import ConfigError
from coderag_tui.paths import private_folder, server_token_file
from coderag_tui.server.auth import Hosts, Tokens
from coderag_tui.server.guard import Policy
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


@contextlib.contextmanager
def _token_file(url: str, token: str) -> Iterator[None]:
    """The token a server made for itself, where this user's clients of `url` find it, for as
    long as the server runs."""
    path: Path | None = server_token_file(url)
    assert path is not None
    try:
        private_folder(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(token)
    except OSError:
        path = None  # (clients then need $CODERAG_TOKEN)
    try:
        yield
    finally:
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()


def serve(workspace: Workspace, host: str, port: int, tokens: Tokens,
          announce: Callable[[str], None] | None = None, *, settings: ServerSettings | None = None,
          made_token: bool = False, hook_secret: str = "") -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM), then close the workspace. Once listening,
    one line says where on stderr (with the token when the server made it: `made_token`), and
    `announce(url)` is called."""
    import uvicorn

    from coderag_tui.server.app import create_app

    settings = settings or ServerSettings()
    tokens.check_host(host)
    sock = bind(host, port)
    policy = Policy(tokens, Hosts(host, settings.allowed_hosts), tuple(settings.allowed_origins),
                    settings.max_requests_per_client)
    app = create_app(workspace, policy, hook_secret)
    # no access log: paths are enough to debug, and nothing a client sends is worth a line
    # an answer being streamed gets a few seconds to end when the server is stopped
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    names = ", ".join(workspace.services)
    url = url_of(sock)
    if made_token:  # printed once, to whoever started it, as a notebook server does
        auth = f"token {tokens.admin[0]} (this user's clients find it; others: export CODERAG_TOKEN=...)"
    else:
        auth = "tokens required" if tokens.required else "no tokens (loopback only)"
    print(f"coderag: serving {names} on {url} ({auth})", file=sys.stderr, flush=True)
    if announce is not None:
        announce(url)
    try:
        workspace.keep_current(settings.fetch_interval_s, settings.watch)
        with _token_file(url, tokens.admin[0]) if made_token else contextlib.nullcontext():
            server.run(sockets=[sock])
    finally:
        sock.close()
        workspace.close()
