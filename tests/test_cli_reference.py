"""The README's command reference is the parser's own (generated, then checked here), and the
global options are listed wherever they are described: the README and `coderag --help`."""

from __future__ import annotations

import argparse
from pathlib import Path

from coderag_tui.cli import base
from coderag_tui.cli.main import EPILOG
from coderag_tui.cli.reference import END, START, reference, replace_block

README = Path(__file__).resolve().parent.parent / "README.md"


def _common_options() -> list[str]:
    parser = argparse.ArgumentParser()
    base.add_common(parser)
    return [max(a.option_strings, key=len) for a in parser._actions if "--help" not in a.option_strings]


def test_the_readme_block_is_the_generated_reference() -> None:
    text = README.read_text()
    assert START in text and END in text, "README.md has no generated command reference"
    block = text[text.index(START):text.index(END) + len(END)] + "\n"
    assert block == reference(), "README.md is out of date: python -m coderag_tui.cli.reference --write README.md"


def test_every_command_and_global_option_is_in_the_reference() -> None:
    from coderag_tui.cli.main import build_parser, load_commands

    load_commands()
    block = reference()
    for name in base.COMMANDS:
        assert f"| `{name}` |" in block, name
    for option in _common_options():
        assert f"| `{option}" in block, option
    build_parser()  # the parser the block came from builds


def test_the_global_options_are_the_ones_every_command_takes() -> None:
    common = _common_options()
    assert set(common) == set(base.GLOBAL_VALUE_OPTIONS + base.GLOBAL_FLAGS)
    assert {"--server", "--store", "--workspace"} <= set(common)
    for option in common:
        assert option in EPILOG, f"`coderag --help` does not name {option}"
        assert f"`{option}`" in README.read_text().split(START)[0], f"the README's Commands text does not name {option}"


def test_replace_block_keeps_what_surrounds_it() -> None:
    text = f"before\n{START}\nold\n{END}\nafter\n"
    assert replace_block(text, f"{START}\nnew\n{END}\n") == f"before\n{START}\nnew\n{END}\nafter\n"
