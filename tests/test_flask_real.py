"""The cases of retrieval that generalizes, on the real Flask 3.0.3 and requests 2.32.3 sdists
(from PyPI, cached; keywords, symbols and the graph: no vectors). Marked slow: it downloads and
indexes ~300 files."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness import sdist
from coderag_tui.config import Settings
from coderag_tui.service import CodeRag
from tests.helpers.marks import needs

pytestmark = pytest.mark.slow


def _indexed(name: str, version: str, tmp: Path) -> CodeRag:
    root = sdist(name, version)
    if root is None:
        pytest.skip("PyPI is not reachable")
    service = CodeRag(Path(root), Settings(), tmp / "index.db")
    service.index()
    return service


@pytest.fixture(scope="module")
@needs("network")
def flask(tmp_path_factory: pytest.TempPathFactory) -> CodeRag:
    return _indexed("flask", "3.0.3", tmp_path_factory.mktemp("flask"))


@pytest.fixture(scope="module")
@needs("network")
def requests(tmp_path_factory: pytest.TempPathFactory) -> CodeRag:
    return _indexed("requests", "2.32.3", tmp_path_factory.mktemp("requests"))


def test_the_request_context_push_is_found_before_the_docs(flask: CodeRag) -> None:
    hits = flask.search("where is the request context pushed", k=5)
    assert hits[0].unit.path.startswith("src/flask/"), [h.unit.path for h in hits]
    assert "RequestContext.push" in [h.unit.qualname for h in hits]


def test_dispatch_finds_the_dispatch_methods(flask: CodeRag) -> None:
    names = [h.unit.qualname for h in flask.search("How does Flask dispatch a request to a view function?", k=8)]
    assert "Flask.dispatch_request" in names and "Flask.full_dispatch_request" in names, names


def test_a_contextvar_get_is_not_another_class_get(flask: CodeRag) -> None:
    gets = [e for e in flask.callees("RequestContext.push") if e.name == "get"]
    assert gets and all(e.unit is None for e in gets)


def test_the_changelog_is_never_one_piece(requests: CodeRag) -> None:
    # HISTORY.md is one Markdown section of ~2,000 lines
    question = "changelog: which release fixed custom SSLContexts in sub-classes of HTTPAdapter"
    ctx = requests.context(question, max_tokens=4000)
    pages = [p for p in ctx.pieces if p.path == "HISTORY.md" and p.role not in ("parent", "metadata")]
    assert pages and all(p.end_line - p.start_line < 80 for p in pages), [p.citation for p in pages]
    hit = next(h for h in requests.search(question, k=5) if h.unit.path == "HISTORY.md")
    assert hit.unit.name == "2.32.3 (2024-05-29)"  # the version's section, not the whole history
    hits = requests.search("How are retries configured for a session?", k=5)
    assert all(h.unit.path.startswith("src/requests/") for h in hits), [h.unit.path for h in hits]
