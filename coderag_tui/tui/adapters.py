"""The service calls the app makes that need adapting or guarding. No textual import here.

Some service methods are still being built (ask, search, embed, conversations, model_info,
watch, files); each function here checks for its method and degrades to something useful,
so the app runs on any build of the service. Everything here runs in worker threads.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coderag_tui.models import AnswerEvent, Source, UnitRef
from coderag_tui.tui.chatlog import Turn, with_opening

STATES = ("pending", "indexed", "embedded", "error", "skipped")


@dataclass(frozen=True)
class FileEntry:
    path: str
    language: str
    state: str  # one of STATES
    error: str = ""  # what went wrong (the error state only)
    reason: str = ""  # why it was left out (the skipped state only)


@dataclass(frozen=True)
class ConversationRow:
    id: int
    title: str
    updated: float
    questions: int = 1
    last: str = ""  # the last question asked

    def label(self, when: str) -> str:
        """One line of the list: when, the first question, and how it went on."""
        line = f"{when}  {self.title}"  # (the picker shows it as plain, escaped text)
        if self.questions > 1:
            line += f"  · {self.questions} questions, last: {self.last}"
        return line


def has(service: Any, name: str) -> bool:
    return callable(getattr(service, name, None))


def list_files(service: Any, errors: Iterable[str] = (), finished: bool = False) -> list[FileEntry]:
    """Every file of the repository with its index state.

    `errors`: "path: message" lines of the last index run; `finished`: an index run has
    completed, so a discovered file without units was skipped (binary, minified...) rather than
    still pending.
    """
    failed: dict[str, str] = {}
    for line in errors:
        path, _, message = line.partition(": ")
        failed[path] = message
    if has(service, "files"):  # the service's own listing, when it has one
        out = []
        for f in service.files():
            state = str(getattr(f, "state", "indexed"))
            error = str(failed.get(f.path, "") or getattr(f, "error", ""))
            if f.path in failed:  # this run's error, not yet in the listing's state
                state = "error"
            reason = "" if state == "error" else str(getattr(f, "reason", ""))
            out.append(FileEntry(f.path, str(getattr(f, "language", "")), state,
                                 error if state == "error" else "", reason))
        return sorted(out, key=lambda e: e.path)
    from coderag_tui.parsing.languages import detect_language
    from coderag_tui.sources.discovery import walk

    status = service.status()
    embedded = status.vectors > 0 and status.vectors >= status.chunks
    out = []
    for cand in walk(service.root, service.settings.index).files:
        outline: list[UnitRef] = service.outline(cand.path)
        spec = detect_language(cand.path)
        language = outline[0].language if outline else (spec.name if spec else "")
        if cand.path in failed:
            state = "error"
        elif outline:
            state = "embedded" if embedded else "indexed"
        else:
            state = "skipped" if finished else "pending"
        out.append(FileEntry(cand.path, language, state, failed.get(cand.path, "")))
    return sorted(out, key=lambda e: e.path)


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{2,}")
_STOP = frozenset(["the", "and", "for", "how", "what", "where", "which", "does", "who", "why", "when", "with", "this", "that", "from", "into", "are", "is", "was", "its", "use", "used", "uses", "call", "calls", "called", "function", "class", "method", "file"])


def ask(service: Any, question: str, conversation_id: int | None,
        should_stop: Callable[[], bool] | None = None, fresh: bool = False) -> Iterator[AnswerEvent]:
    """Answer events for a question: the service's own answer when it can give one, else the
    best matching code (search, or symbols named in the question) as sources. `fresh`: ask the
    model even when the answer cache holds an answer."""
    if has(service, "ask"):
        if should_stop is None or "should_stop" in inspect.signature(service.ask).parameters:
            kwargs: dict[str, Any] = {} if should_stop is None else {"should_stop": should_stop}
            if fresh and "fresh" in inspect.signature(service.ask).parameters:
                kwargs["fresh"] = True
            yield from service.ask(question, conversation_id=conversation_id, **kwargs)
            return
        events = service.ask(question, conversation_id=conversation_id)
        with contextlib.closing(events):  # a service that cannot stop itself is closed
            for event in events:
                yield event
                if should_stop():
                    return
        return
    yield AnswerEvent("status", "no answering model in this build: showing the matching code")
    found: dict[tuple[str, int, int], UnitRef] = {}
    if has(service, "search"):
        for hit in service.search(question, k=8):
            u = hit.unit
            found.setdefault((u.path, hit.chunk_start or u.start_line, hit.chunk_end or u.end_line), u)
    else:
        for word in dict.fromkeys(_WORD.findall(question)):
            if word.lower() not in _STOP:
                for u in service.symbols(word, limit=3):
                    found.setdefault((u.path, u.start_line, u.end_line), u)
    ranges = list(found.items())[:9]
    if not ranges:
        yield AnswerEvent("token", "Nothing in the index matches this question.")
    else:
        lines = ["No answering model is available; the code that matches best:", ""]
        lines += [f"{n}. `{u.qualname or u.name}` ({u.kind}) at `{path}:{start}-{end}`"
                  for n, ((path, start, end), u) in enumerate(ranges, 1)]
        yield AnswerEvent("token", "\n".join(lines))
    sources = tuple(Source(n, path, start, end, u.qualname or u.name, True)
                    for n, ((path, start, end), u) in enumerate(ranges, 1))
    yield AnswerEvent("sources", sources=sources)
    yield AnswerEvent("done", conversation_id=conversation_id or 0)


def conversations(service: Any) -> list[ConversationRow]:
    if not has(service, "conversations"):
        return []
    rows = []
    for item in service.conversations():
        if isinstance(item, tuple):
            cid, title, updated = item[0], item[1], item[2]
            questions, last = (int(item[3]), str(item[4])) if len(item) >= 5 else (1, "")
        else:
            cid, title, updated = item.id, item.title, getattr(item, "updated", 0.0)
            questions, last = 1, ""
        rows.append(ConversationRow(int(cid), str(title), float(updated or 0.0), questions, last))
    return rows


def load_turns(service: Any, conversation_id: int) -> list[Turn]:
    """A stored conversation as question/answer turns (sources kept when stored)."""
    if not has(service, "load_conversation"):
        return []
    turns: list[Turn] = []
    for message in service.load_conversation(conversation_id):
        role, content = message.role, message.content
        if role == "user":
            turns.append(Turn(content))
        elif role == "assistant":
            if not turns or turns[-1].answer:
                turns.append(Turn(""))
            turn = turns[-1]
            opening = getattr(message, "opening", None)
            # shown as it was when the answer was live: the index's opening, then the model's text
            turn.opening = opening.render() if opening is not None else ""
            turn.answer = with_opening(turn.opening, content)
            turn.sources = tuple(getattr(message, "sources", ()) or ())
            turn.invalid = tuple(getattr(message, "invalid", ()) or ())
            turn.absent = tuple(getattr(message, "absent", ()) or ())
            turn.unknown_names = tuple(getattr(message, "unknown_names", ()) or ())
            turn.model = str(getattr(message, "model", "") or "")
            outcome = str(getattr(message, "outcome", "") or "")
            turn.stopped = outcome == "stopped"
            turn.error = "" if outcome in ("", "stopped") else outcome
            turn.done = True
    return turns


def model_label(service: Any) -> str:
    """The model in use, in a few words ("SmolLM2-135M (tiny default model)")."""
    if not has(service, "model_info"):
        return "model: unknown"
    return info_label(service.model_info())


def info_label(info: Any) -> str:
    if not getattr(info, "found", True):
        return f"model missing: {info.name}"
    note = str(getattr(info, "note", "") or "")
    tiny = " (tiny default model)" if "tiny" in note.lower() else ""
    where = ""
    port = re.match(r"https?://(?:127\.0\.0\.1|\[::1\]|localhost):(\d+)", str(getattr(info, "path_or_url", "")))
    if port and getattr(info, "provider", "") != "llama":
        where = f" @ :{port.group(1)}"
    return f"{short_model_name(str(info.name))}{tiny}{where}"


@dataclass(frozen=True)
class ModelChoice:
    label: str  # one line for the picker
    choice: str  # the name select_model takes ("" = the configured model)
    usable: bool


def model_choices(service: Any) -> list[ModelChoice]:
    """Every model the service can answer with (the configured one first), for the picker."""
    if not has(service, "list_models"):
        return []
    if has(service, "served_models"):
        service.served_models(refresh=True)  # a server started since the last look is listed too
    current = getattr(service, "selected_model", None) or ""
    out = []
    for i, info in enumerate(service.list_models()):
        choice = "" if i == 0 else str(getattr(info, "choice", "") or "")
        mark = "● " if choice == current else "  "
        where = "configured" if i == 0 else str(info.note).split(";")[0]
        if where.startswith("tiny default model"):
            where = "bundled (tiny)"
        window = f"ctx {info.context_window:,}" if info.context_window else "ctx ?"
        name = short_model_name(re.sub(r" \(.*\)$", "", str(info.name)))  # "file.gguf (its title)"
        label = f"{mark}{name}  · {info.provider} · {window} · {where}"
        out.append(ModelChoice(label, choice, bool(info.found) and (i == 0 or bool(choice))))
    return out


def select_model(service: Any, choice: str) -> str:
    """Switch the service's model; the new status-line label."""
    return info_label(service.select_model(choice or None))


def served_count(service: Any) -> int:
    return len(service.served_models()) if has(service, "served_models") else 0


def key_hint(app: Any, binding_id: str) -> str:
    """The first key of a binding, as the user set it ("F8")."""
    from coderag_tui.tui.keys import BY_ID, effective_keys

    keys = effective_keys(BY_ID[binding_id], getattr(app, "keymap", {}))
    return keys.split(",")[0].strip().upper()


def short_model_name(name: str) -> str:
    """"SmolLM2-135M-Instruct.Q4_1.gguf" -> "SmolLM2-135M" (the status line is narrow)."""
    name = name.rsplit("/", 1)[-1]
    name = re.sub(r"\.gguf$", "", name, flags=re.I)
    name = re.sub(r"[.-](Q\d\w*|F16|F32|BF16)$", "", name, flags=re.I)
    return re.sub(r"-(Instruct|Chat|it)$", "", name, flags=re.I) or name


def unsure_to_index(service: Any) -> str:
    """Why indexing the service's folder without asking would be a surprise ("" when it would
    not be): it is the home folder, or no git repository holds it (a folder full of anything;
    indexing it can take long and fill the user's cache). An existing index was asked for."""
    root = getattr(service, "root", None)
    if root is None or not has(service, "has_index") or service.has_index():
        return ""
    folder = Path(str(root)).resolve()
    if folder == Path.home().resolve():
        return f"{folder} is your home folder"
    if not any((p / ".git").exists() for p in (folder, *folder.parents)):
        return f"{folder} is not in a git repository"
    return ""


def start_watch(service: Any, on_event: Callable[[Any], object]) -> Any | None:
    """Start the service's file watcher (it re-indexes changed files itself and reports each
    step as a WatchEvent); None when the service has none or it is disabled."""
    if not has(service, "watch") or not service.settings.watch.enabled:
        return None
    return service.watch(on_event)


def unit_at(outline: list[UnitRef], line: int) -> UnitRef | None:
    """The innermost unit (not the file itself) of an outline containing a line."""
    best: UnitRef | None = None
    for u in outline:
        if u.kind != "file" and u.start_line <= line <= u.end_line and (
            best is None or u.end_line - u.start_line <= best.end_line - best.start_line
        ):
            best = u
    return best
