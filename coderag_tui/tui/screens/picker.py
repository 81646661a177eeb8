"""A list to choose from (callers, callees, tests, definitions, conversations)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from coderag_tui.textsafe import safe_line

T = TypeVar("T")


class PickerScreen(ModalScreen[T | None], Generic[T]):
    """Enter returns the highlighted item's value; Esc returns None. Items whose value is None
    are shown but cannot be chosen (an unresolved callee, say)."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Close", id="picker_close")]

    def __init__(self, title: str, items: Sequence[tuple[str | Text, T | None]]) -> None:
        super().__init__()
        self.title_text = title
        self.items = list(items)

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            # labels and titles hold repository text: plain text, escaped, never markup
            options = [Option(Text(safe_line(label)) if isinstance(label, str) else label, id=str(i),
                              disabled=value is None)
                       for i, (label, value) in enumerate(self.items)]
            yield OptionList(*options, id="picker-list")

    def on_mount(self) -> None:
        box = self.query_one("#picker")
        box.border_title = escape(safe_line(self.title_text))
        box.border_subtitle = "Enter opens · Esc closes"
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        value: Any = self.items[int(event.option.id or 0)][1]
        if value is not None:
            self.dismiss(value)
