"""`--server URL` (or `[server] url`): the commands that read an index ask a server instead."""

from __future__ import annotations

import argparse
import os
from typing import Any

from coderag_tui.errors import CoderagError

# the commands a server answers; with `[server] url` set the others keep using local indexes
THROUGH_SERVER = frozenset({"search", "context", "symbol", "callers", "callees", "similar", "map", "ask", "status",
                            "index", "embed", "watch", "review", "summarize", "export", "models", "mcp", "tui"})


def server_client(args: argparse.Namespace, repo: str | None) -> Any:
    """A RemoteCodeRag when the arguments or the settings name a server, else None."""
    from coderag_tui.config import load_settings

    command = getattr(args, "command", None)
    given = getattr(args, "server", None)
    if not given and command not in THROUGH_SERVER:
        return None
    settings = load_settings(None, getattr(args, "config", None))
    url = given or settings.server.url
    if not url or (not given and repo and os.path.exists(repo)):
        return None  # with the server from the settings, a folder given by path stays local
    if command not in THROUGH_SERVER:
        raise CoderagError(f"`coderag {command}` reads a local index; it does not work through --server",
                           "through a server: " + ", ".join(sorted(THROUGH_SERVER)))
    for option in ("db", "branch", "rev"):
        if getattr(args, option, None):
            raise CoderagError(f"--{option} applies to a local index, not to --server",
                           "the server chose its repositories when it started")
    from coderag_tui.client import RemoteCodeRag

    names = [n.strip() for n in (repo or "").split(",") if n.strip()]
    client = RemoteCodeRag.from_settings(url, settings, names)
    if command == "tui":  # no --repo: the server's repositories (one, or a tree of all), never an empty tree
        from coderag_tui.client_tree import for_the_app

        return for_the_app(client)
    return client
