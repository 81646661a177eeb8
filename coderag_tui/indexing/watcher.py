"""Keep the index current while files change: watchdog events, debounced into batches.

The watchdog observer thread only records which paths changed (ignored paths are dropped at
once). The watcher's own thread waits until the changes have been quiet for
`settings.watch.debounce_ms` (`save_debounce_ms` while at most SAVE_FILES files and no folder
are pending: an editor's save), then re-indexes the whole batch with one `Indexer.run(only=...)`
through the service, so a branch switch that touches 1,000 files is one batch. Batches never
overlap: changes seen while a batch runs go into the next one. That thread has its own SQLite
connection (the service opens one per thread). After the structural update it refreshes the
vectors of the changed chunks (`service.embed`, when the service has it) and reports a
`WatchEvent` with the calls the batch orphaned (their target was removed or renamed).

Every `on_event` call comes from the watcher's thread; a UI must hand it over to its own.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from coderag_tui.models import EdgeRef, IndexSummary, Progress, WatchEvent
from coderag_tui.sources.discovery import IGNORE_FILES, IgnoreMatcher
from coderag_tui.sources.names import fs_path, repo_path
from coderag_tui.store import read, tracked

if TYPE_CHECKING:
    from pathlib import Path

    from coderag_tui.config import Settings
    from coderag_tui.store.backend import StoreBackend


class WatchedRepository(Protocol):
    """What the watcher needs from the service (the layer above; it is not imported here)."""

    settings: Settings
    db_path: Path | None

    @property
    def folder(self) -> Path: ...

    @property
    def db(self) -> StoreBackend: ...

    def index(self, *, rebuild: bool = False, only: list[str] | None = None,
              progress: Callable[[Progress], None] | None = None) -> IndexSummary: ...

    def embed(self, progress: Callable[[Progress], None] | None = None,
              should_stop: Callable[[], bool] | None = None, paths: Sequence[str] | None = None) -> object: ...

    def close_thread_store(self) -> None: ...

EventFn = Callable[[WatchEvent], None]
ProgressFn = Callable[[Progress], None]

_FS_CHANGES = frozenset({"created", "modified", "deleted", "moved"})
_FULL_EMBED_EVERY = 20  # watcher batches embed their own files; every 20th is a full run
_MAX_DELAY_FACTOR = 10  # a batch starts at the latest this many debounce periods after its first change
_MAX_DELAY_MIN_S = 5.0
SAVE_FILES = 3  # an editor's save touches the file and maybe a temporary or backup file
_ORPHANS_LISTED = 50
_ORPHANS_COUNTED = 10_000
_RETRIES = 1  # a failed batch is tried once more (e.g. the index was busy)


class Watcher:
    """Watches a repository and re-indexes what changes. Use `start()` and `stop()` (or `with`)."""

    def __init__(
        self,
        service: WatchedRepository,
        on_event: EventFn | None = None,
        *,
        debounce_ms: int | None = None,
        save_debounce_ms: int | None = None,
        initial_index: bool = False,
        embed: bool = True,
        progress: ProgressFn | None = None,
    ) -> None:
        self.service = service
        self.root = service.folder
        self.on_event = on_event
        ms = service.settings.watch.debounce_ms if debounce_ms is None else debounce_ms
        self.debounce = max(0, ms) / 1000.0
        save_ms = service.settings.watch.save_debounce_ms if save_debounce_ms is None else save_debounce_ms
        self.save_debounce = min(max(0, save_ms) / 1000.0, self.debounce)
        self.max_delay = max(_MAX_DELAY_MIN_S, self.debounce * _MAX_DELAY_FACTOR)
        self.embed = embed
        self.progress = progress  # shown for full rescans (the initial index): they can be long
        self.batches = 0  # batches run so far
        self.last_event: WatchEvent | None = None
        self.embed_error = ""  # why vectors are no longer refreshed, when embedding failed
        self._targeted = 0  # batches since the last full embedding run

        self._matcher = IgnoreMatcher(self.root, service.settings.index)
        self._own_files = _index_files(self.root, service.db_path) if service.db_path else frozenset()
        self._cond = threading.Condition()
        self._files: set[str] = set()
        self._dirs: set[str] = set()
        self._rescan = initial_index
        self._first_change = time.monotonic() if initial_index else 0.0
        self._last_change = 0.0
        self._attempts: dict[frozenset[str], int] = {}
        self._busy = False
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._observer: Any = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Watcher:
        if self._thread is not None:
            return self
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                watcher._on_fs_event(event)

        # watchdog warns when a folder moved out of the tree comes back (it re-adds its watch):
        # expected here, and the folder's files are re-read from disk anyway
        warnings.filterwarnings("ignore", message="Callback with id", category=RuntimeWarning)
        observer = Observer()
        observer.schedule(_Handler(), str(self.root), recursive=True)
        observer.daemon = True
        observer.start()
        self._observer = observer
        self._thread = threading.Thread(target=self._loop, name="coderag-watcher", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop watching; a batch already running finishes first (changes still queued are left
        to the next index run, which finds them by size and time)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stopping

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until nothing is queued or being indexed (True), or the timeout passed (False)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._busy or self._has_work():
                left = deadline - time.monotonic()
                if left <= 0 or self._stopping:
                    return False
                self._cond.wait(min(left, 0.1))
        return True

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ the observer's side
    def _on_fs_event(self, event: Any) -> None:
        kind = event.event_type
        if kind not in _FS_CHANGES:
            return  # opened, closed, closed_no_write
        paths = [event.src_path]
        if kind == "moved":
            paths.append(event.dest_path)  # a move is a delete of src and a create of dest
        for raw in paths:
            self.notice(os.fsdecode(raw), is_dir=bool(event.is_directory), modified=kind == "modified")

    def notice(self, path: str | Path, *, is_dir: bool = False, modified: bool = False) -> None:
        """Record that a path (absolute, or relative to the root) changed."""
        rel = self._relative(path)
        if rel is None or rel in self._own_files:
            return
        name = rel.rsplit("/", 1)[-1]
        with self._cond:
            if not is_dir and (name in IGNORE_FILES or rel == ".git/info/exclude"):
                parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
                if rel == ".git/info/exclude" or not parent or not self._matcher.is_ignored(parent, True):
                    self._matcher.reset()
                    self._rescan = True  # what is ignored may have changed anywhere below
                    self._touch()
                    return
            if is_dir:
                if modified or self._matcher.is_ignored(rel, is_dir=True):
                    return  # a folder's own time changed: its files report their changes
                self._dirs.add(rel)
            else:
                if self._matcher.is_ignored(rel):
                    return
                self._files.add(rel)
            self._touch()

    def _touch(self) -> None:
        """Called with the lock held after a change was recorded: restart the quiet period."""
        now = time.monotonic()
        if not self._first_change:  # the first change of a new batch
            self._first_change = now
        self._last_change = now
        self._cond.notify_all()

    def quiet_period(self) -> float:
        """Seconds of quiet a pending batch waits for (call with the lock held): short for a
        save (a few files), the full debounce for a burst (more files, a folder, a rescan)."""
        if self._rescan or self._dirs or len(self._files) > SAVE_FILES:
            return self.debounce
        return self.save_debounce

    def _has_work(self) -> bool:
        return bool(self._files or self._dirs or self._rescan)

    def _relative(self, path: str | Path) -> str | None:
        p = str(path)
        if not os.path.isabs(p):
            rel = p
        else:
            root = str(self.root)
            if p == root or not p.startswith(root + os.sep):
                return None
            rel = p[len(root) + 1 :]
        rel = rel.replace(os.sep, "/").strip("/")
        return repo_path(rel) if rel else None  # the index's form of a name that is not UTF-8

    # ------------------------------------------------------------------ the watcher's thread
    def _loop(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._stopping and not self._has_work():
                        self._cond.wait()
                    if self._stopping:
                        return
                    queued = self._pending_paths()
                    rescan = self._rescan
                self._emit(WatchEvent("queued", queued, full=rescan,
                                      message=f"{len(queued)} changed paths waiting" if queued else "rescan"))
                with self._cond:
                    while not self._stopping:
                        now = time.monotonic()
                        wake = min(self._last_change + self.quiet_period(), self._first_change + self.max_delay)
                        if now >= wake:
                            break
                        self._cond.wait(wake - now)
                    if self._stopping:
                        return
                    files, dirs, rescan = self._files, self._dirs, self._rescan
                    self._files, self._dirs, self._rescan = set(), set(), False
                    self._first_change = 0.0
                    self._busy = True
                try:
                    self._run_batch(files, dirs, rescan)
                finally:
                    with self._cond:
                        self._busy = False
                        self._cond.notify_all()
        finally:
            self._close_connection()

    def _pending_paths(self) -> tuple[str, ...]:
        return tuple(sorted(self._files | {d + "/" for d in self._dirs}))

    def _run_batch(self, files: set[str], dirs: set[str], rescan: bool) -> None:
        started = time.perf_counter()
        self.batches += 1
        batch = self.batches
        paths: tuple[str, ...] = ()
        try:
            db = self.service.db  # this thread's own connection
            if not rescan:
                paths = tuple(sorted(files | self._expand(dirs)))
                if not paths:
                    self._emit(WatchEvent("indexed", (), batch, message="nothing to update",
                                          seconds=time.perf_counter() - started))
                    return
            self._emit(WatchEvent("indexing", paths, batch, full=rescan,
                                  message="rescanning the repository" if rescan else f"{len(paths)} files"))
            before = _orphan_keys(read.orphans(db, _ORPHANS_COUNTED))
            progress = self.progress if rescan else None
            summary = self.service.index(only=None if rescan else list(paths), progress=progress)
            note = self._refresh_vectors(progress, paths)
            orphans = read.orphans(db, _ORPHANS_COUNTED)
        except Exception as exc:  # keep watching: report and retry the batch once
            self._emit(WatchEvent("error", paths, batch, message=f"{type(exc).__name__}: {exc}",
                                  seconds=time.perf_counter() - started, full=rescan))
            self._retry(files, dirs, rescan)
            return
        self._attempts.pop(_batch_key(files, dirs, rescan), None)
        new = [e for e in orphans if _orphan_key(e) not in before]
        listed = tuple(new + [e for e in orphans if _orphan_key(e) in before])[:_ORPHANS_LISTED]
        seconds = time.perf_counter() - started
        event = WatchEvent(
            "indexed", paths, batch, summary=summary, orphaned=len(orphans), new_orphans=len(new),
            orphans=listed, seconds=seconds, full=rescan,
            message=describe(summary, len(paths), seconds, new, len(orphans), rescan) + note,
        )
        self._emit(event)

    def _expand(self, dirs: Iterable[str]) -> set[str]:
        """The files a changed folder stands for: those the index knows under it (deleted or
        moved away) and those on disk (created or moved in)."""
        out: set[str] = set()
        for d in dirs:
            out.update(tracked.paths_under(self.service.db, d))
            top = self.root / fs_path(d)
            if not top.is_dir():
                continue
            for folder, subdirs, names in os.walk(top):
                base = repo_path(Path(folder).relative_to(self.root).as_posix())
                subdirs[:] = [s for s in subdirs if not self._ignored(f"{base}/{repo_path(s)}", True)]
                out.update(f"{base}/{n}" for n in map(repo_path, names) if not self._ignored(f"{base}/{n}", False))
        return out - self._own_files

    def _ignored(self, rel: str, is_dir: bool) -> bool:
        with self._cond:
            return self._matcher.is_ignored(rel, is_dir)

    def _refresh_vectors(self, progress: ProgressFn | None, paths: Sequence[str] = ()) -> str:
        if not self.embed or self.embed_error or not self.service.settings.embed.enabled:
            return ""
        # the batch's files only (two scans of the whole index less), with a full run, which
        # also drops stale vectors, every _FULL_EMBED_EVERY batches
        self._targeted = (self._targeted + 1) % _FULL_EMBED_EVERY if paths else 0
        try:
            self.service.embed(progress, should_stop=lambda: self._stopping,
                               paths=list(paths) if paths and self._targeted else None)
        except Exception as exc:  # the structural update stands; stop trying until restarted
            self.embed_error = f"{type(exc).__name__}: {exc}"
            return f"; vectors not refreshed ({self.embed_error})"
        return ""

    def _retry(self, files: set[str], dirs: set[str], rescan: bool) -> None:
        key = _batch_key(files, dirs, rescan)
        tries = self._attempts.get(key, 0)
        if tries >= _RETRIES:
            self._attempts.pop(key, None)
            return
        self._attempts[key] = tries + 1
        with self._cond:
            self._files |= files
            self._dirs |= dirs
            self._rescan = self._rescan or rescan
            self._touch()

    def _emit(self, event: WatchEvent) -> None:
        self.last_event = event
        if self.on_event is None:
            return
        with contextlib.suppress(Exception):  # a failing listener must not stop the watcher
            self.on_event(event)

    def _close_connection(self) -> None:
        """Close the connection this thread opened (the service keeps one per thread)."""
        self.service.close_thread_store()


def describe(summary: IndexSummary, files: int, seconds: float, new: list[EdgeRef], orphaned: int,
             rescan: bool = False) -> str:
    """One line per batch: `updated 3 files in 0.21s; 2 orphaned callers: a.py:3 use -> helper`."""
    if rescan:
        noun = "file" if summary.files_indexed == 1 else "files"
        head = (f"indexed {summary.files_indexed} {noun} ({summary.files_unchanged} unchanged, "
                f"{summary.files_deleted} deleted) in {seconds:.2f}s")
    else:
        noun = "file" if files == 1 else "files"
        head = f"updated {files} {noun} in {seconds:.2f}s"
        if summary.files_deleted:
            head += f" ({summary.files_deleted} deleted)"
    if summary.files_failed:
        head += f"; {summary.files_failed} failed"
    if new:
        shown = ", ".join(_orphan_text(e) for e in new[:3])
        more = f" and {len(new) - 3} more" if len(new) > 3 else ""
        noun = "caller" if len(new) == 1 else "callers"
        head += f"; {len(new)} orphaned {noun}: {shown}{more}"
    elif orphaned:
        head += f"; {orphaned} orphaned in the index"
    return head


def _batch_key(files: set[str], dirs: set[str], rescan: bool) -> frozenset[str]:
    return frozenset(files | {d + "/" for d in dirs} | ({"<rescan>"} if rescan else set()))


def _orphan_text(e: EdgeRef) -> str:
    src = e.source
    where = f"{src.path}:{e.line} {src.qualname}" if src is not None else f"?:{e.line}"
    return f"{where} -> {e.name}"


def _orphan_key(e: EdgeRef) -> tuple[str, str, str, int]:
    src = e.source
    return (src.path if src else "", src.qualname if src else "", e.name, e.line)


def _orphan_keys(edges: Iterable[EdgeRef]) -> set[tuple[str, str, str, int]]:
    return {_orphan_key(e) for e in edges}


def _index_files(root: Path, db_path: Path) -> frozenset[str]:
    """The index file and its companions, relative to root, when the index lives in the repo."""
    try:
        rel = db_path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return frozenset()
    return frozenset(rel + suffix for suffix in ("", "-wal", "-shm", "-journal"))
