"""pgvector's side of a PostgreSQL store: vectors as text and back, and the HNSW search of the
nearest vectors, with what a caller reads of them in the same statement (a round trip to the
server costs more than the rows)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from coderag_tui.store import sql as q

if TYPE_CHECKING:
    from coderag_tui.store.postgres.store import PostgresStore

EF_SEARCH = 200  # HNSW's search width (the vector retriever asks for up to ~180 neighbours)


def vector_literal(vec: np.ndarray) -> str:
    return "[" + ",".join(map(repr, np.asarray(vec, dtype=np.float32).ravel().tolist())) + "]"


def vector_from_binary(data: bytes) -> bytes:
    """pgvector's binary form (dimensions, unused, float4 big-endian) as float32 bytes."""
    return np.frombuffer(data, dtype=">f4", offset=4).astype(np.float32).tobytes()


def nearest(store: PostgresStore, vec: np.ndarray, k: int, then: str) -> list[q.Row]:
    """`then` over `nn(hash, d)`: the k vectors nearest `vec` (HNSW). No vectors (the table is
    always there): no rows, without a round trip to ask `vec_ready` first."""
    if k <= 0:
        return []
    literal = vector_literal(vec)
    query = ("WITH nn AS MATERIALIZED (SELECT hash, embedding <=> ?::vector AS d FROM vectors "
             f"ORDER BY embedding <=> ?::vector LIMIT ?) {then}")
    if k <= EF_SEARCH:  # the connection's search width
        return store.rows(query, (literal, literal, k))
    with store.conn.transaction():  # a wider search for this query alone
        store.rows("SELECT set_config('hnsw.ef_search', ?, true)", (str(min(k, 1000)),))
        return store.rows(query, (literal, literal, k))
