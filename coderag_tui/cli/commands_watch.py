"""watch: index once, then keep the index current as files change (one line per batch)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from coderag_tui.cli.base import (
    add_json,
    add_path,
    arguments,
    command,
    open_service,
    progress_printer,
)
from coderag_tui.contract import INDEX
from coderag_tui.models import Progress, WatchEvent, to_dict
from coderag_tui.progress_text import background_summaries_text
from coderag_tui.textsafe import safe_text


def _watch_args(p: argparse.ArgumentParser) -> None:
    add_path(p)
    p.add_argument("--debounce-ms", type=int, default=None,
                   help="wait this long after the last change of a burst before re-indexing (default: [watch] "
                        "debounce_ms; a save of a few files waits [watch] save_debounce_ms, at most this)")
    p.add_argument("--no-initial", action="store_true", help="do not bring the index up to date first")
    p.add_argument("--no-embed", action="store_true", help="do not refresh vectors (structure and keywords only)")
    p.add_argument("--no-summaries", action="store_true",
                   help="do not make model summaries in the background ([summaries] background)")
    add_json(p, "print every event as one JSON line")


@command("watch", "index once, then re-index changed files as they are saved (Ctrl+C stops)")
@arguments(_watch_args)
def cmd_watch(args: argparse.Namespace) -> int:
    service = open_service(args)
    bar = progress_printer("index")
    shown = [0.0]

    def summaries(p: Progress) -> None:
        """One line a minute at most (and at the end): the summaries go on for minutes."""
        now = time.monotonic()
        if p.phase == "done" or now - shown[0] >= 60:
            shown[0] = now
            print(background_summaries_text(p), file=sys.stderr, flush=True)

    def show(event: WatchEvent) -> None:
        if args.json:
            print(json.dumps(to_dict(event)), flush=True)
        elif event.phase == "indexed":
            if event.full:
                bar.close()
            print(safe_text(event.message), flush=True)
        elif event.phase == "error":
            print(f"coderag: watch: {safe_text(event.message)}", file=sys.stderr, flush=True)
        if event.phase == "indexed" and not args.no_summaries:
            service.start_summaries(summaries)  # in the background; current ones are skipped

    debounce = args.debounce_ms if args.debounce_ms is not None else service.settings.watch.debounce_ms
    watcher = service.watch(show, initial_index=not args.no_initial, debounce_ms=debounce, progress=bar,
                            embed=not args.no_embed)
    if INDEX in service.capabilities:
        save = min(service.settings.watch.save_debounce_ms, debounce)
        print(f"watching {service.root} (debounce {save} ms for a save, {debounce} ms for a burst); Ctrl+C to stop",
              file=sys.stderr, flush=True)
    else:  # a server's: it keeps its repositories current, and says so here as it does
        print(f"watching {service.display_name}: the server's index updates as they happen; Ctrl+C to stop",
              file=sys.stderr, flush=True)
    try:
        while watcher.running:
            time.sleep(0.2)
    except KeyboardInterrupt:
        print("coderag: stopping the watcher", file=sys.stderr, flush=True)
    finally:
        watcher.stop()
        bar.close()
        service.close()
    return 0
