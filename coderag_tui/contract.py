"""The service contract: what the terminal app, the CLI, the MCP server and the HTTP server call,
one signature per method, and what each returns. Three services implement it:

- `service.CodeRag`: one repository and its index (an index file, or a repository of a
  PostgreSQL database: the same code over either store);
- `workspace.local.WorkspaceService`: several repositories as one (results name their repository);
- `client.RemoteCodeRag`: a `coderag serve` server's repositories, over HTTP.

What a service cannot do at all is named in its `capabilities` (asked once by an interface,
never probed with `hasattr`); calling such a method raises `Unsupported`, one line that says
what to do instead. Every other failure is a `CoderagError` with one line (`.one_line()`).
mypy checks each service against this Protocol (`conforms` below).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from coderag_tui.errors import CoderagError

if TYPE_CHECKING:
    from coderag_tui.answering.answerer import StoredMessage
    from coderag_tui.answering.describe import FileDescription
    from coderag_tui.answering.discovery import ServedModel
    from coderag_tui.answering.summarize import SummarizeResult, SummaryEstimate
    from coderag_tui.answering.toolbox import CodeRagTools
    from coderag_tui.config import Settings
    from coderag_tui.indexing.embedder import EmbedSummary
    from coderag_tui.models import (
        AnswerEvent,
        ComposedContext,
        EdgeRef,
        FileState,
        IndexCounts,
        IndexStatus,
        IndexSummary,
        ModelInfo,
        Progress,
        SearchFilters,
        SearchHit,
        UnitRef,
        WatchEvent,
    )
    from coderag_tui.review.build import Review

ProgressFn = Callable[["Progress"], None]

# the optional parts of the contract (`Service.capabilities`)
INDEX = "index"  # builds its index from files on this machine (else a server's, or none at all)
WATCH = "watch"  # follows edits to the files on this machine
REVIEW = "review"  # reviews a change against the repository's git history
SUMMARIES = "summaries"  # writes model summaries, and the background summarizer runs here
MODELS = "models"  # picks among this machine's models (`select_model`)
CAPABILITIES = frozenset({INDEX, WATCH, REVIEW, SUMMARIES, MODELS})


class Unsupported(CoderagError):
    """A method of the contract this service does not do (see `capabilities`)."""


class Watching(Protocol):
    """A started watcher: `stop()` ends it (waiting up to `timeout` s for a batch under way)."""

    @property
    def running(self) -> bool:
        """Whether it still follows the files (False once stopped, or when it failed)."""
        ...

    def stop(self, timeout: float = 30.0) -> None: ...


class Service(Protocol):
    """One or several repositories and their indexes, as every interface sees them."""

    display_name: str  # what messages call it (its folder, its URL redacted, "flask on http://...")
    settings: Settings
    long_lived: bool  # set by an interface that keeps running (background work starts only then)
    vectors_in_memory: bool  # keep a copy of the vectors in memory (long-lived processes)
    selected_model: str | None  # the model that answers by default (None: the configured one)

    @property
    def capabilities(self) -> frozenset[str]:
        """The optional parts of the contract this service does (CAPABILITIES)."""
        ...

    @property
    def name(self) -> str:
        """A short name for a title ("flask", "3 repositories")."""
        ...

    @property
    def root(self) -> Path | None:
        """The repository's folder on this machine (several: their common folder; None when the
        files are elsewhere: a server's, or a database's repository read by name)."""
        ...

    def close(self) -> None: ...

    def repositories(self) -> Sequence[tuple[str, Service]]:
        """Each repository as a service of its own, by name (a service of one: itself)."""
        ...

    # ------------------------------------------------------------------ the index
    def has_index(self) -> bool:
        """Whether an index was ever built (asking creates nothing)."""
        ...

    def status(self) -> IndexStatus:
        """What the index holds (several repositories: the first one's, their counts added)."""
        ...

    def statuses(self) -> list[tuple[str, IndexStatus]]:
        """Each repository's status, by name ("" for a service of one unnamed repository)."""
        ...

    def counts(self) -> IndexCounts: ...

    def index(self, *, rebuild: bool = False, only: Sequence[str] | None = None,
              progress: ProgressFn | None = None) -> IndexSummary:
        """Bring the structural index up to date (`only`: just these paths). Raises
        Unsupported without INDEX."""
        ...

    def embed(self, progress: ProgressFn | None = None,
              should_stop: Callable[[], bool] | None = None) -> EmbedSummary | None:
        """Add the vectors the index lacks; None when vectors are off."""
        ...

    def vectors_pending(self) -> bool: ...

    def files(self) -> list[FileState]:
        """Every file of the repository with its index state."""
        ...

    def watch(self, on_event: Callable[[WatchEvent], None] | None = None, *, initial_index: bool = False,
              debounce_ms: int | None = None, progress: ProgressFn | None = None, embed: bool = True) -> Watching:
        """Follow the files' edits, re-indexing what changes (events from the watcher's thread;
        `debounce_ms`: the quiet time a burst of edits waits, default [watch] debounce_ms).
        Raises Unsupported without WATCH."""
        ...

    # ------------------------------------------------------------------ retrieval
    def check_filters(self, filters: SearchFilters | None) -> SearchFilters | None:
        """Filters spelt as the index spells them; FilterError (one line) for an unknown kind,
        language or path."""
        ...

    def search(self, query: str, k: int | None = None, filters: SearchFilters | None = None) -> list[SearchHit]: ...

    def search_files(self, query: str, k: int | None = None,
                     filters: SearchFilters | None = None) -> list[SearchHit]:
        """Files ranked by their matching units (each hit carries the file's unit)."""
        ...

    def similar(self, unit_id: int, k: int | None = None) -> list[SearchHit]:
        """Code like the unit's (a unit id is one repository's: over several repositories this
        raises Unsupported)."""
        ...

    def context(self, query: str, max_tokens: int | None = None, count_tokens: Callable[[str], int] | None = None,
                strategy: str = "relevance") -> ComposedContext: ...

    def repo_map(self, max_tokens: int | None = None, query: str | None = None) -> str: ...

    def symbols(self, name: str, limit: int = 20) -> list[UnitRef]: ...

    def callers(self, name: str, limit: int = 200) -> list[EdgeRef]: ...

    def callees(self, name: str, limit: int = 200) -> list[EdgeRef]: ...

    def tests_for(self, name: str) -> list[EdgeRef]: ...

    def outline(self, path: str) -> list[UnitRef]: ...

    def unit(self, unit_id: int) -> UnitRef | None:
        """The unit with this id, None when there is none (see `similar` for several)."""
        ...

    def units_at(self, path: str, line: int) -> list[UnitRef]: ...

    def read_lines(self, path: str, start: int = 1, end: int | None = None) -> list[str]:
        """Lines of a repository file (1-based, inclusive)."""
        ...

    # ------------------------------------------------------------------ answers
    def ask(self, question: str, conversation_id: int | None = None, *, model: str | None = None,
            should_stop: Callable[[], bool] | None = None, attachment: str = "",
            fresh: bool = False) -> Iterator[AnswerEvent]:
        """A cited answer as events (status, opening, token, tool, sources, done, error); never
        raises: an error is an event."""
        ...

    def conversations(self, limit: int = 100) -> list[tuple[int, str, float, int, str]]:
        """Stored conversations, newest first: (id, title, updated, questions asked, the last one)."""
        ...

    def load_conversation(self, conversation_id: int) -> list[StoredMessage]: ...

    def model_info(self, model: str | None = None) -> ModelInfo: ...

    def list_models(self, model: str | None = None, *, discover: bool = True) -> list[ModelInfo]: ...

    def select_model(self, name: str | None) -> ModelInfo:
        """Answer with `name` from now on. Raises Unsupported without MODELS."""
        ...

    def served_models(self, refresh: bool = False) -> list[ServedModel]: ...

    # ------------------------------------------------------------------ review and descriptions
    def review(self, base: str = "HEAD", *, diff_text: str | None = None, diff_label: str = "",
               max_tokens: int | None = None, update_index: bool = True, similar: int = 3,
               count_tokens: Callable[[str], int] | None = None) -> Review:
        """Review context for a change. Raises Unsupported without REVIEW."""
        ...

    def summary_estimate(self, paths: Sequence[str] | None = None, *, everything: bool = False,
                         model: str | None = None) -> SummaryEstimate:
        """What `summarize` would take (its model, whether it is local, requests and tokens),
        before anything is asked of a model."""
        ...

    def summarize(self, paths: Sequence[str] | None = None, *, everything: bool = False, model: str | None = None,
                  progress: ProgressFn | None = None,
                  should_stop: Callable[[], bool] | None = None) -> SummarizeResult:
        """Make the summaries that are missing or out of date. Raises Unsupported without
        SUMMARIES."""
        ...

    def start_summaries(self, progress: ProgressFn | None = None) -> bool:
        """Start the background summarizer (a long-lived process, when configured); whether it runs."""
        ...

    def stop_summaries(self, timeout: float = 5.0) -> None:
        """Tell the background summarizer to stop (waiting up to `timeout` s); none running: nothing."""
        ...

    def descriptions(self, paths: Sequence[str] | None = None) -> list[FileDescription]:
        """Every file's profile and summaries (`coderag export`)."""
        ...

    def tools(self) -> CodeRagTools:
        """The index's tools over this service, as the MCP server serves them (each answers
        text citing `path:start-end`)."""
        ...


if TYPE_CHECKING:
    from coderag_tui.client import RemoteCodeRag
    from coderag_tui.service import CodeRag
    from coderag_tui.workspace.local import WorkspaceService

    def conforms(local: CodeRag, remote: RemoteCodeRag, several: WorkspaceService) -> list[Service]:
        """(Never called: mypy checks here that each service implements the contract.)"""
        return [local, remote, several]
