"""A `coderag serve` server seen as a service: the whole service contract (contract.py) answered
over HTTP and rebuilt into the same `models.py` dataclasses, so that `--server URL` prints what
a local index would. The server indexes, keeps its repositories current and answers with its
own models: builds, vectors and summaries are its jobs (an admin token), `watch` follows its
updates, `select_model` picks among its models, a review is of its git folder or of a diff sent."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from coderag_tui.client_http import ServerError, _raise_for, _reason, _segment, _sse, local_token
from coderag_tui.config import Settings
from coderag_tui.errors import CoderagError, RepoError
from coderag_tui.models import (
    AnswerEvent,
    ComposedContext,
    EdgeRef,
    FileDescription,
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
from coderag_tui.wire import WireError, decode

if TYPE_CHECKING:
    from coderag_tui.answering.answerer import StoredMessage
    from coderag_tui.answering.discovery import ServedModel
    from coderag_tui.answering.summarize import SummarizeResult, SummaryEstimate
    from coderag_tui.answering.toolbox import CodeRagTools
    from coderag_tui.client_parts import RemoteWatcher
    from coderag_tui.indexing.embedder import EmbedSummary
    from coderag_tui.review.build import Review

ProgressFn = Callable[[Progress], None]
__all__ = ["RemoteCodeRag", "ServerError", "_sse", "local_token"]

TIMEOUT_S = 60.0  # a request (an answer's stream waits for each event this long at most)


class RemoteCodeRag:
    """The service API of a server's repositories. `repos`: the ones to search (none: all);
    the first of them is the one `status`, `context` and `ask` use (none: the server picks)."""

    # the commands read these on a local service; a server keeps its own vectors and settings
    vectors_in_memory = True
    long_lived = False  # (the server's background work is its own)
    selected_model: str | None = None  # one of the server's models (`select_model`); None: its configured one

    def __init__(self, url: str, token: str = "", repos: Sequence[str] = (), settings: Settings | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        if not url.startswith(("http://", "https://")):
            raise ServerError(f"not a server URL: {url!r}", "give http://HOST:PORT")
        self.url = url.rstrip("/")
        self.token = token  # (in memory only: sent in a header, never shown)
        self.repos = [r for r in repos if r]
        self.settings = settings or Settings()
        self.display_name = f"{self.repos[0]} on {self.url}" if len(self.repos) == 1 else self.url
        # what the app shows as the repository's name (nothing is read under it here)
        self.root = Path(self.repos[0] if len(self.repos) == 1 else httpx.URL(self.url).host or "server")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._transport = transport
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=TIMEOUT_S, transport=transport,
                                  follow_redirects=False)
        self._capabilities: frozenset[str] | None = None

    @classmethod
    def from_settings(cls, url: str, settings: Settings, repos: Sequence[str] = ()) -> RemoteCodeRag:
        """A client whose token comes from the variable `[server] token_env` names, else (a
        server on this machine that made its own token) from the file that server wrote."""
        return cls(url, os.environ.get(settings.server.token_env, "") or local_token(url), repos, settings)

    def close(self) -> None:
        self._http.close()

    # ------------------------------------------------------------------ transport
    def _send(self, method: str, path: str, **kw: Any) -> Any:
        try:
            response = self._http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise ServerError(f"cannot reach the server at {self.url}: {_reason(exc)}",
                              "is `coderag serve` running there?") from None
        _raise_for(response, self.url)
        try:
            return response.json()
        except ValueError:
            raise WireError(f"the server at {self.url} sent something that is not JSON") from None

    def _one(self) -> str | None:
        return self.repos[0] if self.repos else None

    def _single(self) -> str | None:
        return None if self._across() else self._one()

    def _across(self) -> list[str] | None:
        """Two or more repositories named: context and answers come from all of them."""
        return self.repos if len(self.repos) > 1 else None

    def _get(self, path: str, **params: Any) -> Any:
        """GET `path` with `params` (those that are None left out) and the chosen repository."""
        return self._send("GET", path, params=self._repo_params(**{k: v for k, v in params.items() if v is not None}))

    # ------------------------------------------------------------------ index
    def _served(self, pending: bool = False) -> list[dict[str, Any]]:
        """Each repository of GET /index/status: {name, status, capabilities, ...} (and, with
        `pending`, vectors_pending)."""
        params = {"pending": "true"} if pending else None
        return list(self._send("GET", "/index/status", params=params)["repositories"])

    def _statuses(self) -> list[tuple[str, IndexStatus]]:
        return [(r["name"], decode(IndexStatus, r["status"])) for r in self._served()]

    def status(self) -> IndexStatus:
        statuses = self._statuses()
        one = self._one()
        for name, st in statuses:
            if one is None or name == one:
                return st
        raise RepoError(f"the server has no repository named {one!r}",
                        "served: " + ", ".join(n for n, _ in statuses))

    def statuses(self) -> list[tuple[str, IndexStatus]]:
        """Each chosen repository's status (all the server's when none is chosen)."""
        return [(n, s) for n, s in self._statuses() if not self.repos or n in self.repos]

    def has_index(self) -> bool:
        return bool(self.status().last_update)

    def counts(self) -> IndexCounts:
        return self.status().counts

    @property
    def name(self) -> str:
        """The repository chosen, or how many the server's tree holds."""
        return self.repos[0] if len(self.repos) == 1 else f"{len(self.repos) or 'all'} repositories"

    @property
    def capabilities(self) -> frozenset[str]:
        """WATCH (here: follows the server's updates) and MODELS (picks among the server's
        models); REVIEW and SUMMARIES when every chosen repository's folder is on the server.
        Never INDEX: the server builds its indexes from its own files."""
        if self._capabilities is None:
            from coderag_tui.contract import MODELS, REVIEW, SUMMARIES, WATCH

            chosen = [set(r.get("capabilities", ())) for r in self._served() if not self.repos or r["name"] in self.repos]
            both = set.intersection(*chosen) if chosen else set()
            self._capabilities = frozenset({WATCH, MODELS} | ({REVIEW, SUMMARIES} & both))
        return self._capabilities

    def repositories(self) -> list[tuple[str, RemoteCodeRag]]:
        """Each chosen repository (every one the server serves when none is) as a client of its own."""
        names = [n for n, _ in self.statuses()]
        if len(names) <= 1:
            return [(names[0] if names else "", self)]
        return [(n, RemoteCodeRag(self.url, self.token, [n], self.settings)) for n in names]

    def index(self, *, rebuild: bool = False, only: Sequence[str] | None = None,
              progress: Callable[..., None] | None = None, embed: bool = False,
              poll_s: float = 0.5) -> IndexSummary:
        """Start a build on the server (an admin token) and wait for it; the summary of the
        first repository built. (`only`: the server looks at every file.)"""
        job = self._send("POST", "/index/build", json={"repos": self.repos or None, "rebuild": rebuild,
                                                       "embed": embed})
        job = self._finished(job, "indexing", progress, poll_s=poll_s)
        summaries = list(job["summaries"].values())
        return decode(IndexSummary, summaries[0]) if summaries else IndexSummary(0, 0, 0, 0, 0, 0, 0, 0, {}, 0.0)

    def _finished(self, job: dict[str, Any], what: str, progress: ProgressFn | None = None,
                  should_stop: Callable[[], bool] | None = None, poll_s: float = 0.5) -> dict[str, Any]:
        """A server's job waited for (its progress passed on); ServerError when it failed."""
        from coderag_tui.client_parts import wait_for_job

        job = wait_for_job(lambda job_id: self._send("GET", f"/index/jobs/{job_id}"), job, progress, should_stop,
                           poll_s)
        if job["status"] not in ("done", "queued", "running"):
            raise ServerError(f"{what} on the server {job['status']}: {job['error'] or 'stopped'}")
        return job

    def embed(self, progress: ProgressFn | None = None,
              should_stop: Callable[[], bool] | None = None) -> EmbedSummary | None:
        """Start the server's embedding of what its indexes lack (an admin token) and wait for
        it; the first chosen repository's summary (None when its vectors are off)."""
        from coderag_tui.indexing.embedder import EmbedSummary

        job = self._send("POST", "/index/embed", json={"repos": self.repos or None})
        job = self._finished(job, "embedding", progress, should_stop)
        results = [r for r in job["results"].values() if r is not None]
        return decode(EmbedSummary, results[0]) if results else None

    def vectors_pending(self) -> bool:
        return any(r.get("vectors_pending") for r in self._served(pending=True)
                   if not self.repos or r["name"] in self.repos)

    def watch(self, on_event: Callable[[WatchEvent], None] | None = None, *, initial_index: bool = False,
              progress: ProgressFn | None = None, embed: bool = True,
              debounce_ms: int | None = None) -> RemoteWatcher:
        """Follow the server's index updates of the chosen repositories (its watchers, fetches,
        webhooks and builds: the server keeps them current; the keywords are the local
        watcher's and change nothing here). Returns once the server follows for us."""
        from coderag_tui.client_parts import RemoteWatcher

        http = httpx.Client(base_url=self.url, headers=dict(self._http.headers), transport=self._transport,
                            timeout=httpx.Timeout(TIMEOUT_S, read=120.0), follow_redirects=False)
        params = {"repos": ",".join(self.repos)} if self.repos else {}
        return RemoteWatcher(http, params, on_event, len(self.repos) != 1,
                             lambda r: _raise_for(r, self.url)).start()

    # ------------------------------------------------------------------ search
    def check_filters(self, filters: SearchFilters | None) -> SearchFilters | None:
        return filters  # the server checks them against each index, with the same one-line errors

    def _search(self, query: str, k: int | None, filters: SearchFilters | None, files: bool) -> list[SearchHit]:
        body: dict[str, Any] = {"query": query, "repos": self.repos or None, "files": files}
        if k is not None:
            body["limit"] = k
        if filters is not None:
            body["filters"] = {"language": filters.language, "type": filters.kind, "path_prefix": filters.path_prefix}
        doc = self._send("POST", "/search", json=body)
        return [decode(SearchHit, r["hit"]) for r in doc["results"]]

    def search(self, query: str, k: int | None = None, filters: SearchFilters | None = None) -> list[SearchHit]:
        return self._search(query, k, filters, files=False)

    def search_files(self, query: str, k: int | None = None,
                     filters: SearchFilters | None = None) -> list[SearchHit]:
        return self._search(query, k, filters, files=True)

    def context(self, query: str, max_tokens: int | None = None, count_tokens: Any = None,
                strategy: str = "relevance") -> ComposedContext:
        doc = self._send("POST", "/context", json={"query": query, "max_tokens": max_tokens, "repo": self._single(),
                                                    "repos": self._across(), "strategy": strategy})
        return decode(ComposedContext, doc["context"])

    def symbols(self, name: str, limit: int = 20) -> list[UnitRef]:
        params: dict[str, Any] = {"limit": limit}
        if self.repos:
            params["repos"] = ",".join(self.repos)
        doc = self._send("GET", f"/symbol/{_segment(name)}", params=params)
        return [decode(UnitRef, u) for u in [*doc["exact_matches"], *doc["partial_matches"]]]

    def _structural(self, kind: str, target: str, limit: int) -> list[Any]:
        doc = self._send("POST", "/query/structural", json={"type": kind, "target": target,
                                                            "repos": self.repos or None, "limit": limit})
        return list(doc["results"])

    def callers(self, name: str, limit: int = 200) -> list[EdgeRef]:
        return [decode(EdgeRef, e) for e in self._structural("called_by", name, limit)]

    def callees(self, name: str, limit: int = 200) -> list[EdgeRef]:
        return [decode(EdgeRef, e) for e in self._structural("calls", name, limit)]

    def tests_for(self, name: str) -> list[EdgeRef]:
        return [decode(EdgeRef, e) for e in self._structural("tested_by", name, 200)]

    def _repo_params(self, **params: Any) -> dict[str, Any]:
        return {**params, "repo": self._one()} if self._one() else params

    def files(self) -> list[FileState]:
        doc = self._send("GET", "/files", params=self._repo_params())
        return [decode(FileState, f) for f in doc["files"]]

    def outline(self, path: str) -> list[UnitRef]:
        doc = self._send("GET", "/outline", params=self._repo_params(path=path))
        return [decode(UnitRef, u) for u in doc["units"]]


    def unit(self, unit_id: int) -> UnitRef | None:
        params = {"repo": self._one()} if self._one() else {}
        try:
            doc = self._send("GET", f"/unit/{int(unit_id)}", params=params)
        except ServerError as exc:
            if exc.message.startswith("no unit"):
                return None
            raise
        return decode(UnitRef, doc["unit"])

    def units_at(self, path: str, line: int) -> list[UnitRef]:
        """The units of a file that contain a line, innermost first (from its outline)."""
        found = [u for u in self.outline(path) if u.start_line <= line <= u.end_line]
        return sorted(found, key=lambda u: (u.end_line - u.start_line, -u.id))

    def similar(self, unit_id: int, k: int | None = None) -> list[SearchHit]:
        doc = self._get(f"/similar/{int(unit_id)}", limit=k)
        return [decode(SearchHit, h) for h in doc["hits"]]

    def repo_map(self, max_tokens: int | None = None, query: str | None = None) -> str:
        return str(self._get("/map", max_tokens=max_tokens, query=query or None)["map"])

    def file_lines(self, path: str, start: int = 1, end: int | None = None) -> tuple[int, list[str]]:
        """(the file's line count, its lines start..end, 1-based): an indexed file only."""
        params: dict[str, Any] = {"path": path, "start": start, "end": end if end is not None else start + 399}
        if self._one():
            params["repo"] = self._one()
        doc = self._send("GET", "/lines", params=params)
        return int(doc["total"]), [str(line) for line in doc["lines"]]

    def read_lines(self, path: str, start: int = 1, end: int | None = None) -> list[str]:
        """Lines start..end (to the end of the file when None), a page of 400 per request."""
        total, out = self.file_lines(path, start, end)
        last = total if end is None else min(end, total)
        while start + len(out) <= last:
            more = self.file_lines(path, start + len(out), last)[1]
            if not more:
                break
            out += more
        return out

    # ------------------------------------------------------------------ answering
    def ask(self, question: str, conversation_id: int | None = None, *, model: str | None = None,
            should_stop: Callable[[], bool] | None = None, attachment: str = "",
            fresh: bool = False) -> Iterator[AnswerEvent]:
        """The server's answer events as they come; never raises (errors are events), like
        `CodeRag.ask`. `model` (else the selected one): one of the server's models, by the
        name its list gives (`list_models`); the server refuses any other."""
        conv = conversation_id or 0
        body = {"question": question, "conversation_id": conversation_id, "repo": self._single(),
                "repos": self._across(), "fresh": fresh, "attachment": attachment,
                "model": model or self.selected_model}
        try:
            with self._http.stream("POST", "/ask", json=body, timeout=httpx.Timeout(TIMEOUT_S, read=600.0)) as r:
                if r.status_code >= 400:
                    r.read()
                    _raise_for(r, self.url)
                for kind, data in _sse(r.iter_lines()):
                    if should_stop is not None and should_stop():
                        return  # closing the stream stops the server's model
                    event = decode(AnswerEvent, json.loads(data))
                    if event.kind != kind:
                        raise WireError(f"an event {kind!r} carries a {event.kind!r}")
                    yield event
        except CoderagError as exc:
            yield AnswerEvent("error", text=exc.one_line(), conversation_id=conv)
        except httpx.HTTPError as exc:
            yield AnswerEvent("error", text=f"the server at {self.url} broke off the answer: {_reason(exc)}",
                              conversation_id=conv)


    # ------------------------------------------------------------------ conversations
    def _conversation_repo(self) -> str | None:
        """The repository whose conversations these are: the one chosen, or the only one
        served; "" when several are served and none is chosen (each keeps its own)."""
        one = self._one()
        if one is not None:
            return one
        names = [n for n, _ in self._statuses()]
        return names[0] if len(names) == 1 else ""

    def conversations(self, limit: int = 100) -> list[tuple[int, str, float, int, str]]:
        """This token's conversations on the server, newest first (none until a repository is
        chosen, when several are served: each keeps its own)."""
        if self._conversation_repo() == "":
            return []
        doc = self._get("/conversations", limit=limit)
        return [(int(c["id"]), str(c["title"]), float(c["updated"]), int(c.get("questions", 0)), str(c.get("last", "")))
                for c in doc["conversations"]]

    def load_conversation(self, conversation_id: int) -> list[StoredMessage]:
        from coderag_tui.answering.answerer import StoredMessage

        if self._conversation_repo() == "":
            raise RepoError("the server keeps conversations per repository", "choose one: --repo NAME")
        doc = self._get(f"/conversations/{int(conversation_id)}")
        return [decode(StoredMessage, m) for m in doc["messages"]]

    # ------------------------------------------------------------------ models
    def _models(self, discover: bool = True) -> tuple[ModelInfo, list[ModelInfo]]:
        doc = self._get("/models", discover=str(discover).lower())
        return decode(ModelInfo, doc["model"]), [decode(ModelInfo, m) for m in doc["models"]]

    def list_models(self, model: str | None = None, *, discover: bool = True) -> list[ModelInfo]:
        """The server's models, its configured one first; each `choice` is what `select_model`
        (and `ask --model`) take. (`model` names a file of this machine: not asked of a server.)"""
        return self._models(discover)[1]

    def model_info(self, model: str | None = None) -> ModelInfo:
        """The server's model that answers (`model`, else the selected one, else its configured one)."""
        name = model or self.selected_model
        current, found = self._models(discover=bool(name))
        if not name:
            return current
        for info in found:
            if info.choice == name:
                return info
        choices = ", ".join(m.choice for m in found if m.choice)
        raise ServerError(f"the server at {self.url} has no model named {name!r}",
                          f"its models: {choices}" if choices else "it answers with its configured model only")

    def select_model(self, name: str | None) -> ModelInfo:
        """Ask with one of the server's models from now on (None or "": its configured one);
        ServerError (one line) for a name its list does not give, keeping the model in use."""
        info = self.model_info(name or None) if name else self._models(discover=False)[0]
        self.selected_model = name or None
        return info

    def served_models(self, refresh: bool = False) -> list[ServedModel]:
        """Models served on this machine's loopback: none for a client (the server's own are in
        `list_models`)."""
        return []

    # ------------------------------------------------------------------ review and summaries
    def review(self, base: str = "HEAD", *, diff_text: str | None = None, diff_label: str = "",
               max_tokens: int | None = None, update_index: bool = True, similar: int = 3,
               count_tokens: Callable[[str], int] | None = None) -> Review:
        """The server's review of its repository's working tree against `base` (a revision of
        its git folder), or of `diff_text`. The server keeps its index current itself
        (`update_index` changes nothing) and counts tokens with its estimate."""
        from coderag_tui.client_parts import ServedReview

        doc = self._send("POST", "/review", json={"repo": self._one(), "base": base, "diff": diff_text,
                                                  "diff_label": diff_label, "max_tokens": max_tokens,
                                                  "similar": max(0, similar)})
        return ServedReview.from_json(doc)

    def _summaries_body(self, paths: Sequence[str] | None, everything: bool, model: str | None) -> dict[str, Any]:
        return {"repo": self._one(), "paths": list(paths) if paths else None, "everything": everything,
                "model": model or self.selected_model}

    def summary_estimate(self, paths: Sequence[str] | None = None, *, everything: bool = False,
                         model: str | None = None) -> SummaryEstimate:
        from coderag_tui.answering.summarize import SummaryEstimate

        doc = self._send("POST", "/summaries/estimate", json=self._summaries_body(paths, everything, model))
        return decode(SummaryEstimate, doc)

    def summarize(self, paths: Sequence[str] | None = None, *, everything: bool = False, model: str | None = None,
                  progress: ProgressFn | None = None,
                  should_stop: Callable[[], bool] | None = None) -> SummarizeResult:
        """Start the server's summaries job (an admin token) and wait for it."""
        from coderag_tui.answering.summarize import SummarizeResult

        job = self._send("POST", "/summaries", json=self._summaries_body(paths, everything, model))
        job = self._finished(job, "summarizing", progress, should_stop)
        results = list(job["results"].values())
        if not results:
            raise ServerError("the server is still summarizing", "its job goes on: see GET /index/jobs/"
                              + str(job["job_id"]))
        return decode(SummarizeResult, results[0])

    def start_summaries(self, progress: ProgressFn | None = None) -> bool:
        """The server runs its own background summaries (when it is configured to): none here."""
        return False

    def stop_summaries(self, timeout: float = 5.0) -> None:
        """(None run here.)"""

    def descriptions(self, paths: Sequence[str] | None = None) -> list[FileDescription]:
        doc = self._send("POST", "/descriptions", json={"repo": self._one(), "paths": list(paths) if paths else None})
        return [decode(FileDescription, f) for f in doc["files"]]

    def tools(self) -> CodeRagTools:
        """The same tools as a local index's, asking the server what the index holds."""
        from coderag_tui.client_tools import RemoteTools

        return RemoteTools(self)
