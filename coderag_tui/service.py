"""The one facade every interface calls: the CLI, the TUI and the MCP server.

It owns the repository root, the settings and the index file, and returns the frozen
dataclasses of `coderag_tui.models`. Each thread gets its own SQLite connection.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from coderag_tui.config import Settings, load_settings
from coderag_tui.errors import RepoError, StoreError
from coderag_tui.models import EdgeRef, FileState, IndexCounts, IndexStatus, IndexSummary, UnitRef
from coderag_tui.paths import default_db_path, find_repo_root, prepare_db_folder
from coderag_tui.sources.names import fs_path
from coderag_tui.store import read
from coderag_tui.store.db import Database, open_database

if TYPE_CHECKING:
    from coderag_tui.indexing.indexer import ProgressFn
    from coderag_tui.indexing.watcher import Watcher
    from coderag_tui.models import WatchEvent
    from coderag_tui.sources.clone import CloneResult


ATTACHMENT_QUERY_CHARS = 1000  # of text given with a question, the end used to retrieve code


class CodeRag:
    """A repository and its index."""

    def __init__(self, root: Path, settings: Settings, db_path: Path | None = None) -> None:
        self.root = root.resolve()
        self.settings = settings
        self._db_given = db_path is not None
        self.db_path = db_path or default_db_path(self.root, settings)
        self._local = threading.local()
        self._lock = threading.Lock()
        # every thread's connection, held weakly: a finished thread's connection is closed with it
        self._all: weakref.WeakSet[Database] = weakref.WeakSet()
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

    @classmethod
    def open(
        cls,
        repo: str | Path | None = None,
        *,
        config: str | Path | None = None,
        db_path: str | Path | None = None,
        settings: Settings | None = None,
    ) -> CodeRag:
        """Open a repository given as a folder (or None: the one containing the cwd)."""
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
        if settings is None:
            settings = load_settings(root, config)
        return cls(root, settings, Path(db_path) if db_path else None)

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
    ) -> CodeRag:
        """Open a folder, or a git URL: cloned (shallow) into the cache on first use, fetched after.

        A cloned repository's own `.coderag.toml` is not read: it is untrusted input.
        """
        from coderag_tui.sources.urls import is_remote, parse_remote, redact

        text = str(target) if target is not None else ""
        if "://" in text or re.match(r"^[\w.-]+@[\w.-]+:", text):
            parse_remote(text)  # a URL that is not a usable git URL: one clear (redacted) line
        if target is None or not is_remote(text):
            if branch or rev:
                raise RepoError("--branch and --rev apply to repository URLs", "give a git URL")
            return cls.open(target, config=config, db_path=db_path)
        from coderag_tui.sources.clone import ensure_clone

        settings = load_settings(None, config)
        result = ensure_clone(str(target), branch=branch, rev=rev, settings=settings, progress=progress)
        service = cls(result.path, settings, Path(db_path) if db_path else None)
        service.remote = result
        service.display_name = redact(str(target))
        return service

    # ------------------------------------------------------------------ connections
    @property
    def db(self) -> Database:
        """This thread's connection to the index (opened, created and migrated on first use)."""
        db = getattr(self._local, "db", None)
        if db is None:
            prepare_db_folder(self.root, self.db_path, self.settings, self._db_given)
            db = open_database(self.db_path)
            self._local.db = db
            with self._lock:
                self._all.add(db)
        return db

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
        self, *, rebuild: bool = False, only: list[str] | None = None, progress: ProgressFn | None = None
    ) -> IndexSummary:
        """Bring the structural index up to date (parse, chunk, keywords, graph).

        For a cloned repository whose index is at the clone's previous commit, only the files
        git says changed between the two commits are looked at.
        """
        note = ""
        if rebuild:  # whatever state the file is in: a damaged one is replaced first
            from coderag_tui.store.recover import replace_if_broken

            note = replace_if_broken(self.db_path)
            if note:
                self.close()  # connections to the file that was moved aside
        db = self.db
        remote = self.remote
        if (only is None and not rebuild and remote is not None and remote.changed_files is not None
                and remote.previous_commit and db.get_meta("commit") == remote.previous_commit):
            only = [*remote.changed_files, *remote.deleted_files]
        from coderag_tui.indexing.indexer import Indexer  # (not imported by a search-only process)

        summary = Indexer(db, self.root, self.settings).run(only=only, rebuild=rebuild, progress=progress)
        if remote is not None:
            with db.transaction():
                db.set_meta("commit", remote.head_commit)
        return dataclasses.replace(summary, recovered=note) if note else summary

    def has_index(self) -> bool:
        """Whether an index of this repository was ever built (asking creates nothing)."""
        if not self.db_path.exists():  # (something else in its place is opened, and refused)
            if not self.db_path.parent.is_dir() and (self.settings.index.db_path or self._db_given):
                raise StoreError(f"the folder of the index {self.db_path} does not exist",
                                 "create it or give another --db file")
            return False
        return bool(self.db.get_meta("last_update"))

    def status(self) -> IndexStatus:
        return read.status(self.db, str(self.root))

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
        from coderag_tui.indexing.filestates import file_states

        return file_states(self.db, self.root, self.db_path, self.settings.index)

    def outline(self, path: str) -> list[UnitRef]:
        return read.file_outline(self.db, path)

    def unit(self, unit_id: int) -> UnitRef | None:
        return read.get_unit(self.db, unit_id)

    def units_at(self, path: str, line: int) -> list[UnitRef]:
        return read.units_at(self.db, path, line)

    def _definitions(self, name: str) -> list[UnitRef]:
        """The units a name denotes: exact matches when there are any, else the best fuzzy one."""
        found = read.find_symbols(self.db, name, limit=50)
        q = name.strip().rstrip("()")
        exact = [u for u in found if u.name == q or u.qualname == q or u.qualname.endswith("." + q)]
        return exact or found[:1]

    def read_lines(self, path: str, start: int = 1, end: int | None = None) -> list[str]:
        """Lines of a repository file (1-based, inclusive), decoded leniently."""
        full = (self.root / fs_path(path)).resolve()
        if self.root not in full.parents and full != self.root:
            raise RepoError(f"{path} is outside the repository")
        try:
            text = full.read_bytes().decode("utf-8", "replace")
        except OSError as exc:
            raise RepoError(f"cannot read {path}: {exc.strerror}") from exc
        lines = text.splitlines()
        return lines[start - 1 : end]

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

    def ask(
        self,
        question: str,
        conversation_id: int | None = None,
        *,
        model: str | None = None,
        should_stop: Callable[[], bool] | None = None,
        attachment: str = "",
        fresh: bool = False,
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
        """
        from coderag_tui.answering import Answerer
        from coderag_tui.answering.opening import build_opening
        from coderag_tui.errors import CoderagError
        from coderag_tui.models import AnswerEvent
        from coderag_tui.retrieval.followup import continues
        from coderag_tui.tokens import counter_for

        conv = conversation_id or 0
        question = question.strip()
        if not question:
            yield AnswerEvent("error", text="ask a question first", conversation_id=conv)
            return
        with self.model_gate.foreground():
            try:
                started = time.perf_counter()
                if not self._verified:  # once per service: ~0.6 s for a 90 MB index
                    self.db.verify()  # a damaged index fails here, before a model loads
                    self._verified = True
                yield AnswerEvent("status", text="loading the model", conversation_id=conv)
                provider = self.llm(model)
                cache = self._answer_cache(provider, conversation_id, attachment)
                hit = cache.lookup(question) if cache is not None and not fresh else None
                if hit is not None:
                    yield from self._cached_answer(provider, question, hit, started)
                    return
                yield AnswerEvent("status", text="retrieving code", conversation_id=conv)
                tools, steps = self._answer_tools(provider)
                answerer = Answerer(provider, self.db, max_tokens=self.settings.llm.max_tokens,
                                    temperature=self.settings.llm.temperature, tools=tools, tool_steps=steps,
                                    tiny_max_tokens=self.settings.llm.tiny_max_tokens)
                query, same_topic = question, True
                if conversation_id:
                    earlier = [m.content for m in answerer.load_conversation(conversation_id)
                               if m.role == "user"]
                    if earlier:
                        same_topic = continues(earlier[-1], question)
                        if same_topic:
                            query = f"{earlier[-1]}\n{question}"
                if attachment.strip():
                    # the end of a log or a traceback names what failed: it steers retrieval
                    query = f"{query}\n{attachment.strip()[-ATTACHMENT_QUERY_CHARS:]}"
                context_budget, map_budget = self._answer_budgets(provider)
                context = self.context(query, max_tokens=context_budget,
                                       count_tokens=counter_for(provider))
                repo_map = self.repo_map(max_tokens=map_budget) if map_budget > 0 else ""
                opening = build_opening(self.db, question, context)
                retrieval_s = time.perf_counter() - started
            except CoderagError as exc:
                yield AnswerEvent("error", text=exc.one_line(), conversation_id=conv)
                return
            parts: list[str] = []
            checked: AnswerEvent | None = None
            with self._generating():
                for event in answerer.ask(question, context, repo_map, conversation_id,
                                          retrieval_s=retrieval_s, should_stop=should_stop,
                                          use_history=same_topic, attachment=attachment,
                                          opening=opening):
                    if event.kind == "token":
                        parts.append(event.text)
                    elif event.kind == "sources":
                        checked = event
                    elif (event.kind == "done" and cache is not None and checked is not None
                          and not event.stats.get("stopped")):
                        self._remember(cache, question, "".join(parts).strip(), checked)
                    yield event
        # after the answer, never before it: the units it was given get summaries next
        self._summaries_wanted(context)

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

    def _answer_cache(self, provider: _Provider, conversation_id: int | None,
                      attachment: str) -> _AnswerCache | None:
        """The answer cache for this model, when it applies (not to follow-ups or given text)."""
        from coderag_tui.answering.answer_cache import AnswerCache
        from coderag_tui.errors import CoderagError

        threshold = self.settings.llm.cache_similarity
        if threshold <= 0 or conversation_id or attachment.strip():
            return None
        try:
            embed = self.searcher().embed_query
        except CoderagError:  # no usable vectors: the same words still hit
            embed = None
        return AnswerCache(self.db, provider.name, threshold, embed, self.db.get_meta("embed_model") or "")

    def _cached_answer(self, provider: _Provider, question: str, hit: _CachedAnswer,
                       started: float) -> Iterator[_AnswerEvent]:
        from coderag_tui.answering import Answerer
        from coderag_tui.models import AnswerEvent

        # stored as a turn of a new conversation, so a follow-up works as after any answer
        cid = Answerer(provider, self.db)._save(None, question, hit.answer, hit.sources)
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(hit.created))
        same = "" if hit.similarity >= 1.0 else f" for {hit.question!r} (similarity {hit.similarity:.2f})"
        yield AnswerEvent("status", text=f"answered from the cache{same}", conversation_id=cid, cached=True)
        yield AnswerEvent("token", text=hit.answer, conversation_id=cid, cached=True)
        yield AnswerEvent("sources", sources=hit.sources, invalid_citations=hit.invalid, conversation_id=cid,
                          cached=True)
        stats = {"cached": 1.0, "similarity": hit.similarity,
                 "total_s": round(time.perf_counter() - started, 4),
                 "cited": float(sum(1 for s in hit.sources if s.cited)),
                 "invalid_citations": float(len(hit.invalid))}
        yield AnswerEvent("done", text=f"answered from the cache (first answered {when} by {provider.name}; "
                          "ask again with --fresh)", conversation_id=cid, stats=stats, cached=True)

    def _remember(self, cache: _AnswerCache, question: str, answer: str, checked: _AnswerEvent) -> None:
        import logging

        from coderag_tui.store.db import clear_error

        try:
            cache.remember(question, answer, checked.sources, checked.invalid_citations)
        except Exception as exc:  # a cache that cannot write (a locked index) must not fail the answer
            logging.getLogger("coderag").warning("answer cache: %s", clear_error(exc) or exc)

    def _answer_tools(self, provider: _Provider) -> tuple[object, int]:
        """The index's tools for a model that can call them (`[llm] tools`), and how many rounds."""
        from coderag_tui.answering.toolbox import CodeRagTools
        from coderag_tui.answering.tools import tools_wanted

        if not tools_wanted(self.settings.llm, provider):
            return None, 0
        tools = CodeRagTools(self)
        tools.ready.set()  # asking needs an index already: the tools never wait for a first one
        return tools, self.settings.llm.tool_steps

    def _answer_budgets(self, provider: _Provider) -> tuple[int, int]:
        """Tokens for the composed context and the repo map, so that the system rules, the
        history, the question and the answer still fit in the model's window."""
        window = provider.context_window()
        available = max(window - self.settings.llm.max_tokens - 700, 256)
        if getattr(provider, "tiny_note", ""):  # the tiny bundled model: see [llm] tiny_context_tokens
            return min(self.settings.llm.tiny_context_tokens, available), 0
        map_budget = min(self.settings.context.repo_map_tokens, int(available * 0.15))
        return min(self.settings.context.max_tokens, available - map_budget), map_budget

    def conversations(self, limit: int = 100) -> list[tuple[int, str, float]]:
        """Stored conversations, newest first: (id, title, updated)."""
        return read.conversation_list(self.db, limit)

    def load_conversation(self, conversation_id: int) -> list[_StoredMessage]:
        """A stored conversation's messages, each answer with its sources and how it ended."""
        from coderag_tui.answering.answerer import load_messages

        return load_messages(self.db, conversation_id)

    def list_models(self, model: str | None = None, *, discover: bool = True) -> list[_ModelInfo]:
        """The configured model and fallbacks, local GGUFs and (`discover`) models on loopback,
        each with its `choice`: the name `llm(model=...)` and `select_model` take."""
        from coderag_tui.answering import list_models
        from coderag_tui.paths import models_dir

        served = self.served_models() if discover else []
        return list_models(self.settings.llm, models_dir(), model_override=model, served=served)

    if TYPE_CHECKING:
        from coderag_tui.answering import Provider as _Provider
        from coderag_tui.answering.answer_cache import AnswerCache as _AnswerCache
        from coderag_tui.answering.answer_cache import CachedAnswer as _CachedAnswer
        from coderag_tui.answering.answerer import StoredMessage as _StoredMessage
        from coderag_tui.answering.discovery import ServedModel as _ServedModel
        from coderag_tui.models import AnswerEvent as _AnswerEvent
        from coderag_tui.models import ModelInfo as _ModelInfo


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
        `configured`: the configured one, whatever the app's picker selected)."""
        from coderag_tui.answering.summarize import Summarizer

        provider = self._provider(None) if configured else self.llm(model)
        info = provider.info()
        name = f"{info.provider}:{info.name}"

        def read_code(path: str, start: int, end: int) -> str:
            return "\n".join(self.read_lines(path, start, end))

        return Summarizer(self.db, provider, name, read_code, self.settings.summaries,
                          local=info.provider == "llama")

    def summarize(self, paths: Sequence[str] | None = None, *, everything: bool = False,
                  model: str | None = None, progress: ProgressFn | None = None,
                  should_stop: Callable[[], bool] | None = None) -> _SummarizeResult:
        """Make the summaries that are missing or out of date, bottom up (within the budget
        with a local model unless `everything`). Search works meanwhile; an answer takes the
        model between two summaries (or cuts one short, which is made again after it)."""
        summarizer = self.summarizer(model)
        targets = summarizer.plan(paths, everything=everything)
        result = summarizer.run(targets, progress, should_stop, gate=self.model_gate)
        self._embed_summaries(should_stop)
        return result

    def _embed_summaries(self, should_stop: Callable[[], bool] | None = None) -> None:
        """New summaries change their chunks' embedding documents: embed those (an index with
        vectors only; search uses the vectors they replace until then)."""
        from coderag_tui.indexing.embedder import vec_ready

        if self.settings.embed.enabled and vec_ready(self.db) and self.vectors_pending():
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

    if TYPE_CHECKING:
        from coderag_tui.answering.describe import FileDescription as _FileDescription
        from coderag_tui.answering.model_gate import ModelGate as _ModelGate
        from coderag_tui.answering.summarize import Summarizer as _Summarizer
        from coderag_tui.answering.summarize import SummarizeResult as _SummarizeResult
        from coderag_tui.answering.summary_runner import BackgroundSummaries as _BackgroundSummaries
        from coderag_tui.models import ComposedContext as _ComposedContext
