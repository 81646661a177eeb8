"""Summaries with the bundled model: coderag's rate against bare llama.cpp, and the default budget.

    python -m bench.bench_summaries [--repo PATH | --sdist NAME==VERSION] [--n 12]

Indexes the repository (default: SQLAlchemy 2.0.36's sdist from PyPI, about 1,000 files) into a
temporary index, plans the default budget's run, then makes `--n` of its summaries two ways,
interleaved so that both see the same machine load: through coderag (prompt building, the
provider, storage, the keyword row; `summarize(force=True)`) and as a bare
`Llama.create_chat_completion` of the very same prompts with the same settings. Prints both
rates, their ratio (the overhead), and what the default budget takes at the measured rate.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench.harness import load_average, machine_line, require_sdist
from bench.harness.variants import model_summarizer
from coderag_tui.answering.summarize import SYSTEM_PROMPT
from coderag_tui.config import Settings
from coderag_tui.indexing.profiles import refresh_profiles
from coderag_tui.service import CodeRag


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", help="a repository folder (default: the sdist)")
    ap.add_argument("--sdist", default="sqlalchemy==2.0.36")
    ap.add_argument("--cache", help="where the sdist is kept (default: $CODERAG_TEST_DATA, "
                    "else ~/.cache/coderag-test-data)")
    ap.add_argument("--n", type=int, default=12, help="summaries made each way")
    ap.add_argument("--threads", type=int, default=0,
                    help="llama.cpp threads, both ways (0: [llm] threads, else coderag's default)")
    ap.add_argument("--budget", type=int, default=-1, help="plan with this [summaries] budget (default: the setting)")
    args = ap.parse_args()
    print(machine_line())
    name, _, version = args.sdist.partition("==")
    root = Path(args.repo) if args.repo else require_sdist(name, version, args.cache)
    settings = Settings()
    if args.threads:
        settings = replace(settings, llm=replace(settings.llm, threads=args.threads))
    if args.budget >= 0:
        settings = replace(settings, summaries=replace(settings.summaries, budget=args.budget))
    with tempfile.TemporaryDirectory() as tmp:
        service = CodeRag(root, settings, Path(tmp) / "index.db")
        t = time.perf_counter()
        summary = service.index()
        index_s = time.perf_counter() - t
        db = service.db
        t = time.perf_counter()
        with db.transaction():
            profiles = refresh_profiles(db, None)
        profile_s = time.perf_counter() - t
        print(f"{root.name}: {summary.files_indexed} files, {summary.units} units; structural index "
              f"{index_s:.1f}s; profiles (a full pass, also part of the index) {profiles} in {profile_s:.2f}s")

        summarizer = model_summarizer(service)  # the bundled model: the service would refuse it
        t = time.perf_counter()
        plan = summarizer.plan()
        plan_s = time.perf_counter() - t
        everything = summarizer.plan(everything=True)
        kinds: dict[str, int] = {}
        for target in plan:
            kinds[target.kind] = kinds.get(target.kind, 0) + 1
        print(f"budget {settings.summaries.budget}: {len(plan)} summaries planned {kinds} "
              f"in {plan_s:.2f}s (all: {len(everything)})")

        step = max(1, len(plan) // args.n)
        sample = plan[::step][: args.n]
        prompts = [summarizer.prompt(target, summarizer._children(target)) for target in sample]
        provider = service.llm()
        from llama_cpp import Llama

        from coderag_tui.answering.providers.local import default_threads

        # the very threads coderag's provider runs with (on a busy machine, more threads than
        # it has to spare cost far more than they bring)
        threads = settings.llm.threads or default_threads()[0]
        bare = Llama(model_path=str(provider.path), n_ctx=provider.context_window(),  # type: ignore[attr-defined]
                     n_threads=threads, n_threads_batch=threads, verbose=False)
        ours: list[float] = []
        theirs: list[float] = []
        ours_cpu = theirs_cpu = 0.0  # process CPU time: llama.cpp's threads are ours too
        ours_tokens = theirs_tokens = 0
        for target, prompt in zip(sample, prompts, strict=True):
            t, c = time.perf_counter(), time.process_time()
            out = bare.create_chat_completion(
                messages=[{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
                max_tokens=summarizer.max_tokens(target.level),
                temperature=settings.summaries.temperature,
                repeat_penalty=settings.llm.repeat_penalty)
            theirs.append(time.perf_counter() - t)
            theirs_cpu += time.process_time() - c
            theirs_tokens += int(out["usage"]["completion_tokens"])  # type: ignore[index]
            t, c = time.perf_counter(), time.process_time()
            summarizer.summarize(target, force=True)
            ours.append(time.perf_counter() - t)
            ours_cpu += time.process_time() - c
            stored = service.db.scalar("SELECT text FROM unit_summaries WHERE key=?", (target.key,))
            ours_tokens += provider.count_tokens(str(stored or ""))
        per = statistics.mean(ours)
        load = load_average()
        print(f"{len(sample)} summaries each way (same prompts, interleaved); load average after: {load}:")
        print(f"  coderag   {60 / per:.1f}/min  ({per:.2f}s each, median {statistics.median(ours):.2f}s, "
              f"{ours_tokens} tokens written, "
              f"CPU {ours_cpu / len(sample):.2f}s each)")
        bare_per = statistics.mean(theirs)
        print(f"  llama.cpp {60 / bare_per:.1f}/min  ({bare_per:.2f}s each, median {statistics.median(theirs):.2f}s, "
              f"{theirs_tokens} tokens generated, "
              f"CPU {theirs_cpu / len(sample):.2f}s each)")
        print(f"  overhead ratio (coderag / bare): time {per / bare_per:.2f}, "
              f"CPU {ours_cpu / max(theirs_cpu, 1e-9):.2f}")
        budget_s = len(plan) * per
        cpu = ours_cpu / len(sample)
        print(f"budget at this rate: {len(plan)} x {per:.2f}s = {budget_s / 60:.1f} min "
              f"(+ index {index_s / 60:.1f} min); a budget for 10 min at this rate: {int(600 / per)}")
        print(f"on a quiet machine (wall = CPU time, {threads} thread(s)): {len(plan)} x {cpu:.2f}s = "
              f"{len(plan) * cpu / 60:.1f} min; a budget for 10 min: {int(600 / cpu)}")
        service.close()


if __name__ == "__main__":
    main()
