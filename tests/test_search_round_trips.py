"""A hybrid search on PostgreSQL makes few round trips to the server: each one waits for the
server's process to be scheduled, so on a busy machine their number, more than the rows read,
decides a search's time (at 533k chunks on 2 shared cores, ~3-5 ms each). A real repository is
indexed into a real PostgreSQL with the bundled model's vectors, and every statement sent
from every connection of the search (the vector branch reads on its own) is counted."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.config import EmbedSettings, Settings
from coderag_tui.service import CodeRag
from coderag_tui.store.backend import StoreTarget
from coderag_tui.store.postgres import store as pgstore
from tests.helpers.files import write_tree

FILES = {
    "shop/__init__.py": "",
    "shop/money.py": (
        '"""Money amounts and wallets."""\n\n\n'
        "def parse_amount(text):\n"
        '    """Parse an amount of money written as text, like "12.50"."""\n'
        "    return round(float(text.strip()), 2)\n\n\n"
        "class Wallet:\n"
        '    """A wallet holds money and pays for carts."""\n\n'
        "    def __init__(self):\n        self.balance = 0.0\n\n"
        "    def deposit(self, text):\n"
        '        """Add an amount of money to the wallet."""\n'
        "        self.balance += parse_amount(text)\n\n"
        "    def pay(self, amount):\n"
        '        """Take an amount from the wallet, refusing to go below zero."""\n'
        "        if amount > self.balance:\n            raise ValueError('not enough money')\n"
        "        self.balance -= amount\n"),
    "shop/cart.py": (
        '"""The shopping cart."""\nfrom shop.money import Wallet\n\n\n'
        "class Cart:\n"
        '    """Items to buy, and their total price."""\n\n'
        "    def __init__(self):\n        self.items = []\n\n"
        "    def add_item(self, price):\n        self.items.append(price)\n\n"
        "    def total_price(self):\n"
        '        """The total price of the items in the cart."""\n'
        "        return sum(self.items)\n\n"
        "    def checkout(self, wallet: Wallet):\n"
        '        """Pay the total price from a wallet."""\n'
        "        wallet.pay(self.total_price())\n"),
    "docs/guide.md": "# Guide\n\nA cart's total price is paid from a wallet.\n",
}
QUERIES = ["How does the cart pay from a wallet?", "Wallet", "parse amount of money", "total_price"]
# statements per hybrid search with vectors read by the backend: the query embedder's check,
# keyword counts, BM25, descriptions, symbols and names, the vectors' HNSW search and their
# chunks, each list's refinement (one read each), the fused units
MAX_STATEMENTS = 13


@pytest.fixture(scope="module")
def searched(pg_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CodeRag]:
    from tests.helpers.pg import fresh_database

    base = tmp_path_factory.mktemp("roundtrips")
    repo = write_tree(base / "shop", FILES)
    for url in fresh_database(pg_server, "coderag_trips"):
        service = CodeRag(repo, Settings(embed=EmbedSettings(enabled=True)),
                          store=StoreTarget(url=url, source=str(repo)))
        try:
            service.index()
            service.embed()
            service.vectors_in_memory = False  # a one-shot command's search: the HNSW index
            yield service
        finally:
            service.close()


def _count(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    sent: Counter[str] = Counter()
    for name in ("_run", "_binary_rows"):
        original = getattr(pgstore.PostgresStore, name)

        def counted(self: Any, sql: str, params: Any = (), _original: Any = original) -> Any:
            sent[" ".join(sql.split())[:80]] += 1
            return _original(self, sql, params)

        monkeypatch.setattr(pgstore.PostgresStore, name, counted)
    return sent


def test_a_hybrid_search_on_postgresql_makes_few_round_trips(searched: CodeRag,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for q in QUERIES:  # the query model loaded, the connections opened, keyword counts cached
        searched.search(q, k=5)
    sent = _count(monkeypatch)
    for q in QUERIES:
        before = sum(sent.values())
        hits = searched.search(q + " ", k=5)  # (another text: its vector is not cached)
        made = sum(sent.values()) - before
        assert hits and any(r.startswith("vector") for h in hits for r in h.reasons), q
        assert made <= MAX_STATEMENTS, f"{q!r}: {made} statements:\n" + "\n".join(
            f"{n:3d} {s}" for s, n in sent.most_common())


def test_the_knn_search_does_not_ask_twice_whether_there_are_vectors(searched: CodeRag,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    searched.search("wallet", k=5)
    sent = _count(monkeypatch)
    searched.search("money in a wallet", k=5)
    assert sent["SELECT value FROM meta WHERE key = ?"] <= 1, sent


def test_the_reads_it_saves_give_the_same_results(searched: CodeRag, tmp_path: Path) -> None:
    """The same repository in an SQLite file, with the same vectors: the same units, in the same
    order, for every query (the reads are written once for both backends)."""
    local = CodeRag(searched.root, Settings(embed=EmbedSettings(enabled=True)), tmp_path / "i.db")
    try:
        local.index()
        local.embed()
        local.vectors_in_memory = False
        for q in QUERIES:
            assert [h.unit.qualname for h in local.search(q, k=5)] == \
                   [h.unit.qualname for h in searched.search(q, k=5)], q
    finally:
        local.close()
