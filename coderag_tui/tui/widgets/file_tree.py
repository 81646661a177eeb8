"""The file tree: every file of the repository with its index state and language.

Type in the filter above the tree to narrow it (space-separated words must all appear in the
path); Down or Enter moves into the tree; Enter on a file opens it in the viewer.
"""

from __future__ import annotations

from collections import Counter
from pathlib import PurePosixPath

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.markup import escape
from textual.widgets import Input, Tree
from textual.widgets.tree import TreeNode

from coderag_tui.textsafe import safe_line
from coderag_tui.tui.adapters import FileEntry
from coderag_tui.tui.history import Location
from coderag_tui.tui.messages import OpenLocation

# A glyph per state, so the state reads without colour (NO_COLOR) too.
GLYPHS = {"pending": ("○", "dim"), "indexed": ("●", "green"), "embedded": ("◆", "cyan"),
          "error": ("✗", "red"), "skipped": ("-", "dim")}
SHORT_LANGUAGE = {"python": "py", "javascript": "js", "typescript": "ts", "tsx": "tsx",
                  "markdown": "md", "rust": "rs", "golang": "go", "csharp": "cs", "cpp": "c++",
                  "kotlin": "kt", "ruby": "rb", "shell": "sh", "bash": "sh", "yaml": "yml",
                  "gitignore": "ignore"}
EXPAND_ALL_UP_TO = 300  # files; bigger trees open only their top level


def files_line(files: list[FileEntry]) -> str:
    """The counts under the tree, counted as `status` and the status bar count them: "files"
    are the indexed ones; skipped, errors and pending follow when there are any."""
    counts = Counter(f.state for f in files)
    parts = [f"{counts['indexed'] + counts['embedded']:,} files"]
    parts += [f"{counts[state]:,} {word}" for state, word in
              (("skipped", "skipped"), ("error", "errors"), ("pending", "pending")) if counts[state]]
    return " · ".join(parts)


def matches(path: str, query: str) -> bool:
    low = path.lower()
    return all(word in low for word in query.lower().split())


class FileFilter(Input):
    BINDINGS = [Binding("down", "into_tree", "Tree", show=False)]

    def action_into_tree(self) -> None:
        self.screen.query_one(FileTree).enter_from_filter()


class FileTree(Tree[FileEntry]):
    """Directories and files; each file node's data is its FileEntry."""

    def __init__(self, root: str, **kwargs: object) -> None:
        super().__init__(root, **kwargs)  # type: ignore[arg-type]
        self.show_root = False
        self.guide_depth = 2

    def fill(self, files: list[FileEntry], expand_all: bool) -> None:
        current = self.cursor_node.data.path if self.cursor_node and self.cursor_node.data else None
        self.clear()
        dirs: dict[str, TreeNode[FileEntry]] = {"": self.root}
        for entry in files:
            parts = PurePosixPath(entry.path).parts
            parent = self.root
            for depth in range(1, len(parts)):
                key = "/".join(parts[:depth])
                node = dirs.get(key)
                if node is None:
                    node = parent.add(Text(safe_line(parts[depth - 1]) + "/"), expand=expand_all or depth == 1)
                    dirs[key] = node
                parent = node
            parent.add_leaf(self._label(parts[-1], entry), data=entry)
        self.root.expand()
        if current is not None:
            self.call_after_refresh(self.move_to_path, current)

    @staticmethod
    def _label(name: str, entry: FileEntry) -> Text:
        glyph, style = GLYPHS.get(entry.state, ("?", ""))
        label = Text.assemble((glyph, style), " ", safe_line(name))
        if entry.language:
            label.append(f" {SHORT_LANGUAGE.get(entry.language, entry.language)}", "dim")
        if entry.state == "skipped" and entry.reason:  # a skip is no error: say why, quietly
            label.append(f" {entry.reason}", "dim italic")
        return label

    def move_to_path(self, path: str) -> None:
        for line in range(self.last_line + 1):
            node = self.get_node_at_line(line)
            if node is not None and node.data is not None and node.data.path == path:
                self.move_cursor(node)
                return

    def enter_from_filter(self) -> None:
        self.focus()
        for line in range(self.last_line + 1):
            node = self.get_node_at_line(line)
            if node is not None and node.data is not None:
                self.move_cursor(node)
                break

    @on(Tree.NodeSelected)
    def _open(self, event: Tree.NodeSelected[FileEntry]) -> None:
        event.stop()
        if event.node.data is not None:
            self.post_message(OpenLocation(Location.file(event.node.data.path)))


class FilesPane(Vertical):
    """The filter input above the tree, and the counts by state in the title."""

    ALLOW_MAXIMIZE = True  # the zoom key gives it the screen

    def __init__(self, repo_name: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.repo_name = repo_name
        self.files: list[FileEntry] = []
        self.border_title = escape(safe_line(repo_name))

    def compose(self) -> ComposeResult:
        yield FileFilter(placeholder="filter files…", id="file-filter", compact=True)
        yield FileTree(self.repo_name, id="file-tree")

    def set_files(self, files: list[FileEntry]) -> None:
        self.files = files
        self.border_subtitle = files_line(files)
        self._refill()

    def _refill(self) -> None:
        query = self.query_one(FileFilter).value.strip()
        shown = [f for f in self.files if matches(f.path, query)] if query else self.files
        self.query_one(FileTree).fill(shown, expand_all=bool(query) or len(shown) <= EXPAND_ALL_UP_TO)

    @on(Input.Changed, "#file-filter")
    def _filter(self, event: Input.Changed) -> None:
        event.stop()
        self._refill()

    @on(Input.Submitted, "#file-filter")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        tree = self.query_one(FileTree)
        files = [f for f in self.files if matches(f.path, event.value)]
        if len(files) == 1:
            self.post_message(OpenLocation(Location.file(files[0].path)))
        else:
            tree.enter_from_filter()

    def focus_filter(self) -> None:
        self.query_one(FileFilter).focus()

    @property
    def visible_paths(self) -> list[str]:
        tree = self.query_one(FileTree)
        out = []
        for line in range(tree.last_line + 1):
            node = tree.get_node_at_line(line)
            if node is not None and node.data is not None:
                out.append(node.data.path)
        return out
