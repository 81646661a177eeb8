"""The main screen: files (left), chat (centre), code viewer (right or below), status, footer.

It wires widgets to the service: every service call runs in a thread worker (indexing,
embedding, answering, look-ups, file loading) that posts messages back (see messages.py).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal
from textual.screen import Screen
from textual.widgets import Footer
from textual.worker import Worker, get_current_worker

from coderag_tui.models import EdgeRef, Progress, UnitRef
from coderag_tui.tui import adapters, chatlog
from coderag_tui.tui import document as documents
from coderag_tui.tui.history import History, Location
from coderag_tui.tui.keys import KEYS
from coderag_tui.tui.messages import (
    AnswerArrived,
    AnswerEnded,
    DocumentLoaded,
    FilesChanged,
    FilesListed,
    IndexFinished,
    IndexProgress,
    ModelChanged,
    OpenLocation,
    StatusChanged,
    WatchChanged,
)
from coderag_tui.tui.notify import report_worker_errors
from coderag_tui.tui.screens.picker import PickerScreen
from coderag_tui.tui.screens.symbols import SymbolPalette, unit_label
from coderag_tui.tui.widgets.chat import ChatPane
from coderag_tui.tui.widgets.file_tree import FilesPane
from coderag_tui.tui.widgets.status_bar import StatusBar
from coderag_tui.tui.widgets.viewer import CodeView, ViewerPane

NARROW = 110  # columns below which the viewer starts below the chat


class _Throttle:
    """Forwards progress at most every `every` seconds (and every phase change and end)."""

    def __init__(self, post: Callable[[Progress], None], every: float = 0.1) -> None:
        self.post, self.every, self.last, self.phase = post, every, 0.0, ""

    def __call__(self, p: Progress) -> None:
        now = time.monotonic()
        if p.phase != self.phase or p.done >= p.total or now - self.last >= self.every:
            self.phase, self.last = p.phase, now
            self.post(p)


def edge_item(kind: str, e: EdgeRef) -> tuple[str, Location | None]:
    """A picker row for an edge. Callers and tests: the calling unit at the call's line;
    callees: the called definition, or the call site when it is not in the index."""
    if kind == "callees":
        if e.unit is not None:
            return f"{e.name} → {e.unit.qualname}  {e.unit.path}:{e.unit.start_line}", Location.file(
                e.unit.path, e.unit.start_line, e.unit.start_line, e.unit.start_line)
        site = e.source
        label = f"{e.name}  (not in the index; called at line {e.line})"
        return label, Location.file(site.path, e.line, e.line, e.line) if site else None
    unit = e.unit
    if unit is None:
        return f"{e.name}  line {e.line}", None
    return f"{unit.qualname or unit.name}  {unit.path}:{e.line}", Location.file(unit.path, e.line, e.line, e.line)


class MainScreen(Screen[None]):
    BINDINGS = [Binding(k.keys, k.action, k.description, show=k.show, id=k.id, tooltip=k.help)
                for k in KEYS if k.scope == "main"]

    def __init__(self, service: Any, *, auto_index: bool = True, watch: bool = True,
                 embed: bool = True) -> None:
        super().__init__()
        self.service = service
        self.auto_index, self.watch, self.embed = auto_index, watch, embed
        self.repo_name = Path(str(service.root)).name or str(service.root)
        self.history = History()
        self.conversation_id: int | None = None
        self.turn_no = 0
        self.answering = False
        self.source_index = -1
        self.index_running = False
        self.index_queue: set[str] | None = None  # paths to re-index after the running job
        self.index_queued_all = False
        self.index_errors: tuple[str, ...] = ()
        self.watch_handle: Any = None

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            yield FilesPane(self.repo_name, id="files")
            with Container(id="center"):
                yield ChatPane(self.repo_name, id="chat")
                yield ViewerPane(id="viewer")
        yield StatusBar(id="status")
        yield Footer()

    @property
    def chat(self) -> ChatPane:
        return self.query_one(ChatPane)

    @property
    def code(self) -> CodeView:
        return self.query_one(CodeView)

    def on_mount(self) -> None:
        position = self.service.settings.tui.viewer
        narrow = self.app.size.width < NARROW
        self.query_one("#center").set_class(position == "bottom" or narrow, "-bottom")
        self.query_one(ViewerPane).display = False
        self.list_files()
        if self.auto_index:
            self.start_index()
        else:
            self.load_status()
        self.load_model()
        if self.watch:
            self.start_watch()
        else:
            self.query_one(StatusBar).set_watch("watch off")
        self.chat.focus_question()

    def on_unmount(self) -> None:
        if self.watch_handle is not None:
            with contextlib.suppress(Exception):  # stopping must never block quitting
                self.watch_handle.stop()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        report_worker_errors(self, event)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            return self.answering
        return True

    def set_viewer_visible(self, visible: bool) -> None:
        pane = self.query_one(ViewerPane)
        pane.display = visible
        if not visible and self.code.has_focus:
            self.chat.focus_transcript()

    # ------------------------------------------------------------------ index, files, status
    def start_index(self, only: list[str] | None = None) -> None:
        if self.index_running:  # one index job at a time: queue the rest
            if only is None:
                self.index_queued_all = True
            else:
                self.index_queue = (self.index_queue or set()) | set(only)
            return
        self.index_running = True
        self.index_worker(only)

    @work(thread=True, exclusive=True, group="index", exit_on_error=False)
    def index_worker(self, only: list[str] | None) -> None:
        svc = self.service
        progress = _Throttle(lambda p: self.post_message(IndexProgress(p)))
        try:
            summary = svc.index(only=only, progress=progress)
            self.post_message(IndexFinished("index", summary))
            self.post_message(FilesListed(adapters.list_files(svc, summary.errors, finished=True)))
            self.post_message(StatusChanged(svc.status()))
            if self.embed and adapters.has(svc, "embed") and svc.settings.embed.enabled:
                svc.embed(progress=progress)
                self.post_message(IndexFinished("embed"))
                self.post_message(FilesListed(adapters.list_files(svc, summary.errors, finished=True)))
                self.post_message(StatusChanged(svc.status()))
        finally:
            self.post_message(IndexFinished("end"))

    @work(thread=True, exclusive=True, group="files", exit_on_error=False)
    def list_files(self) -> None:
        self.post_message(FilesListed(adapters.list_files(self.service, self.index_errors)))

    @work(thread=True, exclusive=True, group="status", exit_on_error=False)
    def load_status(self) -> None:
        self.post_message(StatusChanged(self.service.status()))

    @work(thread=True, exclusive=True, group="model", exit_on_error=False)
    def load_model(self) -> None:
        self.post_message(ModelChanged(adapters.model_label(self.service)))

    @work(thread=True, exclusive=True, group="watch", exit_on_error=False)
    def start_watch(self) -> None:
        handle = adapters.start_watch(self.service, lambda paths: self.post_message(FilesChanged(list(paths))))
        self.watch_handle = handle
        self.post_message(WatchChanged("watching" if handle is not None else "watch off"))

    def on_index_progress(self, message: IndexProgress) -> None:
        self.query_one(StatusBar).show_progress(message.progress)

    def on_index_finished(self, message: IndexFinished) -> None:
        summary = message.summary
        if summary is not None:
            self.index_errors = summary.errors
            if summary.files_failed:
                self.notify(f"{summary.files_failed} files could not be indexed (see the tree: ✗)",
                            severity="warning")
        if message.phase == "end":
            self.index_running = False
            if self.index_queued_all or self.index_queue:
                only = None if self.index_queued_all else sorted(self.index_queue or ())
                self.index_queue, self.index_queued_all = None, False
                self.start_index(only)

    def on_files_listed(self, message: FilesListed) -> None:
        self.query_one(FilesPane).set_files(message.files)

    def on_status_changed(self, message: StatusChanged) -> None:
        self.query_one(StatusBar).show_status(message.status)

    def on_model_changed(self, message: ModelChanged) -> None:
        self.query_one(StatusBar).set_model(message.label)

    def on_watch_changed(self, message: WatchChanged) -> None:
        self.query_one(StatusBar).set_watch(message.label)

    def on_files_changed(self, message: FilesChanged) -> None:
        self.start_index(message.paths)
        doc = self.code.document
        if doc is not None and doc.path in message.paths:
            self.load_document(Location.file(doc.path, self.code.line, *self.code.range), self._dark)

    # ------------------------------------------------------------------ navigation
    @property
    def _dark(self) -> bool:
        return bool(self.app.current_theme.dark)

    def current_location(self) -> Location:
        doc = self.code.document
        focused = self.focused
        in_chat = focused is not None and self.chat in focused.ancestors_with_self
        if doc is None or in_chat or not self.query_one(ViewerPane).display:
            return Location.chat()
        start, end = self.code.range
        return Location.file(doc.path, self.code.line, start, end)

    @on(OpenLocation)
    def _open_message(self, message: OpenLocation) -> None:
        self.open_location(message.location)

    def open_location(self, location: Location, record: bool = True) -> None:
        if record:
            self.history.visit(self.current_location())
        self.show_location(location)

    def show_location(self, location: Location) -> None:
        if location.kind == "chat":
            self.chat.focus_transcript()
            return
        self.set_viewer_visible(True)
        self.code.focus()
        doc = self.code.document
        if doc is not None and doc.path == location.path:
            self.code.goto(location.line, location.start, location.end)
        else:
            self.load_document(location, self._dark)

    @work(thread=True, exclusive=True, group="open", exit_on_error=False)
    def load_document(self, location: Location, dark: bool) -> None:
        doc = documents.load(self.service, location.path, dark)
        if not get_current_worker().is_cancelled:
            self.post_message(DocumentLoaded(doc, location))

    def on_document_loaded(self, message: DocumentLoaded) -> None:
        loc = message.location
        self.code.show(message.document, loc.line, loc.start, loc.end)

    def action_back(self) -> None:
        location = self.history.back(self.current_location())
        if location is None:
            self.notify("nothing to go back to")
        else:
            self.show_location(location)

    def action_forward(self) -> None:
        location = self.history.forward(self.current_location())
        if location is None:
            self.notify("nothing to go forward to")
        else:
            self.show_location(location)

    def action_source(self, number: int) -> None:
        sources = self.chat.last_sources()
        for i, s in enumerate(sources):
            if s.number == number:
                self._open_source(i)
                return
        self.notify(f"the last answer has no source {number}" if sources else "no answer with sources yet",
                    severity="warning")

    def _open_source(self, i: int) -> None:
        s = self.chat.last_sources()[i]
        self.source_index = i
        self.open_location(Location.file(s.path, s.start_line, s.start_line, s.end_line))

    def action_next_source(self) -> None:
        self._step_source(1)

    def action_prev_source(self) -> None:
        self._step_source(-1)

    def _step_source(self, step: int) -> None:
        sources = self.chat.last_sources()
        if not sources:
            self.notify("no answer with sources yet", severity="warning")
            return
        self._open_source((self.source_index + step) % len(sources))

    # ------------------------------------------------------------------ panes
    def action_focus_files(self) -> None:
        self.query_one(FilesPane).display = True
        self.query_one(FilesPane).focus_filter()

    def action_focus_question(self) -> None:
        self.chat.focus_question()

    def action_focus_viewer(self) -> None:
        self.set_viewer_visible(True)
        self.code.focus()

    def action_toggle_viewer(self) -> None:
        self.set_viewer_visible(not self.query_one(ViewerPane).display)

    def action_viewer_layout(self) -> None:
        self.query_one("#center").toggle_class("-bottom")
        self.set_viewer_visible(True)

    def action_toggle_files(self) -> None:
        pane = self.query_one(FilesPane)
        pane.display = not pane.display
        if not pane.display and self.focused is not None and pane in self.focused.ancestors:
            self.chat.focus_question()

    def action_symbols(self) -> None:
        word = self.code.word_at_cursor() if self.code.has_focus else ""
        self.app.push_screen(SymbolPalette(word), self._picked_unit)

    def _picked_unit(self, unit: UnitRef | None) -> None:
        if unit is not None:
            self.open_location(Location.file(unit.path, unit.start_line, unit.start_line, unit.start_line))

    def _picked_location(self, location: Location | None) -> None:
        if location is not None:
            self.open_location(location)

    def action_reindex(self) -> None:
        self.start_index()
        self.notify("re-indexing…")

    # ------------------------------------------------------------------ code look-ups
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
            self.notify(f"no definition of {word} in the index", severity="warning")
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
        items = [edge_item(kind, e) for e in lookup(name)]
        self.app.call_from_thread(self._offer_edges, f"{kind.capitalize()} of {name}", items)

    def _offer_edges(self, title: str, items: list[tuple[str, Location | None]]) -> None:
        if not items:
            self.notify(f"{title}: none found", severity="warning")
            return
        self.app.push_screen(PickerScreen[Location](f"{title} ({len(items)})", list(items)),
                             self._picked_location)

    def action_editor(self) -> None:
        from textual.app import SuspendNotSupported

        from coderag_tui.tui.editor import editor_command

        doc = self.code.document
        if doc is None:
            self.notify("open a file first", severity="warning")
            return
        command = editor_command(Path(self.service.root) / doc.path, self.code.line)
        import subprocess

        try:
            with self.app.suspend():
                subprocess.call(command)
        except SuspendNotSupported:
            self.notify("this terminal cannot hand over to an editor", severity="error")
            return
        except OSError as exc:
            self.notify(f"cannot run {command[0]}: {exc.strerror}", severity="error")
            return
        self.load_document(Location.file(doc.path, self.code.line, *self.code.range), self._dark)

    # ------------------------------------------------------------------ chat
    @on(ChatPane.Asked)
    async def _asked(self, message: ChatPane.Asked) -> None:
        if self.answering:
            self.notify("still answering: Esc cancels it", severity="warning")
            return
        self.turn_no += 1
        self.answering = True
        self.source_index = -1
        self.refresh_bindings()
        await self.chat.start_turn(message.question)
        self.chat.focus_transcript()
        self.ask_worker(self.turn_no, message.question, self.conversation_id)

    @work(thread=True, exclusive=True, group="ask", exit_on_error=False)
    def ask_worker(self, turn: int, question: str, conversation_id: int | None) -> None:
        worker = get_current_worker()
        events = adapters.ask(self.service, question, conversation_id)
        try:
            for event in events:
                if worker.is_cancelled:
                    break
                self.post_message(AnswerArrived(turn, event))
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
            self.post_message(AnswerEnded(turn))

    async def on_answer_arrived(self, message: AnswerArrived) -> None:
        view = self.chat.current
        if message.turn != self.turn_no or not self.answering or view is None:
            return  # a cancelled answer's late events
        event = message.event
        if event.kind == "token":
            view.set_status("")
            await view.append(event.text)
        elif event.kind == "status":
            view.set_status(event.text)
        elif event.kind == "sources":
            view.set_sources(event.sources, event.invalid_citations)
        elif event.kind == "done":
            if event.conversation_id:
                self.conversation_id = event.conversation_id
            await self._finish(view)
        elif event.kind == "error":
            self.notify(event.text, severity="error")
            await self._finish(view, error=event.text)

    async def on_answer_ended(self, message: AnswerEnded) -> None:
        view = self.chat.current
        if message.turn == self.turn_no and self.answering and view is not None:
            await self._finish(view)

    async def _finish(self, view: Any, error: str = "", cancelled: bool = False) -> None:
        self.answering = False
        self.refresh_bindings()
        await view.finish(error=error, cancelled=cancelled)

    async def action_cancel(self) -> None:
        view = self.chat.current
        if not self.answering or view is None:
            return
        self.workers.cancel_group(self, "ask")
        await self._finish(view, cancelled=True)
        self.notify("answer cancelled")

    async def action_new_conversation(self) -> None:
        if self.answering:
            await self.action_cancel()
        self.conversation_id = None
        await self.chat.clear()
        self.chat.focus_question()

    def action_conversations(self) -> None:
        self.list_conversations()

    @work(thread=True, exclusive=True, group="conversations", exit_on_error=False)
    def list_conversations(self) -> None:
        rows = adapters.conversations(self.service)
        self.app.call_from_thread(self._offer_conversations, rows)

    def _offer_conversations(self, rows: list[adapters.ConversationRow]) -> None:
        if not rows:
            self.notify("no earlier conversations" if adapters.has(self.service, "conversations")
                        else "conversations are not stored by this build", severity="warning")
            return
        items = [(f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(r.updated))}  {r.title}", r.id) for r in rows]
        self.app.push_screen(PickerScreen[int]("Previous conversations", list(items)), self._picked_conversation)

    def _picked_conversation(self, conversation_id: int | None) -> None:
        if conversation_id is not None:
            self.load_conversation(conversation_id)

    @work(thread=True, exclusive=True, group="conversations", exit_on_error=False)
    def load_conversation(self, conversation_id: int) -> None:
        turns = adapters.load_turns(self.service, conversation_id)
        self.app.call_from_thread(self._show_conversation, conversation_id, turns)

    async def _show_conversation(self, conversation_id: int, turns: list[chatlog.Turn]) -> None:
        if self.answering:
            await self.action_cancel()
        self.conversation_id = conversation_id
        await self.chat.load(turns)
        self.chat.focus_transcript()

    def action_export(self) -> None:
        turns = self.chat.turns
        if not turns:
            self.notify("nothing to export yet", severity="warning")
            return
        path = chatlog.export_path(Path.cwd(), turns)
        try:
            path.write_text(chatlog.to_markdown(turns, self.repo_name), encoding="utf-8")
        except OSError as exc:
            self.notify(f"cannot write {path.name}: {exc.strerror}", severity="error")
            return
        self.notify(f"exported to {path.name}")

    # ------------------------------------------------------------------ copy
    def action_copy_answer(self) -> None:
        turns = [t for t in self.chat.turns if t.answer]
        if not turns:
            self.notify("no answer to copy yet", severity="warning")
            return
        turn = turns[-1]
        text = turn.answer.strip()
        if turn.sources:
            text += "\n\nSources:\n" + "\n".join(chatlog.source_line(s) for s in turn.sources)
        self.app.copy_text(text, "the answer")  # type: ignore[attr-defined]

    def action_copy_code(self) -> None:
        in_chat = self.focused is not None and self.chat in self.focused.ancestors_with_self
        answers = [t.answer for t in self.chat.turns if t.answer]
        block = chatlog.last_code_block(answers[-1]) if answers else None
        if (in_chat or self.code.document is None) and block is not None:
            self.app.copy_text(block, "the answer's code block")  # type: ignore[attr-defined]
            return
        text, start, end = self.code.selected_text()
        if not text and block is None:
            self.notify("no code to copy: open a file or ask a question", severity="warning")
        elif not text:
            self.app.copy_text(block, "the answer's code block")  # type: ignore[attr-defined]
        else:
            doc = self.code.document
            where = f"{doc.path}:{start}-{end}" if doc else "the code"
            self.app.copy_text(text, where)  # type: ignore[attr-defined]
