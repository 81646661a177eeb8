"""A chunk whose unit has a summary is embedded with it (the summary is part of the embedded text), once per
document, in the background of search: the old vector serves until the new one exists."""

from __future__ import annotations

import time

import numpy as np
import pytest

from coderag_tui.answering.summarize import Summarizer
from coderag_tui.config import Settings, SummarySettings
from coderag_tui.retrieval import vector
from coderag_tui.service import CodeRag
from coderag_tui.store import descriptions as store
from coderag_tui.store import embed_docs


def _body(name: str, op: str) -> str:
    """A function long enough to be a chunk of its own."""
    lines = [f"def {name}(x):"] + [f"    value_{i} = x {op} {i} if x > {i} else x" for i in range(40)]
    return "\n".join([*lines, "    return round(value_39, 2)", ""])


FILES = {
    "app/util.py": '"""Small numeric helpers."""\n\n\n' + _body("rounded", "+") + "\n\n" + _body("doubled", "*"),
    "app/core.py": "from app.util import rounded\n\n\nclass Cart:\n    def total(self, price):\n"
                   "        return rounded(price)\n",
}
QUESTION = "reconcile the refund ledger every night"
RANKED = Settings(summaries=SummarySettings(search=True))


class _Canned:
    """A stand-in model: isolates how a stored summary reaches the vectors."""

    name = "canned"

    def stream(self, messages, *, max_tokens, temperature, stop=None):
        yield "Reconciles the refund ledger nightly."


def _put(db, qualname: str, text: str) -> None:
    with db.transaction():
        store.put_summary(db, store.StoredSummary(store.summary_key("app/util.py", "function", qualname),
                                                  "app/util.py", "function", qualname, text, "m", "1", "", "",
                                                  False, time.time(), 0.0))


def _similarity(service, qualname: str) -> float:
    """Cosine similarity of the question to the nearest vector of `qualname`'s chunk."""
    query = service.searcher().embed_query(QUESTION)
    assert query is not None
    matches = vector.knn_chunks(service.db, np.asarray(query), limit=50)
    unit = service.db.scalar("SELECT id FROM units WHERE qualname=?", (qualname,))
    return next(m.score for m in matches if m.unit_id == unit)


def _by_summary(service) -> list[str]:
    """The units the keyword list over descriptions found for the question."""
    return [h.unit.qualname for h in service.search("refund ledger", k=5)
            if any(r.startswith("summary") for r in h.reasons)]


def _vectors(service) -> int:
    return int(service.db.scalar("SELECT count(*) FROM vectors"))


def test_a_summary_joins_its_chunks_document_and_is_embedded_once(make_repo, open_service):
    service = open_service(make_repo(FILES), RANKED)
    first = service.embed()
    chunks = service.status().counts.chunks
    assert first.embedded == _vectors(service) == chunks
    before = _similarity(service, "doubled")

    _put(service.db, "doubled", "Reconciles the refund ledger nightly.")
    assert service.vectors_pending()  # the summary made the chunk's vector out of date
    assert _similarity(service, "doubled") == before  # search keeps the old vector meanwhile

    second = service.embed()
    assert second.embedded == 1 and second.removed == 1  # the document's vector replaced the plain one
    assert _vectors(service) == chunks
    assert service.status().counts.vectors == chunks  # every chunk still counts as embedded
    after = _similarity(service, "doubled")
    assert after > before + 0.05  # the question's words are the summary's, not the code's
    assert not service.vectors_pending() and service.embed().embedded == 0  # never embedded twice

    # a changed summary: a new document; the previous one serves until it has its vector
    _put(service.db, "doubled", "Rounds a price to whole cents.")
    assert embed_docs.sync(service.db) == 1
    assert _similarity(service, "doubled") == after
    third = service.embed()
    assert third.embedded == 1 and _vectors(service) == chunks
    assert service.db.scalar("SELECT count(*) FROM embed_docs") == 1
    assert _similarity(service, "doubled") < after

    # the same text again is the same document: its vector is made again only because it went
    _put(service.db, "doubled", "Rounds a price to whole cents.")
    assert service.embed().embedded == 0


def test_summaries_made_by_the_service_are_embedded_after_them(make_repo, open_service, monkeypatch):
    service = open_service(make_repo(FILES), RANKED)
    service.embed()
    before = _similarity(service, "doubled")

    def canned(model=None):
        return Summarizer(service.db, _Canned(), "canned", lambda p, a, b: "code", SummarySettings(budget=0))

    monkeypatch.setattr(service, "summarizer", canned)
    result = service.summarize(["app/util.py"], everything=True)
    assert result.made >= 2  # the functions and the file
    assert not service.vectors_pending()
    assert _similarity(service, "doubled") > before + 0.05
    # the keyword side has the same words
    assert service.search("refund ledger", k=3)[0].unit.path == "app/util.py"


def test_an_edit_and_a_removed_summary_leave_no_vector_behind(make_repo, open_service):
    repo = make_repo(FILES)
    service = open_service(repo, RANKED)
    service.embed()
    _put(service.db, "doubled", "Reconciles the refund ledger nightly.")
    service.embed()
    (repo / "app/util.py").write_text(FILES["app/util.py"].replace("x * 3 ", "x * 33 "))
    service.index()
    service.embed()  # the edited chunk, with the summary the unit still has
    chunks = service.status().counts.chunks
    assert _vectors(service) == service.status().counts.vectors == chunks
    with service.db.transaction():
        service.db.execute("DELETE FROM unit_summaries")
    service.embed()
    assert _vectors(service) == chunks
    assert service.db.scalar("SELECT count(*) FROM embed_docs") == 0


def test_summaries_are_only_shown_unless_search_is_on(make_repo, open_service):
    """`[summaries] search` off (the default): no document, no keyword words; on: both; and
    switching it over an index puts them in or takes them out."""
    repo = make_repo(FILES)
    service = open_service(repo)
    service.embed()
    before = _similarity(service, "doubled")
    _put(service.db, "doubled", "Reconciles the refund ledger nightly.")
    service.index()
    assert not service.vectors_pending() and service.embed().embedded == 0
    assert _similarity(service, "doubled") == before
    assert not _by_summary(service)
    service.close()
    ranked = CodeRag(repo, RANKED, service.db_path)  # the same index, the setting switched on
    try:
        ranked.index()
        assert _by_summary(ranked) == ["doubled"]
        assert ranked.embed().embedded == 1 and _similarity(ranked, "doubled") > before + 0.05
        ranked.index()  # and off again: the words and the document go
    finally:
        ranked.close()
    service = CodeRag(repo, Settings(), service.db_path)
    try:
        service.index()
        assert not _by_summary(service)
        assert service.embed().embedded == 1 and _similarity(service, "doubled") == pytest.approx(before)
    finally:
        service.close()
