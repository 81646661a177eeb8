"""Shared fixtures: real fixture repositories written into tmp dirs, isolated user dirs."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from coderag_tui.config import Settings
from coderag_tui.service import CodeRag


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read the developer's config nor write into their cache."""
    home = tmp_path_factory.getbasetemp() / "userdirs"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("CODERAG_CONFIG", raising=False)


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Path]:
    """make_repo({"a.py": "..."}, name="repo", git=False) -> the repository folder."""

    def make(files: dict[str, str | bytes], name: str = "repo", git: bool = False) -> Path:
        root = write_tree(tmp_path / name, files)
        if git:
            git_init(root)
        return root

    return make


def git_init(root: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "init"], check=True, env=env)


@pytest.fixture
def open_service(tmp_path: Path) -> Iterator[Callable[..., CodeRag]]:
    """open_service(repo, settings=None) -> an indexed CodeRag with its index in tmp."""
    opened: list[CodeRag] = []

    def make(repo: Path, settings: Settings | None = None, index: bool = True) -> CodeRag:
        db = tmp_path / f"index-{len(opened)}.db"
        service = CodeRag(repo, settings or Settings(), db)
        opened.append(service)
        if index:
            service.index()
        return service

    yield make
    for s in opened:
        s.close()
