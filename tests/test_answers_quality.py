"""Answer quality: the opening built from the index, the repetition guard, honest sources, a
remote window smaller than assumed, and the CLI keeping the first word of a streamed answer.

Unit tests isolate the guard and the answerer with scripted streams; the rest run the real
bundled SmolLM2 GGUF, a real index of a fixture repository, a real llama_cpp.server on
loopback and the real CLI in a pseudo-terminal.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from coderag_tui.answering import Answerer, ProviderOptions, check_citations, create
from coderag_tui.answering.guard import (
    LIMIT_NOTE,
    REPEAT_NOTE,
    RepetitionGuard,
    near_loop,
    repeated_line,
    repeated_ngram,
)
from coderag_tui.answering.opening import build_opening, is_flow_question
from coderag_tui.answering.prompts import fit_prompt
from coderag_tui.answering.providers.base import window_from_error
from coderag_tui.answering.providers.local import TINY_NOTE, LlamaProvider
from coderag_tui.config import ContextSettings, ProviderSettings, Settings
from coderag_tui.models import (
    CALL_PATH_HEAD,
    MATCHES_HEAD,
    ComposedContext,
    ContextPiece,
)
from coderag_tui.retrieval.packing import shares_for
from coderag_tui.retrieval.router import question_kind
from tests.helpers.answers import Scripted
from tests.helpers.loopback import LlamaServer
from tests.helpers.terminal import run_on_a_terminal

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
real = pytest.mark.usefixtures("bundled_gguf")  # loads the bundled GGUF

LOOP = "When a custom function that you want to handle occurs in any of these scenarios, "




def code_piece(path: str, start: int, n: int) -> ContextPiece:
    text = "\n".join(f"    value_{i} = compute({i})" for i in range(start, start + n))
    return ContextPiece(path, start, start + n - 1, "primary", path, text, n * 8, "python")


def ctx(*pieces: ContextPiece) -> ComposedContext:
    return ComposedContext("q", "semantic", pieces, sum(p.tokens for p in pieces), 4000)


def answer_of(events: list) -> str:
    return "".join(e.text for e in events if e.kind == "token")


# --------------------------------------------------------------------------- the guard (scripted)


def test_guard_stops_a_scripted_loop_and_drops_the_repeated_tail() -> None:
    text = "Errors go to `app.py:1-4`. " + LOOP * 12
    pieces = [text[i : i + 4] for i in range(0, len(text), 4)]
    provider = Scripted(pieces)
    events = list(Answerer(provider, max_tokens=400).ask("q?", ctx(code_piece("app.py", 1, 4)), ""))
    answer = answer_of(events)
    assert answer.endswith("\n\n" + REPEAT_NOTE)
    body = answer[: -len(REPEAT_NOTE)]
    assert body.startswith("Errors go to `app.py:1-4`. When a custom function")
    assert repeated_ngram(body) == ""  # never a third copy of any 6 words
    assert repeated_ngram(LOOP * 3) != ""
    assert provider.pulled < len(pieces) // 3 and provider.closed  # the model was stopped
    done = events[-1]
    assert done.kind == "done" and done.stats["stopped_repeating"] == 1.0
    sources = next(e for e in events if e.kind == "sources")
    assert sources.sources[0].citation == "app.py:1-4" and sources.sources[0].cited


def test_guard_stops_a_repeated_sentence_and_leaves_normal_text_alone() -> None:
    guard = RepetitionGuard()
    text = "The cart adds items. The total sums the prices with tax. The total sums the prices with tax. Then"
    shown = "".join(guard.feed(c) for c in text) + guard.flush()
    assert guard.stopped and shown == "The cart adds items. The total sums the prices with tax."
    normal = ("`Cart.total` in shop/cart.py:12-16 sums the prices. It calls tax_for (shop/tax.py:4-6).\n"
              "- add: appends an item\n- total: the sum with tax\nDone")
    guard = RepetitionGuard()
    pieces = [normal[i : i + 3] for i in range(0, len(normal), 3)]
    assert "".join(guard.feed(p) for p in pieces) + guard.flush() == normal and not guard.stopped


def _guarded(text: str, size: int = 3) -> tuple[RepetitionGuard, str]:
    guard = RepetitionGuard()
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    return guard, "".join(guard.feed(p) for p in pieces) + guard.flush()


def test_guard_stops_a_near_loop_of_sentences_a_word_apart() -> None:
    # two list items a word apart, in turn, until the token limit: no exact 5-word sentence
    # comes twice in a row, no line 4 times before the answer is long, no 6 words 3 times early
    items = ["Connections created or destroyed", "Connections created and destroyed"]
    text = "The pool keeps connections.\n" + "".join(f"{i + 1}. {items[i % 2]}\n" for i in range(8))
    guard, shown = _guarded(text)
    assert guard.stopped, shown
    assert shown.rstrip() == ("The pool keeps connections.\n1. Connections created or destroyed\n"
                     "2. Connections created and destroyed")
    assert near_loop(text) and not near_loop(shown)
    # drifting one word at a time
    drift = ("The pool limits the connections it keeps. The pool limits the sockets it keeps. "
             "The pool limits the sockets it opens. The pool limits the files it opens. ")
    guard, shown = _guarded(drift)
    assert guard.stopped and shown == ("The pool limits the connections it keeps. "
                                       "The pool limits the sockets it keeps.")


def test_guard_lets_two_sentences_a_word_apart_and_lists_pass() -> None:
    normal = ("The request context is pushed. The app context is pushed. Then the view runs.\n"
              "- `Flask.get` registers a GET route\n- `Flask.post` registers a POST route\n"
              "- `Flask.put` registers a PUT route\n- `Flask.delete` registers a DELETE route\n")
    guard, shown = _guarded(normal)
    assert shown == normal and not guard.stopped and not near_loop(normal)


def test_an_answer_cut_by_the_token_limit_says_so_and_the_tiny_model_is_capped() -> None:
    provider = Scripted(["It ", "is ", "computed ", "in"], finish="length", tiny=True)
    answerer = Answerer(provider, max_tokens=512, temperature=0.7, tiny_max_tokens=120)
    events = list(answerer.ask("how?", ctx(code_piece("a.py", 1, 3)), ""))
    assert answer_of(events).endswith(LIMIT_NOTE.format(tokens=120))
    assert provider.calls == [(120, 0.1)]  # short and cool
    assert events[-1].stats["cut_at_limit"] == 1.0 and "tiny default model" in events[-1].text


# --------------------------------------------------------------------------- question kinds


def test_question_kinds_choose_the_budget_shares() -> None:
    assert question_kind("where is match_route defined") == "lookup"
    assert question_kind("SessionInterface") == "lookup"
    assert question_kind("How is the application architecture organized into layers?") == "architecture"
    assert question_kind('Traceback (most recent call last):\n  File "app.py", line 3\nKeyError: x') == "debugging"
    assert question_kind("why does login raise a ValueError?") == "debugging"
    base = ContextSettings()
    shares = {k: shares_for(k, base) for k in ("lookup", "architecture", "debugging")}
    tiers = {k: (s.share_primary, s.share_neighbours, s.share_extended) for k, s in shares.items()}
    assert tiers["lookup"][0] > tiers["debugging"][0] > tiers["architecture"][0]
    assert tiers["debugging"][1] > tiers["architecture"][1] > tiers["lookup"][1]
    assert tiers["architecture"][2] > tiers["lookup"][2] > tiers["debugging"][2]
    assert shares_for("general", base) == base


FLOW_WORDINGS = [
    "How does a request reach a view?",
    "How does Flask dispatch a request to a view function?",
    "how do the before-request hooks get called",
    "How is a response turned into bytes?",
    "How are URL rules matched to endpoints?",
    "what happens when the session expires",
    "What happens if a view raises an exception?",
    "Walk me through handling a request",
    "What is the path from the WSGI server to the view?",
    "Describe the lifecycle of the application context",
    "Explain the flow of a request through the app",
    "trace the call chain of full_dispatch_request",
    "What is the sequence of calls when a test client sends a request?",
]
NOT_FLOW = [
    "where is match_route defined",
    "where is the Request class",
    "What does match_route return?",
    "What is the default value of SECRET_KEY?",
    "Which class stores the session?",
    "How do I install the package?",
    "how many view functions are there",
    "How is the Config class defined?",
    "show me the stack trace helper",
]


def test_flow_questions_are_told_from_lookups() -> None:
    assert [q for q in FLOW_WORDINGS if not is_flow_question(q)] == []
    assert [q for q in NOT_FLOW if is_flow_question(q)] == []


def test_window_errors_of_servers_are_read() -> None:
    assert window_from_error("Requested tokens (2880) exceed context window of 2048") == (2048, 2880)
    assert window_from_error(
        "This model's maximum context length is 2048 tokens. However, you requested 3392 tokens "
        "(2880 in the messages, 512 in the completion).") == (2048, 2880)
    assert window_from_error("the request exceeds the available context size (4096 tokens)") == (4096, 0)
    assert window_from_error("model not found") is None


# --------------------------------------------------------------------------- the opening (real index)

FLOW_FILES = {
    "web/app.py": '''"""A tiny WSGI framework."""
from web.routing import match_route
from web.wrappers import Request, Response


class App:
    """The application: routes requests to views."""

    def __init__(self):
        self.view_functions = {}

    def __call__(self, environ, start_response):
        """The WSGI server calls the application object."""
        return self.wsgi_app(environ, start_response)

    def wsgi_app(self, environ, start_response):
        """Build the request, dispatch it, send the response."""
        request = Request(environ)
        response = self.full_dispatch_request(request)
        return response.send(start_response)

    def full_dispatch_request(self, request):
        """Run the before-request hooks, dispatch, and finalize."""
        self.preprocess_request(request)
        rv = self.dispatch_request(request)
        return self.finalize_request(rv)

    def preprocess_request(self, request):
        """Hooks that run before every request."""
        request.seen = True

    def dispatch_request(self, request):
        """Match the request's URL to a view function and call the view."""
        endpoint = match_route(request.path)
        view = self.view_functions[endpoint]
        return view(request)

    def finalize_request(self, rv):
        """Turn a view's return value into a response."""
        return Response(rv)
''',
    "web/routing.py": '''"""URL routing."""

RULES = {}


def match_route(path):
    """The endpoint whose rule matches a path."""
    return RULES.get(path, "index")
''',
    "web/wrappers.py": '''"""Request and response objects."""


class Request:
    def __init__(self, environ):
        self.path = environ.get("PATH_INFO", "/")


class Response:
    def __init__(self, body):
        self.body = body

    def send(self, start_response):
        start_response("200 OK", [])
        return [self.body]
''',
    "tests/test_app.py": '''from web.app import App


def test_dispatch():
    app = App()
    app.view_functions["index"] = lambda r: "hi"
    assert app.dispatch_request(type("R", (), {"path": "/"})()) == "hi"
''',
}


def no_vectors() -> Settings:
    s = Settings()
    return replace(s, embed=replace(s.embed, enabled=False), llm=replace(s.llm, n_ctx=2048, max_tokens=48))


def test_a_flow_question_gets_the_call_path_from_the_entry_point(make_repo, open_service) -> None:
    service = open_service(make_repo(FLOW_FILES), no_vectors())
    question = "How does a request reach a view?"
    opening = build_opening(service.db, question, service.context(question, 2000))
    assert opening.flow
    assert [(u.qualname, u.citation, u.call_line) for u in opening.call_path] == [
        ("App.__call__", "web/app.py:12-14", 14),
        ("App.wsgi_app", "web/app.py:16-20", 19),
        ("App.full_dispatch_request", "web/app.py:22-26", 25),
        ("App.dispatch_request", "web/app.py:32-36", 0),
    ]
    units = {u.qualname: u for u in opening.units}
    assert units["App.dispatch_request"].line == "Match the request's URL to a view function and call the view."
    assert "tests/" not in " ".join(u.path for u in opening.call_path)
    text = opening.render()
    assert CALL_PATH_HEAD in text and "1. App.__call__ (web/app.py:12-14, calls the next at line 14)" in text
    # a lookup has units but no call path
    # another wording of the same question: "how does X <verb> Y"
    dispatch = "How does the app dispatch a request to a view function?"
    worded = build_opening(service.db, dispatch, service.context(dispatch, 2000))
    assert worded.flow and [u.qualname for u in worded.call_path] == [
        "App.__call__", "App.wsgi_app", "App.full_dispatch_request", "App.dispatch_request"]
    lookup = build_opening(service.db, "where is match_route", service.context("where is match_route", 2000))
    assert not lookup.flow and not lookup.call_path
    assert lookup.units[0].qualname == "match_route" and lookup.units[0].citation == "web/routing.py:6-8"


def test_the_tiny_model_reads_a_short_prompt_without_the_repository_map(make_repo, open_service) -> None:
    settings = replace(no_vectors(), llm=replace(no_vectors().llm, n_ctx=4096, tiny_context_tokens=120))
    prompts = {}
    for tiny in (False, True):
        service = open_service(make_repo(FLOW_FILES), settings)
        provider = Scripted(["It is dispatched."], tiny=tiny)
        service.__dict__["_providers"] = {None: provider}
        events = list(service.ask("How does a request reach a view?", fresh=True))
        assert "error" not in [e.kind for e in events]
        opening = next(e.opening for e in events if e.kind == "opening")
        assert opening is not None and len(opening.call_path) == 4  # the opening does not shrink
        prompts[tiny] = provider.sent
    assert "Repository map:" in prompts[False] and "Repository map:" not in prompts[True]
    code = [line for line in prompts[True].splitlines() if line.startswith("### ")]
    assert code and len(prompts[True]) < len(prompts[False])
    pieces = prompts[True].split("\nSources you may cite")[0]  # the context's pieces, not the prompt's tail
    assert sum(len(p) for p in pieces.split("### ")[1:]) / 4 <= 120 * 1.2


# --------------------------------------------------------------------------- REAL: the bundled model


@real
def test_the_guard_stops_a_real_looping_generation() -> None:
    # Without repeat_penalty, at temperature 0, SmolLM2-135M loops on this question.
    settings = ProviderSettings(n_ctx=2048, repeat_penalty=1.0, threads=1)
    provider = LlamaProvider(settings, ProviderOptions(models_dir=None))
    question = "List every scenario in which a custom error handler function is called."
    messages = fit_prompt(question, ctx(), "", [], provider, 200).messages
    unguarded = "".join(provider.stream(messages, max_tokens=200, temperature=0.0))
    assert repeated_ngram(unguarded) or repeated_line(unguarded), "no loop here now: find another prompt"

    events = list(Answerer(provider, max_tokens=200, temperature=0.0).ask(question, ctx(), ""))
    assert [e.text for e in events if e.kind == "error"] == []
    answer = answer_of(events)
    assert answer.endswith(REPEAT_NOTE), answer
    assert repeated_ngram(answer) == "" and repeated_line(answer) == ""
    assert events[-1].stats["stopped_repeating"] == 1.0
    assert events[-1].stats["tokens"] < 150  # stopped well before the limit
    assert len(answer) < len(unguarded)


@real
def test_the_service_opens_with_the_call_path_and_labels_the_tiny_model(make_repo, open_service) -> None:
    service = open_service(make_repo(FLOW_FILES), no_vectors())
    events = list(service.ask("How does a request reach a view?"))
    kinds = [e.kind for e in events]
    assert "error" not in kinds, [e.text for e in events if e.kind == "error"]
    assert kinds.index("opening") < kinds.index("token")
    opening = next(e for e in events if e.kind == "opening").opening
    assert opening is not None and opening.call_path[0].qualname == "App.__call__"
    assert opening.model_note == TINY_NOTE
    sources = next(e for e in events if e.kind == "sources")
    given = {s.citation for s in sources.sources}
    for bad in sources.invalid_citations:
        assert bad not in given


# --------------------------------------------------------------------------- REAL: a 2,048 window


@real
def test_a_remote_server_with_a_2048_window_answers(llama_server: LlamaServer) -> None:
    # [llm] n_ctx is left at its default (4096): the prompt built for it is too long for the
    # server (started with --n_ctx 2048), which closes the stream empty; the provider gets the
    # real window out of it and the prompt is fitted again.
    pieces = tuple(code_piece(f"pkg/mod{i}.py", 1, 40) for i in range(8))
    context = ComposedContext("q", "semantic", pieces, sum(p.tokens for p in pieces), 4000)
    settings = ProviderSettings(provider="openai", base_url=llama_server.url + "/v1", model="smollm",
                                timeout_s=120.0, retries=0)
    provider = create(settings, ProviderOptions(backoff_s=0.01))
    events = list(Answerer(provider, max_tokens=48, temperature=0.0).ask("What does mod0 compute?", context, ""))
    assert [e.text for e in events if e.kind == "error"] == []
    statuses = [e.text for e in events if e.kind == "status"]
    assert any("context window of 2048 tokens" in s for s in statuses), statuses
    assert answer_of(events).strip()
    done = events[-1]
    assert done.kind == "done" and done.stats["prompt_tokens"] + done.stats["max_answer_tokens"] <= 2048
    assert provider.context_window() == 2048


# --------------------------------------------------------------------------- REAL: the CLI in a terminal

SHOP = {
    "shop/cart.py": '''"""Shopping cart."""
from shop.tax import tax_for


class Cart:
    def total(self, prices):
        """The total price including tax."""
        subtotal = sum(prices)
        return subtotal + tax_for(subtotal)
''',
    "shop/tax.py": '''TAX_RATE = 0.2


def tax_for(amount):
    """Tax owed on an amount."""
    return amount * TAX_RATE
''',
}


def screen(raw: str) -> list[str]:
    """The lines a terminal shows for `raw` (text, \\r, \\n and the erase-line code)."""
    lines: list[list[str]] = [[]]
    col = 0
    for token in re.findall(r"\x1b\[[0-9;?]*[A-Za-z]|\r|\n|[^\x1b\r\n]", raw):
        line = lines[-1]
        if token == "\r":
            col = 0
        elif token == "\n":
            lines.append([])
            col = 0
        elif token == "\x1b[2K":
            line.clear()
            line.extend(" " * col)
        elif token.startswith("\x1b"):
            continue
        else:
            while len(line) <= col:
                line.append(" ")
            line[col] = token
            col += 1
    return ["".join(chars).rstrip() for chars in lines]


@real
def test_the_cli_keeps_the_first_word_of_a_streamed_answer(make_repo, tmp_path: Path) -> None:
    repo = make_repo(SHOP)
    (tmp_path / "cfg.toml").write_text("[llm]\nmax_tokens = 40\nn_ctx = 2048\n[embed]\nenabled = false\n")
    db = tmp_path / "i.db"
    cmd = [sys.executable, "-m", "coderag_tui", "ask", "what does tax_for return?", "--repo", str(repo),
           "--db", str(db), "--config", str(tmp_path / "cfg.toml")]
    from coderag_tui.cli.main import main as run_cli

    assert run_cli(["index", str(repo), "--db", str(db), "--config", str(tmp_path / "cfg.toml")]) == 0
    code, out = run_on_a_terminal(cmd, {**os.environ, "COLUMNS": "400", "TERM": "xterm"})
    assert code == 0, out[-2000:]
    shown = screen(out.decode("utf-8", "replace"))
    from coderag_tui.store import open_database

    store = open_database(db)
    try:
        answer = str(store.scalar("SELECT content FROM messages WHERE role='assistant' ORDER BY id DESC"))
    finally:
        store.close()
    first_line = answer.strip().splitlines()[0].strip()
    assert first_line and any(line.strip() == first_line for line in shown), (first_line, shown)
    joined = "\n".join(shown)
    assert joined.index(MATCHES_HEAD) < joined.index(first_line)
    assert "tax_for (shop/tax.py:4-6)" in joined


def test_unverified_citations_are_never_sources() -> None:
    shown = code_piece("src/flask/app.py", 30, 10)
    answer = "Signed in src/flask/app.py:32-35, see src/flask/app.py:14-20 and src/flask/sessions.py:1-9."
    checked = check_citations(answer, [shown])
    assert checked.invalid == ("src/flask/app.py:14-20", "src/flask/sessions.py:1-9")
    assert [s.citation for s in checked.sources] == ["src/flask/app.py:30-39"]
