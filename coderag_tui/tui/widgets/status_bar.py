"""One line at the bottom: index progress (a bar while work runs), the background summaries,
the model, the watcher."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, ProgressBar

from coderag_tui.models import IndexStatus, Progress
from coderag_tui.progress_text import background_summaries_text, progress_text

PHASES = {"discover": "scanning", "parse": "indexing", "resolve": "linking", "embed": "embedding",
          "summarize": "summarizing", "clone": "cloning", "fetch": "fetching"}


def status_line(st: IndexStatus) -> str:
    """The index's counts, as `status` and the tree count them."""
    n = st.counts
    return f"{n.files:,} files · {n.chunks:,} chunks · {n.vectors:,} vectors" + (
        f" · {n.errors:,} errors" if n.errors else "")


def progress_line(p: Progress) -> str:
    verb = PHASES.get(p.phase, p.phase)
    if not p.total:
        return f"{verb}…"
    if p.phase in ("embed", "summarize"):  # minutes of work: how fast, and how long still
        return f"{verb} {progress_text(p)}"  # the words and the clock the command line prints
    return f"{verb} {p.done:,}/{p.total:,} files" + (f" · {p.chunks:,} chunks" if p.chunks else "")


def summaries_line(p: Progress) -> str:
    """`summaries 120/800 units (background, low priority) · 3.1/min · eta 4:10` while they are
    made; "" once done."""
    if p.phase != "summarize" or not p.total:
        return ""
    return background_summaries_text(p)


class StatusBar(Horizontal):
    def compose(self) -> ComposeResult:
        yield Label("opening…", id="index-text")
        yield ProgressBar(id="index-bar", show_eta=False, show_percentage=False)
        yield Label("", id="summaries")
        yield Label("", id="model")
        yield Label("", id="watch")

    def on_mount(self) -> None:
        self.query_one(ProgressBar).display = False
        self.query_one("#summaries", Label).display = False

    def show_progress(self, p: Progress) -> None:
        bar = self.query_one(ProgressBar)
        running = p.phase != "done"
        bar.display = running and p.total > 0
        if running and p.total:
            bar.update(total=p.total, progress=p.done)
        self.query_one("#index-text", Label).update(progress_line(p) if running else "")

    def show_status(self, st: IndexStatus) -> None:
        self.query_one(ProgressBar).display = False
        self.query_one("#index-text", Label).update(status_line(st))

    def show_summaries(self, p: Progress) -> None:
        label, line = self.query_one("#summaries", Label), summaries_line(p)
        label.display = bool(line)  # no room is taken while none are made
        label.update(line)

    def set_model(self, label: str) -> None:
        # plain text: a model's name comes from a file or a server, never markup
        self.query_one("#model", Label).update(Text(label))

    def set_watch(self, label: str) -> None:
        self.query_one("#watch", Label).update(label)
