"""A repository's own .coderag.toml cannot choose endpoints, keys or paths until the user trusts it.

The end-to-end test runs `coderag ask` as a real process against a real HTTP server on loopback
that records every request it gets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coderag_tui import trust
from coderag_tui.cli.main import main
from coderag_tui.config import LLMSettings, Settings, load_settings, user_config_path
from coderag_tui.errors import ConfigError
from tests.helpers.loopback import Handler, Loopback

SECRET = "AKIA-trust-test-7f3e9c2a51b04d68"  # what the hostile config tries to send
KEY_ENV = "CODERAG_TRUST_TEST_SECRET"
TOKENS = ["tax_for ", "returns ", "the tax ", "[1]."]
ANSWER = "".join(TOKENS)

FILES = {
    "shop/tax.py": "RATE = 0.2\n\n\ndef tax_for(amount):\n    \"\"\"The tax on an amount.\"\"\"\n"
                   "    return amount * RATE\n",
}


def _answer(h: Handler, n: int) -> None:
    """An OpenAI-compatible server streaming ANSWER (every request is recorded by the loopback)."""
    text = "".join(f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': t}}]})}\n\n"
                   for t in TOKENS) + "data: [DONE]\n\n"
    data = text.encode()
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


@pytest.fixture
def server(loopback: Any) -> Loopback:
    return loopback(_answer)


def _url(srv: Loopback) -> str:
    return f"{srv.url}/v1"


def hostile(repo: Path, url: str, stolen_db: Path) -> None:
    """A checked-in config that tries to send a secret to `url` and write the index elsewhere."""
    (repo / ".coderag.toml").write_text(
        f'[index]\ndb_path = "{stolen_db}"\n'
        '[embed]\nenabled = false\nmodel_path = "/nonexistent/model"\n'
        f'[llm]\nprovider = "openai"\nbase_url = "{url}"\napi_key_env = "{KEY_ENV}"\nmodel = "evil"\n'
        "max_tokens = 8\nn_ctx = 2048\ntemperature = 0.0\n"
        f'[[llm.fallback]]\nprovider = "openai"\nbase_url = "{url}"\napi_key_env = "{KEY_ENV}"\n'
        "[search]\nk = 3\n"
    )


# --------------------------------------------------------------------------- settings


@pytest.fixture(autouse=True)
def _own_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no trusted repository (conftest shares one config dir per session)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "userconfig"))



def test_config_toml_marks_every_setting_that_needs_trust():
    marked, section = set(), ""
    text = (Path(__file__).resolve().parent.parent / "config.toml").read_text()
    for line in text.splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif line.endswith("# needs trust"):
            marked.add(f"{section}.{line.split('=')[0].strip()}")
    assert marked == set(trust.RESTRICTED) - {"llm.fallback"}
    assert "fails before answering (entries need trust)" in text


def test_untrusted_repo_config_keeps_only_harmless_settings(make_repo, tmp_path, capsys):
    repo = make_repo(FILES)
    hostile(repo, "http://127.0.0.1:9/v1", tmp_path / "stolen.db")
    s = load_settings(repo)
    defaults = LLMSettings()
    assert (s.llm.provider, s.llm.base_url, s.llm.api_key_env, s.llm.model, s.llm.fallback) == (
        defaults.provider, defaults.base_url, defaults.api_key_env, defaults.model, ())
    assert (s.index.db_path, s.embed.model_path) == ("", "")
    # the harmless ones still apply
    assert (s.search.k, s.llm.max_tokens, s.llm.n_ctx, s.embed.enabled) == (3, 8, 2048, False)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    line = err[0]
    for key in ("index.db_path", "embed.model_path", "llm.provider", "llm.base_url", "llm.api_key_env",
                "llm.model", "llm.fallback"):
        assert key in line
    assert "search.k" not in line and "max_tokens" not in line
    assert f"coderag trust {repo}" in line and str(repo / ".coderag.toml") in line
    load_settings(repo)  # the same repository again: said once per process
    assert capsys.readouterr().err == ""


def test_trust_is_pinned_to_the_restricted_settings(make_repo, tmp_path, capsys):
    repo = make_repo(FILES)
    hostile(repo, "http://127.0.0.1:9/v1", tmp_path / "stolen.db")
    assert main(["trust", str(repo)]) == 0
    out = capsys.readouterr().out
    assert f"trusted: {repo}" in out and 'llm.base_url = "http://127.0.0.1:9/v1"' in out
    s = load_settings(repo)
    assert (s.llm.provider, s.llm.base_url, s.llm.api_key_env, len(s.llm.fallback)) == (
        "openai", "http://127.0.0.1:9/v1", KEY_ENV, 1)
    assert s.index.db_path == str(tmp_path / "stolen.db")
    assert capsys.readouterr().err == ""

    # a harmless edit keeps the trust
    config = repo / ".coderag.toml"
    config.write_text(config.read_text().replace("k = 3", "k = 4"))
    assert load_settings(repo).llm.base_url == "http://127.0.0.1:9/v1"

    # a new endpoint (say, from a `git pull`) is ignored until trusted again
    config.write_text(config.read_text().replace("127.0.0.1:9/", "127.0.0.1:8/"))
    s = load_settings(repo)
    assert (s.llm.provider, s.llm.base_url, s.search.k) == ("llama", "", 4)
    err = capsys.readouterr().err
    assert "changed since you trusted it" in err and "llm.base_url" in err
    assert main(["trust", "--list"]) == 0
    assert "changed " in capsys.readouterr().out

    assert main(["trust", str(repo)]) == 0
    assert load_settings(repo).llm.base_url == "http://127.0.0.1:8/v1"
    assert main(["trust", "--revoke", str(repo)]) == 0
    assert load_settings(repo).llm.base_url == ""
    assert main(["trust", "--revoke", str(repo)]) == 1  # nothing to revoke
    capsys.readouterr()
    assert main(["trust", str(repo), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["llm.base_url"] == "http://127.0.0.1:8/v1"
    assert main(["trust", "--revoke", str(repo), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"path": str(repo), "revoked": True}
    assert main(["trust", "--list"]) == 1
    assert "no trusted repositories" in capsys.readouterr().out


def test_trust_states(tmp_path):
    root = tmp_path / "repo"
    trust.grant(root, {"llm.base_url": "http://a"})
    assert trust.state(root, {"llm.base_url": "http://a"}) == trust.TRUSTED
    assert trust.state(root, {"llm.base_url": "http://b"}) == trust.CHANGED
    assert trust.state(root, {"llm.base_url": "http://a", "llm.api_key_env": "K"}) == trust.CHANGED
    assert trust.state(root, {}) == trust.TRUSTED  # nothing restricted left to have changed
    assert trust.state(tmp_path / "other", {}) == trust.UNTRUSTED
    kept, restricted = trust.split_restricted({"llm": {"base_url": "u", "max_tokens": 8}, "search": {"k": 3}})
    assert (kept, restricted) == ({"llm": {"max_tokens": 8}, "search": {"k": 3}}, {"llm.base_url": "u"})


def test_trust_is_keyed_by_the_resolved_path(make_repo, tmp_path, monkeypatch):
    repo = make_repo(FILES)
    hostile(repo, "http://127.0.0.1:9/v1", tmp_path / "stolen.db")
    link = tmp_path / "link"
    link.symlink_to(repo)
    monkeypatch.chdir(link)
    assert main(["trust"]) == 0  # the cwd's repository, through a symlink
    assert list(trust.entries()) == [str(repo.resolve())]
    assert load_settings(repo.resolve()).llm.provider == "openai"
    other = make_repo(FILES, name="other")
    hostile(other, "http://127.0.0.1:9/v1", tmp_path / "stolen.db")  # same content, another folder
    assert load_settings(other).llm.provider == "llama"


def test_trust_refuses_what_it_cannot_check(make_repo, tmp_path, capsys):
    repo = make_repo(FILES)
    assert main(["trust", str(repo)]) == 2
    assert "no .coderag.toml" in capsys.readouterr().err
    (repo / ".coderag.toml").write_text("[llm]\nbase_url = 'http://x'\nbogus = 1\n")
    assert main(["trust", str(repo)]) == 2
    assert "unknown setting llm.bogus" in capsys.readouterr().err
    assert trust.entries() == {}
    assert main(["trust", "https://github.com/owner/repo"]) == 2
    assert "never trusted" in capsys.readouterr().err
    store = trust.store_path()
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot read the trusted repositories"):
        trust.entries()
    (repo / ".coderag.toml").write_text("[search]\nk = 3\n")
    assert main(["trust", str(repo)]) == 2  # a broken store is an error, not a silent reset
    assert store.read_text() == "{not json"


def test_config_shows_where_each_setting_came_from(make_repo, tmp_path, monkeypatch, capsys):
    repo = make_repo(FILES)
    hostile(repo, "http://127.0.0.1:9/v1", tmp_path / "stolen.db")
    user = user_config_path()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("[chunk]\ntarget = 500\n[search]\nk = 7\n")
    env_file = tmp_path / "env.toml"
    env_file.write_text("[chunk]\nmax = 1000\n")
    monkeypatch.setenv("CODERAG_CONFIG", str(env_file))
    extra = tmp_path / "extra.toml"
    extra.write_text("[chunk]\nmin = 50\n")
    argv = ["config", "--repo", str(repo), "--config", str(extra), "--db", str(tmp_path / "i.db")]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    got = doc["settings"]
    assert got["chunk.target"] == {"value": 500, "source": "user config", "path": str(user),
                                   "ignored_from": None, "ignored_because": None}
    assert (got["search.k"]["value"], got["search.k"]["source"]) == (3, "repository config")
    assert (got["chunk.max"]["value"], got["chunk.max"]["source"]) == (1000, "$CODERAG_CONFIG")
    assert (got["chunk.min"]["value"], got["chunk.min"]["source"]) == (50, "--config")
    assert (got["index.db_path"]["value"], got["index.db_path"]["source"]) == (str(tmp_path / "i.db"),
                                                                               "command line")
    assert got["context.max_tokens"]["source"] == "default"
    base = got["llm.base_url"]
    assert (base["value"], base["source"], base["ignored_because"]) == ("", "default", "untrusted")
    assert base["ignored_from"] == str(repo / ".coderag.toml")
    assert [f["source"] for f in doc["files"]] == ["user config", "repository config", "$CODERAG_CONFIG",
                                                   "--config", "command line"]
    assert doc["files"][1]["trust"] == "untrusted" and "llm.api_key_env" in doc["files"][1]["ignored"]
    assert capsys.readouterr().err == ""  # `config` shows the ignored settings itself

    assert main(argv) == 0
    text = capsys.readouterr().out
    config = repo / ".coderag.toml"
    assert f"# repository config: {config}\n#   untrusted, so these are ignored: index.db_path" in text
    assert f"\n#   `coderag trust {repo}` allows them\n" in text
    assert "\nk = 3  # repository config\n" in text
    assert '\nbase_url = ""  # default; repository value ignored (untrusted)\n' in text

    assert main(["trust", str(repo)]) == 0
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["settings"]
    assert (got["llm.base_url"]["value"], got["llm.base_url"]["source"]) == ("http://127.0.0.1:9/v1",
                                                                             "repository config")


def test_config_masks_credentials_in_urls(make_repo, capsys):
    repo = make_repo(FILES)
    (repo / ".coderag.toml").write_text('[llm]\nbase_url = "https://me:hunter2-token@llm.example/v1"\n')
    assert main(["trust", str(repo)]) == 0
    assert main(["config", "--repo", str(repo)]) == 0
    assert main(["config", "--repo", str(repo), "--json"]) == 0
    out = capsys.readouterr().out
    assert "hunter2-token" not in out
    assert out.count("https://***@llm.example/v1") == 3


def test_an_invalid_setting_names_its_file(make_repo):
    repo = make_repo(FILES)
    (repo / ".coderag.toml").write_text("[search]\nk = 'many'\n")
    with pytest.raises(ConfigError, match=r"search\.k must be int.*\(in .*\.coderag\.toml\)"):
        load_settings(repo)


def test_config_defaults_alone(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["config", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["files"] == [] and doc["repository"] == str(tmp_path.resolve())
    assert {v["source"] for v in doc["settings"].values()} == {"default"}
    assert doc["settings"]["remote.token_env"]["value"] == list(Settings().remote.token_env)


# --------------------------------------------------------------------------- end to end


def _coderag(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coderag_tui", *args], capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.mark.slow  # `coderag ask` as a process, before and after trusting
def test_hostile_repo_config_sends_nothing_until_trusted(make_repo, tmp_path, server):
    repo = make_repo(FILES, git=True)
    stolen = tmp_path / "elsewhere" / "stolen.db"
    stolen.parent.mkdir()
    hostile(repo, _url(server), stolen)
    env = {**os.environ, KEY_ENV: SECRET, "ORT_DISABLE_TELEMETRY": "1"}
    question = ("ask", "what does tax_for return?", "--repo", str(repo), "--no-stream")

    assert _coderag("index", str(repo), "--no-embed", env=env).returncode == 0  # ask indexes nothing itself
    untrusted = _coderag(*question, env=env)
    assert untrusted.returncode == 0, untrusted.stderr
    assert server.requests == [] and server.probes == []  # nothing reached the configured endpoint
    assert SECRET not in untrusted.stdout + untrusted.stderr
    assert "llm.api_key_env" in untrusted.stderr and "coderag trust" in untrusted.stderr
    assert "Sources" in untrusted.stdout and "shop/tax.py:" in untrusted.stdout  # the local model answered
    assert not stolen.exists()  # nor was the index written where the repository said

    trusted = _coderag("trust", str(repo), env=env)
    assert trusted.returncode == 0, trusted.stderr
    assert SECRET not in trusted.stdout + trusted.stderr

    assert _coderag("index", str(repo), "--no-embed", env=env).returncode == 0  # where the config says
    honoured = _coderag(*question, env=env)
    assert honoured.returncode == 0, honoured.stderr
    # the provider may first ask the server for its context window (GET /props, /v1/models)
    posts = [r for r in server.requests if r["method"] == "POST"]
    assert all(r["method"] == "POST" for r in server.requests), server.requests
    assert len(posts) == 1
    request = posts[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert json.loads(request["body"])["model"] == "evil"
    assert ANSWER in honoured.stdout
    assert SECRET not in honoured.stdout + honoured.stderr
    assert "ignoring" not in honoured.stderr
    assert stolen.is_file()  # the trusted config's index path is honoured too
