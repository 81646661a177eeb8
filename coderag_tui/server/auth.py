"""Bearer tokens: read tokens search and ask, admin tokens also index. Tokens come from the
settings and the environment; they are compared in constant time and never logged or echoed."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from coderag_tui.config import ServerSettings
from coderag_tui.errors import ConfigError

READ_ENV = "CODERAG_READ_TOKENS"
ADMIN_ENV = "CODERAG_ADMIN_TOKENS"
MIN_LENGTH = 16  # a shorter token is guessable: refused at start


def is_loopback(host: str) -> bool:
    """Whether `host` is this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _split(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


@dataclass(frozen=True, repr=False)
class Tokens:
    read: tuple[str, ...] = ()
    admin: tuple[str, ...] = ()

    def __repr__(self) -> str:  # never the tokens themselves
        return f"Tokens(read={len(self.read)}, admin={len(self.admin)})"

    @classmethod
    def load(cls, settings: ServerSettings, environ: Mapping[str, str] | None = None) -> Tokens:
        env = os.environ if environ is None else environ
        tokens = cls(tuple(settings.read_tokens) + _split(env.get(READ_ENV, "")),
                     tuple(settings.admin_tokens) + _split(env.get(ADMIN_ENV, "")))
        short = sum(len(t) < MIN_LENGTH for t in (*tokens.read, *tokens.admin))
        if short:
            raise ConfigError(f"{short} server token(s) shorter than {MIN_LENGTH} characters",
                              "make each one long and random, e.g. `python -c 'import secrets; "
                              "print(secrets.token_urlsafe(32))'`")
        return tokens

    @property
    def required(self) -> bool:
        return bool(self.read or self.admin)

    def scope(self, given: str) -> str | None:
        """"admin", "read" or None. Every token is compared, each in constant time, so the
        time taken says nothing about which one (or how much of one) matched."""
        raw = given.encode()
        admin = read = False
        for token in self.admin:
            admin |= hmac.compare_digest(raw, token.encode())
        for token in self.read:
            read |= hmac.compare_digest(raw, token.encode())
        return "admin" if admin else "read" if read else None

    @classmethod
    def random(cls) -> Tokens:
        """One admin token made for this run only (a server on loopback that was given none)."""
        return cls((), (secrets.token_urlsafe(32),))

    def check_host(self, host: str) -> None:
        """Listening beyond loopback needs tokens: ConfigError (one line) without them."""
        if not is_loopback(host) and not self.required:
            raise ConfigError(f"refusing to listen on {host} without tokens: anyone who can reach it "
                              "could read the code", f"set ${ADMIN_ENV} and/or ${READ_ENV} (or [server] "
                              "admin_tokens / read_tokens), or listen on 127.0.0.1")


def owner_of(token: str) -> str:
    """Who a token is, as kept with their conversations: a digest, never the token itself."""
    return hashlib.sha256(b"coderag-owner\0" + token.encode()).hexdigest()[:32]


def _bare(host: str) -> str:
    """A Host header's (or a URL's) host, lower-case, without its port, brackets or final dot."""
    host = host.strip().lower()
    if host.startswith("["):
        host = host[1:].split("]", 1)[0]
    elif host.count(":") == 1:
        host = host.rsplit(":", 1)[0]
    return host.rstrip(".")


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


class Hosts:
    """The `Host` values a server answers: the address it listens on (with `localhost` on
    loopback; any address of this machine, its name and full name when it listens on every
    address), and the names given (a reverse proxy's; "*": any). Any other name is what a DNS
    rebinding attack sends: a web page's own name, resolved to this server's address."""

    def __init__(self, listen: str, extra: Iterable[str] = ()) -> None:
        bound = _bare(listen)
        self.any_address = bound in ("0.0.0.0", "::", "")
        self.names = {bound, *(_bare(h) for h in extra if h.strip())}
        if is_loopback(listen):
            self.names |= {"localhost", "127.0.0.1", "::1"} if bound == "localhost" else {"localhost"}
        if self.any_address:
            self.names |= {_bare(socket.gethostname()), _bare(socket.getfqdn())}
        self.anything = "*" in self.names

    def allows(self, host_header: str) -> bool:
        host = _bare(host_header)
        if not host:
            return False
        return self.anything or host in self.names or (self.any_address and _is_ip(host))


def same_origin(origin: str, host_header: str, allowed: Iterable[str]) -> bool:
    """Whether a browser's `Origin` may call: the server's own origin (what the request's Host
    names) or one the settings allow. "null" (a sandboxed page, a file) never may."""
    origin = origin.strip().lower().rstrip("/")
    if origin in {a.strip().lower().rstrip("/") for a in allowed}:
        return True
    scheme, sep, rest = origin.partition("://")
    return bool(sep) and scheme in ("http", "https") and rest == host_header.strip().lower()
