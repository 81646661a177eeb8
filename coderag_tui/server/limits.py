"""How much one request and one client may take: body sizes per endpoint, checked before a
body is read, and how many requests one client has running at once."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

KIB, MIB = 1024, 1024 * 1024
MAX_BODY = 64 * KIB  # every JSON body but an answer's: a question, a query, a few names
ASK_BODY = 8 * MIB  # a question with a 4 MiB attachment (a log), JSON-escaped
REVIEW_BODY = 8 * MIB  # a diff of up to 4 MiB, JSON-escaped
HOOK_BODY = 1 * MIB  # a push webhook's payload (only the repository's URLs are read from it)
WAITING_FACTOR = 8  # requests a client may have waiting for a slot, per slot


def body_limit(path: str) -> int:
    if path == "/ask":
        return ASK_BODY
    if path == "/review":
        return REVIEW_BODY
    if path.startswith("/hooks/"):
        return HOOK_BODY
    return MAX_BODY


def shown(limit: int) -> str:
    return f"{limit // MIB} MiB" if limit >= MIB else f"{limit // KIB} KiB"


@dataclass
class _Client:
    slots: asyncio.Semaphore
    users: int = 0  # running and waiting


@dataclass
class ClientSlots:
    """At most `running` requests of one client at once; up to `running * WAITING_FACTOR`
    more wait their turn, and any beyond those are refused (`enter` returns False), so that
    one client cannot hold every worker thread of the server, nor queue without end."""

    running: int
    _clients: dict[str, _Client] = field(default_factory=dict)

    async def enter(self, key: str) -> bool:
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = _Client(asyncio.Semaphore(self.running))
        if client.users >= self.running * (1 + WAITING_FACTOR):
            return False
        client.users += 1
        try:
            await client.slots.acquire()
        except BaseException:  # the request went away while it waited
            self._left(key, client)
            raise
        return True

    def leave(self, key: str) -> None:
        client = self._clients[key]
        client.slots.release()
        self._left(key, client)

    def _left(self, key: str, client: _Client) -> None:
        client.users -= 1
        if client.users == 0:
            del self._clients[key]  # a client that comes back starts afresh: no state per address kept

    def busy(self, key: str) -> int:
        client = self._clients.get(key)
        return client.users if client is not None else 0
