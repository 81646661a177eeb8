"""The app as a new user meets it: what the screen shows while the model reads, scrolling the
chat after an answer, zooming a pane, the conversations list, copying an answer, and asking
before indexing a folder that is not a repository.

Driven by keys through Pilot on the real service over a fixture repository indexed for real;
where a model answers, the real answerer runs over a scripted provider (isolates the model).
"""

from __future__ import annotations

import html
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.models import ChatMessage, ModelInfo
from coderag_tui.service import CodeRag
from coderag_tui.tui.app import CodeRagApp
from coderag_tui.tui.widgets.chat import Transcript, TurnView
from tests.test_tui import main, running, settle, until
from tests.tui_fixtures import ScriptedAnswers, make_service

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("tui_quiet")]


class ReadingModel:
    """A provider that holds its answer until `release` is set, as a model reading a long
    prompt does (isolation only: the answerer, retrieval and the app around it are real)."""

    name = "scripted"

    def __init__(self) -> None:
        self.release = threading.Event()

    def context_window(self) -> int:
        return 4096

    def count_tokens(self, text: str) -> int:
        return len(text) // 4 + 1

    def stream(self, messages: list[ChatMessage], *, max_tokens: int, temperature: float,
               stop: list[str] | None = None,
               should_stop: Callable[[], bool] | None = None) -> Iterator[str]:
        while not self.release.wait(0.02):
            if should_stop is not None and should_stop():
                return
        yield "`Cart.total` adds the tax (`shop/cart.py:18-20`)."

    def info(self) -> ModelInfo:
        return ModelInfo("scripted", "scripted", "", 4096)


class ReadingService(CodeRag):
    model = ReadingModel()

    def llm(self, model: str | None = None) -> Any:
        return self.model


def screen_text(app: CodeRagApp) -> str:
    """The characters the terminal shows now (the last frame the app drew)."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\u00a0", " ")


# --------------------------------------------------------------------------- the model reads


async def test_the_reading_view_counts_the_prompt_tokens_and_seconds(tmp_path: Path) -> None:
    service = make_service(tmp_path, ReadingService)
    service.model = ReadingModel()
    async with running(service) as (app, pilot):
        screen = main(app)
        screen.chat.query_one("#question").value = "what does Cart.total return"  # type: ignore[attr-defined]
        await pilot.press("enter")
        view = screen.chat.current
        assert view is not None
        status = view.query_one(".status")
        await until(pilot, lambda: "reading" in str(status.render()))
        shown = str(status.render())
        assert re.search(r"reading [\d,]+ tokens of context · \d+ s", shown), shown
        service.model.release.set()
        await until(pilot, lambda: not screen.answering)
        assert "adds the tax" in view.turn.answer
        assert "reading" not in str(status.render())


# --------------------------------------------------------------------------- the chat scrolls


async def test_scroll_keys_in_the_chat_move_what_is_shown_after_an_answer(tmp_path: Path) -> None:
    service = make_service(tmp_path, ScriptedAnswers)
    service.tokens = tuple(f"line {i} of the answer\n\n" for i in range(40))  # type: ignore[attr-defined]
    async with running(service, size=(100, 30)) as (app, pilot):
        screen = main(app)
        screen.chat.query_one("#question").value = "a long answer"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: not screen.answering)
        await settle(pilot)
        transcript = screen.chat.query_one(Transcript)
        assert app.focused is transcript
        assert "line 39 of the answer" in screen_text(app)
        await pilot.press("pageup")
        await settle(pilot)
        # the transcript scrolled AND the terminal shows it (it used to scroll unseen until
        # something else repainted the screen, e.g. Tab)
        assert transcript.scroll_y < transcript.max_scroll_y
        assert "line 39 of the answer" not in screen_text(app)
        await pilot.press("end")
        await settle(pilot)
        assert "line 39 of the answer" in screen_text(app)
        assert isinstance(screen.chat.current, TurnView)
