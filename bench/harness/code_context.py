"""A context of this repository's own code for the local-model benches (bench_answer,
bench_threads): ~N tokens of 40-line pieces, the same question each time."""

from __future__ import annotations

from pathlib import Path

from bench.harness import ROOT
from coderag_tui.answering.providers.local import LlamaProvider
from coderag_tui.models import ComposedContext, ContextPiece

QUESTION = "How are settings loaded and validated, and which errors can a user see?"
PIECE_LINES = 40


def build_context(provider: LlamaProvider, context_tokens: int) -> ComposedContext:
    """~`context_tokens` tokens of pieces (40-line windows) from this repository's code."""
    files = [ROOT / "coderag_tui" / "config.py", ROOT / "coderag_tui" / "errors.py",
             ROOT / "coderag_tui" / "models.py", ROOT / "coderag_tui" / "store" / "db.py"]
    files += sorted((ROOT / "coderag_tui").rglob("*.py"))
    pieces: list[ContextPiece] = []
    seen: set[Path] = set()
    total = 0
    for path in files:
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        lines = path.read_text(encoding="utf-8").splitlines()
        rel = path.relative_to(ROOT).as_posix()
        for start in range(0, len(lines), PIECE_LINES):
            chunk = lines[start:start + PIECE_LINES]
            if not any(line.strip() for line in chunk):
                continue
            text = "\n".join(chunk)
            piece = ContextPiece(rel, start + 1, start + len(chunk), "primary", rel, text, 0, "python")
            tokens = provider.count_tokens(ComposedContext("", "", (piece,), 0, 0).render())
            if total + tokens > context_tokens:
                continue  # try the next (maybe smaller) piece
            pieces.append(ContextPiece(rel, start + 1, start + len(chunk), "primary", rel, text, tokens, "python"))
            total += tokens
            if total >= context_tokens - 40:
                return ComposedContext(QUESTION, "semantic", tuple(pieces), total, context_tokens)
    return ComposedContext(QUESTION, "semantic", tuple(pieces), total, context_tokens)
