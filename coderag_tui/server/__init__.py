"""`coderag serve`: the service API over HTTP (FastAPI), for the CLI's `--server` and any client.

An interface layer like `cli/`: it parses requests, checks tokens and serialises the frozen
dataclasses of `models.py`; what it answers comes from `workspace.Workspace` and `service.CodeRag`.
"""

from __future__ import annotations

from coderag_tui.server.auth import Tokens, is_loopback
from coderag_tui.server.run import serve

__all__ = ["Tokens", "is_loopback", "serve"]
