"""Find OpenAI-compatible model servers running on this machine (loopback only).

Ollama, LM Studio, llama.cpp's server, vLLM and llama-cpp-python's server listen on known
ports. Each port is asked for `/v1/models` on 127.0.0.1 and ::1, all in parallel with short
timeouts, so a scan costs about one timeout however many ports are listed. The hosts are
constants: nothing here can be pointed anywhere but this machine, and proxies from the
environment are ignored (a proxy would carry the request off the machine).

Context windows come from whatever the server says: vLLM's `max_model_len`, llama.cpp's
`/props` (the window it serves) or `meta.n_ctx_train`, LM Studio's `/api/v0/models`, Ollama's
`/api/show`; for llama-cpp-python, whose model id is the GGUF's path, the file's own header.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from coderag_tui.answering import gguf
from coderag_tui.errors import ModelError

# port -> the servers that usually listen there
DEFAULT_PORTS: dict[int, str] = {
    11434: "Ollama",
    1234: "LM Studio",
    8080: "llama.cpp server",
    8000: "vLLM / llama-cpp-python",
}
LOOPBACK_HOSTS: tuple[str, ...] = ("127.0.0.1", "::1")
TIMEOUT_S = 0.3


@dataclass(frozen=True)
class ServedModel:
    """One model a loopback server offers."""

    id: str  # the model name the server expects in requests
    base_url: str  # http://127.0.0.1:PORT/v1
    server: str  # what probably runs there ("Ollama", "llama.cpp server", ...)
    context_window: int  # tokens; 0 when the server does not say
    served: bool  # True: the window the server runs with; False: the model's trained window

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1].split("/", 1)[0])


def host_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def valid_ports(ports: Iterable[int]) -> list[int]:
    """The distinct ports in range, in order."""
    out: list[int] = []
    for p in ports:
        if isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536 and p not in out:
            out.append(p)
    return out


def _get(client: httpx.Client, url: str) -> Any:
    resp = client.get(url)
    return resp.json() if resp.status_code == 200 else None


def _post(client: httpx.Client, url: str, body: dict[str, Any]) -> Any:
    resp = client.post(url, json=body)
    return resp.json() if resp.status_code == 200 else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _gguf_window(model_id: str) -> int:
    """llama-cpp-python names a model by its file path: read the trained window from it."""
    if not model_id.endswith(".gguf"):
        return 0
    with contextlib.suppress(ModelError, OSError, ValueError):
        return gguf.context_length(gguf.read_metadata(Path(model_id)))
    return 0


def _server_name(port: int, items: list[dict[str, Any]]) -> str:
    if any(item.get("owned_by") == "llamacpp" or "meta" in item for item in items):
        return "llama.cpp server"
    if any("max_model_len" in item for item in items):
        return "vLLM"
    if any(item.get("owned_by") == "library" for item in items) or port == 11434:
        return "Ollama"
    if any(item.get("owned_by") == "me" for item in items):
        return "llama-cpp-python"
    return DEFAULT_PORTS.get(port, "OpenAI-compatible server")


def _windows(kind: str, client: httpx.Client, root: str, items: list[dict[str, Any]]) -> dict[str, tuple[int, bool]]:
    """model id -> (context window, whether it is the served one)."""
    out: dict[str, tuple[int, bool]] = {}
    served = 0
    if kind == "llama.cpp server":
        with contextlib.suppress(httpx.HTTPError, ValueError):
            props = _get(client, f"{root}/props") or {}
            settings = props.get("default_generation_settings") or {}
            served = _int(settings.get("n_ctx")) or _int(props.get("n_ctx"))
    lmstudio: dict[str, int] = {}
    if kind == "LM Studio":
        with contextlib.suppress(httpx.HTTPError, ValueError, AttributeError):
            for m in (_get(client, f"{root}/api/v0/models") or {}).get("data") or []:
                window = _int(m.get("loaded_context_length")) or _int(m.get("max_context_length"))
                lmstudio[str(m.get("id"))] = window
    for item in items:
        mid = str(item["id"])
        meta: dict[str, Any] = item["meta"] if isinstance(item.get("meta"), dict) else {}
        if served:
            out[mid] = (served, True)
        elif _int(item.get("max_model_len")):
            out[mid] = (_int(item.get("max_model_len")), True)
        elif lmstudio.get(mid):
            out[mid] = (lmstudio[mid], True)
        elif _int(meta.get("n_ctx_train")):
            out[mid] = (_int(meta.get("n_ctx_train")), False)
        elif kind == "Ollama":
            out[mid] = (_ollama_window(client, root, mid), False)
        else:
            out[mid] = (_gguf_window(mid), False)
    return out


def _ollama_window(client: httpx.Client, root: str, model: str) -> int:
    with contextlib.suppress(httpx.HTTPError, ValueError, AttributeError):
        info = (_post(client, f"{root}/api/show", {"model": model}) or {}).get("model_info") or {}
        for key, value in info.items():
            if key.endswith(".context_length") and _int(value):
                return _int(value)
    return 0


def _client(timeout_s: float) -> httpx.Client:
    # trust_env=False: no proxy from the environment may carry a request off the machine
    return httpx.Client(timeout=httpx.Timeout(timeout_s), trust_env=False, follow_redirects=False)


def probe(host: str, port: int, timeout_s: float = TIMEOUT_S, client: httpx.Client | None = None) -> list[ServedModel]:
    """The models of an OpenAI-compatible server at host:port ([] when nothing answers)."""
    if host not in LOOPBACK_HOSTS:
        raise ValueError(f"not a loopback address: {host}")
    root = host_url(host, port)
    with contextlib.ExitStack() as stack:
        if client is None:
            client = stack.enter_context(_client(timeout_s))
        try:
            doc = _get(client, f"{root}/v1/models")
            items = [m for m in (doc or {}).get("data") or [] if isinstance(m, dict) and m.get("id")]
            if not items:
                return []
            kind = _server_name(port, items)
            windows = _windows(kind, client, root, items)
        except (httpx.HTTPError, ValueError, AttributeError, TypeError):
            return []
    return [ServedModel(str(m["id"]), f"{root}/v1", kind, *windows.get(str(m["id"]), (0, False)))
            for m in items]


def discover(ports: Iterable[int] | None = None, timeout_s: float = TIMEOUT_S) -> list[ServedModel]:
    """Every model served on loopback at `ports` (default: the usual ports), by port.

    A server reachable on both 127.0.0.1 and ::1 is listed once.
    """
    chosen = valid_ports(DEFAULT_PORTS if ports is None else ports)
    jobs = [(host, port) for port in chosen for host in LOOPBACK_HOSTS]
    if not jobs:
        return []
    with _client(timeout_s) as client, ThreadPoolExecutor(
        max_workers=min(16, len(jobs)), thread_name_prefix="discover"
    ) as pool:  # one client: building each one's TLS context would cost more than the scan
        results = list(pool.map(lambda job: probe(job[0], job[1], timeout_s, client), jobs))
    out: list[ServedModel] = []
    answered: set[int] = set()
    for (_host, port), models in zip(jobs, results, strict=True):
        if models and port not in answered:
            answered.add(port)
            out.extend(models)
    return out
