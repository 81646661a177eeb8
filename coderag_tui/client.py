"""A `coderag serve` server seen as a service: the methods the commands call on `CodeRag`
(status, search, context, symbols, callers, ask...), answered over HTTP and rebuilt into the
same `models.py` dataclasses, so that `--server URL` prints what a local index would."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from coderag_tui.config import Settings
from coderag_tui.errors import CoderagError, RepoError
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
)
from coderag_tui.wire import WireError, decode

TIMEOUT_S = 60.0  # a request (an answer's stream waits for each event this long at most)


class ServerError(CoderagError):
    """The server refused, failed or could not be reached (one line, never the token)."""


class RemoteCodeRag:
    """The service API of a server's repositories. `repos`: the ones to search (none: all);
    the first of them is the one `status`, `context` and `ask` use (none: the server picks)."""

    # the commands read these on a local service; a server keeps its own vectors and settings
    vectors_in_memory = True

    def __init__(self, url: str, token: str = "", repos: Sequence[str] = (), settings: Settings | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        if not url.startswith(("http://", "https://")):
            raise ServerError(f"not a server URL: {url!r}", "give http://HOST:PORT")
        self.url = url.rstrip("/")
        self.token = token  # (a client for other repositories of the same server is made with it)
        self.repos = [r for r in repos if r]
        self.settings = settings or Settings()
        self.display_name = f"{self.repos[0]} on {self.url}" if len(self.repos) == 1 else self.url
        # what the app shows as the repository's name (nothing is read under it here)
        self.root = Path(self.repos[0] if len(self.repos) == 1 else httpx.URL(self.url).host or "server")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=TIMEOUT_S, transport=transport,
                                  follow_redirects=False)

    @classmethod
    def from_settings(cls, url: str, settings: Settings, repos: Sequence[str] = ()) -> RemoteCodeRag:
        """A client whose token comes from the variable `[server] token_env` names."""
        return cls(url, os.environ.get(settings.server.token_env, ""), repos, settings)

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

    # ------------------------------------------------------------------ index
    def _statuses(self) -> list[tuple[str, IndexStatus]]:
        doc = self._send("GET", "/index/status")
        return [(r["name"], decode(IndexStatus, r["status"])) for r in doc["repositories"]]

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

    def index(self, *, rebuild: bool = False, progress: Callable[..., None] | None = None,
              embed: bool = True, poll_s: float = 0.5, only: Sequence[str] | None = None) -> IndexSummary:
        """Start a build on the server (an admin token) and wait for it; the summary of the
        first repository built. (`only`: the server looks at every file.)"""
        job = self._send("POST", "/index/build", json={"repos": self.repos or None, "rebuild": rebuild,
                                                       "embed": embed})
        while job["status"] in ("queued", "running"):
            time.sleep(poll_s)
            job = self._send("GET", f"/index/jobs/{job['job_id']}")
        if job["status"] != "done":
            raise ServerError(f"indexing on the server {job['status']}: {job['error'] or 'stopped'}")
        summaries = list(job["summaries"].values())
        return decode(IndexSummary, summaries[0]) if summaries else IndexSummary(0, 0, 0, 0, 0, 0, 0, 0, {}, 0.0)

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

    def model_info(self) -> ModelInfo:
        """What the app's status line shows: the server answers, with its own model."""
        return ModelInfo(name="the server's model", provider="coderag serve", path_or_url=self.url, context_window=0)

    def unit(self, unit_id: int) -> UnitRef | None:
        params = {"repo": self._one()} if self._one() else {}
        try:
            doc = self._send("GET", f"/unit/{int(unit_id)}", params=params)
        except ServerError as exc:
            if exc.message.startswith("no unit"):
                return None
            raise
        return decode(UnitRef, doc["unit"])

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
        `CodeRag.ask`. The server answers with its own model: `model` must be None."""
        conv = conversation_id or 0
        if model:
            yield AnswerEvent("error", text="--model is not available through a server: it answers with "
                              "its own model", conversation_id=conv)
            return
        body = {"question": question, "conversation_id": conversation_id, "repo": self._single(),
                "repos": self._across(), "fresh": fresh, "attachment": attachment}
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


def _sse(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """(event, data) of a server-sent event stream; comments (pings) and ids are skipped."""
    kind, data = "message", list[str]()
    for line in lines:
        if not line:
            if data:
                yield kind, "\n".join(data)
            kind, data = "message", []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                kind = value
            elif field == "data":
                data.append(value)
    if data:
        yield kind, "\n".join(data)


def _segment(name: str) -> str:
    from urllib.parse import quote

    return quote(name, safe="")


def _reason(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.ConnectError):
        return "connection refused"
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    return type(exc).__name__


def _raise_for(response: httpx.Response, url: str) -> None:
    """A one-line ServerError (RepoError for an unknown repository) for a 4xx or 5xx answer."""
    if response.status_code < 400:
        return
    try:
        text = str(response.json().get("error", ""))
    except (ValueError, AttributeError):
        text = ""
    text = text or response.reason_phrase or "no reason given"
    if response.status_code == 401:
        raise ServerError(f"the server at {url} refused the request: {text}",
                          "set the token in $CODERAG_TOKEN (or the variable [server] token_env names)")
    if response.status_code == 403:
        raise ServerError(f"the server at {url} refused the request: {text}")
    if response.status_code == 404 and text.startswith("no repository"):
        raise RepoError(text)
    raise ServerError(text if response.status_code < 500 else f"the server at {url} failed: {text}")
