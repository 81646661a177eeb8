"""Typed settings, loaded from TOML files and validated strictly.

Order (later wins): built-in defaults, the user's config (`~/.config/coderag/config.toml`),
the repository's `.coderag.toml`, the file in `CODERAG_CONFIG`, then an explicit `--config FILE`.
The top-level `config.toml` of this project documents every setting with its default.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, get_type_hints

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from coderag_tui.errors import ConfigError

DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".coderag", "node_modules", "vendor", "dist", "build", "target",
    "__pycache__", ".venv", "venv", "env", ".env", ".tox", ".nox", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".idea", ".vscode", ".gradle", ".next", ".nuxt",
    "bower_components", "site-packages", "*.egg-info", ".eggs", "coverage", "htmlcov",
    ".terraform", ".cache", "Pods", "DerivedData",
)


@dataclass(frozen=True)
class IndexSettings:
    location: str = "cache"  # "cache": the user's cache dir; "repo": <repo>/.coderag/ (git-ignored)
    db_path: str = ""  # an explicit file path overrides location
    include: tuple[str, ...] = ()  # globs; empty means every file
    exclude: tuple[str, ...] = ()  # globs, added to the default excludes
    default_excludes: bool = True
    max_file_bytes: int = 1_000_000
    max_line_length: int = 1_000  # average line length above this marks a file as minified
    workers: int = 0  # parse processes; 0 = number of cores


@dataclass(frozen=True)
class ChunkSettings:
    target: int = 600  # non-whitespace characters
    max: int = 1200
    min: int = 100


@dataclass(frozen=True)
class EmbedSettings:
    enabled: bool = True
    model: str = "sentence-transformers/all-MiniLM-L6-v2"
    model_path: str = ""  # folder with model.onnx + tokenizer; empty = the bundled model
    batch_size: int = 32
    threads: int = 0  # 0 = number of cores
    max_length: int = 256


@dataclass(frozen=True)
class SearchSettings:
    k: int = 10
    candidates: int = 60  # per retriever, before fusion
    rrf_k: int = 60
    weight_bm25: float = 1.0
    weight_vector: float = 1.0
    weight_symbol: float = 1.5


@dataclass(frozen=True)
class ContextSettings:
    max_tokens: int = 6000
    share_primary: float = 0.55
    share_neighbours: float = 0.25  # callers, callees
    share_extended: float = 0.15  # parent outline, tests, similar code
    share_metadata: float = 0.05
    primary_results: int = 6
    repo_map_tokens: int = 1024


@dataclass(frozen=True)
class ProviderSettings:
    provider: str = "llama"  # llama, openai, anthropic
    model: str = ""  # GGUF path for llama; model name for remote providers
    base_url: str = ""
    api_key_env: str = ""
    temperature: float = 0.2
    max_tokens: int = 512
    n_ctx: int = 4096
    threads: int = 0
    repeat_penalty: float = 1.15
    timeout_s: float = 60.0
    retries: int = 3


@dataclass(frozen=True)
class LLMSettings(ProviderSettings):
    fallback: tuple[ProviderSettings, ...] = ()
    tiny_max_tokens: int = 200  # the explanation's cap with the tiny bundled model


@dataclass(frozen=True)
class WatchSettings:
    enabled: bool = True
    debounce_ms: int = 1000  # quiet period before a batch of several changed files
    save_debounce_ms: int = 150  # quiet period while only a few files changed (a save)


@dataclass(frozen=True)
class RemoteSettings:
    cache_dir: str = ""  # empty = the user's cache dir
    shallow: bool = True
    token_env: tuple[str, ...] = ("GITHUB_TOKEN", "BITBUCKET_TOKEN", "GIT_TOKEN")


@dataclass(frozen=True)
class TUISettings:
    theme: str = "textual-dark"
    viewer: str = "right"  # right or bottom
    keys: dict[str, str] = field(default_factory=dict)  # binding id -> keys


@dataclass(frozen=True)
class Settings:
    index: IndexSettings = IndexSettings()
    chunk: ChunkSettings = ChunkSettings()
    embed: EmbedSettings = EmbedSettings()
    search: SearchSettings = SearchSettings()
    context: ContextSettings = ContextSettings()
    llm: LLMSettings = LLMSettings()
    watch: WatchSettings = WatchSettings()
    remote: RemoteSettings = RemoteSettings()
    tui: TUISettings = TUISettings()


def _coerce(value: Any, hint: Any, where: str) -> Any:
    origin = getattr(hint, "__origin__", None)
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise ConfigError(f"config: [{where}] must be a table")
        return _build(hint, value, where)
    if origin is tuple:
        args = hint.__args__
        if not isinstance(value, list):
            raise ConfigError(f"config: {where} must be a list")
        item = args[0]
        return tuple(_coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"config: {where} must be a table")
        return {str(k): str(v) for k, v in value.items()}
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint in (int, float, str, bool) and not (
        isinstance(value, hint) and not (hint is int and isinstance(value, bool))
    ):
        raise ConfigError(f"config: {where} must be {hint.__name__}, got {value!r}")
    return value


def _build(cls: Any, data: dict[str, Any], where: str, base: Any = None) -> Any:
    hints = get_type_hints(cls)
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"config: unknown setting {where}.{unknown[0]}" if where else
                          f"config: unknown section [{unknown[0]}]")
    current = base if base is not None else cls()
    changes = {}
    for key, value in data.items():
        sub = f"{where}.{key}" if where else key
        hint = hints[key]
        existing = getattr(current, key)
        if dataclasses.is_dataclass(hint) and isinstance(value, dict):
            changes[key] = _build(hint, value, sub, existing)
        else:
            changes[key] = _coerce(value, hint, sub)
    return replace(current, **changes)


def merge(settings: Settings, data: dict[str, Any]) -> Settings:
    """Settings with the values of a parsed TOML document applied on top."""
    result: Settings = _build(Settings, data, "", settings)
    return result


def user_config_path() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("coderag")) / "config.toml"


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config: {path} is not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"config: cannot read {path}: {exc.strerror}") from exc


def load_settings(repo_root: Path | None = None, config_file: str | Path | None = None) -> Settings:
    """Load settings from every config file that exists, in order (see module docstring)."""
    settings = Settings()
    candidates: list[Path] = [user_config_path()]
    if repo_root is not None:
        candidates.append(repo_root / ".coderag.toml")
    env_file = os.environ.get("CODERAG_CONFIG")
    if env_file:
        candidates.append(Path(env_file))
    for path in candidates:
        if path.is_file():
            settings = merge(settings, read_toml(path))
    if config_file is not None:
        path = Path(config_file)
        if not path.is_file():
            raise ConfigError(f"config: {path} does not exist")
        settings = merge(settings, read_toml(path))
    return settings
