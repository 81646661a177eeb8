"""`ask` through the service and the CLI: real index, real retrieval, the real bundled GGUF."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from coderag_tui.config import LLMSettings, Settings
from tests.helpers.shop import FILES

pytestmark = pytest.mark.slow


def small_settings() -> Settings:
    s = Settings()
    return replace(s, llm=replace(s.llm, max_tokens=48, n_ctx=2048))


def test_ask_streams_a_grounded_answer(make_repo, open_service):
    service = open_service(make_repo(FILES), small_settings())
    events = list(service.ask("How is the total price of the cart computed?"))
    kinds = [e.kind for e in events]
    assert "error" not in kinds, [e.text for e in events if e.kind == "error"]
    tokens = [e.text for e in events if e.kind == "token"]
    assert tokens and "".join(tokens).strip()
    [sources] = [e for e in events if e.kind == "sources"]
    assert sources.sources, "the sources used are always listed"
    lines = dict(service.db.rows("SELECT path, lines FROM files"))
    for s in sources.sources:
        assert s.path in lines and 1 <= s.start_line <= s.end_line <= lines[s.path]
    assert any(s.path == "shop/cart.py" for s in sources.sources)
    done = events[-1]
    assert done.kind == "done" and done.stats["retrieval_s"] >= 0 and done.stats["tokens"] > 0
    # a follow-up keeps the conversation, stored in SQLite
    conv = done.conversation_id
    follow = list(service.ask("And where is the tax rate defined?", conv))
    assert follow[-1].kind == "done" and follow[-1].conversation_id == conv
    roles = [m.role for m in service.load_conversation(conv)]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert service.conversations()[0][0] == conv


def test_ask_errors_are_one_line_events(make_repo, open_service, tmp_path):
    repo = make_repo(FILES)
    s = small_settings()
    missing = open_service(repo, replace(s, llm=replace(s.llm, model=str(tmp_path / "nope.gguf"))))
    [*_, last] = missing.ask("what does tax_for return?")
    assert last.kind == "error" and "nope.gguf" in last.text and "\n" not in last.text
    remote = LLMSettings(provider="openai", base_url="http://127.0.0.1:9/v1", model="m", retries=0, timeout_s=2)
    unreachable = open_service(repo, replace(s, llm=remote))
    [*_, last] = unreachable.ask("what does tax_for return?")
    assert last.kind == "error" and "127.0.0.1:9" in last.text and "\n" not in last.text


def test_cli_ask_json_and_pipe(make_repo, tmp_path):
    repo = make_repo(FILES)
    (tmp_path / "cfg.toml").write_text("[llm]\nmax_tokens = 32\nn_ctx = 2048\n")
    base = [sys.executable, "-m", "coderag_tui", "ask", "what does tax_for return?", "--repo", str(repo),
            "--db", str(tmp_path / "i.db"), "--config", str(tmp_path / "cfg.toml")]
    index = [sys.executable, "-m", "coderag_tui", "index", str(repo), "--db", str(tmp_path / "i.db"), "--no-embed"]
    assert subprocess.run(index, capture_output=True, text=True, timeout=600).returncode == 0
    # stdin is not a pipe here: piped text would be given to the model with the question
    out = subprocess.run([*base, "--json"], capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["answer"] and data["sources"] and data["conversation_id"] >= 1
    assert any(s["path"] == "shop/tax.py" for s in data["sources"])
    plain = subprocess.run(base, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert plain.returncode == 0, plain.stderr
    assert "Sources" in plain.stdout and "shop/tax.py:" in plain.stdout
    assert "\x1b[" not in plain.stdout  # no terminal codes when piped
