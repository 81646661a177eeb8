"""Freshness: from saving a file to the change being searchable, with the watcher running.

Copies a repository of >= 2,000 files (default: /work/data/django-5.1) into a temp folder,
indexes it once (and embeds it when the service can), starts the watcher, then edits N
different files one after the other: each edit appends a function with a unique name and
saves. For each edit it measures, from the save:

  symbols   until `service.symbols(name)` finds the new function
  keywords  until a keyword search finds it (`service.search` when present, else FTS5)
  indexed   until the watcher reports the batch done (vectors refreshed too, when embedding)
  work      the watcher's own time for the batch (indexing + embedding, without the debounce)

and prints the median, p95 and max of each. Target: symbols and keywords < 1 s.

    .venv/bin/python bench/bench_freshness.py [--source DIR] [--edits 50] [--debounce-ms 1000]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coderag_tui.config import EmbedSettings, WatchSettings, load_settings  # noqa: E402
from coderag_tui.models import WatchEvent  # noqa: E402
from coderag_tui.service import CodeRag  # noqa: E402

POLL_S = 0.005


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return f"{cpu}, {cores} cores usable, load avg {load}, Python {platform.python_version()}, {platform.system()}"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(q * len(ordered) + 0.5)) - 1))
    return ordered[k]


def line(label: str, values: list[float]) -> str:
    if not values:
        return f"  {label:<9} (not measured)"
    return (f"  {label:<9} median {statistics.median(values) * 1000:7.0f} ms   p95 {pct(values, 0.95) * 1000:7.0f} ms"
            f"   max {max(values) * 1000:7.0f} ms   (n={len(values)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", default="/work/data/django-5.1", help="repository to copy (>= 2,000 files)")
    ap.add_argument("--edits", type=int, default=50)
    ap.add_argument("--debounce-ms", type=int, default=None,
                    help="the watcher's debounce (default: the settings' [watch] debounce_ms)")
    ap.add_argument("--embed", choices=("auto", "on", "off"), default="auto",
                    help="refresh vectors too (auto: when the service has embed())")
    ap.add_argument("--workdir", default=None, help="where to copy the repository (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the copy and its index")
    ap.add_argument("--timeout", type=float, default=60.0, help="give up on one edit after this long")
    args = ap.parse_args()

    source = Path(args.source)
    if not source.is_dir():
        print(f"no such repository: {source}", file=sys.stderr)
        return 2
    work = Path(args.workdir or tempfile.mkdtemp(prefix="coderag-fresh-"))
    repo = work / "repo"
    print(f"machine   {machine()}")
    t = time.perf_counter()
    if not repo.exists():
        shutil.copytree(source, repo, symlinks=True)
    files = [p for p in repo.rglob("*") if p.is_file()]
    print(f"copied    {source} -> {repo}: {len(files)} files in {time.perf_counter() - t:.1f}s")

    base = load_settings(None)
    debounce = args.debounce_ms if args.debounce_ms is not None else base.watch.debounce_ms
    has_embed = hasattr(CodeRag, "embed")
    use_embed = args.embed == "on" or (args.embed == "auto" and has_embed)
    settings = replace(base, watch=WatchSettings(enabled=True, debounce_ms=debounce),
                       embed=replace(base.embed, enabled=use_embed) if use_embed else EmbedSettings(enabled=False))
    service = CodeRag(repo, settings, work / "index.db")

    t = time.perf_counter()
    summary = service.index()
    print(f"indexed   {summary.files_indexed} files, {summary.units} units, {summary.chunks} chunks, "
          f"{summary.edges} edges in {time.perf_counter() - t:.1f}s")
    if use_embed:
        if not has_embed:
            print("embed     the service has no embed(): vectors not measured", file=sys.stderr)
            use_embed = False
        else:
            t = time.perf_counter()
            service.embed(progress=None)  # type: ignore[attr-defined]
            print(f"embedded  {service.status().vectors} vectors in {time.perf_counter() - t:.1f}s")
    has_search = hasattr(service, "search")
    print(f"watching  debounce {debounce} ms; vectors {'on' if use_embed else 'off'}; keywords via "
          f"{'service.search' if has_search else 'FTS5 (no service.search yet)'}")

    done: dict[str, float] = {}
    work_s: dict[str, float] = {}
    cond = threading.Condition()
    errors: list[str] = []

    def on_event(event: WatchEvent) -> None:
        now = time.perf_counter()
        with cond:
            if event.phase == "indexed":
                for p in event.paths:
                    done.setdefault(p, now)
                    work_s.setdefault(p, event.seconds)
            elif event.phase == "error":
                errors.append(event.message)
            cond.notify_all()

    watcher = service.watch(on_event)
    time.sleep(0.5)

    db = service.db
    candidates = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*.py")
                        if p.stat().st_size < 200_000 and "/locale/" not in p.as_posix())
    picks = random.Random(1234).sample(candidates, min(args.edits, len(candidates)))
    token = f"{int(time.time()) % 100000:05d}"

    symbols_s: list[float] = []
    keyword_s: list[float] = []
    indexed_s: list[float] = []
    batch_s: list[float] = []
    misses = 0
    for i, rel in enumerate(picks):
        name = f"zz_fresh_{token}_{i}"
        path = repo / rel
        text = path.read_text("utf-8", "replace")
        new = text.rstrip("\n") + f"\n\n\ndef {name}(value):\n    return value\n"
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
        saved = time.perf_counter()

        t_sym = t_kw = None
        deadline = saved + args.timeout
        while time.perf_counter() < deadline and (t_sym is None or t_kw is None):
            if (t_sym is None and db.one("SELECT 1 FROM units WHERE name=? COLLATE NOCASE", (name,))
                    and any(u.name == name for u in service.symbols(name, 5))):
                t_sym = time.perf_counter()
            if t_kw is None and db.one("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT 1",
                                       (f'"{name}"',)):
                if has_search:
                    hits = service.search(name)  # type: ignore[attr-defined]
                    hits = getattr(hits, "hits", hits)
                    if any(h.unit.path == rel for h in hits):
                        t_kw = time.perf_counter()
                else:
                    t_kw = time.perf_counter()
            time.sleep(POLL_S)
        with cond:
            cond.wait_for(lambda rel=rel: rel in done, timeout=max(0.0, deadline - time.perf_counter()))
            t_done = done.get(rel)
        if t_sym is None or t_kw is None or t_done is None:
            misses += 1
            print(f"  edit {i + 1}: {rel} not searchable within {args.timeout:.0f}s", file=sys.stderr)
            continue
        symbols_s.append(t_sym - saved)
        keyword_s.append(t_kw - saved)
        indexed_s.append(t_done - saved)
        batch_s.append(work_s[rel])
        print(f"  edit {i + 1:>2}/{len(picks)} {rel:<70} symbols {symbols_s[-1] * 1000:6.0f} ms  "
              f"keywords {keyword_s[-1] * 1000:6.0f} ms  indexed {indexed_s[-1] * 1000:6.0f} ms  "
              f"(work {batch_s[-1] * 1000:5.0f} ms)", flush=True)
        watcher.wait_idle(args.timeout)

    watcher.stop()
    print()
    print(f"freshness over {len(symbols_s)} edits in a repository of {len(files)} files "
          f"(debounce {debounce} ms, vectors {'on' if use_embed else 'off'}):")
    print(line("symbols", symbols_s))
    print(line("keywords", keyword_s))
    print(line("indexed", indexed_s))
    print(line("work", batch_s))
    if symbols_s:
        ok = pct(symbols_s, 0.95) < 1.0 and pct(keyword_s, 0.95) < 1.0
        print(f"  target    save -> searchable < 1 s at p95: {'met' if ok else 'NOT met'}")
    if misses or errors:
        print(f"  {misses} edits missed; watcher errors: {errors[:3]}")
    print(f"machine   {machine()}")
    service.close()
    if not args.keep and args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if not misses and not errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
