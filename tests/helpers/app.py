"""The app's tests: the fixture repository (written fresh, indexed for real), services with
scripted answers, and driving the app headless (`running`, `settle`, `until`, keys)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from coderag_tui.answering.answerer import StoredMessage
from coderag_tui.config import (
    EmbedSettings,
    LLMSettings,
    Settings,
    SummarySettings,
    TUISettings,
    WatchSettings,
)
from coderag_tui.models import AnswerEvent, ModelInfo, Source
from coderag_tui.service import CodeRag
from coderag_tui.tui.app import CodeRagApp, create_app
from coderag_tui.tui.screens.help import HelpScreen
from coderag_tui.tui.screens.main import MainScreen

FILES = {
    "shop/__init__.py": '"""A tiny shop."""\n',
    "shop/pricing.py": '''"""Prices and taxes."""

TAX_RATE = 0.2


def price_of(item: str) -> float:
    """The unit price of an item."""
    prices = {"apple": 0.5, "pear": 0.75}
    return prices.get(item, 1.0)


def with_tax(amount: float) -> float:
    return round_money(amount * (1 + TAX_RATE))


def round_money(amount: float) -> float:
    return round(amount, 2)
''',
    "shop/cart.py": '''"""The shopping cart."""

from shop.pricing import price_of, with_tax


class Cart:
    """Items and quantities."""

    def __init__(self) -> None:
        self.items: dict[str, int] = {}

    def add(self, item: str, qty: int = 1) -> None:
        self.items[item] = self.items.get(item, 0) + qty

    def subtotal(self) -> float:
        return sum(price_of(item) * qty for item, qty in self.items.items())

    def total(self) -> float:
        """The amount to pay, tax included."""
        return with_tax(self.subtotal())


def checkout(cart: Cart) -> str:
    return f"pay {cart.total():.2f}"
''',
    "tests/test_cart.py": '''from shop.cart import Cart, checkout


def test_total():
    cart = Cart()
    cart.add("apple", 2)
    assert cart.total() == 1.2


def test_checkout():
    cart = Cart()
    cart.add("pear")
    assert checkout(cart) == "pay 0.90"
''',
    "README.md": "# shop\n\nA tiny shop used to test coderag.\n",
}


def write_repo(root: Path) -> Path:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / ".git").mkdir(exist_ok=True)
    return root


# --------------------------------------------------------------------------- services

ANSWER_TOKENS = (
    "`Cart.total` adds the tax ",
    "to the subtotal (see `shop/cart.py:18-20`), ",
    "through `with_tax` (`shop/pricing.py:12-13`).\n\n",
    "```python\nreturn with_tax(self.subtotal())\n```\n",
)
ANSWER_SOURCES = (
    Source(1, "shop/cart.py", 18, 20, "Cart.total", True),
    Source(2, "shop/pricing.py", 12, 13, "with_tax", True),
    Source(3, "shop/pricing.py", 16, 17, "round_money", False),
)


def settings(**tui: Any) -> Settings:
    """Settings for tests: no embedding and no background summaries (no model load), no
    watcher, no looking for model servers on this machine, TUI options as given."""
    return Settings(embed=EmbedSettings(enabled=False), watch=WatchSettings(enabled=False),
                    llm=LLMSettings(discover=False), tui=TUISettings(**tui),
                    summaries=SummarySettings(background=False))


def make_service(tmp: Path, cls: type[CodeRag] = CodeRag, **tui: Any) -> CodeRag:
    repo = write_repo(tmp / "shop")
    return cls(repo, settings(**tui), db_path=tmp / "index.db")


class ScriptedAnswers(CodeRag):
    """The real service (index, symbols, graph) with scripted answers: isolates the chat UI
    from the model. `delay` slows the tokens (to cancel mid-answer)."""

    delay = 0.0
    tokens: tuple[str, ...] = ANSWER_TOKENS
    sources: tuple[Source, ...] = ANSWER_SOURCES
    questions: list[tuple[str, int | None]]
    stopped: threading.Event

    def ask(self, question: str, conversation_id: int | None = None, *, model: str | None = None,
            should_stop: Callable[[], bool] | None = None, attachment: str = "",
            fresh: bool = False) -> Iterator[AnswerEvent]:
        if "questions" not in self.__dict__:
            self.questions, self.stopped = [], threading.Event()
        self.questions.append((question, conversation_id))
        yield AnswerEvent("status", "asking the scripted model")
        try:
            for token in self.tokens:
                if should_stop is not None and should_stop():  # as the real service stops
                    self.stopped.set()
                    break
                if self.delay:
                    time.sleep(self.delay)
                yield AnswerEvent("token", token)
        except GeneratorExit:
            self.stopped.set()
            raise
        yield AnswerEvent("sources", sources=self.sources, invalid_citations=("shop/nope.py:3", "shop/cart.py:18-25"),
                          absent_citations=("shop/nope.py:3",), unknown_names=("CartManager",))
        yield AnswerEvent("done", conversation_id=conversation_id or 7)

    def model_info(self, model: str | None = None) -> ModelInfo:
        return ModelInfo("SmolLM2-135M-Instruct", "llama", "", 4096, note="tiny default model")

    def conversations(self, limit: int = 100, *, owner: str | None = None) -> list[tuple[int, str, float, int, str]]:
        return [(7, "what does Cart.total return?", 1_700_000_000.0, 1, "what does Cart.total return?")]

    def load_conversation(self, conversation_id: int) -> list[StoredMessage]:
        return [StoredMessage("user", "what does Cart.total return?", (), 1_700_000_000.0),
                StoredMessage("assistant", "The subtotal with tax (`shop/cart.py:18-20`).",
                              ANSWER_SOURCES, 1_700_000_000.0, outcome="stopped")]


class StoppableAnswers(ScriptedAnswers):
    """Scripted answers that stop the way the real service does: `should_stop` ends the
    tokens, and the retrieval's sources and the conversation's id still come. `release`
    holds the answer while the model "reads the prompt"."""

    release: threading.Event

    def ask(self, question: str, conversation_id: int | None = None, *, model: str | None = None,
            should_stop: Callable[[], bool] | None = None, attachment: str = "",
            fresh: bool = False) -> Iterator[AnswerEvent]:
        stop = should_stop or (lambda: False)
        yield AnswerEvent("status", "asking the scripted model: 1234 prompt tokens",
                          stats={"prompt_tokens": 1234.0})
        while not self.release.wait(0.02):
            if stop():
                break
        stopped = False
        for token in self.tokens:
            if stop():
                stopped = True
                break
            if self.delay:
                time.sleep(self.delay)
            yield AnswerEvent("token", token)
        yield AnswerEvent("sources", sources=self.sources)
        yield AnswerEvent("done", conversation_id=conversation_id or 7,
                          stats={"stopped": 1.0} if stopped else {})


SIZE = (80, 24)


def app_for(service: CodeRag, **options: Any) -> CodeRagApp:
    options.setdefault("watch", False)
    options.setdefault("local_clipboard", False)
    return create_app(service, **options)


@contextlib.asynccontextmanager
async def running(service: CodeRag, size: tuple[int, int] = SIZE, **options: Any
                  ) -> AsyncIterator[tuple[CodeRagApp, Pilot[Any]]]:
    """The app over `service`, run headless at `size` until its start-up work has settled."""
    app = app_for(service, **options)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        yield app, pilot


async def settle(pilot: Pilot[Any], rounds: int = 4) -> None:
    """Let workers (and the workers they start) finish, and the screen catch up."""
    for _ in range(rounds):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def until(pilot: Pilot[Any], check: Any, timeout: float = 10.0) -> None:
    """Pause until check() is true (for work that finishes on its own time)."""
    import time

    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        await pilot.pause(0.05)


def main(app: CodeRagApp) -> MainScreen:
    screen = app.screen_stack[1]
    assert isinstance(screen, MainScreen)
    return screen


def viewer_text(app: CodeRagApp) -> list[str]:
    view = main(app).code
    return [view.render_line(y).text for y in range(view.size.height)]


async def type_text(pilot: Pilot[Any], text: str) -> None:
    await pilot.press(*[{" ": "space", ".": "full_stop"}.get(ch, ch) for ch in text])


async def ask(pilot: Pilot[Any], question: str) -> None:
    await submit(pilot, question)
    await settle(pilot)


async def submit(pilot: Pilot[Any], question: str) -> None:
    """Type a question into the chat input and send it (the answer runs on)."""
    await pilot.press("f3")
    await type_text(pilot, question)
    await pilot.press("enter")


def help_text(app: CodeRagApp) -> str:
    from rich.console import Console

    screen = app.screen
    assert isinstance(screen, HelpScreen)
    console = Console(width=120, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(screen.table)
    return console.export_text()


async def open_symbol(pilot: Pilot[Any], name: str) -> None:
    await pilot.press("ctrl+t")
    await type_text(pilot, name)
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)
