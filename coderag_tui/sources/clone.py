"""Clone a remote repository into the cache and keep the clone fresh: `ensure_clone`
clones on first use; afterwards it fetches, moves to the new remote head (or the requested
rev) and reports which files changed, so that the index can be updated incrementally.

Every error is a `RepoError` with one redacted line that says what to do; what runs git and
why nothing from a clone is ever run is in `coderag_tui.sources.gitrun`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from coderag_tui.config import Settings
from coderag_tui.errors import RepoError
from coderag_tui.models import Progress
from coderag_tui.paths import private_folder
from coderag_tui.sources.credentials import credentials_for
from coderag_tui.sources.giterrors import error_detail, git_error, is_remote_failure
from coderag_tui.sources.gitrun import GitResult, GitRunner, ProgressCallback, git_executable
from coderag_tui.sources.urls import RemoteRepo, Spec, parse_spec, remote_repo

_INFO_ATTRIBUTES = (
    "# Written by coderag: no filter driver (git-lfs or any other) runs in this cached clone.\n"
    "* -filter\n"
)

_HEX_SHA_RE = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")


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


def _rev_parse(git: GitRunner, path: Path, ref: str) -> str:
    r = git.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], path)
    return r.out.strip() if r.rc == 0 else ""


def head_commit(path: Path) -> str:
    """The commit checked out in the git repository at `path` ("" when it is none, or git is
    missing), asked through the hardened runner."""
    try:
        git = GitRunner(git_executable(), path, None, None)
    except RepoError:
        return ""
    return _rev_parse(git, path, "HEAD") if (path / ".git").exists() else ""


def _is_clone(git: GitRunner, path: Path) -> bool:
    return (path / ".git").is_dir() and bool(_rev_parse(git, path, "HEAD"))


def _has_commit(git: GitRunner, path: Path, sha: str) -> bool:
    return git.run(["cat-file", "-e", f"{sha}^{{commit}}"], path).rc == 0


def _is_shallow(git: GitRunner, path: Path) -> bool:
    return git.run(["rev-parse", "--is-shallow-repository"], path).out.strip() == "true"


def _fetch(git: GitRunner, path: Path, refs: Sequence[str], depth: Sequence[str],
           progress: ProgressCallback | None, *, tags: bool = False) -> GitResult:
    args = ["fetch", "--no-recurse-submodules", "--tags" if tags else "--no-tags", *depth,
            "origin", *refs]
    return git.stream(args, path, "fetch", progress)




def _resolve_rev(git: GitRunner, path: Path, spec: Spec, rev: str, shallow: bool,
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
    elif is_remote_failure(r.err):
        raise git_error("fetch", spec, git.scrub(r.err), token_env)
    # An abbreviated sha (or a server refusing unadvertised commits): fetch all branches and
    # tags with full history, then look the rev up locally.
    depth = ["--unshallow"] if _is_shallow(git, path) else []
    r = _fetch(git, path, ["+refs/heads/*:refs/remotes/origin/*"], depth, progress, tags=True)
    if r.rc != 0 and is_remote_failure(r.err):
        raise git_error("fetch", spec, git.scrub(r.err), token_env)
    sha = _rev_parse(git, path, rev)
    if not sha:
        raise RepoError(f"revision '{rev}' not found in {spec.display_url}",
                        "give a commit sha, tag or branch that exists on the remote")
    return sha


def _checkout(git: GitRunner, path: Path, spec: Spec, target: str, label: str | None) -> None:
    args = ["checkout", "--force", "--no-recurse-submodules"]
    args += ["-B", label] if label else ["--detach"]
    r = git.run([*args, target, "--"], path)
    if r.rc != 0:
        raise RepoError(f"cannot check out {target[:12]} in {path}: {error_detail(git.scrub(r.err))}",
                        f"delete {path} and try again")


def _diff(git: GitRunner, path: Path, old: str, new: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
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
    spec = parse_spec(url)
    _check_ref_arg("branch", branch)
    _check_ref_arg("rev", rev)
    executable = git_executable()
    want_shallow = settings.remote.shallow if shallow is None else shallow
    repo = remote_repo(spec, settings)
    dest = repo.cache_path
    try:
        private_folder(dest.parent)  # the code of a clone is for this user alone
    except OSError as exc:
        raise RepoError(f"cannot create the clone cache {dest.parent}: {exc.strerror}",
                        "set [remote] cache_dir to a writable folder") from None
    creds, username_hint = credentials_for(spec, token_env, os.environ)
    git = GitRunner(executable, dest.parent, creds, username_hint)
    try:
        with _locked(dest.parent / f".{dest.name}.lock"):
            if _is_clone(git, dest):
                return _update(git, repo, spec, branch, rev, want_shallow, progress, token_env)
            return _clone(git, repo, spec, branch, rev, want_shallow, progress, token_env)
    finally:
        git.close()


def _clone(git: GitRunner, repo: RemoteRepo, spec: Spec, branch: str | None, rev: str | None,
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
            raise git_error("clone", spec, git.scrub(r.err), token_env, branch)
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


def _update(git: GitRunner, repo: RemoteRepo, spec: Spec, branch: str | None, rev: str | None,
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
            raise git_error("fetch", spec, git.scrub(r.err), token_env, branch)
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
