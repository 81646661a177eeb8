"""What every part of the main screen shares: its panes, and moving between places.

The main screen is split by concern: `base` (navigation and file loading), `code_actions`
(look-ups from the viewer), `chat_actions` (asking, answers, sources, copying), `main`
(layout, indexing, status).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on, work
from textual.screen import Screen
from textual.worker import Worker, get_current_worker

from coderag_tui.tui import document as documents
from coderag_tui.tui.history import History, Location
from coderag_tui.tui.messages import DocumentLoaded, DocumentStyled, OpenLocation
from coderag_tui.tui.notify import report_worker_errors
from coderag_tui.tui.widgets.chat import ChatPane
from coderag_tui.tui.widgets.viewer import CodeView, ViewerPane

if TYPE_CHECKING:
    from coderag_tui.contract import Service


class MainBase(Screen[None]):
    def __init__(self, service: Service) -> None:
        super().__init__()
        self.service = service
        self.repo_name = service.name
        self.history = History()

    @property
    def chat(self) -> ChatPane:
        return self.query_one(ChatPane)

    @property
    def code(self) -> CodeView:
        return self.query_one(CodeView)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        report_worker_errors(self, event)

    def set_viewer_visible(self, visible: bool) -> None:
        pane = self.query_one(ViewerPane)
        pane.display = visible
        if not visible and self.focused is not None and pane in self.focused.ancestors:
            self.chat.focus_transcript()

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
    def load_document(self, location: Location, dark: bool, plain_first: bool = True) -> None:
        """The file's lines at once, then its colours and notes (`plain_first` False: all at
        once, for a file already shown that changed)."""
        worker = get_current_worker()
        plain = documents.load_plain(self.service, location.path, dark)
        if plain_first and not worker.is_cancelled:
            self.post_message(DocumentLoaded(plain, location))
        doc = documents.complete(self.service, plain, dark)
        if worker.is_cancelled:
            return
        self.post_message(DocumentStyled(plain, doc) if plain_first else DocumentLoaded(doc, location))

    def on_document_loaded(self, message: DocumentLoaded) -> None:
        loc = message.location
        self.code.show(message.document, loc.line, loc.start, loc.end)

    def on_document_styled(self, message: DocumentStyled) -> None:
        self.code.restyle(message.plain, message.document)


