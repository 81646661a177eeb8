"""The command that opens a file at a line in the user's editor. No textual import here."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

# Editors that take `-g file:line` or `file:line` rather than `+line file`.
_GOTO = {"code": ["-g", "{path}:{line}"], "codium": ["-g", "{path}:{line}"],
         "cursor": ["-g", "{path}:{line}"], "subl": ["{path}:{line}"], "zed": ["{path}:{line}"],
         "hx": ["{path}:{line}"], "helix": ["{path}:{line}"]}


def editor_command(path: Path, line: int, env: dict[str, str] | None = None) -> list[str]:
    env = dict(os.environ) if env is None else env
    editor = env.get("VISUAL") or env.get("EDITOR") or "vi"
    argv = shlex.split(editor)
    name = Path(argv[0]).name if argv else "vi"
    template = _GOTO.get(name)
    if template is None:
        return [*argv, f"+{line}", str(path)]
    return [*argv, *(part.format(path=path, line=line) for part in template)]
