"""Push webhooks: `POST /hooks/github`, `/hooks/gitlab`, `/hooks/bitbucket`. Each is verified by
its platform's scheme with the server's webhook secret before its payload is read, then the
served git repositories it names are updated (fetched, re-indexed, embedded) as a job, as the
interval would. A hook with a wrong or missing signature changes nothing (401).

- GitHub: `X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body>`; event `X-GitHub-Event`.
- Bitbucket (Cloud, Server and Data Center): `X-Hub-Signature: sha256=<HMAC-SHA256 of the
  body>`; event `X-Event-Key`.
- GitLab: `X-Gitlab-Token: <the secret>`, compared in constant time; event `X-Gitlab-Event`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from coderag_tui.errors import RepoError
from coderag_tui.sources.urls import parse_spec
from coderag_tui.workspace import Workspace

PLATFORMS = ("github", "gitlab", "bitbucket")
PINGS = {"ping", "diagnostics:ping"}  # a platform checking that the hook is set up


def _hmac_ok(secret: str, body: bytes, header: str) -> bool:
    scheme, _, given = header.strip().partition("=")
    if scheme.lower() != "sha256" or not given:
        return False
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, given.strip().lower())


def verified(platform: str, secret: str, headers: Mapping[str, str], body: bytes) -> bool:
    """Whether the hook was signed with `secret` by the platform's scheme (see the module doc)."""
    if not secret:
        return False
    if platform == "github":
        return _hmac_ok(secret, body, headers.get("x-hub-signature-256", ""))
    if platform == "bitbucket":
        return _hmac_ok(secret, body, headers.get("x-hub-signature", ""))
    if platform == "gitlab":
        return hmac.compare_digest(secret.encode(), headers.get("x-gitlab-token", "").encode())
    return False


def event_of(platform: str, headers: Mapping[str, str]) -> str:
    name = {"github": "x-github-event", "gitlab": "x-gitlab-event", "bitbucket": "x-event-key"}[platform]
    return headers.get(name, "").strip().lower()


def _urls(payload: Any) -> Iterator[str]:
    """Every URL a push payload gives for its repository (GitHub's `repository`, GitLab's
    `project` and `repository`, Bitbucket's `repository.links`)."""
    if not isinstance(payload, dict):
        return
    for part in ("repository", "project"):
        found = payload.get(part)
        if not isinstance(found, dict):
            continue
        for key in ("clone_url", "ssh_url", "git_url", "html_url", "url", "git_http_url", "git_ssh_url",
                    "http_url", "web_url", "homepage"):
            if isinstance(found.get(key), str):
                yield found[key]
        links = found.get("links")
        for link in (links.values() if isinstance(links, dict) else ()):
            for item in (link if isinstance(link, list) else [link]):
                if isinstance(item, dict) and isinstance(item.get("href"), str):
                    yield item["href"]


def _identity(url: str) -> tuple[str, str] | None:
    """(host, path of the repository) of a git URL, as parsed for cloning; None if it is none."""
    try:
        spec = parse_spec(url)
    except RepoError:
        return None
    if spec.scheme == "file":
        return "", spec.clone_url
    return spec.host.lower(), f"{spec.owner}/{spec.name}".lower()


def served_repositories(ws: Workspace, payload: Any) -> list[str]:
    """The names of the served git repositories a payload is about."""
    wanted = {i for i in map(_identity, _urls(payload)) if i is not None}
    return [name for name, url in ws.origins().items() if _identity(url) in wanted]


def add_hooks(app: FastAPI, ws: Workspace, secret: str) -> None:
    @app.post("/hooks/{platform}", status_code=202, summary="a push webhook (GitHub, GitLab, Bitbucket): "
              "updates the served repositories it names; signed with the server's webhook secret")
    async def hook(platform: str, request: Request) -> JSONResponse:
        if platform not in PLATFORMS:
            return JSONResponse({"error": f"no webhook {platform!r}: one of {', '.join(PLATFORMS)}"}, 404)
        if not secret:
            return JSONResponse({"error": "webhooks are off on this server: set [server] webhook_secret "
                                          "(or $CODERAG_WEBHOOK_SECRET)"}, 403)
        headers = {k.lower(): v for k, v in request.headers.items()}
        if platform == "gitlab" and not verified(platform, secret, headers, b""):
            return JSONResponse({"error": "the webhook's token is wrong"}, 401)  # (before reading the body)
        body = await request.body()
        if not verified(platform, secret, headers, body):
            return JSONResponse({"error": "the webhook's signature is wrong or missing"}, 401)
        if event_of(platform, headers) in PINGS:
            return JSONResponse({"status": "ok", "repositories": []}, 200)
        try:
            payload = json.loads(body)
        except ValueError:
            return JSONResponse({"error": "the webhook's payload is not JSON"}, 400)
        names = served_repositories(ws, payload)
        if not names:
            return JSONResponse({"status": "ignored", "repositories": [],
                                 "error": "no served git repository matches this webhook"}, 202)
        jobs = ws.refresh(names)
        return JSONResponse({"status": "queued", "repositories": names, "jobs": [j.id for j in jobs]}, 202)
