"""Typed settings, loaded from TOML files and validated strictly.

Order (later wins): built-in defaults, the user's config (`~/.config/coderag/config.toml`),
the repository's `.coderag.toml`, the file in `CODERAG_CONFIG`, then an explicit `--config FILE`.
A repository's own config is untrusted: its settings that choose where data, keys or files go
are ignored, with one line on stderr, until the user trusts it (`coderag_tui.trust`).
The top-level `config.toml` of this project documents every setting with its default.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, get_type_hints

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from coderag_tui import trust
from coderag_tui.errors import ConfigError

DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".coderag", "node_modules", "vendor", "dist", "build", "target",
    "__pycache__", ".venv", "venv", "env", ".env", ".tox", ".nox", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".idea", ".vscode", ".gradle", ".next", ".nuxt",
    "bower_components", "site-packages", "*.egg-info", ".eggs", "coverage", "htmlcov",
    ".terraform", ".cache", "Pods", "DerivedData",
)

# File names that usually hold credentials. They are never read, whatever an ignore file says
# (`!.env` in a repository's .coderagignore cannot bring one back): only the user's own config,
# or a repository config the user trusted, can change this list.
SECRET_FILES = (
    ".env", ".env.*", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".netrc", "_netrc", ".pgpass",
    ".git-credentials", ".npmrc", ".pypirc", ".htpasswd", "credentials", "credentials.json",
    "secrets.json", "secrets.yaml", "secrets.yml", "*.tfvars", "*.tfstate",
)
# templates of those files hold placeholders, not secrets: they document the setup
SECRET_TEMPLATES = ("*.example", "*.sample", "*.template", "*.dist", "*.tmpl")


@dataclass(frozen=True)
class IndexSettings:
    location: str = "cache"  # "cache": the user's cache dir; "repo": <repo>/.coderag/ (git-ignored)
    db_path: str = ""  # an explicit file path overrides location
    store: str = ""  # a PostgreSQL URL (postgresql://...): the index lives there instead of a file
    include: tuple[str, ...] = ()  # globs; empty means every file
    exclude: tuple[str, ...] = ()  # globs, added to the default excludes
    default_excludes: bool = True
    secret_files: tuple[str, ...] = SECRET_FILES  # file-name globs never read (see SECRET_FILES)
    max_file_bytes: int = 1_000_000
    max_line_length: int = 1_000  # average line length above this marks a file as minified
    workers: int = 0  # parse processes; 0 = number of cores (never more: see indexing/workers.py)


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
    pool_windows: bool = True  # a chunk longer than the window: average its windows (else cut it)


@dataclass(frozen=True)
class SearchSettings:
    k: int = 10
    candidates: int = 60  # per retriever, before fusion
    rrf_k: int = 60
    weight_bm25: float = 1.0
    weight_vector: float = 1.0
    weight_symbol: float = 1.5
    rerank: str = "off"  # off, or llm: the configured chat model re-orders the top hits
    rerank_top: int = 10  # hits the reranker judges
    ranker: str = "learned"  # learned (trees over per-candidate features, for pasted reports) or fusion
    ranker_model: str = ""  # a model file instead of the shipped one (bench/train_ranker.py writes them)


@dataclass(frozen=True)
class ContextSettings:
    max_tokens: int = 6000
    share_primary: float = 0.6
    share_neighbours: float = 0.2  # callers, callees
    share_extended: float = 0.15  # parent outline, tests, similar code
    share_metadata: float = 0.05
    primary_results: int = 20
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
    discover: bool = True  # look for model servers on loopback (127.0.0.1, ::1) at start
    discover_ports: tuple[int, ...] = ()  # scanned besides the usual ports of local servers
    tools: str = "auto"  # let the model call the index's tools: auto (remote providers), on, off
    tool_steps: int = 4  # at most this many rounds of tool calls before the model must answer
    cache_similarity: float = 0.95  # a stored answer serves a question this similar; 0 = no cache
    tiny_max_tokens: int = 200  # the explanation's cap with the tiny bundled model
    # the prompt's code with the tiny bundled model (no repo map): reading the prompt is most of
    # its answer time on a small machine, and the opening section comes from retrieval, not from it
    tiny_context_tokens: int = 1000


@dataclass(frozen=True)
class SummarySettings:
    # units summarized per run with a local model (files and classes first; their folders come
    # on top), sized from bench/bench_summaries.py: on SQLAlchemy's 953 files the bundled model
    # takes 3.8-4.7 s of CPU a summary on its one thread, so 120 (+ ~14 folders) take about 10
    # minutes on 2 otherwise idle cores (five times that on our shared, loaded ones). 0 = no limit
    budget: int = 120
    max_tokens: int = 48  # per function or method; 1.5 times this for classes, files and folders
    temperature: float = 0.3
    code_chars: int = 1200  # of a unit's code in its prompt
    # whether the model's summaries join the ranking (their words in the keyword list, their text
    # in the embedded documents) or are only shown (contexts, file notes, get_file_summary). Off:
    # the bundled model's summaries lowered SWE-QA evidence recall (docs/summaries.md)
    search: bool = False
    # made by themselves after the index and its vectors (app, watch, MCP server), with a
    # local model only: a remote one costs money, so `coderag summarize` asks first
    background: bool = True
    concurrency: int = 4  # remote requests in flight at once
    requests_per_minute: float = 0  # remote request starts per minute (0: no limit)


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
class ServerSettings:
    """`coderag serve` (host, port, tokens) and its clients (`url`: use that server instead)."""

    url: str = ""  # a client's server: the CLI asks it instead of opening a local index
    token_env: str = "CODERAG_TOKEN"  # a client's bearer token is read from this variable
    host: str = "127.0.0.1"
    port: int = 8765
    repositories: tuple[str, ...] = ()  # what `coderag serve` serves when given none: folders, URLs
    # tokens a server accepts; more come from $CODERAG_READ_TOKENS / $CODERAG_ADMIN_TOKENS
    read_tokens: tuple[str, ...] = ()  # search, context, symbols, ask
    admin_tokens: tuple[str, ...] = ()  # all of those, and indexing
    # on loopback without tokens: a random admin token made at start and printed (false: none)
    loopback_token: bool = True
    # Host names (besides the address listened on) requests may name: a reverse proxy's
    allowed_hosts: tuple[str, ...] = ()
    # browser origins (scheme://host:port) allowed to call the server, besides its own
    allowed_origins: tuple[str, ...] = ()
    max_requests_per_client: int = 8  # at once; more wait their turn (up to 8 times as many)
    fetch_interval_s: int = 300  # served git URLs are fetched and re-indexed this often (0: never)
    watch: bool = True  # served local folders are watched and re-indexed as they change
    # the secret push webhooks are signed with (also $CODERAG_WEBHOOK_SECRET); empty: no webhooks
    webhook_secret: str = ""


@dataclass(frozen=True)
class TUISettings:
    theme: str = "textual-dark"
    viewer: str = "auto"  # auto (right when the window is 120+ columns wide, else below), right, bottom
    keys: dict[str, str] = field(default_factory=dict)  # binding id -> keys


@dataclass(frozen=True)
class Settings:
    index: IndexSettings = IndexSettings()
    chunk: ChunkSettings = ChunkSettings()
    embed: EmbedSettings = EmbedSettings()
    search: SearchSettings = SearchSettings()
    context: ContextSettings = ContextSettings()
    llm: LLMSettings = LLMSettings()
    summaries: SummarySettings = SummarySettings()
    watch: WatchSettings = WatchSettings()
    remote: RemoteSettings = RemoteSettings()
    tui: TUISettings = TUISettings()
    server: ServerSettings = ServerSettings()


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
        close = difflib.get_close_matches(unknown[0], sorted(names), n=1, cutoff=0.6)
        hint = (f"did you mean {where}.{close[0]}?" if where else f"did you mean [{close[0]}]?") if close else ""
        raise ConfigError(f"config: unknown setting {where}.{unknown[0]}" if where else
                          f"config: unknown section [{unknown[0]}]", hint)
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


REPO_CONFIG = ".coderag.toml"


@dataclass(frozen=True)
class Layer:
    """One source of settings, in the order applied."""

    source: str  # "user config", "repository config", "$CODERAG_CONFIG", "--config", "command line"
    path: str  # the file (or the option, for the command line)
    data: dict[str, Any]  # what is applied
    ignored: tuple[str, ...] = ()  # "section.key" settings read but not applied
    trust: str = ""  # repository config: trusted, untrusted or changed


def repository_layer(repo_root: Path) -> Layer | None:
    """The repository's own config, without the restricted settings unless it is trusted."""
    path = repo_root / REPO_CONFIG
    if not path.is_file():
        return None
    data = read_toml(path)
    kept, restricted = trust.split_restricted(data)
    state = trust.state(repo_root, restricted)
    if state == trust.TRUSTED:
        return Layer("repository config", str(path), data, (), state)
    return Layer("repository config", str(path), kept, tuple(restricted), state)


def load_layers(repo_root: Path | None = None, config_file: str | Path | None = None) -> list[Layer]:
    """Every config file that exists, in order (see the module docstring)."""
    layers: list[Layer] = []
    user = user_config_path()
    if user.is_file():
        layers.append(Layer("user config", str(user), read_toml(user)))
    if repo_root is not None:
        repo = repository_layer(repo_root)
        if repo is not None:
            layers.append(repo)
    env_file = os.environ.get("CODERAG_CONFIG")
    if env_file and Path(env_file).is_file():
        layers.append(Layer("$CODERAG_CONFIG", env_file, read_toml(Path(env_file))))
    if config_file is not None:
        path = Path(config_file)
        if not path.is_file():
            raise ConfigError(f"config: {path} does not exist")
        layers.append(Layer("--config", str(path), read_toml(path)))
    return layers


def apply_layers(layers: list[Layer]) -> Settings:
    """The defaults with every layer applied in order; an invalid setting names its file."""
    settings = Settings()
    for layer in layers:
        try:
            settings = merge(settings, layer.data)
        except ConfigError as exc:
            raise ConfigError(f"{exc.message} (in {layer.path})", exc.hint) from None
    return settings


def ignored_notice(layer: Layer) -> str:
    """The one line that says which settings of an untrusted repository config were ignored."""
    root = shlex.quote(str(Path(layer.path).parent))
    keys = ", ".join(layer.ignored)
    if layer.trust == trust.CHANGED:
        return (f"coderag: ignoring {keys} from {layer.path}: changed since you trusted it; "
                f"review them, then run `coderag trust {root}`")
    return (f"coderag: ignoring {keys} from {layer.path}: a repository may not choose endpoints, "
            f"keys or paths; run `coderag trust {root}` to allow them")


_noticed: set[str] = set()


def print_notice(line: str) -> None:
    """Print a notice to stderr once per process (a service opened twice says it once)."""
    if line not in _noticed:
        _noticed.add(line)
        print(line, file=sys.stderr)


def load_settings(
    repo_root: Path | None = None,
    config_file: str | Path | None = None,
    *,
    notify: Callable[[str], None] | None = print_notice,
) -> Settings:
    """Load settings from every config file that exists, in order (see module docstring)."""
    layers = load_layers(repo_root, config_file)
    settings = apply_layers(layers)  # validates everything before any notice is printed
    for layer in layers:
        if layer.ignored and notify is not None:
            notify(ignored_notice(layer))
    return settings


@dataclass(frozen=True)
class EffectiveSetting:
    """One setting's value and the layer it came from (`coderag config`)."""

    name: str  # "section.key"
    value: Any  # as in TOML: lists for tuples, tables for fallback entries
    source: str  # "default" or a Layer's source
    path: str = ""  # the Layer's path
    ignored_from: str = ""  # a repository config that sets it but was not applied
    ignored_because: str = ""  # untrusted or changed


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def effective(layers: list[Layer]) -> list[EffectiveSetting]:
    """Every setting with its effective value and where it came from."""
    settings = apply_layers(layers)
    result = []
    for section in fields(Settings):
        table = getattr(settings, section.name)
        for f in fields(table):
            name = f"{section.name}.{f.name}"
            source, path, ignored_from, because = "default", "", "", ""
            for layer in layers:
                data = layer.data.get(section.name)
                if isinstance(data, dict) and f.name in data:
                    source, path = layer.source, layer.path
                if name in layer.ignored:
                    ignored_from, because = layer.path, layer.trust
            result.append(EffectiveSetting(name, _plain(getattr(table, f.name)), source, path,
                                           ignored_from, because))
    return result
