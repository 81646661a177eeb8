"""A summary says which model wrote it wherever it is shown, and the tiny default model's are
never shown or passed on as fact: it writes none (neither asked nor in the background), and
any an index holds stay out of contexts, prompts, file notes and the MCP file summary.

Real index of a fixture repository; summaries stored as the summarizer stores them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from coderag_tui.answering.describe import describe_files
from coderag_tui.answering.providers.local import bundled_model_path
from coderag_tui.answering.summary_runner import local_summarizer
from coderag_tui.answering.toolbox import CodeRagTools
from coderag_tui.cli.commands_export import render
from coderag_tui.cli.main import main
from coderag_tui.errors import NoSummariesError
from coderag_tui.service import CodeRag
from coderag_tui.store import descriptions as store
from coderag_tui.tui.widgets.viewer import notes
from tests.helpers.summaries import FILES

TINY = "llama:SmolLM2-135M-Instruct.Q4_1.gguf"
OTHER = "llama:qwen2.5-coder-7b-instruct-q4_k_m.gguf"


def _put(service: CodeRag, path: str, kind: str, qualname: str, text: str, model: str) -> None:
    key = store.summary_key(path, kind, qualname)
    store.put_summary(service.db, store.StoredSummary(key, path, kind, qualname, text, model, "1", "", "", False,
                                                      0.0, 0.0))


def test_the_tiny_model_writes_no_summaries(make_repo: Callable[..., Path], open_service: Callable[..., CodeRag],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    if bundled_model_path() is None:
        pytest.skip("the bundled model is not installed")
    service = open_service(make_repo(FILES))  # the default model: the bundled tiny one
    with pytest.raises(NoSummariesError, match="tiny default model"):
        service.summarizer()
    assert local_summarizer(service) is None  # so the background has nothing to run it with
    service.long_lived = True
    assert service.start_summaries() is True
    assert service.summaries.wait_idle(30) and service.summaries.made == 0
    assert store.all_summaries(service.db) == []
    code = main(["summarize", "--repo", str(service.root), "--db", str(service.db_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "writes no summaries" in err


def test_a_tiny_models_summary_never_reaches_a_context_and_others_say_who_wrote_them(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> None:
    service = open_service(make_repo(FILES))
    _put(service, "app/util.py", "function", "rounded", "Makes the Flask app asynchronous.", TINY)
    _put(service, "app/util.py", "file", "app/util.py", "Wraps the whole BaseClient class.", TINY)
    _put(service, "app/core.py", "method", "Cart.total", "Sums the prices, rounded to cents.", OTHER)
    question = "Cart total rounded"
    context = service.context(question, max_tokens=3000)
    text = context.render()
    assert "asynchronous" not in text and "BaseClient" not in text  # the tiny model's guesses
    assert f"Summary (written by {OTHER}, not checked): Sums the prices, rounded to cents." in text
    util_note = next(p for p in context.pieces if p.title == "about this file" and p.path == "app/util.py")
    assert util_note.text.startswith("app/util.py: utility")  # its profile instead
    # the prompt is the context: what the model is given has no guess in it either
    from coderag_tui.answering.prompts import user_message

    assert "asynchronous" not in user_message(question, context, context.pieces, "")
    # MCP: another model reads the file summary
    tools = CodeRagTools(service)
    tools.ready.set()
    summary = tools.get_file_summary("app/util.py")
    assert "BaseClient" not in summary and "asynchronous" not in summary
    core = tools.get_file_summary("app/core.py")
    assert f"Sums the prices, rounded to cents. (written by {OTHER}, not checked)" in core


def test_shown_summaries_name_their_model(make_repo: Callable[..., Path],
                                          open_service: Callable[..., CodeRag]) -> None:
    service = open_service(make_repo(FILES))
    _put(service, "app/util.py", "function", "rounded", "Makes the Flask app asynchronous.", TINY)
    _put(service, "app/core.py", "method", "Cart.total", "Sums the prices.", OTHER)
    files = {f.path: f for f in describe_files(service.db)}
    shown = render(list(files.values()), "markdown")
    assert ("`rounded` (function, line 4): Makes the Flask app asynchronous. "
            "*(a guess by the tiny default model (SmolLM2-135M), often wrong)*") in shown
    assert f"`Cart.total` (method, line 11): Sums the prices. *(written by {OTHER}, not checked)*" in shown
    assert '"summary_model": "llama:SmolLM2-135M-Instruct.Q4_1.gguf"' in render([files["app/util.py"]], "json")
    # the app's viewer note above the code
    rounded = next(u for u in service.outline("app/util.py") if u.name == "rounded")
    note = notes(files["app/util.py"], rounded).plain
    assert "Makes the Flask app asynchronous. (a guess by the tiny default model (SmolLM2-135M), often wrong)" in note


class _Busy:
    """A stand-in summarizer (isolation): each summary keeps the thread busy for `seconds`."""

    def __init__(self, n: int, seconds: float) -> None:
        from types import SimpleNamespace

        from coderag_tui.answering.summarize import Target

        # folders: no unit, so nothing above them is due (the runner counts what a run makes)
        self.targets = [Target(f"k{i}", f"pkg{i}", "folder", f"pkg{i}", None) for i in range(n)]
        self.tree = SimpleNamespace(units={})
        self.seconds = seconds
        self.done: list[float] = []

    def queue(self, units: object, planned: bool = False) -> list[object]:
        return list(self.targets)

    def needs(self, target: object) -> bool:
        return True

    def summarize_gated(self, target: object, gate: object, stop: object) -> tuple[float, int]:
        import time

        end = time.monotonic() + self.seconds
        while time.monotonic() < end:  # work, as a model would
            pass
        self.done.append(time.monotonic())
        return (self.seconds, 0)


def test_background_summaries_work_at_most_half_the_time_and_say_so() -> None:
    import time

    from coderag_tui.answering.model_gate import ModelGate
    from coderag_tui.answering.summary_runner import BackgroundSummaries
    from coderag_tui.models import Progress
    from coderag_tui.tui.widgets.status_bar import summaries_line

    busy = _Busy(4, 0.3)
    runner = BackgroundSummaries(lambda: busy, ModelGate())  # type: ignore[arg-type, return-value]
    seen: list[Progress] = []
    runner.subscribe(seen.append)
    started = time.monotonic()
    runner.kick()
    assert runner.wait_idle(30)
    elapsed = time.monotonic() - started
    assert len(busy.done) == 4
    assert elapsed >= 2 * 4 * 0.3 * 0.95  # as long at rest as at work
    line = summaries_line(next(p for p in seen if p.phase == "summarize"))
    assert line.startswith("summaries 1/4 units (background, low priority)")
