"""Benchmark: an answer from the default local model, then the same question from the answer cache.

Indexes this repository's `coderag_tui/answering` folder into a temporary index (structure and
keywords; no vectors, so the cache matches the same words), asks a question with the configured
model (the bundled GGUF by default), asks it again, then asks it with `fresh=True`.

    python -m bench.bench_answer_cache [--question "..."] [--max-tokens 96]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from bench.harness import ROOT, machine_line, timed
from coderag_tui.config import Settings
from coderag_tui.service import CodeRag


def ask(service: CodeRag, question: str, fresh: bool = False) -> dict[str, float | bool | str]:
    run = timed(lambda: list(service.ask(question, fresh=fresh)))
    events = run.value
    last = events[-1]
    return {"kind": last.kind, "cached": last.cached, "wall_s": round(run.wall_s, 4), "cpu_s": round(run.cpu_s, 4),
            "answer_chars": len("".join(e.text for e in events if e.kind == "token"))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--question", default="How does the answer cache decide that a stored answer is stale?")
    ap.add_argument("--max-tokens", type=int, default=96)
    args = ap.parse_args()
    print(machine_line())
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(ROOT / "coderag_tui" / "answering", repo / "answering",
                        ignore=shutil.ignore_patterns("__pycache__"))
        s = Settings()
        settings = replace(s, llm=replace(s.llm, max_tokens=args.max_tokens))
        service = CodeRag(repo, settings, Path(tmp) / "index.db")
        try:
            service.index()
            figures = {"first": ask(service, args.question), "again": ask(service, args.question),
                       "fresh": ask(service, args.question, fresh=True)}
        finally:
            service.close()
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
