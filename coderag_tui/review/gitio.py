"""The few git commands a review needs, run with settings that make their output predictable.

They go through the clones' hardened runner (`run_local_git`): the repository under review is
untrusted input, so no hook, fsmonitor, filter, textconv or external diff it configures runs.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from coderag_tui.errors import RepoError
from coderag_tui.sources.gitrun import run_local_git

# user configuration must not change what we parse: no colour, no external diff, a/ b/ prefixes
_GIT = ["-c", "core.quotepath=off", "-c", "color.ui=never", "-c", "diff.noprefix=false",
        "-c", "diff.mnemonicPrefix=false"]


def _run(root: Path, args: list[str], *, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    try:
        proc = run_local_git([*_GIT, *args], root, timeout=120)
    except RepoError as exc:
        if "not installed" in exc.message:
            raise RepoError("git is not installed", "install git, or pass the diff with --diff FILE") from exc
        raise
    except subprocess.TimeoutExpired as exc:
        raise RepoError(f"git {args[0]} took too long") from exc
    if check and proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RepoError(f"git {args[0]} failed: {msg[-1] if msg else proc.returncode}")
    return proc


def is_git_repo(root: Path) -> bool:
    try:
        proc = _run(root, ["rev-parse", "--is-inside-work-tree"], check=False)
    except RepoError:
        return False
    return proc.returncode == 0 and proc.stdout.strip() == b"true"


EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree: the base of a first commit


def verify_rev(root: Path, rev: str) -> str:
    """The commit a revision names (a RepoError that says so when it names none). HEAD of a
    repository without commits is the empty tree (everything is new)."""
    proc = _run(root, ["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], check=False)
    if proc.returncode != 0:
        if rev == "HEAD" and _run(root, ["rev-list", "-n1", "--all"], check=False).stdout.strip() == b"":
            return EMPTY_TREE
        raise RepoError(f"unknown revision {rev!r}", "give a branch, tag or commit with --base")
    return proc.stdout.decode().strip()


def diff_text(root: Path, base: str) -> str:
    """`git diff BASE`: the working tree (staged or not) against BASE, renames detected, paths
    relative to `root` (which may be a folder inside the repository) and limited to it."""
    proc = _run(root, ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", "--relative", "--src-prefix=a/",
                       "--dst-prefix=b/", "--unified=3", base, "--"])
    return proc.stdout.decode("utf-8", "replace")


def untracked(root: Path) -> list[str]:
    """Files git does not track and does not ignore (new files not yet added)."""
    proc = _run(root, ["ls-files", "--others", "--exclude-standard", "-z"], check=False)
    if proc.returncode != 0:
        return []
    return [p for p in proc.stdout.decode("utf-8", "replace").split("\0") if p]


def show(root: Path, rev: str, path: str) -> bytes | None:
    """A file's bytes at a revision (None when it does not exist there)."""
    if rev == EMPTY_TREE:
        return None
    # cat-file gives the stored bytes (`git show` would run a textconv driver)
    proc = _run(root, ["cat-file", "blob", f"{rev}:./{path}"], check=False)
    return proc.stdout if proc.returncode == 0 else None
