"""The structural indexer: discover, diff by content hash, parse, write, resolve the graph.

Each file is replaced in a transaction (batched several files per transaction), so killing the
process never leaves a half-written file. The `resolve_pending` mark is committed before the
first file is written and cleared in the transaction that finishes the graph: a run that finds
it set resolves the whole graph, since which names the dead run had changed is lost with it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from coderag_tui.config import Settings
from coderag_tui.indexing.graph import FullPlan, apply_full, plan_full, resolve
from coderag_tui.indexing.profiles import apply_summary_search, describe_changes
from coderag_tui.indexing.workers import (
    Feed,
    Job,
    Outcome,
    gc_paused,
    parse_outcomes,
    worker_count,
)
from coderag_tui.models import IndexSummary, Progress
from coderag_tui.sources.discovery import stat_paths, walk
from coderag_tui.sources.names import fs_path
from coderag_tui.store import rank_values, read, tracked
from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.descriptions import neighbour_files
from coderag_tui.store.graph_edges import StoreGraph
from coderag_tui.store.write import (
    FileMeta,
    WriteBatch,
    defer_indexes,
    delete_file,
    mark_file_set_changed,
    mark_own_orphans,
    restore_indexes,
    save_excluded,
    write_file,
)

ProgressFn = Callable[[Progress], None]
# Files per write transaction: few commits (each one flushes FTS5's pending terms into a new
# segment and may checkpoint the WAL, so small transactions cost far more than their rows).
_BATCH_FILES = 1000
_BATCH_SECONDS = 2.0
_IDLE_BATCH_FILES = 256  # while waiting for parse workers, write once this many files are pending
_BULK_MIN_FILES = 200  # a build into an empty index this big creates its secondary indexes last


class Indexer:
    def __init__(self, db: StoreBackend, root: Path, settings: Settings) -> None:
        self.db = db
        self.root = root.resolve()
        self.settings = settings

    def run(
        self,
        *,
        only: Iterable[str] | None = None,
        rebuild: bool = False,
        progress: ProgressFn | None = None,
    ) -> IndexSummary:
        """Bring the index up to date. `only`: limit the work to these relative paths."""
        with gc_paused(), contextlib.ExitStack() as cleanup:
            return self._run(only=only, rebuild=rebuild, progress=progress, cleanup=cleanup)

    def _run(self, *, only: Iterable[str] | None, rebuild: bool, progress: ProgressFn | None,
             cleanup: contextlib.ExitStack) -> IndexSummary:
        started = time.perf_counter()
        emit = progress or (lambda p: None)
        db = self.db
        emit(Progress("discover", 0, 0, "scanning files"))
        if db.get_meta("deferred_indexes"):  # a bulk build was killed before its indexes came back
            with db.transaction():
                restore_indexes(db)
        # an earlier run died between writing files and resolving their edges
        interrupted = db.get_meta("resolve_pending") == "1"
        if rebuild:
            self._clear()
        only_set = set(only) if only is not None else None
        feed: Feed | None = None
        workers = worker_count(self.settings)
        if only_set is None and workers > 1 and tracked.is_empty(db):
            # an empty index: every file found is a job, so parsing can start during the walk
            feed = Feed(self.settings, str(self.root), workers)
            cleanup.callback(feed.close)
        if only_set is None:
            walked = walk(self.root, self.settings.index, on_file=feed.add if feed is not None else None)
        else:  # just these paths: no walk of the whole tree (the watcher, git diffs)
            walked = stat_paths(self.root, only_set, self.settings.index)
        candidates = {c.path: c for c in walked.files}
        found = len(candidates)
        emit(Progress("discover", found, found, f"{found} files found, {len(walked.skips)} skipped"))

        if only_set is None:
            known = tracked.file_states(db)
            known_total = len(known)
        else:  # the given paths' rows (reading every file's row costs more than a small batch)
            known = tracked.file_states(db, only_set)
            known_total = read.file_count(db)
        old_skips = tracked.skips(db)
        skips: dict[str, tuple[str, int, int]] = {}
        unchanged = 0
        if only_set is not None:
            skips = {p: v for p, v in old_skips.items() if p not in only_set}
            unchanged = known_total - len(known)
        unchanged_others = unchanged
        skips.update({p: (r, -1, -1) for p, r in walked.skips.items()})
        jobs: list[Job] = feed.jobs if feed is not None else []
        root = str(self.root)  # os.path.join: a pathlib join per file cost 0.05-0.1 s on Django
        for path, cand in (() if feed is not None else candidates.items()):
            entry = known.get(path)
            if entry is not None and entry[2] == cand.size and entry[3] == cand.mtime_ns:
                unchanged += 1
                if path in old_skips:  # a note on how it was indexed (as plain text)
                    skips[path] = old_skips[path]
                continue
            prev_skip = old_skips.get(path)
            if prev_skip is not None and prev_skip[1] == cand.size and prev_skip[2] == cand.mtime_ns:
                skips[path] = prev_skip
                continue
            jobs.append(Job(path, os.path.join(root, fs_path(path)), cand.size, cand.mtime_ns, entry[1] if entry else ""))
        deleted = [p for p in known if p not in candidates and (only_set is None or p in only_set)]

        total = len(jobs)
        emit(Progress("parse", 0, total, f"{total} files to parse, {unchanged} unchanged"))
        changed_ids: set[int] = set()
        file_set = [False]  # a file was added or removed (imports must all be re-resolved)
        names: set[str] = set()
        inbound: set[int] = set()
        own_calls: dict[int, dict[tuple[str, str], str]] = {}  # a changed file's calls' former targets
        # files whose profiles a change can alter beyond the changed files' present neighbours:
        # those they referred to or were referred to by before it, those a re-resolved edge
        # touches; and whether a file went (a full pass of the profiles finds what listed it)
        also: set[int] = set()
        removed_any = [bool(deleted)]
        errors: list[str] = list(walked.warnings)
        indexed = failed = units = chunks = 0
        pending_writes: list[Outcome] = []
        last_flush = time.perf_counter()
        parse_started = time.perf_counter()

        bulk = not known_total and len(jobs) >= _BULK_MIN_FILES
        if jobs or deleted:
            with db.transaction():
                db.set_meta("resolve_pending", "1")
                db.tune_keywords()
                if bulk:
                    defer_indexes(db)
            if deleted:
                with db.transaction():
                    for path in deleted:
                        removed = delete_file(db, path)
                        if removed is not None:
                            names |= removed.names

        def flush() -> None:
            nonlocal indexed, units, chunks, last_flush
            if not pending_writes:
                return
            with db.transaction():
                # next free ids, and the batch's files indexed before it, read once under the
                # write lock (another writer may have added one since this run looked)
                batch = WriteBatch(known={p: v[0] for p, v in tracked.file_states(
                    db, [o.job.path for o in pending_writes if o.kind != "unchanged"]).items()})
                if batch.known:
                    also.update(neighbour_files(db, sorted(batch.known.values())))
                for out in pending_writes:
                    job = out.job
                    if out.kind == "unchanged":
                        tracked.touch_file(db, job.path, job.size, job.mtime_ns)
                        continue
                    rows = out.rows
                    assert rows is not None
                    meta = FileMeta(job.path, out.hash, job.size, job.mtime_ns)
                    file_id, removed = write_file(db, rows, meta, batch)
                    if removed is None:
                        file_set[0] = True
                    changed_ids.add(file_id)
                    if removed is None:
                        names.update(r[3] for r in rows.units[1:])  # unit rows: (index, parent, kind, name, ...)
                    else:
                        # only names whose definitions moved, appeared or went away can resolve
                        # differently elsewhere; edges that pointed into the file are redone by id
                        layout = {(r[3], r[2], r[4]) for r in rows.units[1:]}  # (name, kind, qualname)
                        names.update(n for n, _, _ in layout ^ removed.layout)
                        inbound.update(eid for eid, _ in removed.inbound_edges)
                        if removed.prior_targets:
                            own_calls[file_id] = removed.prior_targets
                    indexed += 1
                    units += len(rows.units) - 1  # counted as IndexCounts does: not the file unit
                    chunks += len(rows.chunks)
                batch.finish(db)
            pending_writes.clear()
            last_flush = time.perf_counter()

        def idle(last: bool) -> None:  # waiting for the parse workers: write what has come back
            # (while the last batches are parsed, all of it: the files written after the last
            # batch arrives are written on one core)
            if len(pending_writes) >= (1 if last else _IDLE_BATCH_FILES):
                flush()

        for done, out in enumerate(self._outcomes(jobs, idle, feed), start=1):
            job = out.job
            if out.kind == "skip":
                skips[job.path] = (out.reason, job.size, job.mtime_ns)
                if job.path in known:
                    file_set[0] = True
                    removed_any[0] = True
                    with db.transaction():
                        removed = delete_file(db, job.path)
                    if removed is not None:
                        names |= removed.names
            elif out.kind == "error":
                failed += 1
                errors.append(f"{job.path}: {out.reason}")
                skips[job.path] = (f"error: {out.reason}", job.size, job.mtime_ns)
            else:
                if out.kind == "unchanged":
                    unchanged += 1
                    if job.path in old_skips:  # a note on how it was indexed (as plain text)
                        skips[job.path] = old_skips[job.path]
                elif out.reason:
                    errors.append(f"{job.path}: {out.reason}")
                    skips[job.path] = (f"partial: {out.reason}", job.size, job.mtime_ns)
                pending_writes.append(out)
            if len(pending_writes) >= _BATCH_FILES or time.perf_counter() - last_flush > _BATCH_SECONDS:
                flush()
            if done % 25 == 0 or done == total:
                elapsed = max(time.perf_counter() - parse_started, 1e-6)
                rate = done / elapsed
                emit(Progress("parse", done, total, job.path, units, chunks, rate,
                              (total - done) / rate if rate else 0.0))
        flush()
        if total:  # the parse row's last word: what it wrote (the files are written by now)
            rate = total / max(time.perf_counter() - parse_started, 1e-6)
            emit(Progress("parse", total, total, f"{units:,} units, {chunks:,} chunks written", units, chunks, rate))

        with db.transaction():
            tracked.replace_skips(db, skips)
        file_set_changed = file_set[0]
        pending = db.get_meta("resolve_pending") == "1"
        if pending or changed_ids or deleted:
            emit(Progress("resolve", 0, 1, "resolving the graph"))
            full = rebuild or not known_total or len(changed_ids) > 0.5 * max(known_total, 1) or interrupted
            plan = self._plan_beside_indexes() if bulk and full else None
            with db.transaction():
                if plan is not None:
                    apply_full(StoreGraph(db), plan, fresh=True)
                    restore_indexes(db)
                else:
                    resolve(db, changed_files=None if full else changed_ids, names=names, edge_ids=inbound,
                            files_changed=bool(deleted) or file_set_changed, touched=also)
                for file_id, prior in own_calls.items():
                    mark_own_orphans(db, file_id, prior)
                # profiles list importers and callers: a deleted file's are found only by a full pass
                describe_changes(db, None if full or plan is not None or removed_any[0] else changed_ids, also)
                # a file's inbound counts move with other files' edges: those of the changed files,
                # their neighbours before (in `also`) and after, and what a re-resolved edge touched
                # (in `also`); file-level TESTS edges are all derived again when files come or go
                rank_values.refresh_inbound(db, None if full or plan is not None or removed_any[0] or file_set_changed
                                            else changed_ids | also | neighbour_files(db, sorted(changed_ids)))
                db.set_meta("resolve_pending", "0")
                db.set_meta("last_update", str(time.time()))
                db.set_meta("repo_root", str(self.root))
            db.refresh_statistics(full=bulk or (full and len(changed_ids) > _BULK_MIN_FILES))
            emit(Progress("resolve", 1, 1, "graph resolved"))
        elif not db.get_meta("last_update"):
            with db.transaction():
                db.set_meta("last_update", str(time.time()))
                db.set_meta("repo_root", str(self.root))
        if db.get_meta("deferred_indexes"):
            with db.transaction():
                restore_indexes(db)
        apply_summary_search(db, self.settings.summaries.search)
        rank_values.backfill_runs(db)
        edges = tracked.edge_count(db) if only_set is None else None
        if only_set is None:  # a partial run did not look at the excluded folders
            save_excluded(db, walked.excluded)
        summary = IndexSummary(
            files_seen=len(candidates) + (unchanged_others if only_set is not None else 0),
            files_indexed=indexed,
            files_unchanged=unchanged,
            files_deleted=len(deleted),
            files_failed=failed,
            units=units,
            chunks=chunks,
            edges=edges,
            skips=_count(r.split(":", 1)[0] for r, _, _ in skips.values()),
            seconds=time.perf_counter() - started,
            errors=tuple(errors[:50]),
            excluded=tuple(walked.excluded),
        )
        emit(Progress("done", total, total, f"{indexed} files indexed", units, chunks))
        return summary

    def _outcomes(self, jobs: list[Job], idle: Callable[[bool], None], feed: Feed | None) -> Iterable[Outcome]:
        return parse_outcomes(jobs, self.settings, str(self.root), idle, feed)

    def _plan_beside_indexes(self) -> FullPlan:
        """A fresh build: resolve the graph on a second, read-only connection while this one
        creates the deferred indexes, but that of edges.dst, which the resolve's answer
        rewrites (the resolve is Python; SQLite builds indexes without the GIL, so the two use
        two cores)."""
        plans: list[FullPlan] = []
        failures: list[BaseException] = []

        def work() -> None:
            try:
                reader = self.db.reader()
                reader.execute("BEGIN")  # one snapshot for all the reads
                try:
                    plans.append(plan_full(StoreGraph(reader)))
                finally:
                    reader.execute("COMMIT")
            except BaseException as exc:  # re-raised on the caller's thread
                failures.append(exc)

        thread = threading.Thread(target=work, name="coderag-resolve", daemon=True)
        thread.start()
        try:
            with self.db.transaction():
                # the resolve rewrites edges.dst: its index waits for that (sorting every edge
                # once beats moving ~100k entries; the small partial indexes naming dst are kept
                # up to date by the rewrite, which costs less than scanning every edge again)
                restore_indexes(self.db, skip={"edges_dst"})
        finally:
            thread.join()
        if failures:
            raise failures[0]
        return plans[0]

    def _clear(self) -> None:
        with self.db.transaction():
            tracked.clear_index(self.db)
            mark_file_set_changed(self.db)


def _count(reasons: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in reasons:
        out[r] = out.get(r, 0) + 1
    return dict(sorted(out.items()))

