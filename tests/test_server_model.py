"""An answer from the real bundled GGUF, streamed by a real `coderag serve` process and read
by the `--server` client: the same events a local answer has."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coderag_tui.client import RemoteCodeRag
from tests.helpers.files import git_init, write_tree
from tests.helpers.server import ROOT, Server
from tests.helpers.shop import FILES

pytestmark = pytest.mark.slow


def test_the_bundled_model_answers_through_the_server(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "shop", FILES)
    git_init(repo)
    config = tmp_path / "config.toml"
    config.write_text("[embed]\nenabled = false\n[llm]\ndiscover = false\nmax_tokens = 48\nn_ctx = 2048\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "userconfig"), "HF_HUB_OFFLINE": "1"}
    for key in ("CODERAG_CONFIG", "CODERAG_ADMIN_TOKENS", "CODERAG_READ_TOKENS"):
        env.pop(key, None)
    server = Server(["--config", str(config), str(repo)], env, tmp_path / "server.log")
    try:
        client = RemoteCodeRag(server.url, server.info["token"])  # the token it made
        events = list(client.ask("How is the total price of the cart computed?"))
        kinds = [e.kind for e in events]
        assert "error" not in kinds, [e.text for e in events if e.kind == "error"]
        assert "".join(e.text for e in events if e.kind == "token").strip()
        [sources] = [e for e in events if e.kind == "sources"]
        assert any(s.path == "shop/cart.py" for s in sources.sources)
        done = events[-1]
        assert done.kind == "done" and done.stats["tokens"] > 0 and done.conversation_id > 0
        follow = list(client.ask("And where is the tax rate defined?", done.conversation_id))
        assert follow[-1].kind == "done" and follow[-1].conversation_id == done.conversation_id
        client.close()
    finally:
        log = server.close()
    assert "Traceback" not in log
