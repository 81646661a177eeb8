"""Index jobs: each has an id and a state, and runs on one worker thread, one after another
(two indexers writing one file would only wait on each other's locks)."""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from coderag_tui.errors import CoderagError
from coderag_tui.models import Progress

KEEP = 100  # finished jobs remembered for `status`


class Job:
    """One build (or embedding, or summaries: `kind`): queued, running, done, failed or
    stopped; its progress, its index summaries and the other kinds' results, by repository."""

    def __init__(self, repos: Sequence[str], kind: str = "index") -> None:
        self.id = uuid.uuid4().hex[:12]
        self.kind = kind
        self.repos = list(repos)
        self.state = "queued"
        self.repo = ""  # the repository being worked on
        self.phase = ""
        self.done = 0
        self.total = 0
        self.error = ""
        self.created = time.time()
        self.finished = 0.0
        self.summaries: dict[str, Any] = {}
        self.results: dict[str, Any] = {}  # an embedding's or summaries' result, by repository
        self.message = ""  # the last progress event's (the file or unit being worked on)
        self._stop = threading.Event()

    def note(self, repo: str, phase: str) -> None:
        self.repo, self.phase, self.done, self.total = repo, phase, 0, 0

    def progress(self, event: Progress) -> None:
        self.phase, self.done, self.total = event.phase, event.done, event.total
        self.message = event.message

    def stopping(self) -> bool:
        return self._stop.is_set()

    def to_json(self) -> dict[str, Any]:
        return {"job_id": self.id, "kind": self.kind, "status": self.state, "repositories": self.repos,
                "repository": self.repo, "phase": self.phase, "done": self.done, "total": self.total,
                "message": self.message, "error": self.error, "created": self.created, "finished": self.finished,
                "summaries": self.summaries, "results": self.results}


class Jobs:
    """The jobs of one server, run in order on a daemon thread started with the first."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._queue: queue.Queue[tuple[Job, Callable[[Job], None]] | None] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, repos: Sequence[str], work: Callable[[Job], None], kind: str = "index") -> Job:
        job = Job(repos, kind)
        with self._lock:
            self._jobs[job.id] = job
            for old in [j for j in self._jobs.values() if j.finished][:-KEEP]:
                del self._jobs[old.id]
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="coderag-jobs", daemon=True)
                self._thread.start()
        self._queue.put((job, work))
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def all(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def busy(self) -> bool:
        return any(j.state in ("queued", "running") for j in self.all())

    def close(self) -> None:
        for job in self.all():
            job._stop.set()
        self._queue.put(None)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            job, work = item
            job.state = "running"
            try:
                work(job)
                job.state = "stopped" if job.stopping() else "done"
            except CoderagError as exc:
                job.state, job.error = "failed", exc.one_line()
            except Exception as exc:  # a job's failure is its state, never the server's end
                job.state, job.error = "failed", f"{type(exc).__name__}: {' '.join(str(exc).split())}"
            job.finished = time.time()
