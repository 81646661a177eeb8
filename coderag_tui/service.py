"""The one facade every interface calls: the CLI, the TUI, the MCP and HTTP servers.

`CodeRag` owns the repository root, the settings and the index file, and returns the frozen
dataclasses of `coderag_tui.models`. Each thread gets its own SQLite connection. The index,
retrieval and the models live in `service_core.ServiceCore`, its base; the flow of one
question in `service_ask`; this module opens repositories (folders and git URLs) and adds
conversations, watching, review and summaries.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from coderag_tui.config import Settings, load_settings
from coderag_tui.errors import RepoError
from coderag_tui.paths import find_repo_root, indexed_root
from coderag_tui.service_core import ServiceCore
from coderag_tui.store import read
from coderag_tui.store.backend import StoreTarget

if TYPE_CHECKING:
    from coderag_tui.indexing.indexer import ProgressFn
    from coderag_tui.indexing.watcher import Watcher
    from coderag_tui.models import IndexSummary, WatchEvent


class CodeRag(ServiceCore):
    """A repository and its index: the one facade every interface calls."""

    @classmethod
    def open(
        cls,
        repo: str | Path | None = None,
        *,
        config: str | Path | None = None,
        db_path: str | Path | None = None,
        settings: Settings | None = None,
        store: str | None = None,
    ) -> CodeRag:
        """Open a repository given as a folder (or None: the one containing the cwd). A folder
        inside an indexed repository opens that repository (its index), as git would. `store`: a
        PostgreSQL URL whose database holds (or will hold) its index, found by the folder."""
        if repo is None:
            root = find_repo_root(Path.cwd())
        else:
            path = Path(repo).expanduser()
            if not path.exists():
                from coderag_tui.sources.urls import redact

                raise RepoError(f"no such folder: {redact(str(repo))}", "give a path to a repository or a git URL")
            if not path.is_dir():
                raise RepoError(f"not a folder: {repo}")
            root = path.resolve()
        if db_path is None:  # (where indexes live is the user's setting, not a repository's)
            root = indexed_root(root, settings or load_settings(None, config, notify=None))
        if settings is None:
            settings = load_settings(root, config)
        target = None
        if store:
            if db_path:
                raise RepoError("--db names an index file; --store a database", "give one of them")
            target = StoreTarget(url=store, source=str(root))
        return cls(root, settings, Path(db_path) if db_path else None, store=target)

    @classmethod
    def named(cls, store: str, name: str, *, config: str | Path | None = None) -> CodeRag:
        """The repository named `name` of the database at `store`: searched, read and answered
        from the database alone (its files need not be on this machine; nothing to index)."""
        service = cls(None, load_settings(None, config), store=StoreTarget(url=store, repo=name))
        service.display_name = name
        return service

    @classmethod
    def open_any(
        cls,
        target: str | Path | None = None,
        *,
        config: str | Path | None = None,
        db_path: str | Path | None = None,
        branch: str | None = None,
        rev: str | None = None,
        progress: ProgressFn | None = None,
        store: str | None = None,
    ) -> CodeRag:
        """Open a folder, or a git URL: cloned (shallow) into the cache on first use, fetched after.
        `store`: a PostgreSQL URL whose database holds the index (the repository indexed from
        that folder or URL, or a repository of the database given by its name).

        A cloned repository's own `.coderag.toml` is not read: it is untrusted input.
        """
        from coderag_tui.sources.urls import is_remote, parse_remote, redact

        text = str(target) if target is not None else ""
        if "://" in text or re.match(r"^[\w.-]+@[\w.-]+:", text):
            parse_remote(text)  # a URL that is not a usable git URL: one clear (redacted) line
        if target is None or not is_remote(text):
            if branch or rev:
                raise RepoError("--branch and --rev apply to repository URLs", "give a git URL")
            if store and text and not Path(text).expanduser().exists() and "/" not in text:
                return cls.named(store, text, config=config)
            return cls.open(target, config=config, db_path=db_path, store=store)
        from coderag_tui.sources.clone import ensure_clone

        settings = load_settings(None, config)
        result = ensure_clone(str(target), branch=branch, rev=rev, settings=settings, progress=progress)
        where = StoreTarget(url=store, source=redact(str(target))) if store else None
        service = cls(result.path, settings, Path(db_path) if db_path else None, store=where)
        service.remote = result
        service.display_name = redact(str(target))
        service._origin = (str(target), branch, rev)
        return service

    def repositories(self) -> list[tuple[str, CodeRag]]:
        """[(its name, itself)]: one repository."""
        return [(self.name, self)]

    # the URL (as given: it may hold credentials, never shown), branch and rev of a clone
    _origin: tuple[str, str | None, str | None] | None = None

    def update(self, progress: ProgressFn | None = None) -> IndexSummary:
        """Bring the index up to date with the repository: a clone is fetched first (only the
        files that changed between the two commits are read again), a folder is indexed
        incrementally."""
        if self._origin is not None:
            from coderag_tui.sources.clone import ensure_clone

            url, branch, rev = self._origin
            self.remote = ensure_clone(url, branch=branch, rev=rev, settings=self.settings)
        return self.index(progress=progress)

    # ------------------------------------------------------------------ asking
    def ask(
        self,
        question: str,
        conversation_id: int | None = None,
        *,
        model: str | None = None,
        should_stop: Callable[[], bool] | None = None,
        attachment: str = "",
        fresh: bool = False,
        owner: str | None = None,
    ) -> Iterator[_AnswerEvent]:
        """Retrieve the code that answers `question`, then stream a cited answer.

        Yields status / opening (the units that answer it and, for a flow, the call path,
        before the model runs) / token / tool / sources / done / error events; never raises
        (errors are events).
        A follow-up question is retrieved together with the previous one (and answered with the
        conversation as history) only when it continues it; a new topic starts fresh.
        `should_stop` ends the answer early: it keeps what was written and its sources.
        Background embedding waits while an answer is generated (the cores are the model's).
        `attachment`: text the user gave with the question (a log, a traceback): shown to the
        model with it, and its last lines help retrieval.
        A question answered before (or a near-identical one) whose cited code is unchanged gets
        the stored answer at once (events marked `cached`); `fresh=True` asks the model again.
        `owner`: who asks, on a server (a digest of their token): a conversation continues only
        for the owner that started it ("no conversation N" for anyone else), and a new one is
        theirs; None (this machine) reaches every conversation.
        """
        from coderag_tui.service_ask import ask

        return ask(self, question, conversation_id, model=model, should_stop=should_stop,
                   attachment=attachment, fresh=fresh, owner=owner)

    def conversation_owner(self, conversation_id: int) -> str | None:
        """Who started the conversation (a digest of a server token; "" on this machine), or
        None when there is no such conversation."""
        from coderag_tui.store import conversations

        return conversations.owner_of(self.db, conversation_id)

    def conversations(self, limit: int = 100, *, owner: str | None = None) -> list[tuple[int, str, float, int, str]]:
        """Stored conversations, newest first: (id, title, updated, questions asked, the last
        question), so that a list tells apart two that began with the same question. `owner` (a
        server's caller): only the conversations they started."""
        return read.conversation_list(self.db, limit, owner)

    def load_conversation(self, conversation_id: int) -> list[_StoredMessage]:
        """A stored conversation's messages, each answer with its sources and how it ended."""
        from coderag_tui.answering.answerer import load_messages

        return load_messages(self.db, conversation_id)

    if TYPE_CHECKING:
        from coderag_tui.answering.answerer import StoredMessage as _StoredMessage
        from coderag_tui.models import AnswerEvent as _AnswerEvent


    # ------------------------------------------------------------------ remote & watch
    def watch(
        self,
        on_event: Callable[[WatchEvent], None] | None = None,
        *,
        initial_index: bool = False,
        debounce_ms: int | None = None,
        progress: ProgressFn | None = None,
        embed: bool = True,
    ) -> Watcher:
        """Start watching the repository and keep the index current; returns the started
        Watcher (call `.stop()`). `on_event` is called from the watcher's thread with a
        WatchEvent per step. `initial_index`: first bring the whole index up to date (in that
        thread, so no change made meanwhile is missed; `progress` shows that run). `embed`:
        refresh the vectors of changed chunks too (when [embed] enabled)."""
        from coderag_tui.indexing.watcher import Watcher

        return Watcher(self, on_event, debounce_ms=debounce_ms, initial_index=initial_index,
                       progress=progress, embed=embed).start()

    # ------------------------------------------------------------------ review
    def review(
        self,
        base: str = "HEAD",
        *,
        diff_text: str | None = None,
        diff_label: str = "",
        max_tokens: int | None = None,
        update_index: bool = True,
        similar: int = 3,
        count_tokens: Callable[[str], int] | None = None,
    ) -> _Review:
        """Review context for the working tree against `base` (or for a unified diff): each
        changed function/class classified (added, modified, deleted, renamed,
        signature-changed) with its callers, callees, tests, orphaned callers and call sites
        that no longer fit, packed into max_tokens (default 8000). `.markdown()`, `.to_json()`."""
        from coderag_tui.review import DEFAULT_BUDGET, ReviewOptions, build_review

        options = ReviewOptions(base=base, diff_text=diff_text, diff_label=diff_label,
                                max_tokens=max_tokens or DEFAULT_BUDGET, update_index=update_index,
                                similar=similar, count_tokens=count_tokens)
        return build_review(self, options)

    if TYPE_CHECKING:
        from coderag_tui.review.build import Review as _Review

    # ------------------------------------------------------------------ summaries
    # Profiles are written by the indexer; model summaries are made here, on demand or on a
    # background thread (with its own connection), one commit per summary.
    def summarizer(self, model: str | None = None, *, configured: bool = False) -> _Summarizer:
        """A Summarizer on this thread's connection with `model` (else the selected model;
        `configured`: the configured one, whatever the app's picker selected). The tiny default
        model writes none (ModelError): measured, its summaries were wrong and made retrieval
        worse (docs/summaries.md)."""
        from coderag_tui.answering.summarize import Summarizer
        from coderag_tui.errors import NoSummariesError
        from coderag_tui.models import by_tiny_model

        provider = self._provider(None) if configured else self.llm(model)
        info = provider.info()
        name = f"{info.provider}:{info.name}"
        if by_tiny_model(name) or str(getattr(provider, "tiny_note", "") or ""):
            raise NoSummariesError("the tiny default model (SmolLM2-135M) writes no summaries: its summaries were "
                             "mostly wrong and made search worse; files and units keep their profiles",
                             "for summaries set [llm] model = /path/to/model.gguf or a remote model, or pass --model")

        def read_code(path: str, start: int, end: int) -> str:
            return "\n".join(self.read_lines(path, start, end))

        return Summarizer(self.db, provider, name, read_code, self.settings.summaries,
                          local=info.provider == "llama")

    def summary_estimate(self, paths: Sequence[str] | None = None, *, everything: bool = False,
                         model: str | None = None) -> _SummaryEstimate:
        """What `summarize` would take, before it runs: the model, whether it is local, how many
        requests and tokens (`coderag summarize --estimate`, and its question before a remote
        model is paid)."""
        from coderag_tui.answering.summarize import SummaryEstimate
        from coderag_tui.answering.summary_due import due

        summarizer = self.summarizer(model)
        # the summaries the run makes: missing or out of date, and those above them (one count
        # with the run's progress and the app's background summaries)
        targets = due(summarizer, summarizer.plan(paths, everything=everything))
        return SummaryEstimate(summarizer.model, summarizer.local, summarizer.estimate(targets))

    def summarize(self, paths: Sequence[str] | None = None, *, everything: bool = False,
                  model: str | None = None, progress: ProgressFn | None = None,
                  should_stop: Callable[[], bool] | None = None) -> _SummarizeResult:
        """Make the summaries that are missing or out of date, bottom up (within the budget
        with a local model unless `everything`). Search works meanwhile; an answer takes the
        model between two summaries (or cuts one short, which is made again after it)."""
        from coderag_tui.answering.summary_due import due

        summarizer = self.summarizer(model)
        plan = summarizer.plan(paths, everything=everything)
        targets = due(summarizer, plan)  # its progress counts what it makes, as --estimate does
        result = summarizer.run(targets, progress, should_stop, gate=self.model_gate)
        result = dataclasses.replace(result, planned=len(plan), current=result.current + len(plan) - len(targets))
        self._embed_summaries(should_stop)
        return result

    def _embed_summaries(self, should_stop: Callable[[], bool] | None = None) -> None:
        """New summaries change their chunks' embedding documents: embed those (an index with
        vectors only; search uses the vectors they replace until then)."""
        if self.settings.embed.enabled and self.db.vec_ready() and self.vectors_pending():
            self.embed(should_stop=should_stop)

    def summarize_in_background(self, paths: Sequence[str] | None = None, *, model: str | None = None,
                                progress: ProgressFn | None = None,
                                should_stop: Callable[[], bool] | None = None) -> threading.Thread:
        """`summarize` on a daemon thread; its result (or error) lands in `thread.result`."""

        def work() -> None:
            from coderag_tui.errors import CoderagError

            try:
                thread.result = self.summarize(paths, model=model, progress=progress,  # type: ignore[attr-defined]
                                               should_stop=should_stop)
            except CoderagError as exc:
                thread.result = exc  # type: ignore[attr-defined]

        thread = threading.Thread(target=work, name="coderag-summarize", daemon=True)
        thread.start()
        return thread

    def summarize_units(self, unit_ids: Sequence[int], model: str | None = None) -> int:
        """Summaries of these units now (units retrieved for a question); returns how many were made."""
        from coderag_tui.answering.summarize import LEVELS
        from coderag_tui.store.descriptions import units_by_id

        summarizer = self.summarizer(model)
        units = sorted(units_by_id(self.db, list(unit_ids)).values(), key=lambda u: LEVELS.get(u.kind, 0))
        made = sum(summarizer.summarize_gated(summarizer.target_of(u), self.model_gate) is not None
                   for u in units if u.kind in LEVELS)
        if made:
            self._embed_summaries()
        return made

    @property
    def model_gate(self) -> _ModelGate:
        """One model user at a time (llama.cpp is not re-entrant), answers before summaries."""
        from coderag_tui.answering.model_gate import ModelGate

        with self._lock:
            return self.__dict__.setdefault("_gate", ModelGate())

    @property
    def summaries(self) -> _BackgroundSummaries:
        """The background summarizer (one per service): `kick()`, `request(ids)`, `subscribe(fn)`."""
        from coderag_tui.answering.summary_runner import BackgroundSummaries, local_summarizer

        gate = self.model_gate  # (takes the lock itself)
        with self._lock:
            runner = self.__dict__.get("_summaries")
            if runner is None:
                runner = self.__dict__["_summaries"] = BackgroundSummaries(lambda: local_summarizer(self), gate)
        return runner

    # True in a process that keeps running (the app, `coderag watch`, the MCP server): only
    # there is background work started, never in a one-shot command that exits after its call
    long_lived = False

    def start_summaries(self, progress: ProgressFn | None = None) -> bool:
        """After an index run: make (or remake) summaries in the background, with a local model,
        unless `[summaries] background` is off. `progress` subscribes to its events."""
        if not (self.long_lived and self.settings.summaries.background):
            return False
        runner = self.summaries
        if progress is not None:
            runner.subscribe(progress)
        runner.kick()
        return True

    def stop_summaries(self, timeout: float = 5.0) -> None:
        runner = self.__dict__.get("_summaries")
        if runner is not None:
            runner.stop(timeout=timeout)

    def _summaries_wanted(self, context: _ComposedContext) -> None:
        """Queue the units an answer was given (the hits, each quoted piece's innermost unit)."""
        if not (self.long_lived and self.settings.summaries.background):
            return
        ids = [h.unit.id for h in context.hits]
        for p in context.pieces:
            if p.role not in ("metadata", "map"):
                ids += [u.id for u in self.units_at(p.path, p.start_line)[:1]]
        self.summaries.request(ids)

    def descriptions(self, paths: Sequence[str] | None = None) -> list[_FileDescription]:
        """Every file's profile and summaries (for `coderag summarize` and `coderag export`)."""
        from coderag_tui.answering.describe import describe_files

        return describe_files(self.db, paths)

    def tools(self) -> _CodeRagTools:
        """The index's tools over this repository (the MCP server's, and a model's tool calls)."""
        from coderag_tui.answering.toolbox import CodeRagTools

        return CodeRagTools(self)

    if TYPE_CHECKING:
        from coderag_tui.answering.describe import FileDescription as _FileDescription
        from coderag_tui.answering.model_gate import ModelGate as _ModelGate
        from coderag_tui.answering.summarize import Summarizer as _Summarizer
        from coderag_tui.answering.summarize import SummarizeResult as _SummarizeResult
        from coderag_tui.answering.summarize import SummaryEstimate as _SummaryEstimate
        from coderag_tui.answering.summary_runner import BackgroundSummaries as _BackgroundSummaries
        from coderag_tui.answering.toolbox import CodeRagTools as _CodeRagTools
        from coderag_tui.models import ComposedContext as _ComposedContext
