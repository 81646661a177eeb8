"""The HTTP server's cost over the service it wraps, and its behaviour under concurrent clients.

    .venv/bin/python -m bench.bench_server [--repo /path/to/checkout] [--rounds 3] [--clients 16]
                                           [--requests 10] [--embed] [--db FILE | --store URL]

Serves one real repository (default: Flask, checked out from /work/.mirror/pallets+flask) with
`coderag serve` in a process of its own on loopback, its index built first in a temporary
folder. Then, in one run:

- the same queries, alternating, through `CodeRag.search` in this process and `POST /search`
  over one keep-alive connection: the median time of each and their ratio (HTTP / in-process);
- `--clients` threads, each with its own connection, sending `--requests` searches each: the
  requests per second, p50 and p95 latency and the errors, and, for the ratio, the same
  requests sent by one client one after another.

`--db FILE` serves an index built before (kept; `bench_scale.py`'s size: index the folder of
repositories once with `coderag index --db FILE DATA`), `--store URL` one in PostgreSQL (the
server then reads it; the in-process comparison is left out). Vectors are off unless `--embed` (then the bundled embedding model answers the query vectors
on both sides). Wall times on a shared machine are noisy: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from bench.harness import ROOT, machine_line
from bench.harness import percentile as pct
from coderag_tui.config import load_settings
from coderag_tui.service import CodeRag

QUERIES = [
    "where is the session cookie signed", "register a blueprint", "url_for", "jsonify a response",
    "how are errors handled by the app", "teardown request context", "send_file", "Config.from_object",
    "test client cookies", "template rendering context processors", "before_request hooks",
    "static files route", "make_response", "abort with a status code", "app context push pop",
    "SecureCookieSessionInterface", "command line interface run", "json provider dumps",
    "redirect to another endpoint", "stream_with_context",
]


def checkout(work: Path) -> Path:
    mirror = Path("/work/.mirror/pallets+flask/repo")
    target = work / "flask"
    target.mkdir()
    archive = subprocess.run(["git", "--git-dir", str(mirror), "archive", "HEAD"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def _built(db: Path) -> bool:
    import sqlite3

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT 1 FROM meta WHERE key = 'last_update' AND value <> ''").fetchone() is not None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=10)
    ap.add_argument("--embed", action="store_true")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--db", type=Path, help="an index file to serve (built before, kept)")
    where.add_argument("--store", help="a PostgreSQL URL holding the index to serve")
    args = ap.parse_args()
    if args.db and not _built(args.db):
        # `serve` would index the folder into it first (minutes, and a larger index than asked for)
        print(f"{args.db} has no finished build (meta last_update): build it with `coderag index --db`, or "
              "mark rows written by bench_scale.py: INSERT INTO meta VALUES('last_update', '<unix time>')")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo = args.repo or checkout(work)
        config = work / "config.toml"
        config.write_text(f"[embed]\nenabled = {'true' if args.embed else 'false'}\n[llm]\ndiscover = false\n")
        db = args.db.resolve() if args.db else work / "index.db"
        index = ["--store", args.store] if args.store else ["--db", str(db)]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(work / "cache"),
               "XDG_CONFIG_HOME": str(work / "config")}
        os.environ.update({k: env[k] for k in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME")})
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "coderag_tui", "serve", "--json", "--port", "0",
                                 "--config", str(config), *index, str(repo)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdout is not None
            info = json.loads(proc.stdout.readline())
            url = info["url"]
            auth = {"Authorization": f"Bearer {info['token']}"} if info.get("token") else {}
            print(f"server up (indexed) in {time.perf_counter() - started:.1f} s: {url}")
            service = None if args.store else CodeRag(repo, load_settings(repo, config), db)
            local: list[float] = []
            remote: list[float] = []
            with httpx.Client(base_url=url, timeout=120, headers=auth) as http:
                for q in QUERIES:  # warm both sides (the searcher, the connection, the OS cache)
                    if service is not None:
                        service.search(q, 10)
                    http.post("/search", json={"query": q, "limit": 10}).raise_for_status()
                for _ in range(args.rounds if service is not None else 0):
                    for q in QUERIES:
                        assert service is not None
                        t = time.perf_counter()
                        service.search(q, 10)
                        local.append(time.perf_counter() - t)
                        t = time.perf_counter()
                        http.post("/search", json={"query": q, "limit": 10}).raise_for_status()
                        remote.append(time.perf_counter() - t)
                total = args.clients * args.requests
                t = time.perf_counter()
                for i in range(total):
                    http.post("/search", json={"query": QUERIES[i % len(QUERIES)], "limit": 10}).raise_for_status()
                serial_rps = total / (time.perf_counter() - t)
            if service is not None:
                service.close()
                lm, rm = statistics.median(local), statistics.median(remote)
                print(f"search, {len(local)} queries each: in-process median {lm * 1000:.1f} ms, "
                      f"HTTP median {rm * 1000:.1f} ms, ratio HTTP/in-process {rm / lm:.2f}")

            latencies: list[float] = []
            errors: list[str] = []
            lock = threading.Lock()

            def client(n: int) -> None:
                with httpx.Client(base_url=url, timeout=120, headers=auth) as http:
                    for i in range(args.requests):
                        q = QUERIES[(n * args.requests + i) % len(QUERIES)]
                        t = time.perf_counter()
                        try:
                            r = http.post("/search", json={"query": q, "limit": 10})
                            ok = r.status_code == 200 and r.json()["total_found"] > 0
                            err = "" if ok else f"{r.status_code}"
                        except httpx.HTTPError as exc:
                            err = type(exc).__name__
                        with lock:
                            latencies.append(time.perf_counter() - t)
                            if err:
                                errors.append(err)

            threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
            t = time.perf_counter()
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            wall = time.perf_counter() - t
            rps = len(latencies) / wall
            print(f"{args.clients} concurrent clients x {args.requests} searches: {rps:.1f} requests/s "
                  f"(one client in series: {serial_rps:.1f}/s, ratio {rps / serial_rps:.2f}), "
                  f"p50 {pct(latencies, 0.5) * 1000:.0f} ms, p95 {pct(latencies, 0.95) * 1000:.0f} ms, "
                  f"errors {len(errors)}")
            print(machine_line())
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
