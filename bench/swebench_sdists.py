"""Release sdists standing in for `base_commit` checkouts of django, matplotlib and scikit-learn
(their git snapshots are too large to bring here), and the map from instance to sdist.

    .venv/bin/python -m bench.swebench_sdists unpack --repos /work/evalrepos --dl DOWNLOADS \
        Django==3.0 matplotlib==3.7.0 scikit-learn==0.21.3 ...
    .venv/bin/python -m bench.swebench_sdists index --repos /work/evalrepos --work WORK Django-3.0 Django-3.1 ...
    .venv/bin/python -m bench.swebench_sdists map --jsonl ../shared/eval/swebench-train.jsonl \
        --records VERIFIED.json [--versions KNOWN.json] --repos /work/evalrepos \
        --out bench/data/swebench-train-sdists.json

`unpack` downloads each sdist with pip (`--no-deps --no-binary NAME`) into DOWNLOADS and unpacks it
as REPOS/<Name>-<version>/, less what a git checkout lacks: egg-info, PKG-INFO, Cython outputs (a
.c or .cpp beside a .pyx of the same stem), a shipped doc build (`doc/_build`, `doc/build`, the
generated gallery `doc/auto_examples` and `doc/modules/generated`), `__pycache__` folders.

`index` indexes unpacked sdists (keywords, symbols, graph) as WORK/<name>.db, each seeded from the
index of the same project's release before it in the list (only the files that differ are parsed).

`map` gives each case the release that closes its SWE-bench version series, as
bench/data/swebench-lite-dev2-sdists.json does (django X.Y -> Django-X.Y, matplotlib 3.N ->
3.(N+1).0, scikit-learn 0.N -> the 0.N release, 0.21 -> 0.21.3). The version is SWE-bench's where a
record of it is at hand (`--versions`: `{instance_id: version}`); otherwise it is inferred: the
first release among those unpacked whose gold files hold every line the gold patch adds to them
(`--records`: SWE-bench records with `instance_id` and `patch` or `golden_patch`). The two agree
on the cases that have both (printed); each row says which way it was found (`how`).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

PROJECTS = {"django/django": "Django", "matplotlib/matplotlib": "matplotlib",
            "scikit-learn/scikit-learn": "scikit-learn"}
MIN_LINE = 8  # shorter added lines (`return None`, `)`) are in every release
_TEST = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*$")


def unpack(spec: str, repos: Path, dl: Path) -> Path:
    name, version = spec.split("==")
    dest = repos / f"{name}-{version}"
    if dest.is_dir():
        return dest
    found = sorted(dl.glob(f"{name}-{version}.tar.gz")) + sorted(dl.glob(f"{name.replace('-', '_')}-{version}.tar.gz"))
    if not found:
        # only the project from source: its build dependencies (numpy...) as wheels, for pip's metadata step
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", name,
                        spec, "-d", str(dl)], check=True)
        found = sorted(dl.glob(f"{name}-{version}.tar.gz")) + sorted(dl.glob(f"{name.replace('-', '_')}-{version}.tar.gz"))
    with tarfile.open(found[0]) as tar:
        top = tar.getnames()[0].split("/")[0]
        tmp = repos / (top + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tar.extractall(tmp, filter="data")
    root = tmp / top
    for junk in [*root.glob("*.egg-info"), root / "PKG-INFO", root / "doc" / "_build", root / "doc" / "build",
                 root / "doc" / "auto_examples", root / "doc" / "modules" / "generated", *root.rglob("__pycache__")]:
        if junk.is_dir():
            shutil.rmtree(junk)
        elif junk.exists():
            junk.unlink()
    for pyx in root.rglob("*.pyx"):
        for ext in (".c", ".cpp"):
            pyx.with_suffix(ext).unlink(missing_ok=True)
    root.rename(dest)
    shutil.rmtree(tmp, ignore_errors=True)
    return dest


def added_lines(patch: str) -> dict[str, list[str]]:
    """Per changed non-test file, the stripped lines the patch adds (short ones left out)."""
    out: dict[str, list[str]] = {}
    current = None
    for line in patch.splitlines():
        if line.startswith("+++ "):
            path = line[4:].strip()
            current = path[2:] if path.startswith("b/") else None
            if current and _TEST.search(current):
                current = None
        elif current and line.startswith("+") and len(line[1:].strip()) >= MIN_LINE:
            out.setdefault(current, []).append(line[1:].strip())
    return out


def has_fix(root: Path, lines: dict[str, list[str]]) -> bool:
    for path, wanted in lines.items():
        f = root / path
        if not f.is_file():
            return False
        have = {ln.strip() for ln in f.read_text("utf-8", "replace").splitlines()}
        if any(w not in have for w in wanted):
            return False
    return True


def release_key(name: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", name.rsplit("-", 1)[1]))


def checkout_for(project: str, version: str, repos: Path) -> str:
    """The release that closes a SWE-bench version series (as in dev2's map)."""
    major, minor = (int(x) for x in version.split(".")[:2])
    if project == "Django":
        return f"Django-{version}"
    if project == "matplotlib":
        return f"matplotlib-{major}.{minor + 1}.0"
    if (major, minor) == (0, 21):
        return "scikit-learn-0.21.3"
    for name in (f"scikit-learn-{version}", f"scikit-learn-{version}.0"):
        if (repos / name).is_dir():
            return name
    return f"scikit-learn-{version}.0"


def version_of(project: str, release: str) -> str:
    """The SWE-bench version series a release closes (the inverse of checkout_for)."""
    parts = release_key(release)
    if project == "matplotlib":
        return f"{parts[0]}.{parts[1] - 1}"
    return f"{parts[0]}.{parts[1]}" if project == "scikit-learn" and parts[0] == 0 else ".".join(map(str, parts[:2]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("unpack")
    u.add_argument("--repos", required=True)
    u.add_argument("--dl", required=True)
    u.add_argument("specs", nargs="+")
    x = sub.add_parser("index")
    x.add_argument("--repos", required=True)
    x.add_argument("--work", required=True)
    x.add_argument("names", nargs="+", help="unpacked sdists (REPOS/NAME), indexed in this order")
    m = sub.add_parser("map")
    m.add_argument("--jsonl", required=True)
    m.add_argument("--records", required=True)
    m.add_argument("--versions")
    m.add_argument("--repos", required=True)
    m.add_argument("--out", required=True)
    args = p.parse_args()
    repos = Path(args.repos)
    if args.cmd == "unpack":
        Path(args.dl).mkdir(parents=True, exist_ok=True)
        for spec in args.specs:
            print(unpack(spec, repos, Path(args.dl)))
        return 0
    if args.cmd == "index":  # each seeded from the index of the same project's release before it
        from bench.swebench_checkouts import index

        work = Path(args.work)
        work.mkdir(parents=True, exist_ok=True)
        done: dict[str, Path] = {}
        for name in args.names:
            project = name.rsplit("-", 1)[0]
            db = work / f"{name}.db"
            if not db.exists() and project in done:
                shutil.copyfile(done[project], db)
            index(repos / name, db)
            done[project] = db
        return 0
    records = json.loads(Path(args.records).read_text())
    patches = {r["instance_id"]: r.get("patch") or r.get("golden_patch") or "" for r in records}
    known = json.loads(Path(args.versions).read_text()) if args.versions else {}
    out: dict[str, dict[str, str]] = {}
    agree = disagree = 0
    for line in Path(args.jsonl).read_text().splitlines():
        case = json.loads(line)
        project = PROJECTS.get(case["repo"])
        if project is None:
            continue
        releases = sorted((d.name for d in repos.glob(f"{project}-*") if d.is_dir() and not d.name.endswith("partial")),
                          key=release_key)
        lines = added_lines(patches.get(case["instance_id"], ""))
        # the earliest release holding the fix whose next release holds it too (a fix may restore
        # lines an old release had; code moves on later, so not every later release need hold them)
        held = [bool(lines) and has_fix(repos / r, lines) for r in releases]
        first = next((r for i, r in enumerate(releases) if held[i] and (i + 1 == len(releases) or held[i + 1])),
                     None)
        inferred = version_of(project, first) if first else None
        version = known.get(case["instance_id"])
        if version and inferred:
            agree += version == inferred
            disagree += version != inferred
            if version != inferred:
                print(f"{case['instance_id']}: SWE-bench {version}, first release with the fix {first}",
                      file=sys.stderr)
        if version:
            out[case["instance_id"]] = {"swebench_version": version, "how": "swebench",
                                        "checkout": checkout_for(project, version, repos)}
        elif inferred:
            out[case["instance_id"]] = {"swebench_version": inferred, "how": "first release with the fix",
                                        "checkout": checkout_for(project, inferred, repos)}
        else:
            print(f"{case['instance_id']}: no release holds the fix; left out", file=sys.stderr)
    for row in out.values():  # 0.22 ships only a deprecation shim of some files: dev2 used 0.21.3 there
        if not (repos / row["checkout"]).is_dir():
            print(f"missing checkout {row['checkout']}", file=sys.stderr)
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{len(out)} cases mapped; known and inferred versions agree on {agree}, differ on {disagree}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
