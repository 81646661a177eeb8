"""The command palette (ctrl+p) lists every action of the app, with its key."""

from __future__ import annotations

from functools import partial

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from coderag_tui.tui.keys import KEYS, KeySpec, effective_keys, plain_action

HELD_BACK = {"ask_again"}  # listed only while the main screen allows them


class CoderagCommands(Provider):
    def _keys(self, spec: KeySpec) -> str:
        keymap: dict[str, str] = getattr(self.app, "keymap", {})
        return " ".join(self.app.get_key_display(Binding(k.strip(), ""))
                        for k in effective_keys(spec, keymap).split(","))

    async def _run(self, spec: KeySpec) -> None:
        if spec.scope == "app":
            await self.app.run_action(plain_action(spec))
            return
        from coderag_tui.tui.screens.main import MainScreen

        for screen in reversed(self.app.screen_stack):
            if isinstance(screen, MainScreen):
                await screen.run_action(plain_action(spec))
                return

    def _specs(self) -> list[KeySpec]:
        from coderag_tui.tui.screens.main import MainScreen

        main = next((s for s in reversed(self.app.screen_stack) if isinstance(s, MainScreen)), None)
        # an action the main screen holds back right now (ask again, without a cached answer) is
        # not offered
        return [k for k in KEYS if k.id != "command_palette" and not (
            main is not None and k.id in HELD_BACK and not main.check_action(plain_action(k), ()))]

    async def discover(self) -> Hits:
        for spec in self._specs():
            yield DiscoveryHit(spec.help, partial(self._run, spec), help=self._keys(spec))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for spec in self._specs():
            text = f"{spec.help} ({spec.description})"
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(self._run, spec), help=self._keys(spec))
