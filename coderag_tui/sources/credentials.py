"""Credentials for git over https: which token applies to a host, and how git gets it.

Credentials
-----------
SSH agent/keys and git credential helpers work as git does by default (prompts on the terminal
are disabled: `GIT_TERMINAL_PROMPT=0`, so a missing credential fails fast with a clear error
instead of hanging a TUI). For https URLs, a token from the first set variable of
`settings.remote.token_env` that applies to the host (GITHUB_TOKEN: github.com, *.ghe.com;
BITBUCKET_TOKEN: bitbucket.org and Bitbucket Server `/scm/` URLs, with BITBUCKET_USERNAME for
app passwords; GITLAB_TOKEN: gitlab hosts; GIT_TOKEN or any other name: any https host) is
handed to git through `GIT_ASKPASS`: a tiny script (no secret inside) that prints the username
and token from environment variables set for that one git process only, and only when git's
prompt names the expected host. Credentials inside the URL (`https://user:token@host/...`) are
stripped before the URL is given to git, and passed the same way. In both cases
`credential.helper` is emptied for that command so no helper stores the token. The token thus
never reaches `.git/config`, the stored remote URL, the process list, logs, exceptions or the
screen. Env tokens are never sent over plain http.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from coderag_tui.sources.urls import Spec

ASKPASS_SCRIPT = """#!/bin/sh
# coderag: answers git's credential prompts from environment variables set for one git
# command; no secret is stored in this file. Only prompts for the expected host are answered.
case "$1" in
  *"//$CODERAG_GIT_HOST'"*|*"@$CODERAG_GIT_HOST'"*) ;;
  *) exit 1 ;;
esac
case "$1" in
  Username*) printf '%s\\n' "$CODERAG_GIT_USERNAME" ;;
  *) printf '%s\\n' "$CODERAG_GIT_PASSWORD" ;;
esac
"""



@dataclass(frozen=True)
class Credentials:
    username: str
    password: str
    host: str  # netloc as git shows it in its prompts


def _token_applies(env_name: str, spec: Spec) -> bool:
    host = spec.host
    name = env_name.upper()
    if name.startswith("GITHUB"):
        return host == "github.com" or host.endswith((".github.com", ".ghe.com"))
    if name.startswith("BITBUCKET"):
        return host == "bitbucket.org" or host.endswith(".bitbucket.org") or spec.bitbucket_server
    if name.startswith("GITLAB"):
        return host == "gitlab.com" or host.startswith("gitlab.") or host.endswith(".gitlab.com")
    return True  # GIT_TOKEN or a name of the user's choice: any https host


def credentials_for(
    spec: Spec, token_env: Sequence[str], environ: Mapping[str, str]
) -> tuple[Credentials | None, str | None]:
    """(credentials to answer git's prompts with, a username hint for credential helpers)."""
    if spec.scheme not in ("http", "https"):
        return None, None
    token_name, token = "", ""
    if spec.scheme == "https":
        for env_name in token_env:
            value = environ.get(env_name, "")
            if value and _token_applies(env_name, spec):
                token_name, token = env_name, value
                break
    if spec.username is not None and spec.password is not None:
        return Credentials(spec.username, spec.password, spec.netloc), None
    if spec.username is not None and not token:
        return None, spec.username  # let the user's credential helper answer for this user
    if not token:
        return None, None
    user = spec.username
    if user is None:
        bitbucket = token_name.upper().startswith("BITBUCKET") or spec.host == "bitbucket.org"
        if bitbucket:
            user = environ.get("BITBUCKET_USERNAME") or "x-token-auth"
        elif spec.host == "gitlab.com" or spec.host.startswith("gitlab."):
            user = "oauth2"
        else:
            user = "x-access-token"
    return Credentials(user, token, spec.netloc), None
