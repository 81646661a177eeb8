"""The docs are reference: each design doc keeps one table of current figures and links the
dated records in docs/figures/; nothing points at the seed documents, which are not in the
repository (a rule is stated where it applies, not cited)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DESIGN_DOCS = ["retrieval", "indexing", "answers", "summaries", "server", "tui"]
SEED = re.compile(r"\bseeds? 0\d\d\b", re.IGNORECASE)  # (a stored prompt version, seed002-1, stays)


def test_nothing_cites_a_seed_document() -> None:
    files = [p for folder in ("coderag_tui", "tests", "bench", "docs") for p in (ROOT / folder).rglob("*")
             if p.suffix in (".py", ".md", ".toml") and p.name != Path(__file__).name]
    found = [f"{p.relative_to(ROOT)}:{n}" for p in files
             for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if SEED.search(line)]
    assert not found, found


@pytest.mark.parametrize("name", DESIGN_DOCS)
def test_a_design_doc_has_one_figures_table_and_links_its_records(name: str) -> None:
    text = (ROOT / "docs" / f"{name}.md").read_text()
    assert text.count("\n## Figures\n") == 1
    figures = text.split("\n## Figures\n", 1)[1].split("\n## ", 1)[0]
    assert figures.count("| what | value | date | command |") == 1
    assert f"figures/{name}.md" in figures and (ROOT / "docs" / "figures" / f"{name}.md").is_file()
    assert "Tried, not kept\n" not in text.replace("figures/", "")  # that history is in docs/figures/
    assert "python bench/" not in text  # the scripts run as modules


@pytest.mark.parametrize("name", DESIGN_DOCS)
def test_a_figures_file_keeps_its_history_below_one_heading(name: str) -> None:
    text = (ROOT / "docs" / "figures" / f"{name}.md").read_text()
    assert text.count("\n## History\n") == 1
