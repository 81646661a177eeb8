"""A workspace on this machine seen as one service: the methods the commands call on `CodeRag`
(status, index, search, context, symbols, callers, callees, ask) over several repositories,
each with its own index file, results naming their repository. `coderag search --workspace`
and `coderag index A B` use it; no server is involved."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from coderag_tui.models import (
    AnswerEvent,
    ComposedContext,
    EdgeRef,
    IndexCounts,
    IndexStatus,
    SearchHit,
    UnitRef,
)
from coderag_tui.workspace import Workspace
from coderag_tui.workspace.links import Links

if TYPE_CHECKING:
    from coderag_tui.models import SearchFilters


class WorkspaceService:
    """`repos`: the names chosen among the workspace's (none: all of them)."""

    def __init__(self, workspace: Workspace, repos: Sequence[str] = ()) -> None:
        self.workspace = workspace
        self.repos = [n for n, _ in workspace.chosen(list(repos) or None)]
        first = workspace.services[self.repos[0]]
        self.settings = first.settings
        self.root = first.root
        self.display_name = ", ".join(self.repos)
        self.vectors_in_memory = False

    @property
    def chosen(self) -> list[tuple[str, Any]]:
        return [(n, self.workspace.services[n]) for n in self.repos]

    def close(self) -> None:
        self.workspace.close()

    # ------------------------------------------------------------------ index
    def statuses(self) -> list[tuple[str, IndexStatus]]:
        return self.workspace.status(self.repos)

    def status(self) -> IndexStatus:
        """The first repository's status with the files of all (what `ask` checks first)."""
        statuses = [s for _, s in self.statuses()]
        return dataclasses.replace(statuses[0], files=sum(s.files for s in statuses))

    def has_index(self) -> bool:
        return all(s.has_index() for _, s in self.chosen)

    def counts(self) -> IndexCounts:
        return self.chosen[0][1].counts()

    def index(self, **kw: Any) -> Any:
        """Index every chosen repository (see `coderag index`); the first one's summary."""
        summaries = [s.index(**kw) for _, s in self.chosen]
        return summaries[0]

    # ------------------------------------------------------------------ search
    def check_filters(self, filters: SearchFilters | None) -> SearchFilters | None:
        return filters  # each index checks them (Workspace.search), with the same one-line errors

    def search(self, query: str, k: int | None = None, filters: SearchFilters | None = None) -> list[SearchHit]:
        return self.workspace.search(query, k, filters, self.repos)

    def search_files(self, query: str, k: int | None = None,
                     filters: SearchFilters | None = None) -> list[SearchHit]:
        return self.workspace.search(query, k, filters, self.repos, files=True)

    def context(self, query: str, max_tokens: int | None = None,
                count_tokens: Callable[[str], int] | None = None) -> ComposedContext:
        return self.workspace.context(query, max_tokens, repos=self.repos, count_tokens=count_tokens)[1]

    def symbols(self, name: str, limit: int = 20) -> list[UnitRef]:
        return self.workspace.symbols(name, limit, self.repos)

    def callers(self, name: str, limit: int = 200) -> list[EdgeRef]:
        return self.workspace.structural("called_by", name, self.repos, limit)  # type: ignore[return-value]

    def callees(self, name: str, limit: int = 200) -> list[EdgeRef]:
        return self.workspace.structural("calls", name, self.repos, limit)  # type: ignore[return-value]

    def importers(self, path: str) -> list[UnitRef]:
        return self.workspace.structural("files_importing", path, self.repos)  # type: ignore[return-value]

    def links(self) -> Links:
        return Links(self.chosen)

    # ------------------------------------------------------------------ answering
    def ask(self, question: str, conversation_id: int | None = None, *, model: str | None = None,
            should_stop: Callable[[], bool] | None = None, attachment: str = "",
            fresh: bool = False) -> Iterator[AnswerEvent]:
        repos = self.repos if len(self.repos) > 1 else None
        _, answer = self.workspace.ask(question, conversation_id, repo=None if repos else self.repos[0],
                                       repos=repos, fresh=fresh, attachment=attachment, model=model,
                                       should_stop=should_stop)
        return answer
