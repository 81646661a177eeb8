"""The app keeps up with its user: the layout follows the window, a question typed during an
answer waits its turn, the viewer finds and moves by word, look-ups say when nothing is found.

Driven by keys through Pilot on the real service over a fixture repository indexed for real.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from coderag_tui.models import AnswerEvent, Source
from coderag_tui.service import CodeRag
from coderag_tui.tui.screens.picker import PickerScreen
from coderag_tui.tui.screens.symbols import SymbolPalette
from coderag_tui.tui.widgets.viewer import ViewerPane, find_all, match_columns
from tests.helpers.app import (
    ScriptedAnswers,
    ask,
    main,
    make_service,
    open_symbol,
    running,
    settle,
    type_text,
    until,
    viewer_text,
)

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("tui_quiet")]


# --------------------------------------------------------------------------- layout


async def test_the_viewer_moves_right_or_below_as_the_window_is_resized(tmp_path: Path) -> None:
    async with running(make_service(tmp_path), size=(80, 24)) as (app, pilot):
        screen = main(app)
        await open_symbol(pilot, "total")
        center, viewer = screen.query_one("#center"), screen.query_one(ViewerPane)
        assert center.has_class("-bottom")  # 80 columns: below the chat
        assert viewer.region.y > screen.chat.region.y

        await pilot.resize_terminal(160, 48)
        await settle(pilot)
        assert not center.has_class("-bottom")  # wide: beside the chat
        assert viewer.region.x > screen.chat.region.x and viewer.region.y == screen.chat.region.y
        assert viewer.region.width >= 96  # room for a typical line of code
        assert screen.code.document is not None and screen.code.document.path == "shop/cart.py"

        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        assert center.has_class("-bottom")


async def test_the_viewer_setting_and_f6_fix_the_place(tmp_path: Path) -> None:
    async with running(make_service(tmp_path, viewer="bottom"), size=(160, 48)) as (app, pilot):
        center = main(app).query_one("#center")
        assert center.has_class("-bottom")  # forced below, however wide
        await pilot.press("f6")
        await pilot.resize_terminal(90, 30)
        await settle(pilot)
        assert not center.has_class("-bottom")  # F6 chose right: a resize keeps it


async def test_a_long_source_list_is_collapsed_until_asked(tmp_path: Path) -> None:
    service = make_service(tmp_path, ScriptedAnswers)
    service.sources = tuple(  # type: ignore[attr-defined]
        Source(n, "shop/pricing.py", n, n, f"unit{n}", True) for n in range(1, 9))
    async with running(service, size=(80, 24)) as (app, pilot):
        await ask(pilot, "where are prices")
        screen = main(app)
        box = str(screen.chat.query(".sources").last().render())
        assert "unit3" in box and "unit4" not in box and "+5 more" in box
        await pilot.press("s")
        await settle(pilot)
        box = str(screen.chat.query(".sources").last().render())
        assert "unit8" in box and "more" not in box
        await pilot.press("8")  # a source is opened by number, shown or not
        await settle(pilot)
        assert screen.code.document is not None and screen.code.line == 8


# --------------------------------------------------------------------------- queued questions


class Gated(ScriptedAnswers):
    """Each answer waits after its first token until the test opens the gate."""

    gate: threading.Event

    def ask(self, question: str, conversation_id: int | None = None, **_: object) -> Iterator[AnswerEvent]:
        for n, event in enumerate(super().ask(question, conversation_id)):
            if n == 2:
                self.gate.wait(10)
            yield event


async def test_a_question_typed_while_an_answer_streams_is_queued_then_asked(tmp_path: Path) -> None:
    service = make_service(tmp_path, Gated)
    service.gate = threading.Event()  # type: ignore[attr-defined]
    async with running(service, size=(80, 24)) as (app, pilot):
        screen = main(app)
        await pilot.press("f3")
        await type_text(pilot, "first")
        await pilot.press("enter")
        await until(pilot, lambda: bool(screen.chat.turns and screen.chat.turns[-1].answer))
        await pilot.press("f3")
        await type_text(pilot, "second")
        await pilot.press("enter")
        await until(pilot, lambda: screen.queued == ("second",))
        assert screen.answering and screen.chat.border_subtitle == "1 queued"
        assert [t.question for t in screen.chat.turns] == ["first"]
        service.gate.set()  # type: ignore[attr-defined]
        await until(pilot, lambda: len(screen.chat.turns) == 2 and screen.chat.turns[-1].done)
        assert [q for q, _ in service.questions] == ["first", "second"]  # type: ignore[attr-defined]
        assert screen.chat.turns[0].answer == "".join(service.tokens)  # the first answer was not cut
        assert screen.queued == () and screen.chat.border_subtitle == ""


# --------------------------------------------------------------------------- viewer


def test_find_is_smart_case() -> None:
    assert match_columns("Cart cart CART", "cart") == [0, 5, 10]
    assert match_columns("Cart cart CART", "Cart") == [0]
    assert match_columns("aaaa", "aa") == [0, 2]
    assert find_all(("x = 1", "y", "x"), "x") == [(0, 0), (2, 0)]


async def test_find_in_file_steps_through_highlighted_matches(tmp_path: Path) -> None:
    async with running(make_service(tmp_path), size=(80, 24)) as (app, pilot):
        screen = main(app)
        await open_symbol(pilot, "Cart")
        view, pane = screen.code, screen.query_one(ViewerPane)
        assert app.focused is view
        await pilot.press("slash")
        assert pane.find_bar.display and app.focused is pane.find_bar
        await type_text(pilot, "self")
        await settle(pilot)
        lines = view.document.lines  # type: ignore[union-attr]
        rows = sorted({r for r, line in enumerate(lines) if "self" in line})
        assert view.matches and {r for r, _ in view.matches} == set(rows)
        first = (view.cursor_row, view.cursor_col)
        assert first in view.matches and lines[first[0]][first[1]:].startswith("self")
        assert "matches" in str(pane.border_subtitle)

        await pilot.press("enter")  # the next match; the viewer takes the focus
        await settle(pilot)
        second = (view.cursor_row, view.cursor_col)
        assert app.focused is view and second == view.matches[view.matches.index(first) + 1]
        await pilot.press("n")
        assert (view.cursor_row, view.cursor_col) == view.matches[view.matches.index(second) + 1]
        await pilot.press("N", "N")
        assert (view.cursor_row, view.cursor_col) == first

        # the match is drawn highlighted (the cursor takes its first cell)
        y = view.cursor_row - int(view.scroll_offset.y)
        marked = view.get_component_rich_style("code-view--match").bgcolor

        def highlighted() -> list[str]:
            return [s.text for s in view.render_line(y) if s.style and s.style.bgcolor == marked]

        assert "elf" in "".join(highlighted())
        await pilot.press("escape")
        await settle(pilot)
        assert not pane.find_bar.display and view.find == "" and app.focused is view
        assert highlighted() == []
        assert "self.items" in "".join(viewer_text(app))  # the code stays in view

        await pilot.press("n")  # find closed: n is the next source again
        await settle(pilot)
        assert view.find == ""


async def test_ctrl_f_from_anywhere_and_escape_closes(tmp_path: Path) -> None:
    async with running(make_service(tmp_path), size=(80, 24)) as (app, pilot):
        screen = main(app)
        await open_symbol(pilot, "round_money")
        await pilot.press("ctrl+f")
        pane = screen.query_one(ViewerPane)
        assert app.focused is pane.find_bar
        await type_text(pilot, "nowhere_at_all")
        await settle(pilot)
        assert screen.code.matches == [] and "0 matches" in str(pane.border_subtitle)
        await pilot.press("escape")
        assert not pane.find_bar.display and app.focused is screen.code


async def test_word_movement_across_names_and_lines(tmp_path: Path) -> None:
    async with running(make_service(tmp_path), size=(80, 24)) as (app, pilot):
        screen = main(app)
        await open_symbol(pilot, "with_tax")
        view = screen.code
        line = view.document.lines[view.cursor_row]  # type: ignore[union-attr]
        assert line.startswith("def with_tax(amount: float)") and view.cursor_col == 0
        await pilot.press("w")
        assert view.cursor_col == 4  # with_tax
        await pilot.press("ctrl+right")
        assert view.cursor_col == line.index("(")
        await pilot.press("w")
        assert view.cursor_col == line.index("amount")
        await pilot.press("b", "ctrl+left")
        assert view.cursor_col == 4
        await pilot.press("end", "w")  # past the line's end: the next line's first word
        nxt = view.document.lines[view.cursor_row]  # type: ignore[union-attr]
        assert nxt.strip().startswith("return") and view.cursor_col == nxt.index("return")
        await pilot.press("b")
        assert view.cursor_col == line.rindex(":")  # back to the end of the def line


# --------------------------------------------------------------------------- look-ups


async def test_symbol_palette_says_no_matches(tmp_path: Path) -> None:
    async with running(make_service(tmp_path), size=(80, 24)) as (app, pilot):
        await pilot.press("ctrl+t")
        await type_text(pilot, "zzqqxx")
        await settle(pilot)
        palette = app.screen
        assert isinstance(palette, SymbolPalette)
        options = palette.query_one("#symbol-list")
        assert options.option_count == 1  # type: ignore[attr-defined]
        assert "no matches for zzqqxx" in str(options.get_option_at_index(0).prompt)  # type: ignore[attr-defined]
        assert palette.query_one("#symbols").border_subtitle == "no matches · Esc closes"
        await pilot.press("enter")  # nothing to open: the palette stays
        await settle(pilot)
        assert app.screen is palette


async def test_the_tests_list_shows_each_test_once(tmp_path: Path) -> None:
    service = make_service(tmp_path)
    test_file = Path(service.root) / "tests" / "test_twice.py"
    test_file.write_text("from shop.cart import Cart\n\n\ndef test_total_twice():\n"
                         "    cart = Cart()\n    assert cart.total() == 0\n"
                         "    cart.add('apple')\n    assert cart.total() > 0\n")
    async with running(service, size=(80, 24)) as (app, pilot):
        raw = [e for e in service.tests_for("Cart.total") if e.unit and e.unit.name == "test_total_twice"]
        assert len(raw) == 2  # the graph has both calls
        await open_symbol(pilot, "total")
        await pilot.press("t")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, PickerScreen)
        rows = [str(label) for label, _ in picker.items]
        assert sum("test_total_twice" in r for r in rows) == 1
        assert any("test_total " in r or r.startswith("test_total ") for r in rows)


async def test_code_in_a_default_excluded_folder_is_announced(tmp_path: Path) -> None:
    from tests.helpers.app import settings
    from tests.helpers.files import npm_package
    root = npm_package(tmp_path / "pkg")
    async with running(CodeRag(root, settings(), db_path=tmp_path / "index.db"), size=(80, 24)) as (app, pilot):
        await pilot.press("y")  # a folder in no git repository: indexed once the user says so
        await settle(pilot)
        said = [n.message for n in app._notifications]
        assert "12 files in dist/ excluded by default: set [index] default_excludes = false" in said
        assert "1 file in vendor/ excluded by default: set [index] default_excludes = false" in said
