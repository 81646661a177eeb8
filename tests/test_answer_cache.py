"""The semantic answer cache, through the service, against a real HTTP model server on loopback
that counts its requests: a hit asks no model; an edit to a cited unit invalidates the entry."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.answering.answer_cache import normalize
from coderag_tui.config import LLMSettings, Settings
from coderag_tui.models import AnswerEvent
from coderag_tui.service import CodeRag
from tests.helpers.loopback import Loopback, openai_sse
from tests.helpers.tool_use import FILES

ANSWER = "tax_for returns amount * TAX_RATE (shop/tax.py:4-6)."


@pytest.fixture
def server() -> Iterator[Loopback]:
    loop = Loopback(lambda h, n: openai_sse(h, [ANSWER]))
    yield loop
    loop.close()


def settings(url: str, **llm: Any) -> Settings:
    base = LLMSettings(provider="openai", base_url=url, model="m", timeout_s=10, retries=0, tools="off")
    return replace(Settings(), llm=replace(base, **llm))


def answer(service: CodeRag, question: str, **kw: Any) -> tuple[str, AnswerEvent]:
    events = list(service.ask(question, **kw))
    assert events[-1].kind == "done", events[-1]
    return "".join(e.text for e in events if e.kind == "token"), events[-1]


def test_the_same_question_is_answered_from_the_cache(
    server: Loopback, make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]
) -> None:
    service = open_service(make_repo(FILES), settings(server.url))
    text, done = answer(service, "How is tax computed?")
    assert text == ANSWER and not done.cached and len(server.requests) == 1

    events = list(service.ask("how is tax   computed"))  # the same words: a hit without vectors
    assert len(server.requests) == 1  # no model was asked
    assert [e.kind for e in events if e.cached] == ["opening", "status", "token", "sources", "done"]
    assert not [e for e in events if e.kind == "status" and "retrieving" in e.text]
    # the opening comes from the index as it is now, and is kept with the turn
    [opening] = [e.opening for e in events if e.kind == "opening"]
    assert opening is not None and "tax_for" in [u.qualname for u in opening.units]
    assert "".join(e.text for e in events if e.kind == "token") == ANSWER
    [sources] = [e for e in events if e.kind == "sources"]
    assert "shop/tax.py:4-6" in [s.citation for s in sources.sources if s.cited]
    assert events[-1].stats["cached"] == 1.0 and "--fresh" in events[-1].text
    # the cached answer is a conversation turn like any other
    turns = service.load_conversation(events[-1].conversation_id)
    assert [m.role for m in turns] == ["user", "assistant"] and turns[-1].opening == opening

    _, done = answer(service, "How is tax computed?", fresh=True)
    assert not done.cached and len(server.requests) == 2
    _, done = answer(service, "What does greet return?")  # a different question misses
    assert not done.cached and len(server.requests) == 3
    # follow-ups depend on the conversation: never served from the cache
    _, done = answer(service, "How is tax computed?", conversation_id=done.conversation_id)
    assert not done.cached and len(server.requests) == 4


def test_an_edit_to_a_cited_unit_invalidates_the_answer(
    server: Loopback, make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]
) -> None:
    repo = make_repo(FILES)
    service = open_service(repo, settings(server.url))
    answer(service, "How is tax computed?")
    # an edit elsewhere keeps the answer
    (repo / "docs/greeting.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    service.index()
    _, done = answer(service, "How is tax computed?")
    assert done.cached and len(server.requests) == 1
    # the cited unit changes: the stored answer is dropped and the model is asked
    (repo / "shop/tax.py").write_text(FILES["shop/tax.py"].replace("amount * TAX_RATE", "round(amount * TAX_RATE, 2)"))
    service.index()
    _, done = answer(service, "How is tax computed?")
    assert not done.cached and len(server.requests) == 2
    _, done = answer(service, "How is tax computed?")  # the new answer is cached in turn
    assert done.cached and len(server.requests) == 2


def test_a_near_identical_question_hits_through_the_query_embeddings(
    server: Loopback, make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]
) -> None:
    service = open_service(make_repo(FILES), settings(server.url))
    service.embed()
    answer(service, "How is the tax computed?")
    assert normalize("How is tax computed?") != normalize("How is the tax computed?")
    _, done = answer(service, "How is tax computed?")
    assert done.cached and 0.95 <= done.stats["similarity"] < 1.0 and len(server.requests) == 1
    _, done = answer(service, "Which function greets a person by name?")
    assert not done.cached and len(server.requests) == 2


def test_cache_off(server: Loopback, make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> None:
    service = open_service(make_repo(FILES), settings(server.url, cache_similarity=0.0))
    answer(service, "How is tax computed?")
    _, done = answer(service, "How is tax computed?")
    assert not done.cached and len(server.requests) == 2


def test_cli_ask_fresh_and_cached_json(server: Loopback, make_repo: Callable[..., Path], tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    repo = make_repo(FILES)
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f'[llm]\nprovider = "openai"\nbase_url = "{server.url}"\nmodel = "m"\nretries = 0\ntools = "off"\n')
    base = [sys.executable, "-m", "coderag_tui", "ask", "How is tax computed?", "--repo", str(repo),
            "--db", str(tmp_path / "i.db"), "--config", str(cfg), "--json"]

    def run(*extra: str) -> dict[str, Any]:
        out = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert out.returncode == 0, out.stderr
        return dict(json.loads(out.stdout))

    index = [sys.executable, "-m", "coderag_tui", "index", str(repo), "--db", str(tmp_path / "i.db"), "--no-embed"]
    assert subprocess.run(index, capture_output=True, text=True, timeout=300).returncode == 0

    assert run()["cached"] is False and len(server.requests) == 1
    again = run()
    assert again["cached"] is True and again["answer"] == ANSWER and len(server.requests) == 1
    assert run("--fresh")["cached"] is False and len(server.requests) == 2
