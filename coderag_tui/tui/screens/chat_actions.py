"""Asking, streaming answers, sources, conversations, export and copy."""

from __future__ import annotations

import time
from typing import Any

from textual import on, work
from textual.worker import get_current_worker

from coderag_tui.paths import exports_dir, private_folder
from coderag_tui.tui import adapters, chatlog
from coderag_tui.tui.history import Location
from coderag_tui.tui.messages import AnswerArrived, AnswerEnded, ConversationLoaded
from coderag_tui.tui.screens.base import MainBase
from coderag_tui.tui.screens.picker import PickerScreen
from coderag_tui.tui.widgets.chat import ChatPane


class ChatActions(MainBase):
    conversation_id: int | None = None
    turn_no = 0
    answering = False
    source_index = -1
    queued: tuple[str, ...] = ()  # questions typed while an answer streams, asked in turn when it ends

    def action_back(self) -> None:
        location = self.history.back(self.current_location())
        if location is None:
            self.notify("nothing to go back to")
        else:
            self.show_location(location)

    def action_forward(self) -> None:
        location = self.history.forward(self.current_location())
        if location is None:
            self.notify("nothing to go forward to")
        else:
            self.show_location(location)

    def action_source(self, number: int) -> None:
        sources = self.chat.last_sources()
        for i, s in enumerate(sources):
            if s.number == number:
                self._open_source(i)
                return
        self.notify(f"the last answer has no source {number}" if sources else "no answer with sources yet",
                    severity="warning")

    def _open_source(self, i: int) -> None:
        s = self.chat.last_sources()[i]
        self.source_index = i
        self.open_location(Location.file(s.path, s.start_line, s.start_line, s.end_line))

    def action_next_source(self) -> None:
        self._step_source(1)

    def action_prev_source(self) -> None:
        self._step_source(-1)

    def _step_source(self, step: int) -> None:
        sources = self.chat.last_sources()
        if not sources:
            self.notify("no answer with sources yet", severity="warning")
            return
        self._open_source((self.source_index + step) % len(sources))

    # ------------------------------------------------------------------ chat
    @on(ChatPane.Asked)
    async def _asked(self, message: ChatPane.Asked) -> None:
        if self.answering:
            self.queued = (*self.queued, message.question)
            self.chat.border_subtitle = f"{len(self.queued)} queued"
            self.notify(f"queued (asked when this answer ends): {message.question}", markup=False)
            return
        await self._start_answer(message.question)

    async def _start_answer(self, question: str, fresh: bool = False) -> None:
        self.turn_no += 1
        self.answering = True
        self.source_index = -1
        self.refresh_bindings()
        self.chat.again_key = adapters.key_hint(self.app, "ask_again").lower()
        await self.chat.start_turn(question)
        self.chat.focus_transcript()
        self.ask_worker(self.turn_no, question, self.conversation_id, fresh)

    def last_cached(self) -> chatlog.Turn | None:
        """The last answer, when it came from the answer cache and is complete."""
        turns = self.chat.turns
        last = turns[-1] if turns else None
        return last if last is not None and last.cached and last.done and not self.answering else None

    async def action_ask_again(self) -> None:
        turn = self.last_cached()
        if turn is None:
            self.notify("the last answer did not come from the cache", severity="warning")
            return
        await self._start_answer(turn.question, fresh=True)

    def action_tool_calls(self) -> None:
        view = next((v for v in reversed(list(self.chat.views())) if v.turn.tools), None)
        if view is None:
            self.notify("no tool calls in this conversation", severity="warning")
            return
        view.toggle_tools()

    @work(thread=True, exclusive=True, group="ask", exit_on_error=False)
    def ask_worker(self, turn: int, question: str, conversation_id: int | None, fresh: bool = False) -> None:
        worker = get_current_worker()
        events = adapters.ask(self.service, question, conversation_id, lambda: worker.is_cancelled, fresh)
        try:
            # after a cancel the events still come (promptly: the service stops at once): the
            # sources of the retrieval that succeeded and the stored conversation's id
            for event in events:
                self.post_message(AnswerArrived(turn, event))
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
            self.post_message(AnswerEnded(turn))

    async def on_answer_arrived(self, message: AnswerArrived) -> None:
        view = self.chat.current
        if message.turn != self.turn_no or view is None:
            return  # an earlier conversation's late events
        event = message.event
        if not self.answering:  # stopped: only what completes the stopped answer still counts
            if event.kind == "sources":
                view.set_sources(event.sources, event.invalid_citations, event.absent_citations, event.unknown_names)
            elif event.kind in ("done", "error") and event.conversation_id:
                self.conversation_id = event.conversation_id
            return
        if event.cached:
            view.turn.cached = True
        if event.kind == "token":
            view.set_status("")
            await view.append(event.text)
        elif event.kind == "opening" and event.opening is not None:
            # what the index found (its ranked matches, a call path), shown before the model writes
            view.turn.opening = event.opening.render()
            await view.append(chatlog.with_opening(view.turn.opening, ""))
        elif event.kind == "tool" and event.tool is not None:
            view.add_tool(event.tool)
            view.set_status(f"tool {event.tool.name}: {event.tool.summary}")
        elif event.kind == "status":
            if "prompt_tokens" in event.stats:
                view.start_reading(int(event.stats["prompt_tokens"]))
            else:
                view.set_status(event.text)
        elif event.kind == "sources":
            view.set_sources(event.sources, event.invalid_citations, event.absent_citations, event.unknown_names)
        elif event.kind == "done":
            if event.conversation_id:
                self.conversation_id = event.conversation_id
            view.turn.model = event.model
            await self._finish(view, cancelled=bool(event.stats.get("stopped")))
        elif event.kind == "error":
            if event.conversation_id:  # the question and its sources were kept
                self.conversation_id = event.conversation_id
            self.notify(event.text, severity="error")
            await self._finish(view, error=event.text)

    async def on_answer_ended(self, message: AnswerEnded) -> None:
        view = self.chat.current
        if message.turn == self.turn_no and self.answering and view is not None:
            await self._finish(view)

    async def _finish(self, view: Any, error: str = "", cancelled: bool = False) -> None:
        self.answering = False
        await view.finish(error=error, cancelled=cancelled)
        self.refresh_bindings()  # after the turn is done: "ask again" shows for a cached answer
        if self.queued:
            question, self.queued = self.queued[0], self.queued[1:]
            self.chat.border_subtitle = f"{len(self.queued)} queued" if self.queued else ""
            self.post_message(ChatPane.Asked(question))

    async def action_cancel(self) -> None:
        view = self.chat.current
        if not self.answering or view is None:
            return
        self.workers.cancel_group(self, "ask")
        await self._finish(view, cancelled=True)
        self.notify("answer stopped")

    async def action_new_conversation(self) -> None:
        self.queued = ()  # they were asked of the conversation being left
        self.chat.border_subtitle = ""
        if self.answering:
            await self.action_cancel()
        self.turn_no += 1  # a stopped answer's late events belong to the old conversation
        self.conversation_id = None
        await self.chat.clear()
        self.chat.focus_question()

    def action_conversations(self) -> None:
        self.list_conversations()

    @work(thread=True, exclusive=True, group="conversations", exit_on_error=False)
    def list_conversations(self) -> None:
        rows = adapters.conversations(self.service)
        self.app.call_from_thread(self._offer_conversations, rows)

    def _offer_conversations(self, rows: list[adapters.ConversationRow]) -> None:
        if not rows:
            self.notify("no earlier conversations", severity="warning")
            return
        items = [(r.label(time.strftime('%Y-%m-%d %H:%M', time.localtime(r.updated))), r.id) for r in rows]
        self.app.push_screen(PickerScreen[int]("Previous conversations", list(items)), self._picked_conversation)

    def _picked_conversation(self, conversation_id: int | None) -> None:
        if conversation_id is not None:
            self.load_conversation(conversation_id)

    @work(thread=True, exclusive=True, group="conversations", exit_on_error=False)
    def load_conversation(self, conversation_id: int) -> None:
        turns = adapters.load_turns(self.service, conversation_id)
        self.post_message(ConversationLoaded(conversation_id, turns))

    async def on_conversation_loaded(self, message: ConversationLoaded) -> None:
        if self.answering:
            await self.action_cancel()
        self.turn_no += 1
        self.conversation_id = message.conversation_id
        await self.chat.load(message.turns)
        self.chat.focus_transcript()

    def action_export(self) -> None:
        turns = self.chat.turns
        if not turns:
            self.notify("nothing to export yet", severity="warning")
            return
        folder = exports_dir()
        try:
            private_folder(folder)  # questions and code: for this user alone
            path = chatlog.export_path(folder, turns)
            path.write_text(chatlog.to_markdown(turns, self.repo_name), encoding="utf-8")
        except OSError as exc:
            self.notify(f"cannot export to {folder}: {exc.strerror}", severity="error")
            return
        self.notify(f"exported to {path}")

    # ------------------------------------------------------------------ copy
    def action_copy_answer(self) -> None:
        turns = [t for t in self.chat.turns if t.answer]
        if not turns:
            self.notify("no answer to copy yet", severity="warning")
            return
        turn = turns[-1]
        text = turn.plain()  # plain text: `__call__`, not the `\_\_call\_\_` shown as Markdown
        if turn.sources:
            text += "\n\nSources:\n" + "\n".join(chatlog.source_line(s) for s in turn.sources)
        self.app.copy_text(text, "the answer")  # type: ignore[attr-defined]

    def action_copy_code(self) -> None:
        in_chat = self.focused is not None and self.chat in self.focused.ancestors_with_self
        answers = [t.answer for t in self.chat.turns if t.answer]
        block = chatlog.last_code_block(answers[-1]) if answers else None
        if (in_chat or self.code.document is None) and block is not None:
            self.app.copy_text(block, "the answer's code block")  # type: ignore[attr-defined]
            return
        text, start, end = self.code.selected_text()
        if not text and block is None:
            self.notify("no code to copy: open a file or ask a question", severity="warning")
        elif not text:
            self.app.copy_text(block, "the answer's code block")  # type: ignore[attr-defined]
        else:
            doc = self.code.document
            where = f"{doc.path}:{start}-{end}" if doc else "the code"
            self.app.copy_text(text, where)  # type: ignore[attr-defined]
