"""Rows for a store written directly (one file's units, chunks and meta)."""

from __future__ import annotations

from coderag_tui.config import ChunkSettings
from coderag_tui.parsing.extract import content_hash, parse_source
from coderag_tui.parsing.languages import detect_language
from coderag_tui.store.write import FileMeta, FileRows, file_rows


def rows_of(path: str, text: str) -> tuple[FileRows, FileMeta]:
    """A file's rows as the parse workers make them (for text the indexer would not read)."""
    data = text.encode()
    parsed = parse_source(path, data, detect_language(path, data[:256]), ChunkSettings())
    return file_rows(parsed), FileMeta(path, content_hash(data), len(data), 0)
