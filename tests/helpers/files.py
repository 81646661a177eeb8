"""Real files and git repositories for tests, written into tmp folders."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def git_init(root: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "init"], check=True, env=env)


def npm_package(root: Path, n: int = 12) -> Path:
    """The shape of an unpacked npm tarball: package.json, a README and the code in dist/."""
    (root / "dist" / "lib").mkdir(parents=True)
    (root / "package.json").write_text(json.dumps({"name": "pkg", "main": "dist/index.js"}))
    (root / "README.md").write_text("# pkg\n")
    for i in range(n):
        folder = root / "dist" / ("lib" if i % 2 else "")
        (folder / f"m{i}.js").write_text(f"export function f{i}() {{ return {i}; }}\n")
    (root / "vendor").mkdir()
    (root / "vendor" / "dep.js").write_text("module.exports = 1;\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "x.pyc").write_bytes(b"\0")
    return root
