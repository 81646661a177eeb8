"""Bulk vector loads on PostgreSQL: without the HNSW index while rows go in, built once after.

An HNSW insert per vector costs a graph search each (~14 ms on a loaded two-core machine);
building the index over all rows at once costs less and gives the same kind of graph.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

INDEX = "CREATE INDEX IF NOT EXISTS vectors_hnsw ON vectors USING hnsw (embedding vector_cosine_ops)"


@contextmanager
def vectors_without_index(conn: Any, work_mem: str = "1GB") -> Iterator[None]:
    """Drop the vectors' HNSW index for the block, build it again after (also on an error: a
    store never stays without it). `work_mem`: the build's maintenance_work_mem (a graph that
    fits builds far faster)."""
    conn.execute("DROP INDEX IF EXISTS vectors_hnsw")
    try:
        yield
    finally:
        conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (work_mem,))
        conn.execute(INDEX)
        conn.execute("ANALYZE vectors")
