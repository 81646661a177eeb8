"""Commands are found, not listed: every `commands_*.py` of coderag_tui/cli is imported and
registers its commands with `@command`; each file is named after a command it registers."""

from __future__ import annotations

import pkgutil

from coderag_tui import cli
from coderag_tui.cli import base
from coderag_tui.cli.main import build_parser, load_commands


def _command_modules() -> set[str]:
    return {m.name for m in pkgutil.iter_modules(cli.__path__) if m.name.startswith("commands_")}


def test_every_command_module_is_loaded_and_named_after_one_of_its_commands() -> None:
    load_commands()
    by_module: dict[str, set[str]] = {}
    for name, cmd in base.COMMANDS.items():
        by_module.setdefault(cmd.run.__module__.rsplit(".", 1)[1], set()).add(name)
    assert set(by_module) == _command_modules()  # none left out, none from elsewhere
    for module, names in by_module.items():
        assert module.removeprefix("commands_") in names, f"{module}.py registers {sorted(names)}"


def test_export_and_models_live_in_their_own_files() -> None:
    load_commands()
    assert base.COMMANDS["export"].run.__module__ == "coderag_tui.cli.commands_export"
    assert base.COMMANDS["models"].run.__module__ == "coderag_tui.cli.commands_models"
    assert base.COMMANDS["summarize"].run.__module__ == "coderag_tui.cli.commands_summarize"


def test_the_parser_offers_every_registered_command() -> None:
    load_commands()
    parser = build_parser()
    [sub] = [a for a in parser._actions if a.dest == "command"]
    assert set(sub.choices) == set(base.COMMANDS)  # type: ignore[arg-type]
