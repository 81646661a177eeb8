"""The chat: questions, answers streamed as Markdown, numbered sources under each answer.

Tokens go to a MarkdownStream (it batches fragments while a render is in progress); the
transcript follows the growing answer only while the reader is at the bottom. While the model
reads the prompt (minutes for a long one on a busy small machine) a spinner counts the seconds.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.geometry import Size
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Markdown, Static
from textual.widgets.markdown import MarkdownStream

from coderag_tui.answering.checked import UNSEEN_LABEL, check_lines
from coderag_tui.models import Source, ToolCallInfo
from coderag_tui.textsafe import safe_line, safe_text
from coderag_tui.tui.chatlog import Turn, source_line, tool_line

SOURCES_SHOWN = 3  # more would push a short window's answer out of view: "+N more" expands them


def sources_text(sources: tuple[Source, ...], invalid: tuple[str, ...] = (),
                 limit: int | None = None, absent: tuple[str, ...] = (),
                 unknown_names: tuple[str, ...] = ()) -> Text:
    """What was checked in the answer (first: it is about the text just above), then the sources."""
    text = Text()
    for label, items in check_lines(invalid, absent, unknown_names):
        unseen = label == UNSEEN_LABEL  # the lines exist: not wrong, only not what the model read
        text.append(f"{'?' if unseen else '✗'} {label}: {safe_line(items)}\n", "yellow" if unseen else "red")
    for s in sources[:limit]:
        line = source_line(s)
        text.append(f"{line}\n", "bold" if s.cited else "dim")
    if limit is not None and len(sources) > limit:
        text.append(f"+{len(sources) - limit} more (s shows them)\n", "dim italic")
    text.rstrip()
    return text


SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def ended_text(turn: Turn, again_key: str = "ctrl+g") -> str:
    """The status line of a finished answer ('' when it is complete)."""
    if turn.stopped:
        return "stopped: the answer ends where Esc stopped it"
    if turn.error:
        return f"error: {turn.error}"
    return f"answered from the cache: {again_key} asks the model again" if turn.cached else ""


class TurnView(Vertical):
    """One question and its answer."""

    def __init__(self, turn: Turn, again_key: str = "ctrl+g") -> None:
        super().__init__(classes="turn")
        self.turn = turn
        self.again_key = again_key
        self.tools_expanded = False  # the tool calls' arguments and results shown
        self._stream: MarkdownStream | None = None
        self._reading: tuple[int, float] | None = None  # prompt tokens, when reading began
        self._frame = 0
        self._timer: Timer | None = None
        self.expanded = False  # every source shown, not only the first SOURCES_SHOWN

    def compose(self) -> ComposeResult:
        yield Static(Text.assemble(("› ", "bold"), self.turn.question), classes="question")
        yield Static(self._tools_text(), classes="tools")
        yield Markdown(self.turn.answer, classes="answer")
        yield Static("", classes="status")
        yield Static(self._sources_text(), classes="sources")

    def on_mount(self) -> None:
        self.set_status(ended_text(self.turn, self.again_key) if self.turn.done else "")
        self.query_one(".sources", Static).display = bool(self.turn.sources or self.turn.invalid
                                                          or self.turn.unknown_names)
        self.query_one(".tools", Static).display = bool(self.turn.tools)

    def start_reading(self, prompt_tokens: int) -> None:
        """The model reads the prompt: the spinner shows it is at work, and for how long."""
        self._reading = (prompt_tokens, time.monotonic())
        if self._timer is None:
            self._timer = self.set_interval(0.2, self._tick)
        self._show(self.reading_text())

    def reading_text(self) -> str:
        if self._reading is None:
            return ""
        tokens, since = self._reading
        seconds = int(time.monotonic() - since)
        return f"{SPINNER[self._frame % len(SPINNER)]} reading {tokens:,} tokens of context · {seconds} s"

    def _tick(self) -> None:
        if self._reading is not None:
            self._frame += 1
            self._show(self.reading_text())

    async def append(self, text: str) -> None:
        if self._reading is not None:
            self.set_status("")
        text = safe_text(text)  # the model may repeat the escape sequences of the code it read
        self.turn.answer += text
        if self._stream is None:
            self._stream = Markdown.get_stream(self.query_one(Markdown))
        await self._stream.write(text)

    def set_status(self, text: str) -> None:
        self._reading = None  # another step took over
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._show(text)

    def _show(self, text: str) -> None:
        status = self.query_one(".status", Static)
        status.update(Text(text, "dim italic"))
        status.display = bool(text)

    def set_sources(self, sources: tuple[Source, ...], invalid: tuple[str, ...], absent: tuple[str, ...] = (),
                    unknown_names: tuple[str, ...] = ()) -> None:
        self.turn.sources, self.turn.invalid = sources, invalid
        self.turn.absent, self.turn.unknown_names = absent, unknown_names
        box = self.query_one(".sources", Static)
        box.update(self._sources_text())
        box.display = bool(sources or invalid or unknown_names)

    def add_tool(self, call: ToolCallInfo) -> None:
        """A tool call the model made: one collapsed line (ctrl+l shows its arguments and result)."""
        self.turn.tools = (*self.turn.tools, call)
        box = self.query_one(".tools", Static)
        box.update(self._tools_text())
        box.display = True

    def toggle_tools(self) -> None:
        self.tools_expanded = not self.tools_expanded
        self.query_one(".tools", Static).update(self._tools_text())

    def _tools_text(self) -> Text:
        return Text("\n".join(tool_line(c, self.tools_expanded) for c in self.turn.tools), "dim")

    def toggle_sources(self) -> None:
        self.expanded = not self.expanded
        self.query_one(".sources", Static).update(self._sources_text())

    def _sources_text(self) -> Text:
        return sources_text(self.turn.sources, self.turn.invalid, None if self.expanded else SOURCES_SHOWN,
                            self.turn.absent, self.turn.unknown_names)

    async def finish(self, error: str = "", cancelled: bool = False) -> None:
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
            if cancelled or error:
                # a stopped stream may still hold fragments it had not rendered: show them all
                await self.query_one(Markdown).update(self.turn.answer)
        self.turn.done = True
        self.turn.error = error
        self.turn.stopped = cancelled
        self.set_status(ended_text(self.turn, self.again_key))


class Transcript(VerticalScroll, can_focus=True):
    """The conversation so far (scroll with the arrow keys).

    While the reader is at the bottom, growing content and a shrinking pane (a source opened
    below it) keep it there; scrolling up stops that until the reader comes back down.
    """

    follow = True

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)  # it repaints: without it a scroll key shows nothing
        # where the scroll is going, not where its animation is: a PgUp's first frames are still
        # near the bottom, and a token arriving then would pull the reader back down
        self.follow = min(new, self.scroll_target_y) >= self.max_scroll_y - 2

    def watch_virtual_size(self, old: Size, new: Size) -> None:
        if self.follow and new.height > old.height:
            self.scroll_end(animate=False)

    def on_resize(self, event: events.Resize) -> None:
        # without this, the pane's end (the last answer's sources) went out of view or stayed in
        # it depending on whether the answer's last layout came before or after the resize
        if self.follow:
            self.scroll_end(animate=False)


class ChatPane(Vertical):
    ALLOW_MAXIMIZE = True  # the zoom key gives it the screen
    class Asked(Message):
        def __init__(self, question: str) -> None:
            super().__init__()
            self.question = question

    def __init__(self, repo_name: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.repo_name = repo_name
        self.border_title = "chat"
        self.again_key = "ctrl+g"  # the key that asks again past the cache, as the keymap says

    def compose(self) -> ComposeResult:
        with Transcript(id="transcript"):
            yield Static(self._welcome(), id="welcome")
        yield Input(placeholder="Ask about the code… (Enter)", id="question", compact=True)

    def _welcome(self) -> Text:
        return Text.assemble(
            (f"Ask anything about {self.repo_name}.", "bold"), "\n",
            ("Answers cite path:line; 1-9 open a source, [ goes back. F1 lists every key.", "dim"),
        )

    @property
    def turns(self) -> list[Turn]:
        return [view.turn for view in self.query(TurnView)]

    def views(self) -> list[TurnView]:
        return list(self.query(TurnView))

    @property
    def current(self) -> TurnView | None:
        views = self.query(TurnView)
        return views.last() if views else None

    def last_sources(self) -> tuple[Source, ...]:
        for turn in reversed(self.turns):
            if turn.sources:
                return turn.sources
        return ()

    async def start_turn(self, question: str) -> TurnView:
        transcript = self.query_one(Transcript)
        view = TurnView(Turn(question), self.again_key)
        await transcript.mount(view)
        view.set_status("thinking…")
        transcript.follow = True
        transcript.scroll_end(animate=False)
        return view

    async def clear(self) -> None:
        await self.query(TurnView).remove()
        self.query_one("#welcome").display = True

    async def load(self, turns: list[Turn]) -> None:
        await self.clear()
        if turns:
            self.query_one("#welcome").display = False
            await self.query_one(Transcript).mount_all([TurnView(t, self.again_key) for t in turns])
            self.query_one(Transcript).scroll_end(animate=False)

    def focus_question(self) -> None:
        self.query_one("#question", Input).focus()

    def focus_transcript(self) -> None:
        self.query_one(Transcript).focus()

    @on(Input.Submitted, "#question")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        question = event.value.strip()
        if question:
            event.input.value = ""
            self.query_one("#welcome").display = False
            self.post_message(self.Asked(question))
