"""File-level ranking: a file's chunks add up, and dotted module names in a report name files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from coderag_tui.retrieval import filerank, report
from coderag_tui.service import CodeRag
from coderag_tui.store import read

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
The fixed width writer accepts them, so I expected the other writer to take them as well.

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
    from dataclasses import replace

    from coderag_tui.config import Settings

    # the fusion's module signal (the learned ranker weighs it among its features)
    fusion = replace(Settings(), search=replace(Settings().search, ranker="fusion"))
    service = open_service(make_repo(ASCII), fusion)
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


def test_a_report_is_several_lines_of_many_words() -> None:
    assert filerank.is_report(REPORT)
    assert not filerank.is_report("How does the writer handle header rows in reStructuredText output, "
                                  "and which class formats the separator lines between the rows of a table?")
    assert not filerank.is_report("header rows\nfail")


def test_units_by_file_lists_bm25_units_by_their_files_rank(
        make_repo: Callable[..., Path], open_service: Callable[..., CodeRag]) -> None:
    service = open_service(make_repo(ASCII))
    units = read.get_units(service.db, [int(r[0]) for r in service.db.rows("SELECT id FROM units")])
    by_path = {u.path: uid for uid, u in units.items() if u.kind == "class"}
    order = [by_path["pkg/io/ascii/csv.py"], by_path["pkg/io/ascii/rst.py"], by_path["pkg/io/ascii/tab.py"]]
    ranked = filerank.units_by_file(order, units, [("pkg/io/ascii/rst.py", 3.0), ("pkg/io/ascii/csv.py", 2.0)])
    # rst.py's file ranks first; a unit whose file has no chunk among the matches comes last
    assert ranked == [order[1], order[0], order[2]]
