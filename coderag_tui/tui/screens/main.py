"""The main screen: files (left), chat (centre), code viewer (right or below), status, footer.

It wires widgets to the service: every service call runs in a thread worker (indexing,
embedding, answering, look-ups, file loading) that posts messages back (see messages.py).
Its actions live in `chat_actions` and `code_actions`; navigation in `base`.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal
from textual.widgets import Footer
from textual.worker import get_current_worker

from coderag_tui.contract import Service, Watching
from coderag_tui.models import Progress, WatchEvent
from coderag_tui.textsafe import safe_line
from coderag_tui.tui import adapters
from coderag_tui.tui.history import Location
from coderag_tui.tui.keys import KEYS
from coderag_tui.tui.messages import (
    FilesListed,
    IndexFinished,
    IndexOpened,
    IndexProgress,
    ModelChanged,
    StatusChanged,
    SummaryProgress,
    WatchChanged,
    WatchNotice,
)
from coderag_tui.tui.screens.chat_actions import ChatActions
from coderag_tui.tui.screens.code_actions import CodeActions
from coderag_tui.tui.screens.confirm import ConfirmScreen
from coderag_tui.tui.screens.model_actions import ModelActions
from coderag_tui.tui.widgets.chat import SOURCES_SHOWN, ChatPane, TurnView
from coderag_tui.tui.widgets.file_tree import FilesPane
from coderag_tui.tui.widgets.status_bar import StatusBar
from coderag_tui.tui.widgets.viewer import ViewerPane

WIDE = 120  # columns from which the viewer sits right of the chat (below it otherwise)
ROOMY = 150  # columns from which the viewer on the right gets ~100 columns for the code


class _Throttle:
    """Forwards progress at most every `every` seconds (and every phase change and end)."""

    def __init__(self, post: Callable[[Progress], object], every: float = 0.1) -> None:
        self.post, self.every, self.last, self.phase = post, every, 0.0, ""

    def __call__(self, p: Progress) -> None:
        now = time.monotonic()
        if p.phase != self.phase or p.done >= p.total or now - self.last >= self.every:
            self.phase, self.last = p.phase, now
            self.post(p)


class MainScreen(ChatActions, CodeActions, ModelActions):
    BINDINGS = [Binding(k.keys, k.action, k.description, show=k.show, id=k.id, tooltip=k.help)
                for k in KEYS if k.scope == "main"]
    ALLOW_IN_MAXIMIZED_VIEW = "Footer, StatusBar"  # a zoomed pane keeps the keys and the status
    ESCAPE_TO_MINIMIZE = False  # Esc stops an answer; the zoom key gives the screen back

    def __init__(self, service: Service, *, auto_index: bool = True, watch: bool = True,
                 embed: bool = True) -> None:
        super().__init__(service)
        self.auto_index, self.watch_files, self.embed = auto_index, watch, embed
        self.index_running = False
        self.index_queue: set[str] | None = None  # paths to re-index after the running job
        self.index_queued_all = False
        self.index_errors: tuple[str, ...] = ()
        self.watch_handle: Watching | None = None
        self.watch_started = False
        self.listings = itertools.count()
        self.listed_version = -1
        self.excluded_shown: set[str] = set()  # default-exclude notices already shown
        self.viewer_place = ""  # "right" or "bottom" once F6 chose; "" follows the setting

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            yield FilesPane(self.repo_name, id="files")
            with Container(id="center"):
                yield ChatPane(self.repo_name, id="chat")
                yield ViewerPane(id="viewer")
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(ViewerPane).display = False
        self.apply_layout(self.app.size.width)
        self.chat.focus_question()
        self.open_index()

    @work(thread=True, exclusive=True, group="startup", exit_on_error=False)
    def open_index(self) -> None:
        """Open (create, migrate) the index from one thread before the others use it."""
        # the workers started next import the answering package from several threads at once,
        # and Python's import locks may then hand one of them a partly initialized module
        import coderag_tui.answering  # noqa: F401

        unsure = ""
        try:
            unsure = adapters.unsure_to_index(self.service) if self.auto_index else ""
            self.post_message(StatusChanged(self.service.status()))
        finally:
            self.post_message(IndexOpened(unsure))

    def on_index_opened(self, message: IndexOpened) -> None:
        self.list_files()
        if self.auto_index and message.unsure:
            self.app.push_screen(ConfirmScreen("Index this folder?", f"{message.unsure}: index every file "
                                               "in it? Nothing is indexed until you say yes.\n\n(ctrl+r "
                                               "indexes it later.)"), self._index_confirmed)
        elif self.auto_index:
            self.start_index()  # the watcher starts once this first run is done
        else:
            self._start_watch_once()
        self.load_model()
        self.discover_models()

    def _index_confirmed(self, yes: bool | None) -> None:
        if yes:
            self.start_index()
        else:
            self.notify("not indexed: ctrl+r indexes this folder")

    def _start_watch_once(self) -> None:
        if self.watch_started:
            return
        self.watch_started = True
        if self.watch_files:
            self.start_watch()
        else:
            self.query_one(StatusBar).set_watch("watch off")

    def on_unmount(self) -> None:
        # told to stop, not waited for: quitting never blocks on a batch or a summary (the
        # app's threads are abandoned when it has given the terminal back)
        if self.watch_handle is not None:
            with contextlib.suppress(Exception):
                self.watch_handle.stop(timeout=0.05)
        with contextlib.suppress(Exception):
            self.service.stop_summaries(timeout=0.05)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            return self.answering
        if action == "ask_again":  # only for an answer from the cache
            return self.last_cached() is not None
        return True

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
            self._post_files(summary.errors)
            self.post_message(StatusChanged(svc.status()))
            if self.embed and svc.settings.embed.enabled:
                worker = get_current_worker()
                svc.embed(progress=progress, should_stop=lambda: worker.is_cancelled)
                self.post_message(IndexFinished("embed"))
                self._post_files(summary.errors)
                self.post_message(StatusChanged(svc.status()))
            self._start_summaries()
        finally:
            self.post_message(IndexFinished("end"))

    def _start_summaries(self) -> None:
        """Summaries in the background once the index and its vectors are current (the
        service's thread yields the model to every answer); its progress comes as messages."""
        self.service.start_summaries(self._summary_progress)

    def _summary_progress(self, p: Progress) -> None:  # on the summarizer's thread
        self.post_message(SummaryProgress(p))

    @work(thread=True, exclusive=True, group="summaries", exit_on_error=False)
    def kick_summaries(self) -> None:
        self._start_summaries()

    def on_summary_progress(self, message: SummaryProgress) -> None:
        self.query_one(StatusBar).show_summaries(message.progress)

    @work(thread=True, exclusive=True, group="files", exit_on_error=False)
    def list_files(self) -> None:
        self._post_files(self.index_errors)

    def _post_files(self, errors: tuple[str, ...]) -> None:
        """List the files (in a worker thread); a listing started earlier never wins over a
        later one (the startup listing can end after the first index run's)."""
        version = next(self.listings)
        self.post_message(FilesListed(adapters.list_files(self.service, errors), version))

    @work(thread=True, exclusive=True, group="status", exit_on_error=False)
    def load_status(self) -> None:
        self.post_message(StatusChanged(self.service.status()))

    @work(thread=True, exclusive=True, group="model", exit_on_error=False)
    def load_model(self) -> None:
        self.post_message(ModelChanged(adapters.model_label(self.service)))

    @work(thread=True, exclusive=True, group="watch", exit_on_error=False)
    def start_watch(self) -> None:
        def notice(event: WatchEvent) -> None:
            self.post_message(WatchNotice(event))

        handle = adapters.start_watch(self.service, notice)
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
            for line in (e.line for e in summary.excluded):
                if line not in self.excluded_shown:
                    self.excluded_shown.add(line)
                    self.notify(safe_line(line), markup=False, timeout=12)
        if message.phase == "end":
            self.index_running = False
            self._start_watch_once()
            if self.index_queued_all or self.index_queue:
                only = None if self.index_queued_all else sorted(self.index_queue or ())
                self.index_queue, self.index_queued_all = None, False
                self.start_index(only)

    def on_files_listed(self, message: FilesListed) -> None:
        if message.version >= self.listed_version:
            self.listed_version = message.version
            self.query_one(FilesPane).set_files(message.files)

    def on_status_changed(self, message: StatusChanged) -> None:
        self.query_one(StatusBar).show_status(message.status)

    def on_model_changed(self, message: ModelChanged) -> None:
        self.query_one(StatusBar).set_model(message.label)

    def on_watch_changed(self, message: WatchChanged) -> None:
        self.query_one(StatusBar).set_watch(message.label)

    def on_watch_notice(self, message: WatchNotice) -> None:
        """The watcher re-indexes by itself: show what it does, refresh what it changed."""
        event, bar = message.event, self.query_one(StatusBar)
        phase, paths = event.phase, tuple(event.paths)
        if phase == "queued":
            bar.set_watch("changes seen…")
        elif phase == "indexing":
            bar.set_watch(f"re-indexing {len(paths)} files" if paths else "re-indexing")
        elif phase == "error":
            bar.set_watch("watch error")
            self.notify(event.message or "the watcher failed", severity="error")
        elif phase == "indexed":
            bar.set_watch("watching")
            self.list_files()
            self.load_status()
            self.kick_summaries()  # edited units are stale now: made again in the background
            doc = self.code.document
            if doc is not None and (not paths or doc.path in paths):
                self.load_document(Location.file(doc.path, self.code.line, *self.code.range), self._dark,
                                   plain_first=False)


    # ------------------------------------------------------------------ panes
    def on_resize(self, event: events.Resize) -> None:
        self.apply_layout(event.size.width)

    def apply_layout(self, width: int) -> None:
        """The viewer sits right of the chat from WIDE columns, below it under; `[tui] viewer`
        (right, bottom) or F6 fixes one place whatever the width."""
        place = self.viewer_place or str(self.service.settings.tui.viewer)
        if place not in ("right", "bottom"):
            place = "right" if width >= WIDE else "bottom"
        below = place == "bottom"
        self.query_one("#center").set_class(below, "-bottom")
        self.query_one("#body").set_class(not below and width >= ROOMY, "-roomy")

    @property
    def viewer_below(self) -> bool:
        return self.query_one("#center").has_class("-bottom")

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
        self.viewer_place = "right" if self.viewer_below else "bottom"
        self.apply_layout(self.size.width)
        self.set_viewer_visible(True)

    def action_more_sources(self) -> None:
        views = [v for v in self.chat.query(TurnView) if v.turn.sources]
        if not views:
            self.notify("no answer with sources yet", severity="warning")
        elif len(views[-1].turn.sources) <= SOURCES_SHOWN:
            self.notify("every source is shown")
        else:
            views[-1].toggle_sources()

    def action_find(self) -> None:
        self.set_viewer_visible(True)
        self.query_one(ViewerPane).open_find()

    def action_zoom(self) -> None:
        """The focused pane (files, chat or code) fills the screen; again: back to the layout."""
        if self.maximized is not None:
            self.minimize()
        elif self.focused is None or not self.maximize(self.focused):
            self.notify("move into a pane first (F2, F3, F4)", severity="warning")

    def action_toggle_files(self) -> None:
        pane = self.query_one(FilesPane)
        pane.display = not pane.display
        if not pane.display and self.focused is not None and pane in self.focused.ancestors:
            self.chat.focus_question()

    def action_reindex(self) -> None:
        self.start_index()
        self.notify("re-indexing…")


