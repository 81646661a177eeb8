"""The help screen: every key, grouped, as remapped by the user's `[tui] keys`."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from coderag_tui.tui.keys import KEYS, effective_keys


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,q,question_mark", "dismiss", "Close", id="help_close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body", can_focus=True) as body:
            body.border_title = "Keys (remap in config.toml: [tui.keys] id = \"keys\")"
            body.border_subtitle = "Esc closes"
            self.table = self._table()
            yield Static(self.table)

    def _display(self, keys: str) -> str:
        return " ".join(self.app.get_key_display(Binding(k.strip(), "")) for k in keys.split(","))

    def _table(self) -> Table:
        keymap: dict[str, str] = getattr(self.app, "keymap", {})
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        table.add_column(style="dim", no_wrap=True)
        group = ""
        for spec in KEYS:
            if spec.id.startswith("source_") and spec.id != "source_1":
                continue
            if spec.group != group:
                group = spec.group
                table.add_row(Text(group, "bold underline"), "", "")
            keys = self._display(effective_keys(spec, keymap))
            help_text = spec.help
            if spec.id == "source_1":
                keys, help_text = "1 … 9", "Open source N of the last answer in the viewer"
            table.add_row(keys, help_text, spec.id if spec.id != "source_1" else "source_1…9")
        table.add_row(Text("Moving", "bold underline"), "", "")
        for keys, what in (("tab shift+tab", "Next / previous pane"),
                           ("↑ ↓ ← → pgup pgdn", "Move in the tree, the chat or the code"),
                           ("enter", "Open the file (tree), send the question (chat)")):
            table.add_row(keys, what, "")
        return table
