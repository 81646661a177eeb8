"""Make docs/tui-model-picker.svg: the F8 model picker listing a real llama_cpp.server that this
script starts on loopback with the bundled GGUF (found by discovery, no setting).

    .venv/bin/python docs/make_picker_screenshot.py [--port 8000]

Prints the picker's lines and the status line after switching to the served model.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from coderag_tui.answering.providers.local import bundled_model_path  # noqa: E402
from coderag_tui.config import load_settings  # noqa: E402
from coderag_tui.service import CodeRag  # noqa: E402
from coderag_tui.tui.app import create_app  # noqa: E402
from tests.helpers.app import write_repo  # noqa: E402


async def shoot(service: CodeRag, out: Path) -> None:
    from textual.widgets import OptionList

    app = create_app(service, watch=False, local_clipboard=False)
    async with app.run_test(size=(110, 24)) as pilot:
        async def settle() -> None:
            for _ in range(6):
                await pilot.pause(0.5)
                await app.workers.wait_for_complete()

        await settle()
        await pilot.press("f8")
        await settle()
        screen: Any = app.screen
        for options in screen.query(OptionList):
            for i in range(options.option_count):
                print(str(options.get_option_at_index(i).prompt))
        out.write_text(app.export_screenshot(title="coderag: F8 model picker"))
        await pilot.press("down", "enter")
        await settle()
        print("status line:", str(app.screen.query_one("#model").render()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8000, help="llama-cpp-python's usual port")
    parser.add_argument("--out", default=str(HERE / "tui-model-picker.svg"))
    args = parser.parse_args()
    url = f"http://127.0.0.1:{args.port}"
    with tempfile.TemporaryDirectory() as tmp:
        log = (Path(tmp) / "server.log").open("wb")
        server = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_model_path()),
             "--host", "127.0.0.1", "--port", str(args.port), "--n_ctx", "2048"],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.5)
            base = load_settings(None, None)
            settings = replace(base, embed=replace(base.embed, enabled=False),
                               watch=replace(base.watch, enabled=False))
            service = CodeRag(write_repo(Path(tmp) / "shop"), settings, Path(tmp) / "index.db")
            asyncio.run(shoot(service, Path(args.out)))
            service.close()
        finally:
            server.terminate()
            server.wait(timeout=20)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
