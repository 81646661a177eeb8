"""Run a bench against another source tree's coderag_tui (a baseline checkout), with this
checkout's bench code, so both trees are measured by the same bench over the same data."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]


def rerun_with_tree(module: str, tree: Path, argv: list[str]) -> int:
    """Run `python -m module *argv` in a child process that imports coderag_tui from `tree` and
    bench from this checkout; its exit status. Paths in argv are read from the same working
    folder."""
    if sys.version_info < (3, 11):
        raise SystemExit("--code needs Python 3.11 or later (python -P)")
    if not (tree / "coderag_tui" / "__init__.py").is_file():
        raise SystemExit(f"{tree} is not a source tree with coderag_tui/")
    with tempfile.TemporaryDirectory(prefix="bench-tree-") as tmp:
        # a folder holding only this checkout's bench, ahead of the tree on the path; -P keeps
        # the working folder (and its coderag_tui) off it
        (Path(tmp) / "bench").symlink_to(BENCH, target_is_directory=True)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join((tmp, str(tree.resolve())))}
        return subprocess.run([sys.executable, "-P", "-m", module, *argv], env=env, check=False).returncode


def without_option(argv: list[str], option: str) -> list[str]:
    """argv without `option VALUE` and `option=VALUE`."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == option:
            skip = True
        elif not arg.startswith(option + "="):
            out.append(arg)
    return out
