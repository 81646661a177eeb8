"""Where things live: the models/ folder of the user's GGUFs and per-user cache/data folders."""

from __future__ import annotations

import os
from pathlib import Path


def models_dir() -> Path:
    """The models/ folder searched for GGUF chat models: $CODERAG_MODELS_DIR, else the one beside
    the package (a source checkout or an editable install), else the user's data folder."""
    env = os.environ.get("CODERAG_MODELS_DIR")
    if env:
        return Path(env).expanduser()
    beside = Path(__file__).resolve().parent.parent / "models"
    if beside.is_dir():
        return beside
    from platformdirs import user_data_dir

    return Path(user_data_dir("coderag")) / "models"


# The line every file coderag writes for people (a conversation's export) carries: discovery
# skips a file that contains it near its start, wherever it was put.
EXPORT_MARK = "<!-- written by coderag; not indexed -->"


def exports_dir() -> Path:
    """Where conversations are exported: $CODERAG_EXPORTS_DIR, else the user's data folder
    (never the repository: an export there would be indexed and then cited as the code)."""
    env = os.environ.get("CODERAG_EXPORTS_DIR")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("coderag")) / "exports"


def cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("coderag"))
