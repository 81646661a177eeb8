"""The app through a server (`coderag --server URL`): its tree, viewer and answers come from a
real `coderag serve` process (the one of tests/test_server.py), driven by keys at 80x24."""

from __future__ import annotations

from typing import Any

import pytest

from coderag_tui.client import RemoteCodeRag
from tests.helpers.server import ANSWER, READ

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("tui_quiet")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_app_through_the_server(served: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.widgets import Markdown

    from coderag_tui.tui.app import create_app
    from coderag_tui.tui.widgets.file_tree import FilesPane
    from tests.helpers.app import ask, main, settle, viewer_text
    monkeypatch.setenv("CODERAG_NO_LOCAL_CLIPBOARD", "1")
    client = RemoteCodeRag(served["url"], READ, ["shop"])
    app = create_app(client, auto_index=False, watch=False, embed=False, local_clipboard=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        files = app.screen.query_one(FilesPane)
        assert files.visible_paths == ["shop/cart.py", "shop/tax.py"]
        assert {f.state for f in files.files} == {"indexed"}
        assert "2 files" in str(app.screen.query_one("#index-text").render())

        await ask(pilot, "how is the tax of a cart computed")
        screen = main(app)
        turn = screen.chat.turns[-1]
        assert turn.done and turn.answer.endswith("".join(ANSWER))  # below the index's opening
        # the opening, as Markdown (its names escaped, so `_` is not emphasis)
        assert "- function tax\\_for (shop/tax.py:1-3): The sales tax owed on an amount." in turn.answer
        assert "adds the tax" in screen.chat.query(Markdown).last().source
        sources = str(screen.chat.query(".sources").last().render())
        assert "[1] shop/tax.py:1-3" in sources

        await pilot.press("1")  # the source opens in the viewer, its code read through the server
        await settle(pilot)
        view = screen.code
        assert view.document is not None and view.document.path == "shop/tax.py"
        assert any("return amount * 0.2" in line for line in viewer_text(app))
    client.close()
