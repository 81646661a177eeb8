"""The app on a workspace (`coderag A B C`): the tree has the repositories at its top, a file
opens from its repository, and an answer (a scripted model on loopback) cites the code of two
of them, each source opening in the viewer from its own repository."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coderag_tui.service import CodeRag
from coderag_tui.workspace import Workspace
from coderag_tui.workspace.local import WorkspaceService
from tests.helpers.workspace import QUESTION

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("tui_quiet")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def workspace_app(repos: dict[str, Any], steady: bool = False, watch: bool = False) -> Any:
    from coderag_tui.models import ModelInfo
    from coderag_tui.tui.app import create_app

    services = [CodeRag.open(repos[n], config=repos["config"]) for n in ("shared-lib", "backend", "frontend")]
    for s in services:
        s.index()
    service = WorkspaceService(Workspace(services), tree_paths=True)
    if steady:  # the scripted model's port changes from run to run
        service.model_info = lambda model=None: ModelInfo("scripted", "openai", "http://127.0.0.1", 4096)  # type: ignore[method-assign]
    return create_app(service, auto_index=watch, watch=watch, embed=False, local_clipboard=False)


async def test_the_tree_holds_the_repositories_and_an_answer_cites_two(
        repos: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from coderag_tui.tui.widgets.file_tree import FilesPane, FileTree
    from tests.helpers.app import ask, main, settle, viewer_text
    monkeypatch.setenv("CODERAG_NO_LOCAL_CLIPBOARD", "1")
    app = workspace_app(repos)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        files = app.screen.query_one(FilesPane)
        assert files.visible_paths == ["backend/app/checkout.py", "frontend/package.json", "frontend/src/banner.js",
                                       "shared-lib/pyproject.toml", "shared-lib/shared_lib/__init__.py",
                                       "shared-lib/shared_lib/pricing.py"]
        tree = app.screen.query_one(FileTree)
        assert [str(n.label) for n in tree.root.children] == ["backend/", "frontend/", "shared-lib/"]

        await ask(pilot, QUESTION)
        screen = main(app)
        turn = screen.chat.turns[-1]
        assert turn.done
        sources = str(screen.chat.query(".sources").last().render())
        assert "backend:app/checkout.py:6-9" in sources and "shared-lib:shared_lib/pricing.py:4-7" in sources
        numbers = {line.split("]")[0].strip(" [") : line for line in sources.splitlines() if line.strip().startswith("[")}
        shared = next(n for n, line in numbers.items() if "shared-lib:shared_lib/pricing.py:4-7" in line)
        await pilot.press(shared)  # the source opens from its own repository
        await settle(pilot)
        view = screen.code
        assert view.document is not None and view.document.path == "shared-lib:shared_lib/pricing.py"
        assert any("loyalty_years * 2" in line for line in viewer_text(app))


async def test_the_app_watches_every_repository(repos: dict[str, Any],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """As for one repository, the app catches up and then watches: a file saved in one of the
    repositories appears in the tree under it and is searchable."""
    from coderag_tui.tui.widgets.file_tree import FilesPane
    from tests.helpers.app import settle
    monkeypatch.setenv("CODERAG_NO_LOCAL_CLIPBOARD", "1")
    app = workspace_app(repos, watch=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        files = app.screen.query_one(FilesPane)
        for _ in range(300):  # the first catch-up run, then the watcher
            if app.screen.watch_handle is not None:
                break
            await pilot.pause(0.1)
        assert app.screen.watch_handle is not None
        (repos["frontend"] / "src" / "footer.js").write_text("function renderFooter(year) { return year; }\n")
        for _ in range(300):
            if "frontend/src/footer.js" in files.visible_paths:
                break
            await pilot.pause(0.1)
        assert "frontend/src/footer.js" in files.visible_paths
        assert [u.repo for u in app.screen.service.symbols("renderFooter")] == ["frontend"]


def test_the_tree_snapshot(repos: dict[str, Any], snap_compare: Any, monkeypatch: pytest.MonkeyPatch,
                           tmp_path: Path) -> None:
    from textual.widgets import Input

    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)  # no blink
    monkeypatch.setenv("CODERAG_NO_LOCAL_CLIPBOARD", "1")
    monkeypatch.chdir(tmp_path)

    async def settled(pilot: Any) -> None:
        from tests.helpers.app import settle
        await settle(pilot)

    assert snap_compare(workspace_app(repos, steady=True), terminal_size=(80, 24), run_before=settled)
