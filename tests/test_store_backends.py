"""The store interface on both backends: every test here runs on SQLite and on a real
PostgreSQL with pgvector (started by `pg_server.py`; skipped, with the reason, where it cannot)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from coderag_tui.config import ChunkSettings
from coderag_tui.errors import StoreError
from coderag_tui.parsing.extract import content_hash, parse_source
from coderag_tui.parsing.languages import detect_language
from coderag_tui.store.backend import StoreBackend, open_store
from coderag_tui.store.write import FileMeta, FileRows, file_rows

from .pg_server import pg_server, pg_url  # noqa: F401 (fixtures)

FILES = {
    "shop/money.py": (
        '"""Money helpers."""\n\n\ndef parse_amount(text):\n    """Read an amount of money."""\n'
        "    return round(float(text), 2)\n\n\nclass Wallet:\n    def __init__(self):\n        self.total = 0\n\n"
        "    def deposit(self, text):\n        self.total += parse_amount(text)\n        return self.total\n"
    ),
    "shop/cart.py": (
        "from shop.money import parse_amount\n\n\ndef cart_total(prices):\n"
        "    return sum(parse_amount(p) for p in prices)\n\n\ndef checkout(prices):\n"
        "    # the amount is parsed for every line of the cart\n    return cart_total(prices)\n"
    ),
    "tests/test_cart.py": (
        "from shop.cart import cart_total\n\n\ndef test_cart_total():\n    assert cart_total(['1', '2']) == 3\n"
    ),
}


def rows_of(path: str, text: str) -> tuple[FileRows, FileMeta]:
    data = text.encode()
    parsed = parse_source(path, data, detect_language(path, data[:256]), ChunkSettings())
    return file_rows(parsed), FileMeta(path, content_hash(data), len(data), 0)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreBackend]:
    target = str(tmp_path / "index.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    opened = open_store(target)
    assert opened.backend == request.param
    yield opened
    opened.close()


@pytest.fixture
def shop(store: StoreBackend) -> StoreBackend:
    for path, text in FILES.items():
        store.write_file(*rows_of(path, text))
    store.link_calls()
    return store


def unit(store: StoreBackend, name: str):  # type: ignore[no-untyped-def]
    found = [u for u in store.find_symbols(name) if u.name == name]
    assert found, name
    return found[0]


def test_both_backends_satisfy_the_interface(store: StoreBackend) -> None:
    assert isinstance(store, StoreBackend)
    assert store.schema_version >= 1
    assert store.files() == [] and store.counts().chunks == 0


def test_written_files_read_back_alike(shop: StoreBackend) -> None:
    assert shop.files() == sorted(FILES)
    n = shop.counts()
    assert (n.files, n.units) == (3, 7)  # parse_amount, Wallet, __init__, deposit, cart_total, checkout, test
    assert n.chunks >= 3 and n.vectors == 0
    outline = shop.file_outline("shop/money.py")
    assert [(u.kind, u.qualname) for u in outline] == [
        ("file", "shop/money.py"), ("function", "parse_amount"), ("class", "Wallet"),
        ("method", "Wallet.__init__"), ("method", "Wallet.deposit")]
    amount = outline[1]
    assert shop.get_unit(amount.id) == amount
    assert (amount.start_line, amount.end_line, amount.docstring) == (4, 6, "Read an amount of money.")
    assert shop.get_unit(10**9) is None


def test_symbol_lookup_tiers(shop: StoreBackend) -> None:
    assert [u.qualname for u in shop.find_symbols("parse_amount")] == ["parse_amount"]
    assert shop.find_symbols("Wallet.deposit")[0].qualname == "Wallet.deposit"
    assert shop.find_symbols("wallet")[0].name == "Wallet"  # case-insensitive
    assert {u.name for u in shop.find_symbols("cart_")} >= {"cart_total"}  # prefix
    assert "checkout" in {u.name for u in shop.find_symbols("chkout")}  # letters in order
    assert shop.find_symbols("deposit", kinds=["function"]) == []
    assert shop.find_symbols("x_%" * 400) == [] and shop.find_symbols("   ") == []


def test_symbol_lookup_without_fuzzy_levels(shop: StoreBackend) -> None:
    # what a search asks for: the levels an index bounds, not those reading every name
    assert [u.qualname for u in shop.find_symbols("parse_amount", fuzzy=False)] == ["parse_amount"]
    assert shop.find_symbols("WALLET", fuzzy=False)[0].name == "Wallet"
    assert {u.name for u in shop.find_symbols("CART_", fuzzy=False)} == {"cart_total"}  # prefix, any case
    assert {u.name for u in shop.find_symbols("Dep", fuzzy=False)} == {"deposit"}
    assert "checkout" not in {u.name for u in shop.find_symbols("chkout", fuzzy=False)}  # letters in order
    assert "deposit" not in {u.name for u in shop.find_symbols("posit", fuzzy=False)}  # a part
    assert "deposit" in {u.name for u in shop.find_symbols("posit")}
    assert shop.find_symbols("c%", fuzzy=False) == [] and shop.find_symbols("x_%" * 400, fuzzy=False) == []


def test_calls_link_and_read_both_ways(shop: StoreBackend) -> None:
    amount, total, deposit = unit(shop, "parse_amount"), unit(shop, "cart_total"), unit(shop, "deposit")
    assert {e.unit.qualname for e in shop.callers([amount.id]) if e.unit} == {"Wallet.deposit", "cart_total"}
    called = {e.name: e.unit for e in shop.callees([deposit.id])}
    assert called["parse_amount"] == amount
    assert {e.unit.qualname for e in shop.callers([total.id]) if e.unit} == {"checkout", "test_cart_total"}
    defined = shop.callees([unit(shop, "Wallet").id], kinds=("DEFINES",))
    assert [e.unit.name for e in defined if e.unit] == ["__init__", "deposit"]


def test_keyword_search_weighs_names_over_code(shop: StoreBackend) -> None:
    hits = shop.keyword_search(["parse", "amount"], limit=10)
    assert hits and hits[0].path == "shop/money.py"  # defines it (names) vs only calls it (code)
    assert {h.path for h in hits} >= {"shop/money.py", "shop/cart.py"}
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:], strict=False))
    assert shop.keyword_search(["nothing_like_this"]) == []
    assert shop.keyword_search(['") OR (*', "&|!:*"]) == []  # query syntax is never read
    assert shop.keyword_search(["checkout"], limit=0) == []


def test_vector_search_finds_the_nearest_chunks(shop: StoreBackend) -> None:
    hits = shop.keyword_search(["parse", "amount", "cart", "test"], limit=50)
    by_path = {h.path: h.chunk_id for h in hits}
    assert len(by_path) == 3
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(3, 384)).astype(np.float32)
    hashes = [content_hash(f"chunk {i}".encode()) for i in range(3)]
    assert shop.vector_search(vectors[0], "m") == []
    # vectors belong to chunk hashes: give each file's chunks the hash's vector through a rewrite
    for (path, text), h in zip(FILES.items(), hashes, strict=True):
        rows, meta = rows_of(path, text)
        rows = rows._replace(chunks=[(*c[:5], h, *c[6:]) for c in rows.chunks])
        shop.write_file(rows, meta)
    assert shop.set_vectors("m", hashes, vectors) == 3
    assert shop.set_vectors("m", hashes[:1], vectors[:1]) == 0  # stored already
    query = vectors[1] + rng.normal(scale=0.1, size=384).astype(np.float32)
    found = shop.vector_search(query, "m", limit=5)
    assert found[0].path == "shop/cart.py" and found[0].score > 0.9
    assert shop.vector_search(query, "other-model") == []
    assert shop.counts().vectors == shop.counts().chunks


def test_rewriting_a_file_replaces_its_rows(shop: StoreBackend) -> None:
    before = shop.counts()
    file_unit = shop.file_outline("shop/money.py")[0]
    shop.write_file(*rows_of("shop/money.py", FILES["shop/money.py"].replace("parse_amount", "read_amount")))
    after = shop.counts()
    assert (after.files, after.units, after.chunks) == (before.files, before.units, before.chunks)
    assert shop.file_outline("shop/money.py")[0].id == file_unit.id  # edges into the file stay
    assert shop.find_symbols("parse_amount") == []
    gone = [e for e in shop.callees([unit(shop, "cart_total").id]) if e.name == "parse_amount"]
    assert gone and gone[0].unit is None  # the call lost its target
    assert shop.keyword_search(["read_amount"])[0].path == "shop/money.py"


def test_deleting_a_file_removes_every_row(shop: StoreBackend) -> None:
    assert shop.delete_file("shop/money.py") is True
    assert shop.delete_file("shop/money.py") is False
    assert shop.files() == ["shop/cart.py", "tests/test_cart.py"]
    assert shop.find_symbols("Wallet") == [] and shop.counts().units == 3
    assert all(h.path != "shop/money.py" for h in shop.keyword_search(["amount", "money"]))


def test_a_failed_transaction_leaves_nothing(store: StoreBackend) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.write_file(*rows_of("a.py", "def alpha():\n    return 1\n"))
        raise RuntimeError("stop")
    assert store.files() == [] and store.find_symbols("alpha") == []


def test_hostile_text_is_stored_and_found(store: StoreBackend) -> None:
    text = "def odd():\n    return 'a\x00b'  # \u00e9t\u00e9 ' ; DROP TABLE units; --\n"
    store.write_file(*rows_of("odd.py", text))
    assert [u.name for u in store.find_symbols("odd")] == ["odd"]
    assert store.keyword_search(["drop", "units"])[0].path == "odd.py"
    assert store.keyword_search(["x" * 5000]) == [] and store.file_outline("odd\x00.py") == []
    assert store.delete_file("odd\x00.py") is False


def test_reopening_keeps_the_index(store: StoreBackend, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    store.write_file(*rows_of("a.py", "def alpha():\n    return 1\n"))
    version = store.schema_version
    target = str(tmp_path / "index.db") if store.backend == "sqlite" else request.getfixturevalue("pg_url")
    store.close()
    again = open_store(target)
    try:
        assert again.schema_version == version and again.files() == ["a.py"]
    finally:
        again.close()


def test_postgres_refuses_a_foreign_database_and_hides_the_password(request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("pg_url")  # (skips where no server starts)
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE units(id int)")
    with pytest.raises(StoreError, match="not a coderag index"):
        open_store(url)
    bad = "postgresql://ann:s3cret-pw@127.0.0.1:1/none?connect_timeout=2"
    with pytest.raises(StoreError) as caught:
        open_store(bad)
    assert "s3cret" not in str(caught.value) and "cannot connect" in caught.value.message


def test_the_cli_indexes_and_searches_a_postgres_store(request: pytest.FixtureRequest, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from coderag_tui.cli.main import main

    url = request.getfixturevalue("pg_url")
    repo = tmp_path / "repo"
    for path, text in FILES.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    assert main(["index", str(repo), "--store", url]) == 0
    out = capsys.readouterr().out
    assert "indexed 3 files, 7 units" in out and "3 chunks embedded" in out, out
    assert main(["search", "read an amount of money", "--repo", str(repo), "--store", url, "--json"]) == 0
    hits = __import__("json").loads(capsys.readouterr().out)
    assert hits[0]["path"] == "shop/money.py" and "vector#1" in hits[0]["reasons"], hits
    assert main(["symbol", "Wallet.deposit", "--repo", str(repo), "--store", url]) == 0
    assert "shop/money.py:13-15" in capsys.readouterr().out
    (repo / "shop/cart.py").unlink()  # an update drops the file that is gone, keeps the others
    assert main(["index", str(repo), "--store", url, "--no-embed"]) == 0
    assert "0 parsed, 2 unchanged, 1 deleted" in capsys.readouterr().out
    assert main(["map", "--repo", str(repo), "--store", url]) == 2
    assert "does not run on a store given by URL yet" in capsys.readouterr().err
    opened = open_store(url, repo="repo")  # the CLI indexes a folder into a repository named after it
    try:
        assert opened.files() == ["shop/money.py", "tests/test_cart.py"]
    finally:
        opened.close()


def test_a_lost_postgres_connection_is_one_line(request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("pg_url")
    import psycopg

    store = open_store(url)
    store.write_file(*rows_of("a.py", "def alpha():\n    return 1\n"))

    def terminate() -> None:
        with psycopg.connect(request.getfixturevalue("pg_server"), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                          "AND pid <> pg_backend_pid()", (urlsplit(url).path.lstrip("/"),))

    terminate()
    assert store.files() == ["a.py"]  # outside a transaction: connected again, the read run again
    with pytest.raises(StoreError) as caught, store.transaction():
        terminate()  # inside one, the transaction is lost with its connection: one line
        store.files()
    assert caught.value.message.startswith("PostgreSQL at postgresql://") and "\n" not in caught.value.message
    assert store.files() == ["a.py"]
    store.close()


def test_postgres_keyword_search_weighs_rare_words_over_common_ones(request: pytest.FixtureRequest) -> None:
    store = open_store(request.getfixturevalue("pg_url"))
    try:
        for n in range(60):
            store.write_file(*rows_of(f"m{n}.py", f"def handler_{n}(request):\n    return request.word{n}\n"))
        store.link_calls()  # (counts the chunks of each word)
        assert len(store.keyword_search(["request"], limit=10)) == 10  # in every chunk: kept, bounded
        hits = store.keyword_search(["request", "word7"])
        assert hits[0].path == "m7.py" and hits[0].score > 10 * hits[1].score  # IDF: the rare word decides
        store.write_file(*rows_of("new.py", "def fresh():\n    return 'zebra'\n"))
        assert [h.path for h in store.keyword_search(["zebra"])] == ["new.py"]  # counted later: found
        store.write_file(*rows_of("new.py", "def fresh():\n    return 'okapi'\n"))
        assert store.keyword_search(["zebra"]) == []  # a re-written file's old words are gone
        assert store.delete_file("new.py") and store.keyword_search(["okapi"]) == []
    finally:
        store.close()


def test_postgres_ranks_real_code_as_sqlite_fts5_does(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The same files in both backends: PostgreSQL's postings find the chunks FTS5's bm25 finds."""
    root = Path(__file__).resolve().parent.parent / "coderag_tui" / "store"
    files = [rows_of(f"store/{p.name}", p.read_text()) for p in sorted(root.glob("*.py"))]
    backends = [open_store(str(tmp_path / "index.db")), open_store(request.getfixturevalue("pg_url"))]
    try:
        for b in backends:
            for rows, meta in files:
                b.write_file(rows, meta)
            b.link_calls()
        names = sorted({u[3] for rows, _ in files for u in rows.units if u[2] != "file" and len(u[3]) > 3})
        queries = [[n] for n in names[::5]] + [[a, b] for a, b in zip(names[1::7], names[3::7], strict=False)]
        overlaps, firsts = [], []
        for q in queries:
            sqlite_spans = {(h.path, h.start_line) for h in backends[0].keyword_search(q, limit=10)}
            pg_spans = [(h.path, h.start_line) for h in backends[1].keyword_search(q, limit=10)]
            assert bool(sqlite_spans) == bool(pg_spans), q
            if sqlite_spans:
                overlaps.append(len(sqlite_spans & set(pg_spans)) / len(sqlite_spans))
                firsts.append(pg_spans[0] in sqlite_spans)
        assert len(overlaps) > 40
        # (measured: overlap@10 0.91, first hit within FTS5's ten 0.91; the columns differ: FTS5 weighs a
        # docstring 2 and a path 3, PostgreSQL both 3, and its average length is fixed)
        assert sum(overlaps) / len(overlaps) >= 0.85 and sum(firsts) / len(firsts) >= 0.85, (overlaps, firsts)
    finally:
        for b in backends:
            b.close()


def test_postgres_bulk_vectors_build_the_hnsw_index_after_the_load(request: pytest.FixtureRequest) -> None:
    from coderag_tui.store.postgres.bulk import vectors_without_index

    store = open_store(request.getfixturevalue("pg_url"))
    try:
        rng = np.random.default_rng(3)
        hashes = []
        for n in range(40):
            rows, meta = rows_of(f"v{n}.py", f"def f{n}():\n    return {n}\n")
            hashes.append(rows.chunks[0][5])
            store.write_file(rows, meta)
        vectors = rng.normal(size=(40, 384)).astype(np.float32)
        conn = store.conn  # type: ignore[attr-defined]
        indexed = "SELECT count(*) FROM pg_indexes WHERE indexname = 'vectors_hnsw'"
        with vectors_without_index(conn):
            assert conn.execute(indexed).fetchone()[0] == 0
            assert store.set_vectors("m", hashes, vectors) == 40
        assert conn.execute(indexed).fetchone()[0] == 1
        found = store.vector_search(vectors[17] + rng.normal(scale=0.05, size=384).astype(np.float32), "m", 3)
        assert found[0].path == "v17.py"
        with pytest.raises(StoreError), vectors_without_index(conn):  # an error: the index comes back
            store.set_vectors("m", hashes[:1], vectors[:1, :10])
        assert conn.execute(indexed).fetchone()[0] == 1
    finally:
        store.close()


def test_postgres_migration_gives_chunks_written_before_their_postings(
        request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    from coderag_tui.store.postgres import connect

    url = request.getfixturevalue("pg_url")
    monkeypatch.setattr(connect, "SCHEMA_VERSION", 2)  # a database of the tsvector keywords
    old = open_store(url)
    conn = old.conn  # type: ignore[attr-defined]
    conn.execute("INSERT INTO files(id, path, language, hash, size, mtime_ns, indexed_at) "
                 "VALUES(1, 'a.py', 'python', 'h', 1, 0, 0)")
    for n, (names, code) in enumerate([("parse_amount", "parse amount text"), ("wallet", "deposit total")]):
        conn.execute("INSERT INTO chunks(id, file_id, start_line, end_line, hash, text, kw_names, kw_code) "
                     "VALUES(%s, 1, 1, 2, %s, '', %s, %s)", (n + 1, f"h{n}", names, code))
    old.close()
    monkeypatch.undo()
    store = open_store(url)
    try:
        assert store.schema_version >= 4
        assert [h.chunk_id for h in store.keyword_search(["deposit"])] == [2]
        assert [h.chunk_id for h in store.keyword_search(["amount", "wallet"])][:2] in ([1, 2], [2, 1])
    finally:
        store.close()


def test_context_reads_answer_alike(shop: StoreBackend) -> None:
    """The reads context composition and the server make (ContextReads and the rows around)."""
    shop.write_file(*rows_of("shop/euro.py", "RATE = 1.1\n\n\nclass Euro(Wallet, Base):\n    pass\n"))
    wallet = unit(shop, "Wallet")
    assert [u.name for u in shop.children(wallet.id)] == ["__init__", "deposit"]
    assert shop.file_imports("shop/cart.py") == ["shop.money"]
    assert shop.file_constants("shop/euro.py") == ["RATE"]
    assert shop.unit_bases(unit(shop, "Euro").id) == ["Wallet", "Base"]
    assert shop.unit_bases(wallet.id) == []
    texts = shop.file_chunk_texts("shop/money.py")
    assert texts[0][0] == 1 and "def parse_amount(text):" in "".join(t for _, t in texts)
    assert shop.file_hash("shop/money.py") == content_hash(FILES["shop/money.py"].encode())
    assert shop.file_hash("nowhere.py") is None
    assert [u.name for u in shop.units_at("shop/money.py", 14)][:2] == ["deposit", "Wallet"]
    assert shop.file_facts("shop/money.py") == ("python", 15, False)
    assert shop.summary_texts([(wallet.id, wallet.path, wallet.kind, wallet.qualname)]) == {}
    assert shop.unit_summaries("shop/money.py") == {}
    status = shop.status("/repo")
    assert (status.repo_root, status.files, status.units, status.edges) == ("/repo", 4, 9, shop.edge_count())
    assert [(lang.language, lang.files) for lang in status.languages] == [("python", 4)]
