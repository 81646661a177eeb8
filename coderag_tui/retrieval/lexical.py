"""BM25 over the chunks' keyword rows (names, path, signature, doc, code; the backend's:
FTS5's bm25() on SQLite, BM25 postings on PostgreSQL).

Query words are split like the indexed text (`parseURL` -> parseurl parse url; `a_b` -> a b),
stop words and words found in a large share of the chunks (or in very many) are dropped, and the
words are OR-ed; the columns are weighed (names first).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from coderag_tui.models import SearchFilters
from coderag_tui.parsing.identifiers import split_identifier
from coderag_tui.retrieval.common import ChunkMatch, match_from_row
from coderag_tui.store.backend import StoreBackend

MAX_TERMS = 200
COMMON_SHARE = 0.5  # a word in more than half of the chunks carries little: drop it
MAX_DF = 15_000  # nor a word in more chunks than this (BM25 time grows with the postings read)
MAX_POSTINGS = 20_000  # the rarest words of a long query, up to this many postings in all
DF_CACHE_TERMS = 100_000
_DF_CACHE: weakref.WeakKeyDictionary[StoreBackend, tuple[tuple[int, int], dict[str, int]]] = weakref.WeakKeyDictionary()
# the chunk state read once per store within `one_state()`
_STATE: ContextVar[dict[StoreBackend, tuple[int, int]] | None] = ContextVar("coderag_chunk_state", default=None)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_RAW = re.compile(r"\w+", re.UNICODE)
_STOP = (
    """a about above after again against all also am an and any are aren as at be because been before
    being below between both but by can cannot could couldn did didn do does doesn doing don down during
    each eg etc few for from further get gets got had hadn has hasn have haven having he her here hers
    herself him himself his how however i ie if in into is isn it its itself just let lets like ll me
    more most much must mustn my myself no nor not now of off on once only or other ought our ours
    ourselves out over own please same shan she should shouldn so some such than that the their theirs
    them themselves then there these they this those through to too under until up us use used using
    very via want was wasn way we were weren what when where which while who whom why will with won
    would wouldn you your yours yourself yourselves re ve s t d m"""
)
STOP_WORDS = frozenset(_STOP.split())


def query_terms(text: str, limit: int | None = None) -> list[str]:
    """The distinct search words of a query, in order of first appearance."""
    limit = MAX_TERMS if limit is None else limit
    out: dict[str, None] = {}
    for raw in _RAW.findall(text):
        words = [w.lower() for w in _WORD.findall(raw)]  # what unicode61 indexes
        for part in _WORD.findall(raw):
            sub = split_identifier(part)
            if len(sub) > 1:
                words.extend(sub)
        for w in words:
            if len(w) < 2 or w in STOP_WORDS or (w.isdigit() and len(w) < 3):
                continue
            out.setdefault(w, None)
        if len(out) >= limit * 3:
            break
    return list(out)


@contextmanager
def one_state() -> Iterator[None]:
    """Within it, the index state keyword counts are remembered by is read once per store: a
    search's retrievers, names and features each count words, and on a server each read of
    the state is a round trip."""
    token = _STATE.set({}) if _STATE.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _STATE.reset(token)


def chunk_state(db: StoreBackend) -> tuple[int, int]:
    """The index's chunk state (`StoreBackend.chunk_state`), read once per store within `one_state()`."""
    return _chunk_state(db)


def _chunk_state(db: StoreBackend) -> tuple[int, int]:
    memo = _STATE.get()
    if memo is None:
        return db.chunk_state()
    if db not in memo:
        memo[db] = db.chunk_state()
    return memo[db]


def doc_freqs(db: StoreBackend, terms: Sequence[str]) -> tuple[dict[str, int], int]:
    """How many chunks hold each term (terms absent from the index left out), and the number of
    chunks. fts5vocab counts a term by reading its whole doclist, so counts are remembered per
    index state (number and largest id of the chunks) and looked up once per term."""
    state = _chunk_state(db)
    cached = _DF_CACHE.get(db)
    if cached is None or cached[0] != state or len(cached[1]) > DF_CACHE_TERMS:
        cached = (state, {})
        _DF_CACHE[db] = cached
    known = cached[1]
    missing = [t for t in dict.fromkeys(terms) if t not in known]
    if missing:
        found = db.keyword_counts(missing)
        for t in missing:
            known[t] = found.get(t, 0)
    return {t: known[t] for t in terms if known.get(t)}, state[0]


def informative_terms(db: StoreBackend, terms: Sequence[str], limit: int | None = None,
                      postings: int | None = None) -> list[str]:
    """Drop words absent from the index or present in most chunks; keep the rarest `limit`, and
    no more than `postings` (MAX_POSTINGS) postings in all (BM25 time grows with the postings
    it reads)."""
    limit = MAX_TERMS if limit is None else limit
    postings = MAX_POSTINGS if postings is None else postings
    if not terms:
        return []
    df, total = doc_freqs(db, terms)
    total = total or 1
    kept = [t for t in terms if t in df and (total < 50 or df[t] <= min(COMMON_SHARE * total, MAX_DF))]
    position = {t: i for i, t in enumerate(kept)}
    rarest: set[str] = set()
    read = 0
    for t in sorted(kept, key=lambda t: (df[t], position[t]))[:limit]:
        if rarest and read + df[t] > postings:
            break
        rarest.add(t)
        read += df[t]
    return [t for t in kept if t in rarest]


def bm25_chunks(
    db: StoreBackend,
    query: str,
    limit: int = 60,
    filters: SearchFilters | None = None,
    terms: Sequence[str] | None = None,
) -> list[ChunkMatch]:
    """Chunks ranked by BM25 for the query's words (or the given search terms), best first."""
    if terms is None:
        terms = informative_terms(db, query_terms(query))
    if not terms:
        return []
    return [match_from_row(r, float(r[5])) for r in db.keyword_rows(terms, limit, filters)]
