"""The app as a new user meets it: what the screen shows while the model reads, scrolling the
chat after an answer, zooming a pane, the conversations list, copying an answer, and asking
before indexing a folder that is not a repository.

Driven by keys through Pilot on the real service over a fixture repository indexed for real;
where a model answers, the real answerer runs over a scripted provider (isolates the model).
"""

from __future__ import annotations

import html
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.models import ChatMessage, ModelInfo
from coderag_tui.service import CodeRag
from coderag_tui.tui.app import CodeRagApp
from coderag_tui.tui.history import Location
from coderag_tui.tui.screens.picker import PickerScreen
from coderag_tui.tui.widgets.chat import Transcript, TurnView
from coderag_tui.tui.widgets.viewer import ViewerPane
from tests.helpers.app import (
    ScriptedAnswers,
    main,
    make_service,
    running,
    settle,
    until,
    viewer_text,
)

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("tui_quiet")]


class ReadingModel:
    """A provider that holds its answer until `release` is set, as a model reading a long
    prompt does (isolation only: the answerer, retrieval and the app around it are real)."""

    name = "scripted"

    def __init__(self) -> None:
        self.release = threading.Event()

    def context_window(self) -> int:
        return 4096

    def count_tokens(self, text: str) -> int:
        return len(text) // 4 + 1

    def stream(self, messages: list[ChatMessage], *, max_tokens: int, temperature: float,
               stop: list[str] | None = None,
               should_stop: Callable[[], bool] | None = None) -> Iterator[str]:
        while not self.release.wait(0.02):
            if should_stop is not None and should_stop():
                return
        yield "`Cart.total` adds the tax (`shop/cart.py:18-20`)."

    def info(self) -> ModelInfo:
        return ModelInfo("scripted", "scripted", "", 4096)


class ReadingService(CodeRag):
    model = ReadingModel()

    def llm(self, model: str | None = None) -> Any:
        return self.model


def screen_text(app: CodeRagApp) -> str:
    """The characters the terminal shows now (the last frame the app drew)."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\u00a0", " ")


# --------------------------------------------------------------------------- the model reads


async def test_the_reading_view_counts_the_prompt_tokens_and_seconds(tmp_path: Path) -> None:
    service = make_service(tmp_path, ReadingService)
    service.model = ReadingModel()
    async with running(service) as (app, pilot):
        screen = main(app)
        screen.chat.query_one("#question").value = "what does Cart.total return"  # type: ignore[attr-defined]
        await pilot.press("enter")
        view = screen.chat.current
        assert view is not None
        status = view.query_one(".status")
        await until(pilot, lambda: "reading" in str(status.render()))
        shown = str(status.render())
        assert re.search(r"reading [\d,]+ tokens of context · \d+ s", shown), shown
        service.model.release.set()
        await until(pilot, lambda: not screen.answering)
        assert "adds the tax" in view.turn.answer
        assert "reading" not in str(status.render())


# --------------------------------------------------------------------------- the chat scrolls


async def test_scroll_keys_in_the_chat_move_what_is_shown_after_an_answer(tmp_path: Path) -> None:
    service = make_service(tmp_path, ScriptedAnswers)
    service.tokens = tuple(f"line {i} of the answer\n\n" for i in range(40))  # type: ignore[attr-defined]
    async with running(service, size=(100, 30)) as (app, pilot):
        screen = main(app)
        screen.chat.query_one("#question").value = "a long answer"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: not screen.answering)
        await settle(pilot)
        transcript = screen.chat.query_one(Transcript)
        assert app.focused is transcript
        assert "line 39 of the answer" in screen_text(app)
        await pilot.press("pageup")
        await settle(pilot)
        # the transcript scrolled AND the terminal shows it (it used to scroll unseen until
        # something else repainted the screen, e.g. Tab)
        assert transcript.scroll_y < transcript.max_scroll_y
        assert "line 39 of the answer" not in screen_text(app)
        await pilot.press("end")
        await settle(pilot)
        assert "line 39 of the answer" in screen_text(app)
        assert isinstance(screen.chat.current, TurnView)


# --------------------------------------------------------------------------- opening a file


class SlowNotes(ScriptedAnswers):
    """The real service whose file descriptions (the notes above the code) wait for `release`,
    as describing and colouring a long file on a busy machine take their time."""

    release: threading.Event

    def descriptions(self, paths: Any = None) -> Any:
        self.release.wait(30)
        return super().descriptions(paths)


async def test_a_source_shows_its_lines_at_once_then_its_colours_and_notes(tmp_path: Path) -> None:
    service = make_service(tmp_path, SlowNotes)
    service.release = threading.Event()
    async with running(service) as (app, pilot):
        screen = main(app)
        screen.chat.query_one("#question").value = "what does total return"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: not screen.answering)
        await pilot.press("1")
        # the lines, the cited range and the cursor are there before the notes are ready
        await until(pilot, lambda: screen.code.document is not None)
        doc = screen.code.document
        assert doc is not None and doc.path == "shop/cart.py" and not doc.highlighted
        assert screen.code.range == (18, 20) and screen.code.line == 18
        assert any("def total" in line for line in viewer_text(app))
        service.release.set()
        await until(pilot, lambda: screen.code.document is not None and screen.code.document.highlighted)
        await settle(pilot)
        assert screen.code.document.described is not None
        assert screen.code.range == (18, 20) and screen.code.line == 18  # nothing moved
        assert "Cart.total" in str(screen.query_one("#notes").render())


# --------------------------------------------------------------------------- quitting


QUIT_SCRIPT = r'''
import sys, threading
from dataclasses import replace
from pathlib import Path
from tests.helpers.app import ScriptedAnswers, make_service
from coderag_tui.tui.app import run_app

class EndlessEmbedding(ScriptedAnswers):
    def embed(self, progress=None, should_stop=None, **kw):
        Path(sys.argv[1], "embedding").touch()
        threading.Event().wait()  # a batch that never ends (and never looks at should_stop)

service = make_service(Path(sys.argv[1]), EndlessEmbedding)
service.settings = replace(service.settings, embed=replace(service.settings.embed, enabled=True))
sys.exit(run_app(service, watch=False))
'''


def test_quitting_does_not_wait_for_background_work(tmp_path: Path) -> None:
    """ctrl+q during a batch of background work that would never end: the app gives the
    terminal back and the process ends (it used to wait for the batch, 10 s and more)."""
    import fcntl
    import os
    import pty
    import select
    import struct
    import subprocess
    import sys
    import termios
    import time

    (tmp_path / "home").mkdir()
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, "-c", QUIT_SCRIPT, str(tmp_path / "home")], stdin=slave,
                            stdout=slave, stderr=slave, env=env, close_fds=True, start_new_session=True)
    os.close(slave)
    out = b""

    def read_until(check: Callable[[], bool], limit: float) -> None:
        nonlocal out
        deadline = time.monotonic() + limit
        while not check() and time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    out += os.read(master, 65536)
                except OSError:
                    return

    try:
        read_until(lambda: (tmp_path / "home" / "embedding").exists(), 120)
        assert (tmp_path / "home" / "embedding").exists(), out[-2000:]
        os.write(master, b"\x11")  # ctrl+q
        read_until(lambda: proc.poll() is not None, 60)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            raise AssertionError("the app is still waiting for its background work") from None
        assert code == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    tail = out.rsplit(b"\x1b[?1049l", 1)[-1]  # after the app left the alternate screen
    assert re.sub(rb"\x1b\[[0-9;?]*[a-zA-Z]|\s", b"", tail) == b""


LLAMA_SCRIPT = r'''
import time
from coderag_tui.answering import ProviderOptions
from coderag_tui.answering.providers.local import LlamaProvider
from coderag_tui.config import ProviderSettings
from coderag_tui.models import ChatMessage

provider = LlamaProvider(ProviderSettings(n_ctx=2048), ProviderOptions(models_dir=None))
provider.load()
start = time.monotonic()
prompt = " ".join(f"word{i} is here" for i in range(250))
# stopped while the model reads the prompt, as quitting (or Esc) does
list(provider.stream([ChatMessage("user", prompt)], max_tokens=8, temperature=0.1,
                     should_stop=lambda: time.monotonic() - start > 0.3))
print("STOPPED")
'''


def test_llama_cpp_never_writes_to_the_terminal(smollm: Any) -> None:
    """A prompt stopped while it is read is an error in llama.cpp's log ("decode: removing
    memory module entries"): it went to stderr, onto the app's screen and the shell's."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", LLAMA_SCRIPT], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "STOPPED", done.stderr
    assert done.stderr == ""


# --------------------------------------------------------------------------- through a server


async def test_the_app_through_a_server_without_repo_shows_its_repositories(
        served: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """`coderag --server URL` with no --repo: the server's repositories at the top of the tree
    (it used to open an empty tree titled with the server's host)."""
    from coderag_tui.cli import commands_index
    from coderag_tui.cli.main import main as cli
    from coderag_tui.tui import app as app_module
    from coderag_tui.tui.app import create_app
    from coderag_tui.tui.widgets.file_tree import FilesPane
    from tests.helpers.server import READ
    opened: list[Any] = []
    monkeypatch.setenv("CODERAG_TOKEN", READ)
    monkeypatch.setattr(commands_index, "is_tty", lambda: True)
    monkeypatch.setattr(app_module, "run_app", lambda service, **kw: opened.append(service) or 0)
    assert cli(["--server", served["url"], "tui"]) == 0
    [service] = opened
    app = create_app(service, auto_index=False, watch=False, embed=False, local_clipboard=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        files = app.screen.query_one(FilesPane)
        assert files.visible_paths == ["billing/billing/invoice.py", "shop/shop/cart.py", "shop/shop/tax.py"]
        assert "Ask anything about 2 repositories" in screen_text(app)
        assert "127.0.0.1" not in str(files.border_title)
        screen = main(app)
        screen.open_location(Location.file("shop/shop/tax.py", 1, 1, 3))
        await until(pilot, lambda: screen.code.document is not None and screen.code.document.highlighted)
        assert any("return amount * 0.2" in line for line in viewer_text(app))
        assert [u.path for u in screen.code.document.outline][:1] == ["shop/shop/tax.py"]
    service.close()


# --------------------------------------------------------------------------- zoom


async def test_a_key_zooms_the_focused_pane_and_short_notes_fold_away(tmp_path: Path) -> None:
    async with running(make_service(tmp_path, ScriptedAnswers), size=(80, 24)) as (app, pilot):
        screen = main(app)
        screen.chat.query_one("#question").value = "what does total return"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: not screen.answering)
        await pilot.press("1")
        await until(pilot, lambda: screen.code.document is not None and screen.code.document.highlighted)
        await settle(pilot)
        viewer, notes = screen.query_one(ViewerPane), screen.query_one("#notes")
        short = screen.code.size.height
        assert not notes.display  # below the chat at 80x24: every row goes to the code
        assert short == viewer.content_region.height

        await pilot.press("z")  # the viewer has the focus: it takes the screen
        await settle(pilot)
        assert screen.maximized is viewer
        assert viewer.region.height >= 20 and not screen.chat.region.height
        assert notes.display and "Cart.total" in str(notes.render())
        assert screen.code.size.height >= 2 * short
        assert "Zoom" in screen_text(app) or "z" in screen_text(app)  # the footer stays

        await pilot.press("z")  # back to the layout
        await settle(pilot)
        assert screen.maximized is None and screen.chat.region.height > 0
        assert screen.code.size.height == short

        await pilot.press("f3", "ctrl+z")  # the chat, from the question (a letter would be typed)
        await settle(pilot)
        assert screen.maximized is screen.chat
        await pilot.press("escape")  # Esc is "stop the answer": the zoom stays
        await settle(pilot)
        assert screen.maximized is screen.chat


# --------------------------------------------------------------------------- copy, conversations


class AnsweringService(CodeRag):
    """The real service and answerer, the model scripted (it answers at once)."""

    def llm(self, model: str | None = None) -> Any:
        released = ReadingModel()
        released.release.set()
        return released


async def ask_and_wait(pilot: Any, app: CodeRagApp, question: str) -> None:
    screen = main(app)
    screen.chat.query_one("#question").value = question  # type: ignore[attr-defined]
    await pilot.press("f3", "enter")
    await until(pilot, lambda: not screen.answering and screen.chat.turns and screen.chat.turns[-1].done)
    await settle(pilot)


async def test_copying_an_answer_gives_plain_text_not_markdown_escapes(tmp_path: Path) -> None:
    async with running(make_service(tmp_path, AnsweringService)) as (app, pilot):
        await ask_and_wait(pilot, app, "how is the total with tax computed")
        turn = main(app).chat.turns[-1]
        assert "with\\_tax" in turn.answer  # shown as Markdown: the opening's names escaped
        await pilot.press("ctrl+y")
        copied = app.clipboard
        assert "with_tax" in copied and "\\_" not in copied and "\\[" not in copied
        assert "adds the tax (`shop/cart.py:18-20`)." in copied  # the model's text as it wrote it
        assert "Sources:" in copied


async def test_the_conversations_list_tells_apart_two_that_began_alike(tmp_path: Path) -> None:
    async with running(make_service(tmp_path, AnsweringService)) as (app, pilot):
        await ask_and_wait(pilot, app, "what does Cart.total return")
        await ask_and_wait(pilot, app, "and what calls it")
        await pilot.press("ctrl+n")
        await ask_and_wait(pilot, app, "what does Cart.total return")
        await pilot.press("ctrl+o")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, PickerScreen)
        labels = [label for label, _ in screen.items]
        assert len(labels) == 2 and labels[0] != labels[1]
        assert any("2 questions, last: and what calls it" in label for label in labels)


# --------------------------------------------------------------------------- not a repository


async def test_a_folder_outside_any_repository_is_indexed_only_when_the_user_says_so(tmp_path: Path) -> None:
    from coderag_tui.tui.screens.confirm import ConfirmScreen
    from tests.helpers.app import settings, write_repo
    folder = write_repo(tmp_path / "downloads")
    (folder / ".git").rmdir()  # a folder of files, in no git repository
    service = CodeRag(folder, settings(), db_path=tmp_path / "index.db")
    async with running(service, auto_index=True) as (app, pilot):
        assert isinstance(app.screen, ConfirmScreen)
        assert "is not in a git repository" in screen_text(app)
        await pilot.press("n")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen) and not service.has_index()
        await pilot.press("ctrl+r")  # asked for: indexed
        await until(pilot, lambda: service.has_index())

    again = CodeRag(folder, settings(), db_path=tmp_path / "index.db")  # indexed before: no question
    async with running(again, auto_index=True) as (app, pilot):
        assert not isinstance(app.screen, ConfirmScreen)


async def test_a_repository_is_indexed_without_a_question(tmp_path: Path) -> None:
    from coderag_tui.tui.screens.confirm import ConfirmScreen

    service = make_service(tmp_path)
    async with running(service, auto_index=True) as (app, pilot):
        assert not isinstance(app.screen, ConfirmScreen)
        await until(pilot, lambda: service.has_index())


async def test_the_home_folder_is_indexed_only_when_the_user_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from coderag_tui.tui.screens.confirm import ConfirmScreen

    service = make_service(tmp_path)  # a git repository (dotfiles kept in git, say)...
    monkeypatch.setenv("HOME", str(service.root))  # ...that is the home folder
    async with running(service, auto_index=True) as (app, pilot):
        assert isinstance(app.screen, ConfirmScreen)
        assert "is your home folder" in screen_text(app)
        await pilot.press("y")
        await until(pilot, lambda: service.has_index())
