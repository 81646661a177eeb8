"""Embeddings with the real bundled model (all-MiniLM-L6-v2 int8, offline) into sqlite-vec."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from coderag_tui.config import EmbedSettings, Settings
from coderag_tui.errors import ModelError
from coderag_tui.indexing import embedder
from coderag_tui.models import Progress
from coderag_tui.retrieval import matrix as matrix_module
from coderag_tui.retrieval.matrix import VectorMatrix
from coderag_tui.retrieval.state import RetrievalState
from coderag_tui.retrieval.vector import knn_hashes, vectors_by_id
from coderag_tui.service import CodeRag
from coderag_tui.store import embeddings

FILES: dict[str, str | bytes] = {
    "geo/distance.py": '''"""Distances on the globe."""
import math


def haversine(lat1, lon1, lat2, lon2):
    """Great-circle distance between two points on the earth in kilometres."""
    r = 6371.0
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * r * math.asin(math.sqrt(a))
''',
    "store/cache.py": '''"""An in-memory cache with expiry."""
import time


class ExpiringCache:
    """Keeps values for a number of seconds."""

    def __init__(self, ttl):
        self.ttl = ttl
        self.data = {}

    def put(self, key, value):
        self.data[key] = (value, time.monotonic() + self.ttl)

    def get(self, key):
        value, deadline = self.data.get(key, (None, 0))
        return value if time.monotonic() < deadline else None
''',
    "text/slug.py": '''"""Turn titles into URL slugs."""
import re


def slugify(title):
    """Lower-case words joined by dashes, suitable for a URL."""
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "-".join(words)
''',
}


@pytest.fixture(scope="module")
def state() -> RetrievalState:
    """One loaded model shared by the tests of this module (it is the real model)."""
    return RetrievalState()


@pytest.fixture
def make_service(make_repo: Callable[..., Path], open_service: Callable[..., CodeRag],
                 state: RetrievalState) -> Callable[..., CodeRag]:
    def make(files: dict[str, str | bytes] = FILES, settings: Settings | None = None, name: str = "repo") -> CodeRag:
        service = open_service(make_repo(files, name=name), settings)
        service.__dict__["_retrieval_state"] = state
        return service

    return make


def _hash_count(service: CodeRag) -> int:
    return int(service.db.scalar("SELECT count(DISTINCT hash) FROM chunks"))


def test_bundled_model_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the tokenizer is package data: an empty models/ folder (a wheel install has none) is fine
    monkeypatch.setenv("CODERAG_MODELS_DIR", str(tmp_path / "no-models"))
    folder = embedder.bundled_model_dir()
    assert (folder / "model.onnx").is_file()
    for name in embedder.TOKENIZER_FILES:
        assert (folder / name).is_file()
    assert embedder.bundled_model_dir() == folder  # idempotent


def test_embed_writes_vectors_and_knn_finds_them(make_service: Callable[..., CodeRag]) -> None:
    service = make_service()
    events: list[Progress] = []
    summary = service.embed(progress=events.append)
    assert summary.embedded == _hash_count(service) > 0
    assert summary.dim == 384 and summary.model == "sentence-transformers/all-MiniLM-L6-v2-int8+windows"
    assert service.status().vectors == service.status().chunks
    assert service.db.get_meta("embed_model") == summary.model and service.db.get_meta("embed_dim") == "384"
    embeds = [e for e in events if e.phase == "embed"]
    assert embeds[0].done == 0 and embeds[-1].done == embeds[-1].total == summary.embedded
    assert all(a.done <= b.done for a, b in zip(embeds, embeds[1:], strict=False))
    assert embeds[-1].rate > 0 and events[-1].phase == "done"
    # a chunk's own text is its nearest neighbour
    cid, h, header, text = service.db.one("SELECT id, hash, header, text FROM chunks ORDER BY id LIMIT 1")
    model = service._retrieval().model(service.settings.embed)
    vec = model.embed([header + text])[0]
    assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-3
    nearest = knn_hashes(service.db, vec, 3)
    assert nearest[0][0] == h and nearest[0][1] < 1e-3
    # nothing is embedded twice
    again = service.embed()
    assert again.embedded == 0 and again.reused == service.status().chunks


def test_semantic_search_uses_vectors(make_service: Callable[..., CodeRag]) -> None:
    service = make_service()
    before = service.search("how far apart are two places on earth")
    assert all(not r.startswith("vector") for h in before for r in h.reasons)
    service.embed()
    hits = service.search("how far apart are two places on earth")
    assert hits[0].unit.qualname == "haversine"
    assert any(r.startswith("vector#") for r in hits[0].reasons)
    hits = service.search("remember values for a while then forget them")
    assert hits[0].unit.path == "store/cache.py"
    # a pasted snippet goes mostly to vectors
    snippet = "def make_url_part(s):\n    parts = re.findall('[a-z]+', s.lower())\n    return '_'.join(parts)\n"
    assert service.search(snippet)[0].unit.qualname == "slugify"
    similar = service.similar(service.symbols("slugify")[0].id, k=2)
    assert similar and similar[0].reasons[0].startswith("vector#")


def test_vector_branch_errors_reach_the_caller(make_service: Callable[..., CodeRag],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The vector branch runs on a worker thread: an error on either side is raised to the
    caller, and the worker is free for the next search (no search waits forever)."""
    from coderag_tui.retrieval import lexical
    from coderag_tui.retrieval.search import Searcher

    service = make_service()
    service.embed()
    searcher = service.searcher()
    assert searcher.embed_query is not None

    def broken_embed(text: str) -> np.ndarray:
        raise RuntimeError("model failed")

    with pytest.raises(RuntimeError, match="model failed"):
        Searcher(service.db, service.settings.search, broken_embed, searcher.matrix).search("distance on earth")
    real_terms = lexical.informative_terms

    def broken_terms(*args: object, **kwargs: object) -> list[str]:
        raise RuntimeError("terms failed")

    monkeypatch.setattr(lexical, "informative_terms", broken_terms)
    with pytest.raises(RuntimeError, match="terms failed"):
        searcher.search("distance on earth")  # the branch waiting for the terms gets the error too
    monkeypatch.setattr(lexical, "informative_terms", real_terms)
    hits = searcher.search("how far apart are two places on earth").hits
    assert hits[0].unit.qualname == "haversine" and any(r.startswith("vector#") for r in hits[0].reasons)


def test_changed_file_replaces_vectors(make_service: Callable[..., CodeRag]) -> None:
    service = make_service()
    service.embed()
    old = {r[0] for r in service.db.execute("SELECT c.hash FROM chunks c JOIN files f ON f.id=c.file_id "
                                            "WHERE f.path='text/slug.py'")}
    (service.root / "text/slug.py").write_text('''"""Turn titles into URL slugs."""


def slugify(title, sep="_"):
    """Lower-case words joined by a separator."""
    return sep.join(title.lower().split())
''')
    (service.root / "geo/distance.py").unlink()
    service.index()
    summary = service.embed()
    assert summary.removed >= len(old)
    assert summary.embedded >= 1
    hashes = {r[0] for r in service.db.execute("SELECT hash FROM vectors")}
    chunk_hashes = {r[0] for r in service.db.execute("SELECT hash FROM chunks")}
    assert hashes == chunk_hashes and not (old & hashes)
    n_vec = service.db.scalar(f"SELECT count(*) FROM {embeddings.VEC_TABLE}")
    assert n_vec == len(hashes)  # the vec0 rows went with their hashes
    assert all(h.unit.path != "geo/distance.py" for h in service.search("distance between two points on the earth"))


def test_changing_the_model_reembeds(make_service: Callable[..., CodeRag], tmp_path: Path) -> None:
    service = make_service()
    first = service.embed()
    other = tmp_path / "other-model"
    shutil.copytree(embedder.bundled_model_dir(), other)  # the same weights under another name
    settings = Settings(embed=EmbedSettings(model_path=str(other)))
    service2 = CodeRag(service.root, settings, service.db_path)
    try:
        summary = service2.embed()
        assert summary.reset and summary.model != first.model and summary.model.endswith(str(other))
        assert summary.embedded == _hash_count(service2)
        models = {r[0] for r in service2.db.execute("SELECT DISTINCT model FROM vectors")}
        assert models == {summary.model}
        # the first service's model no longer matches the index: it searches without vectors
        hits = service.search("distance on the earth")
        assert all(not r.startswith("vector") for h in hits for r in h.reasons)
    finally:
        service2.close()


def test_missing_model_is_one_clear_line(tmp_path: Path) -> None:
    empty = tmp_path / "nothing"
    empty.mkdir()
    with pytest.raises(ModelError) as err:
        embedder.load_model(EmbedSettings(model_path=str(empty)))
    assert "no ONNX embedding model" in err.value.one_line() and "\n" not in err.value.one_line()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(ModelError) as err:
        embedder.load_model(EmbedSettings(model_path=str(broken)))
    assert "cannot load the embedding model" in err.value.one_line()


def test_search_while_embedding(make_service: Callable[..., CodeRag]) -> None:
    """Embedding writes in small transactions (WAL): searches on another thread keep working."""
    files = {f"pkg/m{i}.py": f"def handler_{i}(request):\n    return render(request, 'page{i}.html')\n"
             for i in range(40)}
    service = make_service(files, name="many")
    errors: list[BaseException] = []
    results: list[int] = []
    done = threading.Event()

    def searcher() -> None:
        try:
            while not done.is_set():
                results.append(len(service.search("render the page for a request")))
        except BaseException as exc:  # pragma: no cover - the failure we look for
            errors.append(exc)

    t = threading.Thread(target=searcher)
    t.start()
    try:
        service.embed()
    finally:
        done.set()
        t.join()
    assert not errors and results and all(n > 0 for n in results)


def test_stop_early(make_service: Callable[..., CodeRag]) -> None:
    service = make_service()
    summary = service.embed(should_stop=lambda: True)
    assert summary.stopped and summary.embedded == 0
    assert service.embed().embedded == _hash_count(service)


def test_in_memory_knn_matches_sqlite_vec(make_service: Callable[..., CodeRag],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    service = make_service()
    service.embed()
    matrix = VectorMatrix()
    model = service._retrieval().model(service.settings.embed)
    q = model.query("distance between two cities")
    assert [h for h, _ in knn_hashes(service.db, q, 5, matrix)] == [h for h, _ in knn_hashes(service.db, q, 5)]
    # the copy follows the index: a changed file's vectors come and go
    (service.root / "text/slug.py").write_text("def slugify(title):\n    return title.replace(' ', '-')\n")
    service.index()
    service.embed()
    got = {h for h, _ in knn_hashes(service.db, q, 100, matrix)}
    assert got == {r[0] for r in service.db.execute("SELECT hash FROM vectors")}
    assert len(matrix.ids) == service.db.scalar("SELECT count(*) FROM vectors")


def test_binary_coded_knn_finds_stored_vectors(make_service: Callable[..., CodeRag],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Above EXACT_MAX the copy ranks by binary codes, then re-scores a few candidates from int8
    rows: a stored vector used as the query comes back first, at a distance near 0, and the
    copy still follows the index as vectors are added."""
    monkeypatch.setattr(matrix_module, "EXACT_MAX", 0)
    monkeypatch.setattr(matrix_module, "RERANK", 1)
    monkeypatch.setattr(matrix_module, "MIN_RERANK", 1)  # one candidate: the nearest code
    service = make_service()
    service.embed()
    matrix = VectorMatrix()
    stored = service.db.vectors_for_hashes([r[0] for r in service.db.execute("SELECT hash FROM vectors")])
    assert len(stored) >= 3
    for h, vec in stored.items():
        nearest = knn_hashes(service.db, vec, 1, matrix)
        assert not matrix.exact and matrix.mat.dtype == np.int8
        assert nearest[0][0] == h and nearest[0][1] < 0.01
    (service.root / "text/slug.py").write_text("def slugify(title):\n    return title.replace(' ', '-')\n")
    service.index()
    service.embed()
    added = [r[0] for r in service.db.execute("SELECT hash FROM vectors") if r[0] not in stored]
    fresh = service.db.vectors_for_hashes(added)
    assert fresh
    h, vec = next(iter(fresh.items()))
    assert knn_hashes(service.db, vec, 1, matrix)[0][0] == h
    assert len(matrix.ids) == service.db.scalar("SELECT count(*) FROM vectors")


def test_copy_drops_replaced_vectors(make_service: Callable[..., CodeRag]) -> None:
    """Replacing the newest vector gives it a new id (ids are never reused), and the in-memory
    copy drops the old row and reads the new one, without reloading the rest."""
    service = make_service()
    service.embed()
    matrix = VectorMatrix()
    knn_hashes(service.db, np.ones(int(service.db.get_meta("embed_dim")), np.float32), 1, matrix)
    kept_before = len(matrix.ids)
    path = service.root / "text/slug.py"
    for version in ("def slugify(title):\n    return title.lower()\n",
                    "def slugify(title):\n    return title.replace(' ', '_').upper()\n"):
        top = service.db.scalar("SELECT max(id) FROM vectors")
        path.write_text(version)
        service.index()
        service.embed()
        assert service.db.scalar("SELECT min(id) FROM vectors WHERE id > ?", (top,)) is not None
        live = {r[0]: r[1] for r in service.db.execute("SELECT hash, id FROM vectors")}
        vec = service.db.vectors_for_hashes(list(live))
        for h, v in vec.items():
            assert knn_hashes(service.db, v, 1, matrix)[0][0] == h
        assert sorted(matrix.ids.tolist()) == sorted(live.values())
    assert kept_before > 0


def test_embed_only_the_given_files(make_service: Callable[..., CodeRag]) -> None:
    """A watcher batch embeds the chunks of its files only and leaves stale vectors for the next
    full run, which removes them."""
    service = make_service()
    service.embed()
    before = set(service.db.vectors_for_hashes([r[0] for r in service.db.execute("SELECT hash FROM vectors")]))
    (service.root / "text/slug.py").write_text("def slugify(title):\n    return title.strip().lower()\n")
    (service.root / "text/extra.py").write_text("def shout(word):\n    return word.upper() + '!'\n")
    service.index()
    summary = service.embed(paths=["text/slug.py"])
    assert summary.embedded >= 1 and summary.removed == 0
    def has_vector(path: str) -> bool:
        return all(service.db.scalar("SELECT count(*) FROM vectors WHERE hash=?", (h,)) for (h,) in
                   service.db.execute("SELECT c.hash FROM chunks c JOIN files f ON f.id=c.file_id WHERE f.path=?", (path,)))
    assert has_vector("text/slug.py") and not has_vector("text/extra.py")
    stale = before - {r[0] for r in service.db.execute("SELECT hash FROM chunks")}
    assert stale and all(service.db.scalar("SELECT count(*) FROM vectors WHERE hash=?", (h,)) for h in stale)
    full = service.embed()
    assert full.removed == len(stale) and has_vector("text/extra.py")


def test_nothing_to_embed_does_not_load_the_model(make_service: Callable[..., CodeRag]) -> None:
    service = make_service()
    service.embed()
    fresh = CodeRag(service.root, service.settings, service.db_path)
    try:
        summary = fresh.embed()
        assert summary.embedded == 0 and summary.reused == fresh.status().chunks
        assert fresh._retrieval()._model is None  # the index was complete: no model loaded
    finally:
        fresh.close()


def test_queries_are_embedded_on_one_thread_by_the_same_model(state: RetrievalState) -> None:
    settings = EmbedSettings(threads=2)
    documents = state.model(settings)
    queries = state.query_model(settings)
    assert queries is not documents and queries is state.query_model(settings)  # loaded once
    assert queries.raw.session.get_session_options().intra_op_num_threads == 1  # onnxruntime directly
    assert documents.raw.model.model.get_session_options().intra_op_num_threads == 2
    text = "def slugify(title): return '-'.join(title.lower().split())"
    assert float(np.dot(queries.query(text), documents.embed([text])[0])) > 0.999
    # with one thread configured, the document model serves queries too
    one = EmbedSettings(threads=1)
    fresh = RetrievalState()
    assert fresh.model(one) is fresh.query_model(one)


@pytest.mark.parametrize("exact_max", [60_000, 0])
def test_vectors_by_id_from_the_copy_match_sqlite_vec(make_service: Callable[..., CodeRag],
                                                     monkeypatch: pytest.MonkeyPatch, exact_max: int) -> None:
    """`similar` reads its unit's vectors from the in-memory copy (float32 rows, or int8 rows
    rescaled above EXACT_MAX) and gets what sqlite-vec stores; unknown ids are left out."""
    monkeypatch.setattr(matrix_module, "EXACT_MAX", exact_max)
    service = make_service()
    service.embed()
    ids = [int(r[0]) for r in service.db.execute("SELECT id FROM vectors ORDER BY id DESC")]
    stored = vectors_by_id(service.db, ids)
    assert stored.shape == (len(ids), 384)
    copy = vectors_by_id(service.db, [*ids, 10**9], VectorMatrix())
    assert copy.shape == stored.shape
    assert np.abs(copy - stored).max() < (1e-6 if exact_max else 0.01)
    assert vectors_by_id(service.db, []).shape[0] == 0
