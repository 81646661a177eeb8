"""config.toml documents every setting with its default; loading is strict and layered."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from coderag_tui.config import Settings, load_settings, merge, read_toml
from coderag_tui.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def test_config_toml_is_the_defaults():
    data = read_toml(ROOT / "config.toml")
    assert merge(Settings(), data) == Settings()
    for section in dataclasses.fields(Settings):
        documented = set(data[section.name])
        fields = {f.name for f in dataclasses.fields(getattr(Settings(), section.name))} - {"fallback"}
        assert fields <= documented, f"[{section.name}] does not document {fields - documented}"


def test_layers_and_errors(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".coderag.toml").write_text("[search]\nk = 3\n")
    extra = tmp_path / "extra.toml"
    extra.write_text("[search]\nrrf_k = 10\n[llm]\nprovider = 'openai'\n[[llm.fallback]]\nprovider = 'llama'\n")
    s = load_settings(repo, extra)
    assert (s.search.k, s.search.rrf_k, s.llm.provider, s.llm.fallback[0].provider) == (3, 10, "openai", "llama")
    extra.write_text("[search]\nbogus = 1\n")
    with pytest.raises(ConfigError, match="unknown setting search.bogus"):
        load_settings(repo, extra)
    extra.write_text("[search\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(repo, extra)
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(repo, tmp_path / "missing.toml")
