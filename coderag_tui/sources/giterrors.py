"""Turn git's stderr into one redacted `RepoError` line that says what to do."""

from __future__ import annotations

from collections.abc import Sequence

from coderag_tui.errors import RepoError
from coderag_tui.sources.urls import Spec

_AUTH_MARKERS = (
    "authentication failed", "could not read username", "could not read password",
    "terminal prompts disabled", "permission denied (publickey", "permission denied, please try",
    "invalid username or password", "invalid credentials", "http basic: access denied",
    "the requested url returned error: 401", "the requested url returned error: 403",
    "unable to read askpass",
)
_NETWORK_MARKERS = (
    "could not resolve host", "could not resolve hostname", "name or service not known",
    "temporary failure in name resolution", "failed to connect", "connection refused",
    "connection timed out", "operation timed out", "network is unreachable", "no route to host",
    "connection reset", "ssl certificate problem", "unable to access", "operation too slow",
    "early eof", "connection closed by remote host",
)


def error_detail(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    picked = ""
    for ln in lines:
        low = ln.lower()
        if low.startswith(("fatal:", "error:")):
            picked = ln.split(":", 1)[1].strip()
            if not picked.lower().startswith("could not read from remote repository"):
                break
    if not picked and lines:
        picked = lines[-1]
    picked = " ".join(picked.split())
    return picked if len(picked) <= 200 else picked[:197] + "..."


def git_error(action: str, spec: Spec, stderr: str, token_env: Sequence[str],
               branch: str | None = None) -> RepoError:
    url = spec.display_url
    low = stderr.lower()
    detail = error_detail(stderr)
    tokens = ", ".join(token_env) or "GIT_TOKEN"
    if branch and ("remote branch" in low and "not found" in low
                   or "couldn't find remote ref" in low):
        return RepoError(f"branch '{branch}' not found in {url}",
                         f"check the name: git ls-remote --heads {url}")
    if "host key verification failed" in low:
        return RepoError(f"ssh does not trust the host of {url} yet",
                         f"connect once with ssh (e.g. ssh -T git@{spec.host}) to accept its key")
    if any(m in low for m in _AUTH_MARKERS):
        hint = ("load your SSH key into ssh-agent and check it has access"
                if spec.scheme == "ssh" else
                f"set {tokens} (a token with read access), or configure a git credential helper")
        return RepoError(f"authentication failed for {url}", hint)
    if "repository not found" in low or "does not appear to be a git repository" in low or (
        "not found" in low and "404" in low
    ):
        return RepoError(f"repository not found: {url}",
                         f"check the URL; a private repository needs a token ({tokens}) or an "
                         "SSH key with access")
    if any(m in low for m in _NETWORK_MARKERS):
        where = spec.host or url
        return RepoError(f"cannot reach {where}: {detail}",
                         "check the URL, your network connection and proxy settings")
    return RepoError(f"git {action} failed for {url}: {detail or 'unknown error'}")




def is_remote_failure(stderr: str) -> bool:
    """True when a failed fetch failed for reasons other than a missing ref."""
    low = stderr.lower()
    return any(m in low for m in (*_AUTH_MARKERS, *_NETWORK_MARKERS, "repository not found",
                                  "does not appear to be a git repository",
                                  "host key verification failed"))
