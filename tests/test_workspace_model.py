"""An answer of the real bundled GGUF across two repositories of a workspace, served by a real
`coderag serve` process and asked through the `--server` client with `repos`: its context and
sources come from both repositories, each naming its repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coderag_tui.client import RemoteCodeRag
from tests.helpers.files import git_init, write_tree
from tests.helpers.server import ROOT, Server
from tests.helpers.workspace import BACKEND, FRONTEND, QUESTION, SHARED

pytestmark = pytest.mark.slow


def test_the_bundled_model_answers_from_two_repositories(tmp_path: Path) -> None:
    roots = [write_tree(tmp_path / name, files)
             for name, files in (("shared-lib", SHARED), ("backend", BACKEND), ("frontend", FRONTEND))]
    for root in roots:
        git_init(root)
    config = tmp_path / "config.toml"
    config.write_text("[embed]\nenabled = false\n[llm]\ndiscover = false\nmax_tokens = 48\nn_ctx = 2048\n"
                      "cache_similarity = 0\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "userconfig"), "HF_HUB_OFFLINE": "1"}
    for key in ("CODERAG_CONFIG", "CODERAG_ADMIN_TOKENS", "CODERAG_READ_TOKENS"):
        env.pop(key, None)
    server = Server(["--config", str(config), *map(str, roots)], env, tmp_path / "server.log")
    try:
        client = RemoteCodeRag(server.url, server.info["token"], repos=["shared-lib", "backend"])
        events = list(client.ask(QUESTION))
        kinds = [e.kind for e in events]
        assert "error" not in kinds, [e.text for e in events if e.kind == "error"]
        assert "".join(e.text for e in events if e.kind == "token").strip()
        [sources] = [e for e in events if e.kind == "sources"]
        given = {s.path for s in sources.sources}
        assert {"shared-lib:shared_lib/pricing.py", "backend:app/checkout.py"} <= given
        assert all(p.startswith(("shared-lib:", "backend:")) for p in given)
        assert events[-1].kind == "done" and events[-1].stats["tokens"] > 0
        ctx = client.context(QUESTION)
        assert {p.path.split(":")[0] for p in ctx.pieces} == {"shared-lib", "backend"}
        client.close()
    finally:
        log = server.close()
    assert "Traceback" not in log
