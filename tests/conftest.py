"""Shared fixtures: real fixture repositories written into tmp dirs, isolated user dirs."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.config import Settings
from coderag_tui.service import CodeRag
from tests.helpers.loopback import HAVE_LLAMA_SERVER, LlamaServer, start_llama_server


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


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The real llama_cpp.server with the bundled GGUF, one for the whole run."""
    from coderag_tui.answering.providers.local import bundled_model_path

    model = bundled_model_path()
    if not HAVE_LLAMA_SERVER or model is None:
        pytest.skip("needs llama-cpp-python[server] and the bundled GGUF")
    with start_llama_server(model, tmp_path_factory.mktemp("llama-server")) as served:
        yield served


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tui_quiet(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """For the app's tests: no local clipboard, and the current folder a fresh tmp one."""
    monkeypatch.setenv("CODERAG_NO_LOCAL_CLIPBOARD", "1")
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def smollm() -> Any:
    """The bundled SmolLM2 GGUF loaded by llama.cpp (skips where either is missing)."""
    import importlib.util

    from coderag_tui.answering import ProviderOptions
    from coderag_tui.answering.providers.local import LlamaProvider, bundled_model_path
    from coderag_tui.config import ProviderSettings

    if importlib.util.find_spec("llama_cpp") is None or bundled_model_path() is None:
        pytest.skip("needs llama-cpp-python and the bundled GGUF")
    provider = LlamaProvider(ProviderSettings(n_ctx=2048), ProviderOptions(models_dir=None))
    provider.load()
    return provider


@pytest.fixture
def servers() -> Iterator[Callable[[Callable[[Any, int], None]], Any]]:
    """Start scripted loopback model servers (`servers(respond)`); all are closed afterwards."""
    from tests.test_providers_remote import Loopback

    started: list[Loopback] = []

    def start(respond: Callable[[Any, int], None]) -> Loopback:
        started.append(Loopback(respond))
        return started[-1]

    yield start
    for s in started:
        s.close()
