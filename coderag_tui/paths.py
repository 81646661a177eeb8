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


def cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("coderag"))
