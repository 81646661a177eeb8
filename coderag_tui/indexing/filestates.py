"""The index state of every file discovery finds: indexed, embedded, skipped (and why),
failed or pending, for the file lists of the interfaces."""

from __future__ import annotations

from pathlib import Path

from coderag_tui.config import IndexSettings
from coderag_tui.models import FileState
from coderag_tui.parsing.languages import detect_language
from coderag_tui.sources.discovery import walk
from coderag_tui.sources.names import fs_path
from coderag_tui.store import read
from coderag_tui.store.backend import StoreBackend


def file_states(db: StoreBackend, root: Path, db_path: Path | None, settings: IndexSettings) -> list[FileState]:
    """Every file discovery finds under `root`, with its index state (one walk and one query);
    the index file itself (`db_path`, and its -wal/-shm) is left out when it lies in the repository."""
    indexed = read.file_index_states(db, db.get_meta("embed_model"))
    skipped = read.skip_reasons(db)
    out = []
    walked = walk(root, settings)
    own = {p.name for p in (db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm"))} if db_path else set()
    for path in sorted({c.path for c in walked.files} | set(walked.skips)):
        if (db_path is not None and path.rsplit("/", 1)[-1] in own
                and (root / fs_path(path)).resolve().parent == db_path.resolve().parent):
            continue  # the index itself
        if path in indexed:
            language, chunks, vectors = indexed[path]
            state = "embedded" if chunks and vectors >= chunks else "indexed"
            # indexed as plain text after its parse was refused: searchable, with a note why
            out.append(FileState(path, language, state, reason=skipped.get(path, "")))
        elif path in skipped or path in walked.skips:
            reason = skipped.get(path) or walked.skips[path]
            spec = detect_language(path)
            language = spec.name if spec else ""
            kind, _, detail = reason.partition(":")
            if kind == "error":
                out.append(FileState(path, language, "error",
                                     error=detail.strip() or "could not be read or parsed"))
            else:
                out.append(FileState(path, language, "skipped", reason=reason))
        else:
            spec = detect_language(path)
            out.append(FileState(path, spec.name if spec else "", "pending"))
    return out


def stored_states(db: StoreBackend) -> list[FileState]:
    """What the index holds, file by file (a repository whose files are not on this machine)."""
    skipped = read.skip_reasons(db)
    out = [FileState(path, language, "embedded" if chunks and vectors >= chunks else "indexed",
                     reason=skipped.get(path, ""))
           for path, (language, chunks, vectors) in read.file_index_states(db, db.get_meta("embed_model")).items()]
    return sorted(out, key=lambda f: f.path)
