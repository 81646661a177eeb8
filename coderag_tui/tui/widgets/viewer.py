"""The code viewer: highlighted lines with numbers, a cursor, the cited range marked.

A Line API widget (`render_line`), so files of any length scroll at the same cost. The cited
range gets a background and a `▌` in the gutter (visible without colour, under NO_COLOR);
the title shows the path and the unit enclosing the cursor, a note above the code what the file
and that unit do (the model's summary, or the profile until one is made). `/` or ctrl+f finds in the file
(the matches are highlighted; n/N step through them); w/b and ctrl+arrows move by word.
"""

from __future__ import annotations

import re

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events, on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Size
from textual.markup import escape
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.theme import Theme
from textual.widgets import Input, Static

from coderag_tui.models import FileDescription, UnitRef, summary_label
from coderag_tui.textsafe import safe_line
from coderag_tui.tui import document as documents
from coderag_tui.tui.adapters import unit_at
from coderag_tui.tui.document import Document
from coderag_tui.tui.keys import KEYS

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
WORD = re.compile(r"\w+|[^\w\s]+")  # what w/b stop at: a name, a number or a run of punctuation
HINT = "Open a file: Enter in the tree, ctrl+t for a symbol, 1-9 for a source of an answer."


class CodeView(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"code-view--gutter", "code-view--range", "code-view--marker",
                         "code-view--cursor-line", "code-view--cursor", "code-view--match"}
    DEFAULT_CSS = """
    CodeView { background: $surface; }
    CodeView > .code-view--gutter { color: $text-muted; }
    CodeView > .code-view--range { background: $warning 20%; }
    CodeView > .code-view--marker { color: $warning; }
    CodeView > .code-view--cursor-line { background: $boost; }
    CodeView > .code-view--cursor { text-style: reverse; }
    CodeView > .code-view--match { background: $accent 40%; text-style: underline; }
    """
    BINDINGS = [
        Binding("up", "move(-1, 0)", show=False),
        Binding("down", "move(1, 0)", show=False),
        Binding("left", "move(0, -1)", show=False),
        Binding("right", "move(0, 1)", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("pagedown,space", "page(1)", show=False),
        Binding("home", "line_edge(0)", show=False),
        Binding("end", "line_edge(1)", show=False),
        Binding("ctrl+home,g", "jump(0)", show=False),
        Binding("ctrl+end,G", "jump(1)", show=False),
        Binding("ctrl+right,w", "word(1)", show=False),
        Binding("ctrl+left,b", "word(-1)", show=False),
        Binding("n", "find_next(1)", show=False),
        Binding("N", "find_next(-1)", show=False),
        *(Binding(k.keys, k.action, k.description, show=k.show, id=k.id, tooltip=k.help)
          for k in KEYS if k.scope == "viewer"),
    ]

    class CursorMoved(Message):
        def __init__(self, line: int) -> None:
            super().__init__()
            self.line = line

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.document: Document | None = None
        self.cursor_row = 0
        self.cursor_col = 0
        self.range = (0, 0)
        self.find = ""  # the text searched for ("" when find is closed)
        self.matches: list[tuple[int, int]] = []  # (row, column) of each match, in order

    # ------------------------------------------------------------------ state
    @property
    def line(self) -> int:
        return self.cursor_row + 1

    @property
    def gutter_width(self) -> int:
        return len(str(len(self.document.lines))) + 3 if self.document else 0

    def show(self, doc: Document, line: int = 1, start: int = 0, end: int = 0) -> None:
        self.document = doc
        self.matches = find_all(doc.lines, self.find)
        self.virtual_size = Size(doc.width + self.gutter_width + 1, len(doc.lines))
        self.goto(line, start, end)

    def goto(self, line: int, start: int = 0, end: int = 0) -> None:
        if self.document is None:
            return
        self.range = (start, end or start) if start else (0, 0)
        last = max(len(self.document.lines) - 1, 0)
        self.cursor_row = min(max(line - 1, 0), last)
        text = self.document.lines[self.cursor_row] if self.document.lines else ""
        self.cursor_col = len(text) - len(text.lstrip())
        self.call_after_refresh(self._center)
        self._moved()

    def _center(self) -> None:
        height = self.scrollable_content_region.height
        self.scroll_to(0, max(0, self.cursor_row - height // 3), animate=False, immediate=True)
        self._follow()
        self._centered_row = self.cursor_row

    def on_resize(self, event: events.Resize) -> None:
        # the notes above the code take their height after a document opens: a line that was
        # just centred stays at a third of the new height (the cursor has not moved since)
        if self.document is not None and getattr(self, "_centered_row", None) == self.cursor_row:
            self._center()

    def set_dark(self, dark: bool) -> None:
        if self.document is not None and self.document.dark != dark:
            self._retheme(self.document, dark)

    @work(thread=True, exclusive=True, group="retheme", exit_on_error=False)
    def _retheme(self, doc: Document, dark: bool) -> None:
        new = documents.rethemed(doc, dark)
        self.app.call_from_thread(self._swap, doc, new)

    def _swap(self, old: Document, new: Document) -> None:
        if self.document is old:
            self.document = new
            self.refresh()

    def restyle(self, old: Document, new: Document) -> None:
        """The same lines, coloured and described: cursor, range and scroll stay."""
        if self.document is old:
            self.document = new
            self.refresh()
            self.post_message(self.CursorMoved(self.line))  # the notes above the code

    # ------------------------------------------------------------------ queries
    def word_at_cursor(self) -> str:
        if self.document is None or not self.document.lines:
            return ""
        text = self.document.lines[self.cursor_row]
        for m in IDENT.finditer(text):
            if m.start() <= self.cursor_col <= m.end():
                return m.group()
        return ""

    def unit_at_cursor(self) -> UnitRef | None:
        return unit_at(list(self.document.outline), self.line) if self.document else None

    def selected_text(self) -> tuple[str, int, int]:
        """The cited range, else the unit under the cursor, else the cursor line: text, start, end."""
        if self.document is None:
            return "", 0, 0
        start, end = self.range
        if not start:
            unit = self.unit_at_cursor()
            start, end = (unit.start_line, unit.end_line) if unit else (self.line, self.line)
        return "\n".join(self.document.lines[start - 1 : end]), start, end

    # ------------------------------------------------------------------ cursor
    def _moved(self) -> None:
        self._follow()
        self.refresh()
        self.post_message(self.CursorMoved(self.line))

    def _follow(self) -> None:
        if self.document is None:
            return
        region = self.scrollable_content_region
        height, width = max(region.height, 1), max(region.width - self.gutter_width, 1)
        x, y = self.scroll_offset
        if self.cursor_row < y:
            y = self.cursor_row
        elif self.cursor_row >= y + height:
            y = self.cursor_row - height + 1
        if self.cursor_col < x:
            x = self.cursor_col
        elif self.cursor_col >= x + width:
            x = self.cursor_col - width + 1
        self.scroll_to(x, y, animate=False, immediate=True)

    def action_move(self, rows: int, cols: int) -> None:
        if self.document is None or not self.document.lines:
            return
        self.cursor_row = min(max(self.cursor_row + rows, 0), len(self.document.lines) - 1)
        length = len(self.document.lines[self.cursor_row])
        self.cursor_col = min(max(self.cursor_col + cols, 0), length)
        self._moved()

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(self.scrollable_content_region.height - 1, 1), 0)

    def action_line_edge(self, end: int) -> None:
        if self.document is not None and self.document.lines:
            self.cursor_col = len(self.document.lines[self.cursor_row]) if end else 0
            self._moved()

    def action_jump(self, end: int) -> None:
        if self.document is not None:
            self.action_move(len(self.document.lines) if end else -len(self.document.lines), 0)

    def action_word(self, step: int) -> None:
        """Move to the start of the next (or previous) word, across lines."""
        if self.document is None or not self.document.lines:
            return
        lines = self.document.lines
        row, col = self.cursor_row, self.cursor_col
        if step > 0:
            while row < len(lines):
                starts = [m.start() for m in WORD.finditer(lines[row]) if m.start() > col]
                if starts:
                    self.cursor_row, self.cursor_col = row, starts[0]
                    break
                row, col = row + 1, -1
        else:
            while row >= 0:
                starts = [m.start() for m in WORD.finditer(lines[row]) if m.start() < col]
                if starts:
                    self.cursor_row, self.cursor_col = row, starts[-1]
                    break
                row -= 1
                col = len(lines[row]) + 1 if row >= 0 else 0
        self._moved()

    # ------------------------------------------------------------------ find
    def set_find(self, text: str) -> None:
        """Search for text (case-insensitive unless it has a capital) and go to the first match
        at or after the cursor."""
        self.find = text
        self.matches = find_all(self.document.lines, text) if self.document else []
        if self.matches:
            here = (self.cursor_row, self.cursor_col)
            self._go_match(next((m for m in self.matches if m >= here), self.matches[0]))
        self.refresh()

    def step_find(self, step: int) -> bool:
        """Go to the next (step 1) or previous (-1) match, wrapping; False when there is none."""
        if not self.matches:
            return False
        here = (self.cursor_row, self.cursor_col)
        if step > 0:
            target = next((m for m in self.matches if m > here), self.matches[0])
        else:
            target = next((m for m in reversed(self.matches) if m < here), self.matches[-1])
        self._go_match(target)
        return True

    def _go_match(self, match: tuple[int, int]) -> None:
        self.cursor_row, self.cursor_col = match
        self._moved()

    def action_find(self) -> None:
        if isinstance(self.parent, ViewerPane):
            self.parent.open_find()

    def action_find_next(self, step: int) -> None:
        if not self.find:
            raise SkipAction()  # n/N go on to the screen's next/previous source
        self.step_find(step)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    # ------------------------------------------------------------------ rendering
    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        doc = self.document
        if doc is None:
            return Strip([Segment(f" {HINT}"[:width], base + Style(dim=True))]).adjust_cell_length(
                width, base) if y == 1 else Strip.blank(width, base)
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        if row >= len(doc.lines):
            return Strip.blank(width, base)
        number = row + 1
        in_range = self.range[0] <= number <= self.range[1]
        on_cursor = row == self.cursor_row and self.has_focus
        line_style = base
        if in_range:
            line_style += self.get_component_rich_style("code-view--range")
        if on_cursor:
            line_style += self.get_component_rich_style("code-view--cursor-line")
        gutter = self.gutter_width
        gutter_strip = Strip([
            Segment(f"{number:>{gutter - 3}} ", line_style + self.get_component_rich_style("code-view--gutter")),
            Segment("▌" if in_range else " ", line_style + self.get_component_rich_style("code-view--marker")),
            Segment(" ", line_style),
        ])
        text = doc.styled[row]
        if on_cursor:
            text = text.copy()
            if self.cursor_col >= len(text):
                text.append(" " * (self.cursor_col - len(text) + 1))
            text.stylize(self.get_component_rich_style("code-view--cursor"), self.cursor_col, self.cursor_col + 1)
        if self.find:
            text = self._mark_matches(text, doc.lines[row])
        segments = Segment.apply_style(text.render(self.app.console), style=line_style)
        code = Strip(list(segments)).crop_extend(scroll_x, scroll_x + max(width - gutter, 0), line_style)
        return Strip.join([gutter_strip, code]).crop(0, width)

    def _mark_matches(self, text: Text, line: str) -> Text:
        style = self.get_component_rich_style("code-view--match")
        text = text.copy()
        for column in match_columns(line, self.find):
            text.stylize(style, column, column + len(self.find))
        return text


def _folded(line: str, query: str) -> tuple[str, str]:
    return (line, query) if any(ch.isupper() for ch in query) else (line.lower(), query.lower())


def match_columns(line: str, query: str) -> list[int]:
    """Where query occurs in line (smart case: case-insensitive unless query has a capital)."""
    if not query:
        return []
    line, query = _folded(line, query)
    found, at = [], line.find(query)
    while at >= 0:
        found.append(at)
        at = line.find(query, at + max(len(query), 1))
    return found


def find_all(lines: list[str] | tuple[str, ...], query: str) -> list[tuple[int, int]]:
    return [(row, col) for row, line in enumerate(lines) for col in match_columns(line, query)]


def notes(described: FileDescription | None, unit: UnitRef | None) -> Text:
    """What the file and the unit at the cursor do: the model's summary (named with the model
    that wrote it), else the profile."""
    out = Text()
    if described is None:
        return out
    text = described.summary or described.profile.removeprefix(f"{described.path}: ")  # the title has it
    late = " (out of date)" if described.summary and described.stale else ""
    out.append("file ", style="bold")
    out.append(safe_line(text or described.role) + late)
    if described.summary:
        out.append(f" ({summary_label(described.summary_model)})", style="italic")
    if unit is not None and unit.kind != "file":
        found = next((u for u in described.units if u.qualname == unit.qualname and u.kind == unit.kind), None)
        if found is not None:
            about = found.summary or " · ".join(x for x in (found.role, found.signature) if x)
            late = " (out of date)" if found.summary and found.stale else ""
            out.append("\n")
            out.append(f"{safe_line(found.qualname)} ", style="bold")
            out.append(safe_line(about) + late)
            if found.summary:
                out.append(f" ({summary_label(found.summary_model)})", style="italic")
    return out


class ViewerPane(Vertical):
    """The viewer, its find bar and its title: `path · enclosing unit`."""

    ALLOW_MAXIMIZE = True  # the zoom key gives it the screen

    BINDINGS = [Binding("escape", "close_find", show=False)]
    DEFAULT_CSS = """
    ViewerPane > #notes { height: auto; max-height: 4; padding: 0 1; color: $text-muted;
                          background: $boost; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="notes", markup=False)
        yield CodeView(id="code")
        yield Input(placeholder="find in file… (Enter: next · Esc: close)", id="find", compact=True)

    NOTES_FROM = 14  # rows (inside the border) from which the notes have room above the code

    def on_mount(self) -> None:
        self.border_title = "code"
        self.find_bar.display = False
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    @property
    def find_bar(self) -> Input:
        return self.query_one("#find", Input)

    def open_find(self) -> None:
        bar = self.find_bar
        bar.display = True
        bar.focus()

    def action_close_find(self) -> None:
        if not self.find_bar.display:
            raise SkipAction()  # escape goes on to the screen (cancel an answer)
        self.find_bar.display = False
        view = self.query_one(CodeView)
        view.set_find("")
        view.focus()
        self._show_position()

    @on(Input.Changed, "#find")
    def _find_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.query_one(CodeView).set_find(event.value)
        self._show_position()

    @on(Input.Submitted, "#find")
    def _find_submitted(self, event: Input.Submitted) -> None:
        """Enter: the next match; the viewer takes the focus so n/N step on."""
        event.stop()
        view = self.query_one(CodeView)
        view.step_find(1)
        view.focus()

    def _theme_changed(self, theme: Theme) -> None:
        self.query_one(CodeView).set_dark(theme.dark)

    def on_code_view_cursor_moved(self, event: CodeView.CursorMoved) -> None:
        self._show_position()

    def on_resize(self, event: events.Resize) -> None:
        self._show_position()  # the notes fold or come back

    def _show_position(self) -> None:
        view = self.query_one(CodeView)
        doc = view.document
        if doc is None:
            return
        unit = view.unit_at_cursor()
        note = self.query_one("#notes", Static)
        # in a short pane the code gets every row: the notes fold away (zoom shows them)
        note.display = doc.described is not None and self.content_region.height >= self.NOTES_FROM
        note.update(notes(doc.described, unit))
        where = f" · {unit.qualname or unit.name}" if unit else ""
        self.border_title = escape(safe_line(f"{doc.path}{where}"))
        found = ""
        if view.find:
            here = (view.cursor_row, view.cursor_col)
            at = view.matches.index(here) + 1 if here in view.matches else 0
            found = f"{at}/{len(view.matches)} matches · " if at else f"{len(view.matches)} matches · "
        self.border_subtitle = found + f"{view.line}/{len(doc.lines)}" + (
            f" {doc.language}" if doc.language else "")
