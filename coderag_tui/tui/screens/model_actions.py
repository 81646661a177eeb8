"""Choosing the model that answers: the picker (its key, the palette) and the servers found on
this machine. Listing, discovery and switching run in workers: a scan or a model check never
blocks the screen."""

from __future__ import annotations

from rich.text import Text
from textual import work

from coderag_tui.tui import adapters
from coderag_tui.tui.messages import ModelChanged
from coderag_tui.tui.screens.base import MainBase
from coderag_tui.tui.screens.picker import PickerScreen


class ModelActions(MainBase):
    def action_pick_model(self) -> None:
        self.list_model_choices()

    @work(thread=True, exclusive=True, group="models", exit_on_error=False)
    def list_model_choices(self) -> None:
        choices = adapters.model_choices(self.service)
        self.app.call_from_thread(self._offer_models, choices)

    def _offer_models(self, choices: list[adapters.ModelChoice]) -> None:
        if not choices:
            self.notify("no models found: put a GGUF in models/ or start a local model server",
                        severity="warning")
            return
        # Text, not markup: model names come from files and servers
        items: list[tuple[str | Text, str | None]] = [(Text(c.label), c.choice if c.usable else None)
                                                      for c in choices]
        self.app.push_screen(PickerScreen[str]("Answer with", items), self._picked_model)

    def _picked_model(self, choice: str | None) -> None:
        if choice is not None:
            self.switch_model(choice)

    @work(thread=True, exclusive=True, group="model", exit_on_error=False)
    def switch_model(self, choice: str) -> None:
        """Select the model (errors become a notification; the model in use stays)."""
        label = adapters.select_model(self.service, choice)
        self.post_message(ModelChanged(label))
        self.app.call_from_thread(self.notify, f"answering with {label}", markup=False)

    @work(thread=True, exclusive=True, group="discover", exit_on_error=False)
    def discover_models(self) -> None:
        """Look for model servers on this machine once, at start, and say when there are some."""
        found = adapters.served_count(self.service)
        if found:
            key = adapters.key_hint(self.app, "pick_model")
            self.app.call_from_thread(
                self.notify, f"{found} model{'s' if found != 1 else ''} served on this machine: {key} to choose")
