"""`coderag models pull`: a short list of code-capable instruct GGUFs, fetched with the Hugging
Face hub client (`huggingface_hub`, installed with fastembed) into models/.

Sizes and RAM are approximate (a Q4_K_M file, and what llama.cpp needs to run it with a 4k
window); check a model's licence on its page before you use it. `HF_ENDPOINT` (or
`--base-url`) points the client at a mirror; `HF_TOKEN` is sent by the client when set.
"""

from __future__ import annotations

import os
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from coderag_tui.answering import gguf
from coderag_tui.errors import ModelError

DEFAULT_HUB = "https://huggingface.co"


@dataclass(frozen=True)
class CatalogModel:
    name: str  # what `coderag models pull NAME` takes
    repo: str  # the hub repository
    file: str  # the GGUF in it
    size_gb: float  # download size, approximate
    ram_gb: float  # memory to run it with a 4k window, approximate
    licence: str
    note: str = ""


CATALOG: tuple[CatalogModel, ...] = (
    CatalogModel("qwen2.5-coder-0.5b", "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
                 "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 0.4, 1.0, "Apache-2.0",
                 "the smallest code model worth asking"),
    CatalogModel("qwen2.5-coder-1.5b", "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
                 "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", 1.1, 2.0, "Apache-2.0",
                 "a good default on a laptop CPU"),
    CatalogModel("qwen2.5-coder-3b", "Qwen/Qwen2.5-Coder-3B-Instruct-GGUF",
                 "qwen2.5-coder-3b-instruct-q4_k_m.gguf", 2.1, 3.5, "Qwen Research (non-commercial)"),
    CatalogModel("qwen2.5-coder-7b", "bartowski/Qwen2.5-Coder-7B-Instruct-GGUF",
                 "Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf", 4.7, 6.5, "Apache-2.0",
                 "the best answers here; wants a GPU or patience"),
    CatalogModel("llama-3.2-1b", "bartowski/Llama-3.2-1B-Instruct-GGUF",
                 "Llama-3.2-1B-Instruct-Q4_K_M.gguf", 0.8, 1.5, "Llama 3.2 Community"),
    CatalogModel("llama-3.2-3b", "bartowski/Llama-3.2-3B-Instruct-GGUF",
                 "Llama-3.2-3B-Instruct-Q4_K_M.gguf", 2.0, 3.5, "Llama 3.2 Community"),
    CatalogModel("phi-3.5-mini", "bartowski/Phi-3.5-mini-instruct-GGUF",
                 "Phi-3.5-mini-instruct-Q4_K_M.gguf", 2.4, 4.0, "MIT"),
)


def find(name: str) -> CatalogModel | None:
    key = name.strip().lower()
    return next((m for m in CATALOG if key in (m.name, m.file.lower())), None)


def catalog_lines() -> list[str]:
    """The catalogue as a table for the terminal."""
    head = f"{'NAME':<20} {'SIZE':>7} {'RAM':>7}  {'LICENCE':<31} REPOSITORY / FILE"
    rows = [f"{m.name:<20} {m.size_gb:>4.1f} GB {m.ram_gb:>4.1f} GB  {m.licence:<31} {m.repo} / {m.file}"
            for m in CATALOG]
    return [head, *rows, "(sizes and RAM are approximate; check each licence on the model's page)"]


def _safe_name(filename: str) -> str:
    name = Path(filename).name
    if not name or name in (".", "..") or ".." in Path(filename).parts or filename.startswith("/"):
        raise ModelError(f"not a file name: {filename!r}")
    return name


def _reachable(hub: str, timeout_s: float = 5.0) -> bool:
    """Whether the hub's host takes a connection: offline, say so at once (the hub client would
    retry for half a minute, printing each try)."""
    url = urlsplit(hub)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=timeout_s).close()
    except OSError:
        return False
    return True


def hub_pull(repo: str, filename: str, models_dir: Path, endpoint: str | None = None) -> Path:
    """Download `filename` of hub repository `repo` into `models_dir` (resumable, through the
    hub client). Raises ModelError (one line) offline, for a missing file or a non-GGUF."""
    name = _safe_name(filename)
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import (
            GatedRepoError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            OfflineModeIsEnabled,
            RemoteEntryNotFoundError,
            RepositoryNotFoundError,
        )
    except ImportError as exc:
        raise ModelError("the hub client (huggingface_hub) is not installed: "
                         "pip install huggingface_hub, or put a GGUF in models/") from exc
    hub = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_HUB).rstrip("/")
    where = f"{repo}/{filename} from {hub}"
    target = Path(models_dir) / name
    proxied = any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"))
    if not proxied and not _reachable(hub):
        raise ModelError(f"cannot download {where}: no network? put a GGUF in models/ instead")
    try:
        Path(models_dir).mkdir(parents=True, exist_ok=True)
        got = Path(hf_hub_download(repo_id=repo, filename=filename, local_dir=models_dir, endpoint=hub))
    except GatedRepoError as exc:
        raise ModelError(f"cannot download {where}: a gated model: accept its licence on its page "
                         "and set $HF_TOKEN") from exc
    except RepositoryNotFoundError as exc:
        raise ModelError(f"cannot download {where}: no such repository (or a private one: set $HF_TOKEN)") from exc
    except RemoteEntryNotFoundError as exc:
        raise ModelError(f"cannot download {where}: no such file in the repository") from exc
    except (OfflineModeIsEnabled, LocalEntryNotFoundError) as exc:
        offline = " ($HF_HUB_OFFLINE is set)" if isinstance(exc, OfflineModeIsEnabled) else ""
        raise ModelError(f"cannot download {where}: no network{offline}? put a GGUF in models/ instead") from exc
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "error"
        raise ModelError(f"cannot download {where}: HTTP {status}") from exc
    except OSError as exc:
        raise ModelError(f"cannot download {where}: {exc.strerror or type(exc).__name__}") from exc
    if got != target:  # a file in a folder of the repository: keep models/ flat
        shutil.move(str(got), target)
    if name.endswith(".gguf") and not gguf.is_gguf(target):
        target.unlink(missing_ok=True)
        raise ModelError(f"cannot use {where}: the download is not a GGUF model file")
    return target
