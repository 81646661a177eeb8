"""Reads for the embedding order (indexing/embed_order.py): how many files refer to each file,
and each pending chunk's file, language and length."""

from __future__ import annotations

from collections.abc import Sequence

from coderag_tui.store.backend import StoreBackend


def file_references(db: StoreBackend) -> dict[str, int]:
    """path -> how many other files call, import or subclass its units (files nobody refers to
    are left out)."""
    return {str(p): int(n) for p, n in db.rows(
        "SELECT f.path, count(DISTINCT e.src_file) FROM edges e JOIN units u ON u.id = e.dst "
        "JOIN files f ON f.id = u.file_id WHERE e.kind IN ('CALLS', 'IMPORTS', 'INHERITS') "
        "AND e.src_file <> u.file_id GROUP BY f.path")}


def chunk_facts(db: StoreBackend, ids: Sequence[int]) -> dict[int, tuple[str, str, int]]:
    """chunk id -> (path, language, length of header and text)."""
    return {int(i): (str(p), str(lang), int(n)) for i, p, lang, n in db.rows_in(
        "SELECT c.id, f.path, f.language, length(c.header) + length(c.text) FROM chunks c "
        "JOIN files f ON f.id = c.file_id WHERE c.id IN ({marks})", list(ids))}
