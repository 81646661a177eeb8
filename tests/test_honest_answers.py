"""Nothing a model wrote passes for what the index knows: the code names and paths it invented
are listed apart, a citation is judged by whether its lines exist and, apart, by whether the
model saw them, and every unit of the opening is a source the user can open.

A scripted provider stands in for the model (isolation); the index is a real SQLite index of
a small fixture repository, and what is stored is read back from it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coderag_tui.answering import Answerer
from coderag_tui.answering.answer_cache import AnswerCache
from coderag_tui.answering.answerer import load_messages
from coderag_tui.answering.checked import Checks
from coderag_tui.answering.names import unknown_names
from coderag_tui.models import AnswerEvent, AnswerOpening, AnswerUnit, ComposedContext, ContextPiece
from coderag_tui.service import CodeRag
from coderag_tui.store.known import StoreNames
from coderag_tui.tui.chatlog import Turn, to_markdown
from coderag_tui.wire import decode, encode
from tests.helpers.answers import Scripted
from tests.helpers.shop import FILES

SHOP = {
    **FILES,
    "shop/__init__.py": "from shop.cart import Cart\n",
    "shop/json/__init__.py": "def dumps(value):\n    return str(value)\n",
    "shop/checkout.py": '''from shop.cart import Cart


def checkout(cart: Cart) -> float:
    """Pay for a cart."""
    return cart.total()
''',
}


def _cart_piece(service: CodeRag) -> ContextPiece:
    assert service.root is not None
    lines = (service.root / "shop/cart.py").read_text().splitlines()
    # packed: lines 1-4 and 15-17 shown, 5-14 left out behind a marker
    text = "\n".join([*lines[0:4], "    \u22ef (lines 5-14 left out)", *lines[14:17]])
    return ContextPiece("shop/cart.py", 1, 17, "primary", "shop/cart.py", text, 60, "python")


def _sources_event(events: list[AnswerEvent]) -> AnswerEvent:
    return next(e for e in events if e.kind == "sources")


def test_the_names_a_model_invented_are_listed_and_kept(make_repo: Callable[..., Path],
                                                        open_service: Callable[..., CodeRag]) -> None:
    service = open_service(make_repo(SHOP))
    answer = ("`Cart.total` adds the tax from `tax_for` (shop/tax.py). The `CartManager` keeps carts, "
              "see `from shop.cart import checkout_magic`, `Cart.discount()` and shop/payments.py; "
              "`from shop.cart import Cart` and `self.items` are real, and so is `checkout` (a module too), "
              "paid over SSL/TLS and/or HTTP, written by `shop.json` (import and use `shop/cart`); "
              "`shop_module.__init__` too.")
    reads = StoreNames(service.db)
    assert unknown_names(answer, reads) == (
        "CartManager", "from shop.cart import checkout_magic", "Cart.discount", "shop_module.__init__",
        "shop/payments.py")

    provider = Scripted([answer[i : i + 7] for i in range(0, len(answer), 7)])
    events = list(Answerer(provider, service.db).ask("how is the total computed?",
                                                     ComposedContext("q", "semantic", (_cart_piece(service),), 60, 900)))
    sources = _sources_event(events)
    assert sources.unknown_names == ("CartManager", "from shop.cart import checkout_magic", "Cart.discount",
                                     "shop_module.__init__", "shop/payments.py")
    assert events[-1].kind == "done" and events[-1].stats["unknown_names"] == 5.0
    assert events[-1].model == "scripted"  # who wrote the answer
    # kept with the conversation and in the answer cache, and sent over the wire as they are
    [_, stored] = load_messages(service.db, events[-1].conversation_id)
    assert stored.unknown_names == sources.unknown_names and stored.model == "scripted"
    cache = AnswerCache(service.db, "scripted", 0.95)
    cache.remember("how is the total computed?", answer, sources.sources, (), Checks((), (), sources.unknown_names))
    hit = cache.lookup("How is the total computed")
    assert hit is not None and hit.unknown_names == sources.unknown_names
    assert decode(AnswerEvent, json.loads(json.dumps(encode(sources)))) == sources
    # an export says so under the answer
    turn = Turn("q", answer, sources.sources, unknown_names=sources.unknown_names, model=stored.model)
    exported = to_markdown([turn], "shop")
    assert "> answered by scripted\n" in exported
    assert "> not in the index (the model may have invented them): CartManager, " in exported


def test_a_markdown_escape_makes_no_name_known(make_repo: Callable[..., Path],
                                                open_service: Callable[..., CodeRag]) -> None:
    # a changelog writes `dispatch\_hook` for dispatch_hook: `_hook` is no name of the repository
    service = open_service(make_repo({**SHOP, "HISTORY.md": "# History\n\n- Remove exception eating from "
                                      "dispatch\\_hook, and \\_\\_init\\_\\_ is quieter.\n",
                                      "shop/hooks.py": "def dispatch_hook(key):\n    return key\n"}))
    reads = StoreNames(service.db)
    assert unknown_names("It keeps `self._hook` and calls `dispatch_hook`.", reads) == ("self._hook",)


def test_an_import_the_code_writes_is_known(make_repo: Callable[..., Path],
                                            open_service: Callable[..., CodeRag]) -> None:
    # `from __future__ import ...` is no import the index records; `typing` is imported as `t`
    # and shop/unittest.py is not the `unittest` the tests import from
    service = open_service(make_repo({**SHOP, "shop/typed.py": "from __future__ import annotations\n\n"
                                      "import typing as t\n\n\ndef first(items: t.Any) -> t.Any:\n"
                                      "    return items[0]\n",
                                      "shop/unittest.py": "def collect(cls):\n    return cls\n",
                                      "tests/test_cases.py": "from unittest import TestCase\n\n\n"
                                      "class CartCase(TestCase):\n    pass\n"}))
    reads = StoreNames(service.db)
    text = ("`from __future__ import annotations`, `from typing import Any`, `from unittest import TestCase` "
            "are real; `from __future__ import braces`, `from typing import Anything` and "
            "`from unittest import TestSuiteX` are not.")
    assert unknown_names(text, reads) == ("from __future__ import braces", "from typing import Anything",
                                          "from unittest import TestSuiteX")


def test_a_citation_is_judged_by_its_lines_and_apart_by_what_the_model_saw(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> None:
    service = open_service(make_repo(SHOP))
    # 1-10: the lines exist, the model saw 1-4 only; 1-99: the file has 17; nope.py: no such file
    answer = "See shop/cart.py:1-4, shop/cart.py:1-10, shop/cart.py:1-99 and shop/nope.py:3."
    provider = Scripted([answer])
    events = list(Answerer(provider, service.db).ask("where?", ComposedContext(
        "q", "semantic", (_cart_piece(service),), 60, 900)))
    sources = _sources_event(events)
    assert sources.sources[0].citation == "shop/cart.py:1-17" and sources.sources[0].cited
    assert sources.invalid_citations == ("shop/cart.py:1-10", "shop/cart.py:1-99", "shop/nope.py:3")
    assert sources.absent_citations == ("shop/cart.py:1-99", "shop/nope.py:3")
    [_, stored] = load_messages(service.db, events[-1].conversation_id)
    assert stored.invalid == sources.invalid_citations and stored.absent == sources.absent_citations


def test_every_unit_of_the_opening_is_a_source(make_repo: Callable[..., Path],
                                               open_service: Callable[..., CodeRag]) -> None:
    service = open_service(make_repo(SHOP))
    opening = AnswerOpening(
        units=(AnswerUnit("method", "Cart.total", "shop/cart.py", 14, 17),),
        call_path=(AnswerUnit("function", "checkout", "shop/checkout.py", 4, 6, call_line=6),
                   AnswerUnit("method", "Cart.total", "shop/cart.py", 14, 17)), flow=True)
    tax = ContextPiece("shop/tax.py", 4, 6, "primary", "tax_for", "def tax_for(amount):\n    ...\n    ...", 9)
    events = list(Answerer(Scripted(["It adds tax."]), service.db).ask(
        "how does checkout reach the tax?", ComposedContext("q", "semantic", (tax,), 9, 900), opening=opening))
    cited = [s.citation for s in _sources_event(events).sources]
    assert cited == ["shop/tax.py:4-6", "shop/cart.py:14-17", "shop/checkout.py:4-6"]


POOL = {
    "pool/config.py": '''class Limits:
    """Configuration for limits to various client behaviors."""

    def __init__(self, max_connections=None, max_keepalive_connections=None, keepalive_expiry=5.0):
        self.max_connections = max_connections
        self.max_keepalive_connections = max_keepalive_connections
        self.keepalive_expiry = keepalive_expiry


class Timeout:
    """Timeout configuration: how long the connection pool waits."""

    def __init__(self, pool=5.0):
        self.pool = pool


class PoolTimeout(Exception):
    """Timed out waiting to acquire a connection from the pool."""
''',
    "pool/transport.py": '''from pool.config import Limits


class ConnectionPool:
    def __init__(self, max_connections, max_keepalive_connections, keepalive_expiry):
        self.slots = max_connections


class Transport:
    def __init__(self, limits=Limits()):
        self.pool = ConnectionPool(
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
        )
''',
}


def test_a_question_about_a_limit_opens_with_the_code_that_applies_it(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> None:
    from coderag_tui.answering.opening import build_opening, is_flow_question
    from coderag_tui.models import CALL_PATH_HEAD, MATCHES_HEAD

    service = open_service(make_repo(POOL))
    question = "How is the connection pool limited?"
    assert not is_flow_question(question)  # "connection" is not the verb "connect"
    opening = build_opening(service.db, question, service.context(question, 2000))
    first = opening.units[0]
    assert (first.qualname, first.citation) == ("Transport.__init__", "pool/transport.py:10-15")
    assert first.line == ("reads .max_connections, .max_keepalive_connections, .keepalive_expiry "
                          "(fields of Limits) from line 12")
    assert "Limits" in [u.qualname for u in opening.units]
    # it says what it is: the index's ranked matches, and a call path found in the graph
    text = opening.render()
    assert text.startswith(MATCHES_HEAD) and MATCHES_HEAD == "Best matches in the index, ranked:"
    assert "certain" not in text and CALL_PATH_HEAD not in text


def test_the_cli_lists_what_it_checked_in_text_and_json(make_repo: Callable[..., Path], tmp_path: Path,
                                                        capsys: Any) -> None:
    from coderag_tui.cli.main import main
    from tests.helpers.loopback import Loopback, openai_sse
    repo = make_repo(SHOP)
    common = ["--repo", str(repo), "--db", str(tmp_path / "i.db")]
    assert main(["index", "--no-embed", *common]) == 0
    server = Loopback(lambda h, n: openai_sse(h, ["The `CartManager` adds tax ", "(see shop/nope.py:3)."]))
    try:
        config = tmp_path / "llm.toml"
        config.write_text(f'[llm]\nprovider = "openai"\nbase_url = "{server.url}/v1"\nmodel = "m"\n'
                          "retries = 0\ntimeout_s = 20\nn_ctx = 4096\nmax_tokens = 64\ntools = \"off\"\n")
        capsys.readouterr()
        assert main(["ask", "how is the total computed?", "--json", "--fresh", "--config", str(config), *common]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["unknown_names"] == ["CartManager"] and data["model"] == "openai:m"
        assert data["invalid_citations"] == data["absent_citations"] == ["shop/nope.py:3"]
        assert main(["ask", "how is the total computed?", "--fresh", "--no-stream", "--config", str(config),
                     *common]) == 0
        out = capsys.readouterr().out
        assert "! not in the repository (no such lines): shop/nope.py:3" in out
        assert "! not in the index (the model may have invented them): CartManager" in out
        assert out.index("`CartManager` adds tax") < out.index("! not in the index") < out.index("Sources")
    finally:
        server.close()
