"""The HTTP side of a server's client (client.py): its one-line errors, the server-sent event
stream it reads, and the token a server on this machine made for its user."""

from __future__ import annotations

from collections.abc import Iterator

import httpx

from coderag_tui.errors import CoderagError, RepoError


class ServerError(CoderagError):
    """The server refused, failed or could not be reached (one line, never the token)."""


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


def local_token(url: str) -> str:
    """The token a `coderag serve` of this user on loopback made for itself ("" if none)."""
    from coderag_tui.paths import server_token_file

    host = httpx.URL(url).host
    if host not in ("127.0.0.1", "localhost", "::1") and not host.startswith("127."):
        return ""
    try:
        return server_token_file(url).read_text(encoding="utf-8").strip()
    except (OSError, ValueError):
        return ""


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
