"""Benchmark: answers to real repository questions (SWE-QA), per model, through `ask`.

    .venv/bin/python -m bench.bench_answers --repo flask=/src/flask-3.0.3 \
        --repo requests=/src/requests-2.32.3 --repo pytest=/src/pytest-8.3.3 \
        [--sweqa /work/shared/eval/sweqa] [--per-repo 48] [--answers 48] [--bare-every 0] \
        [--answer-every 1] [--answer-offset 0] \
        [--model PATH|NAME ...] [--work /tmp/bench-answers] [--json OUT.json]
    .venv/bin/python -m bench.bench_answers --merge a.json b.json c.json   # one report of several runs

Models: each `--model` (a GGUF path or any name `ask --model` takes); by default the bundled
tiny model and every GGUF in models/, each answering the same questions.

REPO names a file `<sweqa>/<REPO>.jsonl`; its sources come from PyPI sdists (`pip download
--no-deps --no-binary :all: flask==3.0.3`, unpacked), close to but not at the questions'
commits. Each repository is indexed once into WORK (structure, keywords and graph; `--vectors`
adds embeddings). Of each repository's first `--per-repo` questions, every one gets its opening
section (retrieval and the graph only, no model), and the first `--answers` go through the whole
`CodeRag.ask` with the bundled model (of those, with `--answer-every N`, only the questions whose
number mod N is `--answer-offset`: answers spread over the questions, and another run with
another offset answers others; `--merge` counts each opening once). Printed:

- opening cites evidence: the share of questions whose opening names a file of the evidence (a
  file the reference names, or one that defines an identifier of its evidence, when at most 3
  files define it);
- opening precision: of the units the opening lists (its matches and its call path), the share
  inside evidence files, over the questions with evidence;
- degenerate answers: the share with any 6-word sequence repeated 3 or more times;
- near-loops: answers holding three sentences a word apart (`guard.near_loop`);
- invented names shown unmarked: the code names of an answer (as `answering/names.py` reads
  them) with a word that occurs in no file of the repository on disk (a check apart from the
  index's), and which the answer's `unknown_names` does not list; also how many names were
  listed, and how many of those have every word somewhere on disk (`flask.dispatch_request`:
  both words exist, the name does not);
- unverified shown: cited sources whose range was not a piece of the prompt the model was
  really sent, against all citations in the answers;
- time to first token (from the question, retrieval included) and total, medians;
- overhead: `ask` (retrieval, opening, prompt, guard) over a bare llama.cpp call on the same
  prompt producing the same number of tokens, right after it in the same process (median of the
  per-question ratios); `--bare-every N` pairs only every Nth answer (the bare call doubles the
  run's time), and the report says how many were paired.

The opening figures come from every question's opening built without a model (retrieval and
the graph: what `ask` shows first); each answered question also keeps the opening `ask` showed.
Runs of one repository each can go side by side, each with `--json`, and `--merge` prints the
report of them all.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from coderag_tui.answering.citations import parse_citations
from coderag_tui.answering.guard import near_loop, repeated_ngram
from coderag_tui.answering.names import candidates
from coderag_tui.answering.opening import build_opening
from coderag_tui.answering.providers.local import bundled_model_path, models_in
from coderag_tui.config import Settings, load_settings
from coderag_tui.models import AnswerOpening, ChatMessage
from coderag_tui.paths import models_dir
from coderag_tui.service import CodeRag

MAX_DEFINING = 3  # an identifier defined in more files than this names no evidence file
_RANGE = re.compile(r"[\w./@+\-]+:\d+-\d+")


class Recording:
    """Wraps the service's provider to keep the messages the model was really sent."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent: list[ChatMessage] = []
        self.max_tokens = 0
        self.temperature = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def stream(self, messages: list[ChatMessage], *, max_tokens: int, temperature: float,
               stop: list[str] | None = None) -> Iterator[str]:
        self.sent, self.max_tokens, self.temperature = list(messages), max_tokens, temperature
        yield from self.inner.stream(messages, max_tokens=max_tokens, temperature=temperature, stop=stop)


def evidence_files(service: CodeRag, evidence: list[str]) -> set[str]:
    """Files the reference names, and files defining an identifier of the evidence."""
    paths = {row[0] for row in service.db.rows("SELECT path FROM files")}
    out: set[str] = set()
    for item in evidence:
        if "/" in item or item.endswith(".py"):
            out.update(p for p in paths if p == item or p.endswith("/" + item) or item.endswith("/" + p))
        else:
            defining = {u.path for u in service.symbols(item, limit=50) if u.name == item}
            if len(defining) <= MAX_DEFINING:  # `run` or `__init__` would name half the repository
                out.update(defining)
    return out


def opening_paths(opening: AnswerOpening) -> set[str]:
    return {u.path for u in (*opening.units, *opening.call_path)}


def opening_figures(opening: AnswerOpening, want: set[str]) -> dict[str, Any]:
    listed = {(u.path, u.start_line, u.end_line) for u in (*opening.units, *opening.call_path)}
    return {"opening_files": sorted(opening_paths(opening)), "opening_hit": bool(want & opening_paths(opening)),
            "opening_units": len(listed), "opening_in_evidence": sum(1 for p, _, _ in listed if p in want),
            "flow": opening.flow, "call_path": len(opening.call_path)}


_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def disk_words(folder: Path) -> set[str]:
    """Every identifier-like word in the repository's files on disk and their names (not the index;
    markdown's `\\_` read as `_`)."""
    out: set[str] = set()
    for path in folder.rglob("*"):
        out.update(_WORDS.findall(str(path.relative_to(folder))))
        if path.is_file() and path.stat().st_size < 2_000_000:
            try:
                out.update(_WORDS.findall(path.read_text("utf-8", "replace").replace("\\_", "_")))
            except OSError:
                continue
    return out


def invented(answer: str, words: set[str]) -> list[str]:
    """The answer's code names with a word found in no file of the repository."""
    return [name for _, name in candidates(answer)
            if any(w not in words for w in _WORDS.findall(name.replace("from ", " ").replace(" import ", " "))
                   if w not in ("from", "import", "as"))]


def default_models() -> list[str]:
    bundled = bundled_model_path()
    return [str(p) for p in ([bundled] if bundled else []) + models_in(models_dir())]


def bare_call(provider: Any, messages: list[ChatMessage], tokens: int, temperature: float) -> dict[str, float]:
    """The same prompt straight through llama.cpp, for the same number of tokens."""
    llm = provider.load()
    llm.reset()  # no prompt-cache reuse from the answer just given
    start = time.perf_counter()
    first = 0.0
    for chunk in llm.create_chat_completion(
        messages=[{"role": m.role, "content": m.content} for m in messages], stream=True,
        max_tokens=max(1, tokens), temperature=temperature,
        repeat_penalty=provider.settings.repeat_penalty or 1.15,
    ):
        if chunk["choices"][0].get("delta", {}).get("content") and not first:
            first = time.perf_counter()
    end = time.perf_counter()
    return {"ttft_s": (first or end) - start, "total_s": end - start}


def load_questions(sweqa: Path, name: str, limit: int) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (sweqa / f"{name}.jsonl").read_text().splitlines() if line.strip()]
    return rows[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--sweqa", type=Path, default=Path("/work/shared/eval/sweqa"))
    parser.add_argument("--per-repo", type=int, default=48, help="questions per repository (openings)")
    parser.add_argument("--start", type=int, default=0, help="skip this many questions of each repository")
    parser.add_argument("--answers", type=int, default=5, help="of those, answered by each model")
    parser.add_argument("--answer-every", type=int, default=1, metavar="N",
                        help="of those, answer only every Nth (spread over the questions)")
    parser.add_argument("--answer-offset", type=int, default=0, metavar="K",
                        help="with --answer-every: answer the questions whose number mod N is K")
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-answers"))
    parser.add_argument("--vectors", action="store_true", help="embed the repositories too")
    parser.add_argument("--bare-every", type=int, default=0, metavar="N",
                        help="pair every Nth answer with a bare llama.cpp call (0: none)")
    parser.add_argument("--json", type=Path, help="also write every question's figures here")
    parser.add_argument("--merge", type=Path, nargs="+", help="print the report of these --json files")
    parser.add_argument("--recheck", action="store_true", help="with --merge: check the stored answers' names "
                        "again with this checkout's check (the indexes in --work, the --repo folders)")
    parser.add_argument("--model", action="append", default=[], help="a model to answer with (repeat; "
                        "default: the bundled tiny model and every GGUF in models/)")
    args = parser.parse_args()
    if args.merge:
        rows = merged([row for path in args.merge for row in json.loads(path.read_text())])
        if args.recheck:
            recheck(rows, dict(spec.partition("=")[::2] for spec in args.repo), args.work)
        report(rows)
        return
    args.work.mkdir(parents=True, exist_ok=True)

    base = load_settings(None, None)
    settings: Settings = replace(base, embed=replace(base.embed, enabled=args.vectors))
    models = args.model or default_models()
    per_question: list[dict[str, Any]] = []
    for spec in args.repo:
        name, _, folder = spec.partition("=")
        service = CodeRag(Path(folder), settings, args.work / f"{name}.db")
        t0 = time.perf_counter()
        summary = service.index()
        if args.vectors:
            service.embed()
        print(f"{name}: {summary.files_seen} files indexed in {time.perf_counter() - t0:.1f} s", flush=True)
        words = disk_words(Path(folder))
        questions = load_questions(args.sweqa, name, args.start + args.per_repo)[args.start:]
        recordings: dict[str, Recording] = {}
        for i, q in enumerate(questions):
            want = evidence_files(service, q.get("evidence", []))
            head: dict[str, Any] = {"repo": name, "index": args.start + i, "question": q["question"],
                                    "evidence_files": sorted(want), "has_evidence": bool(want)}
            opening = build_opening(service.db, q["question"], service.context(q["question"]))
            per_question.append({**head, "model": "", **opening_figures(opening, want)})
            answered = i < args.answers and i % args.answer_every == args.answer_offset
            for model in models if answered else ():
                row = {**head, "model": Path(model).name}
                answer_one(service, model, recordings, q["question"], want, words, row, args, i)
                per_question.append(row)
            if args.json:  # as it goes: a run stopped early keeps what it measured
                args.json.write_text(json.dumps(per_question, indent=1))
        service.close()

    report(per_question)


def merged(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of several runs, each question's opening counted once (runs over the same questions
    with other answered ones each have every opening): the last run's."""
    openings = {(r["repo"], r["index"]): r for r in rows if not r.get("model")}
    return [*openings.values(), *(r for r in rows if r.get("model"))]


def recheck(rows: list[dict[str, Any]], folders: dict[str, str], work: Path) -> None:
    """The names of every stored answer checked again, as `ask` would check them now."""
    from coderag_tui.answering.names import unknown_names
    from coderag_tui.store.db import open_database
    from coderag_tui.store.known import StoreNames

    for name, folder in folders.items():
        db = open_database(work / f"{name}.db")
        reads, words = StoreNames(db), disk_words(Path(folder))
        for row in rows:
            if row["repo"] == name and row.get("model"):
                unknown = unknown_names(row["answer"], reads)
                made_up = invented(row["answer"], words)
                row.update(unknown_names=list(unknown), invented=made_up,
                           invented_unmarked=[n for n in made_up if n not in unknown],
                           unknown_on_disk=[n for n in unknown if n not in made_up],
                           near_loop=bool(near_loop(row["answer"])))
        db.close()


def answer_one(service: CodeRag, model: str, recordings: dict[str, Recording], question: str, want: set[str],
               words: set[str], row: dict[str, Any], args: argparse.Namespace, i: int) -> None:
    """Ask `model` the question through `CodeRag.ask`; its figures go into `row`."""
    recording = recordings.get(model)
    if recording is None:
        recording = recordings[model] = Recording(service.llm(model))
        service.__dict__["_providers"][model] = recording  # the bench reads the prompt
        list(service.ask("warm up: load the model", model=model, fresh=True))  # loading is not a question's time
    recording.inner.load().reset()
    start = time.perf_counter()
    first = 0.0
    text: list[str] = []
    stats: dict[str, float] = {}
    sources: tuple[Any, ...] = ()
    unknown: tuple[str, ...] = ()
    error = ""
    for event in service.ask(question, model=model, fresh=True):  # the model, not the answer cache
        if event.kind == "token":
            if not first:
                first = time.perf_counter()
            text.append(event.text)
        elif event.kind == "sources":
            sources, unknown = event.sources, event.unknown_names
        elif event.kind == "done":
            stats = dict(event.stats)
        elif event.kind == "error":
            error = event.text
        elif event.kind == "opening" and event.opening is not None:
            row.update(opening_figures(event.opening, want))
    wall = time.perf_counter() - start
    answer = "".join(text)
    prompt = "\n".join(m.content for m in recording.sent)
    given = {m for line in prompt.splitlines() if line.startswith("### ") for m in _RANGE.findall(line)}
    cites = parse_citations(answer, {s.path for s in sources})
    # a source the answer cited whose range the prompt never showed
    unverified_shown = sum(1 for s in sources if s.cited and s.citation not in given)
    made_up = invented(answer, words)
    paired = args.bare_every > 0 and i % args.bare_every == 0
    bare = (bare_call(recording.inner, recording.sent, int(stats.get("tokens", 1)), recording.temperature)
            if paired else {"ttft_s": 0.0, "total_s": 0.0})
    row.setdefault("opening_hit", False)
    row.update(
        error=error, answer=answer, degenerate=bool(repeated_ngram(answer)), near_loop=bool(near_loop(answer)),
        invented=made_up, invented_unmarked=[n for n in made_up if n not in unknown], unknown_names=list(unknown),
        unknown_on_disk=[n for n in unknown if n not in made_up],
        citations=len(cites), unverified_shown=unverified_shown, sources=sorted(s.citation for s in sources),
        ttft_s=round((first or time.perf_counter()) - start, 3), total_s=round(wall, 3),
        model_ttft_s=stats.get("ttft_s", 0.0), tokens=stats.get("tokens", 0.0),
        stopped_repeating=stats.get("stopped_repeating", 0.0), prompt_tokens=stats.get("prompt_tokens", 0.0),
        bare_ttft_s=round(bare["ttft_s"], 3), bare_total_s=round(bare["total_s"], 3),
    )
    against = f"bare {bare['total_s']:.1f} s" if paired else "not paired"
    print(f"  [{row['model']} {row['repo']} {row['index'] + 1}] first token {row['ttft_s']:.1f} s, total {wall:.1f} s "
          f"({against}), {row['prompt_tokens']:.0f} prompt tokens, {row['tokens']:.0f} tokens, "
          f"{len(unknown)} names marked, {len(row['invented_unmarked'])} invented unmarked"
          f"{', DEGENERATE' if row['degenerate'] else ''}{', NEAR-LOOP' if row['near_loop'] else ''}"
          f"{', error: ' + error if error else ''}", flush=True)


def report(rows: list[dict[str, Any]]) -> None:
    openings = [r for r in rows if not r.get("model")]
    with_evidence = [r for r in openings if r["has_evidence"]]
    repos = sorted({r["repo"] for r in openings})
    hit = sum(r["opening_hit"] for r in with_evidence)
    inside = sum(r["opening_in_evidence"] for r in with_evidence)
    listed = sum(r["opening_units"] for r in with_evidence)
    print(f"\n{len(openings)} questions from {len(repos)} repositories ({', '.join(repos)}); "
          f"{len(with_evidence)} with an evidence file in the index; "
          f"{sum(1 for r in openings if r['flow'])} taken as flow questions")
    print(f"opening cites an evidence file     {hit}/{len(with_evidence)} = "
          f"{hit / max(len(with_evidence), 1):.1%}  (keep >= 90%)")
    print(f"opening precision                  {inside}/{listed} = {inside / max(listed, 1):.1%} of the units "
          "it lists are in evidence files")
    for model in sorted({r["model"] for r in rows if r.get("model")}):
        report_model(model, [r for r in rows if r.get("model") == model])


def report_model(model: str, answered: list[dict[str, Any]]) -> None:
    print(f"\n== {model}")
    errors = sum(1 for r in answered if r["error"])
    degenerate = sum(r["degenerate"] for r in answered)
    loops = sum(r["near_loop"] for r in answered)
    cites = sum(r["citations"] for r in answered)
    unverified = sum(r["unverified_shown"] for r in answered)
    stopped = sum(1 for r in answered if r["stopped_repeating"])
    made_up = sum(len(r["invented"]) for r in answered)
    unmarked = sum(len(r["invented_unmarked"]) for r in answered)
    marked = sum(len(r["unknown_names"]) for r in answered)
    on_disk = sum(len(r["unknown_on_disk"]) for r in answered)
    hit = sum(r["opening_hit"] for r in answered if r["has_evidence"])
    print(f"answers by the model               {len(answered)} ({errors} errors; {stopped} stopped by the guard)")
    print(f"degenerate answers                 {degenerate}/{len(answered)}  (target 0)")
    print(f"near-loops                         {loops}/{len(answered)}  (target 0)")
    print(f"invented names shown unmarked      {unmarked} of {made_up} invented names, in "
          f"{sum(1 for r in answered if r['invented_unmarked'])} answers  (target 0)")
    print(f"names marked as not in the index   {marked} in {sum(1 for r in answered if r['unknown_names'])} "
          f"answers ({on_disk} of them with every word somewhere in the repository)")
    print(f"unverified citations shown         {unverified}/{cites} citations  (target 0)")
    print(f"opening cites an evidence file     {hit}/{sum(1 for r in answered if r['has_evidence'])} (the answered)")
    med = {k: statistics.median(r[k] for r in answered) for k in ("ttft_s", "total_s", "prompt_tokens")}
    print(f"prompt tokens (median)             {med['prompt_tokens']:.0f}")
    print(f"time to first token (median)       {med['ttft_s']:.2f} s from the question")
    print(f"total time (median)                {med['total_s']:.2f} s")
    paired = [r for r in answered if r["bare_total_s"] > 0]
    if not paired:
        return
    bare = {k: statistics.median(r[k] for r in paired) for k in ("ttft_s", "total_s", "bare_ttft_s", "bare_total_s")}
    print(f"paired with a bare llama.cpp call  {len(paired)}: first token {bare['ttft_s']:.2f} s vs "
          f"{bare['bare_ttft_s']:.2f} s bare, total {bare['total_s']:.2f} s vs {bare['bare_total_s']:.2f} s bare")
    ratios = sorted(r["total_s"] / r["bare_total_s"] for r in paired)
    print(f"overhead over bare llama.cpp       x{statistics.median(ratios):.3f} total time, median of "
          f"{len(ratios)} per-question ratios (range x{ratios[0]:.2f}-x{ratios[-1]:.2f}; target < x1.10)")


if __name__ == "__main__":
    main()
