"""Answer a question from composed context, streaming events the UI renders.

`Answerer.ask` yields AnswerEvents: `opening` (what the index knows, before the model runs),
`status` (what is happening), `token` (answer text), `tool` (a tool the model called, when it
has tools), `sources` (numbered, cited first; unverified citations apart), `done` (stats,
conversation id) or `error` (one line). It never raises into the UI.

Every provider's stream passes a repetition guard (answering/guard.py): a looping answer is
stopped, its repeated tail dropped, and it ends with a note that it was stopped; an answer cut
by the token limit says so too. The tiny bundled model answers shorter and cooler, labelled.
A remote server whose window turns out smaller than assumed gets the prompt fitted once more.

Conversations live in the index's `conversations`/`messages` tables: each turn stores the
question and the answer (with its sources as JSON, and how it ended: complete, stopped by the
user, or the error line); the next question of the same conversation gets the earlier turns as
history (fitted to the window, oldest dropped first). An answer that is stopped (`should_stop`)
or fails after retrieval still gets its sources and is stored: the code it was given exists.
The StoreBackend is used from the thread that calls `ask` (open one per thread).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from coderag_tui.answering.checked import (
    Checks,
    checks_from_json,
    checks_to_json,
    with_opening_sources,
)
from coderag_tui.answering.citations import ExistsFn, check_citations, make_exists
from coderag_tui.answering.guard import LIMIT_NOTE, REPEAT_NOTE, RepetitionGuard
from coderag_tui.answering.opening import opening_from_json, opening_to_json
from coderag_tui.answering.prompts import FittedPrompt, fit_prompt, prompt_tokens
from coderag_tui.answering.providers.base import ContextWindowError, Provider, accepts_keyword
from coderag_tui.answering.tools import tool_loop
from coderag_tui.errors import CoderagError, ModelError
from coderag_tui.models import (
    AnswerEvent,
    AnswerOpening,
    ChatMessage,
    ComposedContext,
    ContextPiece,
    Source,
    ToolCallInfo,
)
from coderag_tui.store import conversations
from coderag_tui.store.backend import StoreBackend

TITLE_CHARS = 80
TINY_TEMPERATURE = 0.1


@dataclass(frozen=True)
class Conversation:
    id: int
    title: str
    created: float
    updated: float
    messages: int = 0


STOPPED = "stopped"  # the outcome of an answer the user stopped


@dataclass(frozen=True)
class StoredMessage:
    role: str  # user or assistant
    content: str
    sources: tuple[Source, ...]
    created: float
    outcome: str = ""  # '' complete, STOPPED, else the error line
    invalid: tuple[str, ...] = ()  # citations that were flagged
    opening: AnswerOpening | None = None  # the section coderag rendered above the answer
    absent: tuple[str, ...] = ()  # of `invalid`: lines the repository does not have
    unknown_names: tuple[str, ...] = ()  # code names in the answer the index does not have
    model: str = ""  # the model that wrote the answer (when it was stored)


def _title(question: str) -> str:
    text = " ".join(question.split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "\u2026"


def _sources_from_json(text: str) -> tuple[Source, ...]:
    try:
        items = json.loads(text or "[]")
    except ValueError:
        return ()
    out: list[Source] = []
    for item in items if isinstance(items, list) else []:
        try:
            out.append(Source(**item))
        except TypeError:
            continue
    return tuple(out)


def load_messages(store: StoreBackend, conversation_id: int) -> list[StoredMessage]:
    """A stored conversation's messages, oldest first, with each answer's sources, outcome and
    opening section."""
    out: list[StoredMessage] = []
    for r in conversations.message_rows(store, conversation_id):
        checks = checks_from_json(str(r[5]))
        out.append(StoredMessage(str(r[0]), str(r[1]), _sources_from_json(str(r[2])), float(r[3]), str(r[4]),
                                 checks.invalid, opening_from_json(str(r[6] or "")), checks.absent,
                                 checks.unknown_names, checks.model))
    return out


class Answerer:
    def __init__(
        self,
        provider: Provider,
        store: StoreBackend | None = None,
        *,
        max_tokens: int = 512,
        temperature: float = 0.2,
        exists: Callable[[list[ContextPiece]], ExistsFn] | None = None,
        tools: Any = None,
        tool_steps: int = 0,
        tiny_max_tokens: int = 200,
        owner: str | None = None,
        names: Callable[[str], tuple[str, ...]] | None = None,
        in_repository: ExistsFn | None = None,
    ) -> None:
        """`exists(pieces)` builds the citation check; by default: the range lies inside what
        the pieces showed the model (see citations.make_exists). `tools` (a CodeRagTools): the
        model may call them for up to `tool_steps` rounds (see tools.py). `owner`: who asks
        on a server (see CodeRag.ask): only its own conversations continue, new ones are its.
        `names(text)`: the code names in the answer the index does not have, and
        `in_repository(path, start, end)`: whether the repository has those lines; by default
        both ask `store`'s index."""
        self.owner = owner
        self.provider = provider
        self.store = store
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.tiny_max_tokens = tiny_max_tokens  # the answer cap for the tiny bundled model
        self._exists = exists
        self.tools = tools
        self.tool_steps = tool_steps
        if store is not None and (names is None or in_repository is None):
            from coderag_tui.answering.names import unknown_names
            from coderag_tui.store import known

            reads = known.StoreNames(store)
            names = names or (lambda text: unknown_names(text, reads))
            in_repository = in_repository or (lambda path, start, end: known.lines_exist(store, path, start, end))
        self._names = names
        self._in_repository = in_repository

    # ------------------------------------------------------------------ conversations
    def list_conversations(self, limit: int = 100) -> list[Conversation]:
        if self.store is None:
            return []
        rows = conversations.conversation_rows(self.store, limit)
        return [Conversation(int(r[0]), str(r[1]), float(r[2]), float(r[3]), int(r[4])) for r in rows]

    def load_conversation(self, conversation_id: int) -> list[StoredMessage]:
        """The conversation's messages ([] for one that is not there, or not the owner's)."""
        if self.store is None or (self.owner is not None
                                  and not conversations.exists(self.store, conversation_id, self.owner)):
            return []
        return load_messages(self.store, conversation_id)

    def _history(self, conversation_id: int | None) -> list[ChatMessage]:
        if conversation_id is None or self.store is None:
            return []
        # an answer stopped before its first word, or failed, adds nothing the model could use
        return [ChatMessage(m.role, m.content) for m in self.load_conversation(conversation_id)
                if m.content.strip()]

    def _save(
        self,
        conversation_id: int | None,
        question: str,
        answer: str,
        sources: tuple[Source, ...],
        outcome: str = "",
        invalid: tuple[str, ...] = (),
        opening: AnswerOpening | None = None,
        checks: Checks | None = None,
    ) -> int:
        if self.store is None:
            return conversation_id or 0
        checks = checks or Checks(invalid)
        return conversations.save_turn(self.store, conversation_id, _title(question), question, answer,
                                       json.dumps([asdict(s) for s in sources]), outcome,
                                       checks_to_json(checks), time.time(), opening_to_json(opening),
                                       owner=self.owner or "")

    def _exists_for(self, pieces: list[ContextPiece]) -> ExistsFn:
        if self._exists is not None:
            return self._exists(pieces)
        return make_exists(pieces)

    # ------------------------------------------------------------------ asking
    def _stream(self, fitted: FittedPrompt, given: list[ContextPiece], options: dict[str, object],
                temperature: float) -> Iterator[str | ToolCallInfo]:
        """The answer's text, with the model's tool calls in between when it has tools.
        `options`: extra keywords for the provider's stream (`should_stop`)."""
        if self.tools is None or self.tool_steps <= 0:
            return self.provider.stream(
                fitted.messages, max_tokens=fitted.max_answer_tokens, temperature=temperature,
                **options,  # type: ignore[arg-type]
            )
        return tool_loop(
            self.provider, fitted.messages, self.tools, given, steps=self.tool_steps,
            prompt_tokens=fitted.prompt_tokens, max_tokens=fitted.max_answer_tokens,
            temperature=temperature,
        )

    def ask(
        self,
        question: str,
        context: ComposedContext,
        repo_map: str = "",
        conversation_id: int | None = None,
        *,
        retrieval_s: float | None = None,
        attachment: str = "",
        should_stop: Callable[[], bool] | None = None,
        use_history: bool = True,
        opening: AnswerOpening | None = None,
    ) -> Iterator[AnswerEvent]:
        """Events for one answer: `opening` (when given, before the model runs), status, token
        (the model's text, cut when it repeats itself), tool, sources, then done or error.
        `attachment`: text the user gave with the question, shown to the model with it.
        `should_stop`: polled while the model reads the prompt (by providers that can stop
        there) and between tokens; when it says so, the partial answer ends with its sources and
        a `done` event whose stats have `stopped`. `use_history`: give the model the earlier
        turns (False for a question on a new topic: they would only take room)."""
        try:
            yield from self._ask(question, context, repo_map, conversation_id, retrieval_s, attachment,
                                 should_stop, use_history, opening)
        except CoderagError as exc:
            yield AnswerEvent("error", text=exc.one_line(), conversation_id=conversation_id or 0)
        except Exception as exc:  # never raise into the UI
            line = " ".join(str(exc).split()) or type(exc).__name__
            yield AnswerEvent(
                "error",
                text=f"unexpected error while answering: {type(exc).__name__}: {line}"[:300],
                conversation_id=conversation_id or 0,
            )

    def _ask(
        self,
        question: str,
        context: ComposedContext,
        repo_map: str,
        conversation_id: int | None,
        retrieval_s: float | None,
        attachment: str = "",
        should_stop: Callable[[], bool] | None = None,
        use_history: bool = True,
        opening: AnswerOpening | None = None,
    ) -> Iterator[AnswerEvent]:
        question = question.strip()
        if not question:
            yield AnswerEvent("error", text="ask a question first")
            return
        cid = conversation_id or 0
        if conversation_id is not None and self.store is not None and not conversations.exists(
            self.store, conversation_id, self.owner):
            yield AnswerEvent("error", text=f"no conversation {conversation_id}", conversation_id=cid)
            return
        provider = self.provider
        tiny_note = str(getattr(provider, "tiny_note", "") or "")
        max_tokens, temperature = self.max_tokens, self.temperature
        if tiny_note:
            # the tiny model wanders and loops when it writes long or hot: keep it short and cool
            max_tokens = min(max_tokens, self.tiny_max_tokens)
            temperature = min(temperature, TINY_TEMPERATURE)
        if opening is not None:
            opening = replace(opening, model_note=tiny_note)
            yield AnswerEvent("opening", text=opening.render(), opening=opening, conversation_id=cid)
        yield AnswerEvent("status", text=f"preparing the prompt for {provider.name}", conversation_id=cid)
        history = self._history(conversation_id) if use_history else []
        fitted = fit_prompt(question, context, repo_map, history, provider, max_tokens, attachment)
        yield self._asking(fitted, len(context.pieces), cid)

        stop = should_stop or (lambda: False)
        options: dict[str, object] = {}
        if should_stop is not None and accepts_keyword(provider.stream, "should_stop"):
            options["should_stop"] = should_stop
        start = time.perf_counter()
        given = list(fitted.pieces)  # what the model was shown; tool results are added to it
        run = _Run()
        failure: CoderagError | None = None
        stopped = stop()
        if not stopped:
            try:
                try:
                    yield from self._generate(fitted, temperature, run, cid, given, options, stop)
                except ContextWindowError as exc:
                    learn = getattr(provider, "learn_window", None)
                    if run.produced or learn is None:
                        raise
                    # the server's window is smaller than we assumed: fit the prompt to it, once
                    learn(exc.window, exc.prompt_tokens, prompt_tokens(fitted.messages, provider.count_tokens))
                    yield AnswerEvent(
                        "status",
                        text=f"{provider.name} has a context window of {exc.window} tokens: fitting the prompt to it",
                        conversation_id=cid,
                    )
                    fitted = fit_prompt(question, context, repo_map, history, provider, max_tokens, attachment)
                    yield self._asking(fitted, len(context.pieces), cid)
                    start = time.perf_counter()
                    given = list(fitted.pieces)
                    run = _Run()
                    try:
                        yield from self._generate(fitted, temperature, run, cid, given, options, stop)
                    except ContextWindowError as again:
                        raise ModelError(
                            f"the prompt does not fit {provider.name}'s context window of {again.window} tokens",
                            f"set [llm] n_ctx = {again.window} or start the server with a larger context",
                        ) from again
            except CoderagError as exc:  # retrieval succeeded: its sources are still shown and kept
                failure = exc
            stopped = failure is None and stop()
        end = time.perf_counter()
        answer = "".join(run.parts).strip()

        note = ""
        if run.guard.stopped:
            note = REPEAT_NOTE
        elif answer and _finish_reason(provider) == "length":
            note = LIMIT_NOTE.format(tokens=fitted.max_answer_tokens)
        if note:
            yield AnswerEvent("token", text="\n\n" + note, conversation_id=cid)

        checked = check_citations(answer, given, self._exists_for(given), self._in_repository)
        answered_by = str(getattr(provider, "answered_by", "") or provider.name)
        checks = Checks(checked.invalid, checked.absent, self._unknown_names(answer), answered_by)
        sources = with_opening_sources(checked.sources, opening)
        yield AnswerEvent(
            "sources", sources=sources, invalid_citations=checked.invalid, conversation_id=cid,
            absent_citations=checks.absent, unknown_names=checks.unknown_names,
        )
        stored = f"{answer}\n\n{note}" if note and answer else (answer or note)
        outcome = failure.one_line() if failure is not None else STOPPED if stopped else ""
        cid = self._save(conversation_id, question, stored, sources, outcome, checked.invalid, opening, checks)
        if failure is not None:
            yield AnswerEvent("error", text=outcome, conversation_id=cid)
            return

        try:
            tokens = provider.count_tokens(answer) if answer else 0
        except CoderagError:
            tokens = run.chunks
        first = run.first
        ttft = (first - start) if first is not None else end - start
        gen = (end - first) if first is not None else 0.0
        stats: dict[str, float] = {
            "prompt_tokens": float(fitted.prompt_tokens),
            "ttft_s": round(ttft, 4),
            "gen_s": round(gen, 4),
            "total_s": round(end - start, 4),
            "tokens": float(tokens),
            "tokens_per_s": round(tokens / gen, 2) if gen > 0 else 0.0,
            "cited": float(sum(1 for s in checked.sources if s.cited)),
            "invalid_citations": float(len(checked.invalid)),
            "absent_citations": float(len(checks.absent)),
            "unknown_names": float(len(checks.unknown_names)),
            "stopped_repeating": float(run.guard.stopped),
            "cut_at_limit": float(note.startswith("[answer cut")),
            "max_answer_tokens": float(fitted.max_answer_tokens),
        }
        if retrieval_s is not None:
            stats["retrieval_s"] = round(retrieval_s, 4)
        if stopped:
            stats["stopped"] = 1.0
            yield AnswerEvent("done", text=f"stopped after {tokens} tokens", conversation_id=cid, stats=stats,
                              model=answered_by)
            return
        text = f"answered by {answered_by}"
        if tiny_note:
            text += " (the tiny default model)"
        failures = getattr(provider, "failures", None)
        if failures:
            text += " (after: " + "; ".join(failures) + ")"
        if not answer:
            text += ": the model returned an empty answer"
        yield AnswerEvent("done", text=text, conversation_id=cid, stats=stats, model=answered_by)

    def _unknown_names(self, answer: str) -> tuple[str, ...]:
        """The answer's code names the index does not have (none checked without an index)."""
        if self._names is None or not answer:
            return ()
        try:
            return self._names(answer)
        except Exception:  # a check that cannot run must not cost the answer
            return ()

    def _asking(self, fitted: FittedPrompt, pieces: int, cid: int) -> AnswerEvent:
        notes = []
        if fitted.history_dropped:
            notes.append(f"{fitted.history_dropped} older messages left out")
        if fitted.pieces_dropped:
            notes.append(f"{fitted.pieces_dropped} of {pieces} context pieces left out")
        note = f" ({'; '.join(notes)} to fit the context window)" if notes else ""
        return AnswerEvent(
            "status",
            text=f"asking {self.provider.name}: {fitted.prompt_tokens} prompt tokens{note}",
            conversation_id=cid,
            # the app shows "reading N tokens of context · N s" from this count while the
            # model reads the prompt (seconds to minutes on a small machine)
            stats={"prompt_tokens": float(fitted.prompt_tokens)},
        )

    def _generate(self, fitted: FittedPrompt, temperature: float, run: _Run, cid: int,
                  given: list[ContextPiece], options: dict[str, object],
                  stop: Callable[[], bool]) -> Iterator[AnswerEvent]:
        """Stream the model's text through the repetition guard (tool calls in between when it
        has tools); stop the model when it loops or the user stops it."""
        stream = self._stream(fitted, given, options, temperature)
        error: CoderagError | None = None
        try:
            for item in stream:
                if isinstance(item, ToolCallInfo):
                    yield AnswerEvent("tool", text=f"{item.name}: {item.summary}", tool=item,
                                      conversation_id=cid)
                else:
                    if run.first is None:
                        run.first = time.perf_counter()
                    run.chunks += 1
                    run.produced = True
                    shown = run.guard.feed(item)
                    if shown:
                        run.parts.append(shown)
                        yield AnswerEvent("token", text=shown, conversation_id=cid)
                    if run.guard.stopped:
                        break
                if stop():
                    break
        except CoderagError as exc:  # what the guard still holds was written: show it first
            error = exc
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()  # a stopped local model frees its cores, a remote stream its connection
        tail = run.guard.flush()
        if tail:
            run.parts.append(tail)
            yield AnswerEvent("token", text=tail, conversation_id=cid)
        if error is not None:
            raise error


@dataclass
class _Run:
    """One generation: what was shown, when the first text came, the guard that watched it."""

    parts: list[str] = field(default_factory=list)
    first: float | None = None
    chunks: int = 0
    produced: bool = False
    guard: RepetitionGuard = field(default_factory=RepetitionGuard)


def _finish_reason(provider: Provider) -> str:
    return str(getattr(provider, "finish_reason", "") or "")
