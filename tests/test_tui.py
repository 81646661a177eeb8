"""The terminal app, driven by keys only (`run_test` + pilot at 80x24), on a small fixture
repository written by each test and indexed for real (real SQLite, real grammars).

Answers come from the real service where it can give them (the bundled model, when the
service has `ask`); the chat UI itself is also tested with scripted answers
(`ScriptedAnswers`: the real service with `ask` replaced), which keeps those tests fast and
deterministic.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Markdown

from coderag_tui import paths
from coderag_tui.models import AnswerEvent, Progress
from coderag_tui.service import CodeRag
from coderag_tui.tui import chatlog
from coderag_tui.tui.editor import editor_command
from coderag_tui.tui.history import History, Location
from coderag_tui.tui.messages import IndexProgress
from coderag_tui.tui.screens.help import HelpScreen
from coderag_tui.tui.screens.main import MainScreen
from coderag_tui.tui.screens.picker import PickerScreen
from coderag_tui.tui.screens.symbols import SymbolPalette
from coderag_tui.tui.widgets.chat import Transcript
from coderag_tui.tui.widgets.file_tree import FilesPane, FileTree
from coderag_tui.tui.widgets.status_bar import StatusBar
from coderag_tui.tui.widgets.viewer import ViewerPane
from tests.helpers.app import (
    ANSWER_SOURCES,
    SIZE,
    ScriptedAnswers,
    StoppableAnswers,
    app_for,
    ask,
    help_text,
    main,
    make_service,
    open_symbol,
    running,
    settle,
    submit,
    type_text,
    until,
    viewer_text,
)

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("tui_quiet")]




















# --------------------------------------------------------------------------- files and viewer


async def test_tree_lists_files_filter_narrows_and_enter_opens(tmp_path: Path) -> None:
    async with running(make_service(tmp_path)) as (app, pilot):
        files = app.screen.query_one(FilesPane)
        assert files.visible_paths == ["README.md", "shop/__init__.py", "shop/cart.py",
                                       "shop/pricing.py", "tests/test_cart.py"]
        states = {f.path: (f.state, f.language) for f in files.files}
        assert states["shop/cart.py"] == ("indexed", "python")
        assert files.border_subtitle == "5 files"
        assert "5 files" in str(app.screen.query_one("#index-text").render())

        await pilot.press("f2")
        await type_text(pilot, "cart")
        await pilot.pause()
        assert files.visible_paths == ["shop/cart.py", "tests/test_cart.py"]
        await type_text(pilot, " test")
        await pilot.pause()
        assert files.visible_paths == ["tests/test_cart.py"]

        await pilot.press("backspace", "backspace", "backspace", "backspace", "backspace")
        await pilot.press("down")  # into the tree, on the first file
        assert isinstance(app.focused, FileTree)
        await pilot.press("enter")
        await settle(pilot)
        view = main(app).code
        assert app.focused is view
        assert view.document is not None and view.document.path == "shop/cart.py"
        assert viewer_text(app)[0].startswith(' 1   """The shopping cart."""')
        assert app.screen.query_one(ViewerPane).border_title == "shop/cart.py"


async def test_indexing_runs_in_the_background_and_the_app_is_usable_meanwhile(tmp_path: Path) -> None:
    import threading

    release = threading.Event()

    class SlowIndex(CodeRag):
        def index(self, **kwargs: Any) -> Any:
            progress = kwargs.get("progress")
            if progress is not None:
                progress(Progress("parse", 2, 5, "shop/cart.py"))
            release.wait(10)
            return super().index(**kwargs)

    app = app_for(make_service(tmp_path, SlowIndex))
    async with app.run_test(size=SIZE) as pilot:
        files = app.screen.query_one(FilesPane)
        await until(pilot, lambda: len(files.files) == 5)
        assert {f.state for f in files.files} == {"pending"}
        status = app.screen.query_one(StatusBar)
        await until(pilot, lambda: "indexing 2/5 files" in str(status.query_one("#index-text").render()))
        assert status.query_one("#index-bar").display
        # the viewer works before the index exists
        await pilot.press("f2")
        await type_text(pilot, "pricing")
        await pilot.press("enter")  # one match: opens it
        await until(pilot, lambda: main(app).code.document is not None)
        assert main(app).code.document.path == "shop/pricing.py"  # type: ignore[union-attr]
        release.set()
        await settle(pilot)
        assert {f.state for f in files.files} == {"indexed"}
        assert not status.query_one("#index-bar").display


async def test_embedding_follows_indexing_and_the_tree_shows_it(tmp_path: Path) -> None:
    from dataclasses import replace

    from coderag_tui.config import EmbedSettings

    service = make_service(tmp_path)
    service.settings = replace(service.settings, embed=EmbedSettings())  # the bundled model
    phases: list[str] = []

    def hook(message: Any) -> None:
        if isinstance(message, IndexProgress):
            phases.append(message.progress.phase)

    app = app_for(service)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await settle(pilot)
        assert "parse" in phases and "embed" in phases
        files = app.screen.query_one(FilesPane).files
        assert {f.state for f in files if f.path.endswith(".py")} == {"embedded"}
        text = str(app.screen.query_one("#index-text").render())
        assert "0 vectors" not in text and "vectors" in text


async def test_the_watcher_refreshes_the_tree_and_the_open_file(tmp_path: Path) -> None:
    from dataclasses import replace

    from coderag_tui.config import WatchSettings

    service = make_service(tmp_path)
    service.settings = replace(service.settings, watch=WatchSettings(enabled=True, debounce_ms=50))
    async with running(service, watch=True) as (app, pilot):
        status = app.screen.query_one(StatusBar)
        await until(pilot, lambda: "watching" in str(status.query_one("#watch").render()))
        await open_symbol(pilot, "round_money")
        (tmp_path / "shop" / "shop" / "pricing.py").write_text(
            (tmp_path / "shop" / "shop" / "pricing.py").read_text() + "\n\ndef discount(amount):\n    return amount\n")
        (tmp_path / "shop" / "shop" / "extra.py").write_text("def extra():\n    return 1\n")
        view = main(app).code
        await until(pilot, lambda: view.document is not None and "def discount(amount):" in view.document.lines, 30)
        files = app.screen.query_one(FilesPane)
        await until(pilot, lambda: "shop/extra.py" in [f.path for f in files.files], 30)
        assert app.is_running


async def test_index_failure_is_a_notification_not_a_crash(tmp_path: Path) -> None:
    class Broken(CodeRag):
        def index(self, **kwargs: Any) -> Any:
            raise OSError("disk full")

    app = app_for(make_service(tmp_path, Broken))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: bool(app._notifications))
        note = list(app._notifications)[-1]
        assert note.severity == "error" and "disk full" in note.message and "\n" not in note.message
        assert app.is_running


# --------------------------------------------------------------------------- symbols and graph


async def test_symbol_palette_opens_the_definition_at_its_line(tmp_path: Path) -> None:
    async with running(make_service(tmp_path)) as (app, pilot):
        await pilot.press("ctrl+t")
        assert isinstance(app.screen, SymbolPalette)
        await type_text(pilot, "with_tax")
        await settle(pilot)
        assert [u.qualname for u in app.screen.units][:1] == ["with_tax"]
        await pilot.press("enter")
        await settle(pilot)
        view = main(app).code
        assert view.document is not None and view.document.path == "shop/pricing.py"
        assert view.line == 12 and view.range == (12, 12)
        assert app.screen.query_one(ViewerPane).border_title == "shop/pricing.py · with_tax"
        assert "▌ def with_tax" in "\n".join(viewer_text(app))


async def test_callers_callees_and_tests_lists_open_in_the_viewer(tmp_path: Path) -> None:
    async with running(make_service(tmp_path)) as (app, pilot):
        await open_symbol(pilot, "with_tax")
        await pilot.press("c")  # callers of with_tax
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, PickerScreen)
        assert [str(label) for label, _ in picker.items] == ["Cart.total  shop/cart.py:20"]
        await pilot.press("enter")
        await settle(pilot)
        view = main(app).code
        assert view.document is not None and view.document.path == "shop/cart.py" and view.line == 20
        assert app.screen.query_one(ViewerPane).border_title == "shop/cart.py · Cart.total"

        await pilot.press("o")  # callees of Cart.total
        await settle(pilot)
        labels = [str(label) for label, _ in app.screen.items]  # type: ignore[attr-defined]
        assert labels == ["with_tax → with_tax  shop/pricing.py:12",
                          "subtotal → Cart.subtotal  shop/cart.py:15"]
        await pilot.press("down", "enter")
        await settle(pilot)
        assert view.document.path == "shop/cart.py" and view.line == 15

        await pilot.press("up", "up", "up")  # back into Cart.total (line 18)
        await pilot.press("t")  # its tests
        await settle(pilot)
        labels = [str(label) for label, _ in app.screen.items]  # type: ignore[attr-defined]
        assert labels[0].startswith("test_total  tests/test_cart.py:")
        await pilot.press("enter")
        await settle(pilot)
        assert view.document.path == "tests/test_cart.py" and 4 <= view.line <= 7
        assert app.screen.query_one(ViewerPane).border_title == "tests/test_cart.py · test_total"


async def test_go_to_definition_of_the_identifier_under_the_cursor(tmp_path: Path) -> None:
    async with running(make_service(tmp_path)) as (app, pilot):
        await open_symbol(pilot, "Cart.total")
        view = main(app).code
        assert view.line == 18
        await pilot.press("down", "down", "home")  # line 20: `        return with_tax(self.subtotal())`
        await pilot.press(*["right"] * 15)
        assert view.word_at_cursor() == "with_tax"
        await pilot.press("d")
        await settle(pilot)
        assert view.document is not None and view.document.path == "shop/pricing.py" and view.line == 12
        await pilot.press("left_square_bracket")  # back to where we were
        await settle(pilot)
        assert view.document.path == "shop/cart.py" and view.line == 20


# --------------------------------------------------------------------------- chat, citations, history






async def test_ask_streams_answer_then_citation_opens_and_back_returns_to_chat(tmp_path: Path) -> None:
    service = make_service(tmp_path, ScriptedAnswers)
    async with running(service) as (app, pilot):
        assert "SmolLM2-135M (tiny default model)" in str(app.screen.query_one("#model").render())
        await ask(pilot, "what does total return")
        screen = main(app)
        assert service.questions == [("what does total return", None)]
        turn = screen.chat.turns[-1]
        assert turn.answer == "".join(service.tokens) and turn.done
        markdown = screen.chat.query(Markdown).last().source
        assert "adds the tax" in markdown and "with_tax" in markdown
        sources = str(screen.chat.query(".sources").last().render())
        assert "[1] shop/cart.py:18-20  Cart.total" in sources
        # each finding under its own label: no such lines, lines the model was not shown, names
        assert "not in the repository (no such lines): shop/nope.py:3" in sources
        assert "not verified (the lines exist, but the model was not shown them all): shop/cart.py:18-25" in sources
        assert "not in the index (the model may have invented them): CartManager" in sources
        assert screen.conversation_id == 7
        assert isinstance(app.focused, Transcript)

        await pilot.press("1")
        await settle(pilot)
        view = screen.code
        assert app.focused is view
        assert view.document is not None and view.document.path == "shop/cart.py"
        assert view.range == (18, 20) and view.line == 18
        assert app.screen.query_one(ViewerPane).border_title == "shop/cart.py · Cart.total"
        marked = [line for line in viewer_text(app) if "▌" in line]
        assert [line.split()[0] for line in marked] == ["18", "19", "20"]

        await pilot.press("n")  # next source
        await settle(pilot)
        assert view.document.path == "shop/pricing.py" and view.range == (12, 13)

        await pilot.press("left_square_bracket")  # back: source 1
        await settle(pilot)
        assert view.document.path == "shop/cart.py" and view.range == (18, 20)
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert isinstance(app.focused, Transcript)  # back in the chat
        await pilot.press("right_square_bracket")  # forward again
        await settle(pilot)
        assert app.focused is view

        # a follow-up question continues the conversation
        await ask(pilot, "and the tax")
        assert service.questions[-1] == ("and the tax", 7)


async def test_streaming_follows_the_bottom_unless_the_reader_scrolled_up(tmp_path: Path) -> None:
    service = make_service(tmp_path, ScriptedAnswers)
    service.tokens = tuple(f"line {i}\n\n" for i in range(40))  # type: ignore[attr-defined]
    async with running(service) as (app, pilot):
        await ask(pilot, "long")
        transcript = main(app).chat.query_one(Transcript)
        assert transcript.max_scroll_y > 0 and transcript.scroll_y == transcript.max_scroll_y

        service.delay = 0.03  # type: ignore[attr-defined]
        await submit(pilot, "again")
        await until(pilot, lambda: "line 5" in main(app).chat.turns[-1].answer)
        await pilot.press("pageup", "pageup")  # the reader goes back up
        await until(pilot, lambda: not main(app).answering)
        await settle(pilot)
        assert transcript.scroll_y < transcript.max_scroll_y - 5


async def test_cancel_stops_the_answer(tmp_path: Path) -> None:
    service = make_service(tmp_path, ScriptedAnswers)
    service.delay = 0.2  # type: ignore[attr-defined]
    service.tokens = tuple(f"word{i} " for i in range(100))  # type: ignore[attr-defined]
    async with running(service) as (app, pilot):
        await submit(pilot, "slow")
        screen = main(app)
        await until(pilot, lambda: "word1" in screen.chat.turns[-1].answer)
        assert screen.answering
        await pilot.press("escape")
        await pilot.pause()
        assert not screen.answering
        assert "stopped" in str(screen.chat.current.query_one(".status").render())  # type: ignore[union-attr]
        await until(pilot, lambda: service.stopped.is_set())  # type: ignore[attr-defined]
        words = screen.chat.turns[-1].answer.count("word")
        await pilot.pause(0.5)
        assert screen.chat.turns[-1].answer.count("word") == words  # nothing after the cancel


async def test_esc_keeps_the_partial_answer_and_its_sources(tmp_path: Path) -> None:
    service = make_service(tmp_path, StoppableAnswers)
    service.release = threading.Event()  # type: ignore[attr-defined]
    service.delay = 0.1  # type: ignore[attr-defined]
    service.tokens = tuple(f"word{i} " for i in range(200))  # type: ignore[attr-defined]
    async with running(service) as (app, pilot):
        await submit(pilot, "slow")
        screen = main(app)
        view = screen.chat.current
        assert view is not None
        # while the model reads the prompt, the status says so (a spinner and the seconds)
        await until(pilot, lambda: "reading 1,234 tokens of context" in str(view.query_one(".status").render()))
        service.release.set()  # type: ignore[attr-defined]
        await until(pilot, lambda: "word2" in screen.chat.turns[-1].answer)
        await pilot.press("escape")
        await pilot.pause()
        assert not screen.answering
        await until(pilot, lambda: bool(screen.chat.turns[-1].sources))  # retrieval's sources come
        await settle(pilot)
        turn = screen.chat.turns[-1]
        assert turn.answer.startswith("word0 word1 word2") and turn.stopped
        assert turn.answer.count("word") < 200
        assert "stopped" in str(view.query_one(".status").render())
        assert view.query_one(".sources").display
        assert screen.conversation_id == 7  # the stopped answer is part of the conversation
        await pilot.press("1")
        await settle(pilot)
        assert screen.code.document is not None and screen.code.document.path == "shop/cart.py"


async def test_a_model_error_keeps_the_sources_of_the_retrieval(tmp_path: Path) -> None:
    class FailsMidway(ScriptedAnswers):
        def ask(self, question: str, conversation_id: int | None = None, **_: Any) -> Any:  # as the service does
            yield AnswerEvent("token", "The total ")
            yield AnswerEvent("sources", sources=ANSWER_SOURCES)
            yield AnswerEvent("error", "server said 503: overloaded", conversation_id=7)

    async with running(make_service(tmp_path, FailsMidway)) as (app, pilot):
        await ask(pilot, "total")
        screen = main(app)
        view = screen.chat.current
        assert view is not None and not screen.answering
        assert screen.chat.turns[-1].sources == ANSWER_SOURCES and view.query_one(".sources").display
        assert "error: server said 503" in str(view.query_one(".status").render())
        assert screen.conversation_id == 7  # the question and its sources were stored
        await pilot.press("1")
        await settle(pilot)
        assert screen.code.document is not None and screen.code.document.path == "shop/cart.py"


async def test_answer_error_and_failing_lookups_are_notifications(tmp_path: Path) -> None:
    class Failing(ScriptedAnswers):
        def ask(self, question: str, conversation_id: int | None = None, **_: Any) -> Any:
            yield from ()
            raise RuntimeError("model crashed\nwith a long trace")

        def callers(self, name: str, limit: int = 200) -> Any:
            raise RuntimeError("index busy")

    async with running(make_service(tmp_path, Failing)) as (app, pilot):
        await submit(pilot, "boom")
        await until(pilot, lambda: any("model crashed" in n.message for n in app._notifications))
        assert all("\n" not in n.message for n in app._notifications)
        screen = main(app)
        await until(pilot, lambda: not screen.answering)
        await open_symbol(pilot, "with_tax")
        await pilot.press("c")
        await until(pilot, lambda: any("index busy" in n.message for n in app._notifications))
        assert app.is_running and app.screen is screen


async def test_copy_answer_code_block_and_viewer_range(tmp_path: Path) -> None:
    async with running(make_service(tmp_path, ScriptedAnswers)) as (app, pilot):
        await ask(pilot, "total")
        await pilot.press("ctrl+y")
        assert app.clipboard.startswith("`Cart.total` adds the tax")
        assert "[1] shop/cart.py:18-20  Cart.total" in app.clipboard
        await pilot.press("y")  # focus is in the chat: the answer's code block
        assert app.clipboard == "return with_tax(self.subtotal())"
        await pilot.press("1")
        await settle(pilot)
        await pilot.press("y")  # focus is in the viewer: the cited range
        assert app.clipboard == (
            '    def total(self) -> float:\n        """The amount to pay, tax included."""\n'
            "        return with_tax(self.subtotal())")
        assert any("shop/cart.py:18-20" in n.message for n in app._notifications)


async def test_export_new_and_previous_conversations(tmp_path: Path) -> None:
    async with running(make_service(tmp_path, ScriptedAnswers)) as (app, pilot):
        await ask(pilot, "what does total return")
        await pilot.press("ctrl+s")
        assert not list(tmp_path.rglob("coderag-*.md"))  # never into the repository nor the cwd
        exported = paths.exports_dir() / "coderag-what-does-total-return.md"
        assert exported.is_file()
        text = exported.read_text()
        assert text.startswith("# what does total return\n")
        assert "1. `shop/cart.py:18-20` Cart.total" in text and "(context)" in text
        assert any(str(exported) in n.message for n in app._notifications)  # the full path

        screen = main(app)
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert screen.chat.turns == [] and screen.conversation_id is None
        assert isinstance(app.focused, Input)

        await pilot.press("ctrl+o")
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)
        await pilot.press("enter")
        await settle(pilot)
        assert screen.conversation_id == 7
        assert [t.question for t in screen.chat.turns] == ["what does Cart.total return?"]
        assert "shop/cart.py:18-20" in screen.chat.turns[0].answer
        # the reopened answer has its sources back, and says it was stopped
        assert screen.chat.turns[0].sources == ANSWER_SOURCES
        view = screen.chat.current
        assert view is not None and view.query_one(".sources").display
        assert "[2] shop/pricing.py:12-13  with_tax" in str(view.query_one(".sources").render())
        assert "stopped" in str(view.query_one(".status").render())
        await pilot.press("2")
        await settle(pilot)
        assert screen.code.document is not None and screen.code.document.path == "shop/pricing.py"


@pytest.mark.slow
async def test_real_model_answer_then_citation(tmp_path: Path) -> None:
    """The real pipeline: retrieval, the bundled model, citations checked by the service."""
    from dataclasses import replace

    service = make_service(tmp_path)
    service.settings = replace(service.settings, llm=replace(service.settings.llm, max_tokens=80))
    async with running(service) as (app, pilot):
        await submit(pilot, "What does Cart.total return?")
        screen = main(app)
        await until(pilot, lambda: not screen.answering and bool(screen.chat.turns[-1].done), 600)
        assert "SmolLM2-135M (tiny default model)" in str(app.screen.query_one("#model").render())
        turn = screen.chat.turns[-1]
        assert turn.answer.strip() and not turn.error
        assert turn.sources, "every answer lists its context as sources"
        await pilot.press("1")
        await settle(pilot)
        first = turn.sources[0]
        assert screen.code.document is not None and screen.code.document.path == first.path
        assert screen.code.range == (first.start_line, first.end_line)

        # the conversation was stored: a new one, then back to it from the list
        await pilot.press("ctrl+n", "ctrl+o")
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)
        await pilot.press("enter")
        await settle(pilot)
        assert [t.question for t in screen.chat.turns] == ["What does Cart.total return?"]
        # reopened as it was shown live: the index's opening section, then the model's text
        assert screen.chat.turns[0].answer.strip() == turn.answer.strip()


# --------------------------------------------------------------------------- keys, help, layout


async def test_help_screen_lists_every_key(tmp_path: Path) -> None:
    async with running(make_service(tmp_path)) as (app, pilot):
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        text = help_text(app)
        for words in ("List who calls", "Go back", "Open source N", "Copy the last answer",
                      "Open the file at this line in $EDITOR", "Save the conversation"):
            assert words in text
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)
        await pilot.press("escape")  # nothing to cancel: nothing happens
        await pilot.press("shift+tab")  # out of the input (into the chat), `?` opens the help too
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)


async def test_keys_are_remappable_through_settings(tmp_path: Path) -> None:
    async with running(make_service(tmp_path, keys={"callers": "k", "help": "f10"})) as (app, pilot):
        await open_symbol(pilot, "with_tax")
        await pilot.press("k")
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)
        await pilot.press("escape", "f10")
        assert isinstance(app.screen, HelpScreen)
        line = next(x for x in help_text(app).splitlines() if "List who calls" in x)
        assert line.split()[0] == "k"


async def test_command_palette_lists_and_runs_actions(tmp_path: Path) -> None:
    async with running(make_service(tmp_path)) as (app, pilot):
        await pilot.press("ctrl+p")
        await type_text(pilot, "hide the file tree")
        await settle(pilot)
        await pilot.press("enter")  # "Show or hide the file tree"
        await settle(pilot)
        assert not app.screen.query_one(FilesPane).display


async def test_keyboard_only_navigation_and_layout_toggles(tmp_path: Path) -> None:
    async with running(make_service(tmp_path)) as (app, pilot):
        screen = main(app)
        assert app.focused is screen.chat.query_one("#question")
        seen = set()
        for _ in range(6):
            await pilot.press("tab")
            seen.add(type(app.focused).__name__)
        assert {"FileFilter", "FileTree", "Transcript", "Input"} <= seen
        await pilot.press("f4")
        assert app.focused is screen.code and screen.query_one(ViewerPane).display
        await pilot.press("f5")  # hide the viewer: focus goes to the chat
        assert not screen.query_one(ViewerPane).display and isinstance(app.focused, Transcript)
        center = screen.query_one("#center")
        assert center.has_class("-bottom")  # 80 columns: the viewer goes below
        await pilot.press("f6")
        assert not center.has_class("-bottom") and screen.query_one(ViewerPane).display
        await pilot.press("f7")
        assert not screen.query_one(FilesPane).display
        await pilot.press("f2")
        assert screen.query_one(FilesPane).display and isinstance(app.focused, Input)
        await pilot.press("f9")
        assert app.theme == "textual-light"
        await pilot.press("f9")
        assert app.theme == "textual-dark"


async def test_theme_switch_rehighlights_the_code(tmp_path: Path) -> None:
    async with running(make_service(tmp_path)) as (app, pilot):
        await open_symbol(pilot, "Cart")
        view = main(app).code
        assert view.document is not None and view.document.dark
        await pilot.press("f9")
        await settle(pilot)
        assert not view.document.dark


async def test_no_color_and_256_colours(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    async with running(make_service(tmp_path, ScriptedAnswers)) as (app, pilot):
        await ask(pilot, "total")
        await pilot.press("1")
        await settle(pilot)
        svg = app.export_screenshot()
        assert "▌" in svg  # the cited range shows without colour
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("COLORTERM", "")
    monkeypatch.setenv("TERM", "xterm-256color")
    async with running(make_service(tmp_path / "b")) as (app, pilot):
        assert app.is_running


async def test_editor_key_without_a_terminal_says_so(tmp_path: Path) -> None:
    async with running(make_service(tmp_path)) as (app, pilot):
        await open_symbol(pilot, "with_tax")
        await pilot.press("e")
        await pilot.pause()
        assert any("editor" in n.message for n in app._notifications)


# --------------------------------------------------------------------------- plain parts


def test_editor_command_puts_the_line_where_each_editor_wants_it() -> None:
    path = Path("/r/a.py")
    assert editor_command(path, 12, {"EDITOR": "vim"}) == ["vim", "+12", "/r/a.py"]
    assert editor_command(path, 12, {"EDITOR": "code --wait"}) == ["code", "--wait", "-g", "/r/a.py:12"]
    assert editor_command(path, 3, {}) == ["vi", "+3", "/r/a.py"]
    assert editor_command(path, 3, {"VISUAL": "hx", "EDITOR": "vim"}) == ["hx", "/r/a.py:3"]


def test_history_is_like_a_browser() -> None:
    h = History()
    chat, a, b = Location.chat(), Location.file("a.py", 3), Location.file("b.py", 9)
    h.visit(chat)
    h.visit(a)
    assert h.back(b) == a and h.back(a) == chat and h.back(chat) is None
    assert h.forward(chat) == a
    h.visit(a)  # a new visit drops the forward stack
    assert not h.can_forward


def test_markdown_export_and_code_blocks() -> None:
    turn = chatlog.Turn("q?", "text\n```py\nx = 1\n```\nmore\n```\ny = 2\n```", done=True)
    assert chatlog.last_code_block(turn.answer) == "y = 2"
    assert chatlog.to_markdown([turn], "repo").startswith("# q?\n\nRepository: `repo`")
    assert chatlog.slug("What does `Cart.total` return?") == "what-does-cart-total-return"


def test_no_textual_in_the_plain_modules() -> None:
    import subprocess
    import sys

    code = ("import sys; import coderag_tui.tui.adapters, coderag_tui.tui.chatlog, "
            "coderag_tui.tui.history, coderag_tui.tui.keys, coderag_tui.tui.document, "
            "coderag_tui.tui.editor, coderag_tui.tui.clipboard; "
            "assert 'textual' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ})



async def test_repository_text_is_shown_never_obeyed(tmp_path: Path) -> None:
    """A file whose name holds markup and an escape sequence, and whose code holds escape
    sequences: shown as visible escapes in the tree, the viewer and its title."""
    name = "[bold]x\x1b[31mRED.py"
    service = make_service(tmp_path)
    (service.root / name).write_text('def red():\n    return "\x1b]52;c;aGk=\x07\x1b[2J"\n')
    async with running(service) as (app, pilot):
        files = app.screen.query_one(FilesPane)
        assert name in files.visible_paths
        tree = app.screen.query_one(FileTree)
        labels = [str(node.label) for node in tree.root.children]
        assert "✓ [bold]x\\x1b[31mRED.py py" in labels or any("[bold]x\\x1b[31mRED.py" in label
                                                                for label in labels), labels
        await pilot.press("f2")
        await type_text(pilot, "RED")
        await pilot.press("down", "enter")
        await settle(pilot)
        lines = viewer_text(app)
        assert any('\\x1b]52;c;aGk=\\x07\\x1b[2J' in line for line in lines), lines
        assert not any("\x1b" in line or "\x07" in line for line in lines)
        title = app.screen.query_one(ViewerPane).border_title
        assert "\x1b" not in str(title) and "\\x1b[31mRED.py" in str(title)
        assert r"\[bold]" in str(title)  # markup in a name is text, not style


class ScriptedSummaries(ScriptedAnswers):
    """The real service with a scripted background summarizer: it stores two summaries (as
    the model would) and reports progress from its own thread, held until `finish` is set."""

    finish: threading.Event

    def start_summaries(self, progress: Any = None) -> bool:
        import time as _time

        from coderag_tui.store import descriptions as store

        def work() -> None:
            db = self.db  # this thread's connection
            for key, path, kind, qual, text in (
                    (store.summary_key("shop/cart.py", "file", "shop/cart.py"), "shop/cart.py", "file",
                     "shop/cart.py", "A shopping cart that totals prices with tax."),
                    (store.summary_key("shop/cart.py", "method", "Cart.total"), "shop/cart.py", "method",
                     "Cart.total", "Returns the amount to pay: the subtotal with tax.")):
                with db.transaction():
                    store.put_summary(db, store.StoredSummary(key, path, kind, qual, text, "llama:test", "v",
                                                              "", "", False, _time.time(), 0.1))
            progress(Progress("summarize", 120, 800, "shop/cart.py", rate=3.1 / 60, eta_s=240))
            self.finish.wait(30)
            progress(Progress("done", 800, 800, "800 summaries made"))

        threading.Thread(target=work, daemon=True).start()
        return True


async def test_summaries_in_the_status_bar_and_the_viewer(tmp_path: Path) -> None:
    service = make_service(tmp_path, ScriptedSummaries)
    service.finish = threading.Event()
    app = app_for(service)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        label = app.screen.query_one("#summaries")
        await until(pilot, lambda: "summaries" in str(label.render()))
        assert str(label.render()) == "summaries 120/800 units (background, low priority) · 3.1/min · eta 4:00"
        await open_symbol(pilot, "total")
        notes = str(main(app).query_one(ViewerPane).query_one("#notes").render())
        assert "file A shopping cart that totals prices with tax." in notes
        assert "Cart.total Returns the amount to pay: the subtotal with tax." in notes
        await pilot.press("g")  # the file's top: no unit there, its profile-free file line stays
        await settle(pilot)
        notes = str(main(app).query_one(ViewerPane).query_one("#notes").render())
        assert notes.startswith("file A shopping cart") and "Cart.total" not in notes
        service.finish.set()
        await until(pilot, lambda: str(label.render()) == "")


async def test_the_viewer_shows_the_profile_until_a_summary_is_made(tmp_path: Path) -> None:
    app = app_for(make_service(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_symbol(pilot, "with_tax")
        notes = str(main(app).query_one(ViewerPane).query_one("#notes").render())
        assert notes.startswith("file ") and "with_tax" in notes.splitlines()[1]
        assert "(amount: float) -> float" in notes or "def with_tax" in notes
