"""The rest of the service contract over HTTP, beside app.py's search and answers: similar code,
the repo map, conversations, models, reviews, summaries and descriptions, embedding, and the
index updates as a server-sent event stream. Each handler parses, calls the workspace (or one
repository's `CodeRag`, through workspace/served.py where a request must be kept in bounds) and
serialises `models.py` dataclasses with `wire.encode`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import FastAPI, Path, Query, Request
from sse_starlette import EventSourceResponse
from starlette.exceptions import HTTPException

from coderag_tui.server.bodies import MAX_ID, DescriptionsBody, EmbedBody, ReviewBody, SummariesBody
from coderag_tui.wire import encode
from coderag_tui.workspace import Workspace, served, tag_hit

EVENTS_PING_S = 5  # an idle event stream's keep-alive (a client stopping notices within it)
EVENTS_POLL_S = 0.2  # how often a stream looks for new events


def _owner(request: Request) -> str | None:
    """Whose conversations these are (a digest of the caller's token; None without tokens)."""
    found = getattr(request.state, "caller", None)
    return getattr(found, "owner", None)


def add_service_routes(app: FastAPI, ws: Workspace, read: Any, admin: Any) -> None:
    """Add the endpoints of the module doc to `app`: `read` and `admin` are the dependencies
    that describe each one's token (guard.py checked it before the body was read)."""

    @app.get("/similar/{unit_id}", dependencies=[read], summary="code like a unit (vectors; keywords without them)")
    def similar(unit_id: Annotated[int, Path(ge=1, le=MAX_ID)], repo: str | None = None,
                limit: Annotated[int, Query(ge=1, le=200)] = 10) -> dict[str, Any]:
        name, service = ws.one(repo)
        if service.unit(unit_id) is None:
            raise HTTPException(404, f"no unit {unit_id}")
        return {"repository": name, "hits": encode([tag_hit(h, name) for h in service.similar(unit_id, limit)])}

    @app.get("/map", dependencies=[read], summary="the repo map: signatures of the most central code (PageRank)")
    def repo_map(repo: str | None = None, max_tokens: Annotated[int | None, Query(ge=16, le=100_000)] = None,
                 query: Annotated[str | None, Query(max_length=2_000)] = None) -> dict[str, Any]:
        name, service = ws.one(repo)
        return {"repository": name, "map": service.repo_map(max_tokens, query=query or None)}

    @app.get("/conversations", dependencies=[read], summary="the caller's conversations, newest first")
    def conversations(request: Request, repo: str | None = None,
                      limit: Annotated[int, Query(ge=1, le=1_000)] = 100) -> dict[str, Any]:
        name, service = ws.one(repo)
        rows = served.conversations(service, _owner(request), limit)
        return {"repository": name,
                "conversations": [{"id": cid, "title": title, "updated": updated, "questions": asked, "last": last}
                                  for cid, title, updated, asked, last in rows]}

    @app.get("/conversations/{conversation_id}", dependencies=[read],
             summary="one of the caller's conversations: its questions and answers, with their sources")
    def conversation(request: Request, conversation_id: Annotated[int, Path(ge=1, le=MAX_ID)],
                     repo: str | None = None) -> dict[str, Any]:
        name, service = ws.one(repo)
        messages = served.conversation(service, conversation_id, _owner(request))
        return {"repository": name, "conversation_id": conversation_id, "messages": encode(messages)}

    @app.get("/models", dependencies=[read], summary="the model that answers, and every model the server can "
             "answer with (`choice`: the name /ask and /summaries take)")
    def models(repo: str | None = None, discover: bool = True) -> dict[str, Any]:
        name, service = ws.one(repo)
        current, found = served.models(service, discover)
        return {"repository": name, "model": encode(current), "models": encode(found)}

    @app.post("/review", dependencies=[read], summary="review context for a change of the served repository")
    def review(body: ReviewBody) -> dict[str, Any]:
        name, done = served.review(ws, body.repo, body.base, diff_text=body.diff, diff_label=body.diff_label,
                                   max_tokens=body.max_tokens, similar=body.similar)
        return {"repository": name, "review": done.to_json(), "markdown": done.markdown(), "label": done.label,
                "base": done.base, "overview": done.overview, "budget": done.budget, "tokens": done.tokens,
                "notes": list(done.notes), "context": encode(done.composed())}

    @app.post("/summaries", dependencies=[admin], status_code=202,
              summary="make a repository's missing or out-of-date summaries (a job: GET /index/jobs/{id})")
    def summaries(body: SummariesBody) -> dict[str, Any]:
        job = served.summaries_job(ws, body.repo, body.paths, body.everything, body.model)
        return {"job_id": job.id, "status": job.state}

    @app.post("/summaries/estimate", dependencies=[read], summary="what /summaries would take: its model, "
              "whether the model is local, requests and tokens")
    def estimate(body: SummariesBody) -> dict[str, Any]:
        name, service = ws.one(body.repo)
        served.check_model(service, body.model)
        found = service.summary_estimate(body.paths, everything=body.everything, model=body.model or None)
        return {"repository": name, **encode(found)}

    @app.post("/descriptions", dependencies=[read], summary="every file's profile and summaries (coderag export)")
    def descriptions(body: DescriptionsBody) -> dict[str, Any]:
        name, service = ws.one(body.repo)
        return {"repository": name, "files": encode(service.descriptions(body.paths or None))}

    @app.post("/index/embed", dependencies=[admin], status_code=202,
              summary="add the vectors the indexes lack (a job: GET /index/jobs/{id})")
    def embed(body: EmbedBody) -> dict[str, Any]:
        job = served.embed_job(ws, body.repos)
        return {"job_id": job.id, "status": job.state}

    @app.get("/index/events", dependencies=[read], summary="the index updates as they happen, as server-sent "
             "events", response_description="`ready` once following, then `watch` events: a WatchEvent as JSON, "
             "with `repository`")
    async def events(repos: str | None = None) -> EventSourceResponse:
        names = [n.strip() for n in repos.split(",") if n.strip()] if repos else None
        chosen = frozenset(n for n, _ in ws.chosen(names)) if names else None  # (404 for a name not served)
        return EventSourceResponse(_updates(ws, chosen), ping=EVENTS_PING_S)


async def _updates(ws: Workspace, repos: frozenset[str] | None) -> AsyncIterator[dict[str, str]]:
    """`ready`, then each update of the chosen repositories as it is published, until the
    client goes (or the server stops)."""
    follower = ws.events.subscribe(repos)
    try:
        yield {"event": "ready", "data": json.dumps({"repositories": sorted(repos or ws.services)})}
        while True:
            found = follower.get(0)
            if found is None:
                await asyncio.sleep(EVENTS_POLL_S)
                continue
            name, event = found
            yield {"event": "watch", "data": json.dumps({"repository": name, **encode(event)})}
    finally:
        follower.close()
