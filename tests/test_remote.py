"""Remote repositories: URL parsing, redaction, and real clones of local repositories.

Every repository is made by the tests in a temporary folder and reached through file:// URLs
or a git http-backend served on 127.0.0.1; nothing is mocked and no other host is contacted.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest

from coderag_tui.config import RemoteSettings, Settings
from coderag_tui.errors import RepoError
from coderag_tui.models import Progress
from coderag_tui.sources.clone import ensure_clone
from coderag_tui.sources.credentials import credentials_for
from coderag_tui.sources.gitrun import progress_feeder
from coderag_tui.sources.urls import cache_dir, is_remote, parse_remote, parse_spec, redact
from tests.helpers.loopback import serving

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

TOKEN_VARS = ("GITHUB_TOKEN", "BITBUCKET_TOKEN", "GIT_TOKEN", "GITLAB_TOKEN", "BITBUCKET_USERNAME")


def git(*args: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout.strip()


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private global git config, and none of the developer's tokens or askpass programs."""
    config = tmp_path / "gitconfig"
    config.write_text(
        "[user]\n\tname = Test\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n"
        "[advice]\n\tdetachedHead = false\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in (*TOKEN_VARS, "GIT_ASKPASS", "SSH_ASKPASS", "GIT_DIR", "GIT_WORK_TREE",
                 "GIT_CONFIG_COUNT", "GIT_SSH_COMMAND"):
        monkeypatch.delenv(name, raising=False)
    return config


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(remote=RemoteSettings(cache_dir=str(tmp_path / "cache")))


@dataclass
class Upstream:
    work: Path  # a working repository whose origin is `bare`
    bare: Path
    commits: dict[str, str]  # label -> sha

    @property
    def url(self) -> str:
        return self.bare.as_uri()

    def commit(self, message: str, files: dict[str, str | None]) -> str:
        """Write (or with None, delete) files, commit, push; return the new sha.

        The upstream side ignores the hostile global config some tests install.
        """
        tame = ("-c", "core.fsmonitor=false", "-c", f"core.hooksPath={os.devnull}",
                "-c", "filter.evil.clean=cat", "-c", "filter.evil.smudge=cat")
        for name, text in files.items():
            path = self.work / name
            if text is None:
                git(*tame, "rm", "-q", name, cwd=self.work)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                git(*tame, "add", name, cwd=self.work)
        git(*tame, "commit", "-q", "-m", message, cwd=self.work)
        git(*tame, "push", "-q", "origin", "HEAD", cwd=self.work)
        return git(*tame, "rev-parse", "HEAD", cwd=self.work)


def make_upstream(root: Path, bare_name: str = "team/project.git") -> Upstream:
    work = root / "work"
    work.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=work)
    (work / "src").mkdir()
    (work / "a.txt").write_text("alpha v1\n", encoding="utf-8")
    (work / "b.txt").write_text("beta\n", encoding="utf-8")
    (work / "src" / "m.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "first", cwd=work)
    first = git("rev-parse", "HEAD", cwd=work)
    git("tag", "-a", "v1", "-m", "release 1", cwd=work)
    (work / "a.txt").write_text("alpha v2\n", encoding="utf-8")
    git("commit", "-q", "-am", "second", cwd=work)
    second = git("rev-parse", "HEAD", cwd=work)
    git("checkout", "-q", "-b", "feature", cwd=work)
    (work / "feat.txt").write_text("feature\n", encoding="utf-8")
    git("add", "feat.txt", cwd=work)
    git("commit", "-q", "-m", "feature work", cwd=work)
    feature = git("rev-parse", "HEAD", cwd=work)
    git("checkout", "-q", "main", cwd=work)
    bare = root / bare_name
    bare.parent.mkdir(parents=True, exist_ok=True)
    git("clone", "-q", "--bare", str(work), str(bare))
    git("remote", "add", "origin", str(bare), cwd=work)
    git("fetch", "-q", "origin", cwd=work)
    git("branch", "-q", "--set-upstream-to=origin/main", "main", cwd=work)
    return Upstream(work, bare, {"first": first, "second": second, "feature": feature})


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    return make_upstream(tmp_path / "upstream")


def one_line(exc: pytest.ExceptionInfo[RepoError]) -> str:
    err = exc.value
    assert "\n" not in err.message and "\n" not in err.hint
    assert "Traceback" not in err.one_line()
    return err.one_line()


def leftovers(settings: Settings) -> list[str]:
    """Temporary clone folders or askpass folders left in the cache."""
    root = cache_dir(settings)
    if not root.exists():
        return []
    return [str(p) for p in root.rglob("*") if p.name.endswith(".tmp") or ".askpass-" in p.name]


# --------------------------------------------------------------------------- URLs

REMOTE_URLS = [
    "https://github.com/owner/repo",
    "https://github.com/owner/repo.git",
    "https://github.com/owner/repo/",
    "http://github.com/owner/repo",
    "git@github.com:owner/repo.git",
    "git@github.com:owner/repo",
    "ssh://git@host.example/x.git",
    "ssh://git@bitbucket.example.com:7999/proj/repo.git",
    "git+ssh://git@host.example/team/x.git",
    "https://bitbucket.org/workspace/repo",
    "https://user@bitbucket.org/workspace/repo.git",
    "https://bitbucket.example.com/scm/PROJ/repo.git",
    "https://bitbucket.example.com/scm/PROJ/repo",
    "https://git.example.com/bitbucket/scm/~jdoe/repo.git",
    "https://gitlab.com/group/sub/repo",
    "file:///srv/git/repo.git",
    "file:///srv/git/repo",
    "git://host.example/project.git",
    "git://host.example:9418/a/b/project",
    "https://example.com/some/path/repo.git",
    "http://127.0.0.1:8080/team/repo.git",
    "https://x-access-token:abc@github.com/owner/repo",
]

NOT_REMOTE = [
    "",
    ".",
    "./repo",
    "../repo",
    "/home/me/repo",
    "~/code/repo",
    "repo",
    "C:\\Users\\me\\repo",
    "C:/Users/me/repo",
    "https://example.com/some/page",
    "https://github.com/owner",
    "https://github.com/",
    "https://",
    "ftp://host.example/repo.git",
    "ext::sh -c touch% /tmp/pwned",
    "fd::3",
    "https://github.com/../../etc/passwd",
    "https://example.com/a/../../b.git",
    "file://otherhost/srv/repo.git",
    "-uhttps://example.com/x.git",
    "https://example.com/a b.git",
    "https://example.com:notaport/x.git",
]


@pytest.mark.parametrize("url", REMOTE_URLS)
def test_is_remote_accepts_remote_urls(url: str) -> None:
    assert is_remote(url)
    parse_remote(url)  # never raises for what is_remote accepts


@pytest.mark.parametrize("spec", NOT_REMOTE)
def test_is_remote_rejects_local_paths_and_bad_urls(spec: str) -> None:
    assert not is_remote(spec)


@pytest.mark.parametrize(
    ("url", "host", "owner", "name", "clone_url"),
    [
        ("https://github.com/Owner/Repo", "github.com", "Owner", "Repo",
         "https://github.com/Owner/Repo"),
        ("https://github.com/owner/repo.git", "github.com", "owner", "repo",
         "https://github.com/owner/repo.git"),
        ("https://github.com/owner/repo/tree/main/src", "github.com", "owner", "repo",
         "https://github.com/owner/repo"),
        ("git@github.com:owner/repo.git", "github.com", "owner", "repo",
         "git@github.com:owner/repo.git"),
        ("ssh://git@bitbucket.example.com:7999/proj/repo.git", "bitbucket.example.com", "proj",
         "repo", "ssh://git@bitbucket.example.com:7999/proj/repo.git"),
        ("https://bitbucket.org/workspace/repo", "bitbucket.org", "workspace", "repo",
         "https://bitbucket.org/workspace/repo"),
        ("https://bitbucket.example.com/scm/PROJ/repo.git", "bitbucket.example.com", "PROJ",
         "repo", "https://bitbucket.example.com/scm/PROJ/repo.git"),
        ("https://git.example.com/bitbucket/scm/PROJ/repo.git", "git.example.com", "PROJ",
         "repo", "https://git.example.com/bitbucket/scm/PROJ/repo.git"),
        ("https://gitlab.com/group/sub/repo.git", "gitlab.com", "group/sub", "repo",
         "https://gitlab.com/group/sub/repo.git"),
        ("file:///srv/git/team/repo.git", "", "team", "repo", "file:///srv/git/team/repo.git"),
        ("file:///srv/git/team/repo/.git", "", "team", "repo", "file:///srv/git/team/repo"),
        ("git://host.example/project.git", "host.example", "", "project",
         "git://host.example/project.git"),
        ("https://user:s3cret@Example.COM:8443/a/b.git", "example.com", "a", "b",
         "https://example.com:8443/a/b.git"),
    ],
)
def test_parse_remote(url: str, host: str, owner: str, name: str, clone_url: str) -> None:
    repo = parse_remote(url)
    assert (repo.host, repo.owner, repo.name, repo.clone_url) == (host, owner, name, clone_url)
    assert "s3cret" not in repo.url and "s3cret" not in repo.clone_url


def test_parse_remote_redacts_the_display_url() -> None:
    repo = parse_remote("https://x-access-token:ghp_SECRET@github.com/o/r.git")
    assert repo.url == "https://***@github.com/o/r.git"
    assert repo.clone_url == "https://github.com/o/r.git"


def test_cache_paths(tmp_path: Path, settings: Settings) -> None:
    root = tmp_path / "cache"
    https = parse_remote("https://github.com/owner/repo", settings)
    ssh = parse_remote("git@github.com:owner/repo.git", settings)
    assert https.cache_path == ssh.cache_path == root / "github.com" / "owner" / "repo"
    assert parse_remote("https://gitlab.com/group/sub/repo", settings).cache_path == (
        root / "gitlab.com" / "group+sub" / "repo")
    assert parse_remote("git://h.example/p.git", settings).cache_path == root / "git~h.example" / "_" / "p"
    # another scheme or port is another server: never one cache folder
    plain = parse_remote("http://host:1/x.git", settings).cache_path
    secure = parse_remote("https://host:2/x.git", settings).cache_path
    assert plain == root / "http~host~1" / "_" / "x" and secure == root / "host~2" / "_" / "x"
    assert parse_remote("http://host/x.git", settings).cache_path != parse_remote("https://host/x.git", settings).cache_path
    one = parse_remote("file:///a/x/repo.git", settings).cache_path
    two = parse_remote("file:///b/x/repo.git", settings).cache_path
    assert one != two and one.name == two.name == "repo" and one.parent.parent == root / "file"


def test_cache_dir_default_and_configured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    default = cache_dir(Settings())
    assert default.name == "repos" and default.parent.name == "coderag"
    monkeypatch.setenv("HOME", str(tmp_path))
    configured = cache_dir(Settings(remote=RemoteSettings(cache_dir="~/clones")))
    assert configured == tmp_path / "clones"


@pytest.mark.parametrize(
    "url",
    ["https://user:hunter2@github.com/onlyowner", "not a url with hunter2",
     "ftp://me:hunter2@host.example/r.git", "https://me:hunter2@example.com/page"],
)
def test_bad_url_error_is_one_redacted_line(url: str) -> None:
    with pytest.raises(RepoError) as exc:
        parse_remote(url)
    line = one_line(exc)
    assert line.startswith("not a git URL: ")
    if "@" in url:
        assert "hunter2" not in line


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://user:token@host/x", "https://***@host/x"),
        ("https://x-access-token:ghp_abc123@github.com/o/r.git",
         "https://***@github.com/o/r.git"),
        ("fatal: unable to access 'https://u:p4ss@h.example/r.git/': 403",
         "fatal: unable to access 'https://***@h.example/r.git/': 403"),
        ("https://ghp_tok@github.com/o/r", "https://***@github.com/o/r"),
        ("https://user:p@ss@host/x", "https://***@host/x"),
        ("ssh://git:pw@host/x.git", "ssh://***@host/x.git"),
        ("ssh://git@host/x.git", "ssh://git@host/x.git"),
        ("git@github.com:o/r.git", "git@github.com:o/r.git"),
        ("see https://h/r.git?access_token=abc&x=1", "see https://h/r.git?access_token=***&x=1"),
        ("Authorization: Basic eDp5", "Authorization: Basic ***"),
        ("two: http://a:b@h1/x and https://c:d@h2/y", "two: http://***@h1/x and https://***@h2/y"),
        ("no url here: user:pass@", "no url here: user:pass@"),
    ],
)
def test_redact(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_progress_lines_become_events() -> None:
    events: list[Progress] = []
    feed = progress_feeder("clone", events.append)
    for line in ("Cloning into 'repo'...", "remote: Enumerating objects: 12, done.",
                 "remote: Counting objects:  50% (6/12)", "remote: Counting objects: 100% (12/12), done.",
                 "Receiving objects:  41% (5/12), 1.20 MiB | 2.00 MiB/s",
                 "Receiving objects: 100% (12/12), 2.93 MiB | 2.00 MiB/s, done.",
                 "Resolving deltas: 100% (3/3), done.", "warning: redirecting to https://h/r.git/"):
        feed(line)
    assert [(e.phase, e.done, e.total, e.message) for e in events] == [
        ("clone", 6, 12, "Counting objects"), ("clone", 12, 12, "Counting objects"),
        ("clone", 5, 12, "Receiving objects 1.20 MiB | 2.00 MiB/s"),
        ("clone", 12, 12, "Receiving objects 2.93 MiB | 2.00 MiB/s"),
        ("clone", 3, 3, "Resolving deltas"),
    ]


def test_token_is_chosen_per_host() -> None:
    env = {"GITHUB_TOKEN": "gh", "BITBUCKET_TOKEN": "bb", "BITBUCKET_USERNAME": "me"}
    names = ("GITHUB_TOKEN", "BITBUCKET_TOKEN", "GIT_TOKEN")

    def creds(url: str, environ: dict[str, str] = env) -> tuple[str, str] | None:
        found, _ = credentials_for(parse_spec(url), names, environ)
        return (found.username, found.password) if found else None

    assert creds("https://github.com/o/r") == ("x-access-token", "gh")
    assert creds("https://bitbucket.org/w/r") == ("me", "bb")
    assert creds("https://bb.example.com/scm/P/r.git") == ("me", "bb")
    assert creds("https://other.example.com/o/r.git") is None  # host-specific tokens stay home
    assert creds("https://other.example.com/o/r.git", {"GIT_TOKEN": "t"}) == ("x-access-token", "t")
    assert creds("http://github.com/o/r") is None  # never over plain http
    assert creds("git@github.com:o/r.git") is None  # ssh uses keys
    assert creds("https://u:p@other.example.com/o/r.git") == ("u", "p")


# --------------------------------------------------------------------------- cloning


@needs_git
def test_clone_default_branch_shallow(upstream: Upstream, settings: Settings) -> None:
    events: list[Progress] = []
    result = ensure_clone(upstream.url, settings=settings, progress=events.append)
    assert result.path == parse_remote(upstream.url, settings).cache_path
    assert result.head_commit == upstream.commits["second"]
    assert result.previous_commit == ""
    assert result.changed_files is None and result.deleted_files == () and result.fresh
    assert (result.path / "a.txt").read_text(encoding="utf-8") == "alpha v2\n"
    assert (result.path / "src" / "m.py").is_file()
    assert git("rev-parse", "--is-shallow-repository", cwd=result.path) == "true"
    assert git("rev-list", "--count", "HEAD", cwd=result.path) == "1"
    assert git("symbolic-ref", "--short", "HEAD", cwd=result.path) == "main"
    assert git("remote", "get-url", "origin", cwd=result.path) == upstream.url
    assert git("status", "--porcelain", cwd=result.path) == ""
    assert "* -filter" in (result.path / ".git" / "info" / "attributes").read_text()
    assert not list((result.path / ".git" / "hooks").glob("*"))  # no template hooks copied
    assert events and all(isinstance(e, Progress) for e in events)
    assert {e.phase for e in events} == {"clone"}
    assert any(e.total > 0 and "objects" in e.message for e in events)  # git's own progress lines
    assert leftovers(settings) == []


@needs_git
def test_full_clone_when_not_shallow(upstream: Upstream, settings: Settings) -> None:
    result = ensure_clone(upstream.url, shallow=False, settings=settings)
    assert git("rev-parse", "--is-shallow-repository", cwd=result.path) == "false"
    assert git("rev-list", "--count", "HEAD", cwd=result.path) == "2"


@needs_git
def test_shallow_setting_is_the_default(upstream: Upstream, tmp_path: Path) -> None:
    deep = Settings(remote=RemoteSettings(cache_dir=str(tmp_path / "c2"), shallow=False))
    result = ensure_clone(upstream.url, settings=deep)
    assert git("rev-parse", "--is-shallow-repository", cwd=result.path) == "false"


@needs_git
def test_clone_branch(upstream: Upstream, settings: Settings) -> None:
    result = ensure_clone(upstream.url, branch="feature", settings=settings)
    assert result.head_commit == upstream.commits["feature"]
    assert (result.path / "feat.txt").read_text(encoding="utf-8") == "feature\n"
    assert git("symbolic-ref", "--short", "HEAD", cwd=result.path) == "feature"
    assert git("rev-parse", "--is-shallow-repository", cwd=result.path) == "true"


@needs_git
def test_clone_rev_full_sha(upstream: Upstream, settings: Settings) -> None:
    result = ensure_clone(upstream.url, rev=upstream.commits["first"], settings=settings)
    assert result.head_commit == upstream.commits["first"]
    assert (result.path / "a.txt").read_text(encoding="utf-8") == "alpha v1\n"
    assert git("rev-parse", "--is-shallow-repository", cwd=result.path) == "true"


@needs_git
def test_rev_tag_then_short_sha_on_reuse(upstream: Upstream, settings: Settings) -> None:
    tagged = ensure_clone(upstream.url, rev="v1", settings=settings)
    assert tagged.head_commit == upstream.commits["first"]
    short = upstream.commits["feature"][:9]
    moved = ensure_clone(upstream.url, rev=short, settings=settings)
    assert moved.head_commit == upstream.commits["feature"]
    assert moved.previous_commit == upstream.commits["first"]
    assert moved.changed_files == ("a.txt", "feat.txt") and moved.deleted_files == ()
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=moved.path) == "HEAD"  # detached
    default = ensure_clone(upstream.url, settings=settings)
    assert default.head_commit == upstream.commits["second"]
    assert default.deleted_files == ("feat.txt",) and default.changed_files == ()
    assert git("symbolic-ref", "--short", "HEAD", cwd=default.path) == "main"


@needs_git
def test_missing_rev(upstream: Upstream, settings: Settings) -> None:
    with pytest.raises(RepoError) as exc:
        ensure_clone(upstream.url, rev="0" * 40, settings=settings)
    line = one_line(exc)
    assert line.startswith(f"revision '{'0' * 40}' not found in file://")
    assert not parse_remote(upstream.url, settings).cache_path.exists()
    assert leftovers(settings) == []


@needs_git
def test_missing_branch(upstream: Upstream, settings: Settings) -> None:
    with pytest.raises(RepoError) as exc:
        ensure_clone(upstream.url, branch="nope", settings=settings)
    assert one_line(exc).startswith(f"branch 'nope' not found in {upstream.url}")
    assert not parse_remote(upstream.url, settings).cache_path.exists()
    assert leftovers(settings) == []
    # the same on a cached clone
    ensure_clone(upstream.url, settings=settings)
    with pytest.raises(RepoError) as exc:
        ensure_clone(upstream.url, branch="nope", settings=settings)
    assert one_line(exc).startswith("branch 'nope' not found in ")


@needs_git
@pytest.mark.parametrize("bad", ["--upload-pack=touch /tmp/x", "a b", "x..y"])
def test_option_like_branch_is_refused(upstream: Upstream, settings: Settings, bad: str) -> None:
    with pytest.raises(RepoError) as exc:
        ensure_clone(upstream.url, branch=bad, settings=settings)
    assert one_line(exc).startswith("invalid branch name")


@needs_git
def test_nonexistent_repository(tmp_path: Path, settings: Settings) -> None:
    url = (tmp_path / "nowhere" / "missing.git").as_uri()
    with pytest.raises(RepoError) as exc:
        ensure_clone(url, settings=settings)
    assert one_line(exc).startswith(f"repository not found: {url}")
    assert leftovers(settings) == []


@needs_git
def test_empty_repository(tmp_path: Path, settings: Settings) -> None:
    bare = tmp_path / "empty.git"
    git("init", "-q", "--bare", str(bare))
    with pytest.raises(RepoError) as exc:
        ensure_clone(bare.as_uri(), settings=settings)
    assert "is empty" in one_line(exc)


@needs_git
def test_unreachable_host(settings: Settings) -> None:
    # Port 1 on this machine: refused at once, no other host is contacted.
    with pytest.raises(RepoError) as exc:
        ensure_clone("https://127.0.0.1:1/team/repo.git", settings=settings)
    assert one_line(exc).startswith("cannot reach 127.0.0.1")


def test_git_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, settings: Settings) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(RepoError) as exc:
        ensure_clone("https://github.com/owner/repo", settings=settings)
    assert one_line(exc).startswith("git is not installed")


# --------------------------------------------------------------------------- reuse


@needs_git
def test_reuse_reports_changed_and_deleted_files(upstream: Upstream, settings: Settings) -> None:
    first = ensure_clone(upstream.url, settings=settings)
    (first.path / "a.txt").write_text("local edit in the cache\n", encoding="utf-8")
    upstream.commit("modify a, delete b", {"a.txt": "alpha v3\n", "b.txt": None})
    new_head = upstream.commit("add c", {"c.txt": "gamma\n"})

    events: list[Progress] = []
    second = ensure_clone(upstream.url, settings=settings, progress=events.append)
    assert second.path == first.path
    assert second.previous_commit == first.head_commit
    assert second.head_commit == new_head
    assert second.changed_files == ("a.txt", "c.txt")
    assert second.deleted_files == ("b.txt",)
    assert not second.fresh
    assert (second.path / "a.txt").read_text(encoding="utf-8") == "alpha v3\n"
    assert not (second.path / "b.txt").exists()
    assert (second.path / "c.txt").read_text(encoding="utf-8") == "gamma\n"
    assert git("rev-parse", "--is-shallow-repository", cwd=second.path) == "true"
    assert git("symbolic-ref", "--short", "HEAD", cwd=second.path) == "main"
    assert {e.phase for e in events} == {"fetch"}

    third = ensure_clone(upstream.url, settings=settings)
    assert third.previous_commit == third.head_commit == new_head
    assert third.changed_files == () and third.deleted_files == ()


@needs_git
def test_reuse_follows_a_force_push(upstream: Upstream, settings: Settings) -> None:
    first = ensure_clone(upstream.url, settings=settings)
    git("reset", "-q", "--hard", upstream.commits["first"], cwd=upstream.work)
    (upstream.work / "b.txt").write_text("beta rewritten\n", encoding="utf-8")
    git("commit", "-q", "-am", "rewrite", cwd=upstream.work)
    git("push", "-q", "--force", "origin", "main", cwd=upstream.work)
    rewritten = git("rev-parse", "HEAD", cwd=upstream.work)
    result = ensure_clone(upstream.url, settings=settings)
    assert result.previous_commit == first.head_commit and result.head_commit == rewritten
    assert result.changed_files == ("a.txt", "b.txt") and result.deleted_files == ()
    assert (result.path / "a.txt").read_text(encoding="utf-8") == "alpha v1\n"


@needs_git
def test_reuse_switches_branch_and_deepens(upstream: Upstream, settings: Settings) -> None:
    ensure_clone(upstream.url, settings=settings)
    result = ensure_clone(upstream.url, branch="feature", shallow=False, settings=settings)
    assert result.head_commit == upstream.commits["feature"]
    assert result.changed_files == ("feat.txt",) and result.deleted_files == ()
    assert git("symbolic-ref", "--short", "HEAD", cwd=result.path) == "feature"
    assert git("rev-parse", "--is-shallow-repository", cwd=result.path) == "false"
    back = ensure_clone(upstream.url, settings=settings)
    assert back.head_commit == upstream.commits["second"]
    assert back.changed_files == () and back.deleted_files == ("feat.txt",)
    assert git("symbolic-ref", "--short", "HEAD", cwd=back.path) == "main"


@needs_git
def test_broken_cache_is_cloned_again(upstream: Upstream, settings: Settings) -> None:
    first = ensure_clone(upstream.url, settings=settings)
    shutil.rmtree(first.path / ".git")
    again = ensure_clone(upstream.url, settings=settings)
    assert again.fresh and again.head_commit == upstream.commits["second"]
    assert (again.path / "a.txt").is_file()


# --------------------------------------------------------------------------- credentials


@needs_git
def test_credentials_never_stored(upstream: Upstream, settings: Settings,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_TOKEN", "env-s3cr3t-token")
    url = f"file://tok:url-s3cr3t@{upstream.bare}"
    result = ensure_clone(url, settings=settings)
    assert result.repo is not None and "url-s3cr3t" not in result.repo.url
    assert git("remote", "get-url", "origin", cwd=result.path) == upstream.url
    for path in (result.path / ".git").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"s3cr3t" not in data, path
    # an error about a URL with credentials does not show them
    with pytest.raises(RepoError) as exc:
        ensure_clone(f"file://tok:url-s3cr3t@{upstream.bare.parent}/missing.git", settings=settings)
    assert "s3cr3t" not in one_line(exc)


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class HttpRemote:
    base: str  # http://127.0.0.1:PORT
    authorizations: list[str]


def _git_http_app(root: Path, user: str, password: str,
                  seen: list[str]) -> Callable[..., list[bytes]]:
    """git http-backend behind HTTP Basic auth, as a WSGI app."""
    expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        auth = environ.get("HTTP_AUTHORIZATION", "")
        seen.append(auth)
        if auth != expected:
            start_response("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="test"'),
                                                ("Content-Type", "text/plain")])
            return [b"unauthorized\n"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        env = {
            "PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": str(root), "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "REQUEST_METHOD": environ["REQUEST_METHOD"], "PATH_INFO": environ.get("PATH_INFO", ""),
            "QUERY_STRING": environ.get("QUERY_STRING", ""),
            "CONTENT_TYPE": environ.get("CONTENT_TYPE", ""), "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": user, "REMOTE_ADDR": "127.0.0.1",
            "GIT_PROTOCOL": environ.get("HTTP_GIT_PROTOCOL", ""),
        }
        if environ.get("HTTP_CONTENT_ENCODING"):
            env["HTTP_CONTENT_ENCODING"] = environ["HTTP_CONTENT_ENCODING"]
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True,
                             check=False).stdout
        head, sep, rest = out.partition(b"\r\n\r\n")
        if not sep:
            head, _, rest = out.partition(b"\n\n")
        status, headers = "200 OK", []
        for line in head.decode("latin-1").splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = value.strip()
            elif key:
                headers.append((key, value.strip()))
        start_response(status, headers)
        return [rest]

    return app


@pytest.fixture
def http_remote(upstream: Upstream) -> Iterator[HttpRemote]:
    seen: list[str] = []
    root = upstream.bare.parent.parent  # the bare repo is <root>/team/project.git
    app = _git_http_app(root, "x-access-token", "T0KEN-123", seen)
    server = make_server("127.0.0.1", 0, app, server_class=_ThreadingWSGIServer,
                         handler_class=_QuietHandler)
    with serving(server) as url:
        yield HttpRemote(url, seen)


@needs_git
def test_http_credentials_pass_through_askpass_only(
    upstream: Upstream, http_remote: HttpRemote, settings: Settings
) -> None:
    url = f"{http_remote.base.replace('://', '://x-access-token:T0KEN-123@')}/team/project.git"
    result = ensure_clone(url, settings=settings)
    assert result.head_commit == upstream.commits["second"]
    assert any(a.startswith("Basic ") for a in http_remote.authorizations)
    clean = f"{http_remote.base}/team/project.git"
    assert git("remote", "get-url", "origin", cwd=result.path) == clean
    assert result.repo is not None and result.repo.url.startswith("http://***@127.0.0.1:")
    for path in (result.path / ".git").rglob("*"):
        if path.is_file():
            assert b"T0KEN-123" not in path.read_bytes(), path
    assert leftovers(settings) == []  # the askpass folder is gone

    new_head = upstream.commit("more", {"d.txt": "delta\n"})
    again = ensure_clone(url, settings=settings)
    assert again.head_commit == new_head and again.changed_files == ("d.txt",)


@needs_git
def test_http_wrong_password_is_an_auth_error(
    upstream: Upstream, http_remote: HttpRemote, settings: Settings
) -> None:
    url = f"{http_remote.base.replace('://', '://x-access-token:WRONG-pass@')}/team/project.git"
    with pytest.raises(RepoError) as exc:
        ensure_clone(url, settings=settings)
    line = one_line(exc)
    assert line.startswith("authentication failed for http://***@127.0.0.1:")
    assert "WRONG-pass" not in line
    assert leftovers(settings) == []


@needs_git
def test_env_token_is_not_sent_over_plain_http(
    upstream: Upstream, http_remote: HttpRemote, settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GIT_TOKEN", "T0KEN-123")
    with pytest.raises(RepoError) as exc:
        ensure_clone(f"{http_remote.base}/team/project.git", settings=settings)
    line = one_line(exc)
    assert line.startswith("authentication failed for http://127.0.0.1:")
    assert "T0KEN-123" not in line
    assert not any(a.startswith("Basic ") for a in http_remote.authorizations)


# --------------------------------------------------------------------------- nothing runs


def _marker_script(path: Path, marker: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "$0" >> "{marker}"\ncat >/dev/null 2>&1 || true\n',
                    encoding="utf-8")
    path.chmod(0o755)
    return path


@needs_git
def test_hooks_filters_and_fsmonitor_do_not_run(
    tmp_path: Path, isolated_git: Path, settings: Settings
) -> None:
    up = make_upstream(tmp_path / "up2")
    # The repository asks for a filter on every text file.
    up.commit("attributes", {".gitattributes": "*.txt filter=evil\n"})
    marker = tmp_path / "MARKER"
    templates = tmp_path / "templates"
    for hook in ("post-checkout", "reference-transaction", "post-merge", "post-index-change"):
        _marker_script(templates / "hooks" / hook, marker)
    monitor = _marker_script(tmp_path / "fsmonitor.sh", marker)
    config = str(isolated_git)
    git("config", "--file", config, "init.templateDir", str(templates))
    git("config", "--file", config, "filter.evil.smudge",
        f"sh -c 'echo filter >> \"{marker}\"; tr a-z A-Z'")
    git("config", "--file", config, "filter.evil.required", "true")
    git("config", "--file", config, "core.fsmonitor", str(monitor))

    # Control: a plain clone with this configuration runs the hooks and the filter.
    git("clone", "-q", up.url, str(tmp_path / "control"))
    assert marker.is_file() and "filter" in marker.read_text()
    assert (tmp_path / "control" / "a.txt").read_text() == "ALPHA V2\n"
    marker.unlink()

    result = ensure_clone(up.url, settings=settings)
    assert (result.path / "a.txt").read_text() == "alpha v2\n"  # raw content, no filter
    up.commit("change", {"a.txt": "alpha v9\n", "new.txt": "new\n"})
    updated = ensure_clone(up.url, settings=settings)
    assert updated.changed_files == ("a.txt", "new.txt")
    ensure_clone(up.url, rev=up.commits["first"], settings=settings)
    assert not marker.exists(), marker.read_text()

    # A global core.hooksPath is neutralised as well.
    hooks = tmp_path / "global-hooks"
    _marker_script(hooks / "post-checkout", marker)
    git("config", "--file", config, "core.hooksPath", str(hooks))
    git("clone", "-q", up.url, str(tmp_path / "control2"))
    assert marker.is_file()
    marker.unlink()
    other = Settings(remote=RemoteSettings(cache_dir=str(tmp_path / "cache2")))
    ensure_clone(up.url, settings=other)
    up.commit("again", {"a.txt": "alpha v10\n"})
    ensure_clone(up.url, settings=other)
    assert not marker.exists()
