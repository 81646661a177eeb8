"""Keys: an unknown binding id is a config error, config.toml's example uses real ids, and the
command palette lists Quit once."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from coderag_tui.errors import ConfigError
from coderag_tui.tui.app import create_app
from coderag_tui.tui.keys import BY_ID
from tests.helpers.app import app_for, make_service, settle, type_text

ROOT = Path(__file__).resolve().parent.parent


def test_an_unknown_key_id_is_reported_like_an_unknown_setting(tmp_path: Path) -> None:
    service = make_service(tmp_path, keys={"symbol_search": "ctrl+t"})
    with pytest.raises(ConfigError, match=r"^config: unknown setting tui\.keys\.symbol_search$"):
        create_app(service, watch=False, local_clipboard=False)
    create_app(make_service(tmp_path / "ok", keys={"symbols": "ctrl+t", "pick_model": "f10"}))


def test_config_toml_remaps_real_ids() -> None:
    text = (ROOT / "config.toml").read_text()
    section = text.split("[tui.keys]", 1)[1]
    examples = re.findall(r"^#\s*([a-z_0-9]+)\s*=\s*\"[^\"]+\"", section, flags=re.M)
    assert examples, "config.toml shows how to remap a key"
    assert [e for e in examples if e not in BY_ID] == []


async def palette(pilot: Pilot[Any], text: str) -> None:
    """Open the command palette and type `text` into it."""
    await settle(pilot)
    await pilot.press("ctrl+p")
    await type_text(pilot, text)
    await settle(pilot)
    await pilot.pause(0.5)


@pytest.mark.anyio
@pytest.mark.usefixtures("tui_quiet")
async def test_the_palette_lists_quit_once(tmp_path: Path) -> None:
    from textual.command import CommandList, CommandPalette

    app = app_for(make_service(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        await palette(pilot, "quit")
        assert isinstance(app.screen, CommandPalette)
        options = app.screen.query_one(CommandList)
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert len([p for p in prompts if "Quit" in p]) == 1, prompts
        await pilot.press("escape")


@pytest.mark.anyio
@pytest.mark.usefixtures("tui_quiet")
async def test_the_palette_opens_the_model_picker(tmp_path: Path) -> None:
    from coderag_tui.tui.screens.picker import PickerScreen

    app = app_for(make_service(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        await palette(pilot, "choose the model")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)
        assert app.screen.items[0][1] == "", "the configured model comes first"


