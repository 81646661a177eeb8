"""Shared pieces of the command line: the command registry, common options, output helpers."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coderag_tui.cli.progress import progress_printer  # noqa: F401  (re-exported)
from coderag_tui.models import to_dict


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


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", metavar="PATH|URL", help="the repository (default: the one containing the cwd)")
    parser.add_argument("--config", metavar="FILE", help="a config.toml to apply on top of the others")
    parser.add_argument("--db", metavar="FILE", help="the index file (default: in the user's cache)")
    parser.add_argument("--branch", help="branch to clone (remote repositories)")
    parser.add_argument("--rev", help="commit to check out (remote repositories)")


# Commands that keep running and answer many searches: they keep the vectors in memory; every
# other command answers once, from sqlite-vec, without loading them.
LONG_LIVED = frozenset({"tui", "mcp", "watch"})


def open_service(args: argparse.Namespace, repo: str | None = None) -> Any:
    """The CodeRag service for the repository the arguments name (folder or URL)."""
    from coderag_tui.service import CodeRag

    target = repo if repo is not None else getattr(args, "repo", None)
    service = CodeRag.open_any(target, config=args.config, db_path=args.db,
                               branch=getattr(args, "branch", None), rev=getattr(args, "rev", None),
                               progress=progress_printer("clone"))
    service.vectors_in_memory = getattr(args, "command", None) in LONG_LIVED
    return service


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
