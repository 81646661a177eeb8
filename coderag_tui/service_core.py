"""The repository and its index, under the service facade: where the index is (a file, or a
repository of a PostgreSQL database: `StoreTarget`) and each thread's connection to it, indexing,
reading units and code, retrieval (search, context, the repo map) and the models that answer.
`service.CodeRag` adds asking, conversations, watching, review and summaries on top; interfaces
use `CodeRag`. Everything here runs over the store interface, the same on both backends.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from coderag_tui.config import IndexSettings, Settings
from coderag_tui.contract import Unsupported
from coderag_tui.errors import IndexError_, RepoError, StoreError
from coderag_tui.models import (
    EdgeRef,
    FileState,
    IndexCounts,
    IndexStatus,
    IndexSummary,
    UnitRef,
    denoted,
)
from coderag_tui.paths import default_db_path, prepare_db_folder
from coderag_tui.sources.safe_read import read_repo_file
from coderag_tui.store import read
from coderag_tui.store.backend import StoreBackend, StoreTarget

if TYPE_CHECKING:
    from coderag_tui.indexing.indexer import ProgressFn
    from coderag_tui.sources.clone import CloneResult
    from coderag_tui.workspace.packages import Package


def read_repo_lines(root: Path, path: str, start: int = 1, end: int | None = None,
                    rules: IndexSettings | None = None) -> list[str]:
    """Lines of a file of the repository at `root` (1-based, inclusive; an `end` before
    `start` gives none), decoded leniently: the one reader of repository files for every
    interface. The file is reached through no symbolic link and only when discovery's rules
    (`rules`, else the defaults: secret names, excludes, ignore files) would read it
    (sources/safe_read.py)."""
    first = max(1, start)
    if end is not None and end < first:
        return []
    text = read_repo_file(root, path, rules if rules is not None else IndexSettings()).decode("utf-8", "replace")
    return text.splitlines()[first - 1 : end]


class ServiceCore:
    """A repository, its index and its models (see the module docstring)."""

    def __init__(self, root: Path | None, settings: Settings, db_path: Path | None = None,
                 store: StoreTarget | None = None) -> None:
        # None: a repository of a database read from the database alone (no files here)
        self.root = root.resolve() if root is not None else None
        self.settings = settings
        self._db_given = db_path is not None
        # the index file; None when the index is a repository of a database (`target.url`)
        self.db_path: Path | None = None
        if store is None:
            if self.root is None:
                raise RepoError("an index file belongs to a folder", "give the repository's folder")
            self.db_path = db_path or default_db_path(self.root, settings)
        self.target = store or StoreTarget(path=self.db_path)
        self._local = threading.local()
        self._lock = threading.Lock()
        # every thread's connection, held weakly: a finished thread's connection is closed with it
        self._all: weakref.WeakSet[StoreBackend] = weakref.WeakSet()
        self.remote: CloneResult | None = None  # set when the repository was cloned from a URL
        self._answers = 0  # answers being generated: embedding waits while there are any
        self._idle = threading.Event()
        self._idle.set()
        self.display_name = str(self.root)
        # A long-lived process (the app, the MCP server, watch) keeps a copy of the vectors in
        # memory: loading it costs seconds on a big index, then each search takes milliseconds.
        # A one-shot command sets this False and lets sqlite-vec scan the file instead (0.1 s at
        # 70,000 vectors, against 2.5 s to load the copy first).
        self.vectors_in_memory = True
        self._verified = False  # every page of the index was read once (see ask)


    # ------------------------------------------------------------------ connections
    @property
    def db(self) -> StoreBackend:
        """This thread's connection to the index (opened, created and migrated on first use)."""
        db: StoreBackend | None = getattr(self._local, "db", None)
        if db is None:
            if self.db_path is not None:
                prepare_db_folder(self.folder, self.db_path, self.settings, self._db_given)
            db = self.target.open()
            self._local.db = db
            with self._lock:
                self._all.add(db)
        return db

    def close_thread_store(self) -> None:
        """Close the connection this thread opened (a thread that ends, e.g. the watcher's)."""
        db: StoreBackend | None = getattr(self._local, "db", None)
        if db is None:
            return
        with self._lock:
            self._all.discard(db)
        with contextlib.suppress(Exception):
            db.close()
        self._local.db = None

    def _claim(self) -> StoreBackend:
        """The index to write: a database's repository is made on its first build (named after
        its folder or URL), and named from then on."""
        if not self.target.url or self.target.repo is not None:
            return self.db
        from coderag_tui.store.postgres.store import PostgresStore

        store = self.target.open(create=True)
        assert isinstance(store, PostgresStore)
        self.target = dataclasses.replace(self.target, repo=store.repo.name)
        self._local.db = store
        with self._lock:
            self._all.add(store)
        return store

    @property
    def location(self) -> str:
        """Where the index is, for people (never a password)."""
        return self.target.location

    @property
    def folder(self) -> Path:
        """The repository's folder on this machine (what indexing, watching and review read)."""
        if self.root is None:
            raise Unsupported(f"the files of {self.display_name} are not on this machine (it is read from "
                              f"{self.location})", "give the repository's folder or git URL instead of its name")
        return self.root

    @property
    def capabilities(self) -> frozenset[str]:
        """All of the contract's; what needs the files (index, watch, review) only with them here."""
        from coderag_tui import contract

        here = {contract.INDEX, contract.WATCH, contract.REVIEW} if self.root is not None else set()
        return frozenset({*here, contract.SUMMARIES, contract.MODELS})

    def packages(self) -> list[Package]:
        """What the repository defines for others to import (a workspace links their imports)."""
        from coderag_tui.workspace.packages import from_rows, packages

        return packages(self.root) if self.root is not None else from_rows(self.db.packages())

    def close(self) -> None:
        runner = self.__dict__.get("_summaries")
        if runner is not None:
            runner.stop()
        with self._lock:
            for db in list(self._all):
                db.close()
            self._all.clear()
        self._local = threading.local()

    # ------------------------------------------------------------------ indexing
    def index(
        self, *, rebuild: bool = False, only: Sequence[str] | None = None, progress: ProgressFn | None = None
    ) -> IndexSummary:
        """Bring the structural index up to date (parse, chunk, keywords, graph).

        For a cloned repository whose index is at the clone's previous commit, only the files
        git says changed between the two commits are looked at.
        """
        note = ""
        if rebuild and self.db_path is not None:  # whatever state the file is in: a damaged one is replaced first
            from coderag_tui.store.recover import replace_if_broken

            note = replace_if_broken(self.db_path)
            if note:
                self.close()  # connections to the file that was moved aside
        db = self._claim()
        remote = self.remote
        if (only is None and not rebuild and remote is not None and remote.changed_files is not None
                and remote.previous_commit and db.get_meta("commit") == remote.previous_commit):
            only = [*remote.changed_files, *remote.deleted_files]
        from coderag_tui.indexing.indexer import Indexer  # (not imported by a search-only process)

        summary = Indexer(db, self.folder, self.settings).run(only=only, rebuild=rebuild, progress=progress)
        if remote is not None:
            with db.transaction():
                db.set_meta("commit", remote.head_commit)
        elif only is None:  # a folder: the commit checked out when it was indexed, if it is a git repository
            from coderag_tui.sources.gitrun import local_head

            with db.transaction():
                db.set_meta("commit", local_head(self.folder))
        if self.target.url:  # what the database's other repositories may import from this one
            from coderag_tui.workspace.packages import package_rows

            db.set_packages(package_rows(self.folder))
        return dataclasses.replace(summary, recovered=note) if note else summary

    def has_index(self) -> bool:
        """Whether an index of this repository was ever built (asking creates nothing)."""
        if self.db_path is None:
            return self.target.exists() and bool(self.db.get_meta("last_update"))
        if not self.db_path.exists():  # (something else in its place is opened, and refused)
            if not self.db_path.parent.is_dir() and (self.settings.index.db_path or self._db_given):
                raise StoreError(f"the folder of the index {self.db_path} does not exist",
                                 "create it or give another --db file")
            return False
        return bool(self.db.get_meta("last_update"))

    def require_index(self) -> None:
        """Raise IndexError_ (one line: what to run) when this repository has no index, or its
        index holds no file. An index being built for the first time answers from the files it
        holds so far. Creates nothing: a missing index file stays missing."""
        present = self.target.exists() if self.db_path is None else self.db_path.exists()
        if present and read.file_count(self.db) > 0:
            return
        if not self.has_index():  # (which says so when a --db names a missing folder)
            raise IndexError_(f"{self.display_name} has no index yet",
                              f"run `coderag index {self.display_name}` to build it")
        raise IndexError_(f"the index of {self.display_name} holds no file: nothing there was indexed",
                          "`coderag status` shows what was skipped; `coderag index` after adding code")

    def status(self) -> IndexStatus:
        # a repository read from its database alone is shown by its name (it has no folder here)
        return read.status(self.db, str(self.root) if self.root is not None else self.display_name)

    @property
    def name(self) -> str:
        """The repository's short name (its folder's, or the database's name for it)."""
        return self.display_name if self.root is None else self.root.name

    def statuses(self) -> list[tuple[str, IndexStatus]]:
        """[(the repository's name, its status)]."""
        return [(self.name, self.status())]

    def counts(self) -> IndexCounts:
        """Files, units, chunks, vectors, skips and errors, as every interface counts them."""
        return read.counts(self.db)

    def symbols(self, name: str, limit: int = 20) -> list[UnitRef]:
        return read.find_symbols(self.db, name, limit)

    def callers(self, name: str, limit: int = 200) -> list[EdgeRef]:
        """Who calls the definitions named `name`."""
        units = self._definitions(name)
        return read.callers(self.db, [u.id for u in units])[:limit]

    def callees(self, name: str, limit: int = 200) -> list[EdgeRef]:
        """What the definitions named `name` call (resolved units or external names)."""
        units = self._definitions(name)
        return read.callees(self.db, [u.id for u in units])[:limit]

    def tests_for(self, name: str) -> list[EdgeRef]:
        units = self._definitions(name)
        return read.callers(self.db, [u.id for u in units], kinds=("TESTS",))

    def files(self) -> list[FileState]:
        """Every file discovery finds, with its index state (one walk and one query)."""
        from coderag_tui.indexing.filestates import file_states, stored_states

        if self.root is None:
            return stored_states(self.db)
        return file_states(self.db, self.root, self.db_path, self.settings.index)

    def outline(self, path: str) -> list[UnitRef]:
        return read.file_outline(self.db, path)

    def unit(self, unit_id: int) -> UnitRef | None:
        return read.get_unit(self.db, unit_id)

    def units_at(self, path: str, line: int) -> list[UnitRef]:
        return read.units_at(self.db, path, line)

    def _definitions(self, name: str) -> list[UnitRef]:
        """The units a name denotes: exact matches when there are any, else the best fuzzy one."""
        return denoted(read.find_symbols(self.db, name, limit=50), name)

    def read_lines(self, path: str, start: int = 1, end: int | None = None) -> list[str]:
        """Lines of a repository file (1-based, inclusive), decoded leniently; read from the index
        when the repository's files are not on this machine."""
        if self.root is None:
            from coderag_tui.retrieval.source import CodeReader

            facts = read.file_facts(self.db, path)
            if facts is None:
                raise RepoError(f"no file {path} in the index of {self.display_name}")
            return [text for _, text in CodeReader(self.db).lines(path, max(start, 1), end or facts[1])]
        return read_repo_lines(self.root, path, start, end, self.settings.index)

    # ------------------------------------------------------------------ retrieval
    # Thin wrappers over coderag_tui.retrieval and indexing.embedder; the embedding model and the
    # repo graph are cached on the instance (RetrievalState), loaded lazily and thread-safely.
    def _retrieval(self) -> _RetrievalState:
        from coderag_tui.retrieval.state import RetrievalState

        state = self.__dict__.get("_retrieval_state")
        if state is None:
            with self._lock:
                state = self.__dict__.setdefault("_retrieval_state", RetrievalState())
        return state

    def embed(self, progress: ProgressFn | None = None,
              should_stop: Callable[[], bool] | None = None,
              paths: Sequence[str] | None = None) -> _EmbedSummary:
        """Embed the chunks that have no vector for the configured model (after `index`); with
        `paths`, only those of these files (stale vectors wait for the next full run)."""
        from coderag_tui.indexing.embedder import embed_index, up_to_date

        state = self._retrieval()
        if not state.model_loaded(self.settings.embed):  # then, when nothing is to do, it never is
            done = up_to_date(self.db, self.settings.embed)
            if done is not None:
                return done
        model = state.model(self.settings.embed)
        return embed_index(self.db, model, progress, self._yielding(should_stop), paths)

    def vectors_pending(self) -> bool:
        """Whether `embed` has work to do (some chunk lacks a vector, or a stale one is left)."""
        from coderag_tui.indexing.embedder import up_to_date

        return self.settings.embed.enabled and up_to_date(self.db, self.settings.embed) is None

    def searcher(self) -> _Searcher:
        state = self._retrieval()
        embed_query = state.query_embedder(self.db, self.settings.embed)  # starts the model's load
        from coderag_tui.retrieval.search import Searcher  # (imported meanwhile)

        matrix = state.matrix if embed_query and self.vectors_in_memory else None
        reranker = self.reranker()
        return Searcher(self.db, self.settings.search, embed_query, matrix, reranker,
                        "rerank" if reranker is not None else "hybrid")

    def reranker(self, setting: str | None = None) -> _Reranker | None:
        """The reranker `[search] rerank` names (None for "off"); the LLM is loaded on first use."""
        from coderag_tui.answering.rerank_llm import reranker_for

        return reranker_for(self.db, setting or self.settings.search.rerank,
                            self.settings.search.rerank_top, self.llm)

    def check_filters(self, filters: _SearchFilters | None) -> _SearchFilters | None:
        """`filters` spelt as the index spells them; FilterError (one line, with the closest
        valid value) for a kind or language that does not exist."""
        from coderag_tui.retrieval.filters import check_filters

        return check_filters(self.db, filters)

    def search(self, query: str, k: int | None = None,
               filters: _SearchFilters | None = None) -> list[_SearchHit]:
        """Code units for a query: routed, then BM25 + vectors + symbols (+ graph), fused by RRF."""
        return list(self.searcher().search(query, k, filters).hits)

    def search_files(self, query: str, k: int | None = None,
                     filters: _SearchFilters | None = None) -> list[_SearchHit]:
        """Files ranked by their matching units (hits carry the file unit)."""
        return self.searcher().search_files(query, k, filters)

    def similar(self, unit_id: int, k: int | None = None) -> list[_SearchHit]:
        return self.searcher().similar(unit_id, k)

    def context(self, query: str, max_tokens: int | None = None,
                count_tokens: Callable[[str], int] | None = None, strategy: str = "relevance") -> _ComposedContext:
        """Context for an LLM within max_tokens: hits, callers/callees, outlines, tests, metadata;
        `strategy`: relevance, importance, breadth or depth first (retrieval/strategies.py)."""
        from coderag_tui.retrieval.compose import compose
        from coderag_tui.retrieval.file_notes import with_file_notes
        from coderag_tui.tokens import estimate_tokens

        searcher = self.searcher()
        similar = searcher.similar if searcher.embed_query is not None else None
        composed = compose(searcher, query, self.settings.context, max_tokens, self.root,
                           count_tokens or estimate_tokens, similar, strategy)
        return with_file_notes(self.db, composed, count_tokens or estimate_tokens)

    def repo_map(self, max_tokens: int | None = None, query: str | None = None) -> str:
        """Signatures of the most referenced units of the most central files (PageRank),
        personalised toward the query's hits when a query is given."""
        from coderag_tui.retrieval.repo_map import fit_map, ranked_tags

        focus = [h.unit.path for h in self.search(query, k=10)] if query else []
        graph = self._retrieval().graph(self.db)
        return fit_map(ranked_tags(graph, focus), max_tokens or self.settings.context.repo_map_tokens)

    if TYPE_CHECKING:
        from coderag_tui.indexing.embedder import EmbedSummary as _EmbedSummary
        from coderag_tui.models import ComposedContext as _ComposedContext
        from coderag_tui.models import SearchFilters as _SearchFilters
        from coderag_tui.models import SearchHit as _SearchHit
        from coderag_tui.retrieval.rerank import Reranker as _Reranker
        from coderag_tui.retrieval.search import Searcher as _Searcher
        from coderag_tui.retrieval.state import RetrievalState as _RetrievalState


    # ------------------------------------------------------------------ answering
    # The provider (a loaded GGUF, or an HTTP client) is built once per model and kept; one
    # answer runs at a time (llama.cpp is not re-entrant).
    def llm(self, model: str | None = None) -> _Provider:  # noqa: F821
        """The model named `model` (see `answering.choices.resolve`: a GGUF path or name, the
        configured model, a model served on loopback...), else the selected one, else the
        configured model with its fallbacks."""
        return self._provider(model or self.selected_model)

    def _provider(self, name: str | None) -> _Provider:  # noqa: F821
        from coderag_tui.answering import ProviderOptions, create_llm
        from coderag_tui.answering.choices import resolve
        from coderag_tui.paths import models_dir

        cache = self.__dict__.setdefault("_providers", {})
        with self._lock:
            provider = cache.get(name)
        if provider is None:
            how = resolve(name, self.settings.llm, models_dir(), self.served_models)
            options = ProviderOptions(models_dir=models_dir(), model_override=how.override,
                                      context_window=how.context_window)
            with self._lock:
                provider = cache.get(name) or cache.setdefault(name, create_llm(how.settings, options))
        return provider

    selected_model: str | None = None  # the model that answers by default (the TUI's picker)

    def select_model(self, name: str | None) -> _ModelInfo:
        """Answer with `name` from now on (None or "": the configured model); raises a
        CoderagError (one line) when it names nothing, keeping the model in use."""
        info = self._provider(name or None).info()
        self.selected_model = name or None
        return info

    def served_models(self, refresh: bool = False) -> list[_ServedModel]:
        """Models served on loopback (discovered once, then cached; [] when [llm] discover is off)."""
        from coderag_tui.answering.choices import discovery_ports
        from coderag_tui.answering.discovery import discover

        with self._lock:
            found = None if refresh else self.__dict__.get("_served")
        if found is None:
            ports = discovery_ports(self.settings.llm) if self.discover_ports is None else self.discover_ports
            found = discover(ports) if ports else []
            with self._lock:
                self.__dict__["_served"] = found
        return found

    # the ports to scan instead of the settings' (tests inject a server's port)
    discover_ports: list[int] | None = None

    def model_info(self, model: str | None = None) -> _ModelInfo:
        return self.llm(model).info()

    @contextlib.contextmanager
    def _generating(self) -> Iterator[None]:
        """Marks an answer in progress: `embed` pauses between its batches meanwhile."""
        with self._lock:
            self._answers += 1
            self._idle.clear()
        try:
            yield
        finally:
            with self._lock:
                self._answers -= 1
                if self._answers == 0:
                    self._idle.set()

    def _yielding(self, should_stop: Callable[[], bool] | None) -> Callable[[], bool]:
        """`should_stop` for embedding: it first waits while an answer is generated, so that a
        watcher's or the app's embedding does not halve the model's speed on a small machine."""
        idle = self._idle

        def check() -> bool:
            while not idle.wait(0.2):
                if should_stop is not None and should_stop():
                    return True
            return should_stop() if should_stop is not None else False

        return check

    def list_models(self, model: str | None = None, *, discover: bool = True) -> list[_ModelInfo]:
        """The configured model and fallbacks, local GGUFs and (`discover`) models on loopback,
        each with its `choice`: the name `llm(model=...)` and `select_model` take."""
        from coderag_tui.answering import list_models
        from coderag_tui.paths import models_dir

        served = self.served_models() if discover else []
        return list_models(self.settings.llm, models_dir(), model_override=model, served=served)


    if TYPE_CHECKING:
        from coderag_tui.answering import Provider as _Provider
        from coderag_tui.answering.discovery import ServedModel as _ServedModel
        from coderag_tui.models import ModelInfo as _ModelInfo
