"""The service over a store given by URL (`--store postgresql://...` or `[index] store`): index,
embed, counts and hybrid search through the `StoreBackend` interface. The commands that need
the SQLite index's own tables (ask, context, graph commands, the app) say so in one line."""

from __future__ import annotations

import time
from pathlib import Path

from coderag_tui.config import Settings, load_settings
from coderag_tui.errors import RepoError, StoreError
from coderag_tui.indexing import store_build
from coderag_tui.indexing.embedder import EmbeddingModel, EmbedSummary, load_model
from coderag_tui.models import IndexCounts, IndexSummary, SearchFilters, SearchHit, UnitRef
from coderag_tui.retrieval import store_search
from coderag_tui.store.backend import StoreBackend, open_store, redact


class StoreService:
    """One repository indexed into a store opened by URL."""

    def __init__(self, root: Path, settings: Settings, store: StoreBackend, url: str) -> None:
        self.root = root
        self.settings = settings
        self.store = store
        self.display_name = root.name
        self.where = redact(url)
        self._model: EmbeddingModel | None = None

    @classmethod
    def open(cls, url: str, repo: str | Path | None, config: str | Path | None = None) -> StoreService:
        root = Path(repo or ".").resolve()
        if not root.is_dir():
            raise RepoError(f"{root} is not a folder", "with --store, give a local repository folder")
        settings = load_settings(root, config)
        return cls(root, settings, open_store(url), url)

    def index(self, rebuild: bool = False, progress: store_build.ProgressFn | None = None) -> IndexSummary:
        if rebuild:
            for path in self.store.files():
                self.store.delete_file(path)
            self.store.replace_skips({})  # every file is read again
        return store_build.build(self.store, self.root, self.settings, progress)

    def model(self) -> EmbeddingModel:
        if self._model is None:
            self._model = load_model(self.settings.embed)
        return self._model

    def vectors_pending(self) -> bool:
        return self.settings.embed.enabled and bool(self.store.chunks_without_vector(self.model().id, 1))

    def embed(self, progress: store_build.ProgressFn | None = None) -> EmbedSummary:
        start = time.perf_counter()
        model = self.model()
        written = store_build.embed(self.store, model, progress)
        seconds = time.perf_counter() - start
        chunks = self.store.counts().chunks
        return EmbedSummary(model.id, model.dim, chunks, written, max(chunks - written, 0), 0, False,
                            seconds, written / seconds if seconds > 0 else 0.0)

    def counts(self) -> IndexCounts:
        return self.store.counts()

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

    def has_index(self) -> bool:
        return bool(self.store.files())

    def close(self) -> None:
        self.store.close()

    def __getattr__(self, name: str) -> object:
        # the SQLite service's other methods (ask, context, graph commands, status...): one line
        raise _Unsupported(f"this does not run on a store given by URL yet ({self.where}): "
                           "index, search and symbol do", "leave out --store / [index] store")


class _Unsupported(StoreError, AttributeError):
    """A method the service over a URL lacks: a user's one-line error, and `hasattr` is False."""
