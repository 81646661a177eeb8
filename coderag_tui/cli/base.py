"""Shared pieces of the command line: the command registry, common options, output helpers."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coderag_tui.cli.progress import progress_printer  # noqa: F401  (re-exported)
from coderag_tui.errors import CoderagError
from coderag_tui.models import to_dict

STDIN_LIMIT = 4 * 1024 * 1024  # bytes of piped text read at most

if TYPE_CHECKING:
    from coderag_tui.contract import Service
    from coderag_tui.workspace.local import WorkspaceService


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: dict[str, Command] = {}


def command(name: str, help: str) -> Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]]:
    """Register a subcommand: decorate its run function; set `run.arguments = fn(parser)` before."""

    def wrap(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        adder = getattr(fn, "arguments", lambda p: None)
        COMMANDS[name] = Command(name, help, adder, fn)
        return fn

    return wrap


def arguments(adder: Callable[[argparse.ArgumentParser], None]) -> Callable[[Any], Any]:
    def wrap(fn: Any) -> Any:
        fn.arguments = adder
        return fn

    return wrap


class UsageError(CoderagError):
    """The command line itself is wrong (exit 2)."""


# Options every command takes, before or after the command name (`coderag --repo X status`).
GLOBAL_VALUE_OPTIONS = ("--repo", "--config", "--db", "--store", "--branch", "--rev", "--server")
GLOBAL_FLAGS = ("--workspace",)


def add_common(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("global options (before or after the command)")
    group.add_argument("--repo", metavar="PATH|URL",
                       help="the repository: a folder or a git URL (default: the one containing the cwd)")
    group.add_argument("--config", metavar="FILE", help="a config.toml to apply on top of the others")
    group.add_argument("--db", metavar="FILE", help="the index file (default: in the user's cache)")
    group.add_argument("--store", metavar="URL", help="keep the index in PostgreSQL with pgvector "
                       "(postgresql://...; default: [index] store; index, search and symbol)")
    group.add_argument("--branch", help="branch to clone (repository URLs)")
    group.add_argument("--rev", help="commit to check out (repository URLs)")
    group.add_argument("--server", metavar="URL", help="ask a `coderag serve` server instead of a local index "
                       "(default: [server] url); --repo then names its repositories (a,b); the token is "
                       "read from $CODERAG_TOKEN")
    group.add_argument("--workspace", action="store_true",
                       help="span the workspace's repositories ([server] repositories in the user's config), "
                       "each with its own index, on this machine; --repo then names some of them (a,b)")


def add_path(parser: argparse.ArgumentParser) -> None:
    """The repository as a positional PATH|URL, the same as --repo."""
    parser.add_argument("repo_path", nargs="?", metavar="PATH|URL",
                        help="the repository folder or git URL (same as --repo; default: the cwd's repository)")


def add_json(parser: argparse.ArgumentParser, help: str = "print JSON") -> None:
    parser.add_argument("--json", action="store_true", help=help)


def add_limit(parser: argparse.ArgumentParser, default: int | None, help: str) -> None:
    """`-n/--limit N`, the one name for a result count (`-k` still works, unlisted)."""
    parser.add_argument("-n", "--limit", type=positive_int, default=default, metavar="N", help=help)
    parser.add_argument("-k", dest="limit", type=positive_int, help=argparse.SUPPRESS)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def repo_target(args: argparse.Namespace) -> str | None:
    """The repository the arguments name: the positional PATH or --repo (not two different ones)."""
    path = getattr(args, "repo_path", None)
    repo = getattr(args, "repo", None)
    if path is not None and repo is not None and path != repo:
        raise UsageError(f"two repositories given: {path!r} and --repo {repo!r}",
                         "give one")
    return path if path is not None else repo


# Commands that keep running and answer many searches: they keep the vectors in memory; every
# other command answers once, from sqlite-vec, without loading them.
LONG_LIVED = frozenset({"tui", "mcp", "watch"})
# Commands that read an index: with none (or an empty one) they say so and exit 2, and create
# nothing (`status` says so and exits 1; `ask` is refused by the service itself).
# (`review` brings the index up to date itself.)
NEEDS_INDEX = frozenset({"search", "context", "map", "symbol", "callers", "callees", "similar", "embed", "export"})


def open_service(args: argparse.Namespace, repo: str | None = None) -> Service:
    """The CodeRag service for the repository the arguments name (folder or URL), or a server's
    client with the same methods (`--server`)."""
    from coderag_tui.cli.through_server import server_client
    from coderag_tui.service import CodeRag

    target = repo if repo is not None else repo_target(args)
    client = server_client(args, target)
    if client is not None:
        return client
    if getattr(args, "workspace", False) or (target and "," in target and not os.path.exists(target)):
        return open_workspace(args, target.split(",") if target else [])
    service = CodeRag.open_any(target, config=args.config, db_path=args.db,
                               branch=getattr(args, "branch", None), rev=getattr(args, "rev", None),
                               progress=progress_printer("clone"), store=store_url(args, target) or None)
    service.vectors_in_memory = service.long_lived = getattr(args, "command", None) in LONG_LIVED
    if getattr(args, "command", None) in NEEDS_INDEX:
        service.require_index()
    return service


def open_workspace(args: argparse.Namespace, targets: list[str], tree_paths: bool = False) -> WorkspaceService:
    """Several repositories on this machine as one service: `targets` (folders or git URLs), or
    with --workspace the configured list, of which `targets` then names some (by name)."""
    from coderag_tui.config import load_settings
    from coderag_tui.service import CodeRag
    from coderag_tui.workspace import Workspace
    from coderag_tui.workspace.local import WorkspaceService

    if getattr(args, "db", None):
        raise UsageError("--db names one index; several repositories each keep their own",
                         "leave --db out")
    names = [t.strip() for t in targets if t.strip()]
    if getattr(args, "workspace", False):
        listed = load_settings(None, args.config).server.repositories
        if not listed:
            raise UsageError("no workspace is configured",
                             "list its folders and git URLs in [server] repositories of the user's config, "
                             "or give them: --repo A,B")
        chosen, names = list(listed), names
    else:
        chosen, names = names, []
    store = store_url(args, None) or None
    services = [CodeRag.open_any(t, config=args.config, progress=progress_printer("clone"), store=store)
                for t in chosen]
    for service in services:
        service.vectors_in_memory = getattr(args, "command", None) in LONG_LIVED
    return WorkspaceService(Workspace(services), names, tree_paths=tree_paths)


def store_url(args: argparse.Namespace, target: str | None) -> str:
    """The store URL for a local repository: --store, else its config's `[index] store`."""
    if getattr(args, "store", None):
        return str(args.store)
    if target is not None and "://" in str(target):
        return ""
    from coderag_tui.config import load_settings

    root = Path(target).resolve() if target else None
    return load_settings(root if root is not None and root.is_dir() else None, args.config, notify=None).index.store


def piped_stdin() -> bool:
    """True when stdin is a pipe or a file: text was given to read (a terminal, /dev/null or a
    closed stdin is not)."""
    stream = sys.stdin
    if stream is None:
        return False
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError, AttributeError):  # replaced by a test runner, or closed
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def read_stdin() -> str:
    """All of stdin, decoded leniently (at most STDIN_LIMIT bytes)."""
    stream = getattr(sys.stdin, "buffer", None)
    try:
        data = stream.read(STDIN_LIMIT + 1) if stream is not None else sys.stdin.read().encode()
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read stdin: {exc}") from exc
    if len(data) > STDIN_LIMIT:
        raise UsageError(f"the piped text is over {STDIN_LIMIT // (1024 * 1024)} MB", "give less")
    return data.decode("utf-8", "replace")


def query_from(words: str | list[str] | None, what: str = "query") -> str:
    """The query of search/context/ask: the arguments, or stdin when they are `-` or absent and
    text is piped."""
    if isinstance(words, list):
        words = " ".join(words) if words else None
    if words == "-" or (words is None and piped_stdin()):
        text = read_stdin().strip()
        if not text:
            raise UsageError(f"the {what} read from stdin is empty")
        return text
    if words is None or not words.strip():
        raise UsageError(f"give a {what}", f"as an argument, or piped: echo {what} | coderag ...")
    return words


def width() -> int:
    """Columns to fit output into: the terminal's on a TTY (COLUMNS wins), else 80."""
    if sys.stdout.isatty():
        return max(40, shutil.get_terminal_size((80, 24)).columns)
    return 80


def print_result(obj: Any, as_json: bool, text: Callable[[Any], str]) -> None:
    """A command's result: JSON, or `text(obj)` fitted to the terminal's width."""
    if as_json:
        print_json(obj)
    else:
        from coderag_tui.cli.render import fit_text

        print(fit_text(text(obj), width()))


def print_json(obj: Any) -> None:
    def convert(o: Any) -> Any:
        if hasattr(o, "to_json"):
            return o.to_json()
        if hasattr(o, "__dataclass_fields__"):
            return to_dict(o)
        raise TypeError(type(o).__name__)

    json.dump(obj, sys.stdout, default=convert, indent=2)
    sys.stdout.write("\n")


def is_tty() -> bool:
    return sys.stdout.isatty()
