"""Keeping served repositories current without anyone calling `POST /index/build`.

- A served git URL is fetched every `[server] fetch_interval_s` seconds (and once at start) and
  re-indexed incrementally (the files that changed between the two commits), then its new
  chunks are embedded; a push webhook (server/hooks.py) asks for the same update at once.
- A served local folder on SQLite is watched (`CodeRag.watch`): each change is re-indexed as
  the app does; a folder on a store (PostgreSQL) is re-indexed on the interval instead.

Updates are jobs on the workspace's one job thread (jobs.py), so they never race a build; an
update asked while one for the same repository waits is the one already waiting. What each
repository is at (the indexed commit, when it was last checked, what runs) is `states()`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from coderag_tui.errors import CoderagError
from coderag_tui.models import WatchEvent
from coderag_tui.service import CodeRag
from coderag_tui.workspace import built_event

if TYPE_CHECKING:
    from coderag_tui.workspace import Workspace
    from coderag_tui.workspace.jobs import Job


@dataclass
class RepoState:
    """One served repository's freshness, as `/index/status` shows it."""

    kind: str  # "git" (a URL, fetched), "folder" (watched) or "database" (a repository read by name)
    commit: str = ""  # the commit the index is at ("" for a folder that is not a git repository)
    checked: float = 0.0  # when the repository was last looked at (a fetch, a watcher's batch)
    updated: float = 0.0  # when an update last finished
    running: str = ""  # "queued", then the update's phase ("update", "embed"), or "" when idle
    error: str = ""  # the last update's failure, one line ("" after one that worked)
    watching: bool = False


class Refresher:
    """The updates of one workspace's repositories (see the module doc)."""

    def __init__(self, workspace: Workspace, interval_s: float, watch: bool = True) -> None:
        self.workspace = workspace
        self.interval_s = interval_s
        self.watch = watch
        self.states: dict[str, RepoState] = {}
        self._waiting: dict[str, Job] = {}  # a queued update per repository
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watchers: list[Any] = []
        self._watching: dict[str, Any] = {}  # each watched folder's watcher, by repository
        for name, service in workspace.services.items():
            watched = watch and _watchable(service)
            kind = "git" if _is_clone(service) else "folder" if watched else "database"
            self.states[name] = RepoState(kind, commit=_indexed_commit(service))

    # ------------------------------------------------------------------ running
    def start(self) -> Refresher:
        """Watch the folders, then update the others once and on the interval."""
        for name, service in self.workspace.services.items():
            state = self.states[name]
            if state.kind == "folder":
                # (first brings the index up to date with what changed while nobody watched)
                watcher = service.watch(self._watched(name), initial_index=True)
                self._watchers.append(watcher)
                self._watching[name] = watcher
                state.watching, state.checked = True, time.time()
        polled = self.polled()
        if polled:
            self.trigger(polled)  # what was pushed while the server was down
            if self.interval_s > 0:
                self._thread = threading.Thread(target=self._loop, name="coderag-refresh", daemon=True)
                self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for watcher in self._watchers:
            watcher.stop()
        self._watchers.clear()

    def polled(self) -> list[str]:
        """The repositories updated on the interval (every one that is not watched)."""
        return [name for name, state in self.states.items() if state.kind != "folder"]

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.trigger(self.polled())

    def trigger(self, names: Sequence[str]) -> list[Job]:
        """An update of each named repository (fetch, index, embed), queued unless one waits."""
        jobs = []
        for name in dict.fromkeys(names):
            with self._lock:
                job = self._waiting.get(name)
                if job is None or job.state != "queued":
                    job = self._waiting[name] = self.workspace.jobs.submit([name], self._update(name))
                    self.states[name].running = "queued"
            jobs.append(job)
        return jobs

    def _update(self, name: str) -> Any:
        service = self.workspace.services[name]
        state = self.states[name]

        def work(job: Job) -> None:
            with self._lock:
                if self._waiting.get(name) is job:
                    del self._waiting[name]
            job.note(name, "update")
            state.running = "update"
            events = self.workspace.events
            try:
                summary = service.update(progress=job.progress)
                job.summaries[name] = asdict(summary)
                events.publish(name, built_event(summary, "updated"))
                state.commit, state.checked, state.error = _indexed_commit(service), time.time(), ""
                if service.settings.embed.enabled and service.vectors_pending():
                    job.note(name, "embed")
                    state.running = "embed"
                    service.embed(progress=job.progress, should_stop=job.stopping)
                state.updated = time.time()
            except CoderagError as exc:
                state.checked, state.error = time.time(), exc.one_line()
                events.publish(name, WatchEvent("error", message=f"update failed: {state.error}"))
                raise
            finally:
                state.running = ""

        return work

    def _watched(self, name: str) -> Any:
        state = self.states[name]
        service = self.workspace.services[name]

        def on_event(event: WatchEvent) -> None:
            self.workspace.events.publish(name, event)
            state.checked = time.time()
            if event.phase in ("queued", "indexing"):
                state.running = event.phase
                return
            state.running = ""
            state.commit = _indexed_commit(service)
            if event.phase == "indexed":
                state.updated, state.error = time.time(), ""
            elif event.phase == "error":
                state.error = event.message

        return on_event

    def wait_current(self, name: str, timeout: float = 30.0) -> bool:
        """Wait until a watched folder's watcher has indexed every change it has seen (True;
        False after `timeout`); at once for a repository nothing watches."""
        watcher = self._watching.get(name)
        return watcher.wait_idle(timeout) if watcher is not None else True

    # ------------------------------------------------------------------ reading
    def state_json(self, name: str) -> dict[str, Any]:
        return asdict(self.states[name])


def origin_of(service: CodeRag) -> str:
    """The git URL a served repository is cloned from, as given ("" for a local folder)."""
    return service._origin[0] if service._origin is not None else ""


def _is_clone(service: CodeRag) -> bool:
    return bool(origin_of(service))


def _watchable(service: CodeRag) -> bool:
    """A folder on this machine (on either store): not a clone, nor a database's repository read
    by name."""
    return service._origin is None and service.root is not None


def _indexed_commit(service: CodeRag) -> str:
    """The commit a clone's index is at; the checked-out commit of a local git folder."""
    commit = ""
    with contextlib.suppress(CoderagError):
        commit = service.db.get_meta("commit")
    if not commit and service.root is not None and not _is_clone(service):
        from coderag_tui.sources.clone import head_commit

        commit = head_commit(service.root)
    return commit
