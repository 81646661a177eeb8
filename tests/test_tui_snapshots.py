"""SVG snapshots of the app's screens at 80x24 and 160x48 (pytest-textual-snapshot).

Deterministic: a fixed fixture repository, indexed for real; scripted answers and a fixed
status line (so a change in chunking does not churn every snapshot); no cursor blink.
Regenerate with `pytest tests/test_tui_snapshots.py --snapshot-update` and look at the
report before committing new baselines.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from coderag_tui.models import FileState, IndexStatus, LanguageCount, Source
from coderag_tui.tui.app import create_app
from tests.helpers.app import ScriptedAnswers, make_service

SIZES = [(80, 24), (160, 48)]


class SnapshotService(ScriptedAnswers):
    def status(self) -> IndexStatus:
        super().status()  # the real one still runs (it opens the index first)
        return IndexStatus(
            repo_root=str(self.root), db_path="index.db", schema_version=1, files=5, units=17,
            chunks=12, edges=20, vectors=12, embed_model="all-MiniLM-L6-v2",
            languages=(LanguageCount("python", 4, 16, 11), LanguageCount("markdown", 1, 1, 1)),
            skips={}, errors=0, index_bytes=0, last_update=0.0)

    def files(self) -> list[FileState]:
        """As status() says: every indexed file is embedded (no slow embedding in snapshots)."""
        return [replace(f, state="embedded") if f.state == "indexed" else f for f in super().files()]


@pytest.fixture(autouse=True)
def _steady(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)  # no blink
    monkeypatch.setenv("CODERAG_NO_LOCAL_CLIPBOARD", "1")
    monkeypatch.chdir(tmp_path)


async def settle(pilot: Pilot[Any]) -> None:
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def keys(pilot: Pilot[Any], *presses: str) -> None:
    await pilot.press(*presses)
    await settle(pilot)


async def typed(pilot: Pilot[Any], text: str) -> None:
    await pilot.press(*[{" ": "space", ".": "full_stop"}.get(ch, ch) for ch in text])
    await settle(pilot)


Script = Callable[[Pilot[Any]], Awaitable[None]]


async def start(pilot: Pilot[Any]) -> None:
    await settle(pilot)


async def file_open(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    await keys(pilot, "f2")
    await typed(pilot, "cart")
    await keys(pilot, "down", "enter")


async def answered_then_citation(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    await keys(pilot, "f3")
    await typed(pilot, "what does total return")
    await keys(pilot, "enter")
    await keys(pilot, "1")


async def answered(pilot: Pilot[Any]) -> None:
    await answered_then_citation(pilot)
    await keys(pilot, "left_square_bracket")


async def help_screen(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    await keys(pilot, "f1")


async def symbol_palette(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    await keys(pilot, "ctrl+t")
    await typed(pilot, "ta")


async def callers_list(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    await keys(pilot, "ctrl+t")
    await typed(pilot, "round_money")
    await keys(pilot, "enter", "c")


async def many_sources(pilot: Pilot[Any]) -> None:
    """Eight sources: the first three and "+5 more", the answer still in view."""
    pilot.app.service.sources = tuple(  # type: ignore[attr-defined]
        Source(n, "shop/pricing.py", n, n + 1, f"unit_{n}", n < 3) for n in range(1, 9))
    await settle(pilot)
    await keys(pilot, "f3")
    await typed(pilot, "where are prices")
    await keys(pilot, "enter")


async def find_in_file(pilot: Pilot[Any]) -> None:
    await file_open(pilot)
    await keys(pilot, "ctrl+f")
    await typed(pilot, "self")
    await keys(pilot, "enter", "n")


async def summaries_shown(pilot: Pilot[Any]) -> None:
    """Two summaries stored (as the background summarizer stores them), its progress in the
    status bar, the viewer on Cart.total: the file's and the method's summaries above the code."""
    from coderag_tui.models import Progress
    from coderag_tui.store import descriptions as store
    from coderag_tui.tui.messages import SummaryProgress

    await settle(pilot)
    db = pilot.app.service.db  # type: ignore[attr-defined]
    for kind, qual, text in (("file", "shop/cart.py", "A shopping cart: items, quantities and the total with tax."),
                             ("method", "Cart.total", "Returns the amount to pay, the subtotal with tax added.")):
        with db.transaction():
            store.put_summary(db, store.StoredSummary(store.summary_key("shop/cart.py", kind, qual), "shop/cart.py",
                                                      kind, qual, text, "llama:test", "v", "", "", False, 0.0, 0.0))
    pilot.app.screen.post_message(SummaryProgress(Progress("summarize", 120, 800, rate=3.1 / 60, eta_s=240)))
    await keys(pilot, "ctrl+t")
    await typed(pilot, "total")
    await keys(pilot, "enter")


async def zoomed_viewer(pilot: Pilot[Any]) -> None:
    """A cited source, then the zoom key: the viewer has the screen, its notes above the code."""
    await answered_then_citation(pilot)
    await keys(pilot, "z")


SCRIPTS: dict[str, Script] = {
    "start": start,
    "file_open": file_open,
    "answer": answered,
    "citation": answered_then_citation,
    "help": help_screen,
    "symbols": symbol_palette,
    "callers": callers_list,
    "many_sources": many_sources,
    "find": find_in_file,
    "summaries": summaries_shown,
    "zoomed_viewer": zoomed_viewer,
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_screen(name: str, size: tuple[int, int], snap_compare: Any, tmp_path: Path) -> None:
    service = make_service(tmp_path, SnapshotService)
    app = create_app(service, watch=False, local_clipboard=False)
    assert snap_compare(app, terminal_size=size, run_before=SCRIPTS[name])
