"""The symbol palette: type a name, pick a definition (fuzzy, through service.symbols)."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from coderag_tui.models import UnitRef
from coderag_tui.textsafe import safe_line

DEBOUNCE_S = 0.12


def unit_label(u: UnitRef) -> Text:
    return Text.assemble((safe_line(u.qualname or u.name), "bold"), f"  {u.kind}  ",
                         (safe_line(u.location), "dim"))


class SymbolPalette(ModalScreen[UnitRef | None]):
    BINDINGS = [
        Binding("escape", "dismiss(None)", "Close", id="symbols_close"),
        Binding("down", "cursor(1)", show=False),
        Binding("up", "cursor(-1)", show=False),
    ]

    def __init__(self, initial: str = "") -> None:
        super().__init__()
        self.initial = initial
        self.units: list[UnitRef] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="symbols"):
            yield Input(self.initial, placeholder="symbol name (fuzzy)…", id="symbol-query", compact=True)
            yield OptionList(id="symbol-list")

    def on_mount(self) -> None:
        box = self.query_one("#symbols")
        box.border_title = "Go to symbol"
        box.border_subtitle = "↑↓ choose · Enter opens · Esc closes"
        if self.initial:
            self.lookup(self.initial)

    @on(Input.Changed, "#symbol-query")
    def _changed(self, event: Input.Changed) -> None:
        self.lookup(event.value)

    @work(thread=True, exclusive=True, group="symbols", exit_on_error=False)
    def lookup(self, query: str) -> None:
        import time

        from textual.worker import get_current_worker

        time.sleep(DEBOUNCE_S)  # typing fast cancels the earlier lookups before they query
        if get_current_worker().is_cancelled:
            return
        units = self.app.service.symbols(query, 40) if query.strip() else []  # type: ignore[attr-defined]
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._show, units, query.strip())

    def _show(self, units: list[UnitRef], query: str = "") -> None:
        self.units = units
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options([Option(unit_label(u), id=str(i)) for i, u in enumerate(units)])
        if units:
            options.highlighted = 0
        elif query:  # an empty list looks like a search still running
            options.add_option(Option(Text(f"no matches for {safe_line(query)}", "dim italic"), disabled=True))
        self.query_one("#symbols").border_subtitle = (
            f"{len(units)} found · Enter opens · Esc closes" if units else "no matches · Esc closes")

    def action_cursor(self, step: int) -> None:
        options = self.query_one(OptionList)
        if options.option_count:
            current = options.highlighted if options.highlighted is not None else -1
            options.highlighted = min(max(current + step, 0), options.option_count - 1)

    @on(Input.Submitted, "#symbol-query")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        options = self.query_one(OptionList)
        if options.highlighted is not None and self.units:
            self.dismiss(self.units[options.highlighted])

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.units[int(event.option.id or 0)])
