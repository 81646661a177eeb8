"""Answering: prompt fitting, citations, sources, history, local model resolution.

Unit tests use a scripted provider for isolation; the `real` tests run the bundled
SmolLM2-135M GGUF through llama-cpp-python and a real SQLite index file.
"""

from __future__ import annotations

import importlib.util
import math
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from coderag_tui.answering import (
    Answerer,
    build_messages,
    check_citations,
    create,
    create_llm,
    fit_prompt,
    gguf,
    list_models,
    make_exists,
    parse_citations,
    register,
)
from coderag_tui.answering.prompts import SYSTEM_RULES, prompt_tokens
from coderag_tui.answering.providers.local import (
    BUNDLED_NOTE,
    ENV_MODEL,
    LlamaProvider,
    bundled_model_path,
    resolve_model_path,
)
from coderag_tui.config import LLMSettings, ProviderSettings
from coderag_tui.errors import ConfigError, ModelError, ProviderError
from coderag_tui.models import ChatMessage, ComposedContext, ContextPiece, ModelInfo
from coderag_tui.store import open_database

# --------------------------------------------------------------------------- helpers


class ScriptedProvider:
    """A provider that replays a script (isolation only: real models are tested below)."""

    def __init__(
        self,
        tokens: tuple[str, ...] = ("The answer.",),
        window: int = 4096,
        error: Exception | None = None,
        name: str = "scripted",
    ) -> None:
        self.tokens = tokens
        self.window = window
        self.error = error
        self.name = name
        self.calls: list[list[ChatMessage]] = []

    def context_window(self) -> int:
        return self.window

    def count_tokens(self, text: str) -> int:
        return math.ceil(len(text) / 4)

    def stream(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int,
        temperature: float,
        stop: list[str] | None = None,
    ) -> Iterator[str]:
        self.calls.append(list(messages))
        assert prompt_tokens(messages, self.count_tokens) + max_tokens <= self.window
        if self.error is not None:
            raise self.error
        yield from self.tokens

    def info(self) -> ModelInfo:
        return ModelInfo(self.name, "scripted", "", self.window)


def piece(path: str, start: int, lines: int, title: str = "", width: int = 40) -> ContextPiece:
    text = "\n".join(f"line {start + i} " + "x" * width for i in range(lines))
    return ContextPiece(path, start, start + lines - 1, "primary", title or path, text, lines * 12, "python")


def context(*pieces: ContextPiece) -> ComposedContext:
    return ComposedContext("q", "semantic", tuple(pieces), sum(p.tokens for p in pieces), 6000)


def history(turns: int, size: int = 200) -> list[ChatMessage]:
    out = []
    for i in range(turns):
        out.append(ChatMessage("user", f"question {i} " + "q" * size))
        out.append(ChatMessage("assistant", f"answer {i} " + "a" * size))
    return out


# --------------------------------------------------------------------------- registry


def test_registry_builds_by_kind_and_names_unknown_kinds() -> None:
    with pytest.raises(ConfigError, match="unknown \\[llm\\] provider 'nope'.*llama"):
        create(ProviderSettings(provider="nope"))
    register("scripted-test", lambda settings, options: ScriptedProvider(name=settings.model))
    provider = create(ProviderSettings(provider="scripted-test", model="m1"))
    assert provider.name == "m1"
    # a single provider without fallbacks is returned as is
    assert create_llm(LLMSettings(provider="scripted-test", model="m2")).name == "m2"


# --------------------------------------------------------------------------- prompts


def test_prompt_layout_rules_history_context_question() -> None:
    ctx = context(piece("src/a.py", 10, 3, "alpha"), piece("src/b.py", 1, 2, "beta"))
    hist = history(1, 10)
    messages = build_messages("How does alpha work?", ctx, "src/\n  a.py\n  b.py", hist, ScriptedProvider(), 256)
    assert messages[0].role == "system" and messages[0].content == SYSTEM_RULES
    assert "path:start-end" in messages[0].content
    assert [m.role for m in messages[1:3]] == ["user", "assistant"]
    user = messages[-1]
    assert user.role == "user"
    assert user.content.index("Repository map") < user.content.index("src/a.py:10-12")
    assert "### src/a.py:10-12 [primary] alpha" in user.content
    assert "Sources you may cite: src/a.py:10-12, src/b.py:1-2" in user.content
    assert user.content.rstrip().endswith("Question: How does alpha work?")


@pytest.mark.parametrize("window", [384, 512, 1024, 2048, 4096])
@pytest.mark.parametrize("turns", [0, 3, 12])
def test_prompt_never_exceeds_the_window(window: int, turns: int) -> None:
    rng = random.Random(window * 31 + turns)
    pieces = [piece(f"pkg/m{i}.py", rng.randint(1, 500), rng.randint(2, 60)) for i in range(12)]
    provider = ScriptedProvider(window=window)
    fitted = fit_prompt("Where is the cache invalidated?", context(*pieces), "pkg/\n" * 200,
                        history(turns), provider, max_answer_tokens=256)
    used = prompt_tokens(fitted.messages, provider.count_tokens)
    assert used == fitted.prompt_tokens
    assert used + fitted.max_answer_tokens <= window
    assert fitted.max_answer_tokens == min(256, window // 2)
    if fitted.pieces:
        assert fitted.pieces[0].path == "pkg/m0.py"  # the most relevant piece is kept


def test_prompt_drops_oldest_history_before_any_context() -> None:
    pieces = [piece(f"m{i}.py", 1, 5) for i in range(4)]
    provider = ScriptedProvider(window=1200)
    fitted = fit_prompt("q?", context(*pieces), "", history(10, 300), provider, 200)
    assert fitted.pieces_dropped == 0 and fitted.history_dropped > 0
    kept = fitted.messages[1:-1]
    assert kept and kept[-1].content.startswith("answer 9")  # the newest turns stay
    assert kept[0].role == "user"  # pairs are dropped together
    assert all(not m.content.startswith("question 0 ") for m in kept)


def test_prompt_trims_context_from_the_middle() -> None:
    pieces = [piece(f"p{i}.py", 1, 8, width=60) for i in range(8)]  # order: most relevant at both ends
    provider = ScriptedProvider(window=1100)
    fitted = fit_prompt("q?", context(*pieces), "", [], provider, 200)
    kept = [p.path for p in fitted.pieces]
    assert 1 <= len(kept) < 8
    assert kept[0] == "p0.py"
    if len(kept) > 1:
        assert kept[-1] == "p7.py"
    dropped = sorted(int(p[1]) for p in {f"p{i}.py" for i in range(8)} - set(kept))
    # what was dropped is a contiguous block of the middle
    assert dropped == list(range(dropped[0], dropped[0] + len(dropped)))


def test_prompt_cuts_an_oversized_piece_and_its_citation() -> None:
    big = piece("big.py", 100, 400)
    provider = ScriptedProvider(window=600)
    fitted = fit_prompt("q?", context(big), "", [], provider, 100)
    assert len(fitted.pieces) == 1
    cut = fitted.pieces[0]
    assert cut.start_line == 100 and 100 < cut.end_line < 499
    assert cut.text.count("\n") + 1 == cut.end_line - cut.start_line + 1
    assert cut.text.splitlines()[-1].startswith(f"line {cut.end_line} ")
    assert f"big.py:100-{cut.end_line}" in fitted.messages[-1].content


def test_prompt_question_too_long_is_a_clear_error() -> None:
    with pytest.raises(ModelError, match="question is too long"):
        fit_prompt("why? " * 2000, context(), "", [], ScriptedProvider(window=512), 128)


# --------------------------------------------------------------------------- citations


def test_parse_citations_in_every_form() -> None:
    text = (
        "See src/a.py:12-30, `src/b.py:7`, [lib/c.rs:1-2] and (d/e.go:L3-L9). "
        "Also pkg/f.ts#L4 and g.py:5\u20137. Not 10:30 nor https://host.io:8080/x. Makefile:3."
    )
    found = [(c.path, c.start, c.end) for c in parse_citations(text, known_paths=["Makefile"])]
    assert found == [
        ("src/a.py", 12, 30), ("src/b.py", 7, 7), ("lib/c.rs", 1, 2), ("d/e.go", 3, 9),
        ("pkg/f.ts", 4, 4), ("g.py", 5, 7), ("Makefile", 3, 3),
    ]


def test_sources_every_piece_cited_first_invalid_apart() -> None:
    pieces = [piece("src/a.py", 10, 11, "a"), piece("src/b.py", 1, 5, "b"), piece("src/c.py", 40, 10, "c")]
    answer = (
        "It is done in `src/c.py:42-44` and called from [src/a.py:12]. "
        "See also src/ghost.py:1-5 and src/b.py:900-901 and src/c.py:42-44 again."
    )
    checked = check_citations(answer, pieces, make_exists(pieces))
    assert [(s.number, s.citation, s.cited) for s in checked.sources] == [
        (1, "src/c.py:40-49", True),
        (2, "src/a.py:10-20", True),
        (3, "src/b.py:1-5", False),
    ]
    assert checked.sources[0].title == "c"
    assert checked.invalid == ("src/ghost.py:1-5", "src/b.py:900-901")


def test_sources_when_nothing_is_cited_and_outside_pieces() -> None:
    pieces = [piece("pkg/models.py", 1, 20)]
    checked = check_citations("No citations here.", pieces)
    assert [(s.citation, s.cited) for s in checked.sources] == [("pkg/models.py:1-20", False)]
    assert checked.invalid == ()
    # a suffix of a given path resolves; a range of the file the model was not given is
    # unverified even though the file has those lines, and is never a source
    checked = check_citations("see models.py:5 and pkg/models.py:200-210 and pkg/models.py:0-3", pieces)
    assert [(s.citation, s.cited) for s in checked.sources] == [("pkg/models.py:1-20", True)]
    assert checked.invalid == ("pkg/models.py:200-210", "pkg/models.py:0-3")


def test_exists_rule() -> None:
    pieces = [piece("a.py", 10, 5)]
    exists = make_exists(pieces)
    assert exists("a.py", 12, 12) and exists("a.py", 10, 14) and exists("a.py", 11, 13)
    assert not exists("a.py", 1, 10) and not exists("a.py", 14, 15)  # reaches outside the piece
    assert not exists("a.py", 15, 20) and not exists("c.py", 1, 1)
    assert not exists("a.py", 0, 1) and not exists("a.py", 12, 11)


def test_an_invented_in_file_citation_is_unverified() -> None:
    # what packing gives: lines 10-14 shown, 15-39 left out behind a marker, 40-42 shown
    code = "\n".join(["def run(app):", "    x = 1", "    y = 2", "    z = 3", "    w = 4",
                      "    \u22ef (lines 15-39 left out)", "    a = 5", "    b = 6", "    return app"])
    shown = ContextPiece("src/flask/app.py", 10, 42, "primary", "function run", code, 60, "python")
    outline = ContextPiece("src/flask/app.py", 1, 900, "parent", "outline of app",
                           "class Flask:\n    def run(self)  # line 10\n    def wsgi_app(self)  # line 700", 20)
    meta = ContextPiece("src/flask/sessions.py", 1, 300, "metadata", "about sessions",
                        "- calls elsewhere: sign", 10)
    pieces = [shown, outline, meta]
    answer = (
        "run starts at src/flask/app.py:10-14 and returns at src/flask/app.py:40-42; the whole "
        "function is src/flask/app.py:10-42. Invented: src/flask/app.py:14-20, "
        "src/flask/app.py:20-30, src/flask/app.py:950-960, src/flask/sessions.py:12-40. "
        "The outline names src/flask/app.py:700 and the metadata src/flask/sessions.py:1-300."
    )
    checked = check_citations(answer, pieces)
    assert checked.invalid == (
        "src/flask/app.py:14-20", "src/flask/app.py:20-30", "src/flask/app.py:950-960",
        "src/flask/sessions.py:12-40",
    )
    assert [c.range for c in checked.citations] == [
        "src/flask/app.py:10-14", "src/flask/app.py:40-42", "src/flask/app.py:10-42",
        "src/flask/app.py:700-700", "src/flask/sessions.py:1-300",
    ]
    shown_as = {s.citation for s in checked.sources}
    assert shown_as == {"src/flask/app.py:10-42", "src/flask/app.py:1-900", "src/flask/sessions.py:1-300"}
    for bad in checked.invalid:
        assert bad not in shown_as


# --------------------------------------------------------------------------- answerer (scripted)


def test_answerer_streams_sources_and_stats_and_keeps_history(tmp_path: Path) -> None:
    db = open_database(tmp_path / "index.db")
    try:
        provider = ScriptedProvider(tokens=("add ", "is in ", "calc/ops.py:1-3", " (x.py:9)"))
        answerer = Answerer(provider, db, max_tokens=64)
        ctx = context(piece("calc/ops.py", 1, 3, "add"), piece("calc/io.py", 1, 2, "io"))
        events = list(answerer.ask("Where is add?", ctx, "calc/", None, retrieval_s=0.25))
        kinds = [e.kind for e in events]
        assert kinds[:2] == ["status", "status"] and kinds[-2:] == ["sources", "done"]
        assert "".join(e.text for e in events if e.kind == "token") == "add is in calc/ops.py:1-3 (x.py:9)"
        sources = events[-2]
        assert [(s.citation, s.cited) for s in sources.sources] == [
            ("calc/ops.py:1-3", True), ("calc/io.py:1-2", False),
        ]
        assert sources.invalid_citations == ("x.py:9",)
        done = events[-1]
        assert done.conversation_id > 0
        assert done.stats["retrieval_s"] == 0.25
        for key in ("ttft_s", "gen_s", "tokens", "tokens_per_s", "prompt_tokens"):
            assert key in done.stats
        assert done.text == "answered by scripted"

        cid = done.conversation_id
        events2 = list(answerer.ask("And who calls it?", ctx, "", cid))
        assert events2[-1].kind == "done" and events2[-1].conversation_id == cid
        sent = provider.calls[-1]
        assert [m.role for m in sent] == ["system", "user", "assistant", "user"]
        assert sent[1].content == "Where is add?"
        assert sent[2].content.startswith("add is in")

        stored = answerer.load_conversation(cid)
        assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
        assert stored[1].sources[0].citation == "calc/ops.py:1-3" and stored[1].sources[0].cited
        convs = answerer.list_conversations()
        assert [(c.id, c.title, c.messages) for c in convs] == [(cid, "Where is add?", 4)]
    finally:
        db.close()


def test_answerer_reports_errors_as_events_never_raises(tmp_path: Path) -> None:
    ctx = context(piece("a.py", 1, 2))
    failing = ScriptedProvider(error=ProviderError("cannot reach http://127.0.0.1:9: is the server running?"))
    events = list(Answerer(failing).ask("q?", ctx, ""))
    assert events[-1].kind == "error"
    assert events[-1].text == "cannot reach http://127.0.0.1:9: is the server running?"

    broken = ScriptedProvider(error=RuntimeError("boom\nwith a second line"))
    events = list(Answerer(broken).ask("q?", ctx, ""))
    assert events[-1].kind == "error" and "\n" not in events[-1].text and "boom" in events[-1].text

    assert list(Answerer(ScriptedProvider()).ask("   ", ctx, ""))[-1].kind == "error"
    db = open_database(tmp_path / "i.db")
    try:
        last = list(Answerer(ScriptedProvider(), db).ask("q?", ctx, "", 999))[-1]
        assert (last.kind, last.text) == ("error", "no conversation 999")
    finally:
        db.close()


# --------------------------------------------------------------------------- local model resolution


def _fake_gguf(path: Path, template: bool = True) -> Path:
    meta: dict[str, str | int] = {"general.architecture": "llama", "general.name": path.stem,
                                  "llama.context_length": 2048}
    if template:
        meta["tokenizer.chat_template"] = "{{ messages }}"
    gguf.write_minimal_gguf(path, meta)
    return path


def test_model_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_MODEL, raising=False)
    models = tmp_path / "models"
    models.mkdir()
    b = _fake_gguf(models / "b.gguf")
    _fake_gguf(models / "c.gguf")
    configured = _fake_gguf(tmp_path / "configured.gguf")
    env = _fake_gguf(tmp_path / "env.gguf")
    cli = _fake_gguf(tmp_path / "cli.gguf")
    settings = ProviderSettings(model=str(configured))

    assert resolve_model_path(settings, models, str(cli))[0] == cli
    monkeypatch.setenv(ENV_MODEL, str(env))
    assert resolve_model_path(settings, models)[0] == env
    monkeypatch.delenv(ENV_MODEL)
    assert resolve_model_path(settings, models)[0] == configured
    assert resolve_model_path(ProviderSettings(), models)[0] == b  # first *.gguf of models/
    bundled = bundled_model_path()
    if bundled is not None:
        assert resolve_model_path(ProviderSettings(), tmp_path / "none")[0] == bundled
    with pytest.raises(ModelError, match="model file not found: .*missing.gguf"):
        resolve_model_path(ProviderSettings(model=str(tmp_path / "missing.gguf")), models)


def test_local_model_clear_errors(tmp_path: Path) -> None:
    not_gguf = tmp_path / "notes.gguf"
    not_gguf.write_text("hello, I am not a model\n" * 4)
    provider = LlamaProvider(ProviderSettings(model=str(not_gguf)))
    with pytest.raises(ModelError, match="not a GGUF model file") as exc:
        list(provider.stream([ChatMessage("user", "hi")], max_tokens=4, temperature=0))
    assert "\n" not in exc.value.one_line()

    base = _fake_gguf(tmp_path / "base.gguf", template=False)
    with pytest.raises(ModelError, match="no chat template \\(a base model\\?\\)"):
        LlamaProvider(ProviderSettings(model=str(base))).load()

    events = list(Answerer(LlamaProvider(ProviderSettings(model=str(base)))).ask("q?", context(), ""))
    assert events[-1].kind == "error" and "chat template" in events[-1].text


def test_gguf_metadata_and_list_models(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    _fake_gguf(models / "mine.gguf")
    _fake_gguf(models / "base.gguf", template=False)
    infos = list_models(LLMSettings(fallback=(ProviderSettings(provider="openai", model="gpt-4o",
                                                               base_url="http://127.0.0.1:1/v1"),)), models)
    by_path = {Path(i.path_or_url).name: i for i in infos if i.provider == "llama"}
    assert infos[0].note.startswith("configured") and infos[0].path_or_url.endswith("base.gguf")
    assert infos[1].provider == "openai" and infos[1].context_window == 128_000
    assert infos[1].note.startswith("fallback 1")
    assert "base model" in by_path["base.gguf"].note
    assert by_path["mine.gguf"].context_window == 2048 and by_path["mine.gguf"].size_bytes > 0
    bundled = bundled_model_path()
    if bundled is not None:
        info = by_path[bundled.name]
        assert info.note == BUNDLED_NOTE
        assert info.context_window == 8192 and info.size_bytes > 50_000_000


# --------------------------------------------------------------------------- REAL: bundled GGUF

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
real = pytest.mark.usefixtures("bundled_gguf")  # loads the bundled GGUF

FIXTURE = '''\
"""Temperature conversions."""


def celsius_to_fahrenheit(celsius: float) -> float:
    """Convert a temperature from Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


def fahrenheit_to_celsius(fahrenheit: float) -> float:
    """Convert a temperature from Fahrenheit to Celsius."""
    return (fahrenheit - 32) * 5 / 9
'''


def fixture_context(tmp_path: Path) -> ComposedContext:
    src = tmp_path / "repo" / "temperature.py"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(FIXTURE)
    lines = src.read_text().splitlines()
    p1 = ContextPiece("temperature.py", 4, 6, "primary", "celsius_to_fahrenheit",
                      "\n".join(lines[3:6]), 40, "python")
    p2 = ContextPiece("temperature.py", 9, 11, "primary", "fahrenheit_to_celsius",
                      "\n".join(lines[8:11]), 40, "python")
    return ComposedContext("convert", "symbol", (p1, p2), 80, 2000)


@real
def test_real_gguf_answers_with_sources(smollm: LlamaProvider, tmp_path: Path) -> None:
    ctx = fixture_context(tmp_path)
    assert smollm.info().note == BUNDLED_NOTE
    assert smollm.count_tokens("def celsius_to_fahrenheit") > 2
    events = list(Answerer(smollm, max_tokens=48, temperature=0.0).ask(
        "What does celsius_to_fahrenheit return?", ctx, "temperature.py"))
    errors = [e.text for e in events if e.kind == "error"]
    assert not errors
    tokens = [e.text for e in events if e.kind == "token"]
    assert len(tokens) >= 2 and "".join(tokens).strip()
    sources = next(e for e in events if e.kind == "sources").sources
    assert {s.citation for s in sources} == {"temperature.py:4-6", "temperature.py:9-11"}
    stats = events[-1].stats
    assert events[-1].kind == "done" and stats["tokens"] > 0 and stats["tokens_per_s"] > 0
    assert 0 < stats["ttft_s"] < 120


@real
def test_real_gguf_multi_turn_is_stored_in_sqlite(smollm: LlamaProvider, tmp_path: Path) -> None:
    ctx = fixture_context(tmp_path)
    path = tmp_path / "index.db"
    db = open_database(path)
    try:
        answerer = Answerer(smollm, db, max_tokens=32, temperature=0.0)
        first = list(answerer.ask("What does fahrenheit_to_celsius do?", ctx, ""))
        assert first[-1].kind == "done", first[-1].text
        cid = first[-1].conversation_id
        second = list(answerer.ask("And the other function?", ctx, "", cid))
        assert second[-1].kind == "done", second[-1].text
        assert second[-1].conversation_id == cid
    finally:
        db.close()
    db = open_database(path)  # reopened: what was stored is on disk
    try:
        rows = db.rows("SELECT role, content FROM messages WHERE conversation_id=? ORDER BY id", (cid,))
        assert [r[0] for r in rows] == ["user", "assistant", "user", "assistant"]
        assert rows[0][1] == "What does fahrenheit_to_celsius do?" and rows[1][1].strip()
        assert db.scalar("SELECT title FROM conversations WHERE id=?", (cid,)) == rows[0][1]
    finally:
        db.close()


@real
def test_real_gguf_context_overflow_is_one_line(tmp_path: Path) -> None:
    provider = LlamaProvider(ProviderSettings(n_ctx=256))
    long = "def f():\n    return 1\n" * 200
    with pytest.raises(ModelError, match="context window of 256") as exc:
        list(provider.stream([ChatMessage("user", long)], max_tokens=16, temperature=0))
    assert "\n" not in exc.value.one_line()
