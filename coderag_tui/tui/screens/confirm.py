"""A yes/no question (y or Enter: yes; n or Esc: no)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [Binding("y,enter", "dismiss(True)", "Yes", id="confirm_yes"),
                Binding("n,escape", "dismiss(False)", "No", id="confirm_no")]

    def __init__(self, title: str, question: str) -> None:
        super().__init__()
        self.title_text, self.question = title, question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(Text(self.question), id="confirm-text")  # plain text: it holds a path

    def on_mount(self) -> None:
        box = self.query_one("#confirm")
        box.border_title = self.title_text
        box.border_subtitle = "y: yes · n: no"
