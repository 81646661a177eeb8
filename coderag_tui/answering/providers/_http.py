"""Streaming HTTP for remote providers: SSE parsing, timeouts, retries with backoff, clear errors.

Retries (exponential backoff with jitter, honouring Retry-After) cover 429, 5xx, connection
errors and timeouts, but only before anything was received: once the answer is streaming a
failure is reported, not replayed. API keys never appear in a message: every message built
here passes through `redact`.
"""

from __future__ import annotations

import email.utils
import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from coderag_tui.errors import ProviderError

RETRY_STATUS = {408, 425, 429, 500, 502, 503, 504, 529}


def redact(text: str, secret: str) -> str:
    if secret and len(secret) >= 4:
        text = text.replace(secret, "***")
    return text


def origin(url: str) -> str:
    """scheme://host:port of a URL (what error messages name)."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return url
    return f"{parts.scheme}://{parts.netloc}"


def retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass
class SSEEvent:
    event: str
    data: str


def iter_sse(lines: Iterator[str]) -> Iterator[SSEEvent]:
    """Server-sent events from text lines (`event:`/`data:` fields, blank line = dispatch)."""
    event = ""
    data: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r")
        if not line:
            if data or event:
                yield SSEEvent(event or "message", "\n".join(data))
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data or event:
        yield SSEEvent(event or "message", "\n".join(data))


def error_text(body: bytes | str, limit: int = 200) -> str:
    """The server's error message from a JSON error body (OpenAI and Anthropic shapes), one line."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    message = text
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        err = doc.get("error", doc)
        if isinstance(err, dict):
            message = str(err.get("message") or err.get("detail") or err)
        elif isinstance(err, str):
            message = err
        elif "detail" in doc:
            message = str(doc["detail"])
    message = " ".join(message.split())
    return message[:limit] + ("..." if len(message) > limit else "")


@dataclass
class SSEClient:
    """POSTs a JSON body and streams the SSE answer, with retries and one-line errors."""

    provider: str  # "openai", "anthropic": named in messages
    url: str
    headers: dict[str, str] = field(repr=False)  # may hold the key
    timeout_s: float = 60.0
    retries: int = 3
    backoff_s: float = 0.5
    max_retry_after_s: float = 30.0
    key_env: str = ""  # the env var holding the key (named in messages, never its value)
    secret: str = field(default="", repr=False)
    sleep: Callable[[float], None] = time.sleep
    attempts_made: int = field(default=0, init=False)
    _client: httpx.Client | None = field(default=None, init=False, repr=False)

    def client(self) -> httpx.Client:
        if self._client is None:
            connect = min(10.0, self.timeout_s)
            self._client = httpx.Client(
                timeout=httpx.Timeout(self.timeout_s, connect=connect), follow_redirects=True
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _error(self, message: str, retryable: bool) -> ProviderError:
        return ProviderError(redact(message, self.secret), retryable=retryable)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after_s)
        base = self.backoff_s * (2**attempt)
        return base + random.uniform(0, self.backoff_s)

    def _auth_error(self, status: int, body: bytes) -> ProviderError:
        where = origin(self.url)
        if self.key_env and self.secret:
            return self._error(
                f"the API key in ${self.key_env} was rejected by {where} (HTTP {status})", False
            )
        if self.key_env:
            return self._error(
                f"{where} wants an API key (HTTP {status}) but ${self.key_env} is not set", False
            )
        return self._error(
            f"{where} wants an API key (HTTP {status}): set [llm] api_key_env to the name of "
            "the environment variable that holds it",
            False,
        )

    def stream(self, body: dict[str, Any]) -> Iterator[SSEEvent]:
        where = origin(self.url)
        last: ProviderError | None = None
        attempts = max(0, self.retries) + 1
        self.attempts_made = 0
        for attempt in range(attempts):
            self.attempts_made = attempt + 1
            retry_after: float | None = None
            received = False
            try:
                with self.client().stream("POST", self.url, json=body, headers=self.headers) as resp:
                    status = resp.status_code
                    if status in (401, 403):
                        raise self._auth_error(status, resp.read())
                    if status in RETRY_STATUS:
                        message = error_text(resp.read())
                        retry_after = retry_after_seconds(resp.headers.get("retry-after"))
                        last = self._error(
                            f"{self.provider} at {where} answered HTTP {status} "
                            f"{self.attempts_made} time(s): {message}",
                            True,
                        )
                    elif status >= 400:
                        message = error_text(resp.read())
                        raise self._error(
                            f"{self.provider} at {where} refused the request (HTTP {status}): {message}",
                            False,
                        )
                    else:
                        for event in iter_sse(resp.iter_lines()):
                            received = True
                            yield event
                        return
            except ProviderError:
                raise
            except httpx.ConnectError:
                last = self._error(f"cannot reach {where}: is the server running?", True)
            except httpx.TimeoutException:
                if received:
                    raise self._error(
                        f"{self.provider} at {where} stopped answering for {self.timeout_s:g} s", True
                    ) from None
                last = self._error(
                    f"{self.provider} at {where} did not answer within {self.timeout_s:g} s", True
                )
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                if received:
                    raise self._error(
                        f"the connection to {where} broke during the answer: {type(exc).__name__}",
                        True,
                    ) from None
                last = self._error(f"the connection to {where} failed: {type(exc).__name__}", True)
            except (httpx.UnsupportedProtocol, httpx.InvalidURL):
                raise self._error(
                    f"invalid [llm] base_url for {self.provider}: {self.url!r} (want http(s)://host[:port])",
                    False,
                ) from None
            except httpx.HTTPError as exc:
                raise self._error(f"{self.provider} at {where} failed: {type(exc).__name__}", False) from None
            if attempt + 1 < attempts:
                self.sleep(self._delay(attempt, retry_after))
        assert last is not None
        raise last
