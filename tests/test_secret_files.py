"""Files that usually hold credentials are never read: not by an ignore file's `!` rule, not by
the watcher; only the user's config (or a trusted repository config) changes the list."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coderag_tui import trust
from coderag_tui.config import EmbedSettings, IndexSettings, Settings, load_settings
from coderag_tui.service import CodeRag
from coderag_tui.sources.discovery import secret_matcher, stat_paths, walk

TOKEN = "sk-live-0123456789abcdef"


def _repo(root: Path) -> Path:
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return 1\n")
    (root / ".env").write_text(f"API_KEY={TOKEN}\n")
    (root / ".env.production").write_text(f"API_KEY={TOKEN}\n")
    (root / ".env.example").write_text("API_KEY=put-yours-here\n")
    (root / "deploy").mkdir()
    (root / "deploy" / "server.pem").write_text(f"-----BEGIN PRIVATE KEY-----\n{TOKEN}\n")
    (root / "deploy" / "id_ed25519").write_text(f"{TOKEN}\n")
    # a repository trying to bring its secrets back in
    (root / ".gitignore").write_text(".env\n")
    (root / ".coderagignore").write_text("!.env\n!.env.production\n!deploy/server.pem\n")
    return root


def test_names_that_hold_secrets_and_templates_that_do_not() -> None:
    is_secret = secret_matcher(IndexSettings().secret_files)
    for name in (".env", ".env.local", "server.pem", "tls.key", "id_rsa", "id_rsa.pub", ".netrc",
                 ".pypirc", ".npmrc", "prod.tfvars", "credentials.json"):
        assert is_secret(name), name
    for name in (".env.example", ".env.sample", "settings.py", "env.py", "keys.py", "README.md",
                 "pemfile.py", "credentials.py"):
        assert not is_secret(name), name


def test_an_ignore_file_cannot_reinclude_a_secret(tmp_path: Path) -> None:
    root = _repo(tmp_path / "r")
    result = walk(root, IndexSettings())
    found = {c.path for c in result.files}
    assert "app.py" in found and ".env.example" in found
    for path in (".env", ".env.production", "deploy/server.pem", "deploy/id_ed25519"):
        assert path not in found
        assert result.skips[path] == "secret"
    # the watcher's path (one file at a time) says the same
    single = stat_paths(root, [".env", "deploy/server.pem", "app.py"], IndexSettings())
    assert [c.path for c in single.files] == ["app.py"]
    assert single.skips == {".env": "secret", "deploy/server.pem": "secret"}


def test_no_secret_reaches_the_index(tmp_path: Path) -> None:
    root = _repo(tmp_path / "r")
    db = tmp_path / "index.db"
    settings = Settings(embed=EmbedSettings(enabled=False))
    rag = CodeRag(root, settings, db)
    try:
        rag.index()
        assert any(h.unit.path == "app.py" for h in rag.search("main", k=5))
        assert all(not h.unit.path.startswith((".env", "deploy/")) or h.unit.path == ".env.example"
                   for h in rag.search("API_KEY PRIVATE KEY", k=10))
    finally:
        rag.close()
    assert TOKEN.encode() not in db.read_bytes()
    for extra in ("-wal", "-shm"):
        side = Path(str(db) + extra)
        if side.exists():
            assert TOKEN.encode() not in side.read_bytes()


def test_only_the_users_config_changes_the_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODERAG_CONFIG", raising=False)
    root = _repo(tmp_path / "r")
    (root / ".coderag.toml").write_text('[index]\nsecret_files = []\n')
    notices: list[str] = []
    settings = load_settings(root, notify=notices.append)
    assert settings.index.secret_files == IndexSettings().secret_files
    assert any("index.secret_files" in n for n in notices)
    assert trust.RESTRICTED["index.secret_files"]
    # the user's own config may
    user = tmp_path / "user.toml"
    user.write_text('[index]\nsecret_files = ["*.pem"]\n')
    settings = load_settings(root, user, notify=notices.append)
    assert settings.index.secret_files == ("*.pem",)
    found = {c.path for c in walk(root, settings.index).files}
    assert ".env" in found and "deploy/server.pem" not in found
    assert os.environ["HOME"] == str(home)
