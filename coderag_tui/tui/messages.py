"""Messages that worker threads post to the main screen (widget messages live on their widget).

The pipeline: IndexProgress* -> IndexFinished -> FilesListed/StatusChanged; AnswerArrived* ->
AnswerEnded; DocumentLoaded -> DocumentStyled; WatchNotice (the watcher re-indexed) -> a refresh.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from coderag_tui.models import AnswerEvent, IndexStatus, IndexSummary, Progress, WatchEvent
from coderag_tui.tui.adapters import FileEntry
from coderag_tui.tui.chatlog import Turn
from coderag_tui.tui.document import Document
from coderag_tui.tui.history import Location


@dataclass
class IndexOpened(Message):
    """The index file is open (created and migrated): other threads may use it now. `unsure`:
    why the folder should not be indexed without asking ("" when it may be)."""

    unsure: str = ""


@dataclass
class IndexProgress(Message):
    progress: Progress


@dataclass
class SummaryProgress(Message):
    """From the background summarizer's thread: done/total, rate, ETA ("done" at the end)."""

    progress: Progress


@dataclass
class IndexFinished(Message):
    phase: str  # index or embed
    summary: IndexSummary | None = None


@dataclass
class FilesListed(Message):
    files: list[FileEntry]
    version: int = 0  # listings are numbered when they start


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
class WatchNotice(Message):
    """A step of the file watcher (a models.WatchEvent), from the watcher's thread."""

    event: WatchEvent


@dataclass
class AnswerArrived(Message):
    turn: int
    event: AnswerEvent


@dataclass
class AnswerEnded(Message):
    turn: int


@dataclass
class ConversationLoaded(Message):
    conversation_id: int
    turns: list[Turn]


@dataclass
class DocumentLoaded(Message):
    document: Document
    location: Location


@dataclass
class DocumentStyled(Message):
    """The colours and notes of a document shown plain (`plain`) until now."""

    plain: Document
    document: Document


@dataclass
class OpenLocation(Message):
    """Any widget asks the screen to open a place (recorded in the back/forward history)."""

    location: Location
