"""Dispatch: a known command name runs that command; anything else opens the app."""

from __future__ import annotations

import argparse
import os
import sys

from coderag_tui import __version__
from coderag_tui.cli import base
from coderag_tui.errors import CoderagError


def _load_commands() -> None:
    import importlib

    for module in ("commands_index", "commands_search", "commands_ask", "commands_remote",
                   "commands_review", "commands_mcp", "commands_watch"):
        try:
            importlib.import_module(f"coderag_tui.cli.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"coderag_tui.cli.{module}":
                raise


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coderag",
        description="Ask any code repository a question, in your terminal, offline. "
        "`coderag [PATH|URL]` opens the app; `coderag COMMAND --help` for a command.",
    )
    parser.add_argument("--version", action="version", version=f"coderag {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in base.COMMANDS.values():
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        base.add_common(p)
        cmd.add_arguments(p)
        p.set_defaults(run=cmd.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _load_commands()
    if not argv or (argv[0] not in base.COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv = ["tui", *argv]
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except CoderagError as exc:
        print(f"coderag: error: {exc.one_line()}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("coderag: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the last line of defence: one line, no traceback
        from coderag_tui.store.db import clear_error

        known = clear_error(exc)  # damage SQLite found while rows were being read
        if known is not None:
            print(f"coderag: error: {known.one_line()}", file=sys.stderr)
            return 2
        if os.environ.get("CODERAG_DEBUG"):
            raise
        msg = " ".join(str(exc).split())
        print(f"coderag: unexpected error: {type(exc).__name__}: {msg} "
              "(set CODERAG_DEBUG=1 for a traceback)", file=sys.stderr)
        return 1
