"""The HTTP API (docs/server.md) over a `Workspace`. Each handler parses, calls the
workspace (or its `CodeRag`), and serialises `models.py` dataclasses with `wire.encode`."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

from anyio import CapacityLimiter, to_thread
from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sse_starlette import EventSourceResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from coderag_tui import __version__
from coderag_tui.errors import CoderagError, RepoError, StoreUnavailable
from coderag_tui.models import AnswerEvent
from coderag_tui.server.bodies import (
    MAX_ID,
    AskBody,
    BuildBody,
    ContextBody,
    SearchBody,
    StructuralBody,
)
from coderag_tui.server.guard import NOT_ADMIN, Caller, Guard, Policy
from coderag_tui.server.hooks import add_hooks
from coderag_tui.server.routes import add_service_routes
from coderag_tui.textsafe import safe_line
from coderag_tui.wire import encode
from coderag_tui.workspace import Workspace, served

log = logging.getLogger("coderag.server")
bearer = HTTPBearer(auto_error=False, description="a read token (search, ask) or an admin token (also indexing)")


def _guard(scope: str) -> Any:
    """A dependency that describes the endpoint's token in /openapi.json; the token itself was
    checked before the request's body was read (guard.py)."""

    def check(request: Request, cred: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> None:
        if scope == "admin" and request.app.state.policy.tokens.required and caller(request).scope != "admin":
            raise HTTPException(403, NOT_ADMIN)

    return Depends(check)


READ, ADMIN = _guard("read"), _guard("admin")
HEALTH_THREADS = CapacityLimiter(2)  # /health never waits behind the requests it reports on


def caller(request: Request) -> Caller:
    found = getattr(request.state, "caller", None)
    return found if isinstance(found, Caller) else Caller()


def _error(status: int, text: str) -> JSONResponse:
    return JSONResponse({"error": safe_line(" ".join(text.split()))}, status_code=status)


def _unit_json(unit: Any) -> dict[str, Any]:
    return {"repository": unit.repo, **encode(unit)}


def create_app(workspace: Workspace, policy: Policy, hook_secret: str = "") -> FastAPI:
    """The API over `workspace`, behind `policy` (guard.py); `hook_secret`: the secret push
    webhooks are signed with (none: /hooks/* refused)."""
    # no /docs or /redoc pages: they load their scripts from a CDN, and this runs offline
    app = FastAPI(title="coderag", version=__version__, docs_url=None, redoc_url=None,
                  description="Search, context and cited answers over indexed code repositories.")
    app.state.workspace, app.state.policy = workspace, policy
    app.add_middleware(Guard, policy=policy)
    ws = workspace

    @app.exception_handler(CoderagError)
    async def coderag_error(request: Request, exc: CoderagError) -> JSONResponse:
        if isinstance(exc, StoreUnavailable):  # a database restarting: worth trying again shortly
            response = _error(503, exc.one_line())
            response.headers["Retry-After"] = "2"
            return response
        return _error(404 if isinstance(exc, RepoError) else 400, exc.one_line())

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        response = _error(exc.status_code, str(exc.detail))
        response.headers.update(exc.headers or {})
        return response

    @app.exception_handler(RequestValidationError)
    async def bad_body(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return _error(422, f"{where}: {first.get('msg', 'invalid request')}" if where else "invalid request")

    @app.get("/health", summary="whether the server answers, and its store (no token needed)")
    async def health() -> JSONResponse:
        stores = await to_thread.run_sync(ws.store_health, limiter=HEALTH_THREADS)
        down = [s for s in stores if not s["up"]]
        return JSONResponse({"status": "unavailable" if down else "ok", "version": __version__, "stores": stores},
                            status_code=503 if down else 200)

    @app.post("/index/build", dependencies=[ADMIN], status_code=202, summary="index (then embed) repositories")
    def build(body: BuildBody) -> dict[str, Any]:
        job = ws.build(body.repos, rebuild=body.rebuild, embed=body.embed)
        return {"job_id": job.id, "status": job.state}

    @app.get("/index/jobs/{job_id}", dependencies=[READ], summary="a job's state and progress (an index "
             "build, an embedding, summaries), and its results")
    def job(job_id: str) -> dict[str, Any]:
        found = served.job(ws, job_id)
        if found is None:
            raise HTTPException(404, "no such job")
        return found.to_json()

    @app.get("/index/status", dependencies=[READ], summary="what each repository's index holds")
    def status(pending: bool = False) -> dict[str, Any]:
        repos = ws.status()
        languages: dict[str, int] = {}
        for _, st in repos:
            for lang in st.languages:
                languages[lang.language] = languages.get(lang.language, 0) + lang.files
        return {
            # (`pending`: whether each has vectors to add, a few queries more per repository)
            "repositories": [{"name": name, "status": encode(st), **ws.freshness(name),
                              "capabilities": sorted(ws.services[name].capabilities),
                              **({"vectors_pending": ws.services[name].vectors_pending()} if pending else {})}
                             for name, st in repos],
            "code_units_count": sum(st.units for _, st in repos),
            "files_count": sum(st.files for _, st in repos),
            "chunks_count": sum(st.chunks for _, st in repos),
            "vectors_count": sum(st.vectors for _, st in repos),
            "last_updated": max((st.last_update for _, st in repos), default=0.0),
            "languages": languages,
            "index_health": ws.health(),
            "jobs": [j.to_json() for j in ws.jobs.all()[-10:]],
        }

    @app.post("/search", dependencies=[READ], summary="hybrid search over one, several or all repositories")
    def search(body: SearchBody) -> dict[str, Any]:
        started = time.perf_counter()
        filters = body.filters.to_model() if body.filters else None
        hits = ws.search(body.query, body.limit, filters, body.repos, files=body.files)
        results = []
        for h in hits:
            u = h.unit
            item: dict[str, Any] = {
                "repository": u.repo, "id": u.id, "name": u.qualname or u.name, "path": u.path, "type": u.kind,
                "language": u.language, "summary": u.docstring.strip().split("\n", 1)[0],
                "relevance_score": round(h.score, 6), "start_line": u.start_line, "end_line": u.end_line,
                "reasons": list(h.reasons), "hit": encode(h)}
            if body.include_context:
                item["code_snippet"] = ws.snippet(h)
                item["context"] = ws.neighbours(u)
            results.append(item)
        return {"results": results, "total_found": len(results),
                "search_time_ms": round((time.perf_counter() - started) * 1000, 2)}

    @app.post("/context", dependencies=[READ], summary="context for an LLM, packed into a token budget")
    def context(body: ContextBody) -> dict[str, Any]:
        name, ctx = ws.context(body.query, body.max_tokens, body.repo, body.repos,
                               strategy=body.strategy)
        return {"repository": name, "context_text": ctx.render(), "token_count": ctx.tokens,
                "sources": [{"path": p.path, "start_line": p.start_line, "end_line": p.end_line,
                             "role": p.role, "name": p.title} for p in ctx.pieces],
                "context": encode(ctx)}

    @app.get("/symbol/{name:path}", dependencies=[READ], summary="definitions by name: exact, then partial "
             "(a name may be a path: pkg/auth)")
    def symbol(name: str, limit: int = 20, repos: str | None = None) -> dict[str, Any]:
        units = ws.symbols(name, max(1, min(limit, 500)), _names(repos))
        wanted = name.strip().rstrip("()")
        exact = [u for u in units if wanted in (u.name, u.qualname)]
        return {"exact_matches": [_unit_json(u) for u in exact],
                "partial_matches": [_unit_json(u) for u in units if u not in exact]}

    @app.get("/unit/{unit_id}", dependencies=[READ], summary="a code unit, its summary and relationships")
    def unit(unit_id: Annotated[int, Path(ge=1, le=MAX_ID)], repo: str | None = None) -> dict[str, Any]:
        found = ws.unit(unit_id, repo)
        if found is None:
            raise HTTPException(404, f"no unit {unit_id}")
        rel = found["relationships"]
        return {"repository": found["repository"], "unit": _unit_json(found["unit"]), "summary": found["summary"],
                "relationships": {"parent": rel["parent"] and _unit_json(rel["parent"]),
                                  **{k: encode(rel[k]) for k in ("children", "callers", "callees")}}}

    @app.get("/files", dependencies=[READ], summary="every file of a repository and its index state")
    def files(repo: str | None = None) -> dict[str, Any]:
        name, found = ws.files(repo)
        return {"repository": name, "files": encode(found)}

    @app.get("/outline", dependencies=[READ], summary="the units of one file, in order")
    def outline(path: str, repo: str | None = None) -> dict[str, Any]:
        name, units = ws.outline(path, repo)
        return {"repository": name, "path": path, "units": encode(units)}

    @app.get("/lines", dependencies=[READ], summary="lines of an indexed file (at most 400)")
    def lines(path: str, start: Annotated[int, Query(ge=1, le=MAX_ID)] = 1,
              end: Annotated[int, Query(ge=1, le=MAX_ID)] = 400, repo: str | None = None) -> dict[str, Any]:
        name, total, text = ws.lines(path, start, end, repo)
        return {"repository": name, "path": path, "start": start, "total": total, "lines": text}

    @app.post("/query/structural", dependencies=[READ], summary="calls, called_by, tested_by, methods_of, files_importing")
    def structural(body: StructuralBody) -> dict[str, Any]:
        found = ws.structural(body.type, body.target, body.repos, body.limit)
        return {"type": body.type, "target": body.target, "results": encode(found)}

    @app.post("/ask", dependencies=[READ], summary="a cited answer, streamed as server-sent events",
              response_description="events `status`, `opening`, `token`, `tool`, `sources`, `done`, `error`; "
              "each `data` is an AnswerEvent as JSON, with `repository`")
    async def ask(body: AskBody, request: Request) -> EventSourceResponse:
        stop = threading.Event()

        def start() -> tuple[str, Iterator[AnswerEvent]]:
            if body.model:  # one of the server's own models, never a path a client names
                served.check_model(ws.one(body.repo, body.question)[1] if not body.repos else
                                   ws.chosen(None if body.repos == ["*"] else body.repos)[0][1], body.model)
            # (a conversation that is not the caller's is refused here, before the stream: 404)
            return ws.ask(body.question, body.conversation_id, repo=body.repo, repos=body.repos,
                          fresh=body.fresh, attachment=body.attachment, should_stop=stop.is_set,
                          owner=caller(request).owner, model=body.model or None)

        name, answer = await run_in_threadpool(start)
        return EventSourceResponse(_answer_stream(name, answer, stop), ping=15)

    add_service_routes(app, ws, READ, ADMIN)
    add_hooks(app, ws, hook_secret)
    return app


def _names(text: str | None) -> list[str] | None:
    return [n.strip() for n in text.split(",") if n.strip()] if text else None


async def _answer_stream(name: str, answer: Iterator[AnswerEvent],
                         stop: threading.Event) -> AsyncIterator[dict[str, str]]:
    """The answer's events, made on one thread of their own (the service's connections are per
    thread); a client that goes away stops the model at its next token."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[tuple[str, AnswerEvent] | None] = asyncio.Queue()

    def put(item: tuple[str, AnswerEvent] | None) -> None:
        try:
            loop.call_soon_threadsafe(events.put_nowait, item)
        except RuntimeError:  # the server is shutting down: nobody reads any more
            stop.set()

    def produce() -> None:
        try:
            for event in answer:
                put((name, event))
        except CoderagError as exc:
            put(("", AnswerEvent("error", text=exc.one_line())))
        except Exception as exc:  # one line to the client, never a traceback
            log.error("ask: %s", type(exc).__name__)
            put(("", AnswerEvent("error", text=f"unexpected error: {type(exc).__name__}")))
        finally:
            put(None)

    threading.Thread(target=produce, name="coderag-ask", daemon=True).start()
    try:
        while (item := await events.get()) is not None:
            name, event = item
            yield {"event": event.kind, "data": json.dumps({"repository": name, **encode(event)})}
    finally:
        stop.set()
