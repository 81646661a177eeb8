"""Git origins a server follows: a bare origin and a clone that pushes to it, and polling a
served index until it catches up."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.helpers.files import write_tree

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}


def origin_with(base: Path, files: dict[str, str | bytes]) -> tuple[Path, Path]:
    """(a bare origin, a working clone that pushes to it), holding `files` in one commit."""
    origin = base / "origin.git"
    git("init", "-q", "--bare", "-b", "main", str(origin))
    work = write_tree(base / "work", files)
    git("init", "-q", "-b", "main", str(work))
    git("add", "-A", cwd=work)
    git("commit", "-qm", "first", cwd=work)
    git("remote", "add", "origin", str(origin), cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    return origin, work


def push(work: Path, files: dict[str, str | bytes], message: str) -> str:
    write_tree(work, files)
    git("add", "-A", cwd=work)
    git("commit", "-qm", message, cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


def defined(client: httpx.Client, name: str) -> list[str]:
    """Where `name` is defined, through the server ("repo:path")."""
    found = client.get(f"/symbol/{name}").json()["exact_matches"]
    return [f"{u['repository']}:{u['path']}" for u in found]


def wait_for(check: Callable[[], bool], timeout: float = 90.0) -> float:
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, "timed out"
        time.sleep(0.25)
    return time.monotonic() - started


def status_of(client: httpx.Client, name: str) -> dict[str, Any]:
    repos = client.get("/index/status").json()["repositories"]
    return next(r for r in repos if r["name"] == name)


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True,
                          text=True).stdout.strip()
