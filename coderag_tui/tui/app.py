"""The app: composes the main screen, owns the bindings' keymap, the theme and the clipboard.

`run_app(service)` runs it (the `coderag tui` command); `create_app(service, ...)` builds it
(tests inject a service and switch off background work they do not want).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.worker import Worker

from coderag_tui.contract import Service
from coderag_tui.tui.clipboard import copy_local
from coderag_tui.tui.commands import CoderagCommands
from coderag_tui.tui.keys import KEYS, check_keymap
from coderag_tui.tui.notify import report_worker_errors
from coderag_tui.tui.screens.help import HelpScreen
from coderag_tui.tui.screens.main import MainScreen
from coderag_tui.tui.threads import DaemonThreads, exit_now

DARK, LIGHT = "textual-dark", "textual-light"


class CodeRagApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "coderag"
    COMMANDS = App.COMMANDS | {CoderagCommands}
    BINDINGS = [Binding(k.keys, k.action.removeprefix("app."), k.description, show=k.show, id=k.id,
                        tooltip=k.help, priority=k.id in ("quit", "command_palette"))
                for k in KEYS if k.scope == "app"]

    def __init__(self, service: Service, *, auto_index: bool = True, watch: bool = True,
                 embed: bool = True, local_clipboard: bool = True, quit_at_once: bool = False) -> None:
        super().__init__()
        self.service = service
        self.quit_at_once = quit_at_once  # workers on daemon threads: quitting never waits for them
        self.options = {"auto_index": auto_index, "watch": watch, "embed": embed}
        self.local_clipboard = local_clipboard
        tui = service.settings.tui
        check_keymap(tui.keys)
        self.keymap: dict[str, str] = dict(tui.keys)
        self.dark_theme = tui.theme

    def on_load(self) -> None:
        if self.quit_at_once:  # before the first worker starts
            asyncio.get_running_loop().set_default_executor(DaemonThreads())

    def on_mount(self) -> None:
        self.set_keymap(self.keymap)
        if self.dark_theme in self.available_themes:
            self.theme = self.dark_theme
        else:
            self.notify(f"unknown theme {self.dark_theme!r}; using {DARK}", severity="warning")
            self.dark_theme = DARK
        self.push_screen(MainScreen(self.service, **self.options))

    def get_system_commands(self, screen: Any) -> Iterable[SystemCommand]:
        # Our own "Quit coderag" and "Zoom" entries show their keys; Textual's would be seconds.
        return (c for c in super().get_system_commands(screen) if c.title not in ("Quit", "Maximize", "Minimize"))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        report_worker_errors(self, event)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_dark(self) -> None:
        if self.current_theme.dark:
            self.dark_theme = self.theme
            self.theme = LIGHT
        else:
            self.theme = self.dark_theme if self.dark_theme != LIGHT else DARK

    def copy_text(self, text: str, what: str) -> None:
        """Copy through the terminal (OSC 52) and the local clipboard tool, if there is one."""
        self.copy_to_clipboard(text)
        lines = text.count("\n") + 1
        self.notify(f"copied {what} ({lines} line{'s' if lines != 1 else ''})")
        if self.local_clipboard:
            self._copy_local(text)

    @work(thread=True, exclusive=True, group="clipboard", exit_on_error=False)
    def _copy_local(self, text: str) -> None:
        copy_local(text)


def create_app(service: Service, **options: Any) -> CodeRagApp:
    """The app for a service (options: auto_index, watch, embed, local_clipboard, quit_at_once)."""
    return CodeRagApp(service, **options)


def run_app(service: Service, **options: Any) -> int:
    service.long_lived = True  # background work (summaries) may start: the app keeps running
    app = create_app(service, quit_at_once=True, **options)
    app.run()
    exit_now(int(app.return_code or 0))  # the terminal is back: nothing is waited for
