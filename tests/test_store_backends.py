"""The store interface on both backends: one fixture repository indexed by the one indexer into
an SQLite file and into a repository of a real PostgreSQL with pgvector (`pg_server.py`; the
PostgreSQL half skips, with the reason, where no server starts) holds the same rows and gives
the same answers through every store query module; vectors, hostile text and a server's
failures are checked on each backend."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pytest

from coderag_tui.config import EmbedSettings, IndexSettings, Settings
from coderag_tui.errors import StoreError
from coderag_tui.indexing.indexer import Indexer
from coderag_tui.models import SearchFilters, UnitRef
from coderag_tui.store import (
    answer_cache,
    conversations,
    crosslinks,
    descriptions,
    embed_docs,
    embeddings,
    filters,
    graph_edges,
    ranked,
    read,
    retrieval_reads,
    review,
    tracked,
)
from coderag_tui.store.backend import StoreBackend, open_store
from coderag_tui.store.retrieval_reads import StoreReads
from coderag_tui.store.write import write_file
from tests.helpers.files import write_tree
from tests.helpers.store import rows_of

FILES: dict[str, str | bytes] = {
    "shop/__init__.py": "from shop.money import Wallet\n",
    "shop/money.py": (
        '"""Money helpers."""\n\n\ndef parse_amount(text):\n    """Read an amount of money."""\n'
        "    return round(float(text), 2)\n\n\nclass Wallet:\n    def __init__(self):\n        self.total = 0\n\n"
        "    def deposit(self, text):\n        self.total += parse_amount(text)\n        return self.total\n"
    ),
    "shop/cart.py": (
        "from shop.money import parse_amount\nimport requests\n\n\ndef cart_total(prices):\n"
        "    return sum(parse_amount(p) for p in prices)\n\n\ndef checkout(prices):\n"
        "    # the amount is parsed for every line of the cart\n    return cart_total(prices)\n"
    ),
    "shop/euro.py": "from shop.money import Wallet\n\nRATE = 1.1\nLIMIT = 500\n\n\n"
                    "class Euro(Wallet, Base):\n    def deposit(self, text):\n        return super().deposit(text)\n",
    "tests/test_cart.py": (
        "from shop.cart import cart_total\n\n\ndef test_cart_total():\n    assert cart_total(['1', '2']) == 3\n"
    ),
    "web/util.ts": "export interface Shape {\n  area(): number;\n}\n\n"
                   "export function square(x: number): number {\n  return x * x;\n}\n",
    "web/circle.ts": "import { Shape, square } from './util';\n\n"
                     "export class Circle implements Shape {\n  constructor(private r: number) {}\n"
                     "  area(): number {\n    return 3.14 * square(this.r);\n  }\n}\n",
    "docs/Guide_100%.md": "# Guide\n\nHow the wallet keeps the total.\n",
    "assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
}
KINDS = ("CALLS", "IMPORTS", "INHERITS", "IMPLEMENTS", "TESTS", "DEFINES", "CONTAINS")
SETTINGS = Settings(index=IndexSettings(workers=1), embed=EmbedSettings(enabled=False))


def open_target(kind: str, tmp_path: Path, request: pytest.FixtureRequest, source: str) -> StoreBackend:
    """An empty store of this backend (PostgreSQL: the repository indexed from `source`)."""
    if kind == "sqlite":
        return open_store(tmp_path / "index.db")
    return open_store(request.getfixturevalue("pg_url"), source=source, create=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreBackend]:
    opened = open_target(request.param, tmp_path, request, str(tmp_path / "repo"))
    assert opened.backend == opened.dialect == request.param
    yield opened
    opened.close()


@pytest.fixture
def indexed(store: StoreBackend, tmp_path: Path) -> StoreBackend:
    """The fixture repository, indexed into the store by the indexer."""
    Indexer(store, write_tree(tmp_path / "repo", FILES), SETTINGS).run()
    return store


@pytest.fixture
def pair(pg_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[StoreBackend, StoreBackend]]:
    """The same repository indexed into SQLite and into PostgreSQL."""
    root = write_tree(tmp_path / "repo", FILES)
    both = (open_target("sqlite", tmp_path, request, str(root)),
            open_target("postgresql", tmp_path, request, str(root)))
    try:
        for store in both:
            Indexer(store, root, SETTINGS).run()
        yield both
    finally:
        for store in both:
            store.close()


def unit(store: StoreBackend, name: str) -> UnitRef:
    """The unit of this qualified name (a file's: its path)."""
    found = [u for u in read.find_symbols(store, name) if u.qualname == name]
    assert found, name
    return found[0]




# --------------------------------------------------------------------------- the same rows, the same answers
TABLES = {  # the columns both backends keep alike (times of writing aside)
    "files": "id, path, language, hash, size, mtime_ns, lines, structured, has_errors, error",
    "units": "id, file_id, parent_id, kind, name, qualname, signature, params, return_type, decorators, docstring, "
             "bases, start_line, end_line, is_test",
    "edges": "id, src, src_file, dst, kind, name, receiver, line, argc, orphan",
    "imports": "file_id, module, names, line",
    "chunks": "id, file_id, unit_id, start_line, end_line, node_kinds, scope, hash, header, text",
    "skips": "path, reason, size, mtime_ns",
    "profiles": "unit_id, file_id, role, fan_in, fan_out, data, text",
}


def test_both_backends_hold_the_same_rows(pair: tuple[StoreBackend, StoreBackend]) -> None:
    lite, pg = pair
    for table, columns in TABLES.items():
        order = "path" if table == "skips" else "file_id, line, module" if table == "imports" else columns.split(",")[0]
        rows = [s.rows(f"SELECT {columns} FROM {table} ORDER BY {order}") for s in pair]
        assert rows[0], table
        assert rows[0] == rows[1], table
    assert lite.get_meta("files_generation") and pg.get_meta("resolve_pending") == lite.get_meta("resolve_pending")


QUERIES = ["parse_amount", "Wallet.deposit", "wallet", "cart_", "CART_", "chkout", "posit", "Dep", "deposit",
           "shop/money.py", "money.py", "c%", "x_%" * 400, "   ", "square", "Circle.area", "Euro", "RATE",
           "Guide_100%", "100%", "a" * 2000]


HUGE = "pkg_" + "b" * 60_000


def store_reads(db: StoreBackend) -> dict[str, Callable[[], Any]]:
    """Every read of the store query modules, with arguments the fixture gives meaning to."""
    ids = [int(r[0]) for r in db.rows("SELECT id FROM units ORDER BY id")]
    file_ids = [int(r[0]) for r in db.rows("SELECT id FROM files ORDER BY id")]
    hashes = [str(r[0]) for r in db.rows("SELECT hash FROM chunks ORDER BY id")]
    spans = [(int(c), int(f), int(s), int(e)) for c, f, s, e in
             db.rows("SELECT id, file_id, start_line, end_line FROM chunks ORDER BY id")]
    chunk_ids = [s[0] for s in spans]
    wallet, money = unit(db, "Wallet"), "shop/money.py"
    reads: dict[str, Callable[[], Any]] = {
        "files": lambda: [p for _, p in retrieval_reads.files_by_path(db)],
        "counts": lambda: read.counts(db),
        "status": lambda: dataclasses.replace(read.status(db, "/repo"), db_path="", schema_version=0,
                                              index_bytes=0, last_update=0),
        "callers": lambda: read.callers(db, ids, KINDS),
        "callees": lambda: read.callees(db, ids, KINDS),
        "children": lambda: [read.children(db, i) for i in ids],
        "outline": lambda: [read.file_outline(db, p) for _, p in retrieval_reads.files_by_path(db)],
        "units_at": lambda: [read.units_at(db, money, n) for n in range(1, 16)],
        "importers": lambda: read.importers(db, money),
        "orphans": lambda: read.orphans(db),
        "skip_kinds": lambda: read.skip_kinds(db),
        "unit_kinds": lambda: read.unit_kinds(db),
        "languages": lambda: read.languages(db),
        "has_file": lambda: (read.has_file(db, money), read.has_file(db, "SHOP/money.py")),
        "paths_ending": lambda: [read.paths_ending(db, s) for s in ("money.py", "shop/money.py", "Money.py", "Guide_100%.md",
                                                                      "GuideX100%.md", "%")],
        "paths_ending_with": lambda: [read.paths_ending_with(db, s) for s in ("y.py", ".ts")],
        "file_facts": lambda: [read.file_facts(db, p) for p in (money, "web/util.ts", "nowhere.py")],
        "file_imports": lambda: read.file_imports(db, "shop/cart.py"),
        "import_targets": lambda: read.import_targets(db, unit(db, "shop/cart.py").id),
        "file_index_states": lambda: read.file_index_states(db, "m"),
        "skip_reasons": lambda: read.skip_reasons(db),
        "file_states": lambda: tracked.file_states(db),
        "file_states_of": lambda: tracked.file_states(db, [money, "nowhere.py"]),
        "skips": lambda: tracked.skips(db),
        "is_empty": lambda: tracked.is_empty(db),
        "edge_count": lambda: tracked.edge_count(db),
        "paths_under": lambda: [tracked.paths_under(db, f) for f in ("shop", "web", "sho", "docs")],
        "module_files": lambda: [retrieval_reads.module_files(db, s) for s in ("shop/money", "money", "shop", "util")],
        "imports_named": lambda: [retrieval_reads.imports_named(db, m) for m in ("shop", "shop.money", "./util")],
        "chunk_texts": lambda: retrieval_reads.chunk_texts(db, chunk_ids),
        "units_inside": lambda: sorted(retrieval_reads.units_inside(db, spans)),
        "unit_briefs": lambda: retrieval_reads.unit_briefs(db, ids),
        "refine_rows": lambda: (lambda t, inside, b: (t, sorted(inside), b))(*retrieval_reads.refine_rows(
            db, [(c, f, s, e, u) for (c, f, s, e), (u,) in zip(spans, db.rows("SELECT unit_id FROM chunks ORDER BY id"),
                                                               strict=True)])),
        "references": lambda: sorted(retrieval_reads.references(db, ("CALLS", "IMPORTS", "INHERITS"))),
        "outline_rows": lambda: sorted(retrieval_reads.outline_rows(db), key=repr),
        "files_at": lambda: [retrieval_reads.files_at(db, s) for s in ("shop", "shop/money", "web/util")],
        "units_named": lambda: [retrieval_reads.units_named(db, n, files=f) for n in ("wallet", "AREA", "x")
                                for f in (True, False)],
        "units_named_each": lambda: retrieval_reads.units_named_each(db, ["wallet", "AREA", "x", "deposit"], 2,
                                                                     files=False),
        "units_name_like": lambda: [retrieval_reads.units_name_like(db, p, 50) for p in ("%amount", "de%", "\\_%")],
        "files_path_like": lambda: [retrieval_reads.files_path_like(db, p, 50) for p in ("%.ts", "SHOP/%", "%\\%%")],
        "units_overlapping": lambda: sorted(retrieval_reads.units_overlapping(db, money, 10, 14)),
        "graph_state": lambda: retrieval_reads.graph_state(db),
        "context_reads": lambda: [
            (r.children(wallet.id), r.file_imports("shop/euro.py"), r.file_constants("shop/euro.py"),
             r.unit_bases(unit(db, "Euro").id), r.unit_bases(wallet.id), r.file_chunk_texts(money),
             r.file_hash(money), r.file_hash("nowhere.py"), r.get_unit(wallet.id), r.get_unit(10**9),
             r.summary_texts([(wallet.id, wallet.path, wallet.kind, wallet.qualname)]))
            for r in [StoreReads(db)]],
        "find_symbols": lambda: [read.find_symbols(db, q) for q in QUERIES],
        "find_symbols_bounded": lambda: [read.find_symbols(db, q, fuzzy=False) for q in QUERIES],
        "find_symbols_kinds": lambda: read.find_symbols(db, "deposit", kinds=["function"]),
        "graph_all_units": lambda: sorted(graph_edges.all_units(db)),
        "graph_import_edges": lambda: sorted(graph_edges.import_edges(db)),
        "graph_base_edges": lambda: sorted(graph_edges.base_edges(db)),
        "graph_call_edges": lambda: sorted(graph_edges.call_edges(db)),
        "graph_resolved_calls": lambda: sorted(graph_edges.resolved_calls(db)),
        "graph_units_named": lambda: sorted(graph_edges.units_named(db, ["deposit", "square", "nothing"])),
        "graph_places": lambda: graph_edges.unit_places(db, ids),
        "graph_imported_files": lambda: [graph_edges.imported_files(db, f) for f in file_ids],
        "graph_definitions_named": lambda: [graph_edges.definitions_named(db, n) for n in ("deposit", "Wallet")],
        "graph_bases_of": lambda: graph_edges.bases_of(db, ids),
        "open_imports": lambda: crosslinks.open_imports(db),
        "open_calls": lambda: (crosslinks.open_calls(db, names=["round", "float", "sum"]),
                               crosslinks.open_calls(db, src_ids=ids)),
        "review_calls_of": lambda: review.calls_of(db, "parse_amount", money, "parse_amount"),
        "review_imports_of": lambda: [sorted(review.imports_of(db, f), key=repr) for f in file_ids],
        "review_receiver_at": lambda: review.receiver_at(db, unit(db, "Euro").id + 1, 9, "deposit"),
        "review_constants": lambda: review.constants_named(db, ["RATE", "LIMIT", "nope"]),
        "chunk_state": lambda: ranked.chunk_state(db),
        "chunk_rows_by_hash": lambda: sorted(ranked.chunk_rows_by_hash(db, hashes)),
        "span_vector_ids": lambda: ranked.span_vector_ids(db, money, 1, 15),
        "units_of_kind": lambda: filters.units_of_kind(db, ids, "METHOD"),
        "chunks_passing": lambda: [filters.chunks_passing(db, chunk_ids, f) for f in (
            SearchFilters(language="Python"), SearchFilters(path_prefix="./shop"), SearchFilters(path_prefix="web/"))],
        "pending_chunks": lambda: embeddings.pending_chunks(db),
        "pending_chunks_of": lambda: embeddings.pending_chunks(db, [money]),
        "chunk_count": lambda: (embeddings.chunk_count(db), embeddings.chunk_count(db, [money])),
        "all_embedded": lambda: embeddings.all_embedded(db),
        "max_vector_id": lambda: embeddings.max_vector_id(db),
        "pending_docs": lambda: embed_docs.pending_docs(db),
        "descriptions_units_of": lambda: descriptions.units_of(db, file_ids),
        "descriptions_under": lambda: [descriptions.file_ids_under(db, [p]) for p in ("shop", "Shop", "docs", ".")],
        "descriptions_neighbours": lambda: descriptions.neighbour_files(db, file_ids[:2]),
        "descriptions_callers": lambda: descriptions.callers(db, ids),
        "descriptions_degrees": lambda: descriptions.file_degrees(db, file_ids),
        "descriptions_importers": lambda: descriptions.importer_paths(db, file_ids),
        "descriptions_code_hashes": lambda: descriptions.code_hashes(db, descriptions.units_of(db, file_ids)),
        "descriptions_of_file": lambda: descriptions.file_descriptions(db, money),
        "descriptions_importance": lambda: descriptions.importance_rows(db, ids),
        "description_search": lambda: [db.description_search(t, 5) for t in (["helpers"], ["utility", "cart"],
                                                                             ["zzz"])],
        "range_fingerprint": lambda: [answer_cache.range_fingerprint(db, money, 4, 6),
                                      answer_cache.range_fingerprint(db, "nowhere.py", 1, 2)],
        "keyword_counts": lambda: db.keyword_counts(["wallet", "amount", "nothing", "parse"]),
        "keyword_top": lambda: [[r[:5] for r in db.keyword_rows(t, 1)] for t in (
            ["parse", "amount"], ["wallet"], ["square"], ["cart", "total"], ["guide"])],
        "keyword_filtered": lambda: [r[:5] for r in db.keyword_rows(["deposit", "area"], 1,
                                                                    SearchFilters(language="typescript"))],
        "name_pairs": lambda: sorted(r[0] for r in db.name_pair_rows([("cart", "total"), ("parse", "amount")], 10)),
        # text from a question reaches LIKE: SQLite refuses a pattern over 50,000 bytes
        "huge_like": lambda: [
            read.paths_ending(db, HUGE), read.paths_ending_with(db, HUGE), retrieval_reads.module_files(db, HUGE),
            retrieval_reads.imports_named(db, HUGE), retrieval_reads.files_at(db, HUGE),
            retrieval_reads.units_name_like(db, "%" + HUGE + "%", 10), retrieval_reads.files_path_like(db, HUGE, 10),
            descriptions.file_ids_under(db, [HUGE]), read.find_symbols(db, HUGE)],
    }
    return reads


def test_every_store_read_answers_alike_on_both_backends(pair: tuple[StoreBackend, StoreBackend]) -> None:
    lite, pg = pair
    answers = [store_reads(s) for s in pair]
    assert len(answers[0]) > 80
    differ = []
    for name, ask in answers[0].items():
        try:
            mine = ask()
        except Exception as exc:  # the query is SQLite's: a bug, shown with the others
            mine = f"raised {type(exc).__name__}: {exc}"
        try:
            theirs = answers[1][name]()
        except Exception as exc:
            theirs = f"raised {type(exc).__name__}: {exc}"
        if mine != theirs:
            differ.append(f"{name}:\n  sqlite     {mine!r:.600}\n  postgresql {theirs!r:.600}")
    assert not differ, "\n".join(differ)


def test_the_fixture_gives_the_reads_something_to_compare(indexed: StoreBackend) -> None:
    """What the comparison above stands on, on each backend: the answers are not all empty."""
    db = indexed
    assert read.counts(db).files == 8 and tracked.skips(db).keys() == {"assets/logo.png"}
    assert {u.qualname for u in read.find_symbols(db, "deposit")} == {"Wallet.deposit", "Euro.deposit"}
    assert [r[1] for r in crosslinks.open_imports(db)] == ["shop/cart.py"]  # `requests`
    by = {(e.source.qualname, e.kind, e.name): e.unit and (e.unit.path, e.unit.qualname) for e in read.callees(db, [
        unit(db, n).id for n in ("Circle", "Wallet.deposit", "Euro")], KINDS) if e.source}
    assert by[("Circle", "IMPLEMENTS", "Shape")] == ("web/util.ts", "Shape")
    assert by[("Wallet.deposit", "CALLS", "parse_amount")] == ("shop/money.py", "parse_amount")
    assert by[("Euro", "INHERITS", "Wallet")] == ("shop/money.py", "Wallet") and by[("Euro", "INHERITS", "Base")] is None
    assert db.keyword_rows(["wallet"], 1)[0][5] > 0
    assert db.description_search(["helpers"], 5) == [unit(db, "shop/money.py").id]  # its profile's words
    assert embeddings.pending_chunks(db)[1] == read.counts(db).chunks
    assert read.paths_ending(db, "Guide_100%.md") == ["docs/Guide_100%.md"] and read.paths_ending(db, "%") == []
    assert tracked.paths_under(db, "sho") == [] and len(tracked.paths_under(db, "shop")) == 4
    spans = db.rows("SELECT id, file_id, start_line, end_line, unit_id FROM chunks ORDER BY id")
    texts, inside, briefs = retrieval_reads.refine_rows(db, [tuple(int(x or 0) for x in s) for s in spans])
    assert len(texts) == len(spans) and inside and {uid for _, uid, *_ in inside} <= briefs.keys()
    assert [len(us) for us in retrieval_reads.units_named_each(db, ["Deposit", "wallet", "nothing"], 5, False)] == [2, 1, 0]


def test_summaries_documents_and_their_vectors_follow_alike(pair: tuple[StoreBackend, StoreBackend]) -> None:
    """The same writes on both backends (model summaries, their keyword rows, the documents
    embedded with them, vectors for those, an edit that makes a summary stale, garbage
    collection) leave the same state, step by step."""
    from coderag_tui.indexing.profiles import apply_summary_search, describe_changes

    def summary(db: StoreBackend, qualname: str, text: str) -> descriptions.StoredSummary:
        u = unit(db, qualname)
        return descriptions.StoredSummary(descriptions.summary_key(u.path, u.kind, u.qualname), u.path, u.kind,
                                          u.qualname, text, "tiny", "v1", "c0", "", False, 1.0, 0.5)

    def state(db: StoreBackend) -> dict[str, Any]:
        keys = embed_docs.pending_docs(db)
        return {
            "summaries": descriptions.all_summaries(db), "count": descriptions.summary_count(db),
            "file": descriptions.file_descriptions(db, "shop/money.py"),
            "texts": descriptions.summary_texts(db, [(u.id, u.path, u.kind, u.qualname) for u in
                                                     read.file_outline(db, "shop/money.py")]),
            "search": [db.description_search([w], 5) for w in ("amounts", "wallet", "helpers")],
            "pending_docs": keys,
            "chunk_hashes": embed_docs.chunk_hashes(db, keys), "unembedded": embed_docs.unembedded_docs(db),
            "pending_chunks": embeddings.pending_chunks(db), "all_embedded": embeddings.all_embedded(db),
            "vectors": sorted(str(r[0]) for r in db.rows("SELECT hash FROM vectors")),
            "index_states": read.file_index_states(db, "m"), "counts": read.counts(db),
        }

    def put(db: StoreBackend) -> None:
        for q, t in (("parse_amount", "Reads amounts of money typed by people."),
                     ("Wallet", "A wallet that keeps a running total."), ("shop/money.py", "Money helpers for the shop.")):
            descriptions.put_summary(db, summary(db, q, t))

    steps: list[Callable[[StoreBackend], Any]] = [
        put,
        lambda db: apply_summary_search(db, True),
        lambda db: embed_docs.sync(db),
        lambda db: db.ensure_model_table("m", 4),
        lambda db: db.write_vectors(sorted({str(h) for h, in db.rows("SELECT hash FROM chunks")} | set(
            embed_docs.pending_docs(db))), np.ones((len({str(h) for h, in db.rows("SELECT hash FROM chunks")} | set(
                embed_docs.pending_docs(db))), 4), dtype=np.float32), "m"),
        lambda db: embeddings.collect_garbage(db),
        lambda db: descriptions.mark_stale(db, [descriptions.summary_key("shop/money.py", "class", "Wallet")]),
        lambda db: descriptions.drop_summaries_except(db, ["shop/money.py"], {
            descriptions.summary_key("shop/money.py", "function", "parse_amount")}),
        lambda db: embed_docs.sync(db),
        lambda db: embeddings.collect_garbage(db),
        lambda db: apply_summary_search(db, False),
        lambda db: describe_changes(db, None),
    ]
    seen = []
    for n, step in enumerate(steps):
        done = []
        for db in pair:
            with db.transaction():
                done.append(step(db))
        assert done[0] == done[1], n
        mine, theirs = state(pair[0]), state(pair[1])
        assert mine == theirs, (n, {k: (mine[k], theirs[k]) for k in mine if mine[k] != theirs[k]})
        seen.append(mine)
    # (what the steps did, so that the comparison compared something)
    assert seen[0]["count"] == 3 and seen[1]["search"][0] and not seen[0]["search"][0]
    assert len(seen[2]["pending_docs"]) == 1 and seen[2]["unembedded"]  # the one chunk of a summarized unit
    assert any(h.startswith(embed_docs.PREFIX) for h in seen[4]["vectors"]) and seen[5]["all_embedded"]
    assert seen[6]["file"][1] and any("(out of date)" in text for text, _ in seen[6]["file"][1].values())
    assert seen[7]["count"] == 1 and seen[8]["pending_chunks"][1] == 1  # back to its plain vector: pending
    assert not seen[10]["search"][0]


# --------------------------------------------------------------------------- each backend
def test_both_backends_satisfy_the_interface(store: StoreBackend) -> None:
    assert isinstance(store, StoreBackend)
    assert store.schema_version >= 1 and store.location
    assert tracked.is_empty(store) and read.counts(store).chunks == 0
    assert not store.has_vectors() and not store.vec_ready()


def test_symbol_lookup_tiers(indexed: StoreBackend) -> None:
    db = indexed
    assert [u.qualname for u in read.find_symbols(db, "parse_amount")] == ["parse_amount"]
    assert read.find_symbols(db, "Wallet.deposit")[0].qualname == "Wallet.deposit"
    assert read.find_symbols(db, "wallet")[0].name == "Wallet"  # case-insensitive
    assert {u.name for u in read.find_symbols(db, "cart_")} >= {"cart_total"}  # prefix
    assert "checkout" in {u.name for u in read.find_symbols(db, "chkout")}  # letters in order
    assert "checkout" not in {u.name for u in read.find_symbols(db, "chkout", fuzzy=False)}
    assert {u.name for u in read.find_symbols(db, "CART_", fuzzy=False)} == {"cart_total"}  # prefix, any case
    assert "deposit" not in {u.name for u in read.find_symbols(db, "posit", fuzzy=False)}  # a part
    assert read.find_symbols(db, "c%", fuzzy=False) == [] and read.find_symbols(db, "x_%" * 400) == []
    assert read.find_symbols(db, "   ") == [] and read.find_symbols(db, "deposit", kinds=["function"]) == []


def test_rewriting_a_file_replaces_its_rows(indexed: StoreBackend, tmp_path: Path) -> None:
    db, root = indexed, tmp_path / "repo"
    before = read.counts(db)
    file_unit = read.file_outline(db, "shop/money.py")[0]
    (root / "shop/money.py").write_text(str(FILES["shop/money.py"]).replace("parse_amount", "read_amount"))
    summary = Indexer(db, root, SETTINGS).run()
    assert summary.files_indexed == 1
    after = read.counts(db)
    assert (after.files, after.units, after.chunks) == (before.files, before.units, before.chunks)
    assert read.file_outline(db, "shop/money.py")[0].id == file_unit.id  # edges into the file stay
    assert read.find_symbols(db, "parse_amount") == []
    gone = [e for e in read.callees(db, [unit(db, "cart_total").id]) if e.name == "parse_amount"]
    assert gone and gone[0].unit is None  # the call lost its target
    money = review.file_id(db, "shop/money.py")
    assert db.keyword_rows(["read_amount"], 5)[0][2] == money
    assert [r[2] for r in db.keyword_rows(["parse"], 5)] == [review.file_id(db, "shop/cart.py")]


def test_deleting_a_file_removes_every_row(indexed: StoreBackend, tmp_path: Path) -> None:
    db = indexed
    money = review.file_id(db, "shop/money.py")
    (tmp_path / "repo/shop/money.py").unlink()
    assert Indexer(db, tmp_path / "repo", SETTINGS).run().files_deleted == 1
    assert not read.has_file(db, "shop/money.py") and read.find_symbols(db, "Wallet") == []
    for table, column in (("units", "file_id"), ("chunks", "file_id"), ("imports", "file_id"), ("edges", "src_file")):
        assert not db.scalar(f"SELECT count(*) FROM {table} WHERE {column} = ?", (money,)), table
    assert all(r[2] != money for r in db.keyword_rows(["amount", "money", "wallet"], 50))
    imports = read.callees(db, [unit(db, "shop/euro.py").id], ("IMPORTS",))
    assert [(e.name, e.unit and e.unit.path) for e in imports] == [("shop.money", "shop/__init__.py")]


def test_a_failed_transaction_leaves_nothing(store: StoreBackend) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.set_meta("half", "done")
        store.execute("INSERT INTO skips(path, reason) VALUES(?, ?)", ("a.py", "binary"))
        with store.transaction():  # nested: a savepoint inside it
            store.execute("INSERT INTO skips(path, reason) VALUES(?, ?)", ("b.py", "binary"))
        raise RuntimeError("stop")
    assert tracked.skips(store) == {} and store.get_meta("half") == ""


def test_hostile_text_is_stored_and_found(store: StoreBackend) -> None:
    """NUL bytes (the indexer reads such a file as binary, a parser may still hand them on;
    PostgreSQL text cannot hold them: U+FFFD), SQL in strings, `?` and `%` in names and paths:
    stored, found, and no query text read as syntax."""
    with store.transaction():
        write_file(store, *rows_of("odd.py", "def odd():\n    return 'a\x00b?%s'  # \u00e9t\u00e9 ' ; DROP TABLE units; --\n"))
        write_file(store, *rows_of("what?%.py", "def what():\n    return '?'\n"))
    assert [u.name for u in read.find_symbols(store, "odd")] == ["odd"]
    assert store.keyword_rows(["drop", "units"], 5)[0][2] == review.file_id(store, "odd.py")
    [text] = [t for _, t in retrieval_reads.file_chunk_texts(store, "odd.py")]
    assert "DROP TABLE units" in text and ("\x00" in text or "\ufffd" in text)
    assert read.file_outline(store, "what?%.py")[0].name == "what?%.py"
    assert read.paths_ending(store, "what?%.py") == ["what?%.py"] and read.paths_ending(store, "t?%.py") == []
    assert store.keyword_rows(["x" * 5000], 5) == [] and store.keyword_rows(['") OR (*', "&|!:*"], 5) == []
    assert read.file_outline(store, "odd\x00.py") == [] and not read.has_file(store, "odd\x00.py")
    assert isinstance(read.find_symbols(store, "o\x00dd"), list)
    assert store.description_search(["\x00"], 5) == [] and store.keyword_rows(["\x00", "o\x00dd"], 5) == []


def test_unbounded_text_from_a_repository_or_a_user_is_stored(store: StoreBackend, tmp_path: Path) -> None:
    """A path of 2,800 bytes, an import of a 3,000-character string, a skipped file at such a
    path, a pasted question of 5,000: PostgreSQL refuses B-tree rows over 2,704 bytes, so none
    of them may sit in one (one such row failed the whole index)."""
    pick = np.random.default_rng(11)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789"))

    def noise(n: int) -> str:
        return "".join(pick.choice(letters, n))

    deep = "/".join(noise(200) for _ in range(14))
    module = noise(3000)
    root = write_tree(tmp_path / "repo", {
        f"{deep}/deep.py": "def deep_fn():\n    return 2\n", f"{deep}/logo.png": bytes(range(256)) * 4,
        "m.js": f"import x from './{module}';\nfunction uses_it() {{ return x; }}\n"})
    Indexer(store, root, SETTINGS).run()
    assert [u.path for u in read.find_symbols(store, "deep_fn")] == [f"{deep}/deep.py"]
    assert tracked.skips(store)[f"{deep}/logo.png"][0] == "binary"
    [imp] = read.callees(store, [unit(store, "m.js").id], ("IMPORTS",))
    assert imp.name == "./" + module and retrieval_reads.imports_named(store, "./" + module)
    (root / deep / "deep.py").write_text("def deeper_fn():\n    return 3\n")
    assert Indexer(store, root, SETTINGS).run().files_indexed == 1
    assert [u.name for u in read.file_outline(store, f"{deep}/deep.py")] == ["deep.py", "deeper_fn"]
    key = descriptions.summary_key(f"{deep}/deep.py", "function", "deeper_fn")
    for text in ("Returns three.", "Returns three, always."):  # a summary, then its replacement
        descriptions.put_summary(store, descriptions.StoredSummary(key, f"{deep}/deep.py", "function", "deeper_fn",
                                                                   text, "tiny", "v1", "c", "", False, 1.0, 0.1))
    assert [v.text for v in descriptions.summaries_by_key(store, [key]).values()] == ["Returns three, always."]
    assert descriptions.mark_stale(store, [key]) == 1 and descriptions.summary_count(store) == 1
    question = noise(5000)
    entry = answer_cache.put(store, "model", question, question, "", None, "an answer", [], "", [])
    assert [c.id for c in answer_cache.candidates(store, "model")] == [entry]
    answer_cache.put(store, "model", question, question, "", None, "again", [], "", [])  # the same question again
    assert [c.answer for c in answer_cache.candidates(store, "model")] == ["again"]


def test_reopening_keeps_the_index(indexed: StoreBackend, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    version, counts = indexed.schema_version, read.counts(indexed)
    if indexed.backend == "sqlite":
        again = open_store(tmp_path / "index.db")
    else:
        again = open_store(request.getfixturevalue("pg_url"), repo="repo")
    try:
        assert again.schema_version == version and read.counts(again) == counts
    finally:
        again.close()


def test_vectors_round_trip(indexed: StoreBackend) -> None:
    db = indexed
    hashes = sorted({str(r[0]) for r in db.rows("SELECT hash FROM chunks")})
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(len(hashes), 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    assert db.knn_rows(vecs[0], 3) == [] and not db.vec_ready("m")
    assert db.ensure_model_table("m", 8) is False  # nothing was dropped
    assert db.ensure_model_table("m", 8) is False
    assert db.write_vectors(hashes, vecs, "m") == len(hashes)
    assert db.write_vectors(hashes[:1], vecs[:1], "m") == 0  # stored already
    assert db.has_vectors() and db.vec_ready("m") and not db.vec_ready("other")
    assert read.counts(db).vectors == read.counts(db).chunks and embeddings.all_embedded(db)
    got = db.vectors_for_hashes([*hashes, "missing"])
    assert sorted(got) == hashes and all(np.allclose(got[h], v) for h, v in zip(hashes, vecs, strict=True))
    after = db.vectors_after(0)
    ids = [i for i, _ in after]
    assert ids == sorted(ids) and len(ids) == len(hashes)
    by_id = ranked.vector_hashes(db, ids)
    for i, blob in after:
        assert np.allclose(np.frombuffer(blob, dtype=np.float32), got[by_id[i]])
    assert db.vector_blobs(ids[1:3]) == dict(after[1:3]) and db.vector_blobs([]) == {}
    assert db.vectors_after(ids[-2]) == after[-1:]
    probe = vecs[2] + rng.normal(scale=0.05, size=8).astype(np.float32)
    nearest = db.knn_rows(probe, 3)
    assert nearest[0][0] == hashes[2] and nearest[0][1] < 0.05
    assert [d for _, d in nearest] == sorted(d for _, d in nearest) and len(nearest) == 3
    assert embeddings.max_vector_id(db) == ids[-1] and embeddings.vector_count(db) == len(ids)
    db.delete_vectors(ids[:1])
    assert embeddings.vector_count(db) == len(ids) - 1 and hashes[0] not in db.vectors_for_hashes(hashes)
    assert not embeddings.all_embedded(db) and embeddings.pending_chunks(db)[0]
    assert db.ensure_model_table("m2", 16) is True  # a new model: the old vectors go
    assert not db.has_vectors() and db.vec_ready("m2") and db.get_meta("embed_dim") == "16"
    assert db.write_vectors(hashes[:2], np.ones((2, 16), dtype=np.float32), "m2") == 2
    assert [h for h, _ in db.knn_rows(np.ones(16, dtype=np.float32), 5)] == hashes[:2] or \
        sorted(h for h, _ in db.knn_rows(np.ones(16, dtype=np.float32), 5)) == hashes[:2]


def test_conversations_and_the_answer_cache(indexed: StoreBackend) -> None:
    db = indexed
    first = conversations.save_turn(db, None, "the cart", "how?", "like so", "[]", "complete", "[]", 1.0)
    assert conversations.save_turn(db, first, "", "and?", "also", "[]", "complete", "[]", 2.0) == first
    second = conversations.save_turn(db, None, "other", "why?", "because", "[]", "stopped", "[]", 3.0)
    assert [r[:2] + r[3:] for r in conversations.conversation_rows(db)] == [(second, "other", 3.0, 2),
                                                                             (first, "the cart", 2.0, 4)]
    assert [r[:2] for r in conversations.message_rows(db, first)] == [
        ("user", "how?"), ("assistant", "like so"), ("user", "and?"), ("assistant", "also")]
    conversations.delete(db, first)
    assert not conversations.exists(db, first) and conversations.exists(db, second)
    entry = answer_cache.put(db, "model", "How?", "how", "", b"\x00\x01vec", "an answer", [], "",
                             [("shop/money.py", 4, 6)])
    [row] = answer_cache.candidates(db, "model")
    assert (row.id, row.vector, row.answer) == (entry, b"\x00\x01vec", "an answer")
    assert row.cited == [("shop/money.py", 4, 6, answer_cache.range_fingerprint(db, "shop/money.py", 4, 6))]
    answer_cache.delete(db, entry)
    assert answer_cache.candidates(db, "model") == []


# --------------------------------------------------------------------------- PostgreSQL: its own ways
def test_postgres_refuses_a_foreign_database_and_hides_the_password(pg_url: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("pg_url")  # (skips where no server starts)
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE units(id int)")
    with pytest.raises(StoreError, match="not a coderag index"):
        open_store(url, source="/src/a", create=True)


@pytest.mark.parametrize("bad", [
    "postgresql://ann:s3cret-pw@127.0.0.1:1/none?connect_timeout=2",  # no server there
    "postgresql://ann:s3cret-pw@127.0.0.1:notaport/none",  # not a URL psycopg reads
    "postgresql://ann:s3cret-pw@/none?host=/nonexistent/folder",  # no such socket
    "postgresql://ann:s3cret-pw@127.0.0.1:1/none?sslmode=bogus",  # a bad option
])
def test_a_bad_store_url_is_one_line_without_the_password(bad: str, capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(StoreError) as caught:
        open_store(bad, source="/src/a", create=True)
    line = caught.value.one_line()
    assert "s3cret" not in line and "\n" not in line and "cannot connect" in line, line
    from coderag_tui.cli.main import main

    repo = write_tree(tmp_path / "repo", {"a.py": "def a():\n    return 1\n"})
    assert main(["status", "--repo", str(repo), "--store", bad]) == 2
    err = capsys.readouterr().err
    assert "s3cret" not in err and len(err.strip().splitlines()) == 1, err


def test_a_lost_postgres_connection_is_one_line(pg_url: str, request: pytest.FixtureRequest) -> None:
    """Outside a transaction a dropped connection is opened again and the read run again; inside
    one, the transaction is lost with its connection: one line, and the next read works."""
    url = request.getfixturevalue("pg_url")
    import psycopg

    store = open_store(url, source="/src/a", create=True)

    def terminate() -> None:
        with psycopg.connect(request.getfixturevalue("pg_server"), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                          "AND pid <> pg_backend_pid()", (urlsplit(url).path.lstrip("/"),))

    try:
        terminate()
        assert read.counts(store).files == 0  # connected again (to the repository's schema)
        with pytest.raises(StoreError) as caught, store.transaction():
            terminate()
            read.counts(store)
        assert caught.value.message.startswith("PostgreSQL at postgresql://") and "\n" not in caught.value.message
        assert read.counts(store).files == 0
    finally:
        store.close()


def test_postgres_keyword_search_weighs_rare_words_over_common_ones(pg_url: str, request: pytest.FixtureRequest,
                                                                    tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", {f"m{n}.py": f"def handler_{n}(request):\n    return request.word{n}\n"
                                          for n in range(60)})
    store = open_store(request.getfixturevalue("pg_url"), source=str(root), create=True)
    try:
        Indexer(store, root, SETTINGS).run()  # (counts the chunks of each word at its end)
        path = dict((fid, p) for fid, p in retrieval_reads.files_by_path(store))
        assert len(store.keyword_rows(["request"], 10)) == 10  # in every chunk: kept, bounded
        hits = store.keyword_rows(["request", "word7"], 10)
        assert path[hits[0][2]] == "m7.py" and hits[0][5] > 10 * hits[1][5]  # IDF: the rare word decides
        (root / "new.py").write_text("def fresh():\n    return 'zebra'\n")
        Indexer(store, root, SETTINGS).run()
        path = dict((fid, p) for fid, p in retrieval_reads.files_by_path(store))
        assert [path[r[2]] for r in store.keyword_rows(["zebra"], 10)] == ["new.py"]  # counted later: found
        (root / "new.py").write_text("def fresh():\n    return 'okapi'\n")
        Indexer(store, root, SETTINGS).run()
        assert store.keyword_rows(["zebra"], 10) == []  # a re-written file's old words are gone
        (root / "new.py").unlink()
        Indexer(store, root, SETTINGS).run()
        assert store.keyword_rows(["okapi"], 10) == []
    finally:
        store.close()


def test_postgres_ranks_real_code_as_sqlite_fts5_does(pair: tuple[StoreBackend, StoreBackend],
                                                       tmp_path: Path) -> None:
    """The store's own modules in both backends: PostgreSQL's postings find the chunks FTS5's
    bm25 finds."""
    source = Path(__file__).resolve().parent.parent / "coderag_tui" / "store"
    root = write_tree(tmp_path / "repo", {f"store/{p.name}": p.read_text() for p in sorted(source.glob("*.py"))})
    for store in pair:
        Indexer(store, root, SETTINGS).run()
    names = sorted({str(n) for (n,) in pair[0].rows("SELECT name FROM units WHERE kind <> 'file'") if len(n) > 3})
    queries = [[n] for n in names[::5]] + [[a, b] for a, b in zip(names[1::7], names[3::7], strict=False)]
    overlaps, firsts = [], []
    for words in queries:
        lite = {r[0] for r in pair[0].keyword_rows(words, 10)}
        pg = [r[0] for r in pair[1].keyword_rows(words, 10)]
        assert bool(lite) == bool(pg), words
        if lite:
            overlaps.append(len(lite & set(pg)) / len(lite))
            firsts.append(pg[0] in lite)
    assert len(overlaps) > 40
    # (the columns differ: FTS5 weighs a docstring 2 and a path 3, PostgreSQL both 3, and its
    # average length is fixed)
    assert sum(overlaps) / len(overlaps) >= 0.85 and sum(firsts) / len(firsts) >= 0.85, (overlaps, firsts)


def test_postgres_vectors_are_searched_through_hnsw(pg_url: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", {f"v{n}.py": f"def f{n}():\n    return {n}\n" for n in range(40)})
    store = open_store(request.getfixturevalue("pg_url"), source=str(root), create=True)
    try:
        Indexer(store, root, SETTINGS).run()
        hashes = [str(h) for (h,) in store.rows("SELECT c.hash FROM chunks c JOIN files f ON f.id = c.file_id "
                                                "ORDER BY f.path")]
        store.ensure_model_table("m", 384)
        assert store.scalar("SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() "
                            "AND indexname = 'vectors_hnsw'") == 1
        vectors = np.random.default_rng(3).normal(size=(40, 384)).astype(np.float32)
        assert store.write_vectors(hashes, vectors, "m") == 40
        plan = "\n".join(str(r[0]) for r in store.rows(
            "EXPLAIN SELECT hash FROM vectors ORDER BY embedding <=> ?::vector LIMIT 5",
            ("[" + ",".join(["0.1"] * 384) + "]",)))
        assert "vectors_hnsw" in plan or "Seq Scan" in plan  # (a tiny table may be scanned)
        probe = vectors[17] + np.random.default_rng(4).normal(scale=0.05, size=384).astype(np.float32)
        assert store.knn_rows(probe, 3)[0][0] == hashes[17]
        with pytest.raises(StoreError):  # a vector of another dimension: one line, nothing written
            store.write_vectors(hashes[:1], vectors[:1, :10], "m")
        assert embeddings.vector_count(store) == 40
    finally:
        store.close()


def test_the_cli_indexes_embeds_and_searches_a_postgres_store(pg_url: str, request: pytest.FixtureRequest, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from coderag_tui.cli.main import main

    url = request.getfixturevalue("pg_url")
    shop = {p: t for p, t in FILES.items() if p.startswith(("shop/money", "shop/cart", "tests/"))}
    repo = write_tree(tmp_path / "repo", shop)
    assert main(["index", str(repo), "--store", url]) == 0
    out = capsys.readouterr().out
    assert "indexed 3 files, 7 units" in out and "3 chunks embedded" in out, out
    assert main(["search", "read an amount of money", "--repo", str(repo), "--store", url, "--json"]) == 0
    hits = __import__("json").loads(capsys.readouterr().out)
    assert hits[0]["path"] == "shop/money.py" and any(r.startswith("vector#") for r in hits[0]["reasons"]), hits
    assert main(["symbol", "Wallet.deposit", "--repo", str(repo), "--store", url]) == 0
    assert "shop/money.py:13-15" in capsys.readouterr().out
    assert main(["map", "--repo", str(repo), "--store", url]) == 0
    assert "def parse_amount(text)" in capsys.readouterr().out
    (repo / "shop/cart.py").unlink()  # an update drops the file that is gone, keeps the others
    assert main(["index", str(repo), "--store", url, "--no-embed"]) == 0
    assert "0 parsed, 2 unchanged, 1 deleted" in capsys.readouterr().out
    opened = open_store(url, repo="repo")  # the CLI indexes a folder into a repository named after it
    try:
        assert [p for _, p in retrieval_reads.files_by_path(opened)] == ["shop/money.py", "tests/test_cart.py"]
        assert opened.vec_ready() and embeddings.vector_count(opened) >= 2
    finally:
        opened.close()
