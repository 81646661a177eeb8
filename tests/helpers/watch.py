"""The watcher's tests: short debounce settings, waiting for the index, recording events."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from coderag_tui.config import EmbedSettings, Settings, WatchSettings
from coderag_tui.models import WatchEvent

WAIT_S = 10.0
DEBOUNCE_MS = 200


def _settings(embed: bool = False) -> Settings:
    return Settings(watch=WatchSettings(debounce_ms=DEBOUNCE_MS), embed=EmbedSettings(enabled=embed))


def wait_for(predicate: Callable[[], object], timeout: float = WAIT_S, what: str = "the index") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} did not update within {timeout}s")


class Recorder:
    def __init__(self) -> None:
        self.events: list[WatchEvent] = []
        self._lock = threading.Lock()

    def __call__(self, event: WatchEvent) -> None:
        with self._lock:
            self.events.append(event)

    def phase(self, phase: str) -> list[WatchEvent]:
        with self._lock:
            return [e for e in self.events if e.phase == phase]

    def clear(self) -> None:
        with self._lock:
            self.events.clear()
