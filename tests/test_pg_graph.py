"""The one graph resolver on both backends: a repository indexed by the one indexer into
PostgreSQL holds the same edges as its SQLite index (kinds, targets, how each call was resolved
and how sure it is) and the same skips, and stays equal through incremental updates (a
definition renamed, a file deleted, a new caller, a binary file), parsed by the pool of workers
too, and after a run that died between writing a file and resolving the graph."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coderag_tui.config import EmbedSettings, IndexSettings, Settings
from coderag_tui.indexing import workers
from coderag_tui.indexing.indexer import Indexer
from coderag_tui.store import read, tracked
from coderag_tui.store.backend import StoreBackend, open_store

KINDS = ("CALLS", "IMPORTS", "INHERITS", "IMPLEMENTS", "TESTS", "DEFINES", "CONTAINS")

REPO = {
    "src/shop/__init__.py": "from shop.money import Wallet\n",
    "src/shop/money.py": (
        "def parse_amount(text):\n    return round(float(text), 2)\n\n\n"
        "class Wallet:\n    def __init__(self):\n        self.total = 0\n\n"
        "    def _check(self, value):\n        return value >= 0\n\n"
        "    def deposit(self, text):\n        value = parse_amount(text)\n"
        "        if self._check(value):\n            self.total += value\n        return self.total\n\n\n"
        "class Savings(Wallet):\n    def deposit(self, text):\n        return super().deposit(text) * 1.01\n"
    ),
    "src/shop/cart.py": (
        "import shop.money as money\nfrom shop.money import Savings\n\n\n"
        "def parse_amount(text):\n    return int(text)\n\n\n"
        "class Cart:\n    def update(self, items):\n        self.items = items\n\n\n"
        "def cart_total(prices, seen):\n    def helper(p):\n        return money.parse_amount(p)\n"
        "    seen.update(prices)  # an object of unknown type\n"
        "    return sum(helper(p) for p in prices)\n\n\n"
        "def open_savings():\n    wallet = Savings()\n    wallet.deposit('1')\n    return parse_amount('2')\n"
    ),
    "src/shop/report.py": (
        "from shop.cart import cart_total\n\n\n"
        "def report(prices):\n    return str(cart_total(prices, set()))\n"
    ),
    # two bases whose names sort the other way round: `self.run()` is the first declared base's
    "src/shop/mixins.py": (
        "class Zeta:\n    def run(self):\n        return 'z'\n\n\n"
        "class Alpha:\n    def run(self):\n        return 'a'\n\n\n"
        "class Mixed(Zeta, Alpha):\n    def go(self):\n        return self.run()\n"
    ),
    "tests/test_money.py": (
        "from shop.money import Wallet, parse_amount\n\n\n"
        "def test_deposit():\n    w = Wallet()\n    assert w.deposit('2') == 2\n    assert parse_amount('1') == 1\n"
    ),
    "web/util.ts": (
        "export interface Shape {\n  area(): number;\n}\n\n"
        "export function square(x: number): number {\n  return x * x;\n}\n"
    ),
    "web/circle.ts": (
        "import { Shape, square } from './util';\n\n"
        "export class Circle implements Shape {\n  constructor(private r: number) {}\n"
        "  area(): number {\n    return 3.14 * square(this.r);\n  }\n}\n"
    ),
}
BINARY = {"assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4}


def make_repo(root: Path) -> Path:
    for path, text in REPO.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    for path, data in BINARY.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


def edges(store: StoreBackend) -> list[tuple[object, ...]]:
    """Every edge out of every unit, as the store reads them (targets by path and name)."""
    ids = [int(r[0]) for r in store.rows("SELECT id FROM units")]
    out = []
    for e in read.callees(store, ids, kinds=KINDS):
        assert e.source is not None
        target = (e.unit.path, e.unit.qualname) if e.unit else None
        out.append((e.source.path, e.source.qualname, e.kind, e.name, e.line, target, e.how, round(e.confidence, 3)))
    return sorted(out, key=repr)


def sqlite_index(root: Path, db_path: Path, settings: Settings) -> list[tuple[object, ...]]:
    store = open_store(db_path)
    try:
        Indexer(store, root, settings).run()
        return edges(store)
    finally:
        store.close()


def settings(n_workers: int = 1) -> Settings:
    return Settings(index=IndexSettings(workers=n_workers), embed=EmbedSettings(enabled=False))


def postgres(request: pytest.FixtureRequest, root: Path) -> StoreBackend:
    """A fresh database's repository for the folder (as `index --store` makes it)."""
    return open_store(request.getfixturevalue("pg_url"), source=str(root), create=True)


def test_postgres_holds_the_sqlite_indexers_graph(pg_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    root = make_repo(tmp_path / "repo")
    lite = sqlite_index(root, tmp_path / "index.db", settings())
    pg = postgres(request, root)
    try:
        summary = Indexer(pg, root, settings()).run()
        assert summary.files_indexed == len(REPO) and summary.skips == {"binary": 1}
        got = edges(pg)
        assert got == lite
        lite_store = open_store(tmp_path / "index.db")
        try:
            assert tracked.skips(pg) == tracked.skips(lite_store) and set(tracked.skips(pg)) == set(BINARY)
        finally:
            lite_store.close()
    finally:
        pg.close()
    by = {(src, kind, name): (target, how) for _, src, kind, name, _, target, how, _ in got}
    # the resolver's rules, not the name-only link: imports, bases, self and super calls, scope
    assert by[("cart_total.helper", "CALLS", "parse_amount")] == (("src/shop/money.py", "parse_amount"), "import")
    assert by[("open_savings", "CALLS", "parse_amount")] == (("src/shop/cart.py", "parse_amount"), "same file")
    assert by[("Savings", "INHERITS", "Wallet")][0] == ("src/shop/money.py", "Wallet")
    assert by[("Savings.deposit", "CALLS", "deposit")] == (("src/shop/money.py", "Wallet.deposit"), "scope")
    assert by[("Wallet.deposit", "CALLS", "_check")] == (("src/shop/money.py", "Wallet._check"), "scope")
    assert by[("cart_total", "CALLS", "update")][1] in ("guess", "")  # `seen.update`: never certain
    assert by[("Mixed.go", "CALLS", "run")] == (("src/shop/mixins.py", "Zeta.run"), "scope")
    assert by[("Circle", "IMPLEMENTS", "Shape")][0] == ("web/util.ts", "Shape")
    assert by[("test_deposit", "TESTS", "parse_amount")][0] == ("src/shop/money.py", "parse_amount")
    assert by[("tests/test_money.py", "TESTS", "src/shop/money.py")][0] == ("src/shop/money.py", "src/shop/money.py")
    assert by[("src/shop/report.py", "IMPORTS", "shop.cart")][0] == ("src/shop/cart.py", "src/shop/cart.py")


def test_an_update_keeps_both_graphs_equal(pg_url: str, tmp_path: Path, request: pytest.FixtureRequest,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """After edits (a definition renamed, a file gone, a new caller, a binary file), both
    backends' incremental resolves give the graph a fresh build gives; the files are parsed by
    the pool of parse workers."""
    monkeypatch.setattr(workers, "PARALLEL_MIN_FILES", 2)  # the fixture is small: use the pool anyway
    root = make_repo(tmp_path / "repo")
    sqlite_index(root, tmp_path / "index.db", settings(2))
    pg = postgres(request, root)
    try:
        Indexer(pg, root, settings(2)).run()
        money = root / "src/shop/money.py"
        money.write_text(money.read_text().replace("def _check(self, value)", "def _verify(self, value)")
                         .replace("self._check(value)", "self._verify(value)"))
        (root / "src/shop/report.py").unlink()
        (root / "src/shop/audit.py").write_text(
            "from shop.money import Savings\n\n\ndef audit(s: Savings):\n    return s.deposit('0')\n")
        (root / "notes.txt").write_bytes(b"\x00" * 64)  # a binary file: skipped
        os.utime(money, ns=(1, 1))
        lite = sqlite_index(root, tmp_path / "index.db", settings(2))
        summary = Indexer(pg, root, settings(2)).run()
        assert (summary.files_indexed, summary.files_deleted) == (2, 1)
        assert edges(pg) == lite
        assert edges(pg) == sqlite_index(root, tmp_path / "fresh.db", settings())  # as a fresh build
        assert pg.get_meta("resolve_pending") == "0"
        assert set(tracked.skips(pg)) == {"assets/logo.png", "notes.txt"}
    finally:
        pg.close()
    assert not any(name == "_check" for _, _, _, name, _, _, _, _ in lite)
    assert [name for _, src, kind, name, _, _, _, _ in lite if src == "audit" and kind == "CALLS"] == ["deposit"]


def test_callers_rank_by_confidence_on_postgres(pg_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    root = make_repo(tmp_path / "repo")
    pg = postgres(request, root)
    try:
        Indexer(pg, root, settings()).run()
        update = [u for u in read.find_symbols(pg, "Cart.update") if u.qualname == "Cart.update"][0]
        called = [e for e in read.callers(pg, [update.id]) if e.kind == "CALLS"]
        assert [(e.unit.qualname if e.unit else None, e.how, e.confidence) for e in called] == [
            ("cart_total", "guess", 0.3)]
        amount = [u for u in read.file_outline(pg, "src/shop/money.py") if u.name == "parse_amount"][0]
        ranked = read.callers(pg, [amount.id])
        assert [e.confidence for e in ranked] == sorted((e.confidence for e in ranked), reverse=True)
        assert {e.how for e in ranked if e.kind == "CALLS"} >= {"import", "same file"}
    finally:
        pg.close()


def test_a_build_killed_before_its_resolve_is_resolved_by_the_next(pg_url: str, tmp_path: Path,
                                                                   request: pytest.FixtureRequest) -> None:
    """A run that wrote a file and died before resolving (its mark committed, the file's new
    calls unresolved): the next run finds nothing to parse but resolves the whole graph."""
    from coderag_tui.indexing.workers import Job, process_file
    from coderag_tui.store.write import FileMeta, write_file

    root = make_repo(tmp_path / "repo")
    pg = postgres(request, root)
    try:
        Indexer(pg, root, settings()).run()
        report = root / "src/shop/report.py"
        report.write_text(report.read_text() + "\n\ndef again(prices):\n    return report(prices)\n")
        st = report.stat()
        out = process_file(Job("src/shop/report.py", str(report), st.st_size, st.st_mtime_ns, ""),
                           settings().index, settings().chunk)
        assert out.rows is not None
        with pg.transaction():
            pg.set_meta("resolve_pending", "1")  # what the dead run had committed first
            write_file(pg, out.rows, FileMeta("src/shop/report.py", out.hash, st.st_size, st.st_mtime_ns))
        again = [e for e in edges(pg) if e[1] == "again" and e[2] == "CALLS"]
        assert again and again[0][5] is None  # written, not resolved
        summary = Indexer(pg, root, settings()).run()
        assert summary.files_indexed == 0 and pg.get_meta("resolve_pending") == "0"
        assert edges(pg) == sqlite_index(root, tmp_path / "index.db", settings())
    finally:
        pg.close()


def test_real_code_has_the_same_graph_on_both_backends(pg_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """This project's own indexing and store packages (real imports, classes, calls across files)."""
    package = Path(__file__).resolve().parent.parent / "coderag_tui"
    root = tmp_path / "repo"
    for folder in ("indexing", "store", "store/postgres"):
        for source in sorted((package / folder).glob("*.py")):
            target = root / "coderag_tui" / folder / source.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source.read_text())
    (root / "coderag_tui/__init__.py").write_text("")
    lite = sqlite_index(root, tmp_path / "index.db", settings())
    pg = postgres(request, root)
    try:
        Indexer(pg, root, settings()).run()
        assert edges(pg) == lite
    finally:
        pg.close()
    resolved = [e for e in lite if e[2] == "CALLS" and e[5] is not None]
    assert len(resolved) > 500 and {e[6] for e in resolved} >= {"import", "same file", "scope"}
