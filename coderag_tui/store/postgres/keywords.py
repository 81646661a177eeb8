"""Keyword search of the PostgreSQL backend: BM25 (FTS5's formula, the same column weights)
read from an impact-ordered postings table.

Each word of a chunk is one row of `keyword_postings(term, impact, chunk_id)`; its impact is
BM25's term-frequency part: the word's count weighted by column (names, path/signature/doc,
code), saturated by K1 and normalised by the chunk's length (B) against a fixed average
(AVG_TOKENS; a written chunk's impacts never change when others are written). The writer
computes them from the chunk's words (`postings`) and sends them by COPY. A B-tree on
(term, impact DESC, chunk_id) lets a search read, for each query word, its PER_TERM best
postings and no more (an index range scan); they are weighted by the word's IDF and summed per
chunk. A word's IDF scales all its postings alike, so its best postings are its best
contributions: the cut loses only chunks that are in no word's top PER_TERM.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from coderag_tui.store.backend import KEYWORD_WEIGHTS

Rows = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]

WORD = re.compile(r"[^\W_]+")  # the words FTS5's unicode61 indexes, split the same way here
K1, B = 1.2, 0.75  # FTS5's bm25 constants
AVG_TOKENS = 100  # a chunk's words, on average (Django 5.1: mean 101, median 98)
PER_TERM = 1000  # postings read per query word
MAX_TERM_CHARS = 100  # longer words are not indexed (nobody searches them; B-tree rows are bounded)
MAX_DF_COUNT = 100_000  # a word missing from keyword_df is counted live up to this many chunks



def _whole(weight: float) -> int:
    """A column weight as an integer (postings sum them exactly, in any order)."""
    if weight != int(weight):
        raise ValueError(f"keyword weight {weight} is not a whole number")
    return int(weight)


_W_NAMES = _whole(KEYWORD_WEIGHTS["names"])
_W_META = _whole(KEYWORD_WEIGHTS["signature"])  # path and signature weigh 3, a docstring 2: one column here
_W_CODE = _whole(KEYWORD_WEIGHTS["code"])


def word_list(*texts: str) -> list[str]:
    """The lower-cased words of the texts, in order."""
    return WORD.findall(" ".join(texts).lower())


def postings(chunk_id: int, names: Sequence[str], meta: Sequence[str], code: Sequence[str]) -> list[tuple[str, float, int]]:
    """(term, impact, chunk id) of each distinct word of a chunk's keyword columns: the words'
    weighted count f (names 6, path/signature/docstring 3, code 1, summed over the columns) and
    the chunk's length d (its words in all columns) give BM25's term part
    f * (K1 + 1) / (f + K1 * (1 - B + B * d / AVG_TOKENS)), in float8 rounded to the real column
    (computed by the writer: in SQL, per chunk, it cost the server more than the rest of a
    build's statements together)."""
    f: Counter[str] = Counter()
    for _ in range(2):
        f = Counter(code)
        if _W_CODE != 1:
            f = Counter({w: n * _W_CODE for w, n in f.items()})
        for w in meta:
            f[w] += _W_META
        for w in names:
            f[w] += _W_NAMES
        if all(len(w) <= MAX_TERM_CHARS for w in f):
            break
        names, meta, code = ([w for w in ws if len(w) <= MAX_TERM_CHARS] for ws in (names, meta, code))
    norm = K1 * ((1 - B) + B * float(len(names) + len(meta) + len(code)) / AVG_TOKENS)
    k1 = K1 + 1
    return [(w, v * k1 / (v + norm), chunk_id) for w, v in f.items()]


# the same postings computed by the server from the keyword columns of every chunk (the first
# layout's migration 4 gave the chunks already written theirs); float8 as `postings` computes
POSTINGS_SELECT = f"""
    SELECT t.term, (t.f * {K1 + 1} / (t.f + {K1} * ({1 - B} + {B} * t.d / {AVG_TOKENS}.0)))::real, c.id
    FROM chunks c CROSS JOIN LATERAL (
        SELECT w.term, sum(w.weight) AS f, sum(count(*)) OVER ()::float8 AS d FROM (
            SELECT unnest(string_to_array(c.kw_names, ' ')) AS term, {_W_NAMES}::float8 AS weight
            UNION ALL SELECT unnest(string_to_array(c.kw_meta, ' ')), {_W_META}::float8
            UNION ALL SELECT unnest(string_to_array(c.kw_code, ' ')), {_W_CODE}::float8) w
        WHERE w.term <> '' AND length(w.term) <= {MAX_TERM_CHARS} GROUP BY w.term) t"""

# one statement (a round trip costs more than the search on a busy machine): each word's chunk
# count (keyword_df, else its postings counted now, bounded), the number of chunks (counted at
# the last refresh, else now), FTS5's IDF, then the best postings of each word, summed per chunk
_SEARCH = f"""
    WITH q AS (
        SELECT t.term, coalesce(d.ndoc, (SELECT count(*) FROM (SELECT 1 FROM keyword_postings k
            WHERE k.term = t.term LIMIT {MAX_DF_COUNT}) x)) AS n
        FROM unnest(?::text[]) AS t(term) LEFT JOIN keyword_df d ON d.word = t.term),
    total AS (
        SELECT greatest(coalesce((SELECT value::bigint FROM meta WHERE key = 'keyword_df_chunks'),
                                 (SELECT count(*) FROM chunks)), (SELECT max(n) FROM q)) AS n),
    w AS MATERIALIZED (  -- (once per word, in float8: numeric's ln per posting costs ~10 us)
        SELECT q.term, greatest(ln((total.n - q.n + 0.5)::float8 / (q.n + 0.5)), 1e-6) AS idf
        FROM q, total WHERE q.n > 0)
    SELECT c.id, c.unit_id, c.file_id, c.start_line, c.end_line, s.score FROM (
        SELECT p.chunk_id, sum(p.impact * w.idf) AS score FROM w CROSS JOIN LATERAL (
            SELECT k.chunk_id, k.impact FROM keyword_postings k WHERE k.term = w.term
            ORDER BY k.impact DESC LIMIT ?) p
        GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id LIMIT ?) s
    JOIN chunks c ON c.id = s.chunk_id{{names}}
    ORDER BY s.score DESC, s.chunk_id"""


def words(*texts: str) -> str:
    """Lower-cased words of the texts, space-separated (what the keyword columns hold)."""
    return " ".join(word_list(*texts))


def query_words(terms: Sequence[str]) -> list[str]:
    """The distinct lower-cased words of the search terms, as the writer splits them."""
    return [w for w in dict.fromkeys(WORD.findall(" ".join(terms).lower())) if len(w) <= MAX_TERM_CHARS]


def search(rows: Rows, terms: Sequence[str], limit: int, per_term: int = PER_TERM,
           names_only: bool = False) -> list[tuple[Any, ...]]:
    """(chunk id, unit id, file id, start, end, score) of the best chunks for any of the words,
    best first (`names_only`: chunks whose names column holds one of them)."""
    found = query_words(terms)
    if not found or limit <= 0:
        return []
    names = (" WHERE ' ' || c.kw_names || ' ' LIKE ANY (SELECT '% ' || t || ' %' FROM unnest(?::text[]) t)"
             if names_only else "")
    sql = _SEARCH.replace("{names}", names)
    return rows(sql, (found, per_term, limit, *((found,) if names_only else ())))


def counts(store: Any, terms: Sequence[str]) -> dict[str, int]:
    """How many chunks hold each word (the words the index holds): keyword_df's count, else
    the postings counted now (up to MAX_DF_COUNT)."""
    words = list(dict.fromkeys(t for t in terms if t))
    if not words:
        return {}
    known = {str(w): int(n) for w, n in store.rows("SELECT word, ndoc FROM keyword_df WHERE word = ANY(?)", (words,))}
    for w in words:
        if w not in known:
            n = int(store.scalar(f"SELECT count(*) FROM (SELECT 1 FROM keyword_postings WHERE term = ? "
                                 f"LIMIT {MAX_DF_COUNT}) x", (w,), default=0))
            if n:
                known[w] = n
    return known


def refresh_counts(store: Any) -> None:
    """Count the chunks of each word again when the chunks changed by more than 5% since."""
    total = int(store.scalar("SELECT count(*) FROM chunks", default=0))
    last = int(store.get_meta("keyword_df_chunks") or 0)
    if total and last and abs(total - last) <= 0.05 * last:
        return
    with store.transaction():
        store.execute("DELETE FROM keyword_df")
        store.execute("INSERT INTO keyword_df SELECT term, count(*) FROM keyword_postings GROUP BY term")
        store.set_meta("keyword_df_chunks", str(total))
