"""File-level ranking: a file's chunks add up, and dotted module names in a report name files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from coderag_tui.retrieval import filerank, report
from coderag_tui.service import CodeRag

_FORMATS = ["csv", "html", "latex", "json", "fixed", "basic", "tab", "ipac", "cds", "daophot"]
# every writer mentions header rows; only `rst` is named by the report, and only as a dotted name
ASCII: dict[str, str | bytes] = {
    f"pkg/io/ascii/{name}.py": f'''class {name.title()}Writer:
    """Write a table as {name}; unlike rst output, the header rows and unit rows are supported."""

    def write(self, table, header_rows=None):
        header_rows = header_rows or ["name"]
        lines = [self.header(table, row) for row in header_rows]
        return lines + [self.row(r) for r in table]

    def header(self, table, row):
        return " ".join(str(getattr(c, row)) for c in table.columns)
''' for name in _FORMATS
}
ASCII["pkg/io/ascii/rst.py"] = '''class RST:
    """Simple table."""

    def write(self, lines):
        lines = super().write(lines)
        return [lines[1]] + lines + [lines[1]]
'''
REPORT = '''Please support header rows in RestructuredText output

>>> tbl.write(sys.stdout, format="ascii.fixed_width", header_rows=["name", "unit"])
>>> tbl.write(sys.stdout, format="ascii.rst", header_rows=["name", "unit"])
TypeError: got an unexpected keyword argument 'header_rows'
'''


def test_module_paths() -> None:
    assert report.module_paths("a.b.c") == ["a/b/c.py", "a/b/c/__init__.py", "a/b.py", "a/b/__init__.py"]
    assert report.module_paths("rst") == []
    assert "ascii.rst" in report.signals(REPORT).modules


def test_a_dotted_module_name_in_a_report_finds_its_file(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag], monkeypatch: pytest.MonkeyPatch) -> None:
    service = open_service(make_repo(ASCII))
    files = [h.unit.path for h in service.search_files(REPORT, k=5)]
    assert files[0] == "pkg/io/ascii/rst.py", files
    monkeypatch.setattr(report, "MAX_MODULES", 0)  # without the signal, the words alone do not find it
    files = [h.unit.path for h in service.search_files(REPORT, k=5)]
    assert files[0] != "pkg/io/ascii/rst.py", files


def test_a_files_chunks_add_up() -> None:
    # one strong chunk in a.py against four good ones in b.py
    ranked = filerank.aggregate([("a.py", 10.0), ("b.py", 7.0), ("b.py", 6.5), ("c.py", 6.0), ("b.py", 6.0),
                                 ("b.py", 5.0)])
    assert ranked == ["b.py", "a.py", "c.py"]
    assert filerank.aggregate([("a.py", 10.0), ("b.py", 4.0), ("b.py", 4.0)]) == ["a.py", "b.py"]
