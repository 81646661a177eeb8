"""Nothing a repository configures runs: `review` and `index` on a repository whose own config
(and the user's) name a textconv driver, an external diff, filter drivers, an fsmonitor, a pager
and hooks, each a script that leaves a marker."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from coderag_tui.cli.main import main
from tests.helpers.files import git_init, write_tree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _script(path: Path, marker: Path, name: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "{name} $*" >> "{marker}"\ncat\n', encoding="utf-8")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(a repository with a change to review and every git hook point armed, the marker file)."""
    root = write_tree(tmp_path / "repo", {
        "pkg/calc.py": "def add(a, b):\n    return a + b\n\n\ndef total(xs):\n    return sum(xs)\n",
        "pkg/use.py": "from pkg.calc import add\n\n\ndef twice(x):\n    return add(x, x)\n",
        "README.md": "# calc\n",
    })
    git_init(root)
    marker = tmp_path / "MARKER"
    bin_dir = tmp_path / "bin"

    def git(*args: str, config: str | None = None) -> None:
        where = ["--file", config] if config else []
        subprocess.run(["git", "-C", str(root), "config", *where, *args], check=True)

    (root / ".gitattributes").write_text("*.py diff=evil filter=evil\n*.md filter=other diff=other\n")
    for key in ("diff.evil.textconv", "diff.evil.command", "diff.other.textconv", "diff.external",
                "filter.evil.clean", "filter.evil.smudge", "filter.evil.process", "filter.other.clean",
                "filter.other.smudge", "core.fsmonitor", "core.pager", "core.editor", "sequence.editor",
                "gpg.program", "core.sshCommand"):
        git(key, _script(bin_dir / key, marker, key))
    git("filter.evil.required", "true")
    hooks = tmp_path / "hooks"
    for hook in ("post-index-change", "pre-commit", "post-checkout", "reference-transaction",
                 "fsmonitor-watchman", "pre-auto-gc"):
        _script(hooks / hook, marker, hook)
        _script(root / ".git" / "hooks" / hook, marker, hook)
    git("core.hooksPath", str(hooks))
    # the user's own configuration: an fsmonitor daemon and an external diff
    user_config = tmp_path / "gitconfig"
    git("core.fsmonitor", _script(bin_dir / "user-fsmonitor", marker, "user-fsmonitor"), config=str(user_config))
    git("diff.external", _script(bin_dir / "user-diff", marker, "user-diff"), config=str(user_config))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user_config))
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", _script(bin_dir / "env-diff", marker, "env-diff"))
    monkeypatch.setenv("GIT_PAGER", _script(bin_dir / "env-pager", marker, "env-pager"))

    (root / "pkg/calc.py").write_text("def add(a, b, c=0):\n    return a + b + c\n")
    (root / "pkg/new.py").write_text("from pkg.calc import add\n\n\ndef three():\n    return add(1, 2, 3)\n")
    (root / "README.md").write_text("# calc\n\nNow with three.\n")
    return root, marker


def test_control_plain_git_runs_the_repository_s_programs(hostile: tuple[Path, Path]) -> None:
    root, marker = hostile
    subprocess.run(["git", "-C", str(root), "diff", "HEAD"], capture_output=True, env=os.environ)
    assert marker.is_file()
    ran = marker.read_text()
    assert "filter.evil" in ran and "core.fsmonitor" in ran


def test_review_and_index_run_nothing_from_the_repository(
        hostile: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, marker = hostile
    db = tmp_path / "index.db"
    assert main(["index", str(root), "--db", str(db), "--no-embed"]) == 0
    assert main(["review", "--repo", str(root), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "add" in out and "pkg/calc.py" in out  # the review saw the real change
    assert main(["review", "--repo", str(root / "pkg"), "--db", str(db), "--json"]) == 0  # from a subfolder
    assert "`three` new.py" in capsys.readouterr().out
    assert not marker.exists(), marker.read_text()
