"""Look-ups from the code viewer: definitions, callers, callees, tests, the editor, symbols."""

from __future__ import annotations

import subprocess

from rich.text import Text
from textual import work
from textual.app import SuspendNotSupported

from coderag_tui.models import EdgeRef, UnitRef
from coderag_tui.textsafe import safe_line
from coderag_tui.tui.editor import editor_command
from coderag_tui.tui.history import Location
from coderag_tui.tui.screens.base import MainBase
from coderag_tui.tui.screens.picker import PickerScreen
from coderag_tui.tui.screens.symbols import SymbolPalette, unit_label


def edge_item(kind: str, e: EdgeRef) -> tuple[Text, Location | None]:
    """A picker row for an edge. Callers and tests: the calling unit at the call's line;
    callees: the called definition, or the call site when it is not in the index. The row is
    a Text of escaped repository text: a name is never read as markup nor as a control code."""
    name = safe_line(e.name)
    if kind == "callees":
        if e.unit is not None:
            u = e.unit
            return Text(f"{name} → {safe_line(u.qualname)}  {safe_line(u.path)}:{u.start_line}"), Location.file(
                u.path, u.start_line, u.start_line, u.start_line)
        site = e.source
        label = Text(f"{name}  (not in the index; called at line {e.line})")
        return label, Location.file(site.path, e.line, e.line, e.line) if site else None
    unit = e.unit
    if unit is None:
        return Text(f"{name}  line {e.line}"), None
    return (Text(f"{safe_line(unit.qualname or unit.name)}  {safe_line(unit.path)}:{e.line}"),
            Location.file(unit.path, e.line, e.line, e.line))


def unique_units(edges: list[EdgeRef]) -> list[EdgeRef]:
    """One row per calling unit (a test that calls the unit twice is one test), first call kept."""
    seen: set[int] = set()
    kept = []
    for e in edges:
        key = id(e) if e.unit is None else e.unit.id
        if key not in seen:
            seen.add(key)
            kept.append(e)
    return kept


class CodeActions(MainBase):
    def action_symbols(self) -> None:
        word = self.code.word_at_cursor() if self.code.has_focus else ""
        self.app.push_screen(SymbolPalette(word), self._picked_unit)

    def _picked_unit(self, unit: UnitRef | None) -> None:
        if unit is not None:
            self.open_location(Location.file(unit.path, unit.start_line, unit.start_line, unit.start_line))

    def _picked_location(self, location: Location | None) -> None:
        if location is not None:
            self.open_location(location)

    def action_definition(self) -> None:
        word = self.code.word_at_cursor()
        if not word:
            self.notify("put the viewer's cursor on a name first (F4 moves into the viewer)",
                        severity="warning")
            return
        self.find_definition(word)

    @work(thread=True, exclusive=True, group="lookup", exit_on_error=False)
    def find_definition(self, word: str) -> None:
        units = self.service.symbols(word, 20)
        exact = [u for u in units if u.name == word or u.qualname == word] or units[:10]
        self.app.call_from_thread(self._offer_units, word, exact)

    def _offer_units(self, word: str, units: list[UnitRef]) -> None:
        if not units:
            self.notify(f"no definition of {safe_line(word)} in the index", severity="warning", markup=False)
        elif len(units) == 1:
            self._picked_unit(units[0])
        else:
            items = [(unit_label(u), u) for u in units]
            self.app.push_screen(PickerScreen[UnitRef](f"Definitions of {word}", items), self._picked_unit)

    def action_callers(self) -> None:
        self._edges("callers")

    def action_callees(self) -> None:
        self._edges("callees")

    def action_tests(self) -> None:
        self._edges("tests")

    def _edges(self, kind: str) -> None:
        unit = self.code.unit_at_cursor()
        if unit is None:
            self.notify("move the viewer's cursor into a function or class first (F4)", severity="warning")
            return
        self.find_edges(kind, unit)

    @work(thread=True, exclusive=True, group="lookup", exit_on_error=False)
    def find_edges(self, kind: str, unit: UnitRef) -> None:
        name = unit.qualname or unit.name
        lookup = {"callers": self.service.callers, "callees": self.service.callees,
                  "tests": self.service.tests_for}[kind]
        edges = lookup(name)
        if kind == "tests":
            edges = unique_units(edges)
        items = [edge_item(kind, e) for e in edges]
        self.app.call_from_thread(self._offer_edges, f"{kind.capitalize()} of {name}", items)

    def _offer_edges(self, title: str, items: list[tuple[Text, Location | None]]) -> None:
        if not items:
            self.notify(f"{safe_line(title)}: none found", severity="warning", markup=False)
            return
        self.app.push_screen(PickerScreen[Location](f"{title} ({len(items)})", list(items)),
                             self._picked_location)

    def action_editor(self) -> None:


        doc = self.code.document
        if doc is None:
            self.notify("open a file first", severity="warning")
            return
        if self.service.root is None:
            self.notify("the files are not on this machine: nothing to edit here", severity="warning")
            return
        command = editor_command(self.service.root / doc.path, self.code.line)

        try:
            with self.app.suspend():
                subprocess.call(command)
        except SuspendNotSupported:
            self.notify("this terminal cannot hand over to an editor", severity="error")
            return
        except OSError as exc:
            self.notify(f"cannot run {command[0]}: {exc.strerror}", severity="error")
            return
        self.load_document(Location.file(doc.path, self.code.line, *self.code.range), self._dark, plain_first=False)


