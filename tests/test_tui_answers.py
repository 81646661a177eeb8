"""The chat shows the model's tool calls as collapsed entries, and an answer from the cache can
be asked again. Driven by keys through Pilot on the real service, whose model is a real HTTP
server on loopback that scripts its turns (tool calls, then the answer)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from coderag_tui.config import EmbedSettings, LLMSettings, Settings, WatchSettings
from coderag_tui.service import CodeRag
from coderag_tui.tui import chatlog
from coderag_tui.tui.widgets.chat import TurnView
from tests.helpers.app import app_for, main, settle, type_text, until
from tests.helpers.loopback import openai_sse
from tests.helpers.tool_use import FILES, openai_script

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("tui_quiet")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CODERAG_NO_LOCAL_CLIPBOARD", "1")
    monkeypatch.chdir(tmp_path)


def service_for(url: str, make_repo: Callable[..., Path], tmp_path: Path, **llm: Any) -> CodeRag:
    model = LLMSettings(provider="openai", base_url=url, model="m", timeout_s=10, retries=0, discover=False)
    settings = Settings(embed=EmbedSettings(enabled=False), watch=WatchSettings(enabled=False),
                        llm=replace(model, **llm))
    root = make_repo(FILES)
    (root / ".git").mkdir()  # a repository: indexed without asking first
    return CodeRag(root, settings, db_path=tmp_path / "index.db")


async def ask(pilot: Pilot[Any], question: str, answers: int) -> None:
    await pilot.press("f3")
    await type_text(pilot, question)
    await pilot.press("enter")
    screen = main(pilot.app)  # type: ignore[arg-type]
    await until(pilot, lambda: len(screen.chat.turns) == answers and screen.chat.turns[-1].done)
    await settle(pilot)


def tools_text(view: TurnView) -> str:
    return str(view.query_one(".tools", Static).render())


async def test_tool_calls_are_collapsed_entries_that_a_key_expands(
    loopback: Any, make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    model = loopback(openai_script)
    app = app_for(service_for(model.url, make_repo, tmp_path), auto_index=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await ask(pilot, "How is tax computed", 1)
        screen = main(app)
        [view] = screen.chat.views()
        assert [t.name for t in view.turn.tools] == ["search_codebase", "read_lines"]
        collapsed = tools_text(view).splitlines()
        assert collapsed[0].startswith("▸ tool: search_codebase 'tax owed' -> ")
        assert collapsed[1] == "▸ tool: read_lines 'shop/tax.py' -> shop/tax.py:4-6"
        assert "arguments" not in tools_text(view)
        assert view.query_one(".tools", Static).display

        await pilot.press("ctrl+l")
        await pilot.pause()
        expanded = tools_text(view)
        assert '▾ tool: read_lines' in expanded
        assert 'arguments: {"path": "shop/tax.py", "start": 4, "end": 6}' in expanded
        assert "result: shop/tax.py:4-6" in expanded

        await pilot.press("ctrl+l")
        await pilot.pause()
        assert tools_text(view).splitlines() == collapsed
        exported = chatlog.to_markdown(screen.chat.turns, "shop")
        assert '- tool: read_lines {"path": "shop/tax.py", "start": 4, "end": 6} -> shop/tax.py:4-6' in exported


async def test_an_answer_from_the_cache_can_be_asked_again(
    loopback: Any, make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    model = loopback(lambda h, n: openai_sse(h, [f"Answer {n}: tax_for returns amount * TAX_RATE (shop/tax.py:4-6)."]))
    app = app_for(service_for(model.url, make_repo, tmp_path, tools="off"), auto_index=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = main(app)
        await ask(pilot, "How is tax computed", 1)
        assert len(model.requests) == 1 and not screen.chat.turns[-1].cached
        assert not screen.check_action("ask_again", ())  # a fresh answer: nothing to ask again
        assert "ctrl+g" not in screen.active_bindings

        await pilot.press("ctrl+n")  # a new conversation: the same question comes from the cache
        await ask(pilot, "How is tax computed", 1)
        cached = screen.chat.turns[-1]
        assert cached.cached and len(model.requests) == 1 and "Answer 0" in cached.answer
        status = str(screen.chat.views()[-1].query_one(".status", Static).render())
        assert status == "answered from the cache: ctrl+g asks the model again"
        assert screen.check_action("ask_again", ()) and "ctrl+g" in screen.active_bindings

        await pilot.press("ctrl+g")
        await until(pilot, lambda: len(screen.chat.turns) == 2 and screen.chat.turns[-1].done)
        await settle(pilot)
        again = screen.chat.turns[-1]
        assert again.question == "How is tax computed" and not again.cached
        assert len(model.requests) == 2 and "Answer 1" in again.answer
        assert not screen.check_action("ask_again", ()) and "ctrl+g" not in screen.active_bindings
