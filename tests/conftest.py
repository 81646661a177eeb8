"""Shared fixtures: real fixture repositories written into tmp dirs, isolated user dirs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.config import Settings
from coderag_tui.service import CodeRag
from tests.helpers.files import git_init, write_tree
from tests.helpers.loopback import (
    HAVE_LLAMA_SERVER,
    LlamaServer,
    Loopback,
    Responder,
    start_llama_server,
)
from tests.helpers.marks import MARKS, needs, needs_of

# Fixtures shared by several modules; a module-scoped one is still started once per module that uses it.
from tests.helpers.pg import pg_server, pg_url  # noqa: F401 (one PostgreSQL for the session)
from tests.helpers.server import served  # noqa: F401
from tests.helpers.store_service import pg_indexed, pg_module, pg_served  # noqa: F401
from tests.helpers.workspace import repos  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    for name, meaning in MARKS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with what its fixtures need (tests/helpers/marks.py), so that
    `make test-fast` can select the unit and in-process tests by marker."""
    for item in items:
        for mark in sorted(needs_of(item) - {m.name for m in item.iter_markers()}):
            item.add_marker(mark)


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read the developer's config nor write into their cache."""
    home = tmp_path_factory.getbasetemp() / "userdirs"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("CODERAG_CONFIG", raising=False)


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Path]:
    """make_repo({"a.py": "..."}, name="repo", git=False) -> the repository folder."""

    def make(files: dict[str, str | bytes], name: str = "repo", git: bool = False) -> Path:
        root = write_tree(tmp_path / name, files)
        if git:
            git_init(root)
        return root

    return make


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
@needs("model")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The real llama_cpp.server with the bundled GGUF, one for the whole run."""
    from coderag_tui.answering.providers.local import bundled_model_path

    model = bundled_model_path()
    if not HAVE_LLAMA_SERVER or model is None:
        pytest.skip("needs llama-cpp-python[server] and the bundled GGUF")
    with start_llama_server(model, tmp_path_factory.mktemp("llama-server")) as running:
        yield running


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
@needs("app")
def tui_quiet(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """For the app's tests: no local clipboard, and the current folder a fresh tmp one."""
    monkeypatch.setenv("CODERAG_NO_LOCAL_CLIPBOARD", "1")
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="session")
@needs("model")
def bundled_gguf() -> Path:
    """The bundled GGUF, for a test that has llama.cpp load it (directly, through the service or
    a `coderag` process); skips where llama-cpp-python or the GGUF is missing."""
    import importlib.util

    from coderag_tui.answering.providers.local import bundled_model_path

    model = bundled_model_path()
    if importlib.util.find_spec("llama_cpp") is None or model is None:
        pytest.skip("needs llama-cpp-python and the bundled GGUF")
    return model


@pytest.fixture(scope="module")
@needs("model")
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
def loopback() -> Iterator[Callable[[Responder], Loopback]]:
    """Start scripted loopback model servers (`loopback(respond)`); all are closed afterwards."""
    started: list[Loopback] = []

    def start(respond: Responder) -> Loopback:
        started.append(Loopback(respond))
        return started[-1]

    yield start
    for s in started:
        s.close()
