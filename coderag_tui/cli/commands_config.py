"""config (the effective settings and where each came from) and trust (a repository's own config)."""

from __future__ import annotations

import argparse
import json
import shlex
from datetime import datetime
from pathlib import Path
from typing import Any

from coderag_tui import trust
from coderag_tui.cli.base import add_json, arguments, command, print_json
from coderag_tui.config import (
    REPO_CONFIG,
    Layer,
    Settings,
    effective,
    load_layers,
    merge,
    read_toml,
)
from coderag_tui.errors import ConfigError, RepoError


def _repo_root(target: str | None) -> Path | None:
    """The folder whose `.coderag.toml` applies, found as `CodeRag.open` finds it; None for a URL."""
    from coderag_tui.paths import find_repo_root
    from coderag_tui.sources.urls import is_remote

    if target is None:
        return find_repo_root(Path.cwd())
    if is_remote(target):
        return None
    path = Path(target).expanduser()
    if not path.is_dir():
        raise RepoError(f"no such folder: {target}", "give a path to a repository")
    return path.resolve()


def _trust_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", nargs="?", help="the repository folder (default: --repo or the cwd's)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--revoke", action="store_true", help="stop trusting the repository")
    what.add_argument("--list", action="store_true", help="list the trusted repositories")
    add_json(p)


@command("trust", "let a repository's own .coderag.toml choose endpoints, keys and paths")
@arguments(_trust_args)
def cmd_trust(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args.json)
    target = args.path or args.repo
    if args.revoke:
        from coderag_tui.paths import find_repo_root

        # the folder may be gone already: forgetting it must still work
        gone = Path(target).expanduser().resolve() if target else find_repo_root(Path.cwd())
        revoked = trust.revoke(gone)
        if args.json:
            print_json({"path": str(gone), "revoked": revoked})
        else:
            print(f"no longer trusted: {gone}" if revoked else f"not trusted: {gone}")
        return 0 if revoked else 1
    root = _repo_root(target)
    if root is None:
        raise RepoError("a repository cloned from a URL is never trusted",
                        "clone it yourself, read its .coderag.toml, then trust the folder")
    path = root / REPO_CONFIG
    if not path.is_file():
        raise ConfigError(f"no {REPO_CONFIG} in {root}: nothing to trust")
    data = read_toml(path)
    merge(Settings(), data)  # a config that would not load is not trusted
    _, restricted = trust.split_restricted(data)
    trust.grant(root, restricted)
    if args.json:
        print_json({"path": str(root), "trusted": True,
                    "settings": {k: _shown(v, k) for k, v in restricted.items()}})
        return 0
    print(f"trusted: {root}")
    for name, value in restricted.items():
        print(f"  {name} = {_toml(_shown(value, name))}")
    if not restricted:
        print(f"  ({REPO_CONFIG} sets none of the settings that need trust)")
    print("if these change, they are ignored until you trust the repository again")
    return 0


def _list(as_json: bool) -> int:
    items = sorted(trust.entries().values(), key=lambda e: e.path)
    rows = []
    for entry in items:
        path = Path(entry.path) / REPO_CONFIG
        if not path.is_file():
            state = "no config now"
        else:
            try:
                state = trust.state(Path(entry.path), trust.split_restricted(read_toml(path))[1])
            except ConfigError:
                state = "unreadable config"
        when = datetime.fromtimestamp(entry.trusted_at).strftime("%Y-%m-%d %H:%M")
        rows.append({"path": entry.path, "state": state, "trusted_at": when})
    if as_json:
        print_json(rows)
    elif not rows:
        print("no trusted repositories")
    else:
        for row in rows:
            print(f"{row['state']:<9}  {row['trusted_at']}  {row['path']}")
    return 0 if rows else 1


def _config_args(p: argparse.ArgumentParser) -> None:
    add_json(p)


@command("config", "show the effective settings and where each came from")
@arguments(_config_args)
def cmd_config(args: argparse.Namespace) -> int:
    root = _repo_root(args.repo)
    layers = load_layers(root, args.config)
    if args.db:
        layers.append(Layer("command line", "--db", {"index": {"db_path": args.db}}))
    rows = effective(layers)
    if args.json:
        print_json({
            "repository": str(root) if root is not None else None,
            "files": [{"source": layer.source, "path": layer.path, "trust": layer.trust or None,
                       "ignored": list(layer.ignored)} for layer in layers],
            "settings": {r.name: {"value": _shown(r.value, r.name), "source": r.source, "path": r.path or None,
                                  "ignored_from": r.ignored_from or None,
                                  "ignored_because": r.ignored_because or None} for r in rows},
        })
        return 0
    if root is None:
        print("# a repository cloned from a URL: its own config is never read")
    else:
        print(f"# repository: {root}")
    for layer in layers:
        print(f"# {layer.source}: {layer.path}{_trust_note(layer)}")
    if not layers:
        print("# no config files: every setting is the default")
    section = ""
    for r in rows:
        head, key = r.name.split(".", 1)
        if head != section:
            section = head
            print(f"\n[{section}]")
        note = r.source
        if r.ignored_from:
            note += f"; repository value ignored ({r.ignored_because})"
        print(f"{key} = {_toml(_shown(r.value, r.name))}  # {note}")
    return 0


def _trust_note(layer: Layer) -> str:
    if layer.source != "repository config":
        return ""
    if not layer.ignored:
        return f" ({layer.trust})"
    root = shlex.quote(str(Path(layer.path).parent))
    return (f"\n#   {layer.trust}, so these are ignored: {', '.join(layer.ignored)}"
            f"\n#   `coderag trust {root}` allows them")


# settings that are secrets themselves: shown as how many there are, never as they are
SECRET_SETTINGS = frozenset({"server.read_tokens", "server.admin_tokens", "server.webhook_secret"})


def _shown(value: Any, name: str = "") -> Any:
    """`value` with credentials inside URLs masked (a base_url may carry a token), and a
    setting that is a secret (`name` in SECRET_SETTINGS) hidden."""
    from coderag_tui.sources.urls import redact

    if name in SECRET_SETTINGS and value:
        return ["<hidden>"] * len(value) if isinstance(value, (list, tuple)) else "<hidden>"
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_shown(v) for v in value]
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    return value


def _toml(value: Any) -> str:
    """A value written as in a TOML file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return str(value)
