"""The service over a store given by URL (`--store postgresql://...` or `[index] store`): index,
embed, status, hybrid search, symbols, the call graph, context and cited answers, all through
the `StoreBackend` interface, returning the frozen dataclasses the SQLite service returns. The
HTTP server's `Workspace` serves one of these as it serves a `CodeRag`.

Each thread gets its own connection (as each gets its own SQLite connection in `CodeRag`).
The model that answers is the configured one, built by a `CodeRag` of the same repository whose
index file is never opened. What this service lacks (conversations, the answer cache, model
tools, the repo map, watching, review, summaries, the app's file tree) says so in one line."""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from coderag_tui.config import Settings
from coderag_tui.errors import StoreError
from coderag_tui.indexing import store_build
from coderag_tui.indexing.embedder import EmbeddingModel, EmbedSummary, load_model
from coderag_tui.models import (
    AnswerEvent,
    ComposedContext,
    EdgeRef,
    FileState,
    IndexCounts,
    IndexStatus,
    IndexSummary,
    ModelInfo,
    SearchFilters,
    SearchHit,
    UnitRef,
    denoted,
)
from coderag_tui.retrieval import store_search
from coderag_tui.service import CodeRag
from coderag_tui.service_core import read_repo_lines
from coderag_tui.store.backend import StoreBackend, open_store, redact

if TYPE_CHECKING:
    from coderag_tui.answering import Provider
    from coderag_tui.answering.model_gate import ModelGate


class StoreService:
    """A repository indexed into a store opened by URL, or (reading) several of its database's
    repositories together (workspace/store_repos.py)."""

    def __init__(self, root: Path | None, settings: Settings, store: StoreBackend, url: str,
                 source: str = "") -> None:
        self.root = root  # None: repositories named in the database, not indexed from here
        self.settings = settings
        self.url = url
        self.source = source  # a folder, or a git URL as given (the database keeps it without credentials)
        self.display_name = root.name if root is not None else ""
        self.where = redact(url)
        self._model: EmbeddingModel | None = None
        self._lock = threading.Lock()
        self._local = threading.local()
        self._local.store = store
        self._scoped = store  # which repository (or view across several) every thread's connection reads
        self._all: weakref.WeakSet[StoreBackend] = weakref.WeakSet([store])  # closed with the service
        # the models that answer, built as for the SQLite service (its index file stays closed)
        self._models = CodeRag(root if root is not None else Path.cwd(), settings)

    @classmethod
    def open(cls, url: str, repo: str | Path | None, config: str | Path | None = None) -> StoreService:
        from coderag_tui.workspace.store_repos import open_service

        return open_service(cls, url, repo, config)

    @property
    def store(self) -> StoreBackend:
        """This thread's connection to the store (opened on first use), on the same repository
        or view as the service's."""
        store: StoreBackend | None = getattr(self._local, "store", None)
        if store is None:
            reopen = getattr(self._scoped, "reopen", None)
            store = self._local.store = reopen(self.url) if reopen is not None else open_store(self.url)
            with self._lock:
                self._all.add(store)
        return store

    @store.setter
    def store(self, store: StoreBackend) -> None:
        """Read and write another repository of the database from now on (every thread)."""
        with self._lock:
            self._scoped = store
            self._all.add(store)
        self._local = threading.local()
        self._local.store = store

    def close(self) -> None:
        with self._lock:
            for store in list(self._all):
                store.close()
            self._all.clear()
        self._local = threading.local()

    # ------------------------------------------------------------------ indexing
    def index(self, rebuild: bool = False, progress: store_build.ProgressFn | None = None) -> IndexSummary:
        from coderag_tui.workspace.store_repos import index_into

        return index_into(self, rebuild, progress)

    def model(self) -> EmbeddingModel:
        with self._lock:
            if self._model is None:
                self._model = load_model(self.settings.embed)
            return self._model

    def vectors_pending(self) -> bool:
        return self.settings.embed.enabled and bool(self.store.chunks_without_vector(self.model().id, 1))

    def embed(self, progress: store_build.ProgressFn | None = None,
              should_stop: Callable[[], bool] | None = None) -> EmbedSummary:
        """Vectors for the chunks that lack one (`should_stop` is not polled: a batch is short)."""
        start = time.perf_counter()
        model = self.model()
        written = store_build.embed(self.store, model, progress)
        seconds = time.perf_counter() - start
        chunks = self.store.counts().chunks
        return EmbedSummary(model.id, model.dim, chunks, written, max(chunks - written, 0), 0, False,
                            seconds, written / seconds if seconds > 0 else 0.0)

    def has_index(self) -> bool:
        return bool(self.store.files())

    def status(self) -> IndexStatus:
        return self.store.status(str(self.root) if self.root is not None else self.display_name)

    def counts(self) -> IndexCounts:
        return self.store.counts()

    # ------------------------------------------------------------------ search and the graph
    def check_filters(self, filters: SearchFilters | None) -> SearchFilters | None:
        if filters is not None and (filters.language or filters.path_prefix or filters.kind):
            raise StoreError("filters are not searched on a store given by URL yet", "leave out --lang/--path/--kind")
        return None

    def search(self, query: str, k: int | None = None, filters: SearchFilters | None = None) -> list[SearchHit]:
        self.check_filters(filters)
        model = self.model() if self.settings.embed.enabled else None
        return store_search.search(self.store, query, k or self.settings.search.k, model,
                                   self.settings.search.rrf_k)

    def search_files(self, query: str, k: int | None = None, filters: SearchFilters | None = None) -> list[SearchHit]:
        raise StoreError("--files is not searched on a store given by URL yet", "leave out --files")

    def symbols(self, name: str, limit: int = 20) -> list[UnitRef]:
        return self.store.find_symbols(name, limit)

    def _definitions(self, name: str) -> list[UnitRef]:
        """The units a name denotes: exact matches when there are any, else the best fuzzy one
        (as `CodeRag._definitions`)."""
        return denoted(self.store.find_symbols(name, limit=50), name)

    def callers(self, name: str, limit: int = 200) -> list[EdgeRef]:
        return self.store.callers([u.id for u in self._definitions(name)])[:limit]

    def callees(self, name: str, limit: int = 200) -> list[EdgeRef]:
        return self.store.callees([u.id for u in self._definitions(name)])[:limit]

    def tests_for(self, name: str) -> list[EdgeRef]:
        return self.store.callers([u.id for u in self._definitions(name)], kinds=("TESTS",))

    def unit(self, unit_id: int) -> UnitRef | None:
        return self.store.get_unit(unit_id)

    def outline(self, path: str) -> list[UnitRef]:
        return self.store.file_outline(path)

    def units_at(self, path: str, line: int) -> list[UnitRef]:
        return self.store.units_at(path, line)

    def read_lines(self, path: str, start: int = 1, end: int | None = None) -> list[str]:
        if self.root is None:
            raise StoreError("the files of repositories named in the database are not on this machine",
                             "give the repository's folder (--repo PATH)")
        return read_repo_lines(self.root, path, start, end)

    def files(self) -> list[FileState]:
        """Every file discovery finds, with its state in the store (the app's tree)."""
        from coderag_tui.indexing.filestates import file_states

        if self.root is None:  # repositories named in the database: what the store holds
            return [FileState(path, language, "embedded" if chunks and vectors >= chunks else "indexed")
                    for path, (language, chunks, vectors) in sorted(self.store.file_index_states().items())]
        return file_states(self.store, self.root, None, self.settings.index)

    def context(self, query: str, max_tokens: int | None = None,
                count_tokens: Callable[[str], int] | None = None, strategy: str = "relevance") -> ComposedContext:
        """Context for an LLM within max_tokens: the hits, their callers and callees, outlines,
        tests and metadata, composed as on the SQLite index."""
        from coderag_tui.tokens import estimate_tokens

        model = self.model() if self.settings.embed.enabled else None
        return store_search.context(self.store, query, self.settings, max_tokens, self.root,
                                    count_tokens or estimate_tokens, model, strategy)

    # ------------------------------------------------------------------ answering
    def llm(self, model: str | None = None) -> Provider:
        return self._models.llm(model)

    def model_info(self, model: str | None = None) -> ModelInfo:
        return self._models.model_info(model)

    def list_models(self, model: str | None = None, *, discover: bool = True) -> list[ModelInfo]:
        return self._models.list_models(model, discover=discover)

    @property
    def model_gate(self) -> ModelGate:
        return self._models.model_gate

    def ask(self, question: str, conversation_id: int | None = None, *, model: str | None = None,
            should_stop: Callable[[], bool] | None = None, attachment: str = "",
            fresh: bool = False, owner: str | None = None) -> Iterator[AnswerEvent]:
        """A cited answer from the context (events as `CodeRag.ask`; never raises). No
        conversation is stored (so none has an `owner`): a follow-up is answered without the
        turns before it."""
        from coderag_tui.answering import Answerer
        from coderag_tui.answering.opening import build_opening
        from coderag_tui.errors import CoderagError
        from coderag_tui.service_ask import answer_budgets, retrieval_query
        from coderag_tui.tokens import counter_for

        conv = conversation_id or 0
        question = question.strip()
        if not question:
            yield AnswerEvent("error", text="ask a question first", conversation_id=conv)
            return
        llm = self.settings.llm
        with self.model_gate.foreground():
            try:
                started = time.perf_counter()
                yield AnswerEvent("status", text="loading the model", conversation_id=conv)
                provider = self.llm(model)
                yield AnswerEvent("status", text="retrieving code", conversation_id=conv)
                answerer = Answerer(provider, None, max_tokens=llm.max_tokens, temperature=llm.temperature,
                                    tiny_max_tokens=llm.tiny_max_tokens)
                query, _ = retrieval_query(answerer, question, None, attachment)
                budget, _ = answer_budgets(self._models, provider)
                context = self.context(query, max_tokens=budget, count_tokens=counter_for(provider))
                opening = build_opening(self.store, question, context)
                retrieval_s = time.perf_counter() - started
            except CoderagError as exc:
                yield AnswerEvent("error", text=exc.one_line(), conversation_id=conv)
                return
            with self._models._generating():
                yield from answerer.ask(question, context, "", None, retrieval_s=retrieval_s,
                                        should_stop=should_stop, use_history=False, attachment=attachment,
                                        opening=opening)

    def conversation_owner(self, conversation_id: int) -> str | None:
        return None  # no conversation is stored here

    def update(self, progress: store_build.ProgressFn | None = None) -> IndexSummary:
        """Bring the store up to date with the repository (a git URL is fetched first)."""
        return self.index(progress=progress)

    def __getattr__(self, name: str) -> object:
        # the SQLite service's other methods (similar, repo map, watch, review, the app...): one line
        raise _Unsupported(f"this does not run on a store given by URL yet ({self.where}): index, "
                           "search, symbol, status, context, callers, callees, ask and serve do",
                           "leave out --store / [index] store")


class _Unsupported(StoreError, AttributeError):
    """A method the service over a URL lacks: a user's one-line error, and `hasattr` is False."""
