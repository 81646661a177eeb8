"""Words of a question meet names of the code: "dispatch" and "request" find `dispatch_request`,
`full_dispatch_request` and `dispatchRequest`.

Adjacent words of the question (stop words skipped, a plural also tried singular) are searched
as phrases in the `names` column of the keyword index, which holds every name inside a chunk and
its sub-words in order (`dispatch_request dispatch request`); the match then moves to the unit
inside the chunk whose name it is (refine.py). One FTS5 query, on the index.
"""

from __future__ import annotations

import re

from coderag_tui.models import SearchFilters, UnitRef
from coderag_tui.parsing.identifiers import split_identifier
from coderag_tui.retrieval import symbols
from coderag_tui.retrieval.common import ChunkMatch, keep_kind, match_from_row, unit_ranking
from coderag_tui.retrieval.lexical import STOP_WORDS, doc_freqs
from coderag_tui.retrieval.refine import refine
from coderag_tui.store import read
from coderag_tui.store.backend import StoreBackend

_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+(?![a-z])")
MAX_PAIRS = 48
FEW_PAIRS = 8
MAX_NAME_CHUNKS = 40
# words every question has ("function", "code") join with anything: they are not names here
_VAGUE_WORDS = (
    """function functions method methods class classes code file files module modules work works
    happen happens handle handled handles implement implemented implementation behaviour behavior
    value values type types return returns returned call calls called object objects variable
    parameter parameters argument arguments purpose role design mechanism approach""")
_VAGUE = frozenset(_VAGUE_WORDS.split())


def _singular(w: str) -> str:
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("sses", "shes", "ches", "xes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def forms(w: str) -> tuple[str, ...]:
    """The word and the stems a name may use instead: plural, past tense, gerund
    (`pushed` -> push, `configured` -> configure, `dispatching` -> dispatch)."""
    out = [w, _singular(w)]
    if len(w) > 5 and w.endswith("ed"):
        out += [w[:-2], w[:-1]]
    if len(w) > 6 and w.endswith("ing"):
        out += [w[:-3], w[:-3] + "e"]
    return tuple(dict.fromkeys(out))


def name_pairs(text: str) -> list[tuple[str, str]]:
    """Adjacent content words of the text as (first, second) pairs, each word also singular."""
    words = [w.lower() for w in _WORD.findall(text)]
    words = [w for w in words if len(w) >= 3 and w not in STOP_WORDS]
    out: dict[tuple[str, str], None] = {}
    for a, b in zip(words, words[1:], strict=False):
        if a == b or (a in _VAGUE and b in _VAGUE):
            continue
        for x in forms(a):
            for y in forms(b):
                out.setdefault((x, y), None)
        if len(out) >= MAX_PAIRS:
            break
    return list(out)[:MAX_PAIRS]


def pair_share(text: str) -> float:
    """How much a name match says: a short question's few pairs name what it is about; a long
    one's dozens join words at random (`content type` in a question about redirects)."""
    n = len(name_pairs(text))
    return min(1.0, FEW_PAIRS / n) ** 0.5 if n else 0.0


def name_chunks(db: StoreBackend, text: str, limit: int, filters: SearchFilters | None = None) -> list[ChunkMatch]:
    """Chunks whose names hold two adjacent words of the text in order, best first."""
    pairs = name_pairs(text)
    if not pairs:
        return []
    df, _ = doc_freqs(db, sorted({w for p in pairs for w in p}))
    pairs = [p for p in pairs if p[0] in df and p[1] in df]
    if not pairs:
        return []
    return [match_from_row(r, float(r[5])) for r in db.name_pair_rows(pairs, limit, filters)]


def _name_hits(u: UnitRef, pairs: list[tuple[str, str]], words: set[str]) -> int:
    """How many words of the question the unit's name holds, when it holds an adjacent pair."""
    # the qualified name: `RequestContext.push` holds "context push"
    parts = [w.lower() for w in split_identifier(u.qualname or u.name)] or [u.name.lower()]
    joined = " " + " ".join(parts) + " "
    if not any(f" {a} {b} " in joined for a, b in pairs):
        return 0
    return len(set(parts) & words)


def name_units(db: StoreBackend, text: str, terms: list[str], limit: int,
               filters: SearchFilters | None = None) -> tuple[list[int], dict[int, ChunkMatch]]:
    """Units whose own name holds adjacent words of the text, those holding the most words
    first (then by BM25 over names), and each one's chunk."""
    pairs = name_pairs(text)
    fetch = min(limit, MAX_NAME_CHUNKS)  # refine reads each chunk's text: the best few are enough
    matches = keep_kind(db, refine(db, name_chunks(db, text, fetch, filters), terms, limit=fetch), filters)
    order, best = unit_ranking(matches)
    units = read.get_units(db, order)
    # a method named by the pair's second word inside a class named by its first
    # (`RequestContext.push` for "context pushed"): its chunk's names do not hold the pair in order
    for u in symbols.units_named(db, sorted({b for _, b in pairs}), filters, per_name=20):
        if u.id not in units:
            units[u.id] = u
            order.append(u.id)
    words = {w for p in pairs for w in p}
    score = {uid: _name_hits(units[uid], pairs, words) for uid in order if uid in units}
    kept = sorted((uid for uid in order if score.get(uid)), key=lambda uid: -score[uid])  # stable
    return kept[:limit], {uid: best[uid] for uid in kept[:limit] if uid in best}
