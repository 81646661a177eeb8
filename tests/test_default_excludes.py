"""A repository whose code sits in a folder excluded by default (an npm package's `dist/`) says
how many files were left out and by which rule: discovery counts them, the index keeps the
count, `coderag index` and `coderag status` print it. Real folders, real index files."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from coderag_tui.cli.main import main
from coderag_tui.config import IndexSettings, Settings
from coderag_tui.models import Excluded
from coderag_tui.service import CodeRag
from coderag_tui.sources import discovery
from coderag_tui.sources.discovery import walk
from tests.helpers.files import npm_package


def test_discovery_counts_the_files_a_default_rule_leaves_out(tmp_path: Path) -> None:
    root = npm_package(tmp_path / "pkg")
    result = walk(root, IndexSettings())
    assert sorted(c.path for c in result.files) == ["README.md", "package.json"]
    assert result.excluded == [Excluded("dist", "dist", 12), Excluded("vendor", "vendor", 1)]
    assert result.excluded[0].line == (
        "12 files in dist/ excluded by default: set [index] default_excludes = false")

    # without the default rules the files are indexed, and nothing is reported
    plain = walk(root, IndexSettings(default_excludes=False))
    assert len([c for c in plain.files if c.path.startswith("dist/")]) == 12
    assert plain.excluded == []


def test_an_ignored_or_configured_exclude_is_not_reported(tmp_path: Path) -> None:
    root = npm_package(tmp_path / "pkg")
    (root / ".gitignore").write_text("dist/\n")
    result = walk(root, IndexSettings(exclude=("vendor/",)))
    assert result.excluded == []  # the user asked for both: no notice


def test_several_folders_of_one_rule_add_up_and_the_count_is_bounded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "mono"
    for pkg in ("a", "b", "c"):
        (root / "packages" / pkg / "build").mkdir(parents=True)
        for i in range(4):
            (root / "packages" / pkg / "build" / f"{i}.js").write_text("x\n")
    result = walk(root, IndexSettings())
    assert result.excluded == [Excluded("build", "packages/a/build", 12, 3)]
    assert result.excluded[0].line.startswith("12 files in packages/a/build/ and 2 more build/ excluded")

    monkeypatch.setattr(discovery, "COUNT_BOUND", 5)
    capped = walk(root, IndexSettings()).excluded[0]
    assert capped.capped and capped.files == 5 and capped.line.startswith("5+ files in")


def test_status_and_the_index_summary_say_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = npm_package(tmp_path / "pkg")
    db = tmp_path / "index.db"
    service = CodeRag(root, Settings(), db_path=db)
    summary = service.index()
    assert [e.rule for e in summary.excluded] == ["dist", "vendor"]
    assert service.status().excluded == summary.excluded

    # a run over a few paths (the watcher) keeps what the last full walk found
    (root / "README.md").write_text("# pkg, changed\n")
    assert service.index(only=["README.md"]).excluded == ()
    assert service.status().excluded == summary.excluded

    common = ["--repo", str(root), "--db", str(db)]
    assert main(["index", "--no-embed", *common]) == 0
    out = capsys.readouterr().out
    assert "12 files in dist/ excluded by default: set [index] default_excludes = false" in out
    assert main(["status", *common]) == 0
    out = capsys.readouterr().out
    assert "excluded    12 files in dist/ excluded by default" in out
    assert "excluded    1 file in vendor/" in out

    with_them = CodeRag(root, dataclasses.replace(Settings(), index=IndexSettings(default_excludes=False)),
                        db_path=tmp_path / "all.db")
    assert with_them.index().excluded == ()
    assert with_them.status().files == 15  # dist/ and vendor/ in; the .pyc is skipped as binary
