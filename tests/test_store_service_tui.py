"""The app through a server on a PostgreSQL store (`coderag serve --store URL`, then
`coderag --server URL`): its tree, answers and viewer come from PostgreSQL through the real
server process of tests/test_store_service.py, driven by keys at 80x24."""

from __future__ import annotations

from typing import Any

import pytest

from coderag_tui.client import RemoteCodeRag
from tests.helpers.server import READ
from tests.helpers.store_service import ANSWER

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("tui_quiet")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_app_through_a_postgres_backed_server(pg_served: dict[str, Any],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from coderag_tui.tui.app import create_app
    from coderag_tui.tui.widgets.file_tree import FilesPane
    from tests.helpers.app import ask, main, settle, viewer_text
    monkeypatch.setenv("CODERAG_NO_LOCAL_CLIPBOARD", "1")
    client = RemoteCodeRag(pg_served["url"], READ, ["shop"])
    app = create_app(client, auto_index=False, watch=False, embed=False, local_clipboard=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        files = app.screen.query_one(FilesPane)
        assert files.visible_paths == ["shop/cart.py", "shop/tax.py", "tests/test_tax.py"]
        assert {f.state for f in files.files} == {"indexed"}

        await ask(pilot, "how is the tax of a cart computed")
        screen = main(app)
        turn = screen.chat.turns[-1]
        assert turn.done and turn.answer.endswith("".join(ANSWER))
        sources = str(screen.chat.query(".sources").last().render())
        assert "shop/tax.py:1-3" in sources

        await pilot.press("1")  # the source opens in the viewer, its code read through the server
        await settle(pilot)
        assert screen.code.document is not None and screen.code.document.path == "shop/tax.py"
        assert any("return amount * 0.2" in line for line in viewer_text(app))
    client.close()
