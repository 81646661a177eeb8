"""Indexing into any `StoreBackend` (the PostgreSQL backend's indexer): walk, parse, write each
changed file in its own transaction, drop files that are gone, link calls by name, embed.

The SQLite index keeps its own indexer (`indexer.py`: parallel parse workers, deferred
indexes, the full graph resolver); this one runs the same parse and row building in one
process and stores through the interface only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from coderag_tui.config import Settings
from coderag_tui.indexing.embedder import EmbeddingModel
from coderag_tui.indexing.workers import Job, process_file
from coderag_tui.models import IndexSummary, Progress
from coderag_tui.sources.discovery import walk
from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.write import FileMeta

ProgressFn = Callable[[Progress], None]


def build(store: StoreBackend, root: Path, settings: Settings, progress: ProgressFn | None = None) -> IndexSummary:
    """Bring the store up to date with the repository at `root`."""
    start = time.perf_counter()
    walked = walk(root, settings.index)
    known = store.file_hashes()
    indexed = unchanged = failed = 0
    errors: list[str] = []
    skips: dict[str, int] = {}
    for reason in walked.skips.values():
        key = reason.split(":", 1)[0]
        skips[key] = skips.get(key, 0) + 1
    total = len(walked.files)
    for n, cand in enumerate(walked.files, 1):
        job = Job(cand.path, str(root / cand.path), cand.size, cand.mtime_ns, known.get(cand.path, ""))
        out = process_file(job, settings.index, settings.chunk)
        if out.kind == "parsed" and out.rows is not None:
            store.write_file(out.rows, FileMeta(cand.path, out.hash, cand.size, cand.mtime_ns))
            indexed += 1
        elif out.kind == "unchanged":
            unchanged += 1
        elif out.kind == "skip":
            skips[out.reason.split(":", 1)[0]] = skips.get(out.reason.split(":", 1)[0], 0) + 1
            store.delete_file(cand.path)
        else:
            failed += 1
            errors.append(f"{cand.path}: {out.reason}")
        if progress is not None and (n % 50 == 0 or n == total):
            progress(Progress("parse", n, total))
    present = {c.path for c in walked.files}
    deleted = sum(store.delete_file(path) for path in sorted(set(known) - present))
    store.link_calls()
    counts = store.counts()
    return IndexSummary(
        files_seen=total, files_indexed=indexed, files_unchanged=unchanged, files_deleted=deleted,
        files_failed=failed, units=counts.units, chunks=counts.chunks, edges=store.edge_count(), skips=skips,
        seconds=time.perf_counter() - start, errors=tuple(errors[:50]))


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
