"""One user of the model at a time, answers first.

A llama.cpp instance must never run two generations at once, and an answer must never wait
behind background work (summaries). An answer takes the gate in the foreground: it says it
wants the model at once, then waits for the lock. Background work takes the gate one short job
at a time, only while no answer wants it, and polls `wanted()` while it generates (the
provider's `should_stop`), so it gives the model up within a token or so when an answer comes.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


class ModelGate:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._wanted = 0

    @contextlib.contextmanager
    def foreground(self) -> Iterator[None]:
        """Hold the model for an answer: background work yields it first."""
        with self._cond:
            self._wanted += 1
        try:
            with self._lock:
                yield
        finally:
            with self._cond:
                self._wanted -= 1
                self._cond.notify_all()

    def wanted(self) -> bool:
        """An answer is waiting for the model or using it."""
        return self._wanted > 0

    def acquire_background(self, should_stop: Callable[[], bool] | None = None, poll_s: float = 0.2) -> bool:
        """Wait until no answer wants the model, then hold it; False when `should_stop` said so
        first. Release with `release()`."""
        while True:
            with self._cond:
                while self._wanted:
                    self._cond.wait(poll_s)
                    if should_stop is not None and should_stop():
                        return False
            if should_stop is not None and should_stop():
                return False
            if self._lock.acquire(timeout=poll_s):
                if not self._wanted:
                    return True
                self._lock.release()  # an answer came in between: it goes first

    def release(self) -> None:
        self._lock.release()

    @contextlib.contextmanager
    def background(self, should_stop: Callable[[], bool] | None = None) -> Iterator[bool]:
        """`with gate.background(stop) as held:` -- held is False when stopped while waiting."""
        held = self.acquire_background(should_stop)
        try:
            yield held
        finally:
            if held:
                self.release()
