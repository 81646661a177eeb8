"""The ranked lists hybrid search fuses beside BM25, vectors and descriptions, in one table:
the routes each serves, when it applies, how it ranks units and its weight (a share of one
configured weight). search.py runs the table; a new signal is one row here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from coderag_tui.config import SearchSettings
from coderag_tui.models import SearchFilters
from coderag_tui.retrieval import names, prose, report, router, symbols
from coderag_tui.retrieval.common import ChunkMatch
from coderag_tui.store.backend import StoreBackend

MENTION_SHARE = 2 / 3  # of weight_symbol, for definitions of names a free-text query mentions
NAME_SHARE = 1 / 3  # of weight_symbol, for units whose names join adjacent words of the query

Ranking = tuple[list[int], dict[int, ChunkMatch]]  # unit ids best first, and their best chunks


@dataclass
class Asked:
    """One query as the signals see it."""

    db: StoreBackend
    route: router.Route
    text: str  # the query's text to match: the symbol a symbol query names, else the query
    terms: list[str]  # its informative search terms
    n: int
    filters: SearchFilters | None
    sig: report.ReportSignals | None  # stack frames, paths and modules a free-text query names
    memo: dict[str, Any] = field(default_factory=dict)

    def symbol_units(self) -> tuple[list[Any], list[Any]]:
        """(exact, fuzzy) definitions of the named symbol, looked up once for both signals."""
        if "symbols" not in self.memo:
            self.memo["symbols"] = symbols.symbol_units(self.db, self.route.target, self.n, self.filters)
        found: tuple[list[Any], list[Any]] = self.memo["symbols"]
        return found


def _exact(q: Asked) -> Ranking:
    return [u.id for u in q.symbol_units()[0]], {}


def _fuzzy(q: Asked) -> Ranking:
    return [u.id for u in q.symbol_units()[1]], {}


def _mentioned(q: Asked) -> Ranking:
    return [u.id for u in symbols.mentioned_units(q.db, q.text, q.filters, q.n)], {}


def _named(q: Asked) -> Ranking:
    return names.name_units(q.db, q.text, q.terms, q.n, q.filters)


def _traced(q: Asked) -> Ranking:
    assert q.sig is not None
    return [u.id for u in report.frame_units(q.db, q.sig) if symbols.passes(u, q.filters)], {}


def _always(q: Asked) -> bool:
    return True


@dataclass(frozen=True)
class Signal:
    name: str  # the list's name in the fusion (and in `--explain`)
    routes: frozenset[str] | None  # the route kinds it serves; None: every kind no row names
    weight: str  # the SearchSettings weight it takes a share of
    share: float
    rank: Callable[[Asked], Ranking]
    applies: Callable[[Asked], bool] = _always
    scale: Callable[[Asked], float] = lambda q: 1.0  # a share that depends on the query

    def weight_of(self, settings: SearchSettings, q: Asked) -> float:
        return float(getattr(settings, self.weight)) * self.share * self.scale(q)


_SYMBOL = frozenset({router.SYMBOL})
SIGNALS: tuple[Signal, ...] = (
    # a query that is a symbol: its definitions, exact then fuzzy
    Signal("symbol", _SYMBOL, "weight_symbol", 2.0, _exact),
    Signal("fuzzy", _SYMBOL, "weight_symbol", 0.5, _fuzzy),
    # free text: names it mentions (stack traces, snippets) are weaker evidence than a symbol query
    Signal("symbol", None, "weight_symbol", MENTION_SHARE, _mentioned),
    # units named by adjacent words of the query; a question about the docs is not about names
    Signal("name", None, "weight_symbol", NAME_SHARE, _named,
           applies=lambda q: not prose.about_docs(q.text), scale=lambda q: names.pair_share(q.text)),
    # the code a stack trace's frames, paths and modules point at
    Signal("trace", None, "weight_symbol", 1.0, _traced,
           applies=lambda q: q.sig is not None and bool(q.sig.frames or q.sig.paths or q.sig.modules)),
)
# Routes that only re-weigh the lists every route has: a pasted snippet is found by its vector
# first, by its words second.
REWEIGHT: dict[str, dict[str, tuple[str, float]]] = {
    router.SIMILARITY: {"vector": ("weight_vector", 2.0), "bm25": ("weight_bm25", 0.5)},
}
_NAMED_ROUTES = frozenset(kind for s in SIGNALS if s.routes for kind in s.routes) | frozenset(REWEIGHT)


def for_route(kind: str) -> list[Signal]:
    """The signals a route of this kind runs, in the table's order."""
    if kind in _NAMED_ROUTES:
        return [s for s in SIGNALS if s.routes is not None and kind in s.routes]
    return [s for s in SIGNALS if s.routes is None]
