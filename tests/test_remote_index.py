"""A repository given by URL: cloned, indexed, and re-indexed only where git says it changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coderag_tui.errors import RepoError
from coderag_tui.service import CodeRag

ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=ENV).stdout


@pytest.fixture
def origin(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    for i in range(20):
        (work / f"mod{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    (work / "app.py").write_text("from mod1 import f1\n\n\ndef main():\n    return f1()\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "one")
    git(work, "branch", "feature")
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    git(work, "remote", "add", "origin", str(bare))
    return work, bare


def test_url_is_cloned_indexed_and_updated_incrementally(origin, tmp_path):
    work, bare = origin
    url = f"file://{bare}"
    db = tmp_path / "remote.db"
    first = CodeRag.open_any(url, db_path=db)
    summary = first.index()
    assert summary.files_indexed == 21
    head = git(work, "rev-parse", "HEAD").strip()
    assert first.status().commit == head
    first.close()

    (work / "mod3.py").write_text("def f3():\n    return 33\n\n\ndef g3():\n    return f3()\n")
    (work / "mod4.py").unlink()
    (work / "new.py").write_text("def brand_new():\n    return 1\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "two")
    git(work, "push", "-q", "origin", "main")

    again = CodeRag.open_any(url, db_path=db)
    summary = again.index()
    assert (summary.files_indexed, summary.files_deleted) == (2, 1)
    assert summary.files_seen == 21 and summary.files_unchanged == 19  # the rest was never read
    assert [u.path for u in again.symbols("brand_new")] == ["new.py"]
    assert again.symbols("f4") == [] or all(u.name != "f4" for u in again.symbols("f4"))
    assert again.status().commit == git(work, "rev-parse", "HEAD").strip()
    again.close()


def test_cli_accepts_a_url_branch_and_rev(origin, tmp_path):
    work, bare = origin
    (work / "only_on_main.py").write_text("def later():\n    pass\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "later")
    git(work, "push", "-q", "origin", "main")
    db = str(tmp_path / "cli.db")
    out = subprocess.run([sys.executable, "-m", "coderag_tui", "index", f"file://{bare}", "--branch", "feature",
                          "--db", db, "--no-embed", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["files_indexed"] == 21


def test_bad_url_and_missing_branch_give_one_line(origin, tmp_path):
    _, bare = origin
    for args in (["index", "https://user:s3cret@bitbucket.org/"], ["index", f"file://{bare}", "--branch", "nope"],
                 ["index", f"file://{tmp_path}/missing.git"]):
        out = subprocess.run([sys.executable, "-m", "coderag_tui", *args, "--db", str(tmp_path / "x.db")],
                             capture_output=True, text=True)
        assert out.returncode == 2, out
        assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
        assert "s3cret" not in out.stderr


def test_redacted_display_name(origin):
    _, bare = origin
    with pytest.raises(RepoError):
        CodeRag.open_any("https://tok:secret@127.0.0.1:1/x/y.git")
    service = CodeRag.open_any(f"file://{bare}", branch="feature")
    assert "secret" not in service.display_name
    service.close()
