"""`coderag models pull`: the curated list, and downloads through the hub client from a REAL
HTTP server on loopback that serves files at the hub's URL layout (HF_ENDPOINT points at it)."""

from __future__ import annotations

import contextlib
import hashlib
import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.answering import gguf
from coderag_tui.answering.catalog import CATALOG, find, hub_pull
from coderag_tui.answering.providers.local import models_in
from coderag_tui.errors import ModelError
from tests.helpers.loopback import http_server


class Hub:
    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files  # "/{repo}/resolve/main/{file}" -> bytes
        self.requests: list[tuple[str, str]] = []


@contextlib.contextmanager
def loopback_hub(files: dict[str, bytes]) -> Iterator[tuple[str, Hub]]:
    hub = Hub(files)

    class Handler(BaseHTTPRequestHandler):
        def _send(self, body: bool) -> None:
            hub.requests.append((self.command, self.path))
            data = hub.files.get(self.path.split("?")[0])
            if data is None:
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("content-length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("X-Repo-Commit", "0" * 40)
            self.send_header("ETag", '"' + hashlib.sha256(data).hexdigest() + '"')
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            if body:
                self.wfile.write(data)

        def do_HEAD(self) -> None:
            self._send(False)

        def do_GET(self) -> None:
            self._send(True)

        def log_message(self, *args: Any) -> None:
            pass

    with http_server(Handler) as (_server, url):
        yield url, hub


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests run with HF_HUB_OFFLINE=1 (nothing may reach the real hub): allow the loopback one."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


def tiny_gguf(tmp_path: Path) -> bytes:
    path = tmp_path / "tiny.gguf"
    gguf.write_minimal_gguf(path, {"general.architecture": "llama", "llama.context_length": 4096,
                                   "tokenizer.chat_template": "{{ messages }}"})
    return path.read_bytes()


def test_pull_a_listed_model_from_a_loopback_hub(
    tmp_path: Path, online: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from coderag_tui.cli.main import main

    entry = CATALOG[0]
    data = tiny_gguf(tmp_path)
    models = tmp_path / "models"
    with loopback_hub({f"/{entry.repo}/resolve/main/{entry.file}": data}) as (url, hub):
        monkeypatch.setenv("HF_ENDPOINT", url)
        monkeypatch.setenv("CODERAG_MODELS_DIR", str(models))
        assert main(["models", "pull", entry.name]) == 0
    assert (models / entry.file).read_bytes() == data
    assert models_in(models) == [models / entry.file]
    assert ("GET", f"/{entry.repo}/resolve/main/{entry.file}") in hub.requests
    assert f"--model {entry.file}" in capsys.readouterr().out


def test_pull_repo_and_file_refuses_what_is_not_a_gguf_or_not_there(tmp_path: Path, online: None) -> None:
    models = tmp_path / "models"
    with loopback_hub({"/org/m/resolve/main/m.gguf": b"<html>login</html>"}) as (url, _hub):
        with pytest.raises(ModelError, match="not a GGUF model file"):
            hub_pull("org/m", "m.gguf", models, url)
        with pytest.raises(ModelError, match="no such file"):
            hub_pull("org/m", "other.gguf", models, url)
    assert models_in(models) == []
    with pytest.raises(ModelError, match="not a file name"):
        hub_pull("org/m", "../escape.gguf", models, "http://127.0.0.1:9")


def test_pull_offline_is_one_clear_line(tmp_path: Path, online: None, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from coderag_tui.cli.main import main

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("CODERAG_MODELS_DIR", str(tmp_path / "models"))
    assert main(["models", "pull", "qwen2.5-coder-1.5b"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no network? put a GGUF in models/ instead" in err[0]


def test_the_list_says_name_size_licence_and_ram(capsys: pytest.CaptureFixture[str]) -> None:
    from coderag_tui.cli.main import main

    assert main(["models", "pull"]) == 0
    out = capsys.readouterr().out
    for entry in CATALOG:
        assert entry.name in out and entry.repo in out and entry.licence in out
        assert entry.file.endswith(".gguf") and entry.size_gb > 0 and entry.ram_gb > entry.size_gb
    assert "approximate" in out
    assert find("QWEN2.5-CODER-1.5B") is not None and find("nothing") is None
