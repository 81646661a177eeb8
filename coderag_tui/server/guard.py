"""What every request passes before the API sees it, in order, reading no byte of its body:

1. its `Host` must name this server (421 otherwise: a DNS-rebinding page names itself), and a
   browser's `Origin`, when sent, must be the server's own or an allowed one (403);
2. its token (`Authorization: Bearer`) must be accepted for the endpoint (401, 403): a body
   sent without one is never read, so it costs the server nothing;
3. its body must fit the endpoint's limit (413), whether `Content-Length` says so or the body
   runs over while it is read;
4. its client (the token's owner, else the address) may have a few requests running at once;
   more wait their turn, and beyond a queue of them 429.

Who asked (`Caller`) is then in the request's state for the endpoints. An exception that
escapes the API is answered with one line (500) and logged as one line, never a traceback.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from coderag_tui.server.auth import Hosts, Tokens, owner_of, same_origin
from coderag_tui.server.limits import ClientSlots, body_limit, shown

log = logging.getLogger("coderag.server")

Scope = dict[str, Any]
OPEN_PATHS = ("/health", "/openapi.json")  # no token: a load balancer's check, the API's description
HOOKS = "/hooks/"  # push webhooks: signed by their platform instead (hooks.py)
# what writes the index or spends the model's time on everyone's behalf: admin tokens only
ADMIN_ONLY = frozenset({("POST", "/index/build"), ("POST", "/index/embed"), ("POST", "/summaries")})
NOT_ADMIN = "this token may search and ask, not index or summarize: use an admin token"


@dataclass(frozen=True)
class Caller:
    """Who sent a request: `scope` "admin" or "read" ("" on a server without tokens, or on an
    open path), `owner` the digest their conversations are kept under (None without tokens)."""

    scope: str = ""
    owner: str | None = None


@dataclass(frozen=True)
class Policy:
    tokens: Tokens
    hosts: Hosts
    origins: tuple[str, ...] = ()
    per_client: int = 8


def _needs(method: str, path: str) -> str:
    if path in OPEN_PATHS or path.startswith(HOOKS):
        return ""
    return "admin" if (method, path) in ADMIN_ONLY else "read"


class Guard:
    """The ASGI middleware of the module doc, around the whole API."""

    def __init__(self, app: Any, policy: Policy) -> None:
        self.app, self.policy = app, policy
        self.slots = ClientSlots(max(1, policy.per_client))

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # (no websockets here)
        headers: dict[bytes, list[bytes]] = {}
        for key, value in scope.get("headers") or []:
            headers.setdefault(key.lower(), []).append(value)
        body = bool(headers.get(b"transfer-encoding")) or headers.get(b"content-length", [b"0"])[0] != b"0"

        def refuse(status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> Any:
            return _answer(send, status, text, extra or [], close=body)

        host = headers.get(b"host", [])
        if len(host) != 1 or not self.policy.hosts.allows(host[0].decode("latin-1")):
            await refuse(421, "this server does not answer to that host name (see [server] allowed_hosts)")
            return
        origin = headers.get(b"origin")
        if origin is not None and not same_origin(origin[0].decode("latin-1"), host[0].decode("latin-1"),
                                                  self.policy.origins):
            await refuse(403, "requests from this web page are not allowed (see [server] allowed_origins)")
            return

        method, path = scope["method"], scope["path"]
        caller = Caller()
        needs = _needs(method, path)
        tokens = self.policy.tokens
        if needs and tokens.required:
            given = _bearer(headers.get(b"authorization", []))
            have = tokens.scope(given) if given else None
            if have is None:
                await refuse(401, "this server needs a bearer token" if not given else "the token is not accepted here",
                             [(b"www-authenticate", b"Bearer")])
                return
            if needs == "admin" and have != "admin":
                await refuse(403, NOT_ADMIN)
                return
            caller = Caller(have, owner_of(given))
        scope.setdefault("state", {})["caller"] = caller

        limit = body_limit(path)
        length = headers.get(b"content-length", [b"0"])[0]
        if not length.isdigit() or int(length) > limit:
            await refuse(413, f"the request is larger than {shown(limit)}")
            return

        client = caller.owner or (scope.get("client") or ("?",))[0]
        if not await self.slots.enter(client):
            await refuse(429, "too many requests from this client at once: wait for some to finish",
                         [(b"retry-after", b"1")])
            return
        try:
            await self._run(scope, receive, send, limit)
        finally:
            self.slots.leave(client)

    async def _run(self, scope: Scope, receive: Any, send: Any, limit: int) -> None:
        seen, refused, started = 0, False, False

        async def capped() -> Any:
            nonlocal seen, refused
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit and not refused:
                # answer now; to the app the client has gone (what it sends next is dropped)
                refused = True
                if not started:
                    await _answer(send, 413, f"the request is larger than {shown(limit)}", [], close=True)
                return {"type": "http.disconnect"}
            return message

        async def guarded(message: Any) -> None:
            nonlocal started
            if not refused:
                started = True
                await send(message)

        try:
            await self.app(scope, capped, guarded)
        except Exception as exc:  # one line in the log, one line to the client, the connection kept
            log.error("%s %s: %s", scope.get("method"), scope.get("path"), type(exc).__name__)
            if not started and not refused:
                await _answer(send, 500, f"unexpected error: {type(exc).__name__}", [], close=False)


def _bearer(values: list[bytes]) -> str:
    if len(values) != 1:
        return ""
    scheme, _, token = values[0].decode("utf-8", "replace").strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def _answer(send: Any, status: int, text: str, extra: list[tuple[bytes, bytes]], close: bool) -> None:
    body = json.dumps({"error": text}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]
    if close:  # a body that was not read: the connection ends rather than read it
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
