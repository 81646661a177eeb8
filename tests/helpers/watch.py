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


def ctrl_c_stops_it() -> None:
    """`preexec_fn` for a `coderag watch` child the test stops with SIGINT (Ctrl+C): a child of
    a shell's background job inherits SIGINT ignored, and Python then raises no KeyboardInterrupt."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
