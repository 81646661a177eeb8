"""The index updates of served repositories, as they happen, for whoever follows them (the
server's `GET /index/events`, and through it `coderag watch --server URL`).

Whatever keeps a repository current (its watcher, a fetch, a webhook's update, a build)
publishes `WatchEvent`s here; each follower has a queue of its own, bounded, so that a follower
that stops reading loses its oldest events rather than holding the server's memory.
"""

from __future__ import annotations

import queue
import threading

from coderag_tui.models import WatchEvent

FOLLOWER_QUEUE = 256  # events one follower may have unread (then its oldest are dropped)


class Follower:
    """One subscription: `get(timeout)` the next (repository, event), or None on a timeout."""

    def __init__(self, hub: UpdateEvents, repos: frozenset[str] | None) -> None:
        self._hub = hub
        self.repos = repos
        self._queue: queue.Queue[tuple[str, WatchEvent]] = queue.Queue(FOLLOWER_QUEUE)
        self.dropped = 0

    def put(self, name: str, event: WatchEvent) -> None:
        if self.repos is not None and name not in self.repos:
            return
        while True:
            try:
                self._queue.put_nowait((name, event))
                return
            except queue.Full:
                try:  # the oldest goes: what a follower wants is what happens now
                    self._queue.get_nowait()
                    self.dropped += 1
                except queue.Empty:
                    pass

    def get(self, timeout: float) -> tuple[str, WatchEvent] | None:
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self) -> None:
        self._hub.unsubscribe(self)


class UpdateEvents:
    """The hub: `publish(name, event)` from any thread; `subscribe(repos)` a follower."""

    def __init__(self) -> None:
        self._followers: list[Follower] = []
        self._lock = threading.Lock()

    def subscribe(self, repos: frozenset[str] | None = None) -> Follower:
        follower = Follower(self, repos)
        with self._lock:
            self._followers.append(follower)
        return follower

    def unsubscribe(self, follower: Follower) -> None:
        with self._lock:
            if follower in self._followers:
                self._followers.remove(follower)

    def publish(self, name: str, event: WatchEvent) -> None:
        with self._lock:
            followers = list(self._followers)
        for follower in followers:
            follower.put(name, event)

    @property
    def followers(self) -> int:
        with self._lock:
            return len(self._followers)
