"""Checkouts for the SWE-bench sets from bare git mirrors: REPOS/<instance_id>/ at `base_commit`.

    .venv/bin/python -m bench.swebench_checkouts --jsonl ../shared/eval/swebench-train.jsonl \
        --mirrors /work/.mirror --repos /work/evalrepos [--work WORK]

A case's mirror is MIRRORS/<owner>+<name>/repo (what the `fetch` tool brings); cases of projects
with no mirror (django, matplotlib, scikit-learn: release sdists stand in, bench/swebench_sdists.py)
are skipped. Each checkout is the tree of `base_commit` written out (no .git folder; blobs the snapshot lacks are left out), never inside a
git tree of this project. With --work, a case with no index yet gets a copy of the index of the
same project's checkout nearest before it in commit time, so the indexer re-parses only the files
that differ (it compares content hashes when the modification times differ).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path


def git(gitdir: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={gitdir}", *args], check=True, capture_output=True,
                          text=True).stdout


def materialize(gitdir: Path, commit: str, dest: Path) -> bool:
    """Write the tree of `commit` into `dest` (False when it is already there). Blobs the
    snapshot lacks (files of 4 MiB and more) are left out; links and submodules too."""
    if dest.is_dir() and any(dest.iterdir()):
        return False
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    entries = []
    for row in git(gitdir, "ls-tree", "-r", "-z", commit).split("\0"):
        if not row:
            continue
        meta, path = row.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob" and mode in ("100644", "100755"):
            entries.append((path, sha))
    cat = subprocess.Popen(["git", f"--git-dir={gitdir}", "cat-file", "--batch"], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE)
    assert cat.stdin is not None and cat.stdout is not None
    feed = "".join(f"{sha}\n" for _, sha in entries).encode()

    def write() -> None:  # from another thread: both pipes would fill otherwise
        assert cat.stdin is not None
        cat.stdin.write(feed)
        cat.stdin.close()

    writer = threading.Thread(target=write)
    writer.start()
    for path, _ in entries:
        head = cat.stdout.readline().split()
        if len(head) < 3 or head[1] == b"missing":
            continue
        body = cat.stdout.read(int(head[2]))
        cat.stdout.read(1)  # the newline after each object
        target = tmp / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
    writer.join()
    if cat.wait() != 0:
        raise SystemExit(f"git cat-file failed in {gitdir}")
    tmp.rename(dest)
    return True


def index(root: Path, db: Path) -> None:
    """Bring the index at `db` up to date with `root` (and close it, so it can be copied)."""
    from coderag_tui.config import Settings
    from coderag_tui.service import CodeRag

    t = time.perf_counter()
    service = CodeRag(root, Settings(), db)
    try:
        s = service.index()
        print(f"{root.name}: {s.files_seen} files, {service.status().chunks} chunks "
              f"({time.perf_counter() - t:.0f}s)", file=sys.stderr, flush=True)
    finally:
        service.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jsonl", action="append", required=True)
    p.add_argument("--mirrors", required=True, help="folder of <owner>+<name>/repo bare git dirs")
    p.add_argument("--repos", required=True, help="where the checkouts go")
    p.add_argument("--work", help="index folder: seed a missing index from the nearest earlier checkout's")
    p.add_argument("--index", action="store_true", help="with --work: index each checkout (keywords, symbols, "
                   "graph; no vectors) in commit order, each seeded from the one before")
    args = p.parse_args()
    repos, mirrors = Path(args.repos), Path(args.mirrors)
    repos.mkdir(parents=True, exist_ok=True)
    cases = [json.loads(line) for path in args.jsonl for line in Path(path).read_text().splitlines() if line.strip()]
    by_project: dict[str, list[tuple[int, str, str]]] = {}
    for c in cases:
        gitdir = mirrors / c["repo"].replace("/", "+") / "repo"
        if not gitdir.is_dir():
            continue
        when = int(git(gitdir, "show", "-s", "--format=%ct", c["base_commit"]).strip())
        if materialize(gitdir, c["base_commit"], repos / c["instance_id"]):
            print(f"{c['instance_id']}: checked out {c['base_commit'][:10]}", file=sys.stderr)
        by_project.setdefault(c["repo"], []).append((when, c["instance_id"], c["base_commit"]))
    if args.work:
        work = Path(args.work)
        work.mkdir(parents=True, exist_ok=True)
        for project, rows in by_project.items():
            rows.sort()
            for i, (_, case_id, _) in enumerate(rows):
                db = work / f"{case_id}.db"
                if db.exists():
                    continue
                earlier = [r[1] for r in rows[:i] if (work / f"{r[1]}.db").exists()]
                later = [r[1] for r in rows[i + 1:] if (work / f"{r[1]}.db").exists()]
                seed = earlier[-1] if earlier else later[0] if later else None
                if seed is not None:
                    shutil.copyfile(work / f"{seed}.db", db)
                    print(f"{case_id}: index seeded from {seed} ({project})", file=sys.stderr)
                if args.index:
                    index(repos / case_id, db)
    print(json.dumps({p: len(r) for p, r in by_project.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
