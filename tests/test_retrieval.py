"""Retrieval without vectors: routing, BM25, symbols, the graph, fusion, packing, the repo map.

Fixture repositories are written into tmp dirs and indexed through the real service (real
SQLite, FTS5 and tree-sitter); the embedding model is exercised in test_embedder.py.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from coderag_tui.cli.main import main as cli_main
from coderag_tui.config import ContextSettings
from coderag_tui.models import ComposedContext, ContextPiece, SearchFilters
from coderag_tui.retrieval import lexical, router
from coderag_tui.retrieval.expansion import expand
from coderag_tui.retrieval.fusion import rrf
from coderag_tui.retrieval.packing import (
    Candidate,
    estimate_tokens,
    lost_in_the_middle,
    pack,
    render_piece,
)
from coderag_tui.retrieval.repo_map import fit_map, pagerank
from coderag_tui.retrieval.source import CodeReader
from coderag_tui.service import CodeRag

FIXTURE: dict[str, str | bytes] = {
    "shop/__init__.py": '"""The shop package."""\n',
    "shop/pricing.py": '''"""Prices, taxes and discounts."""
from shop.util import round_money

TAX_RATE = 0.2


class BaseCart:
    """A cart of items."""

    def __init__(self):
        self.items = []

    def add_item(self, name, price):
        """Put an item in the cart."""
        self.items.append((name, price))

    def subtotal(self):
        return sum(price for _, price in self.items)


class ShoppingCart(BaseCart):
    """A cart that knows taxes and discounts."""

    def calculate_price(self, discount=0.0):
        """The total price after discount, with tax."""
        total = self.subtotal() * (1 - discount)
        return round_money(apply_tax(total))


def apply_tax(amount):
    """Add the value added tax to an amount."""
    return amount * (1 + TAX_RATE)
''',
    "shop/util.py": '''"""Small helpers."""


def round_money(value):
    """Round a value to cents."""
    return round(value, 2)


def parse_url(url):
    """Split a URL into scheme, host and path."""
    scheme, rest = url.split("://", 1)
    host, _, path = rest.partition("/")
    return scheme, host, "/" + path
''',
    "shop/checkout.py": '''"""The checkout flow."""
from shop.pricing import ShoppingCart


def process_order(cart: ShoppingCart):
    """Charge the customer for the cart."""
    price = cart.calculate_price(0.1)
    return send_invoice(price)


def send_invoice(price):
    """Email the invoice."""
    return f"invoice for {price}"
''',
    "shop/auth/session.py": '''"""Login sessions and authentication tokens."""
import hashlib


def authenticate_user(username, password):
    """Check a password against the stored hash and open a login session."""
    digest = hashlib.sha256(password.encode()).hexdigest()
    return LoginSession(username, digest)


class LoginSession:
    """An authenticated session for one user."""

    def __init__(self, username, token):
        self.username = username
        self.token = token

    def expire(self):
        self.token = None
''',
    "tests/test_pricing.py": '''from shop.pricing import ShoppingCart, apply_tax


def test_calculate_price():
    cart = ShoppingCart()
    cart.add_item("book", 10.0)
    assert cart.calculate_price() == 12.0


def test_apply_tax():
    assert apply_tax(10) == 12.0
''',
    "web/app.js": '''// A tiny web app
function renderCart(cart) {
  return cart.items.map((item) => item.name).join(", ");
}
''',
}


@pytest.fixture
def shop(make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> CodeRag:
    return open_service(make_repo(FIXTURE))


# --------------------------------------------------------------------------- router


@pytest.mark.parametrize(
    ("query", "kind", "op", "target"),
    [
        ("QuerySet", "symbol", "", "QuerySet"),
        ("pkg/auth", "symbol", "", "pkg/auth"),
        ("parse_url()", "symbol", "", "parse_url()"),
        ("Foo.bar", "symbol", "", "Foo.bar"),
        ("where is ShoppingCart defined?", "symbol", "", "ShoppingCart"),
        ("callers of parse_url", "structural", "callers", "parse_url"),
        ("who calls apply_tax?", "structural", "callers", "apply_tax"),
        ("what does process_order call", "structural", "callees", "process_order"),
        ("methods of ShoppingCart", "structural", "members", "ShoppingCart"),
        ("what imports shop.util", "structural", "importers", "shop.util"),
        ("tests for apply_tax", "structural", "tests", "apply_tax"),
        ("subclasses of BaseCart", "structural", "subclasses", "BaseCart"),
        ("how are taxes computed", "semantic", "", ""),
        ("authentication", "semantic", "", ""),
        ("def foo(x):\n    return bar(x) + 1\n", "similarity", "", ""),
        ("for (let i = 0; i < n; i++) {\n  total += a[i];\n}", "similarity", "", ""),
        ("Why does login fail?\nIt worked yesterday.", "semantic", "", ""),
        ("```python\ndef f(x):\n    return g(x)\n```", "similarity", "", ""),
        ("Crash in the parser when the input is empty\n```python\nparse('')\n```\nTraceback: ...",
         "semantic", "", ""),
    ],
)
def test_router(query: str, kind: str, op: str, target: str) -> None:
    route = router.classify(query)
    assert (route.kind, route.op, route.target) == (kind, op, target)


# --------------------------------------------------------------------------- fusion


def test_rrf_hand_made_lists() -> None:
    fused = rrf({"bm25": ["a", "b", "c"], "vector": ["c", "a", "d"]}, k=60)
    scores = {f.key: f.score for f in fused}
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["d"] == pytest.approx(1 / 63)
    assert [f.key for f in fused] == ["a", "c", "b", "d"]
    assert fused[0].reasons == ("bm25#1", "vector#2")


def test_rrf_weights_labels_and_duplicates() -> None:
    fused = rrf({"bm25": ["x", "x", "y"], "symbol": ["y"]}, weights={"bm25": 1.0, "symbol": 3.0},
                k=10, labels={"symbol": "symbol"})
    assert [f.key for f in fused] == ["y", "x"]
    assert fused[0].reasons == ("bm25#2", "symbol")
    assert fused[0].score == pytest.approx(1 / 12 + 3 / 11)
    assert rrf({"a": ["p"], "b": ["q"]}, weights={"a": 0.0})[0].key == "q"  # a zero weight drops a list
    assert rrf({}) == []


# --------------------------------------------------------------------------- lexical


def test_query_terms_split_and_stop_words() -> None:
    assert lexical.query_terms("How is the parseURL of HttpClient used?") == [
        "parseurl", "parse", "url", "httpclient", "http", "client"]
    assert lexical.query_terms("get_user_name") == ["user", "name"]  # "get" is a stop word


@pytest.mark.parametrize("query", ['"unbalanced', "a AND (b OR", "NEAR(x y)", "col:price*", "^start -x",
                                   "price's \"total\"", "()", "✓ 価格"])
def test_fts_syntax_is_quoted(shop: CodeRag, query: str) -> None:
    shop.search(query)  # never an FTS5 syntax error


def test_informative_terms_keep_the_rarest_within_the_postings_budget(
        shop: CodeRag, monkeypatch: pytest.MonkeyPatch) -> None:
    words = ["price", "total", "authenticate", "zzznotthere"]
    df, total = lexical.doc_freqs(shop.db, words)
    assert "zzznotthere" not in df and total == shop.db.scalar("SELECT count(*) FROM chunks")
    kept = [w for w in words if w in df]
    assert lexical.informative_terms(shop.db, words) == kept  # within budget: query order
    by_rarity = sorted(kept, key=lambda w: df[w])
    monkeypatch.setattr(lexical, "MAX_POSTINGS", df[by_rarity[0]])
    assert lexical.informative_terms(shop.db, words) == [by_rarity[0]]  # only the rarest fits
    monkeypatch.setattr(lexical, "MAX_POSTINGS", 0)
    assert lexical.informative_terms(shop.db, words) == [by_rarity[0]]  # the rarest is always kept
    shop.db.execute("DELETE FROM chunks WHERE id = (SELECT min(id) FROM chunks)")
    assert lexical.doc_freqs(shop.db, words)[1] == total - 1  # counts follow the index state


def test_bm25_ranks_the_defining_unit(shop: CodeRag) -> None:
    hits = shop.search("authenticate user password hash")
    assert hits[0].unit.qualname == "authenticate_user"
    assert any(r.startswith("bm25#") for r in hits[0].reasons)
    assert hits[0].unit.path == "shop/auth/session.py"
    assert hits[0].chunk_start >= hits[0].unit.start_line


# --------------------------------------------------------------------------- routes through the service


def test_symbol_route(shop: CodeRag) -> None:
    hits = shop.search("ShoppingCart")
    assert hits[0].unit.qualname == "ShoppingCart" and hits[0].unit.kind == "class"
    assert "symbol" in hits[0].reasons
    hits = shop.search("ShoppingCart.calculate_price")
    assert hits[0].unit.qualname == "ShoppingCart.calculate_price"
    hits = shop.search("parse_url()")
    assert hits[0].unit.qualname == "parse_url"
    assert shop.search("shop/auth")[0].unit.path.startswith("shop/auth")


def test_structural_routes(shop: CodeRag) -> None:
    def names(q: str) -> list[str]:
        return [h.unit.qualname for h in shop.search(q, k=20)]

    assert names("who calls apply_tax") == ["ShoppingCart.calculate_price", "test_apply_tax"]
    assert "process_order" in names("callers of calculate_price")
    assert set(names("what does process_order call")) >= {"ShoppingCart.calculate_price", "send_invoice"}
    assert names("methods of ShoppingCart") == ["ShoppingCart.calculate_price"]
    assert names("methods of BaseCart") == ["BaseCart.__init__", "BaseCart.add_item", "BaseCart.subtotal"]
    importers = [h.unit.path for h in shop.search("what imports shop.pricing", k=20)]
    assert set(importers) == {"shop/checkout.py", "tests/test_pricing.py"}
    assert [h.unit.path for h in shop.search("what imports hashlib")] == ["shop/auth/session.py"]
    assert "test_apply_tax" in names("tests for apply_tax")
    assert names("subclasses of BaseCart") == ["ShoppingCart"]
    hit = shop.search("who calls apply_tax")[0]
    assert hit.reasons[0] == "graph:callers" and "calls apply_tax" in hit.reasons[1]


def test_semantic_route_without_vectors(shop: CodeRag) -> None:
    assert shop.status().vectors == 0
    hits = shop.search("how is the tax added to the price")
    assert hits, "keywords alone must answer"
    top = [h.unit.qualname for h in hits[:3]]
    assert "apply_tax" in top
    assert all(not r.startswith("vector") for h in hits for r in h.reasons)
    # names mentioned in free text count as symbol matches
    hits = shop.search("the result of calculate_price is off by a cent after round_money")
    assert {"ShoppingCart.calculate_price", "round_money"} <= {h.unit.qualname for h in hits[:4]}


def test_similarity_route_without_vectors(shop: CodeRag) -> None:
    snippet = "def compute(x):\n    total = x.subtotal() * (1 - rate)\n    return round_money(total)\n"
    assert router.classify(snippet).kind == "similarity"
    hits = shop.search(snippet)
    assert hits[0].unit.qualname in ("ShoppingCart.calculate_price", "round_money")


def test_filters(shop: CodeRag) -> None:
    hits = shop.search("cart items", filters=SearchFilters(language="javascript"))
    assert hits and all(h.unit.path == "web/app.js" for h in hits)
    hits = shop.search("price", k=20, filters=SearchFilters(path_prefix="tests/"))
    assert hits and all(h.unit.path.startswith("tests/") for h in hits)
    hits = shop.search("price", k=20, filters=SearchFilters(kind="method"))
    assert hits and all(h.unit.kind == "method" for h in hits)
    hits = shop.search("ShoppingCart", filters=SearchFilters(path_prefix="./tests"))
    assert hits and all(h.unit.path.startswith("tests/") for h in hits)
    assert shop.search("price", filters=SearchFilters(language="cobol")) == []
    # the repository's root filters nothing (it once built "WHERE  ORDER BY")
    everywhere = [h.unit.id for h in shop.search("price", k=20)]
    for root in (".", "./", "././"):
        assert [h.unit.id for h in shop.search("price", k=20, filters=SearchFilters(path_prefix=root))] == everywhere


def test_search_files(shop: CodeRag) -> None:
    files = shop.search_files("tax discount price", k=3)
    assert files[0].unit.path == "shop/pricing.py" and files[0].unit.kind == "file"
    assert len({h.unit.path for h in files}) == len(files)
    assert files[0].score >= files[-1].score


def test_similar_without_vectors_uses_words(shop: CodeRag) -> None:
    target = shop.symbols("apply_tax")[0]
    hits = shop.similar(target.id, k=5)
    assert hits and target.id not in {h.unit.id for h in hits}
    assert hits[0].reasons[0].startswith("bm25#")


def test_hit_json(shop: CodeRag) -> None:
    j = shop.search("ShoppingCart")[0].to_json()
    assert set(j) == {"path", "start_line", "end_line", "name", "kind", "score", "reasons"}
    assert j["name"] == "ShoppingCart" and j["path"] == "shop/pricing.py"


# --------------------------------------------------------------------------- context


def _lines_of(ctx: ComposedContext) -> list[tuple[str, int, int]]:
    return [(p.path, p.start_line, p.end_line) for p in ctx.pieces]


def test_context_levels(shop: CodeRag) -> None:
    ctx = shop.context("how is the price calculated with tax and discount", max_tokens=3000)
    roles = {p.role for p in ctx.pieces}
    assert "primary" in roles and ("caller" in roles or "callee" in roles)
    assert "metadata" in roles and "parent" in roles
    assert ctx.tokens <= ctx.budget == 3000
    assert estimate_tokens(ctx.render()) <= ctx.budget
    for p in ctx.pieces:
        assert re.fullmatch(r"[\w/.]+:\d+-\d+", p.citation)
        assert p.start_line <= p.end_line
    meta = "\n".join(p.text for p in ctx.pieces if p.role == "metadata")
    assert "called by" in meta or "calls in this repository" in meta
    # the best piece opens the context
    assert ctx.pieces[0].role == "primary"


def test_expansion_levels(shop: CodeRag) -> None:
    hit = shop.search("apply_tax")[0]
    assert hit.unit.qualname == "apply_tax"
    cands = expand(shop.db, CodeReader(shop.db, shop.root), [hit], ContextSettings())
    by_role = {c.role: c for c in cands}
    assert set(by_role) == {"primary", "caller", "test", "parent", "metadata"}
    assert "calls apply_tax" in by_role["caller"].title and by_role["caller"].tier == "neighbours"
    assert "test_apply_tax" in by_role["test"].title and by_role["test"].tier == "extended"
    assert "class ShoppingCart(BaseCart)" in by_role["parent"].text  # the module outline
    assert "called by 2 units" in by_role["metadata"].text
    assert "TAX_RATE" in by_role["metadata"].text  # constants of the file


def test_context_text_from_the_index(shop: CodeRag) -> None:
    ctx = shop.context("apply_tax", max_tokens=4000)
    primary = next(p for p in ctx.pieces if p.role == "primary")
    assert "def apply_tax(amount):" in primary.text
    # the code comes from the index: deleting the file does not change it
    (shop.root / "shop/pricing.py").unlink()
    again = shop.context("apply_tax", max_tokens=4000)
    assert next(p for p in again.pieces if p.role == "primary").text == primary.text


def test_context_never_repeats_lines(shop: CodeRag) -> None:
    ctx = shop.context("ShoppingCart calculate_price subtotal add_item", max_tokens=6000)
    seen: dict[str, set[str]] = {}
    for p in ctx.pieces:
        if p.role in ("metadata", "parent"):
            continue
        body = [ln for ln in p.text.splitlines() if ln.strip() and "⋯" not in ln]
        for ln in body:
            key = f"{p.path}:{ln}"
            assert key not in seen.get(p.path, set()) or ln.strip() in ("return", "pass"), key
            seen.setdefault(p.path, set()).add(key)


def test_context_with_tiny_budgets(shop: CodeRag) -> None:
    for budget in (0, 10, 30, 60, 100):
        ctx = shop.context("tax", max_tokens=budget)
        assert ctx.tokens <= budget
        assert estimate_tokens(ctx.render()) <= max(budget, 0)


def test_context_real_token_counter(shop: CodeRag) -> None:
    words = lambda text: len(text.split())  # noqa: E731 - a stand-in for a real tokenizer
    ctx = shop.context("tax", max_tokens=120, count_tokens=words)
    assert sum(words(render_piece(p) + "\n\n") for p in ctx.pieces) <= 120


def _random_candidates(rng: random.Random) -> list[Candidate]:
    out = []
    for i in range(rng.randint(1, 25)):
        tier = rng.choice(["primary", "neighbours", "extended", "metadata"])
        path = rng.choice(["a.py", "b.py", "c/d.py"])
        start = rng.randint(1, 200)
        n = rng.randint(1, 120)
        lines = [(start + j, "    " * rng.randint(0, 3) + f"x = call_{j}({'y' * rng.randint(0, 60)})")
                 for j in range(n)]
        if tier in ("metadata",) or rng.random() < 0.15:
            out.append(Candidate(tier, "metadata" if tier == "metadata" else "parent", path, start,
                                 start + n - 1, f"t{i}", rng.random(),
                                 text="\n".join(t for _, t in lines)))
        else:
            role = {"primary": "primary", "neighbours": "caller", "extended": "test"}[tier]
            out.append(Candidate(tier, role, path, start, start + n - 1, f"t{i}", rng.random(), "python", lines,
                                 head=rng.randint(1, 3), focus=(start + n // 2, start + n // 2 + 3),
                                 max_lines=rng.choice([0, 0, 25])))
    return out


@pytest.mark.parametrize("seed", range(60))
def test_packing_never_exceeds_the_budget(seed: int) -> None:
    rng = random.Random(seed)
    cands = _random_candidates(rng)
    settings = ContextSettings()
    for budget in (0, 1, 23, 24, 50, 137, 500, 1024, 4000, rng.randint(1, 20000)):
        pieces = pack(cands, budget, settings)
        assert sum(p.tokens for p in pieces) <= budget
        rendered = ComposedContext("q", "semantic", tuple(pieces), sum(p.tokens for p in pieces), budget).render()
        assert estimate_tokens(rendered) <= budget
        for p in pieces:
            assert p.tokens == estimate_tokens(render_piece(p) + "\n\n")
        # no code line is shown twice
        shown: set[tuple[str, str]] = set()
        for p in pieces:
            if p.role in ("metadata", "parent"):
                continue
            cand = next(c for c in cands if (c.path, c.start_line, c.end_line, c.role) ==
                        (p.path, p.start_line, p.end_line, p.role))
            texts = {t: n for n, t in cand.lines}
            for ln in p.text.split("\n"):
                if ln in texts:
                    key = (p.path, f"{texts[ln]}")
                    assert key not in shown
                    shown.add(key)


def test_packing_prefers_primary_and_shrinks_keeping_the_signature() -> None:
    lines = [(10, "def big(a, b):")] + [(10 + i, f"    step_{i}()") for i in range(1, 400)]
    cand = Candidate("primary", "primary", "m.py", 10, 409, "function big", 1.0, "python", lines,
                     head=1, focus=(310, 315))
    pieces = pack([cand], 300, ContextSettings())
    assert len(pieces) == 1
    text = pieces[0].text
    assert text.startswith("def big(a, b):")
    assert "step_300()" in text and "\n⋯ " in text
    assert pieces[0].citation == "m.py:10-409"
    assert pieces[0].tokens <= 300


def test_lost_in_the_middle_order() -> None:
    pieces = [ContextPiece("p.py", i, i, "primary", f"r{i}", "x", 1) for i in range(1, 6)]
    ordered = lost_in_the_middle(pieces)  # input is best first
    assert [p.title for p in ordered] == ["r1", "r3", "r5", "r4", "r2"]


# --------------------------------------------------------------------------- repo map


def test_pagerank_basics() -> None:
    ranks = pagerank(3, {(0, 2): 1.0, (1, 2): 1.0})
    assert ranks.sum() == pytest.approx(1.0)
    assert ranks[2] > ranks[0] and ranks[2] > ranks[1]
    personal = pagerank(3, {(0, 2): 1.0, (1, 2): 1.0}, personal=__import__("numpy").array([0.0, 1.0, 0.0]))
    assert personal[1] > personal[0]


def test_repo_map(shop: CodeRag) -> None:
    text = shop.repo_map(max_tokens=1024)
    assert "shop/pricing.py:" in text and "│class ShoppingCart(BaseCart)" in text
    # pricing is the most referenced file: it comes before the leaf files
    assert text.index("shop/pricing.py:") < text.index("shop/auth/session.py:")
    for budget in (5, 20, 40, 80, 160, 320):
        m = shop.repo_map(max_tokens=budget)
        assert estimate_tokens(m) <= budget
    assert len(shop.repo_map(max_tokens=40)) < len(text)
    focused = shop.repo_map(max_tokens=60, query="authenticate_user login session")
    assert focused.startswith("shop/auth/session.py:")


def test_fit_map_binary_search() -> None:
    from coderag_tui.retrieval.repo_map import Tag

    tags = [Tag(f"f{i // 3}.py", i, 0, f"def fn_{i}(x)", 1.0 / (i + 1)) for i in range(200)]
    for budget in (0, 3, 10, 50, 300, 10_000):
        out = fit_map(tags, budget)
        assert estimate_tokens(out) <= budget
    assert fit_map(tags, 10_000).count("def fn_") == 200


# --------------------------------------------------------------------------- CLI


def test_cli_search_context_map(shop: CodeRag, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--repo", str(shop.root), "--db", str(shop.db_path)]
    assert cli_main(["search", "ShoppingCart", "--json", "-k", "3", *common]) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    assert out[0]["name"] == "ShoppingCart" and out[0]["reasons"]
    assert cli_main(["search", "tax", "--kind", "function", "--path", "shop", *common]) == 0
    assert "apply_tax" in capsys.readouterr().out
    assert cli_main(["context", "apply_tax", "--max-tokens", "500", *common]) == 0
    assert "### shop/pricing.py:" in capsys.readouterr().out
    assert cli_main(["map", "--max-tokens", "200", *common]) == 0
    assert "shop/pricing.py:" in capsys.readouterr().out
    assert cli_main(["search", "zzzqqqxxx", *common]) == 1
