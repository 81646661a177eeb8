"""Every model coderag can answer with, and turning a name (`--model NAME`, the picker) into one.

A name is, in this order: a GGUF path; a GGUF in models/ (file name or stem) or the bundled one;
the model of the configured provider or of a fallback; a model served on loopback (`ID`, or
`ID@PORT` when two servers offer the same id); else, with a remote provider configured, a model
name for that provider. Servers are only looked for when a name is not a local file, so
`--model file.gguf` never opens a connection.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from coderag_tui.answering.discovery import ServedModel
from coderag_tui.answering.providers.local import bundled_model_path, models_in
from coderag_tui.config import LLMSettings, ProviderSettings
from coderag_tui.errors import ModelError

# The window assumed for a served model whose server does not say which one it runs with:
# llama-cpp-python's and older Ollamas' default, so that a prompt never overflows it.
UNKNOWN_SERVED_WINDOW = 2048


@dataclass(frozen=True)
class Resolved:
    """How to build the provider for a name."""

    settings: LLMSettings | ProviderSettings
    override: str | None = None  # ProviderOptions.model_override
    context_window: int = 0  # ProviderOptions.context_window (served models)


def served_name(model: ServedModel, served: Sequence[ServedModel]) -> str:
    """The model's id, with `@PORT` when another server offers the same id. llama-cpp-python
    names a model by its file's path: that becomes `FILE@PORT` (a path would mean the file)."""
    if "/" in model.id and model.id.endswith(".gguf"):
        return f"{Path(model.id).name}@{model.port}"
    twins = [m for m in served if m.id == model.id]
    return model.id if len(twins) == 1 else f"{model.id}@{model.port}"


def _find_served(name: str, served: Sequence[ServedModel]) -> ServedModel | None:
    for model in served:
        if name in (served_name(model, served), f"{model.id}@{model.port}"):
            return model
    return None


def served_window(model: ServedModel) -> int:
    if model.served and model.context_window:
        return model.context_window
    return min(model.context_window or UNKNOWN_SERVED_WINDOW, UNKNOWN_SERVED_WINDOW)


def served_settings(base: ProviderSettings, model: ServedModel) -> ProviderSettings:
    """Settings for a served model: the configured sampling and timeouts, no key (loopback)."""
    return ProviderSettings(
        provider="openai", model=model.id, base_url=model.base_url, api_key_env="",
        temperature=base.temperature, max_tokens=base.max_tokens, n_ctx=served_window(model),
        timeout_s=base.timeout_s, retries=base.retries,
    )


def _local_gguf(name: str, models_dir: Path | None) -> Path | None:
    candidates = list(models_in(models_dir))
    bundled = bundled_model_path()
    if bundled is not None:
        candidates.append(bundled)
    for path in candidates:
        if name in (path.name, path.stem):
            return path
    return None


def _as_llama(settings: ProviderSettings, path: Path) -> ProviderSettings:
    local = settings if settings.provider == "llama" else ProviderSettings()
    return ProviderSettings(
        provider="llama", model=str(path), temperature=settings.temperature, max_tokens=settings.max_tokens,
        n_ctx=local.n_ctx, threads=local.threads, repeat_penalty=local.repeat_penalty,
    )


def resolve(
    name: str | None,
    settings: LLMSettings,
    models_dir: Path | None,
    servers: Callable[[], Sequence[ServedModel]],
) -> Resolved:
    """What `name` means (see the module docstring). Raises ModelError (one line) when nothing
    matches; `servers()` is called only when the name is not a local file."""
    if not name:
        return Resolved(settings)
    if re.fullmatch(r".+@\d{1,5}", name):
        found = _find_served(name, servers())
        if found is not None:
            return Resolved(served_settings(settings, found), None, served_window(found))
    path = Path(name).expanduser()
    if path.is_file():
        return Resolved(_as_llama(settings, path)) if settings.provider != "llama" or settings.fallback \
            else Resolved(settings, str(path))
    local = _local_gguf(name, models_dir)
    if local is not None:
        return Resolved(_as_llama(settings, local))
    if name == settings.model:
        return Resolved(settings)
    for item in settings.fallback:
        if name == item.model:
            return Resolved(item)
    found = _find_served(name, servers())
    if found is not None:
        return Resolved(served_settings(settings, found), None, served_window(found))
    if settings.provider != "llama":
        return Resolved(settings, name)  # a model name the configured server may know
    if "/" in name or name.endswith(".gguf"):
        raise ModelError(f"model file not found: {path} (from --model)")
    from coderag_tui.answering.catalog import find

    listed = find(name)
    if listed is not None:  # a model of the list `coderag models pull` downloads, not on disk yet
        raise ModelError(f"{name!r} is not on this machine",
                         f"download it once, with a network: `coderag models pull {listed.name}`")
    raise ModelError(f"no model named {name!r}: `coderag models list` shows the models there are")


def discovery_ports(settings: LLMSettings) -> list[int] | None:
    """The ports to scan (None: discovery is off)."""
    if not settings.discover:
        return None
    from coderag_tui.answering.discovery import DEFAULT_PORTS

    return [*DEFAULT_PORTS, *settings.discover_ports]

