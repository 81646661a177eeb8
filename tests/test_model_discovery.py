"""Models found on this machine: a REAL `llama_cpp.server` on loopback is discovered, listed with
its context window, chosen in the TUI's picker and by `--model`, and answers; scripted loopback
servers speak like llama.cpp's server, vLLM, Ollama and LM Studio; discovery that is off, or a
repository's config, never opens a connection; names resolve to the right model.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.answering import gguf
from coderag_tui.answering.choices import UNKNOWN_SERVED_WINDOW, resolve
from coderag_tui.answering.discovery import ServedModel, discover, probe
from coderag_tui.answering.providers.local import bundled_model_path
from coderag_tui.config import LLMSettings, ProviderSettings, load_settings
from coderag_tui.errors import ModelError
from coderag_tui.service import CodeRag
from tests.helpers.app import make_service
from tests.helpers.loopback import LlamaServer, free_port, http_server


def test_discovery_finds_a_real_llama_cpp_server_with_its_window(llama_server: LlamaServer) -> None:
    found = discover([llama_server.port])
    assert len(found) == 1, "one server, listed once (127.0.0.1 and ::1 are the same server)"
    model = found[0]
    bundled = bundled_model_path()
    assert bundled is not None
    assert model.id == str(bundled)  # llama-cpp-python names the model by its file
    assert model.base_url == f"http://127.0.0.1:{llama_server.port}/v1"
    assert model.server == "llama-cpp-python"
    trained = gguf.context_length(gguf.read_metadata(bundled))
    assert trained > 0 and model.context_window == trained and not model.served


def test_models_list_shows_the_served_model_beside_the_ggufs(llama_server: LlamaServer, tmp_path: Path) -> None:
    service = make_service(tmp_path)
    service.discover_ports = [llama_server.port]
    infos = service.list_models()
    assert infos[0].provider == "llama" and "configured" in infos[0].note
    served = [m for m in infos if m.provider == "openai"]
    assert len(served) == 1
    name = f"{Path(served[0].name).name}@{llama_server.port}"
    assert served[0].choice == name
    assert served[0].context_window > 0 and "on loopback" in served[0].note
    # the name resolves to that server, with a window that never overflows its default n_ctx
    how = resolve(name, service.settings.llm, None, service.served_models)
    assert isinstance(how.settings, ProviderSettings) and how.settings.provider == "openai"
    assert how.settings.base_url.startswith(f"http://127.0.0.1:{llama_server.port}")
    assert how.context_window == UNKNOWN_SERVED_WINDOW


@pytest.mark.slow
def test_cli_model_flag_answers_with_the_served_model(
    llama_server: LlamaServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from coderag_tui.cli.main import main

    repo = make_service(tmp_path).root
    config = tmp_path / "config.toml"
    config.write_text(f"[embed]\nenabled = false\n[llm]\nmax_tokens = 40\ndiscover_ports = [{llama_server.port}]\n")
    assert main(["models", "list", "--config", str(config)]) == 0
    listed = capsys.readouterr().out
    name = f"SmolLM2-135M-Instruct.Q4_1.gguf@{llama_server.port}"
    assert f"--model {name}" in listed and f"http://127.0.0.1:{llama_server.port}/v1" in listed

    assert main(["index", str(repo), "--config", str(config), "--db", str(tmp_path / "cli.db")]) == 0
    capsys.readouterr()  # (what index printed)
    before = llama_server.completions()
    code = main(["ask", "--repo", str(repo), "--config", str(config), "--db", str(tmp_path / "cli.db"),
                 "--json", "--model", name, "What does Cart.total return?"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["answer"].strip()
    assert llama_server.completions() == before + 1, "the answer came from the served model"


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.usefixtures("tui_quiet")
async def test_picker_switches_to_the_served_model_and_it_answers(
    llama_server: LlamaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from textual.widgets import OptionList

    from coderag_tui.tui.app import create_app
    from coderag_tui.tui.screens.picker import PickerScreen
    from tests.helpers.app import main as main_screen
    from tests.helpers.app import settle, type_text, until
    monkeypatch.setenv("CODERAG_NO_LOCAL_CLIPBOARD", "1")
    monkeypatch.chdir(tmp_path)
    service = make_service(tmp_path)
    service.settings = replace(service.settings, llm=replace(service.settings.llm, max_tokens=40))
    service.discover_ports = [llama_server.port]
    app = create_app(service, watch=False, local_clipboard=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert "SmolLM2-135M (tiny default model)" in str(app.screen.query_one("#model").render())
        await pilot.press("f8")
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)
        options = app.screen.query_one(OptionList)
        labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        served = next(i for i, text in enumerate(labels) if "on loopback" in text)
        assert "ctx 8,192" in labels[served] and labels[0].startswith("●")
        for _ in range(served):
            await pilot.press("down")
        await pilot.press("enter")
        await settle(pilot)
        status = str(app.screen.query_one("#model").render())
        assert f"@ :{llama_server.port}" in status and "SmolLM2-135M" in status

        before = llama_server.completions()
        await pilot.press("f3")
        await type_text(pilot, "What does Cart.total return?")
        await pilot.press("enter")
        screen = main_screen(app)
        await until(pilot, lambda: not screen.answering and bool(screen.chat.turns[-1].done), 600)
        turn = screen.chat.turns[-1]
        assert turn.answer.strip() and not turn.error
        assert llama_server.completions() == before + 1, "the answer came from the served model"

        # back to the configured model from the picker
        await pilot.press("f8")
        await settle(pilot)
        await pilot.press("home", "enter")
        await settle(pilot)
        assert "@ :" not in str(app.screen.query_one("#model").render())
        assert service.selected_model is None


# --------------------------------------------------------------------------- scripted servers


class _Scripted(BaseHTTPRequestHandler):
    routes: dict[tuple[str, str], Any] = {}

    def _reply(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"null") if length else None
        route = self.routes.get((self.command, self.path))
        doc = route(body) if callable(route) else route
        data = json.dumps(doc).encode()
        self.send_response(200 if doc is not None else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = _reply
    do_POST = _reply

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def scripted(routes: dict[tuple[str, str], Any]) -> Iterator[int]:
    with http_server(type("Handler", (_Scripted,), {"routes": routes})) as (server, _url):
        yield int(server.server_address[1])


def _ollama_show(body: Any) -> dict[str, Any]:
    assert body == {"model": "qwen2.5-coder:7b"}
    return {"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}}


SERVERS: dict[str, tuple[dict[tuple[str, str], Any], str, str, int, bool]] = {
    "llama.cpp": ({("GET", "/v1/models"): {"data": [{"id": "coder.gguf", "owned_by": "llamacpp",
                                                      "meta": {"n_ctx_train": 32768}}]},
                   ("GET", "/props"): {"default_generation_settings": {"n_ctx": 8192}}},
                  "coder.gguf", "llama.cpp server", 8192, True),
    "vllm": ({("GET", "/v1/models"): {"data": [{"id": "Qwen/Qwen2.5-Coder-7B-Instruct", "owned_by": "vllm",
                                                 "max_model_len": 16384}]}},
             "Qwen/Qwen2.5-Coder-7B-Instruct", "vLLM", 16384, True),
    "ollama": ({("GET", "/v1/models"): {"data": [{"id": "qwen2.5-coder:7b", "owned_by": "library"}]},
                ("POST", "/api/show"): _ollama_show},
               "qwen2.5-coder:7b", "Ollama", 32768, False),
    "lmstudio": ({("GET", "/v1/models"): {"data": [{"id": "qwen2.5-coder-7b-instruct", "owned_by": "organization_owner"}]},
                  ("GET", "/api/v0/models"): {"data": [{"id": "qwen2.5-coder-7b-instruct",
                                                         "max_context_length": 32768,
                                                         "loaded_context_length": 4096}]}},
                 "qwen2.5-coder-7b-instruct", "LM Studio", 4096, True),
}


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_each_kind_of_server_says_its_context_window(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import coderag_tui.answering.discovery as discovery

    routes, model_id, server, window, is_served = SERVERS[kind]
    with scripted(routes) as port:
        if kind == "lmstudio":  # told apart by its usual port; the test's port stands in for it
            monkeypatch.setitem(discovery.DEFAULT_PORTS, port, "LM Studio")
        found = probe("127.0.0.1", port)
    assert found == [ServedModel(model_id, f"http://127.0.0.1:{port}/v1", server, window, is_served)]


def test_a_port_with_nothing_or_something_else_lists_nothing() -> None:
    with scripted({("GET", "/v1/models"): {"unexpected": True}}) as port:
        assert probe("127.0.0.1", port) == []
    assert discover([free_port()]) == []
    assert discover([0, 70000, -1]) == []


def test_only_loopback_is_ever_contacted(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="not a loopback address"):
        probe("192.168.1.10", 8000)
    # a proxy from the environment is not used: it would carry the request off the machine
    proxied: list[str] = []
    with scripted({("GET", "/v1/models"): {"data": [{"id": "m"}]}}) as port, \
            scripted({("GET", f"http://127.0.0.1:{port}/v1/models"): lambda _: proxied.append("x")}) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy}")
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        assert [m.id for m in discover([port])] == ["m"]
    assert proxied == []


class _Listener:
    """A bare TCP listener that counts connections (nothing may connect to it)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])

    def accepted(self) -> int:
        n = 0
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.sock.accept()
                conn.close()
                n += 1
        return n


def test_discovery_off_means_no_connection_attempt(tmp_path: Path) -> None:
    listener = _Listener()
    try:
        on = make_service(tmp_path / "on")
        on.settings = replace(on.settings, llm=LLMSettings(discover=True, discover_ports=(listener.port,)))
        on.served_models()
        assert listener.accepted() >= 1, "the listener is reachable: the check below means something"

        off = make_service(tmp_path / "off")
        off.settings = replace(off.settings, llm=LLMSettings(discover=False, discover_ports=(listener.port,)))
        assert off.served_models() == []
        assert all(m.provider != "openai" for m in off.list_models())
        with pytest.raises(ModelError, match="no model named"):
            off.llm("some-served-model")
        assert listener.accepted() == 0
    finally:
        listener.sock.close()


def test_a_repository_config_cannot_add_ports(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".coderag.toml").write_text("[llm]\ndiscover_ports = [6379]\ndiscover = true\n")
    notices: list[str] = []
    settings = load_settings(repo, notify=notices.append)
    assert settings.llm.discover_ports == ()
    assert notices and "llm.discover_ports" in notices[0]


# --------------------------------------------------------------------------- names


def test_names_resolve_to_files_configured_and_served_models(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    gguf.write_minimal_gguf(models / "coder.Q4_K_M.gguf", {"general.architecture": "llama",
                                                            "llama.context_length": 16384})
    served = [ServedModel("qwen2.5-coder:7b", "http://127.0.0.1:11434/v1", "Ollama", 32768, False),
              ServedModel("m", "http://127.0.0.1:8000/v1", "vLLM", 8192, True),
              ServedModel("m", "http://127.0.0.1:8080/v1", "llama.cpp server", 4096, True)]
    asked: list[int] = []

    def servers() -> list[ServedModel]:
        asked.append(1)
        return served

    settings = LLMSettings(fallback=(ProviderSettings(provider="openai", model="gpt-4o",
                                                      base_url="https://api.example.com/v1"),))
    # local files never look for servers
    for name in ("coder.Q4_K_M.gguf", "coder.Q4_K_M", str(models / "coder.Q4_K_M.gguf")):
        how = resolve(name, settings, models, servers)
        assert how.settings.provider == "llama" and how.settings.model == str(models / "coder.Q4_K_M.gguf")
    assert asked == []
    assert resolve(None, settings, models, servers).settings is settings
    assert resolve("gpt-4o", settings, models, servers).settings is settings.fallback[0]
    ollama = resolve("qwen2.5-coder:7b", settings, models, servers)
    assert ollama.settings.base_url == "http://127.0.0.1:11434/v1" and ollama.settings.api_key_env == ""
    assert ollama.context_window == UNKNOWN_SERVED_WINDOW  # trained 32k: the served window is unknown
    assert resolve("m@8080", settings, models, servers).context_window == 4096
    with pytest.raises(ModelError, match="no model named 'm'"):
        resolve("m", settings, models, servers)  # two servers offer "m": say which with @PORT
    with pytest.raises(ModelError, match="model file not found"):
        resolve(str(tmp_path / "missing.gguf"), settings, models, servers)
    remote = LLMSettings(provider="openai", model="gpt-4o", base_url="https://api.example.com/v1")
    how = resolve("gpt-4.1", remote, models, servers)
    assert how.settings is remote and how.override == "gpt-4.1"


def test_select_model_keeps_the_model_in_use_when_the_name_is_unknown(tmp_path: Path) -> None:
    service: CodeRag = make_service(tmp_path)
    service.discover_ports = []
    with pytest.raises(ModelError):
        service.select_model("nothing-by-this-name")
    assert service.selected_model is None
    bundled = bundled_model_path()
    if bundled is None:
        pytest.skip("needs the bundled GGUF")
    info = service.select_model(bundled.name)
    assert service.selected_model == bundled.name and info.provider == "llama"
    assert service.model_info().path_or_url == str(bundled)



@pytest.mark.anyio
@pytest.mark.usefixtures("tui_quiet")
async def test_picker_shows_a_served_name_as_text_not_markup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.widgets import OptionList

    from coderag_tui.tui.app import create_app
    from coderag_tui.tui.screens.picker import PickerScreen
    from tests.helpers.app import settle
    monkeypatch.chdir(tmp_path)
    name = "[bold red]coder:7b"
    routes = {("GET", "/v1/models"): {"data": [{"id": name, "max_model_len": 4096}]}}
    with scripted(routes) as port:
        service = make_service(tmp_path)
        service.discover_ports = [port]
        app = create_app(service, watch=False, local_clipboard=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press("f8")
            await settle(pilot)
            assert isinstance(app.screen, PickerScreen)
            options = app.screen.query_one(OptionList)
            labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
            assert any(name in text and "ctx 4,096" in text for text in labels), labels
            await pilot.press("end", "enter")
            await settle(pilot)
            assert service.selected_model == name
            assert f"{name} @ :{port}" in str(app.screen.query_one("#model").render())
