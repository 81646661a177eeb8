"""Bearer tokens: read tokens search and ask, admin tokens also index. Tokens come from the
settings and the environment; they are compared in constant time and never logged or echoed."""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Mapping
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

    def check_host(self, host: str) -> None:
        """Listening beyond loopback needs tokens: ConfigError (one line) without them."""
        if not is_loopback(host) and not self.required:
            raise ConfigError(f"refusing to listen on {host} without tokens: anyone who can reach it "
                              "could read the code", f"set ${ADMIN_ENV} and/or ${READ_ENV} (or [server] "
                              "admin_tokens / read_tokens), or listen on 127.0.0.1")
