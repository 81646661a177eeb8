"""The command line as a new user meets it: piped answers that come as they are written, a
qualified symbol that names one definition, unknown paths and symbols said to be unknown,
paths and signatures kept on one line, and typos that get a "did you mean".

Real repositories written by each test, indexed for real; where a model answers, the real
answerer runs over a scripted provider (isolates the model).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.cli import commands_ask
from coderag_tui.cli.main import main
from coderag_tui.models import ChatMessage, ModelInfo
from coderag_tui.service import CodeRag
from tests.tui_fixtures import make_service


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- piped ask


class Pipe(io.StringIO):
    """stdout as a pipe: not a terminal; only what was flushed has reached the reader."""

    def __init__(self) -> None:
        super().__init__()
        self.read_so_far = ""

    def isatty(self) -> bool:
        return False

    def flush(self) -> None:
        super().flush()
        self.read_so_far = self.getvalue()


class LineByLine:
    """A provider writing three lines, noting before each what the reader of the pipe had
    (isolation only: retrieval, the opening and the answerer are real)."""

    name = "scripted"

    def __init__(self, pipe: Pipe) -> None:
        self.pipe = pipe
        self.seen: list[str] = []

    def context_window(self) -> int:
        return 4096

    def count_tokens(self, text: str) -> int:
        return len(text) // 4 + 1

    def stream(self, messages: list[ChatMessage], *, max_tokens: int, temperature: float,
               stop: list[str] | None = None,
               should_stop: Callable[[], bool] | None = None) -> Iterator[str]:
        for line in ("Cart.total adds the tax\n", "to the subtotal (shop/cart.py:18-20)\n", "and rounds it.\n"):
            self.seen.append(self.pipe.read_so_far)
            yield line

    def info(self) -> ModelInfo:
        return ModelInfo("scripted", "scripted", "", 4096)


def test_piped_ask_prints_the_opening_then_each_line_as_it_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = Pipe()
    model = LineByLine(pipe)

    class Service(CodeRag):
        def llm(self, name: str | None = None) -> Any:
            return model

    service = make_service(tmp_path, Service)
    service.index()
    monkeypatch.setattr(commands_ask, "open_service", lambda args: service)
    monkeypatch.setattr("sys.stdout", pipe)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["ask", "what does Cart.total return"]) == 0
    before_model, after_one, after_two = model.seen
    # the opening (what the index knows: the code that answers) is out before the model writes
    assert "shop/cart.py" in before_model and "Cart.total adds" not in before_model
    assert after_one.endswith("Cart.total adds the tax\n")
    assert after_two.endswith("to the subtotal (shop/cart.py:18-20)\n")
    out = pipe.getvalue()
    assert out.count("Cart.total adds the tax") == 1  # printed once, not again at the end
    assert "and rounds it." in out and "Sources" in out and "\x1b" not in out
