"""Make docs/tui-screenshot.svg: the app answering a question about a real repository.

    .venv/bin/python docs/make_screenshot.py [REPO] [--question TEXT] [--size 160x48] [--no-source]

Indexes REPO (default: this repository) into a temporary index, runs the app headless,
asks the question, waits for the answer, opens its first source (unless --no-source) and saves
the screen.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

from coderag_tui.service import CodeRag
from coderag_tui.tui.app import create_app

HERE = Path(__file__).resolve().parent


async def shoot(service: Any, question: str, size: tuple[int, int], out: Path, open_source: bool = True) -> None:
    app = create_app(service, watch=False, local_clipboard=False)
    async with app.run_test(size=size) as pilot:
        async def settle() -> None:
            for _ in range(4):
                await pilot.pause()
                await app.workers.wait_for_complete()
            await pilot.pause()

        await settle()
        await pilot.press("f3")
        await pilot.press(*[{" ": "space", "?": "question_mark", ".": "full_stop"}.get(c, c) for c in question])
        await pilot.press("enter")
        screen: Any = app.screen
        while screen.answering:
            await pilot.pause(0.5)
            turn = screen.chat.turns[-1]
            print(f"\ranswer: {len(turn.answer)} characters", end="", flush=True)
        print()
        await settle()
        print(screen.chat.turns[-1].answer[:400])
        if open_source:
            await pilot.press("1")
            await settle()
        turn = screen.chat.current  # show the question, the opening section and the answer's start
        transcript = screen.chat.query_one("#transcript")
        transcript.follow = False  # stay at the question, not at the end of the answer
        transcript.scroll_to_widget(turn, top=True, animate=False)
        for widget in app.screen.query("Input"):
            widget.cursor_blink = False  # type: ignore[attr-defined]
        await pilot.pause()
        out.write_text(app.export_screenshot(title="coderag"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo", nargs="?", default=str(HERE.parent))
    parser.add_argument("--question", default="How are the BM25 and vector results combined?")
    parser.add_argument("--size", default="160x48")
    parser.add_argument("--out", default=str(HERE / "tui-screenshot.svg"))
    parser.add_argument("--no-embed", action="store_true", help="keyword and graph retrieval only")
    parser.add_argument("--no-source", action="store_true", help="leave the first source closed")
    args = parser.parse_args()
    width, height = (int(n) for n in args.size.split("x"))
    with tempfile.TemporaryDirectory() as tmp:
        service = CodeRag.open(args.repo, db_path=Path(tmp) / "index.db")
        print(service.index().files_indexed, "files indexed", flush=True)
        if service.settings.embed.enabled and not args.no_embed:
            print(service.embed().text(), flush=True)
        if args.no_embed:
            from dataclasses import replace

            service.settings = replace(service.settings, embed=replace(service.settings.embed, enabled=False))
        asyncio.run(shoot(service, args.question, (width, height), Path(args.out), not args.no_source))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
