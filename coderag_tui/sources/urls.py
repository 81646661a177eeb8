"""Remote repository URLs: recognise them, parse them into host/owner/name and a cache
folder, and redact the credentials of any URL inside a text.

- `is_remote(spec)`: does `spec` name a remote repository (a URL or scp-like `user@host:path`)?
- `redact(text)`: `text` with the credentials of every URL inside it replaced by `***`.
- `parse_remote(url, settings=None) -> RemoteRepo`: host, owner, name and the cache folder.
- `cache_dir(settings) -> Path`: the folder holding every clone (one per host/owner/name).
- `parse_spec(url) -> Spec`: the parsed URL with its credentials kept apart (for the git runner).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from coderag_tui.config import Settings
from coderag_tui.errors import RepoError

_NETWORK_SCHEMES = frozenset({"http", "https", "ssh", "git", "git+ssh", "ssh+git"})
_SSH_SCHEMES = frozenset({"ssh", "git+ssh", "ssh+git"})
# Forges whose repository URLs are always exactly /OWNER/REPO (longer browser URLs such as
# /OWNER/REPO/tree/main are cut to that).
_FORGES = frozenset({"github.com", "bitbucket.org", "codeberg.org"})
_KNOWN_HOSTS = _FORGES | {"gitlab.com"}

_SCP_RE = re.compile(r"(?P<user>[A-Za-z0-9._~+-]+)@(?P<host>[A-Za-z0-9.-]+):(?P<path>\S+)")

_URL_USERINFO_RE = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s'\"<>]+)@")
_QUERY_SECRET_RE = re.compile(
    r"(?P<key>[?&](?:access_token|private_token|token|password|passwd|secret|key)=)[^&\s#'\"]+",
    re.IGNORECASE,
)
_AUTH_HEADER_RE = re.compile(r"(?P<key>\bAuthorization:\s*(?:Basic|Bearer|token)?\s*)\S+", re.I)


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
class Spec:
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


def parse_spec(spec: str) -> Spec:
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
        return Spec("ssh", text, shown, host, host, owner, name, m["user"], None,
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
        return Spec("file", clone_url, shown, "", "", owner, name, None, None,
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
    return Spec(
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
        parse_spec(spec)
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


def remote_repo(spec: Spec, settings: Settings | None) -> RemoteRepo:
    return RemoteRepo(
        url=spec.display_url, host=spec.host, owner=spec.owner, name=spec.name,
        cache_path=cache_dir(settings).joinpath(*spec.key), clone_url=spec.clone_url,
    )


def parse_remote(url: str, settings: Settings | None = None) -> RemoteRepo:
    """Parse a remote URL; raise `RepoError("not a git URL: ...")` when it is not one."""
    return remote_repo(parse_spec(url), settings)
