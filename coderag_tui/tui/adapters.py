"""What the app makes of the service's answers: rows for its lists, labels for its status line,
turns of a stored conversation. No textual import here; everything here runs in worker threads.
The service is any of the contract's (`contract.Service`); what one cannot do is in its
`capabilities`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coderag_tui.contract import INDEX, WATCH, Service, Watching
from coderag_tui.models import AnswerEvent, ModelInfo, UnitRef, WatchEvent
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


def list_files(service: Service, errors: Iterable[str] = ()) -> list[FileEntry]:
    """Every file of the repository with its index state; `errors`: "path: message" lines of
    the last index run (a file in them is in the error state, whatever the listing says)."""
    failed: dict[str, str] = {}
    for line in errors:
        path, _, message = line.partition(": ")
        failed[path] = message
    out = []
    for f in service.files():
        state = "error" if f.path in failed else f.state
        error = failed.get(f.path, "") or f.error
        out.append(FileEntry(f.path, f.language, state, error if state == "error" else "",
                             "" if state == "error" else f.reason))
    return sorted(out, key=lambda e: e.path)


def ask(service: Service, question: str, conversation_id: int | None,
        should_stop: Callable[[], bool] | None = None, fresh: bool = False) -> Iterator[AnswerEvent]:
    """Answer events for a question. `fresh`: ask the model even when the answer cache holds an
    answer."""
    yield from service.ask(question, conversation_id=conversation_id, should_stop=should_stop, fresh=fresh)


def conversations(service: Service) -> list[ConversationRow]:
    return [ConversationRow(int(cid), str(title), float(updated or 0.0), int(asked), str(last))
            for cid, title, updated, asked, last in service.conversations()]


def load_turns(service: Service, conversation_id: int) -> list[Turn]:
    """A stored conversation as question/answer turns (sources kept when stored)."""
    turns: list[Turn] = []
    for message in service.load_conversation(conversation_id):
        role, content = message.role, message.content
        if role == "user":
            turns.append(Turn(content))
        elif role == "assistant":
            if not turns or turns[-1].answer:
                turns.append(Turn(""))
            turn = turns[-1]
            # shown as it was when the answer was live: the index's opening, then the model's text
            turn.opening = message.opening.render() if message.opening is not None else ""
            turn.answer = with_opening(turn.opening, content)
            turn.sources = tuple(message.sources)
            turn.invalid = tuple(message.invalid)
            turn.absent = tuple(message.absent)
            turn.unknown_names = tuple(message.unknown_names)
            turn.model = message.model
            turn.stopped = message.outcome == "stopped"
            turn.error = "" if message.outcome in ("", "stopped") else message.outcome
            turn.done = True
    return turns


def model_label(service: Service) -> str:
    """The model in use, in a few words ("SmolLM2-135M (tiny default model)")."""
    return info_label(service.model_info())


def info_label(info: ModelInfo) -> str:
    if not info.found:
        return f"model missing: {info.name}"
    tiny = " (tiny default model)" if "tiny" in info.note.lower() else ""
    where = ""
    port = re.match(r"https?://(?:127\.0\.0\.1|\[::1\]|localhost):(\d+)", info.path_or_url)
    if port and info.provider != "llama":
        where = f" @ :{port.group(1)}"
    return f"{short_model_name(str(info.name))}{tiny}{where}"


@dataclass(frozen=True)
class ModelChoice:
    label: str  # one line for the picker
    choice: str  # the name select_model takes ("" = the configured model)
    usable: bool


def model_choices(service: Service) -> list[ModelChoice]:
    """Every model the service can answer with (the configured one first), for the picker."""
    service.served_models(refresh=True)  # a server started since the last look is listed too
    current = service.selected_model or ""
    out = []
    for i, info in enumerate(service.list_models()):
        choice = "" if i == 0 else info.choice
        mark = "● " if choice == current else "  "
        where = "configured" if i == 0 else str(info.note).split(";")[0]
        if where.startswith("tiny default model"):
            where = "bundled (tiny)"
        window = f"ctx {info.context_window:,}" if info.context_window else "ctx ?"
        name = short_model_name(re.sub(r" \(.*\)$", "", str(info.name)))  # "file.gguf (its title)"
        label = f"{mark}{name}  · {info.provider} · {window} · {where}"
        out.append(ModelChoice(label, choice, bool(info.found) and (i == 0 or bool(choice))))
    return out


def select_model(service: Service, choice: str) -> str:
    """Switch the service's model; the new status-line label."""
    return info_label(service.select_model(choice or None))


def served_count(service: Service) -> int:
    return len(service.served_models())


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


def unsure_to_index(service: Service) -> str:
    """Why indexing the service's folder without asking would be a surprise ("" when it would
    not be): it is the home folder, or no git repository holds it (a folder full of anything;
    indexing it can take long and fill the user's cache). An existing index was asked for."""
    if service.root is None or INDEX not in service.capabilities or service.has_index():
        return ""
    folder = service.root.resolve()
    if folder == Path.home().resolve():
        return f"{folder} is your home folder"
    if not any((p / ".git").exists() for p in (folder, *folder.parents)):
        return f"{folder} is not in a git repository"
    return ""


def start_watch(service: Service, on_event: Callable[[WatchEvent], None]) -> Watching | None:
    """Start the service's file watcher (it re-indexes changed files itself and reports each
    step as a WatchEvent); None when the service does not watch or watching is off."""
    if WATCH not in service.capabilities or not service.settings.watch.enabled:
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
