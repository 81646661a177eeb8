"""Train the learned ranker (coderag_tui/retrieval/ranker.py) on real issues and the files their
fixes changed, and report it beside the hand-tuned fusion on every set.

    # 1. features: one search per case on the existing indexes (bench/eval_retrieval.py --phase index)
    .venv/bin/python -m bench.train_ranker extract --work WORK --repos REPOS \
        --set train=../shared/eval/swebench-train.jsonl:bench/data/swebench-train-sdists.json \
        --set dev2=../shared/eval/swebench-lite-dev2.jsonl:bench/data/swebench-lite-dev2-sdists.json \
        --set dev=../shared/eval/swebench-lite-dev.jsonl --out FEATURES.pkl
    # 2. train (needs the `train` extra: lightgbm), leave-one-repository-out figures, the model files
    PYTHONPATH=TRAINLIBS .venv/bin/python -m bench.train_ranker train --features FEATURES.pkl \
        --fit train,dev2 --model coderag_tui/data/ranker/model.json --loro-dir WORK/loro

    # 3. units (the unit candidates come from the file model: for the fitted sets the
    #    leave-one-repository-out ones, so a case's candidates are what its held-out model finds)
    .venv/bin/python -m bench.train_ranker extract --units --file-model WORK/loro \
        --hunks bench/data/swebench-train-hunks.json --functions bench/data/swebench-lite-dev2-functions.json \
        --set train=... --set dev2=... --out UNITS-FIT.pkl  (the sets as in 1.)
    .venv/bin/python -m bench.train_ranker extract --units --file-model coderag_tui/data/ranker/model.json \
        --set dev=../shared/eval/swebench-lite-dev.jsonl --out UNITS-DEV.pkl
    PYTHONPATH=TRAINLIBS .venv/bin/python -m bench.train_ranker train --features UNITS-FIT.pkl \
        --features UNITS-DEV.pkl --fit train,dev2 --model coderag_tui/data/ranker/model.json --loro-dir WORK/loro

When the unit features change, the models of step 3 must be file models alone (a copy without
the "units" key): a model whose unit trees were trained on other features does not load.
`train --drop A,B` fits with those features set to 0 (no tree splits on them): the same
extraction with and without them.

A set is NAME=JSONL[:CHECKOUTS]: cases whose id is in the CHECKOUTS map (a release sdist standing
in for `base_commit`, as in bench/eval_retrieval.py) are searched on that checkout's index
(WORK/<checkout>.db), the others on WORK/<instance_id>.db. Labels: a candidate file is relevant
when the fix changed it (`gold_files`).

`train` fits LambdaMART (LightGBM, `objective=lambdarank`) on the --fit sets and prints file
Acc@1/5/10 of the fusion and of the model: on the sets not fitted (dev: validation), and
leave-one-repository-out on the fitted ones (the model that scores repository R was trained
without R: one model per repository, written to --loro-dir as <project>.json for
bench/eval_retrieval.py --ranker-model DIR). The model is exported as flat tree arrays in JSON,
evaluated at run time with numpy alone.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from coderag_tui.config import Settings
from coderag_tui.retrieval import rank_features, unit_features
from coderag_tui.retrieval.ranker import FORMAT
from coderag_tui.retrieval.search import Searcher
from coderag_tui.store.db import Database, open_database

KS = (1, 5, 10)


@dataclass
class Example:
    id: str
    set: str
    project: str
    paths: list[str]  # the candidates: file paths, or for units "path::qualname#id"
    x: np.ndarray
    y: np.ndarray  # 1 for a gold file (a unit that shows a gold unit)
    gold: tuple[str, ...]  # files: every one must rank; units: any positive candidate counts
    fused: int  # how many leading candidates are the fusion's own order
    level: str = "files"


def project_of(case_id: str) -> str:
    return case_id.split("__")[0]


def file_model_for(case_id: str, spec: str) -> Any:
    """The file model the unit candidates of a case are found with: a file, or a folder of
    leave-one-repository-out models (<project>.json, the one trained without the case's project)."""
    from coderag_tui.retrieval.ranker import load_model

    if not spec:
        return None
    path = Path(spec)
    if path.is_dir():
        path = path / f"{project_of(case_id)}.json"
    return load_model(str(path))


def unit_labels(db: Database, case: dict[str, Any], hunks: dict[str, Any], functions: dict[str, Any],
                shared: bool, hits: Sequence[Any]) -> np.ndarray | None:
    """1 for a candidate hit that shows a gold unit: by the gold hunks on a checkout at
    `base_commit` (as the eval scores it), by the gold functions' names on a release checkout."""
    from coderag_tui.retrieval.evaluate import Case, Hunk, gold_units, shows

    rows = case.get("gold_hunks") or hunks.get(case["instance_id"])
    if rows and not shared:
        golds = gold_units(db, Case(case["instance_id"], case["query"], tuple(case["gold_files"]),
                                    tuple(Hunk(h["file"], int(h["old_start"]), int(h["old_lines"])) for h in rows)))
        if not golds:
            return None
        return np.array([any(shows(h, g) for g in golds) for h in hits], dtype=np.float32)
    named = case.get("gold_functions") or functions.get(case["instance_id"], [])
    names = {tuple(f.split("::", 1)) for f in named if "::" in f}
    if not names:
        return None
    return np.array([(h.unit.path, h.unit.name) in names for h in hits], dtype=np.float32)


def extract(args: argparse.Namespace) -> int:
    work = Path(args.work)
    out: list[Example] = []
    settings = replace(Settings().search, ranker="fusion")
    hunks = json.loads(Path(args.hunks).read_text()) if args.hunks else {}
    functions = {k: v for path in args.functions or [] for k, v in json.loads(Path(path).read_text()).items()}
    features = unit_features.UNIT_FEATURES if args.units else rank_features.FILE_FEATURES
    for spec in args.set:
        name, _, rest = spec.partition("=")
        jsonl, _, mapping = rest.partition(":")
        checkouts = {k: (v["checkout"] if isinstance(v, dict) else v)
                     for k, v in json.loads(Path(mapping).read_text()).items()} if mapping else {}
        cases = [json.loads(line) for line in Path(jsonl).read_text().splitlines() if line.strip()]
        if args.only:
            cases = [c for c in cases if any(part in c["instance_id"] for part in args.only.split(","))]
        cases.sort(key=lambda c: (checkouts.get(c["instance_id"], c["instance_id"]), c["instance_id"]))
        db: Database | None = None
        db_name = ""
        t0 = time.perf_counter()
        for n, case in enumerate(cases, 1):
            where = checkouts.get(case["instance_id"], case["instance_id"])
            path = work / f"{where}.db"
            if not path.exists():
                print(f"{name}: {case['instance_id']}: no index at {path}; skipped", file=sys.stderr)
                continue
            if db_name != where:
                if db is not None:
                    db.close()
                db, db_name = open_database(path, readonly=True), where
            assert db is not None
            searcher = Searcher(db, settings, None)
            project = project_of(case["instance_id"])
            if args.units:
                hits, x = searcher.unit_features(case["query"], model=file_model_for(case["instance_id"],
                                                                                     args.file_model))
                y = unit_labels(db, case, hunks, functions, case["instance_id"] in checkouts, hits)
                if y is None:
                    continue
                keys = [f"{h.unit.path}::{h.unit.qualname or h.unit.name}#{h.unit.id}" for h in hits]
                fused = int(np.sum(x[:, unit_features.UNIT_FEATURES.index("from_file")] == 0))
                out.append(Example(case["instance_id"], name, project, keys, x, y, (), fused, "units"))
            else:
                paths, x = searcher.file_features(case["query"])
                # the fusion's own files lead the candidates (ranks 1..MAX_CANDIDATES); the graph's follow
                fused = int(np.sum(x[:, rank_features.FILE_FEATURES.index("fused_rank")]
                                   <= np.log2(1 + rank_features.MAX_CANDIDATES) + 1e-6))
                gold = tuple(case["gold_files"])
                y = np.array([p in gold for p in paths], dtype=np.float32)
                out.append(Example(case["instance_id"], name, project, paths, x, y, gold, fused))
            if n % 20 == 0:
                print(f"{name}: {n}/{len(cases)} ({time.perf_counter() - t0:.0f}s)", file=sys.stderr, flush=True)
        if db is not None:
            db.close()
    Path(args.out).write_bytes(pickle.dumps({"features": features, "examples": out}))
    print(f"{len(out)} cases, features of {sum(len(e.paths) for e in out)} candidates -> {args.out}")
    return 0


def rank_of(e: Example, order: Sequence[int]) -> int:
    """Files: the rank of the last gold file (0: one is missing), as the eval scores files.
    Units: the rank of the first candidate that shows a gold unit."""
    if e.level == "units":
        return next((i + 1 for i, c in enumerate(order) if e.y[c] > 0), 0)
    at = {e.paths[c]: i + 1 for i, c in enumerate(order)}
    ranks = [at.get(g, 0) for g in e.gold]
    return 0 if not ranks or 0 in ranks else max(ranks)


def fusion_rank(e: Example) -> int:
    return rank_of(e, range(e.fused))


def model_rank(e: Example, scores: np.ndarray) -> int:
    return rank_of(e, sorted(range(len(e.paths)), key=lambda i: -scores[i]))


def reachable(e: Example) -> int:
    return int(e.y.sum() >= len(e.gold)) if e.level == "files" else int(e.y.any())


def acc(ranks: Sequence[int], k: int) -> float:
    return 100.0 * sum(1 for r in ranks if 0 < r <= k) / max(len(ranks), 1)


def row(label: str, ranks: Sequence[int]) -> str:
    return f"{label:<34}" + "".join(f"{acc(ranks, k):7.1f}" for k in KS) + f"   (n={len(ranks)})"


PARAMS: dict[str, Any] = {
    "objective": "lambdarank", "metric": "ndcg", "eval_at": [1, 5, 10], "learning_rate": 0.05,
    "num_leaves": 15, "min_data_in_leaf": 20, "feature_fraction": 0.8, "bagging_fraction": 0.8,
    "bagging_freq": 1, "lambda_l2": 1.0, "verbose": -1, "seed": 7, "num_threads": 1,
    "lambdarank_truncation_level": 20,
}
ROUNDS = 200
# units: smaller trees, more cases a leaf (chosen by the leave-one-repository-out figures of the
# fitted sets, not by dev; the labels by function name on release checkouts are noisier)
UNIT_PARAMS: dict[str, Any] = {"num_leaves": 7, "min_data_in_leaf": 50}


def fit(examples: Sequence[Example], rounds: int = ROUNDS, params: dict[str, Any] | None = None) -> Any:
    import lightgbm as lgb

    used = [e for e in examples if e.y.any()]  # a case whose gold no candidate holds teaches nothing
    x = np.concatenate([e.x for e in used])
    y = np.concatenate([e.y for e in used])
    data = lgb.Dataset(x, y, group=[len(e.paths) for e in used], free_raw_data=False)
    return lgb.train({**PARAMS, **(params or {})}, data, num_boost_round=rounds)


def export(booster: Any, features: Sequence[str]) -> dict[str, Any]:
    """Flat arrays of every tree's nodes (ranker.Trees). Thresholds keep every digit: LightGBM
    splits at +-1e-35 to part zero from the rest, which rounding would turn into 0.0 and so send
    a zero down the other branch."""
    dump = booster.dump_model()
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    value: list[float] = []
    roots: list[int] = []
    depth = 0

    def add(node: dict[str, Any], level: int) -> int:
        nonlocal depth
        i = len(feature)
        feature.append(-1)
        threshold.append(0.0)
        left.append(-1)
        right.append(-1)
        value.append(0.0)
        if "leaf_value" in node:
            value[i] = float(node["leaf_value"])
            depth = max(depth, level)
            return i
        if node.get("decision_type", "<=") != "<=":
            raise SystemExit(f"unsupported split {node.get('decision_type')}")
        feature[i] = int(node["split_feature"])
        threshold[i] = float(node["threshold"])
        left[i] = add(node["left_child"], level + 1)
        right[i] = add(node["right_child"], level + 1)
        return i

    for tree in dump["tree_info"]:
        roots.append(add(tree["tree_structure"], 0))
    return {"features": list(features), "roots": roots, "depth": depth + 1,
            "nodes": {"feature": feature, "threshold": threshold, "left": left,
                      "right": right, "value": [round(v, 9) for v in value]}}


def write_model(path: Path, level: str, trees: dict[str, Any], note: str) -> None:
    """Write one level's trees into the model file at `path`, keeping the other level's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(path.read_text()) if path.exists() else {}
    if data.get("format") != FORMAT:
        data = {"format": FORMAT}
    data[level] = trees
    data.setdefault("notes", {})[level] = note
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n")


def train(args: argparse.Namespace) -> int:
    from coderag_tui.retrieval.ranker import Trees

    parts = [pickle.loads(Path(path).read_bytes()) for path in args.features]
    examples: list[Example] = [e for part in parts for e in part["examples"]]
    data = parts[0]
    if any(tuple(part["features"]) != tuple(data["features"]) for part in parts):
        raise SystemExit("the features files were extracted with different features")
    level = examples[0].level if examples else "files"
    features = unit_features.UNIT_FEATURES if level == "units" else rank_features.FILE_FEATURES
    if tuple(data["features"]) != features:
        raise SystemExit("the features file was extracted with other features: extract again")
    for name in filter(None, (args.drop or "").split(",")):
        for e in examples:  # a constant column: no tree splits on it (the ablation of a feature)
            e.x[:, features.index(name)] = 0.0
    fit_sets = set(args.fit.split(","))
    fitted = [e for e in examples if e.set in fit_sets]
    rounds = args.rounds
    params = {**(UNIT_PARAMS if level == "units" else {}),
              **{k: v for k, v in (("num_leaves", args.leaves), ("min_data_in_leaf", args.min_data),
                                   ("learning_rate", args.lr)) if v is not None}}
    booster = fit(fitted, rounds, params)
    model = export(booster, features)
    trees = Trees.from_json(model)
    every = np.concatenate([e.x for e in examples])  # the exported arrays score as LightGBM does
    if not np.allclose(trees.score(every), booster.predict(every), atol=1e-5):
        raise SystemExit("exported trees disagree with LightGBM")
    sets = list(dict.fromkeys(e.set for e in examples))
    what = "function" if level == "units" else "file"
    print(f"{what} Acc@1/5/10{'':23}" + "".join(f"{'@' + str(k):>7}" for k in KS))
    loro: dict[str, np.ndarray] = {}
    loro_dir = Path(args.loro_dir) if args.loro_dir else None
    for project in sorted({e.project for e in examples}):
        others = [e for e in fitted if e.project != project]
        b = fit(others, rounds, params)
        if loro_dir is not None:
            write_model(loro_dir / f"{project}.json", level, export(b, features),
                        f"trained on {args.fit} without {project}")
        for e in examples:
            if e.project == project:
                loro[e.id + "/" + e.set] = b.predict(e.x)
    full = {e.id + "/" + e.set: booster.predict(e.x) for e in examples}
    for name in sets:
        part = [e for e in examples if e.set == name]
        print(f"-- {name}" + (" (fitted: leave-one-repository-out)" if name in fit_sets else " (held out)"))
        print(row("  fusion", [fusion_rank(e) for e in part]))
        if name not in fit_sets:
            print(row("  learned", [model_rank(e, full[e.id + "/" + e.set]) for e in part]))
        print(row("  learned, leave-one-repository-out", [model_rank(e, loro[e.id + "/" + e.set]) for e in part]))
        if name in fit_sets:
            print(row("  learned, all fitted (optimistic)", [model_rank(e, full[e.id + "/" + e.set]) for e in part]))
        print(row("  candidates hold the gold", [reachable(e) for e in part]))
        for project in sorted({e.project for e in part}):
            pp = [e for e in part if e.project == project]
            print(row(f"    {project}: fusion", [fusion_rank(e) for e in pp]))
            print(row(f"    {project}: learned (LORO)", [model_rank(e, loro[e.id + "/" + e.set]) for e in pp]))
    gain = booster.feature_importance("gain")
    top = sorted(range(len(gain)), key=lambda i: -gain[i])[:25]
    print("features by gain: " + ", ".join(f"{features[i]} {gain[i]:.0f}" for i in top))
    if args.model:
        write_model(Path(args.model), level, model, f"trained on {args.fit} ({len(fitted)} cases)")
        print(f"model -> {args.model} ({Path(args.model).stat().st_size} bytes)")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract")
    e.add_argument("--work", required=True)
    e.add_argument("--repos", required=True)
    e.add_argument("--set", action="append", required=True, help="NAME=JSONL[:CHECKOUTS.json]")
    e.add_argument("--out", required=True)
    e.add_argument("--units", action="store_true", help="unit candidates (needs labels: gold hunks or functions)")
    e.add_argument("--file-model", default="", help="units: the file model (a file, or a folder of "
                   "leave-one-repository-out models <project>.json)")
    e.add_argument("--hunks", help="JSON {instance_id: [hunks]} for sets without gold hunks")
    e.add_argument("--functions", action="append", help="JSON {instance_id: [path::name]} for sets without "
                   "gold functions (units on release checkouts; bench/swebench_hunks.py --functions)")
    e.add_argument("--only", help="only cases whose id contains this text (comma-separated: any of them)")
    t = sub.add_parser("train")
    t.add_argument("--features", required=True, action="append", help="features from `extract` (repeatable)")
    t.add_argument("--fit", default="train,dev2")
    t.add_argument("--rounds", type=int, default=ROUNDS)
    t.add_argument("--leaves", type=int)
    t.add_argument("--min-data", type=int)
    t.add_argument("--lr", type=float)
    t.add_argument("--drop", help="features (comma-separated) set to 0 before fitting: what the model "
                   "scores without them, on the same extraction")
    t.add_argument("--model", help="write the model fitted on --fit here")
    t.add_argument("--loro-dir", help="write each leave-one-repository-out model here as <project>.json")
    args = p.parse_args()
    return extract(args) if args.cmd == "extract" else train(args)


if __name__ == "__main__":
    raise SystemExit(main())
