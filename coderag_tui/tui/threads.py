"""The thread the app's workers run on: daemon threads that quitting never waits for.

Textual runs a thread worker on the event loop's default executor, and both asyncio (when the
loop closes) and the interpreter (at exit) join that executor's threads: quitting while an
embedding batch or a model's prompt was on a thread left the user without a prompt for as long
as that batch took (10 s and more on 2 cores). The index is consistent at every commit (SQLite
rolls back what a stopped process had not committed), so the app abandons such work instead.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NoReturn

PREFIX = "coderag-app-"


class DaemonThreads(ThreadPoolExecutor):
    """One daemon thread per call; nothing to join when the loop shuts the executor down."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)

        threading.Thread(target=run, name=f"{PREFIX}{getattr(fn, '__name__', 'work')}", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        return None  # the threads are abandoned, never joined


def exit_now(code: int) -> NoReturn:
    """After the app has given the terminal back: end the process at once. A background thread
    may still run (an embedding batch, a prompt being read, a summary): it is not waited for,
    and the C libraries' exit handlers, which could race it, do not run. Nor does the
    interpreter's own teardown of a process this size: measured at 1.5 s of the 2 s that quitting
    took on a busy 2-core machine, after the terminal was already back."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
