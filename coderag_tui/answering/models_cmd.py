"""`coderag models` and `coderag models pull`: what models there are, and fetching a GGUF.

`list_models` shows the configured provider(s) first, then every GGUF in models/, then the
bundled tiny model, each with its size and context window (read from the GGUF header, without
loading the model). `pull_model` downloads `{base_url}/{repo}/resolve/main/{filename}` (the
Hugging Face layout) into models/, atomically; `HF_TOKEN` is sent when set, never shown.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

import httpx

from coderag_tui.answering import gguf
from coderag_tui.answering.choices import served_name, served_window
from coderag_tui.answering.discovery import ServedModel
from coderag_tui.answering.providers._http import redact
from coderag_tui.answering.providers.base import ProviderOptions, create
from coderag_tui.answering.providers.local import (
    BUNDLED_NOTE,
    bundled_model_path,
    models_in,
    resolve_model_path,
)
from coderag_tui.config import LLMSettings, ProviderSettings
from coderag_tui.errors import CoderagError, ModelError
from coderag_tui.models import ModelInfo, Progress

HF_TOKEN_ENV = "HF_TOKEN"
DEFAULT_HUB = "https://huggingface.co"


def gguf_info(path: Path, provider: str = "llama", note: str = "", n_ctx: int = 0) -> ModelInfo:
    """A GGUF file as a ModelInfo: name, size, context window (n_ctx when set, else trained)."""
    try:
        size = path.stat().st_size
    except OSError:
        return ModelInfo(path.name, provider, str(path), 0, 0, False, note or "file not found")
    try:
        meta = gguf.read_metadata(path)
    except ModelError as exc:
        return ModelInfo(path.name, provider, str(path), 0, size, False, exc.one_line())
    trained = gguf.context_length(meta)
    notes = [note] if note else []
    if not gguf.has_chat_template(meta):
        notes.append("base model (no chat template): cannot chat")
    if n_ctx and trained and n_ctx != trained:
        notes.append(f"trained for {trained} tokens, used with n_ctx {n_ctx}")
    name = str(meta.get("general.name") or path.stem)
    return ModelInfo(
        name=f"{path.name} ({name})" if name != path.stem else path.name,
        provider=provider,
        path_or_url=str(path),
        context_window=n_ctx or trained,
        size_bytes=size,
        found=True,
        note="; ".join(notes),
    )


def _configured(settings: ProviderSettings, models_dir: Path | None, override: str | None) -> ModelInfo:
    if settings.provider == "llama":
        try:
            path, origin = resolve_model_path(settings, models_dir, override)
        except ModelError as exc:
            return ModelInfo(settings.model or "(none)", "llama", settings.model, 0, 0, False, exc.one_line())
        bundled = bundled_model_path()
        note = f"configured ({origin})"
        if bundled is not None and path == bundled:
            note += "; " + BUNDLED_NOTE
        return gguf_info(path, "llama", note, settings.n_ctx)
    try:
        info = create(settings, ProviderOptions(models_dir=models_dir, model_override=override)).info()
    except CoderagError as exc:
        return ModelInfo(settings.model, settings.provider, settings.base_url, 0, 0, False, exc.one_line())
    note = "; ".join(x for x in ("configured", info.note) if x)
    return ModelInfo(info.name, info.provider, info.path_or_url, info.context_window, 0, True, note)


def served_info(model: ServedModel, served: Sequence[ServedModel]) -> ModelInfo:
    """A model found on a loopback server, as a ModelInfo."""
    if not model.context_window:
        window = f"window unknown: prompts kept to {served_window(model)} tokens"
    elif model.served:
        window = "the window it serves"
    else:
        window = f"trained window; the server's may be smaller (prompts kept to {served_window(model)})"
    return ModelInfo(
        name=model.id, provider="openai", path_or_url=model.base_url, context_window=model.context_window,
        note=f"{model.server} on loopback; {window}", choice=served_name(model, served),
    )


def list_models(
    settings: LLMSettings | ProviderSettings,
    models_dir: Path | None = None,
    *,
    model_override: str | None = None,
    served: Sequence[ServedModel] = (),
) -> list[ModelInfo]:
    """The configured model and its fallbacks, the GGUFs of models/, the bundled GGUF, then the
    models served on loopback (`served`), each with the name that selects it."""
    out: list[ModelInfo] = []
    seen: set[str] = set()
    chain: tuple[ProviderSettings, ...] = (settings, *getattr(settings, "fallback", ()))
    for i, item in enumerate(chain):
        info = _configured(item, models_dir, model_override if i == 0 else None)
        choice = info.path_or_url if item.provider == "llama" else item.model
        info = replace(info, choice=choice if info.found else "")
        if i:
            info = replace(info, note=f"fallback {i}; {info.note}".rstrip("; "))
        out.append(info)
        seen.add(info.path_or_url)
    for path in models_in(models_dir):
        if str(path) not in seen:
            out.append(replace(gguf_info(path, "llama", "in models/"), choice=path.name))
            seen.add(str(path))
    bundled = bundled_model_path()
    if bundled is not None and str(bundled) not in seen:
        out.append(replace(gguf_info(bundled, "llama", BUNDLED_NOTE), choice=bundled.name))
    out.extend(served_info(m, served) for m in served)
    return out


def _safe_name(filename: str) -> str:
    name = Path(filename).name
    if not name or name in (".", "..") or ".." in Path(filename).parts:
        raise ModelError(f"not a file name: {filename!r}")
    return name


def pull_model(
    repo: str,
    filename: str,
    models_dir: Path,
    progress: Callable[[Progress], None] | None = None,
    base_url: str = DEFAULT_HUB,
    *,
    force: bool = False,
    timeout_s: float = 30.0,
) -> Path:
    """Download a GGUF into `models_dir` (via a temporary file, then an atomic rename)."""
    name = _safe_name(filename)
    url = f"{base_url.rstrip('/')}/{repo.strip('/')}/resolve/main/{filename.lstrip('/')}"
    models_dir = Path(models_dir)
    target = models_dir / name
    if target.exists() and not force:
        if progress:
            size = target.stat().st_size
            progress(Progress("done", size, size, f"{name} is already in {models_dir}"))
        return target
    try:
        models_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelError(f"cannot create {models_dir}: {exc.strerror}") from exc
    token = os.environ.get(HF_TOKEN_ENV, "")
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=models_dir)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            _download(url, headers, out, name, progress, timeout_s, token)
        if name.endswith(".gguf") and not gguf.is_gguf(tmp):
            raise ModelError(f"cannot use {url}: the download is not a GGUF model file")
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return target


def _download(
    url: str,
    headers: dict[str, str],
    out: BinaryIO,
    name: str,
    progress: Callable[[Progress], None] | None,
    timeout_s: float,
    token: str,
) -> None:
    write = out.write
    try:
        with httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)), follow_redirects=True
        ) as client, client.stream("GET", url, headers=headers) as resp:
            if resp.status_code in (401, 403):
                why = (f"the token in ${HF_TOKEN_ENV} was rejected" if token
                       else f"a gated or private model: set ${HF_TOKEN_ENV}")
                raise ModelError(f"cannot download {url}: HTTP {resp.status_code} ({why})")
            if resp.status_code == 404:
                raise ModelError(f"cannot download {url}: HTTP 404 (check the repository and file name)")
            if resp.status_code >= 400:
                raise ModelError(f"cannot download {url}: HTTP {resp.status_code}")
            total = int(resp.headers.get("content-length") or 0)
            done = 0
            started = time.monotonic()
            last = 0.0
            for block in resp.iter_bytes(1 << 20):
                write(block)
                done += len(block)
                now = time.monotonic()
                if progress and (now - last >= 0.2 or (total and done >= total)):
                    last = now
                    rate = done / max(now - started, 1e-6)
                    eta = (total - done) / rate if total and rate else 0.0
                    progress(Progress("fetch", done, total, name, rate=rate, eta_s=eta))
            if total and done < total:
                raise ModelError(f"cannot download {url}: the connection closed after {done} of {total} bytes")
            if progress:
                progress(Progress("done", done, total or done, f"{name} downloaded"))
    except ModelError:
        raise
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise ModelError(
            f"cannot download {url}: no network? put a GGUF in models/ instead"
        ) from exc
    except httpx.HTTPError as exc:
        raise ModelError(redact(f"cannot download {url}: {type(exc).__name__}", token)) from exc
    except OSError as exc:
        raise ModelError(f"cannot write the download of {name}: {exc.strerror}") from exc
