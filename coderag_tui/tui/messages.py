"""Messages that worker threads post to the main screen (widget messages live on their widget).

The pipeline: IndexProgress* -> IndexFinished -> FilesListed/StatusChanged; AnswerArrived* ->
AnswerEnded; DocumentLoaded; FilesChanged (the watcher) -> a partial re-index.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from coderag_tui.models import AnswerEvent, IndexStatus, IndexSummary, Progress
from coderag_tui.tui.adapters import FileEntry
from coderag_tui.tui.document import Document
from coderag_tui.tui.history import Location


@dataclass
class IndexProgress(Message):
    progress: Progress


@dataclass
class IndexFinished(Message):
    phase: str  # index or embed
    summary: IndexSummary | None = None


@dataclass
class FilesListed(Message):
    files: list[FileEntry]


@dataclass
class StatusChanged(Message):
    status: IndexStatus


@dataclass
class ModelChanged(Message):
    label: str


@dataclass
class WatchChanged(Message):
    label: str


@dataclass
class FilesChanged(Message):
    paths: list[str]


@dataclass
class AnswerArrived(Message):
    turn: int
    event: AnswerEvent


@dataclass
class AnswerEnded(Message):
    turn: int


@dataclass
class DocumentLoaded(Message):
    document: Document
    location: Location


@dataclass
class OpenLocation(Message):
    """Any widget asks the screen to open a place (recorded in the back/forward history)."""

    location: Location
