"""Parse many repositories once for `bench/bench_scale.py`: one pickle per repository.

    python -m bench.scale_parse DATA_DIR OUT_DIR [--workers 2]

Each folder of DATA_DIR is a repository (an unpacked sdist or npm tarball). Its parsed files
are written to OUT_DIR/<name>.pkl as a list of (FileRows, FileMeta) with paths prefixed by the
repository's name (so many repositories share one index without clashing). Printed: files,
chunks and this process's and the workers' CPU seconds per repository.
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from bench.harness import machine_line
from coderag_tui.config import Settings
from coderag_tui.indexing.workers import Job, process_file
from coderag_tui.sources.discovery import walk
from coderag_tui.store.write import FileMeta, FileRows

_SETTINGS = Settings()


def _parse(item: tuple[str, str, int, int]) -> tuple[str, FileRows, str, int, int] | None:
    root, rel, size, mtime = item
    res = process_file(Job(rel, os.path.join(root, rel), size, mtime, ""), _SETTINGS.index, _SETTINGS.chunk)
    if res.kind != "parsed" or res.rows is None:
        return None
    return rel, res.rows, res.hash, size, mtime


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    print(machine_line())
    args.out.mkdir(parents=True, exist_ok=True)
    total = 0
    with ProcessPoolExecutor(args.workers) as pool:
        for repo in sorted(p for p in args.data.iterdir() if p.is_dir()):
            target = args.out / f"{repo.name}.pkl"
            if target.exists():
                continue
            root = repo.resolve()
            wall = time.perf_counter()
            items = [(str(root), c.path, c.size, c.mtime_ns) for c in walk(root, _SETTINGS.index).files]
            out = []
            for got in pool.map(_parse, items, chunksize=8):
                if got is not None:
                    rel, rows, digest, size, mtime = got
                    out.append((rows, FileMeta(f"{repo.name}/{rel}", digest, size, mtime)))
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL))
            tmp.rename(target)
            chunks = sum(len(r.chunks) for r, _ in out)
            total += chunks
            print(f"{repo.name}: {len(out)} files, {chunks} chunks in {time.perf_counter() - wall:.0f} s wall "
                  f"(total {total}; workers' cpu so far {cpu_children():.0f} s; load {os.getloadavg()[0]:.1f})",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
