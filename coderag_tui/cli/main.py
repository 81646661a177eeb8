"""Dispatch, like git: a known command runs it; a repository (an existing path, a path-like
word or a URL) opens the app; any other word is an unknown command (with the closest one)."""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from typing import NoReturn

from coderag_tui import __version__
from coderag_tui.cli import base
from coderag_tui.cli.output import safe_stdout
from coderag_tui.errors import CoderagError
from coderag_tui.textsafe import safe_line


def load_commands() -> None:
    """Import every `commands_*` module of this package: each registers its commands with
    `@command`, so a new command is one file (named after its command) and nothing to list here."""
    import importlib
    import pkgutil

    from coderag_tui import cli

    for info in pkgutil.iter_modules(cli.__path__):
        if info.name.startswith("commands_"):
            importlib.import_module(f"{cli.__name__}.{info.name}")


EPILOG = f"""\
Global options ({", ".join(base.GLOBAL_VALUE_OPTIONS + base.GLOBAL_FLAGS)})
go before or after the command: `coderag --repo ../proj status` is `coderag status --repo ../proj`.
Commands that act on a repository take it as --repo PATH|URL; index, status, watch, mcp and tui
also take it as PATH. Every command that prints results takes --json.
Exit status: 0 results, 1 no results, 2 error.
"""


class Parser(argparse.ArgumentParser):
    """argparse with errors as one line (`coderag: error: ...`), like every other error."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.split(" ", 1)[1] + " " if " " in self.prog else ""
        self.exit(2, f"coderag: error: {safe_line(message)} (see `coderag {command}--help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="coderag",
        description="Ask any code repository a question, in your terminal, offline. "
        "`coderag [PATH|URL]` opens the app; `coderag COMMAND --help` for a command.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"coderag {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for cmd in base.COMMANDS.values():
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        cmd.add_arguments(p)
        base.add_common(p)
        p.set_defaults(run=cmd.run)
    return parser


def _value_options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string (of any command) that takes a value."""
    out: set[str] = set(base.GLOBAL_VALUE_OPTIONS)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out |= {o for a in sub._actions if a.nargs != 0 for o in a.option_strings}
    return out


def _command_at(argv: list[str], value_options: set[str]) -> tuple[int, bool] | None:
    """Where the first word that is not an option (or an option's value) is, and whether it
    came after `--` (then it is a path, never a command)."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return (i + 1, True) if i + 1 < len(argv) else None
        if word.startswith("-") and word != "-":
            i += 2 if word in value_options else 1
            continue
        return i, False
    return None


def _looks_like_repository(word: str) -> bool:
    """An existing path, something path-like, or a URL: what `coderag WORD` opens in the app."""
    if os.path.exists(word) or "://" in word or re.match(r"^[\w.-]+@[\w.-]+:", word):
        return True
    return word.startswith((".", "~")) or "/" in word or os.sep in word


def _unknown_command(word: str) -> int:
    names = sorted(base.COMMANDS)
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else " (see `coderag --help`)"
    print(f"coderag: error: unknown command {word!r}{hint}", file=sys.stderr)
    return 2


def _options_and_words(argv: list[str], value_options: set[str]) -> tuple[list[str], list[str]]:
    """The options (with their values) and the other words of `argv`, apart."""
    options: list[str] = []
    words: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i].startswith("-") and argv[i] not in ("-", "--"):
            take = 2 if argv[i] in value_options else 1
            options += argv[i:i + take]
            i += take
        else:
            if argv[i] != "--":
                words.append(argv[i])
            i += 1
    return options, words


def _arrange(argv: list[str], parser: argparse.ArgumentParser) -> list[str] | int:
    """The arguments in the order argparse wants (command first, its options after), or the exit
    status of an unknown command."""
    found = _command_at(argv, _value_options(parser))
    if found is None:
        if any(a in ("-h", "--help", "--version") for a in argv):
            return argv
        return ["tui", *(a for a in argv if a != "--")]
    at, quoted = found
    word, before, after = argv[at], [a for a in argv[:at] if a != "--"], argv[at + 1:]
    if word in base.COMMANDS and not quoted:
        return [word, *before, *after]
    if word == "help" and not quoted:  # `coderag help [COMMAND]`, as git has it
        return [*after[:1], "--help"] if after and after[0] in base.COMMANDS else ["--help"]
    if quoted or _looks_like_repository(word):
        options, paths = _options_and_words(after, _value_options(parser))
        return ["tui", *before, *options, "--", word, *paths]  # `coderag A B`: a workspace
    return _unknown_command(word)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    load_commands()
    parser = build_parser()
    arranged = _arrange(argv, parser)
    if isinstance(arranged, int):
        return arranged
    try:
        args = parser.parse_args(arranged)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command in ("tui", "mcp"):  # they own the terminal / speak a protocol on stdout
            return int(args.run(args) or 0)
        with safe_stdout():
            return int(args.run(args) or 0)
    except CoderagError as exc:
        print(f"coderag: error: {safe_line(exc.one_line())}", file=sys.stderr)
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
        msg = safe_line(" ".join(str(exc).split()))
        print(f"coderag: unexpected error: {type(exc).__name__}: {msg} "
              "(set CODERAG_DEBUG=1 for a traceback)", file=sys.stderr)
        return 2
