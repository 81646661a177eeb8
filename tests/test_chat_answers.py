"""Answers in a conversation: stopping one (its sources kept, the model's cores freed), a
provider error after retrieval, a reopened conversation, follow-ups on the same or another
topic, coderag's own files kept out of the index, embedding that waits for an answer.

The scripted provider isolates the answering flow; the `real` tests run the bundled SmolLM2
GGUF through llama-cpp-python, and every service here indexes a real repository into a real
SQLite file.
"""

from __future__ import annotations

import importlib.util
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from coderag_tui.answering import Answerer
from coderag_tui.answering.answerer import STOPPED, load_messages
from coderag_tui.answering.providers.local import LlamaProvider
from coderag_tui.config import EmbedSettings, Settings, WatchSettings
from coderag_tui.errors import ProviderError
from coderag_tui.models import (
    CALL_PATH_HEAD,
    ChatMessage,
    ComposedContext,
    ContextPiece,
    ModelInfo,
)
from coderag_tui.paths import EXPORT_MARK
from coderag_tui.retrieval.followup import continues
from coderag_tui.service import CodeRag
from coderag_tui.store import open_database
from coderag_tui.tui import adapters, chatlog
from tests.helpers.files import write_tree


class Scripted:
    """A provider replaying tokens (isolation only). `fail_after`: raise a ProviderError after
    that many tokens; `stoppable`: whether `stream` takes `should_stop` (third-party providers
    may not)."""

    name = "scripted"

    def __init__(self, tokens: tuple[str, ...], fail_after: int | None = None) -> None:
        self.tokens = tokens
        self.fail_after = fail_after
        self.prompts: list[str] = []
        self.closed = False

    def context_window(self) -> int:
        return 8192

    def count_tokens(self, text: str) -> int:
        return math.ceil(len(text) / 4)

    def info(self) -> ModelInfo:
        return ModelInfo(self.name, "scripted", "", 8192)

    def stream(self, messages: list[ChatMessage], *, max_tokens: int, temperature: float,
               stop: list[str] | None = None) -> Iterator[str]:
        self.prompts.append("\n".join(m.content for m in messages))
        try:
            for i, token in enumerate(self.tokens):
                if self.fail_after is not None and i == self.fail_after:
                    raise ProviderError("server said 503: overloaded")
                yield token
        except GeneratorExit:
            self.closed = True
            raise


def two_pieces() -> ComposedContext:
    a = ContextPiece("shop/cart.py", 18, 20, "primary", "Cart.total", "def total(self): ...", 10, "python")
    b = ContextPiece("shop/pricing.py", 12, 13, "primary", "with_tax", "def with_tax(a): ...", 10, "python")
    return ComposedContext("total", "symbol", (a, b), 20, 2000)


# --------------------------------------------------------------------------- stop, error, reopen


def test_a_stopped_answer_keeps_its_words_and_sources_and_comes_back_on_reopen(tmp_path: Path) -> None:
    # one line per token: the repetition guard lets a finished line through at once
    provider = Scripted(tuple(f"word{i}\n" for i in range(50)) + ("see `shop/cart.py:18-20`",))
    db = open_database(tmp_path / "index.db")
    try:
        seen: list[str] = []
        answerer = Answerer(provider, db)  # type: ignore[arg-type]
        events = []
        for event in answerer.ask("what does total return?", two_pieces(), "",
                                  should_stop=lambda: len(seen) >= 3):
            events.append(event)
            if event.kind == "token":
                seen.append(event.text)
        assert provider.closed  # the provider's stream was closed, not drained
        assert [e.text for e in events if e.kind == "token"] == ["word0\n", "word1\n", "word2\n"]
        sources = next(e for e in events if e.kind == "sources").sources
        assert [s.citation for s in sources] == ["shop/cart.py:18-20", "shop/pricing.py:12-13"]
        done = events[-1]
        assert done.kind == "done" and done.stats["stopped"] == 1.0 and "stopped" in done.text
        stored = load_messages(db, done.conversation_id)
        assert [m.role for m in stored] == ["user", "assistant"]
        assert stored[1].content == "word0\nword1\nword2" and stored[1].outcome == STOPPED
        assert [s.citation for s in stored[1].sources] == ["shop/cart.py:18-20", "shop/pricing.py:12-13"]
    finally:
        db.close()


def test_a_provider_error_after_retrieval_still_shows_and_keeps_the_sources(tmp_path: Path) -> None:
    provider = Scripted(("The total ", "adds tax ", "(`shop/cart.py:18-20`)"), fail_after=2)
    db = open_database(tmp_path / "index.db")
    try:
        events = list(Answerer(provider, db).ask("what does total return?", two_pieces(), ""))  # type: ignore[arg-type]
        kinds = [e.kind for e in events]
        assert kinds[-2:] == ["sources", "error"]
        assert "503" in events[-1].text and "\n" not in events[-1].text
        assert len(events[-2].sources) == 2
        cid = events[-1].conversation_id
        assert cid > 0
        stored = load_messages(db, cid)
        assert stored[1].content == "The total adds tax" and "503" in stored[1].outcome
        assert len(stored[1].sources) == 2
        # the failed turn's partial answer is history for the next question; an empty one is not
        again = Answerer(Scripted(("ok",)), db)  # type: ignore[arg-type]
        assert [m.content for m in again._history(cid)] == ["what does total return?", "The total adds tax"]
    finally:
        db.close()


def test_the_service_reopens_a_conversation_with_sources_and_outcome(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", {"shop/cart.py": "def total(items):\n    return sum(items)\n"})
    service = CodeRag(repo, Settings(embed=EmbedSettings(enabled=False)), tmp_path / "index.db")
    try:
        service.index()
        service.__dict__["_providers"] = {None: Scripted(tuple(f"w{i}\n" for i in range(20)))}
        count = [0]

        def stop() -> bool:
            return count[0] >= 2

        events = []
        for event in service.ask("what does total return?", should_stop=stop):
            events.append(event)
            count[0] += event.kind == "token"
        cid = events[-1].conversation_id
        assert events[-1].kind == "done" and events[-1].stats.get("stopped") == 1.0
        messages = service.load_conversation(cid)
        answer = messages[-1]
        assert answer.role == "assistant" and answer.outcome == STOPPED
        assert any(s.path == "shop/cart.py" for s in answer.sources)
    finally:
        service.close()


def test_a_reopened_or_exported_conversation_shows_the_opening_section(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "web").mkdir(parents=True)
    (repo / "web" / "app.py").write_text(
        "def serve(environ):\n    \"\"\"The server calls this.\"\"\"\n    return dispatch(environ)\n\n\n"
        "def dispatch(environ):\n    \"\"\"Send the request to its view.\"\"\"\n    return view(environ)\n\n\n"
        "def view(environ):\n    \"\"\"The view answers the request.\"\"\"\n    return 'hi'\n")
    service = CodeRag(repo, Settings(embed=EmbedSettings(enabled=False)), tmp_path / "index.db")
    try:
        service.index()
        service.__dict__["_providers"] = {None: Scripted(("The view ", "answers."))}
        events = list(service.ask("How does a request reach the view?"))
        live = next(e.opening for e in events if e.kind == "opening")
        assert live is not None and [u.qualname for u in live.call_path][-1] == "view"
        assert len(live.call_path) >= 2
        cid = events[-1].conversation_id
        stored = service.load_conversation(cid)[-1]
        assert stored.content == "The view answers." and stored.opening == live
        # the TUI's reopened turn (ctrl+o) and its export show it as the live answer did
        turn = adapters.load_turns(service, cid)[-1]
        assert turn.answer == chatlog.with_opening(live.render(), "The view answers.")
        exported = chatlog.to_markdown([turn], "repo")
        assert CALL_PATH_HEAD in exported and "view (web/app.py:11-13)" in exported
        assert exported.index(CALL_PATH_HEAD) < exported.index("The view answers.")
        # the opening is plain text: a dunder name is not taken for bold Markdown, and reads back the same
        shown = chatlog.with_opening("1. App.__call__ (web/app.py:1-3) [x]", "The view answers.")
        assert shown.startswith("1. App.\\_\\_call\\_\\_ (web/app.py:1-3) \\[x\\]")
        assert "App.__call__ (web/app.py:1-3) [x]" in MarkdownIt().render(shown)
    finally:
        service.close()

    # an answer stored before openings were kept, or with an unreadable one, reopens without it
    db = open_database(tmp_path / "index.db")
    try:
        with db.transaction():
            db.execute("UPDATE messages SET opening='{not json' WHERE role='assistant'")
        assert load_messages(db, cid)[-1].opening is None
    finally:
        db.close()


# --------------------------------------------------------------------------- REAL: Esc frees the cores

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
real = pytest.mark.usefixtures("bundled_gguf")  # loads the bundled GGUF


def cpu_seconds() -> float:
    """CPU time of this process so far, all threads (llama.cpp's included)."""
    t = os.times()
    return t.user + t.system


def cpu_over_next_second() -> float:
    before = cpu_seconds()
    time.sleep(1.0)
    return cpu_seconds() - before


@real
def test_stopping_a_real_generation_frees_the_cores(smollm: LlamaProvider) -> None:
    stop = threading.Event()
    pieces: list[str] = []

    def generate() -> None:
        messages = [ChatMessage("user", "Write a very long story about a cat who learns to code.")]
        for text in smollm.stream(messages, max_tokens=1500, temperature=0.8, should_stop=stop.is_set):
            pieces.append(text)

    thread = threading.Thread(target=generate)
    thread.start()
    while len(pieces) < 5 and thread.is_alive():
        time.sleep(0.01)
    stop.set()  # what Esc does, from another thread
    thread.join(60)
    assert not thread.is_alive()
    assert 5 <= len(pieces) < 200  # it ended at the stop, far before its 1,500 tokens
    # nothing keeps computing afterwards: far below the one core-second a busy core would use
    assert cpu_over_next_second() < 0.3


@real
def test_stopping_while_the_model_reads_the_prompt_aborts_inside_llama_cpp(smollm: LlamaProvider) -> None:
    long_prompt = "def step(x):\n    return x + 1\n" * 120  # ~1,400 tokens: three decode batches
    messages = [ChatMessage("user", long_prompt + "\nWhat does step do?")]
    polls = [0]

    def stop() -> bool:
        polls[0] += 1
        return polls[0] > 20

    pieces = list(smollm.stream(messages, max_tokens=50, temperature=0.0, should_stop=stop))
    assert pieces == []
    assert polls[0] > 20  # asked by llama.cpp between the nodes of the prompt's graph
    assert smollm.load().n_tokens < 512  # the first batch of the prompt was never finished
    assert cpu_over_next_second() < 0.3
    # the model is still usable afterwards
    again = list(smollm.stream([ChatMessage("user", "Say hello.")], max_tokens=8, temperature=0.0))
    assert "".join(again).strip()


@real
def test_a_real_answer_stopped_mid_way_still_has_its_sources(smollm: LlamaProvider, tmp_path: Path) -> None:
    tokens = [0]

    def stop() -> bool:  # after the first text shown (the repetition guard lets it out by the line)
        return tokens[0] >= 1

    events = []
    for event in Answerer(smollm, max_tokens=200).ask("What does total return?", two_pieces(), "",
                                                      should_stop=stop):
        events.append(event)
        tokens[0] += event.kind == "token"
    assert 1 <= tokens[0] <= 2  # the text shown, and at most what the guard still held
    assert len(next(e for e in events if e.kind == "sources").sources) == 2
    assert events[-1].kind == "done" and events[-1].stats["stopped"] == 1.0


@real
def test_the_service_stops_a_real_answer_while_the_prompt_is_read(tmp_path: Path) -> None:
    """The path the app takes on Esc: service.ask -> Answerer -> llama.cpp's abort callback."""
    repo = write_tree(tmp_path / "repo", TOPICS)
    settings = Settings(embed=EmbedSettings(enabled=False))
    settings = replace(settings, llm=replace(settings.llm, n_ctx=2048, max_tokens=64))
    service = CodeRag(repo, settings, tmp_path / "index.db")
    try:
        service.index()
        polls = [0]

        def stop() -> bool:  # true from the 10th poll: inside the prompt's decoding
            polls[0] += 1
            return polls[0] >= 10

        events = list(service.ask("where are session cookies signed?", should_stop=stop))
        assert polls[0] >= 10
        assert not [e for e in events if e.kind == "token"]
        assert any(s.path == "auth/session.py" for s in next(e for e in events if e.kind == "sources").sources)
        assert events[-1].kind == "done" and events[-1].stats["stopped"] == 1.0
        assert cpu_over_next_second() < 0.3
        assert service.load_conversation(events[-1].conversation_id)[-1].outcome == STOPPED
    finally:
        service.close()


# --------------------------------------------------------------------------- follow-ups

TOPICS = {
    "auth/session.py": '''"""Signed session cookies."""

import hashlib
import hmac


class SessionSigner:
    """Signs and verifies the session cookie with the secret key."""

    def __init__(self, secret_key: bytes) -> None:
        self.secret_key = secret_key

    def sign_cookie(self, value: str) -> str:
        """The cookie value with its HMAC signature appended."""
        mac = hmac.new(self.secret_key, value.encode(), hashlib.sha256).hexdigest()
        return f"{value}.{mac}"

    def verify_cookie(self, cookie: str) -> str | None:
        value, _, mac = cookie.rpartition(".")
        return value if hmac.compare_digest(self.sign_cookie(value), cookie) else None
''',
    "auth/views.py": '''from auth.session import SessionSigner


def login_response(user: str) -> dict[str, str]:
    signer = SessionSigner(b"secret")
    return {"Set-Cookie": signer.sign_cookie(user)}
''',
    "geometry/polygon.py": '''"""Polygons in the plane."""


def polygon_area(points: list[tuple[float, float]]) -> float:
    """The area of a simple polygon by the shoelace formula."""
    total = 0.0
    for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1]):
        total += x1 * y2 - x2 * y1
    return abs(total) / 2


def perimeter(points: list[tuple[float, float]]) -> float:
    """The length of the polygon's boundary."""
    return sum(((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5
               for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1]))
''',
}


@pytest.mark.parametrize(("previous", "question", "expected"), [
    ("where are session cookies signed?", "and what calls it?", True),
    ("where are session cookies signed?", "what about the tests?", True),
    ("where are session cookies signed?", "why?", True),
    ("where are session cookies signed?", "what does it return when the key is empty?", True),
    ("where are session cookies signed?", "how is the signed cookie verified?", True),
    ("where are session cookies signed?", "how is the area of a polygon computed?", False),
    ("where are session cookies signed?", "where is the polygon perimeter and how is it summed?", False),
    ("", "and what calls it?", False),
])
def test_a_follow_up_continues_only_the_same_topic(previous: str, question: str, expected: bool) -> None:
    assert continues(previous, question) is expected


def ask_all(service: CodeRag, question: str, cid: int | None = None) -> int:
    events = list(service.ask(question, cid))
    assert events[-1].kind == "done", events[-1].text
    return events[-1].conversation_id


def test_a_new_topic_retrieves_fresh_and_a_follow_up_keeps_the_topic(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", TOPICS)
    settings = Settings(embed=EmbedSettings(enabled=False))
    # no repo map: it lists the central files whatever the question, and would hide what
    # retrieval chose
    settings = replace(settings, context=replace(settings.context, repo_map_tokens=0))
    service = CodeRag(repo, settings, tmp_path / "index.db")
    try:
        service.index()
        provider = Scripted(("An answer.",))
        service.__dict__["_providers"] = {None: provider}
        cid = ask_all(service, "where are session cookies signed?")
        assert "auth/session.py" in provider.prompts[-1]

        ask_all(service, "how is the area of a polygon computed?", cid)
        prompt = provider.prompts[-1]
        assert "geometry/polygon.py" in prompt
        assert "auth/session.py" not in prompt  # neither the old topic's code...
        assert "session cookies" not in prompt  # ...nor its conversation

        ask_all(service, "and what calls it?", cid)  # "it": the polygon area, the previous question
        assert "geometry/polygon.py" in provider.prompts[-1]
        assert "how is the area of a polygon computed?" in provider.prompts[-1]  # history kept
    finally:
        service.close()


# --------------------------------------------------------------------------- coderag's own files


def test_an_export_in_the_repository_is_never_indexed(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", {"shop/cart.py": "def total(items):\n    return sum(items)\n"})
    (repo / ".coderag").mkdir()
    (repo / ".coderag" / "notes.py").write_text("def hidden():\n    pass\n")
    turn = chatlog.Turn("what does total return?", "`total` sums the items (`shop/cart.py:1-2`).")
    export = chatlog.to_markdown([turn], "repo")
    assert EXPORT_MARK in export
    (repo / "coderag-what-does-total-return.md").write_text(export)
    settings = Settings(embed=EmbedSettings(enabled=False), watch=WatchSettings(debounce_ms=100))
    settings = replace(settings, index=replace(settings.index, default_excludes=False))
    service = CodeRag(repo, settings, tmp_path / "index.db")
    try:
        service.index()
        indexed = {r[0] for r in service.db.rows("SELECT path FROM files")}
        assert indexed == {"shop/cart.py"}
        assert {h.unit.path for h in service.search("total sums items")} == {"shop/cart.py"}

        seen = threading.Event()
        watcher = service.watch(lambda event: seen.set() if event.phase == "done" else None)
        try:
            time.sleep(0.1)  # inotify settles
            (repo / "coderag-second-export.md").write_text(export)
            (repo / "shop" / "more.py").write_text("def more():\n    return 1\n")
            deadline = time.monotonic() + 20
            while "shop/more.py" not in {r[0] for r in service.db.rows("SELECT path FROM files")}:
                assert time.monotonic() < deadline, "the watcher did not index shop/more.py"
                time.sleep(0.05)
        finally:
            watcher.stop()
        indexed = {r[0] for r in service.db.rows("SELECT path FROM files")}
        assert indexed == {"shop/cart.py", "shop/more.py"}
    finally:
        service.close()


# --------------------------------------------------------------------------- embedding yields


def test_embedding_waits_while_an_answer_is_generated(tmp_path: Path) -> None:
    service = CodeRag(tmp_path, Settings(embed=EmbedSettings(enabled=False)), tmp_path / "index.db")
    try:
        check: Callable[[], bool] = service._yielding(None)
        assert check() is False  # nothing generating: embedding goes on at once
        returned = threading.Event()
        with service._generating():
            thread = threading.Thread(target=lambda: (check(), returned.set()))
            thread.start()
            time.sleep(0.5)
            assert not returned.is_set()  # held between batches while the answer runs
        thread.join(10)
        assert returned.is_set()
        stopped = service._yielding(lambda: True)
        with service._generating():
            assert stopped() is True  # a stop request still ends a waiting embedding run
    finally:
        service.close()
