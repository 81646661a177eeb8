"""Copies of an index with less of its descriptions, to measure what each layer adds in one run:

- `shown`: as it is, the summaries shown in contexts but not ranked (`[summaries] search` off,
  the default);
- `ranked`: as it is, with `[summaries] search` on (their words in the keyword list, their text
  in the embedded documents);
- `profiles`: the model's summaries removed (their keyword words, embedding documents and the
  summaries shown in a context go with them);
- `none`: profiles removed too (no descriptions at all: the search and context of before).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from coderag_tui.config import Settings, SummarySettings
from coderag_tui.indexing.profiles import refresh_profiles
from coderag_tui.store.db import open_database

VARIANTS = ("none", "profiles", "shown", "ranked")


def settings_for(variant: str) -> Settings:
    """The settings an index of `variant` is opened with."""
    return Settings(summaries=SummarySettings(search=variant == "ranked"))


def make_variant(db_path: Path, variant: str) -> Path:
    """A copy of the index at `db_path` (closed, checkpointed) stripped down to `variant`."""
    if variant not in VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}: use {', '.join(VARIANTS)}")
    out = db_path.with_name(f"{db_path.stem}-{variant}.db")
    for suffix in ("", "-wal", "-shm"):
        Path(str(out) + suffix).unlink(missing_ok=True)
    shutil.copyfile(db_path, out)
    if variant in ("shown", "ranked"):
        return out
    db = open_database(out)
    with db.transaction():
        db.execute("DELETE FROM unit_summaries")
        if variant == "none":
            db.execute("DELETE FROM profiles")
            db.execute("INSERT INTO descriptions_fts(descriptions_fts) VALUES('delete-all')")
        else:
            refresh_profiles(db, None)  # keyword rows of the profiles alone
    db.close()
    return out


def checkpoint(db_path: Path) -> None:
    """Fold the WAL into the file so a copy of the file alone is the whole index."""
    db = open_database(db_path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def model_summarizer(service: Any, model: str | None = None) -> Any:
    """A Summarizer with `model` (default: the configured one) even when it is the tiny default
    model, which the service refuses (it writes no summaries for users): the benches measure
    what its summaries do."""
    from coderag_tui.answering.summarize import Summarizer

    provider = service.llm(model)
    info = provider.info()

    def read_code(path: str, start: int, end: int) -> str:
        return "\n".join(service.read_lines(path, start, end))

    return Summarizer(service.db, provider, f"{info.provider}:{info.name}", read_code, service.settings.summaries,
                      local=info.provider == "llama")
