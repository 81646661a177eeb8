"""A cap on request bodies, checked before anything reads them: FastAPI reads a body before it
checks the token, so without a cap anyone who can connect could make the server hold any size."""

from __future__ import annotations

import json
from typing import Any

MAX_BODY = 8 * 1024 * 1024  # bytes: a question with a 4 MiB attachment, and room to spare

Scope = dict[str, Any]


class BodyLimit:
    """413 for a body over `limit` bytes, whether its Content-Length says so or it runs over."""

    def __init__(self, app: Any, limit: int = MAX_BODY) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length", b"0")
        if not length.isdigit() or int(length) > self.limit:
            await _too_large(send, self.limit)
            return
        seen, refused = 0, False

        async def capped() -> Any:
            nonlocal seen, refused
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit and not refused:
                # answer now; to the app the client has gone (what it sends next is dropped)
                refused = True
                await _too_large(send, self.limit)
                return {"type": "http.disconnect"}
            return message

        async def guarded(message: Any) -> None:
            if not refused:
                await send(message)

        await self.app(scope, capped, guarded)


async def _too_large(send: Any, limit: int) -> None:
    body = json.dumps({"error": f"the request is larger than {limit // (1024 * 1024)} MiB"}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
