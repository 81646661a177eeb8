"""What a server's client rebuilds that is more than one dataclass: a review as the server
rendered it, a job waited for with its progress, and the server's index updates followed on a
thread (`coderag watch --server URL`)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from coderag_tui.errors import CoderagError
from coderag_tui.models import ComposedContext, Progress, WatchEvent
from coderag_tui.review.build import Review
from coderag_tui.wire import decode

READY_S = 20.0  # how long `watch` waits for the server to say it follows
RETRY_MAX_S = 30.0  # the longest wait before following again after the server went away


@dataclass
class ServedReview(Review):
    """A server's review: its Markdown, its JSON and its context as the server made them (the
    parsed sides of each file stay on the server)."""

    text: str = ""
    doc: dict[str, Any] = field(default_factory=dict)
    context: ComposedContext | None = None

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> ServedReview:
        context = decode(ComposedContext, doc["context"]) if doc.get("context") else None
        return cls(label=str(doc.get("label", "")), base=doc.get("base"), files=[], contexts=[],
                   overview=str(doc.get("overview", "")), headings=[], chosen=[], budget=int(doc.get("budget", 0)),
                   tokens=int(doc.get("tokens", 0)), dropped={}, notes=[str(n) for n in doc.get("notes", ())],
                   text=str(doc.get("markdown", "")), doc=dict(doc.get("review") or {}), context=context)

    def markdown(self) -> str:
        return self.text

    def file_count(self) -> int:
        return len(self.doc.get("files") or ())

    def to_json(self) -> dict[str, Any]:
        return dict(self.doc)

    def composed(self) -> ComposedContext:
        return self.context or ComposedContext(self.label, "review", (), self.tokens, self.budget)


def wait_for_job(get: Callable[[str], Any], job: dict[str, Any], progress: Callable[[Progress], None] | None,
                 should_stop: Callable[[], bool] | None = None, poll_s: float = 0.5) -> dict[str, Any]:
    """Poll a server's job (`get(job_id)`) until it ends, its progress passed on as it changes;
    the job's last state (still running when `should_stop` said so)."""
    shown: tuple[Any, ...] = ()
    while job["status"] in ("queued", "running"):
        if should_stop is not None and should_stop():
            return job
        time.sleep(poll_s)
        job = get(job["job_id"])
        now = (job.get("phase"), job.get("done"), job.get("total"), job.get("message"))
        if progress is not None and job.get("phase") and now != shown:
            shown = now
            progress(Progress(str(job["phase"]), int(job.get("done") or 0), int(job.get("total") or 0),
                              str(job.get("message") or "")))
    return job


class RemoteWatcher:
    """A server's index updates (GET /index/events) followed on a thread of its own, each one
    handed to `on_event` (its message headed by its repository when `named`). A stream that
    breaks is followed again, the break said as an error event; `stop()` ends it."""

    def __init__(self, http: httpx.Client, params: dict[str, str], on_event: Callable[[WatchEvent], None] | None,
                 named: bool, raise_for: Callable[[httpx.Response], None]) -> None:
        self._http = http
        self._params = params
        self._on_event = on_event
        self._named = named
        self._raise_for = raise_for
        self._stop = threading.Event()
        self.ready = threading.Event()
        self.error: CoderagError | None = None
        self._thread = threading.Thread(target=self._run, name="coderag-follow", daemon=True)

    def start(self) -> RemoteWatcher:
        """Follow, once the server says it does (a refusal or no server: the CoderagError)."""
        self._thread.start()
        if not self.ready.wait(READY_S) and self.error is None:
            self.stop()
            raise CoderagError(f"the server at {self._http.base_url} did not start sending its updates")
        if self.error is not None:
            self.stop()
            raise self.error
        return self

    @property
    def running(self) -> bool:
        return not self._stop.is_set() and self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._http.close()

    def _deliver(self, name: str, event: WatchEvent) -> None:
        if self._on_event is None:
            return
        if self._named and name:
            event = replace(event, message=f"{name}: {event.message}")
        self._on_event(event)

    def _lines(self, response: httpx.Response) -> Iterator[str]:
        for line in response.iter_lines():  # (a keep-alive comes every few seconds)
            if self._stop.is_set():
                return
            yield line

    def _run(self) -> None:
        from coderag_tui.client import _reason, _sse

        delay = 1.0
        while not self._stop.is_set():
            try:
                with self._http.stream("GET", "/index/events", params=self._params) as response:
                    if response.status_code >= 400:
                        response.read()
                        self._raise_for(response)
                    for kind, data in _sse(self._lines(response)):
                        if kind == "ready":
                            delay = 1.0
                            self.ready.set()
                        elif kind == "watch":
                            doc = json.loads(data)
                            name = str(doc.pop("repository", ""))
                            self._deliver(name, decode(WatchEvent, doc))
                if not self._stop.is_set():
                    self._deliver("", WatchEvent("error", message=f"the server at {self._http.base_url} ended "
                                                 f"the stream; following again in {delay:.0f}s"))
            except CoderagError as exc:  # refused (a token, a name): following again would not help
                if not self.ready.is_set():
                    self.error = exc
                    self.ready.set()
                else:
                    self._deliver("", WatchEvent("error", message=exc.one_line()))
                self._stop.set()
                return
            except (httpx.HTTPError, ValueError) as exc:
                if self._stop.is_set():
                    return
                reason = _reason(exc) if isinstance(exc, httpx.HTTPError) else "a broken event"
                if not self.ready.is_set():
                    self.error = CoderagError(f"cannot follow the server at {self._http.base_url}: {reason}",
                                              "is `coderag serve` running there?")
                    self.ready.set()
                    return
                self._deliver("", WatchEvent("error", message=f"lost the server at {self._http.base_url} "
                                             f"({reason}); following again in {delay:.0f}s"))
            if self._stop.wait(delay):
                return
            delay = min(delay * 2, RETRY_MAX_S)
