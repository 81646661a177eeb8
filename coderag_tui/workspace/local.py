"""A workspace on this machine seen as one service: the methods the commands call on `CodeRag`
(status, index, search, context, symbols, callers, callees, ask) over several repositories,
each with its own index file, results naming their repository. `coderag search --workspace`
and `coderag index A B` use it; no server is involved."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coderag_tui.contract import ProgressFn, Unsupported
from coderag_tui.errors import RepoError
from coderag_tui.models import (
    AnswerEvent,
    ComposedContext,
    EdgeRef,
    FileState,
    IndexCounts,
    IndexStatus,
    IndexSummary,
    ModelInfo,
    SearchHit,
    UnitRef,
    WatchEvent,
)
from coderag_tui.workspace import Workspace
from coderag_tui.workspace.links import Links
from coderag_tui.workspace.watch import WorkspaceWatcher, merge_summaries, watch_all

if TYPE_CHECKING:
    from coderag_tui.answering.answerer import StoredMessage
    from coderag_tui.answering.describe import FileDescription
    from coderag_tui.answering.discovery import ServedModel
    from coderag_tui.answering.summarize import SummarizeResult, SummaryEstimate
    from coderag_tui.answering.toolbox import CodeRagTools
    from coderag_tui.indexing.embedder import EmbedSummary
    from coderag_tui.models import SearchFilters
    from coderag_tui.review.build import Review
    from coderag_tui.service import CodeRag


class WorkspaceService:
    """`repos`: the names chosen among the workspace's (none: all of them). `tree_paths` (the
    app): every path is `repo/path`, so that a tree of them has the repositories at its top,
    and every path given back is routed to its repository."""

    def __init__(self, workspace: Workspace, repos: Sequence[str] = (), tree_paths: bool = False) -> None:
        self.workspace = workspace
        self.tree_paths = tree_paths
        self.repos = [n for n, _ in workspace.chosen(list(repos) or None)]
        first = workspace.services[self.repos[0]]
        self.settings = first.settings
        self.root = first.root
        self.display_name = ", ".join(self.repos)
        # what the app calls it (its title, "Ask anything about ...")
        self.name = f"{len(self.repos)} repositories" if len(self.repos) > 1 else self.repos[0]
        self.vectors_in_memory = False
        self.long_lived = False
        self.selected_model: str | None = None
        if tree_paths:  # the folder holding them (an editor opens `repo/path` under it)
            roots = [str(workspace.services[n].root) for n in self.repos]
            self.root = Path(os.path.commonpath(roots)) if len(roots) > 1 else first.root

    @property
    def chosen(self) -> list[tuple[str, CodeRag]]:
        return [(n, self.workspace.services[n]) for n in self.repos]

    def repositories(self) -> list[tuple[str, CodeRag]]:
        return self.chosen

    @property
    def first(self) -> CodeRag:
        """The repository that answers, keeps the conversations and picks the model."""
        return self.chosen[0][1]

    def _alone(self, what: str) -> CodeRag:
        """The one chosen repository; Unsupported over several (`what` needs one)."""
        if len(self.repos) > 1:
            raise Unsupported(f"{what} works on one repository at a time (unit ids are each index's own)",
                              "choose one: --repo NAME")
        return self.first

    @property
    def capabilities(self) -> frozenset[str]:
        """What every chosen repository can do (review and summaries are one repository's)."""
        from coderag_tui.contract import INDEX, WATCH

        return frozenset({INDEX, WATCH}.intersection(*(s.capabilities for _, s in self.chosen)))

    def close(self) -> None:
        self.workspace.close()

    # ------------------------------------------------------------------ index
    def statuses(self) -> list[tuple[str, IndexStatus]]:
        return self.workspace.status(self.repos)

    def status(self) -> IndexStatus:
        """The first repository's status with the counts of all added up (the app's status
        bar, and what `ask` checks first)."""
        statuses = [s for _, s in self.statuses()]
        total = {k: sum(getattr(s, k) for s in statuses)
                 for k in ("files", "units", "chunks", "edges", "vectors", "errors", "index_bytes")}
        skips: dict[str, int] = {}
        for st in statuses:
            for reason, n in st.skips.items():
                skips[reason] = skips.get(reason, 0) + n
        return dataclasses.replace(statuses[0], skips=skips, **total)

    def has_index(self) -> bool:
        return all(s.has_index() for _, s in self.chosen)

    def counts(self) -> IndexCounts:
        """Every chosen repository's counts, added up."""
        counts = [s.counts() for _, s in self.chosen]
        return IndexCounts(*(sum(getattr(c, f.name) for c in counts) for f in dataclasses.fields(IndexCounts)))

    def index(self, *, rebuild: bool = False, only: Sequence[str] | None = None,
              progress: ProgressFn | None = None) -> IndexSummary:
        """Index every chosen repository (see `coderag index`), or only the files `only` names
        (`repo/path` or `repo:path`, as the app's tree and watcher give them); one summary."""
        groups: dict[str, list[str]] = {}
        for path in only or ():
            name, _, rest = self._split(path)
            groups.setdefault(name, []).append(rest)
        summaries = [(name, s.index(rebuild=rebuild, only=groups[name] if only is not None else None,
                                    progress=progress))
                     for name, s in self.chosen if only is None or name in groups]
        return merge_summaries(summaries, self.tree_paths)

    def embed(self, progress: ProgressFn | None = None,
              should_stop: Callable[[], bool] | None = None) -> EmbedSummary | None:
        """Embed the chunks without a vector in each chosen repository whose vectors are on;
        the last repository's summary (None when none has vectors on)."""
        last = None
        for _, service in self.chosen:
            if should_stop is not None and should_stop():
                break
            if service.settings.embed.enabled:
                last = service.embed(progress=progress, should_stop=should_stop) or last
        return last

    def vectors_pending(self) -> bool:
        return any(s.vectors_pending() for _, s in self.chosen)

    def watch(self, on_event: Callable[[WatchEvent], None] | None = None, *, initial_index: bool = False,
              debounce_ms: int | None = None, progress: ProgressFn | None = None,
              embed: bool = True) -> WorkspaceWatcher:
        """Watch every chosen repository: each re-indexes its own index; events name `repo/path`
        in the app's tree (see `CodeRag.watch` for the keywords)."""
        return watch_all(self.chosen, on_event, self.tree_paths, initial_index=initial_index,
                         debounce_ms=debounce_ms, progress=progress, embed=embed)

    # ------------------------------------------------------------------ search
    def check_filters(self, filters: SearchFilters | None) -> SearchFilters | None:
        return filters  # each index checks them (Workspace.search), with the same one-line errors

    def search(self, query: str, k: int | None = None, filters: SearchFilters | None = None) -> list[SearchHit]:
        return [self._hit(h) for h in self.workspace.search(query, k, filters, self.repos)]

    def search_files(self, query: str, k: int | None = None,
                     filters: SearchFilters | None = None) -> list[SearchHit]:
        return [self._hit(h) for h in self.workspace.search(query, k, filters, self.repos, files=True)]

    def context(self, query: str, max_tokens: int | None = None,
                count_tokens: Callable[[str], int] | None = None,
                strategy: str = "relevance") -> ComposedContext:
        return self.workspace.context(query, max_tokens, repos=self.repos, count_tokens=count_tokens,
                                      strategy=strategy)[1]

    def similar(self, unit_id: int, k: int | None = None) -> list[SearchHit]:
        return [self._hit(h) for h in self._alone("similar").similar(unit_id, k)]

    def unit(self, unit_id: int) -> UnitRef | None:
        found = self._alone("a unit by id").unit(unit_id)
        return self._unit(dataclasses.replace(found, repo=self.repos[0])) if found is not None else None

    def repo_map(self, max_tokens: int | None = None, query: str | None = None) -> str:
        """Each repository's map under its name, the budget shared."""
        share = max(64, (max_tokens or self.first.settings.context.repo_map_tokens) // len(self.repos))
        return "\n\n".join(f"# {name}\n{s.repo_map(share, query)}" for name, s in self.chosen)

    def symbols(self, name: str, limit: int = 20) -> list[UnitRef]:
        return [self._unit(u) for u in self.workspace.symbols(name, limit, self.repos)]

    def _edges(self, kind: str, name: str, limit: int) -> list[EdgeRef]:
        edges: list[EdgeRef] = self.workspace.structural(kind, name, self.repos, limit)  # type: ignore[assignment]
        return [dataclasses.replace(e, unit=e.unit and self._unit(e.unit), source=e.source and self._unit(e.source))
                for e in edges]

    def callers(self, name: str, limit: int = 200) -> list[EdgeRef]:
        return self._edges("called_by", name, limit)

    def callees(self, name: str, limit: int = 200) -> list[EdgeRef]:
        return self._edges("calls", name, limit)

    def tests_for(self, name: str) -> list[EdgeRef]:
        return self._edges("tested_by", name, 200)

    # ------------------------------------------------------------------ files (the app)
    def _unit(self, unit: UnitRef) -> UnitRef:
        return dataclasses.replace(unit, path=f"{unit.repo}/{unit.path}") if self.tree_paths and unit.repo else unit

    def _hit(self, hit: SearchHit) -> SearchHit:
        return dataclasses.replace(hit, unit=self._unit(hit.unit)) if self.tree_paths else hit

    def _split(self, path: str) -> tuple[str, Any, str]:
        """(repository, its service, the path in it) of `repo/path` or `repo:path`."""
        for sep in ("/", ":"):
            head, found, rest = path.partition(sep)
            if found and head in self.repos:
                return head, self.workspace.services[head], rest
        raise RepoError(f"{path!r} is in no repository of this workspace", "repositories: " + ", ".join(self.repos))

    def files(self) -> list[FileState]:
        """Every file of every chosen repository, as `repo/path`."""
        return [dataclasses.replace(f, path=f"{name}/{f.path}") for name, s in self.chosen for f in s.files()]

    def outline(self, path: str) -> list[UnitRef]:
        name, service, rest = self._split(path)
        return [self._unit(dataclasses.replace(u, repo=name)) for u in service.outline(rest)]

    def units_at(self, path: str, line: int) -> list[UnitRef]:
        name, service, rest = self._split(path)
        return [self._unit(dataclasses.replace(u, repo=name)) for u in service.units_at(rest, line)]

    def read_lines(self, path: str, start: int = 1, end: int | None = None) -> list[str]:
        _, service, rest = self._split(path)
        lines: list[str] = service.read_lines(rest, start, end)
        return lines

    def importers(self, path: str) -> list[UnitRef]:
        return self.workspace.structural("files_importing", path, self.repos)  # type: ignore[return-value]

    def links(self) -> Links:
        return self.workspace.links(self.chosen)

    # ------------------------------------------------------------------ answering
    # the first repository answers and keeps the conversations (see across.py)
    def model_info(self, model: str | None = None) -> ModelInfo:
        return self.first.model_info(model or self.selected_model)

    def list_models(self, model: str | None = None, *, discover: bool = True) -> list[ModelInfo]:
        return self.first.list_models(model, discover=discover)

    def select_model(self, name: str | None) -> ModelInfo:
        raise Unsupported("the model of a workspace is its first repository's configured one",
                          "open one repository to pick another, or give ask --model NAME")

    def served_models(self, refresh: bool = False) -> list[ServedModel]:
        return self.first.served_models(refresh)

    def conversations(self, limit: int = 100) -> list[tuple[int, str, float, int, str]]:
        return list(self.first.conversations(limit))

    def load_conversation(self, conversation_id: int) -> list[StoredMessage]:
        return self.first.load_conversation(conversation_id)

    def ask(self, question: str, conversation_id: int | None = None, *, model: str | None = None,
            should_stop: Callable[[], bool] | None = None, attachment: str = "",
            fresh: bool = False) -> Iterator[AnswerEvent]:
        repos = self.repos if len(self.repos) > 1 else None
        _, answer = self.workspace.ask(question, conversation_id, repo=None if repos else self.repos[0],
                                       repos=repos, fresh=fresh, attachment=attachment, model=model,
                                       should_stop=should_stop)
        if self.tree_paths and not repos:  # one repository's answer: its sources as the tree's paths
            name = self.repos[0]
            return (dataclasses.replace(e, sources=tuple(dataclasses.replace(s, path=f"{name}/{s.path}")
                                                         for s in e.sources)) if e.sources else e
                    for e in answer)
        return answer

    # ------------------------------------------------------------------ one repository's work
    def review(self, base: str = "HEAD", *, diff_text: str | None = None, diff_label: str = "",
               max_tokens: int | None = None, update_index: bool = True, similar: int = 3,
               count_tokens: Callable[[str], int] | None = None) -> Review:
        raise Unsupported("a review is of one repository's change", "run it in that repository: --repo NAME")

    def summary_estimate(self, paths: Sequence[str] | None = None, *, everything: bool = False,
                         model: str | None = None) -> SummaryEstimate:
        raise Unsupported("summaries are made for one repository at a time", "choose one: --repo NAME")

    def summarize(self, paths: Sequence[str] | None = None, *, everything: bool = False, model: str | None = None,
                  progress: ProgressFn | None = None,
                  should_stop: Callable[[], bool] | None = None) -> SummarizeResult:
        raise Unsupported("summaries are made for one repository at a time", "choose one: --repo NAME")

    def start_summaries(self, progress: ProgressFn | None = None) -> bool:
        return False  # each repository's summaries are made where it is opened alone

    def stop_summaries(self, timeout: float = 5.0) -> None:
        for _, service in self.chosen:
            service.stop_summaries(timeout)

    def descriptions(self, paths: Sequence[str] | None = None) -> list[FileDescription]:
        """The file descriptions of the chosen repositories (`paths`: `repo/path` or `repo:path`,
        each routed to its repository; none: every file), paths named as `paths` name them
        (`repo/path` in the app's tree, else `repo:path`)."""
        groups: dict[str, list[str]] = {}
        for path in paths or ():
            name, _, rest = self._split(path)
            groups.setdefault(name, []).append(rest)
        sep = "/" if self.tree_paths else ":"
        return [dataclasses.replace(d, path=f"{name}{sep}{d.path}") for name, s in self.chosen
                if paths is None or name in groups
                for d in s.descriptions(groups[name] if paths is not None else None)]

    def tools(self) -> CodeRagTools:
        """The tools over every chosen repository (paths as `repo/path`)."""
        from coderag_tui.workspace.tools import WorkspaceTools

        return WorkspaceTools(self)
