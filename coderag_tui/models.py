"""Frozen dataclasses shared by every layer and rendered by every interface (CLI, TUI, MCP).

The parser's own records (`ParsedFile`, `ParsedUnit`, ...) live in `parsing/records.py`.

Nothing here imports anything heavier than the standard library.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# The bundled default model: what it writes is a guess, never shown or passed on as fact.
TINY_MODEL = "SmolLM2-135M"


def by_tiny_model(model: str) -> bool:
    """The text was written by the bundled tiny model (a stored model name, `llama:SmolLM2-135M-...`)."""
    return TINY_MODEL in model


def summary_label(model: str) -> str:
    """Who wrote a summary, as every interface says it."""
    if by_tiny_model(model):
        return "a guess by the tiny default model (SmolLM2-135M), often wrong"
    return f"written by {model or 'a model'}, not checked"


def to_dict(obj: Any) -> Any:
    """A JSON-ready dict of any dataclass here (tuples become lists)."""
    return asdict(obj)


# --------------------------------------------------------------------------- store views


@dataclass(frozen=True)
class UnitRef:
    """A code unit as stored: enough to show it and to jump to `path:start_line`."""

    id: int
    path: str
    kind: str
    name: str
    qualname: str
    signature: str
    start_line: int
    end_line: int
    language: str = ""
    docstring: str = ""
    parent_id: int | None = None
    repo: str = ""  # the repository's name, where one server or workspace holds several

    @property
    def location(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


def exact_matches(units: Sequence[UnitRef], name: str) -> list[UnitRef]:
    """The units whose name, qualified name or its last parts are `name` (a call's `()` ignored)."""
    q = name.strip().rstrip("()")
    return [u for u in units if u.name == q or u.qualname == q or u.qualname.endswith("." + q)]


def denoted(units: Sequence[UnitRef], name: str) -> list[UnitRef]:
    """The units a name denotes among a symbol lookup's: the exact matches when there are any,
    else the best fuzzy one (what callers and callees are resolved from)."""
    return exact_matches(units, name) or list(units[:1])


@dataclass(frozen=True)
class EdgeRef:
    """An edge seen from one unit: the other end (resolved or just a name) and where."""

    kind: str  # CONTAINS, DEFINES, CALLS, IMPORTS, INHERITS, IMPLEMENTS, TESTS
    unit: UnitRef | None  # the other end, when resolved
    name: str  # the target name as written (always set)
    line: int  # where the edge occurs in the source unit's file
    source: UnitRef | None = None  # the unit the edge starts from
    how: str = ""  # for a resolved call: scope, import, same file, unique name or guess
    confidence: float = 1.0  # how sure the resolution is (store/confidence.py), 0-1


@dataclass(frozen=True)
class LanguageCount:
    language: str
    files: int
    units: int
    chunks: int


@dataclass(frozen=True)
class IndexCounts:
    """The counts every interface shows (`status`, the app's tree and status bar, MCP), defined
    once, in `store.read.counts`.

    files: files in the index (parsed; a file with syntax errors is still indexed);
    units: definitions (classes, functions, methods...), not counting the file units;
    chunks: chunks in the index; vectors: chunks that have a vector of the index's model;
    skipped: files left out on purpose (binary, generated, too large...);
    errors: files that could not be read or parsed.
    """

    files: int
    units: int
    chunks: int
    vectors: int
    skipped: int
    errors: int


@dataclass(frozen=True)
class Excluded:
    """Files a default exclude rule (`dist`, `vendor`, ...) kept out of the index."""

    rule: str  # the pattern of DEFAULT_EXCLUDES that matched
    folder: str  # the first folder it matched, a repository path
    files: int  # files under the folders it matched (a bounded count: see `capped`)
    folders: int = 1
    capped: bool = False  # the count stopped at its bound: there are more

    @property
    def line(self) -> str:
        where = f"{self.folder}/" + (f" and {self.folders - 1} more {self.rule}/" if self.folders > 1 else "")
        many = f"{self.files:,}+" if self.capped else f"{self.files:,}"
        return f"{many} {'file' if self.files == 1 and not self.capped else 'files'} in {where} excluded by default: set [index] default_excludes = false"


@dataclass(frozen=True)
class IndexStatus:
    repo_root: str
    db_path: str
    schema_version: int
    files: int
    units: int
    chunks: int
    edges: int
    vectors: int
    embed_model: str
    languages: tuple[LanguageCount, ...]
    skips: dict[str, int]  # reason -> count, "error" included
    errors: int  # files that failed to parse/read
    index_bytes: int
    last_update: float  # unix time, 0 when never
    commit: str = ""
    orphaned: tuple[EdgeRef, ...] = ()
    problems: tuple[tuple[str, str], ...] = ()  # (path, "error: why" or "partial: why"), the first 50
    excluded: tuple[Excluded, ...] = ()  # folders left out by a default rule, as of the last full walk
    secrets: tuple[str, ...] = ()  # files never read because they may hold keys (.env, id_rsa...), the first 50

    @property
    def skipped(self) -> int:
        """Files left out on purpose: every skip but the errors."""
        return sum(n for reason, n in self.skips.items() if reason != "error")

    @property
    def counts(self) -> IndexCounts:
        return IndexCounts(self.files, self.units, self.chunks, self.vectors, self.skipped, self.errors)


# --------------------------------------------------------------------------- progress


@dataclass(frozen=True)
class Progress:
    """A progress event from long work (indexing, embedding, cloning).

    `phase`: discover, parse, resolve, embed, clone, fetch, done.
    """

    phase: str
    done: int
    total: int
    message: str = ""
    units: int = 0
    chunks: int = 0
    rate: float = 0.0  # items per second
    eta_s: float = 0.0


@dataclass(frozen=True)
class IndexSummary:
    files_seen: int
    files_indexed: int  # parsed and written in this run
    files_unchanged: int
    files_deleted: int
    files_failed: int
    units: int
    chunks: int
    # edges in the graph after the run; None after a run limited to given paths (`only`: a
    # watcher's or the app's update), which does not count them (a count reads every edge)
    edges: int | None
    skips: dict[str, int]
    seconds: float
    errors: tuple[str, ...] = ()  # one line each: "path: what went wrong"
    recovered: str = ""  # a rebuild that replaced a damaged index file: what it did, in one line
    excluded: tuple[Excluded, ...] = ()  # folders left out by a default rule (a full walk only)


# --------------------------------------------------------------------------- retrieval


@dataclass(frozen=True)
class SearchFilters:
    language: str | None = None
    path_prefix: str | None = None
    kind: str | None = None


@dataclass(frozen=True)
class SearchHit:
    unit: UnitRef
    score: float
    reasons: tuple[str, ...]  # e.g. ("bm25#1", "vector#3", "symbol")
    chunk_start: int = 0  # the best matching chunk's lines, when a chunk matched
    chunk_end: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.unit.path,
            "start_line": self.unit.start_line,
            "end_line": self.unit.end_line,
            "name": self.unit.qualname or self.unit.name,
            "kind": self.unit.kind,
            "score": round(self.score, 6),
            "reasons": list(self.reasons),
            **({"repository": self.unit.repo} if self.unit.repo else {}),
        }


@dataclass(frozen=True)
class ContextPiece:
    """One piece of composed context, always citable as `path:start-end`."""

    path: str
    start_line: int
    end_line: int
    role: str  # primary, caller, callee, parent, test, similar, metadata, map
    title: str
    text: str
    tokens: int
    language: str = ""
    about: str = ""  # the unit's summary, shown above its code (all of it for a primary, its first sentence for a neighbour)
    about_by: str = ""  # the model that wrote `about`

    @property
    def citation(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


@dataclass(frozen=True)
class ComposedContext:
    query: str
    route: str  # symbol, structural, similarity, semantic
    pieces: tuple[ContextPiece, ...]
    tokens: int
    budget: int
    hits: tuple[SearchHit, ...] = ()
    kind: str = ""  # the question's kind (lookup, architecture, debugging, general)

    def render(self) -> str:
        """The context as text ready to paste into any LLM."""
        out: list[str] = []
        for p in self.pieces:
            fence = p.language or ""
            if p.role == "metadata":
                out.append(f"### {p.title} ({p.citation})\n{p.text}")
            else:
                about = f"Summary ({summary_label(p.about_by)}): {p.about}\n" if p.about else ""
                out.append(f"### {p.citation} [{p.role}] {p.title}\n{about}```{fence}\n{p.text}\n```")
        return "\n\n".join(out)


# --------------------------------------------------------------------------- answering


@dataclass(frozen=True)
class Source:
    """A source shown under an answer: a citable range that exists in the index."""

    number: int
    path: str
    start_line: int
    end_line: int
    title: str = ""
    cited: bool = False  # the model cited it (else it was only given as context)

    @property
    def citation(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


@dataclass(frozen=True)
class ToolCallInfo:
    """A function the model called while answering: what it asked and what it got back."""

    name: str
    arguments: str  # the arguments as JSON
    summary: str  # the result's first line (or the error), short
    ok: bool = True


@dataclass(frozen=True)
class AnswerUnit:
    """A code unit named in an answer's opening: what it is and where (`path:start-end`)."""

    kind: str
    qualname: str
    path: str
    start_line: int
    end_line: int
    line: str = ""  # its docstring's first sentence, else its signature
    call_line: int = 0  # in a call path: the line where this step calls the next one

    @property
    def citation(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


MATCHES_HEAD = "Best matches in the index, ranked:"
CALL_PATH_HEAD = "Call path in the index's call graph (each step calls the next):"


@dataclass(frozen=True)
class AnswerOpening:
    """What the index found for a question, rendered by coderag before the model's explanation:
    its best matches, ranked (a search's ranking, not a certainty that they answer it), and for
    a question about a flow a call path found in the graph's CALLS edges (each step calls the
    next at the line given). `model_note` labels the explanation that follows (e.g. that it
    comes from the tiny default model)."""

    units: tuple[AnswerUnit, ...] = ()
    call_path: tuple[AnswerUnit, ...] = ()
    flow: bool = False  # the question asks about a flow
    model_note: str = ""

    def render(self) -> str:
        """Plain text (Markdown-friendly), the same in every interface."""
        out: list[str] = []
        if self.units:
            out.append(MATCHES_HEAD)
            for u in self.units:
                tail = f": {u.line}" if u.line else ""
                out.append(f"- {u.kind} {u.qualname} ({u.citation}){tail}")
        if self.call_path:
            out.append("")
            out.append(CALL_PATH_HEAD)
            for i, u in enumerate(self.call_path, 1):
                at = f", calls the next at line {u.call_line}" if u.call_line else ""
                out.append(f"{i}. {u.qualname} ({u.citation}{at})")
        if self.model_note:
            out.append("")
            out.append(self.model_note)
        return "\n".join(out)


@dataclass(frozen=True)
class AnswerEvent:
    """Streamed while answering. kind: status, opening (before the model's text), token, tool,
    sources, done, error.

    `opening` is set on the `opening` event; `tool` on `tool` events; `cached` on every event of
    an answer that came from the answer cache (no model was asked). The `sources` event carries
    what was checked in the model's text: its citations (`invalid_citations`: not among the
    lines the model was shown, of which `absent_citations`: not lines of the repository at all)
    and its code names (`unknown_names`)."""

    kind: str
    text: str = ""
    sources: tuple[Source, ...] = ()
    invalid_citations: tuple[str, ...] = ()  # not verified: not among the lines the model was shown
    conversation_id: int = 0
    stats: dict[str, float] = field(default_factory=dict)
    tool: ToolCallInfo | None = None
    cached: bool = False
    opening: AnswerOpening | None = None
    absent_citations: tuple[str, ...] = ()  # of invalid_citations: no such lines in the repository
    unknown_names: tuple[str, ...] = ()  # code names and paths in the answer the index does not have
    model: str = ""  # on `done`: the model that wrote the answer


@dataclass(frozen=True)
class ChatMessage:
    role: str  # system, user, assistant
    content: str


@dataclass(frozen=True)
class ModelInfo:
    name: str
    provider: str
    path_or_url: str
    context_window: int
    size_bytes: int = 0
    found: bool = True
    note: str = ""
    choice: str = ""  # the name that selects it (`--model NAME`, the TUI's model picker)


# --------------------------------------------------------------------------- watching


@dataclass(frozen=True)
class WatchEvent:
    """What the file watcher is doing, one event per step of a batch (shown by the TUI and CLI).

    `phase`: queued (changes seen, waiting for the debounce), indexing (a batch started),
    indexed (the batch is searchable: structure, keywords and, when enabled, vectors), error.
    `paths` are the relative paths of the batch (empty for a full rescan). `orphaned` counts
    the calls in the index whose target was removed or renamed; `new_orphans` those this batch
    produced, listed first in `orphans`.
    """

    phase: str
    paths: tuple[str, ...] = ()
    batch: int = 0  # 1, 2, ... per batch; 0 for queued events not yet assigned
    summary: IndexSummary | None = None
    message: str = ""
    orphaned: int = 0
    new_orphans: int = 0
    orphans: tuple[EdgeRef, ...] = ()
    seconds: float = 0.0  # indexing (and embedding) time of the batch
    full: bool = False  # a full rescan (an ignore file changed, or the first index)


@dataclass(frozen=True)
class FileState:
    """A repository file and where it is in the index: pending, indexed, embedded, skipped, error.

    `reason`: why a skipped file was left out (binary, generated...); `error`: what went wrong
    with a file in the error state. A skip is never an error."""

    path: str
    language: str
    state: str
    error: str = ""
    reason: str = ""


# --------------------------------------------------------------------------- descriptions


@dataclass(frozen=True)
class UnitDescription:
    kind: str
    qualname: str
    line: int
    signature: str
    role: str
    summary: str = ""  # the model's, if one was made
    stale: bool = False  # the code or its context changed since
    summary_model: str = ""  # the model that wrote `summary`


@dataclass(frozen=True)
class FileDescription:
    """A file's profile (from the index) and its summaries (from the model, when made)."""

    path: str
    language: str
    lines: int
    role: str
    fan_in: int
    fan_out: int
    profile: str
    summary: str = ""
    stale: bool = False
    summary_model: str = ""
    imports: tuple[str, ...] = ()
    imported_by: tuple[str, ...] = ()
    units: tuple[UnitDescription, ...] = ()
    folder_summary: str = ""  # of the folder holding it
    folder_summary_model: str = ""
