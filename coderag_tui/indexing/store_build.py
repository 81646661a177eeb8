"""Indexing into any `StoreBackend` (the PostgreSQL backend's indexer): walk, parse (with the
SQLite indexer's pool of parse workers), write each changed file in its own transaction on one
connection, drop files that are gone or now skipped, record the skips, resolve the whole graph
with the SQLite indexer's resolver (`graph.resolve_store`: imports, receivers, bases, TESTS
edges), embed.

The SQLite index keeps its own indexer (`indexer.py`: batched transactions, deferred indexes,
incremental resolution of the edges a change touches); this one resolves the whole graph after
every run that changed something, which gives the same graph (resolution is a function of the
files).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from coderag_tui.config import Settings
from coderag_tui.indexing.embedder import EmbeddingModel
from coderag_tui.indexing.graph import resolve_store
from coderag_tui.indexing.workers import Job, gc_paused, parse_outcomes
from coderag_tui.models import IndexSummary, Progress
from coderag_tui.sources.discovery import walk
from coderag_tui.sources.names import fs_path
from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.write import FileMeta

ProgressFn = Callable[[Progress], None]
RESOLVE_PENDING = "resolve_pending"


def build(store: StoreBackend, root: Path, settings: Settings, progress: ProgressFn | None = None) -> IndexSummary:
    """Bring the store up to date with the repository at `root`."""
    with gc_paused():
        return _build(store, root.resolve(), settings, progress or (lambda p: None))


def _build(store: StoreBackend, root: Path, settings: Settings, emit: ProgressFn) -> IndexSummary:
    start = time.perf_counter()
    walked = walk(root, settings.index)
    known = store.file_hashes()
    old_skips = store.skips()
    # what the SQLite indexer records: discovery's skips, files skipped or failed when read,
    # files indexed as plain text ("partial: why")
    skips: dict[str, tuple[str, int, int]] = {p: (r, -1, -1) for p, r in walked.skips.items()}
    jobs: list[Job] = []
    for cand in walked.files:
        prev = old_skips.get(cand.path)
        if cand.path not in known and prev is not None and prev[1:] == (cand.size, cand.mtime_ns):
            skips[cand.path] = prev  # skipped before and not touched since: not read again
            continue
        jobs.append(Job(cand.path, os.path.join(str(root), fs_path(cand.path)), cand.size, cand.mtime_ns,
                        known.get(cand.path, "")))
    indexed = unchanged = failed = 0
    changed = store.get_meta(RESOLVE_PENDING) == "1"  # a run died between its writes and its resolve

    def mark() -> None:
        # committed before the first write: a run killed after it is resolved by the next one
        nonlocal changed
        if not changed:
            store.set_meta(RESOLVE_PENDING, "1")
            changed = True

    errors: list[str] = list(walked.warnings)
    total = len(jobs)
    emit(Progress("parse", 0, total, f"{total} files to read"))
    for n, out in enumerate(parse_outcomes(jobs, settings, str(root)), 1):
        job = out.job
        if out.kind == "parsed" and out.rows is not None:
            mark()
            store.write_file(out.rows, FileMeta(job.path, out.hash, job.size, job.mtime_ns))
            indexed += 1
            if out.reason:
                errors.append(f"{job.path}: {out.reason}")
                skips[job.path] = (f"partial: {out.reason}", job.size, job.mtime_ns)
        elif out.kind == "unchanged":
            unchanged += 1
            if job.path in old_skips:  # a note on how it was indexed (as plain text)
                skips[job.path] = old_skips[job.path]
        elif out.kind == "skip":
            skips[job.path] = (out.reason, job.size, job.mtime_ns)
            if job.path in known:
                mark()
                store.delete_file(job.path)
        else:
            failed += 1
            errors.append(f"{job.path}: {out.reason}")
            skips[job.path] = (f"error: {out.reason}", job.size, job.mtime_ns)
        if n % 50 == 0 or n == total:
            emit(Progress("parse", n, total, job.path))
    gone = sorted(set(known) - {c.path for c in walked.files})
    if gone:
        mark()
    deleted = sum(store.delete_file(path) for path in gone)
    store.replace_skips(skips)
    if changed:
        emit(Progress("resolve", 0, 1, "resolving the graph"))
        resolve_store(store)
        store.set_meta(RESOLVE_PENDING, "0")
        store.refresh_statistics()
        emit(Progress("resolve", 1, 1, "graph resolved"))
    counts = store.counts()
    reasons: dict[str, int] = {}
    for reason, _, _ in skips.values():
        reasons[reason.split(":", 1)[0]] = reasons.get(reason.split(":", 1)[0], 0) + 1
    return IndexSummary(
        files_seen=len(walked.files), files_indexed=indexed, files_unchanged=unchanged, files_deleted=deleted,
        files_failed=failed, units=counts.units, chunks=counts.chunks, edges=store.edge_count(),
        skips=dict(sorted(reasons.items())), seconds=time.perf_counter() - start, errors=tuple(errors[:50]))


def embed(store: StoreBackend, model: EmbeddingModel, progress: ProgressFn | None = None, batch: int = 256) -> int:
    """Give every chunk text without a vector of `model` one. Returns the vectors written."""
    written = 0
    while True:
        pending = store.chunks_without_vector(model.id, batch)
        if not pending:
            return written
        vectors = model.embed([text for _, text in pending])
        stored = store.set_vectors(model.id, [h for h, _ in pending], vectors)
        if stored == 0:  # nothing new could be stored: stop rather than loop
            return written
        written += stored
        if progress is not None:
            progress(Progress("embed", written, written + len(pending)))
