"""Which repositories may choose where data, keys and files go through their own `.coderag.toml`.

A repository's config is written by whoever wrote the repository. Its settings that pick an
endpoint, a key variable, or a file or folder to load or write (`RESTRICTED`) apply only once
the user has run `coderag trust`; the others (excludes, chunk sizes, retrieval weights, UI
keys) always apply. Settings that only size the work (threads, n_ctx, batch sizes, timeouts)
stay allowed too: at worst they make coderag slow or fail, never send or write anything. The
number of parse processes is the exception: a repository asking for many could take every core
of a shared server, so it needs trust (and is never more than the cores).

Trust is remembered in the user's config folder, keyed by the repository's resolved path and
pinned to a SHA-256 fingerprint of the restricted settings the config held when it was
trusted. The fingerprint is there because a `git pull` can rewrite a trusted repository's
config: an endpoint or key variable the user never saw must not be honoured silently, so a
change to any restricted setting makes them ignored again (with one line saying so) until the
user trusts the repository again. Only the restricted settings are hashed, not the whole file,
so editing a weight or an exclude keeps the trust and re-trusting stays rare and meaningful.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coderag_tui.errors import ConfigError

# section.key -> what it chooses (said by `coderag config` and in the docs)
RESTRICTED: dict[str, str] = {
    "index.location": "where the index file is written",
    "index.db_path": "where the index file is written",
    "index.store": "which PostgreSQL server the repository's code is written to",
    "index.default_excludes": "whether local folders such as .env and virtualenvs are read",
    "index.secret_files": "which files that usually hold keys and passwords are read",
    "index.workers": "how many processes parse the repository (at most the cores)",
    "embed.model": "which embedding model is downloaded and loaded",
    "embed.model_path": "which model files are loaded",
    "llm.provider": "where questions and code are sent",
    "llm.model": "which model file is loaded (llama) or asked",
    "llm.base_url": "where questions and code are sent",
    "llm.api_key_env": "which environment variable is sent as an API key",
    "llm.fallback": "where questions, code and keys are sent when the model fails",
    "llm.discover": "whether model servers on this machine are contacted",
    "llm.discover_ports": "which ports on this machine are contacted for model servers",
    "remote.cache_dir": "where clones are written",
    "remote.token_env": "which environment variables are sent as git tokens",
    "server.url": "which coderag server questions and code go to",
    "server.token_env": "which environment variable is sent as a server token",
    "server.host": "which network a server listens on",
    "server.repositories": "which folders and repositories a server reads and serves",
    "server.read_tokens": "who may search a server",
    "server.admin_tokens": "who may index on a server",
    "server.loopback_token": "whether a server on loopback answers without a token",
    "server.allowed_hosts": "which host names a server answers to",
    "server.allowed_origins": "which web pages may call a server from a browser",
    "server.fetch_interval_s": "how often a server fetches the repositories it serves",
    "server.webhook_secret": "who may make a server fetch its repositories",
}

TRUSTED = "trusted"
UNTRUSTED = "untrusted"
CHANGED = "changed"  # trusted, but its restricted settings changed since


def split_restricted(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the document without restricted settings, the restricted ones as {"section.key": value})."""
    kept: dict[str, Any] = {}
    restricted: dict[str, Any] = {}
    for section, table in data.items():
        if not isinstance(table, dict):
            kept[section] = table  # not a table: left for validation to reject
            continue
        rest = {}
        for key, value in table.items():
            name = f"{section}.{key}"
            if name in RESTRICTED:
                restricted[name] = value
            else:
                rest[key] = value
        kept[section] = rest
    return kept, restricted


def fingerprint(restricted: dict[str, Any]) -> str:
    text = json.dumps(restricted, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def store_path() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("coderag")) / "trusted.json"


@dataclass(frozen=True)
class TrustEntry:
    path: str  # the repository's resolved path
    fingerprint: str  # of its restricted settings when trusted
    trusted_at: float  # Unix time


def _key(root: Path) -> str:
    return str(Path(root).expanduser().resolve())


def entries() -> dict[str, TrustEntry]:
    """Every trusted repository, by resolved path."""
    path = store_path()
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"config: cannot read the trusted repositories in {path}: {exc}",
                          "fix or delete that file, then trust your repositories again") from exc
    repos = doc.get("repositories") if isinstance(doc, dict) else None
    if not isinstance(repos, dict):
        raise ConfigError(f"config: {path} is not a list of trusted repositories",
                          "fix or delete that file, then trust your repositories again")
    result = {}
    for key, item in repos.items():
        if isinstance(item, dict) and isinstance(item.get("fingerprint"), str):
            result[key] = TrustEntry(key, item["fingerprint"], float(item.get("trusted_at") or 0))
    return result


def _save(items: dict[str, TrustEntry]) -> None:
    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"repositories": {k: {"fingerprint": e.fingerprint, "trusted_at": e.trusted_at}
                            for k, e in sorted(items.items())}}
    # write then rename: a crash never leaves a half-written file that would lose every entry
    fd, tmp = tempfile.mkstemp(prefix=".trusted-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def grant(root: Path, restricted: dict[str, Any]) -> TrustEntry:
    """Trust `root` with the restricted settings its config holds now."""
    items = entries()
    entry = TrustEntry(_key(root), fingerprint(restricted), time.time())
    items[entry.path] = entry
    _save(items)
    return entry


def revoke(root: Path) -> bool:
    """Forget `root`; False when it was not trusted."""
    items = entries()
    if items.pop(_key(root), None) is None:
        return False
    _save(items)
    return True


def state(root: Path, restricted: dict[str, Any]) -> str:
    """TRUSTED, UNTRUSTED, or CHANGED (trusted with other restricted settings than these)."""
    entry = entries().get(_key(root))
    if entry is None:
        return UNTRUSTED
    # a config that no longer sets anything restricted has nothing that could have changed
    return TRUSTED if not restricted or entry.fingerprint == fingerprint(restricted) else CHANGED
