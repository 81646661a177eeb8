"""Several repositories served together: each keeps its own index (a `CodeRag`), and searches
run over all of them or a chosen set, each result naming its repository.

What the HTTP server exposes is here, so that the server itself only parses and serialises.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from coderag_tui.errors import CoderagError, NotFoundError, RepoError
from coderag_tui.models import (
    EdgeRef,
    FileState,
    IndexStatus,
    IndexSummary,
    SearchFilters,
    SearchHit,
    UnitRef,
    WatchEvent,
)
from coderag_tui.retrieval.filters import FilterError
from coderag_tui.service import CodeRag
from coderag_tui.store import read
from coderag_tui.workspace.events import UpdateEvents
from coderag_tui.workspace.jobs import Job, Jobs
from coderag_tui.workspace.links import Links

if TYPE_CHECKING:
    from coderag_tui.models import AnswerEvent, ComposedContext
    from coderag_tui.workspace.refresh import Refresher

__all__ = ["Job", "Jobs", "Workspace", "repo_name"]

STRUCTURAL = ("calls", "called_by", "tested_by", "methods_of", "files_importing")


def built_event(summary: IndexSummary, what: str = "built") -> WatchEvent:
    """A build's or an update's summary as the event its followers get."""
    noun = "file" if summary.files_indexed == 1 else "files"
    text = (f"{what}: {summary.files_indexed} {noun} indexed ({summary.files_unchanged} unchanged, "
            f"{summary.files_deleted} deleted) in {summary.seconds:.2f}s")
    return WatchEvent("indexed", summary=summary, message=text, seconds=summary.seconds, full=True)


def repo_name(service: CodeRag) -> str:
    """A short name for a repository: its folder's (or URL's) last part, safe in URLs."""
    base = service.display_name.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.") or "repo"


def tag_unit(unit: UnitRef, name: str) -> UnitRef:
    return dataclasses.replace(unit, repo=name)


def tag_hit(hit: SearchHit, name: str) -> SearchHit:
    return dataclasses.replace(hit, unit=tag_unit(hit.unit, name))


def _tag_edge(edge: EdgeRef, name: str) -> EdgeRef:
    return dataclasses.replace(edge, unit=edge.unit and tag_unit(edge.unit, name),
                               source=edge.source and tag_unit(edge.source, name))


class Workspace:
    """Named repositories, in the order given; names are unique (a second `app` is `app-2`)."""

    def __init__(self, services: Sequence[CodeRag]) -> None:
        if not services:
            raise RepoError("no repository to serve", "give one or more folders or git URLs")
        self.services: dict[str, CodeRag] = {}
        for service in services:
            base = name = repo_name(service)
            n = 1
            while name in self.services:
                n += 1
                name = f"{base}-{n}"
            self.services[name] = service
        self.jobs = Jobs()
        # model work (summaries) queues apart: hours of it must not hold up the index's updates
        self.model_jobs = Jobs()
        self.events = UpdateEvents()  # every index update as it happens (GET /index/events)
        self._links: dict[tuple[tuple[str, str], ...], Links] = {}
        self._links_lock = threading.Lock()
        self.refresher: Refresher | None = None

    def keep_current(self, interval_s: float, watch: bool = True) -> Refresher:
        """Keep the repositories current from now on (refresh.py): git URLs fetched every
        `interval_s` seconds (0: only when `refresh` is called), local folders watched."""
        from coderag_tui.workspace.refresh import Refresher

        self.refresher = Refresher(self, interval_s, watch).start()
        return self.refresher

    def refresh(self, names: Sequence[str]) -> list[Job]:
        """An update (fetch, index, embed) of each named repository now (a push webhook)."""
        if self.refresher is None:
            from coderag_tui.workspace.refresh import Refresher

            self.refresher = Refresher(self, 0, watch=False)
        return self.refresher.trigger([name for name, _ in self.chosen(names)])

    def origins(self) -> dict[str, str]:
        """The served repositories that are git URLs: {name: URL} (the URL as given)."""
        from coderag_tui.workspace.refresh import origin_of

        return {name: url for name, service in self.services.items() if (url := origin_of(service))}

    def freshness(self, name: str) -> dict[str, Any]:
        """How current a repository is: {kind, commit, checked, updated, running, error,
        watching} (empty while nothing keeps it current)."""
        return self.refresher.state_json(name) if self.refresher is not None else {}

    def close(self) -> None:
        if self.refresher is not None:
            self.refresher.stop()
        self.jobs.close()
        self.model_jobs.close()
        for service in self.services.values():
            service.close()

    # ------------------------------------------------------------------ choosing repositories
    def chosen(self, repos: Sequence[str] | None = None) -> list[tuple[str, CodeRag]]:
        """The named repositories (all when none is named); RepoError for a name not served."""
        if not repos:
            return list(self.services.items())
        return [(name, self.get(name)) for name in dict.fromkeys(repos)]

    def get(self, name: str) -> CodeRag:
        service = self.services.get(name)
        if service is None:
            close = difflib.get_close_matches(name, list(self.services), n=1)
            hint = f"did you mean {close[0]!r}?" if close else "served: " + ", ".join(self.services)
            raise RepoError(f"no repository named {name!r} here", hint)
        return service

    def one(self, repo: str | None, query: str = "") -> tuple[str, CodeRag]:
        """The repository a question goes to: the one named, the only one, or the one whose best
        search hit for `query` scores highest."""
        if repo:
            return repo, self.get(repo)
        if len(self.services) == 1:
            return next(iter(self.services.items()))
        if not query:
            raise CoderagError("several repositories are served here: name one",
                               "repo: " + ", ".join(self.services))
        best = self.search(query, 1)
        return (best[0].unit.repo, self.services[best[0].unit.repo]) if best else next(iter(self.services.items()))

    # ------------------------------------------------------------------ reading
    def status(self, repos: Sequence[str] | None = None) -> list[tuple[str, IndexStatus]]:
        return [(name, s.status()) for name, s in self.chosen(repos)]

    def search(self, query: str, k: int | None = None, filters: SearchFilters | None = None,
               repos: Sequence[str] | None = None, files: bool = False) -> list[SearchHit]:
        """Each repository's hits, merged by score (each repository ranks with the same fusion,
        so the scores compare), best first. A filter value that no chosen index has is an
        error (FilterError names the closest); one that some lack only leaves those out."""
        merged: list[SearchHit] = []
        chosen = self.chosen(repos)
        refused: list[FilterError] = []
        for name, service in chosen:
            try:
                checked = service.check_filters(filters) if filters is not None else None
            except FilterError as exc:  # a language or kind this repository lacks: none of its code
                refused.append(exc)
                continue
            hits = service.search_files(query, k, checked) if files else service.search(query, k, checked)
            merged.extend(tag_hit(h, name) for h in hits)
        if refused and len(refused) == len(chosen):
            raise refused[0]  # no repository has it: a misspelling, said with the closest value
        merged.sort(key=lambda h: -h.score)
        return merged[: k or len(merged)]

    def symbols(self, name: str, limit: int = 20, repos: Sequence[str] | None = None) -> list[UnitRef]:
        """Each repository's best matches in turn (its own ranking: exact, qualified, fuzzy)."""
        lists = [[tag_unit(u, repo) for u in service.symbols(name, limit)]
                 for repo, service in self.chosen(repos)]
        out = [u for row in itertools.zip_longest(*lists) for u in row if u is not None]
        return out[:limit]

    def context(self, query: str, max_tokens: int | None = None, repo: str | None = None,
                repos: Sequence[str] | None = None,
                count_tokens: Callable[[str], int] | None = None,
                strategy: str = "relevance") -> tuple[str, ComposedContext]:
        """Context from one repository (`repo`, or the best match), or, with two or more
        `repos` (["*"]: all), from each of them under one budget, each piece's path naming its
        repository (then the name returned is ",".join of the repositories)."""
        if repos and not repo:
            chosen = self.chosen(None if list(repos) == ["*"] else repos)
            if len(chosen) > 1:
                from coderag_tui.workspace.across import compose_across

                ctx = compose_across(chosen, query, max_tokens, self.top_hits(query, chosen), count_tokens,
                                     strategy)
                return ",".join(n for n, _ in chosen), ctx
            repo = chosen[0][0]
        name, service = self.one(repo, query)
        ctx = service.context(query, max_tokens=max_tokens, strategy=strategy)
        return name, dataclasses.replace(ctx, hits=tuple(tag_hit(h, name) for h in ctx.hits))

    def unit(self, unit_id: int, repo: str | None = None) -> dict[str, Any] | None:
        """A unit with its model summary (when made), its parent, children, callers and callees."""
        name, service = self.one(repo)
        unit = service.unit(unit_id)
        if unit is None:
            return None
        parent = service.unit(unit.parent_id) if unit.parent_id else None
        db = service.db
        summary = read.file_summaries(db, unit.path).get(unit.id, "")
        return {
            "repository": name,
            "unit": tag_unit(unit, name),
            "summary": summary,
            "relationships": {
                "parent": parent and tag_unit(parent, name),
                "children": [tag_unit(u, name) for u in read.children(db, unit.id)],
                "callers": [_tag_edge(e, name) for e in read.callers(db, [unit.id])],
                "callees": [_tag_edge(e, name) for e in read.callees(db, [unit.id])],
            },
        }

    def structural(self, kind: str, target: str, repos: Sequence[str] | None = None,
                   limit: int = 200) -> list[EdgeRef] | list[UnitRef]:
        """calls (what `target` calls), called_by (who calls it), tested_by (the tests that
        exercise it), methods_of (a class's members), files_importing (files that import the
        file `target`)."""
        if kind not in STRUCTURAL:
            raise CoderagError(f"unknown structural query {kind!r}", "one of: " + ", ".join(STRUCTURAL))
        edges: list[EdgeRef] = []
        units: list[UnitRef] = []
        chosen = self.chosen(repos)
        links = self.links(chosen) if len(chosen) > 1 and kind in ("calls", "called_by", "files_importing") else None
        for name, service in chosen:
            if kind == "calls":
                found = [_tag_edge(e, name) for e in service.callees(target, limit)]
                if links is not None:  # calls left unresolved here that another repository defines
                    crossed = links.callees(name, [e.source for e in found if e.source is not None])
                    found = [crossed.get((e.source.id, e.line, e.name), e) if e.unit is None and e.source else e
                             for e in found]
                edges += found
            elif kind == "called_by":
                edges += [_tag_edge(e, name) for e in service.callers(target, limit)]
            elif kind == "tested_by":
                edges += [_tag_edge(e, name) for e in service.tests_for(target)]
            elif kind == "methods_of":
                for owner in service.symbols(target, 5):
                    if owner.kind != "file" and owner.qualname == target.strip().rstrip("()"):
                        units += [tag_unit(u, name) for u in read.children(service.db, owner.id)]
            else:
                units += [tag_unit(u, name) for u in read.importers(service.db, target.partition(":")[2]
                                                                   if target.startswith(name + ":") else target)]
        if links is not None and kind == "called_by":
            edges += links.callers({name: service._definitions(target) for name, service in chosen}, limit)
        elif links is not None and kind == "files_importing":
            units += links.importers(target)
        return edges[:limit] if kind in ("calls", "called_by", "tested_by") else units[:limit]

    def links(self, chosen: Sequence[tuple[str, CodeRag]]) -> Links:
        """The cross-repository links of `chosen`, kept while no index of them changes."""
        key = tuple((name, service.db.get_meta("last_update") or "") for name, service in chosen)
        with self._links_lock:
            links = self._links.get(key)
            if links is None:
                links = self._links[key] = Links(chosen)
                for old in list(self._links)[:-8]:  # the last few sets of repositories asked about
                    del self._links[old]
        return links

    def top_hits(self, query: str, chosen: Sequence[tuple[str, CodeRag]]) -> list[SearchHit]:
        """The merged search's best hits over `chosen` (what shares a budget among them)."""
        from coderag_tui.workspace.across import TOP_HITS

        return self.search(query, TOP_HITS, repos=[n for n, _ in chosen])

    def ask(self, question: str, conversation_id: int | None = None, *, repo: str | None = None,
            repos: Sequence[str] | None = None, fresh: bool = False, attachment: str = "",
            model: str | None = None,
            should_stop: Callable[[], bool] | None = None,
            owner: str | None = None) -> tuple[str, Iterator[AnswerEvent]]:
        """(the repository asked, its answer's events): `CodeRag.ask` of the named repository or,
        for several, of the one that holds the best match for the question. With two or more
        `repos` (["*"]: all), one answer from the code of all of them (see across.py); the
        first keeps the conversation. `owner` (a server's caller): a `conversation_id` that is
        not theirs raises NotFoundError here, before any answer starts."""
        if repos and not repo:
            chosen = self.chosen(None if list(repos) == ["*"] else repos)
            if len(chosen) > 1:
                from coderag_tui.workspace.across import ask_across

                self._check_owner(chosen[0][1], conversation_id, owner)
                return ",".join(n for n, _ in chosen), ask_across(
                    chosen, question, lambda q: self.top_hits(q, chosen), conversation_id, model=model,
                    should_stop=should_stop, attachment=attachment,
                    tools=lambda: self.tools([n for n, _ in chosen]), owner=owner)
            repo = chosen[0][0]
        if conversation_id and not repo and len(self.services) > 1:
            raise RepoError("a conversation belongs to one repository", "name it (repo)")
        name, service = self.one(repo, question)
        self._check_owner(service, conversation_id, owner)
        return name, service.ask(question, conversation_id, should_stop=should_stop, fresh=fresh,
                                 attachment=attachment, model=model, owner=owner)

    @staticmethod
    def _check_owner(service: CodeRag, conversation_id: int | None, owner: str | None) -> None:
        """A conversation is continued only by whoever started it: for anyone else it does not
        exist (the same answer as for an id never used, so ids tell nothing)."""
        if conversation_id and owner is not None and service.conversation_owner(conversation_id) != owner:
            raise NotFoundError(f"no conversation {conversation_id}")

    def tools(self, repos: Sequence[str]) -> Any:
        """A model's tools over these repositories, citing `repo:path` as an answer across
        them does; they never wait for a first index (asking needs one already)."""
        from coderag_tui.workspace.local import WorkspaceService
        from coderag_tui.workspace.tools import WorkspaceTools

        tools = WorkspaceTools(WorkspaceService(self, repos, tree_paths=True), sep=":")
        tools.ready.set()
        return tools

    # ------------------------------------------------------------------ indexing
    def build(self, repos: Sequence[str] | None = None, *, rebuild: bool = False,
              embed: bool = True) -> Job:
        """Index (then embed) the chosen repositories on the jobs' worker, one job at a time."""
        chosen = self.chosen(repos)

        def work(job: Job) -> None:
            for name, service in chosen:
                job.note(name, "index")
                summary = service.index(rebuild=rebuild, progress=job.progress)
                job.summaries[name] = dataclasses.asdict(summary)
                self.events.publish(name, built_event(summary))
                if embed and service.settings.embed.enabled:
                    job.note(name, "embed")
                    service.embed(progress=job.progress, should_stop=job.stopping)

        return self.jobs.submit([name for name, _ in chosen], work)

    def ensure_indexed(self, progress: Callable[..., None] | None = None) -> list[str]:
        """Index, before serving, the repositories that have never been indexed (their vectors
        follow in a job); returns their names."""
        fresh = [name for name, s in self.services.items() if not s.has_index()]
        for name in fresh:
            self.services[name].index(progress=progress)
        if any(s.vectors_pending() for s in self.services.values()):
            self.build(embed=True)
        return fresh

    @staticmethod
    def store_health() -> list[dict[str, Any]]:
        """Each database server this process reads (PostgreSQL), checked now: [{store, up,
        since, error}] (none for index files)."""
        import sys

        if "coderag_tui.store.postgres.connect" not in sys.modules:  # no PostgreSQL store was opened
            return []
        from coderag_tui.store.postgres.connect import store_health

        return [{"store": h.shown, "up": h.up, "since": h.since, "error": h.why} for h in store_health()]

    def health(self) -> str:
        """ok, indexing (a job is running), empty (a repository has no files) or errors."""
        if self.jobs.busy():
            return "indexing"
        statuses = [s for _, s in self.status()]
        if any(s.files == 0 for s in statuses):
            return "empty"
        return "errors" if any(s.errors for s in statuses) else "ok"

    def files(self, repo: str | None = None) -> tuple[str, list[FileState]]:
        """Every file of a repository with its index state (the app's tree)."""
        name, service = self.one(repo)
        return name, service.files()

    def outline(self, path: str, repo: str | None = None) -> tuple[str, list[UnitRef]]:
        name, service = self.one(repo)
        return name, [tag_unit(u, name) for u in service.outline(path)]

    def lines(self, path: str, start: int, end: int, repo: str | None = None,
              most: int = 400) -> tuple[str, int, list[str]]:
        """(repository, the file's line count, lines start..end) of an indexed file, at most
        `most` lines. A file the index left out (a secret, an ignored folder) is refused, as
        the MCP tools refuse it: what is read here may go to a remote model."""
        name, service = self.one(repo)
        facts = read.file_facts(service.db, path)
        if facts is None:
            raise CoderagError(f"no file {path!r} in the index of {name}")
        first = max(1, start)
        return name, facts[1], service.read_lines(path, first, min(end, first + most - 1))

    # ------------------------------------------------------------------ search results' extras
    def snippet(self, hit: SearchHit, max_lines: int = 60) -> str:
        """The code of a hit: its best chunk, else its unit, at most `max_lines` lines."""
        unit = hit.unit
        start, end = (hit.chunk_start, hit.chunk_end) if hit.chunk_start else (unit.start_line, unit.end_line)
        try:
            lines = self.get(unit.repo).read_lines(unit.path, start, min(end, start + max_lines - 1))
        except CoderagError:  # the file changed or went away since it was indexed
            return ""
        return "\n".join(lines)

    def neighbours(self, unit: UnitRef, limit: int = 5) -> list[dict[str, Any]]:
        """A unit's callers and callees, a few of each, as {relation, name, path, line}."""
        db = self.get(unit.repo).db
        out: list[dict[str, Any]] = []
        for relation, edges in (("caller", read.callers(db, [unit.id])), ("callee", read.callees(db, [unit.id]))):
            for e in edges[:limit]:  # e.unit: the caller, or the callee when resolved
                name = e.unit.qualname if relation == "caller" and e.unit is not None else e.name
                path = e.unit.path if e.unit is not None else ""
                out.append({"relation": relation, "name": name, "path": path, "line": e.line})
        return out
