"""Every action of the app, with its binding id, default keys and description.

One table feeds the bindings (remappable through `[tui] keys` in config.toml: binding id ->
keys, e.g. `callers = "ctrl+k"`), the help screen and the command palette. Plain data: no
textual import here.
"""

from __future__ import annotations

from dataclasses import dataclass

from coderag_tui.errors import ConfigError


@dataclass(frozen=True)
class KeySpec:
    id: str  # the binding id users remap
    keys: str  # default keys, comma separated (Textual key names)
    action: str  # the action run on the main screen (or the app, for scope "app")
    description: str  # short: shown in the footer
    help: str  # one line: shown in the help screen and the command palette
    group: str
    scope: str = "main"  # app, main (the main screen) or viewer (while the code viewer has focus)
    show: bool = False  # shown in the footer


def _sources() -> list[KeySpec]:
    return [
        KeySpec(f"source_{n}", str(n), f"source({n})", f"Source {n}",
                f"Open source {n} of the last answer in the viewer", "Answers")
        for n in range(1, 10)
    ]


KEYS: tuple[KeySpec, ...] = (
    # General
    KeySpec("help", "f1,question_mark", "app.help", "Help", "Show every key", "General", "app", True),
    KeySpec("command_palette", "ctrl+p", "app.command_palette", "Commands",
            "Search every command", "General", "app"),
    KeySpec("toggle_theme", "f9", "app.toggle_dark", "Theme", "Switch between dark and light",
            "General", "app"),
    KeySpec("quit", "ctrl+q", "app.quit", "Quit", "Quit coderag", "General", "app"),
    # Panes
    KeySpec("focus_files", "f2,slash", "focus_files", "Files", "Filter the file tree (type to narrow)",
            "Panes", show=True),
    KeySpec("focus_question", "f3", "focus_question", "Ask", "Type a question", "Panes", show=True),
    KeySpec("focus_viewer", "f4", "focus_viewer", "Code", "Move into the code viewer", "Panes", show=True),
    KeySpec("toggle_viewer", "f5", "toggle_viewer", "Viewer", "Show or hide the code viewer", "Panes"),
    KeySpec("viewer_layout", "f6", "viewer_layout", "Layout", "Put the viewer right or below",
            "Panes"),
    KeySpec("toggle_files", "f7", "toggle_files", "Tree", "Show or hide the file tree", "Panes"),
    KeySpec("zoom", "z,ctrl+z", "zoom", "Zoom", "Give the focused pane the whole screen, or give it back",
            "Panes"),
    KeySpec("symbols", "ctrl+t", "symbols", "Symbols", "Find a definition by name", "Panes", show=True),
    KeySpec("reindex", "ctrl+r", "reindex", "Re-index", "Bring the index up to date now", "Panes"),
    # Answers
    KeySpec("cancel", "escape", "cancel", "Cancel", "Stop the answer being written", "Answers", show=True),
    KeySpec("new_conversation", "ctrl+n", "new_conversation", "New chat", "Start a new conversation",
            "Answers", show=True),
    KeySpec("conversations", "ctrl+o", "conversations", "History",
            "Open a previous conversation", "Answers"),
    KeySpec("export", "ctrl+s", "export", "Export",
            "Save the conversation as Markdown in your data folder", "Answers"),
    KeySpec("copy_answer", "ctrl+y", "copy_answer", "Copy answer",
            "Copy the last answer (OSC 52, or the local clipboard)", "Answers"),
    KeySpec("copy_code", "y", "copy_code", "Copy code",
            "Copy the viewer's range, or the last code block of the answer", "Answers"),
    *_sources(),
    KeySpec("more_sources", "s", "more_sources", "All sources",
            "Show every source of the last answer, or only the first 3", "Answers"),
    KeySpec("next_source", "n", "next_source", "Next source", "Open the next source", "Answers"),
    KeySpec("prev_source", "p,N", "prev_source", "Prev source", "Open the previous source", "Answers"),
    KeySpec("back", "left_square_bracket,alt+left", "back", "Back",
            "Go back (like a browser)", "Answers"),
    KeySpec("forward", "right_square_bracket,alt+right", "forward", "Forward",
            "Go forward again", "Answers"),
    KeySpec("tool_calls", "ctrl+l", "tool_calls", "Tool calls",
            "Expand or collapse the last answer's tool calls", "Answers"),
    KeySpec("ask_again", "ctrl+g", "ask_again", "Ask again",
            "Ask the model again, past the answer cache (after a cached answer)", "Answers",
            show=True),
    KeySpec("pick_model", "f8", "pick_model", "Model",
            "Choose the model that answers (GGUF, local server, remote)", "Answers"),
    # Code viewer (while it has focus; also from the command palette)
    KeySpec("definition", "d,f12", "screen.definition", "Definition",
            "Go to the definition of the identifier under the cursor", "Code", "viewer", True),
    KeySpec("callers", "c", "screen.callers", "Callers", "List who calls the unit under the cursor",
            "Code", "viewer", True),
    KeySpec("callees", "o", "screen.callees", "Callees", "List what the unit under the cursor calls",
            "Code", "viewer", True),
    KeySpec("tests", "t", "screen.tests", "Tests", "List the tests of the unit under the cursor",
            "Code", "viewer", True),
    KeySpec("find", "slash,ctrl+f", "find", "Find",
            "Find in the open file (Enter or n: next match, N: previous, Esc closes)", "Code", "viewer"),
    KeySpec("editor", "e", "screen.editor", "Edit", "Open the file at this line in $EDITOR",
            "Code", "viewer", True),
)

BY_ID: dict[str, KeySpec] = {k.id: k for k in KEYS}


def effective_keys(spec: KeySpec, keymap: dict[str, str]) -> str:
    """The keys a binding answers to, after the user's keymap."""
    return keymap.get(spec.id, spec.keys)


def plain_action(spec: KeySpec) -> str:
    """The action name without its namespace ("screen.callers" -> "callers")."""
    return spec.action.split(".", 1)[-1]


def check_keymap(keymap: dict[str, str]) -> None:
    """Raise a ConfigError for an id that names no binding, as for an unknown setting (a typo
    would otherwise be ignored without a word)."""
    unknown = sorted(set(keymap) - set(BY_ID))
    if unknown:
        raise ConfigError(f"config: unknown setting tui.keys.{unknown[0]}",
                          "the ids are in docs/tui.md and the help screen (F1), e.g. callers, symbols")
