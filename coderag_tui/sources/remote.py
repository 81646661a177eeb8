"""Remote git repositories: recognise their URLs, clone them into a cache, keep the clone fresh.

API
---
- `is_remote(spec)`: does `spec` name a remote repository (a URL or scp-like `user@host:path`)?
- `redact(text)`: `text` with the credentials of every URL inside it replaced by `***`.
- `parse_remote(url, settings=None) -> RemoteRepo`: host, owner, name and the cache folder.
- `cache_dir(settings) -> Path`: the folder holding every clone (one per host/owner/name).
- `ensure_clone(url, ...) -> CloneResult`: clone on first use; afterwards fetch, move to the new
  remote head (or the requested rev) and report which files changed, so that the index can be
  updated incrementally.

Every error is a `RepoError` with one redacted line that says what to do.

Security: a cloned repository is untrusted input, and nothing from it is ever run
--------------------------------------------------------------------------------
A clone brings objects and refs, never the remote's `.git/config` or `.git/hooks`, so what could
run is only what *this machine's* configuration or templates would run inside it. Every git
command we run on a clone therefore gets `_SAFE_CONFIG` on its command line:

- `core.hooksPath=/dev/null` and `clone --template=` (no template hooks are copied): no hook
  (post-checkout, reference-transaction, post-index-change, ...) from any template dir, global
  `core.hooksPath` or the clone can run.
- `core.fsmonitor=false`: a global fsmonitor hook command is not started in the clone.
- `protocol.ext.allow=never`: `ext::` transports (which run arbitrary commands) are refused;
  `parse_remote` only accepts http(s), ssh, git and file URLs anyway.
- `submodule.recurse=false`, `fetch.recurseSubmodules=false` and no `--recurse-submodules`:
  `.gitmodules` of the clone is never followed (submodules would bring URLs of the
  repository author's choosing).
- Filters: `.gitattributes` (which the clone does bring) can only *name* a filter driver; its
  command comes from config, which a clone cannot bring. Still, the user's own config often
  defines drivers (`git lfs install` adds `filter.lfs.*`, which would download LFS objects from
  a server the repository chooses), so `.git/info/attributes` of every clone says `* -filter`
  (highest precedence: no driver runs for any path, LFS files stay pointer text) and the lfs
  driver is blanked on the command line as well (`filter.lfs.smudge=` etc.).
- Diffs run with `--no-ext-diff --no-textconv`; the environment drops `GIT_DIR`-style variables
  and `GIT_TRACE*` (a trace file could record an Authorization header).

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

import contextlib
import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from coderag_tui.config import Settings
from coderag_tui.errors import RepoError
from coderag_tui.models import Progress

__all__ = [
    "CloneResult",
    "RemoteRepo",
    "cache_dir",
    "ensure_clone",
    "is_remote",
    "parse_remote",
    "redact",
    "run_local_git",
]

ProgressCallback = Callable[[Progress], None]

# Passed as `-c` to every git command run on a clone (see the module docstring).
_SAFE_CONFIG: tuple[str, ...] = (
    f"core.hooksPath={os.devnull}",
    "core.fsmonitor=false",
    "protocol.ext.allow=never",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "filter.lfs.smudge=",
    "filter.lfs.process=",
    "filter.lfs.required=false",
    "advice.detachedHead=false",
    "gc.autoDetach=false",  # no background gc still writing when the caller moves on
    "maintenance.autoDetach=false",
    "core.pager=cat",
)

_INFO_ATTRIBUTES = (
    "# Written by coderag: no filter driver (git-lfs or any other) runs in this cached clone.\n"
    "* -filter\n"
)

_ASKPASS_SCRIPT = """#!/bin/sh
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

# Environment variables that would point git somewhere else or record secrets.
_DROPPED_ENV = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX",
    "GIT_CURL_VERBOSE", "GIT_ASKPASS_OVERRIDE", "GIT_EXTERNAL_DIFF", "GIT_PAGER",
    "CODERAG_GIT_USERNAME", "CODERAG_GIT_PASSWORD", "CODERAG_GIT_HOST",
)

_NETWORK_SCHEMES = frozenset({"http", "https", "ssh", "git", "git+ssh", "ssh+git"})
_SSH_SCHEMES = frozenset({"ssh", "git+ssh", "ssh+git"})
# Forges whose repository URLs are always exactly /OWNER/REPO (longer browser URLs such as
# /OWNER/REPO/tree/main are cut to that).
_FORGES = frozenset({"github.com", "bitbucket.org", "codeberg.org"})
_KNOWN_HOSTS = _FORGES | {"gitlab.com"}

_SCP_RE = re.compile(r"(?P<user>[A-Za-z0-9._~+-]+)@(?P<host>[A-Za-z0-9.-]+):(?P<path>\S+)")
_HEX_SHA_RE = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")

_URL_USERINFO_RE = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s'\"<>]+)@")
_QUERY_SECRET_RE = re.compile(
    r"(?P<key>[?&](?:access_token|private_token|token|password|passwd|secret|key)=)[^&\s#'\"]+",
    re.IGNORECASE,
)
_AUTH_HEADER_RE = re.compile(r"(?P<key>\bAuthorization:\s*(?:Basic|Bearer|token)?\s*)\S+", re.I)


# --------------------------------------------------------------------------- public types


@dataclass(frozen=True)
class RemoteRepo:
    """A remote repository as named by a URL.

    `url` is the redacted form, safe to display; `clone_url` has the credentials removed and is
    what git is given and what the clone stores as its `origin`.
    """

    url: str
    host: str  # lower-case host name; "" for file:// URLs
    owner: str  # owner, Bitbucket workspace or project key, GitLab group path; "" when none
    name: str  # repository name without ".git"
    cache_path: Path  # where the clone lives: <cache_dir>/<host>/<owner>/<name>
    clone_url: str = ""


@dataclass(frozen=True)
class CloneResult:
    """The state of a cached clone after `ensure_clone`.

    `changed_files` lists the paths added or modified between `previous_commit` and
    `head_commit` (sorted, POSIX, relative to the repository root); `deleted_files` lists the
    paths removed. A rename shows as one deleted and one changed path. `changed_files` is None
    when everything must be considered new: a fresh clone, or a previous commit that could no
    longer be compared.
    """

    path: Path
    head_commit: str
    previous_commit: str  # "" on the first clone
    changed_files: tuple[str, ...] | None
    deleted_files: tuple[str, ...]
    repo: RemoteRepo | None = None

    @property
    def fresh(self) -> bool:
        return self.changed_files is None


# --------------------------------------------------------------------------- URLs


def redact(text: str) -> str:
    """`text` with the credentials of every URL inside it replaced by `***`.

    `https://user:token@host/x` and `https://x-access-token:T@host/x` become
    `https://***@host/x`; a bare user part of an http(s) URL (`https://TOKEN@host`) is
    redacted too, since it is often a token, while an ssh login (`ssh://git@host`) is kept.
    Secrets in query strings (`?access_token=...`) and Authorization headers are masked as well.
    """

    def userinfo(m: re.Match[str]) -> str:
        scheme, info = m["scheme"], m["userinfo"]
        if ":" in info or scheme.lower().startswith("http"):
            return f"{scheme}***@"
        return m.group(0)

    text = _URL_USERINFO_RE.sub(userinfo, text)
    text = _QUERY_SECRET_RE.sub(lambda m: f"{m['key']}***", text)
    return _AUTH_HEADER_RE.sub(lambda m: f"{m['key']}***", text)


@dataclass(frozen=True)
class _Spec:
    """A parsed remote URL, credentials kept apart."""

    scheme: str  # http, https, ssh, git, file (scp-like and git+ssh count as ssh)
    clone_url: str
    display_url: str
    host: str
    netloc: str  # host[:port], as git names it in credential prompts
    owner: str
    name: str
    username: str | None
    password: str | None
    key: tuple[str, ...]  # cache folder parts below cache_dir
    bitbucket_server: bool = False


def _bad(shown: str, why: str) -> RepoError:
    return RepoError(f"not a git URL: {shown}", why)


def _segments(path: str, shown: str) -> list[str]:
    segs = [s for s in path.split("/") if s]
    if any(s in (".", "..") for s in segs):
        raise _bad(shown, "the path must not contain '.' or '..' segments")
    if segs and segs[-1] == ".git":  # file:///path/repo/.git
        segs = segs[:-1]
    if not segs:
        raise _bad(shown, "the URL names no repository; expected .../OWNER/REPO")
    return segs


def _safe_part(text: str) -> str:
    part = re.sub(r"[^A-Za-z0-9._~-]", "_", text)
    return "_" if set(part) <= {"."} else part


def _strip_git(name: str) -> str:
    return name[:-4] if name.endswith(".git") else name


def _parse(spec: str) -> _Spec:
    text = spec.strip()
    shown = redact(text)
    usage = ("use https://host/OWNER/REPO(.git), git@host:OWNER/REPO.git, ssh://, git:// "
             "or file:///path/to/repo.git")
    if not text or text.startswith("-") or any(ch.isspace() or ord(ch) < 32 for ch in text):
        raise _bad(shown, usage)
    m = _SCP_RE.fullmatch(text)
    if m and "://" not in text:
        host = m["host"].lower()
        segs = _segments(m["path"], shown)
        name = _strip_git(segs[-1])
        owner = "/".join(segs[:-1])
        return _Spec("ssh", text, shown, host, host, owner, name, m["user"], None,
                     _network_key(host, owner, name))
    scheme, sep, _ = text.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise _bad(shown, usage)
    if scheme not in _NETWORK_SCHEMES and scheme != "file":
        raise _bad(shown, f"the {scheme}:// scheme is not supported; {usage}")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise _bad(shown, "the host or port is invalid") from None
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    host = (parts.hostname or "").lower()

    if scheme == "file":
        if host not in ("", "localhost"):
            raise _bad(shown, "a file:// URL needs an absolute path: file:///path/to/repo.git")
        segs = _segments(unquote(parts.path), shown)
        full = "/" + "/".join(segs)
        name = _strip_git(segs[-1])
        if not name:
            raise _bad(shown, usage)
        owner = segs[-2] if len(segs) > 1 else ""
        digest = hashlib.sha1(full.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        clone_url = "file://" + quote(full, safe="/~@+:=,")
        return _Spec("file", clone_url, shown, "", "", owner, name, None, None,
                     ("file", digest, _safe_part(name)))

    if not host:
        raise _bad(shown, "the URL has no host")
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port is not None else "")
    segs = _segments(parts.path, shown)
    bitbucket_server = len(segs) >= 3 and segs[-3].lower() == "scm"
    if scheme in ("http", "https"):
        if host in _FORGES:
            if len(segs) < 2:
                raise _bad(shown, f"expected https://{host}/OWNER/REPO")
            segs = segs[:2]
        elif not (segs[-1].endswith(".git") or bitbucket_server
                  or (host in _KNOWN_HOSTS and len(segs) >= 2)):
            raise _bad(shown, "an https URL on this host must end in .git")
    name = _strip_git(segs[-1])
    if not name:
        raise _bad(shown, usage)
    owner = segs[-2] if bitbucket_server else "/".join(segs[:-1])
    clean_netloc = netloc
    if scheme in _SSH_SCHEMES and username:
        clean_netloc = f"{quote(username, safe='')}@{netloc}"  # an ssh login is not a secret
        password = None  # ssh never takes a password from the URL
    path = "/" + "/".join(segs)
    clone_url = urlunsplit((scheme, clean_netloc, path, "", ""))
    return _Spec(
        "ssh" if scheme in _SSH_SCHEMES else scheme, clone_url, shown, host, netloc, owner, name,
        username, password,
        _network_key(host, owner, name, "ssh" if scheme in _SSH_SCHEMES else scheme, port), bitbucket_server,
    )


def _network_key(host: str, owner: str, name: str, scheme: str = "ssh", port: int | None = None) -> tuple[str, ...]:
    """Cache folder parts. https and ssh of one host share a clone (a forge serves the same
    repository over both); another scheme or an explicit port is another server, maybe another
    repository, and gets its own folder: `http~host~8080` ("~" is in no host name)."""
    owner_part = "+".join(_safe_part(p) for p in owner.split("/")) if owner else "_"
    host_part = _safe_part(host)
    if port is not None:
        host_part += f"~{port}"
    if scheme not in ("https", "ssh"):
        host_part = f"{_safe_part(scheme)}~{host_part}"
    return (host_part, owner_part, _safe_part(name))


def is_remote(spec: str) -> bool:
    """True when `spec` names a remote repository rather than a local path.

    Accepted: https URLs of github.com, gitlab.com, bitbucket.org and codeberg.org
    (`https://github.com/OWNER/REPO`, with or without `.git`), Bitbucket Server/Data Center
    `https://host/scm/PROJECT/REPO(.git)`, any other http(s) URL ending in `.git`, scp-like
    `user@host:path`, and any `ssh://`, `git://` or `file://` URL naming a repository.
    """
    try:
        _parse(spec)
    except RepoError:
        return False
    return True


def cache_dir(settings: Settings | None = None) -> Path:
    """Where clones live: `settings.remote.cache_dir`, else `<user cache dir>/coderag/repos`."""
    configured = settings.remote.cache_dir if settings is not None else ""
    if configured:
        return Path(os.path.abspath(os.path.expanduser(configured)))
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("coderag")) / "repos"


def _repo(spec: _Spec, settings: Settings | None) -> RemoteRepo:
    return RemoteRepo(
        url=spec.display_url, host=spec.host, owner=spec.owner, name=spec.name,
        cache_path=cache_dir(settings).joinpath(*spec.key), clone_url=spec.clone_url,
    )


def parse_remote(url: str, settings: Settings | None = None) -> RemoteRepo:
    """Parse a remote URL; raise `RepoError("not a git URL: ...")` when it is not one."""
    return _repo(_parse(url), settings)


# --------------------------------------------------------------------------- credentials


@dataclass(frozen=True)
class _Credentials:
    username: str
    password: str
    host: str  # netloc as git shows it in its prompts


def _token_applies(env_name: str, spec: _Spec) -> bool:
    host = spec.host
    name = env_name.upper()
    if name.startswith("GITHUB"):
        return host == "github.com" or host.endswith((".github.com", ".ghe.com"))
    if name.startswith("BITBUCKET"):
        return host == "bitbucket.org" or host.endswith(".bitbucket.org") or spec.bitbucket_server
    if name.startswith("GITLAB"):
        return host == "gitlab.com" or host.startswith("gitlab.") or host.endswith(".gitlab.com")
    return True  # GIT_TOKEN or a name of the user's choice: any https host


def _credentials(
    spec: _Spec, token_env: Sequence[str], environ: Mapping[str, str]
) -> tuple[_Credentials | None, str | None]:
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
        return _Credentials(spec.username, spec.password, spec.netloc), None
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
    return _Credentials(user, token, spec.netloc), None


# --------------------------------------------------------------------------- running git


def _git_executable() -> str:
    git = shutil.which("git")
    if not git:
        raise RepoError("git is not installed (or not on PATH)",
                        "install git to open remote repositories")
    return git


@dataclass
class _Result:
    rc: int
    out: str
    err: str


class _Git:
    """Runs git with the safety flags, a clean environment and transient credentials."""

    def __init__(self, git: str, workdir: Path, creds: _Credentials | None,
                 username_hint: str | None) -> None:
        self.git = git
        self.creds = creds
        self.secrets = tuple(s for s in (creds.password if creds else "",) if len(s) >= 3)
        self.env = {k: v for k, v in os.environ.items()
                    if k not in _DROPPED_ENV and not k.startswith("GIT_TRACE")}
        self.env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", LANGUAGE="C",
                        GIT_LFS_SKIP_SMUDGE="1", GIT_TRACE_REDACT="1")
        self.env.setdefault("GIT_HTTP_LOW_SPEED_LIMIT", "1")
        self.env.setdefault("GIT_HTTP_LOW_SPEED_TIME", "120")
        self.flags: list[str] = []
        for item in _SAFE_CONFIG:
            self.flags += ["-c", item]
        self._tmp: str | None = None
        if creds is not None:
            self._tmp = tempfile.mkdtemp(prefix=".askpass-", dir=workdir)
            script = Path(self._tmp) / "askpass.sh"
            script.write_text(_ASKPASS_SCRIPT, encoding="utf-8")
            script.chmod(stat.S_IRWXU)
            self.env.update(GIT_ASKPASS=str(script), CODERAG_GIT_USERNAME=creds.username,
                            CODERAG_GIT_PASSWORD=creds.password, CODERAG_GIT_HOST=creds.host)
            # No credential helper is asked, nor told to store the token afterwards.
            self.flags += ["-c", "credential.helper="]
        elif username_hint:
            # Through the environment (git >= 2.31), not the command line, in case it is a token.
            try:
                n = int(self.env.get("GIT_CONFIG_COUNT", "0") or 0)
            except ValueError:
                n = 0
            self.env.update({"GIT_CONFIG_COUNT": str(n + 1), f"GIT_CONFIG_KEY_{n}":
                             "credential.username", f"GIT_CONFIG_VALUE_{n}": username_hint})

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return redact(text)

    def cmd(self, args: Sequence[str]) -> list[str]:
        return [self.git, *self.flags, *args]

    def run(self, args: Sequence[str], cwd: Path) -> _Result:
        proc = self.run_bytes(args, cwd)
        return _Result(proc.returncode, proc.stdout.decode("utf-8", "replace"),
                       proc.stderr.decode("utf-8", "replace"))

    def run_bytes(self, args: Sequence[str], cwd: Path, *, ceiling: bool = True,
                  timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run git in `cwd`; `ceiling`: git may not look above `cwd` for the repository (a clone's
        own folder), off for a folder inside a local repository."""
        env = dict(self.env, GIT_CEILING_DIRECTORIES=str(cwd.parent)) if ceiling else self.env
        try:
            return subprocess.run(self.cmd(args), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, check=False, timeout=timeout)
        except OSError as exc:
            raise RepoError(f"cannot run git: {exc.strerror}", "check that git is installed") from None

    def stream(self, args: Sequence[str], cwd: Path, phase: str,
               progress: ProgressCallback | None) -> _Result:
        """Run a network command (clone, fetch), feeding its progress lines to `progress`."""
        if progress is None:
            return self.run(args, cwd)
        feed = _progress_feeder(phase, progress)
        env = dict(self.env, GIT_CEILING_DIRECTORIES=str(cwd.parent))
        try:
            proc = subprocess.Popen(self.cmd([args[0], "--progress", *args[1:]]), cwd=cwd,
                                    env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except OSError as exc:
            raise RepoError(f"cannot run git: {exc.strerror}", "check that git is installed") from None
        assert proc.stderr is not None
        lines: list[str] = []
        pending = b""
        while True:
            chunk = os.read(proc.stderr.fileno(), 8192)
            if not chunk:
                break
            pending += chunk
            *complete, pending = re.split(rb"[\r\n]", pending)
            for raw in complete:
                line = raw.decode("utf-8", "replace").strip()
                if line:
                    feed(line)
                    lines.append(line)
                    del lines[:-400]
        if pending.strip():
            lines.append(pending.decode("utf-8", "replace").strip())
        rc = proc.wait()
        return _Result(rc, "", "\n".join(lines))


# git's progress lines: "Receiving objects:  45% (450/1000), 1.20 MiB | 2.00 MiB/s", sometimes
# after "remote: ", ending in ", done." on the last one.
_PROGRESS_RE = re.compile(
    r"^(?:remote:\s*)?(?P<op>[A-Za-z][A-Za-z ]*?):\s+\d+%\s+\((?P<cur>\d+)/(?P<max>\d+)\)"
    r"(?:,\s*(?P<extra>.*?))?(?:,?\s*done\.?)?\s*$")


def _local_git() -> _Git:
    git = shutil.which("git")
    if not git:
        raise RepoError("git is not installed (or not on PATH)", "install git")
    runner = _Git(git, Path.cwd(), None, None)
    # read-only commands only: no index refresh written into the user's repository
    runner.env["GIT_OPTIONAL_LOCKS"] = "0"
    return runner


def _filter_off_flags(git: _Git, root: Path) -> list[str]:
    """`-c` flags that blank every filter driver the configuration defines: a local repository
    has no `.git/info/attributes` of ours, and its `.gitattributes` may name any driver."""
    proc = git.run_bytes(["config", "--null", "--name-only", "--get-regexp", r"^filter\."], root,
                         ceiling=False, timeout=60)
    drivers = set()
    for key in proc.stdout.decode("utf-8", "replace").split("\0"):
        name, _, setting = key.rpartition(".")
        if name.startswith("filter.") and setting in ("clean", "smudge", "process", "required"):
            drivers.add(name)
    flags: list[str] = []
    for name in sorted(drivers):
        for item in (f"{name}.clean=", f"{name}.smudge=", f"{name}.process=", f"{name}.required=false"):
            flags += ["-c", item]
    return flags


def run_local_git(args: Sequence[str], root: Path, *, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    """Run a read-only git command in a local repository (or a folder inside one) with the
    clones' safety flags and no filter driver: nothing the repository configures runs (diff
    commands must still pass `--no-ext-diff --no-textconv`)."""
    git = _local_git()
    flags = _filter_off_flags(git, root)
    return git.run_bytes([*flags, *args], root, ceiling=False, timeout=timeout)


def _progress_feeder(phase: str, progress: ProgressCallback) -> Callable[[str], None]:
    """A function taking git's stderr lines and emitting `Progress` events (other lines, such
    as "Cloning into ..." or warnings, emit nothing)."""

    def feed(line: str) -> None:
        m = _PROGRESS_RE.match(line.strip())
        if m is None:
            return
        extra = (m["extra"] or "").strip(" ,")
        text = f"{m['op'].strip()} {extra}".strip()
        progress(Progress(phase, int(m["cur"]), int(m["max"]), redact(text)))

    return feed


# --------------------------------------------------------------------------- errors

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


def _detail(text: str) -> str:
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


def _git_error(action: str, spec: _Spec, stderr: str, token_env: Sequence[str],
               branch: str | None = None) -> RepoError:
    url = spec.display_url
    low = stderr.lower()
    detail = _detail(stderr)
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


# --------------------------------------------------------------------------- clone / update


def _check_ref_arg(kind: str, value: str | None) -> None:
    if value is None:
        return
    if (not value or value.startswith("-") or ".." in value
            or any(ch.isspace() or ord(ch) < 32 or ch in "\\:?*[" for ch in value)):
        raise RepoError(f"invalid {kind} name: {value!r}",
                        f"give a {kind} as it appears on the remote")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` (a no-op where fcntl is missing), so that two coderag
    processes never clone or fetch into the same folder at once."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _write_info_attributes(path: Path) -> None:
    info = path / ".git" / "info"
    info.mkdir(parents=True, exist_ok=True)
    target = info / "attributes"
    if not target.is_file() or target.read_text(encoding="utf-8", errors="replace") != _INFO_ATTRIBUTES:
        target.write_text(_INFO_ATTRIBUTES, encoding="utf-8")


def _rev_parse(git: _Git, path: Path, ref: str) -> str:
    r = git.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], path)
    return r.out.strip() if r.rc == 0 else ""


def _is_clone(git: _Git, path: Path) -> bool:
    return (path / ".git").is_dir() and bool(_rev_parse(git, path, "HEAD"))


def _has_commit(git: _Git, path: Path, sha: str) -> bool:
    return git.run(["cat-file", "-e", f"{sha}^{{commit}}"], path).rc == 0


def _is_shallow(git: _Git, path: Path) -> bool:
    return git.run(["rev-parse", "--is-shallow-repository"], path).out.strip() == "true"


def _fetch(git: _Git, path: Path, refs: Sequence[str], depth: Sequence[str],
           progress: ProgressCallback | None, *, tags: bool = False) -> _Result:
    args = ["fetch", "--no-recurse-submodules", "--tags" if tags else "--no-tags", *depth,
            "origin", *refs]
    return git.stream(args, path, "fetch", progress)


def _is_remote_failure(stderr: str) -> bool:
    """True when a failed fetch failed for reasons other than a missing ref."""
    low = stderr.lower()
    return any(m in low for m in (*_AUTH_MARKERS, *_NETWORK_MARKERS, "repository not found",
                                  "does not appear to be a git repository",
                                  "host key verification failed"))


def _resolve_rev(git: _Git, path: Path, spec: _Spec, rev: str, shallow: bool,
                 progress: ProgressCallback | None, token_env: Sequence[str]) -> str:
    """Fetch `rev` (a commit sha, tag or branch) and return its commit sha."""
    if _HEX_SHA_RE.fullmatch(rev) and _has_commit(git, path, rev):
        return rev.lower()
    depth = ["--depth", "1"] if shallow and _is_shallow(git, path) else []
    r = _fetch(git, path, [rev], depth, progress)
    if r.rc == 0:
        sha = _rev_parse(git, path, "FETCH_HEAD")
        if sha:
            return sha
    elif _is_remote_failure(r.err):
        raise _git_error("fetch", spec, git.scrub(r.err), token_env)
    # An abbreviated sha (or a server refusing unadvertised commits): fetch all branches and
    # tags with full history, then look the rev up locally.
    depth = ["--unshallow"] if _is_shallow(git, path) else []
    r = _fetch(git, path, ["+refs/heads/*:refs/remotes/origin/*"], depth, progress, tags=True)
    if r.rc != 0 and _is_remote_failure(r.err):
        raise _git_error("fetch", spec, git.scrub(r.err), token_env)
    sha = _rev_parse(git, path, rev)
    if not sha:
        raise RepoError(f"revision '{rev}' not found in {spec.display_url}",
                        "give a commit sha, tag or branch that exists on the remote")
    return sha


def _checkout(git: _Git, path: Path, spec: _Spec, target: str, label: str | None) -> None:
    args = ["checkout", "--force", "--no-recurse-submodules"]
    args += ["-B", label] if label else ["--detach"]
    r = git.run([*args, target, "--"], path)
    if r.rc != 0:
        raise RepoError(f"cannot check out {target[:12]} in {path}: {_detail(git.scrub(r.err))}",
                        f"delete {path} and try again")


def _diff(git: _Git, path: Path, old: str, new: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    r = git.run(["diff", "--name-status", "--no-renames", "-z", "--no-ext-diff", "--no-textconv",
                 "--ignore-submodules=none", old, new, "--"], path)
    if r.rc != 0:
        return None
    fields = r.out.split("\0")
    changed: list[str] = []
    deleted: list[str] = []
    for status, name in zip(fields[0::2], fields[1::2], strict=False):
        if not status or not name:
            continue
        (deleted if status.startswith("D") else changed).append(name)
    return tuple(sorted(changed)), tuple(sorted(deleted))


def _emit(progress: ProgressCallback | None, phase: str, done: int, total: int, message: str) -> None:
    if progress is not None:
        progress(Progress(phase=phase, done=done, total=total, message=message))


def ensure_clone(
    url: str,
    *,
    branch: str | None = None,
    rev: str | None = None,
    shallow: bool | None = None,
    settings: Settings | None = None,
    progress: ProgressCallback | None = None,
) -> CloneResult:
    """Make the cached clone of `url` current and return where it is and what changed.

    First call: clone (depth 1 unless `shallow` is False; `shallow=None` means
    `settings.remote.shallow`), of `branch` (a branch or tag) when given, else of the remote's
    default branch; with `rev` (a commit sha, tag or branch), that commit is fetched and checked
    out. Later calls reuse the clone: fetch the branch, the remote's default branch or the rev,
    move the checkout there (discarding local edits in the cache) and report the files changed
    since the commit that was checked out before. `progress` receives
    `Progress(phase="clone"|"fetch", done, total, message)` events.

    Raises `RepoError` (one redacted line) for a bad URL, an unreachable host, failed
    authentication, a missing repository, branch or rev, or a missing git.
    """
    settings = settings if settings is not None else Settings()
    token_env = tuple(settings.remote.token_env)
    spec = _parse(url)
    _check_ref_arg("branch", branch)
    _check_ref_arg("rev", rev)
    executable = _git_executable()
    want_shallow = settings.remote.shallow if shallow is None else shallow
    repo = _repo(spec, settings)
    dest = repo.cache_path
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RepoError(f"cannot create the clone cache {dest.parent}: {exc.strerror}",
                        "set [remote] cache_dir to a writable folder") from None
    creds, username_hint = _credentials(spec, token_env, os.environ)
    git = _Git(executable, dest.parent, creds, username_hint)
    try:
        with _locked(dest.parent / f".{dest.name}.lock"):
            if _is_clone(git, dest):
                return _update(git, repo, spec, branch, rev, want_shallow, progress, token_env)
            return _clone(git, repo, spec, branch, rev, want_shallow, progress, token_env)
    finally:
        git.close()


def _clone(git: _Git, repo: RemoteRepo, spec: _Spec, branch: str | None, rev: str | None,
           shallow: bool, progress: ProgressCallback | None,
           token_env: Sequence[str]) -> CloneResult:
    dest = repo.cache_path
    _emit(progress, "clone", 0, 0, f"cloning {spec.display_url}")
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
    try:
        args = ["clone", "--no-checkout", "--template=", "--no-recurse-submodules"]
        if shallow:
            args += ["--depth", "1"]
        if branch:
            args += ["--branch", branch]
        r = git.stream([*args, "--", spec.clone_url, str(tmp)], dest.parent, "clone", progress)
        if r.rc != 0:
            raise _git_error("clone", spec, git.scrub(r.err), token_env, branch)
        _write_info_attributes(tmp)
        head = _rev_parse(git, tmp, "HEAD")
        if not head:
            raise RepoError(f"the repository {spec.display_url} is empty",
                            "push a commit to it first")
        label: str | None = branch
        if not branch:
            # Remembered so that later updates of the default branch keep a branch checked out.
            label = git.run(["symbolic-ref", "--quiet", "--short", "HEAD"], tmp).out.strip()
            if label:
                git.run(["config", "coderag.defaultBranch", label], tmp)
        target = head
        if rev:
            target = _resolve_rev(git, tmp, spec, rev, shallow, progress, token_env)
            label = None  # a pinned commit is checked out detached
        _checkout(git, tmp, spec, target, label or None)
        if dest.is_symlink() or dest.is_file():
            dest.unlink()
        elif dest.exists():  # a broken leftover (interrupted clone, deleted .git)
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    _emit(progress, "clone", 1, 1, f"cloned {spec.display_url} at {target[:12]}")
    return CloneResult(dest, target, "", None, (), repo)


def _update(git: _Git, repo: RemoteRepo, spec: _Spec, branch: str | None, rev: str | None,
            shallow: bool, progress: ProgressCallback | None,
            token_env: Sequence[str]) -> CloneResult:
    path = repo.cache_path
    _emit(progress, "fetch", 0, 0, f"fetching {spec.display_url}")
    previous = _rev_parse(git, path, "HEAD")
    git.run(["remote", "set-url", "origin", spec.clone_url], path)
    _write_info_attributes(path)
    is_shallow = _is_shallow(git, path)
    depth = (["--depth", "1"] if shallow and is_shallow
             else ["--unshallow"] if is_shallow else [])
    label: str | None
    if rev:
        target = _resolve_rev(git, path, spec, rev, shallow, progress, token_env)
        label = None
    else:
        r = _fetch(git, path, [branch or "HEAD"], depth, progress)
        if r.rc != 0:
            raise _git_error("fetch", spec, git.scrub(r.err), token_env, branch)
        target = _rev_parse(git, path, "FETCH_HEAD")
        if not target:
            raise RepoError(f"git fetch of {spec.display_url} returned no commit",
                            f"delete {path} and try again")
        label = branch or git.run(["config", "--get", "coderag.defaultBranch"], path).out.strip()
    _checkout(git, path, spec, target, label or None)
    if previous == target:
        changes: tuple[tuple[str, ...], tuple[str, ...]] | None = ((), ())
    else:
        if previous and not _has_commit(git, path, previous):
            _fetch(git, path, [previous], ["--depth", "1"] if shallow else [], None)
        changes = _diff(git, path, previous, target) if previous else None
    _emit(progress, "fetch", 1, 1, f"{spec.display_url} at {target[:12]}")
    if changes is None:
        return CloneResult(path, target, previous, None, (), repo)
    return CloneResult(path, target, previous, changes[0], changes[1], repo)
