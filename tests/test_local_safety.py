"""What another local user, a swapped file or a repository's own config can do to an index on
this machine: file modes of the index (and its WAL and shared memory) and its folders, a file
replaced by a symbolic link after indexing (every reader: the service, MCP's read_lines, the
context's code), `[index] workers` from an untrusted config, and `coderag config` printing the
server's tokens; with the parts of the server that need no server (webhook signatures, the
per-client slots)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import stat
from pathlib import Path

import pytest

from coderag_tui.cli import main
from coderag_tui.config import ServerSettings, Settings, load_settings
from coderag_tui.errors import RepoError
from coderag_tui.service import CodeRag
from tests.helpers.files import write_tree

FILES = {
    "app/tax.py": 'def tax_for(amount):\n    """The sales tax."""\n    return amount * 0.2\n',
    "app/long.py": "".join(f"X{n} = {n}\n" for n in range(1, 51)),
    ".env": "DATABASE_PASSWORD=hunter2-very-secret\n",
    "config/prod.pem": "-----BEGIN PRIVATE KEY-----\nsecret-key-material\n",
}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_the_index_and_its_folders_are_this_users_alone(tmp_path: Path) -> None:
    umask = os.umask(0o022)  # the usual one: files 0644, folders 0755 unless coderag says otherwise
    try:
        _check_modes(tmp_path)
    finally:
        os.umask(umask)


def _check_modes(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", FILES)
    service = CodeRag.open(repo)  # the default place: the user's cache folder
    service.index()
    db = service.db_path
    wal, shm = db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")
    assert wal.exists() and shm.exists()  # a connection is open: both are there
    assert {p.name: _mode(p) for p in (db, wal, shm)} == {p.name: 0o600 for p in (db, wal, shm)}
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "coderag"
    assert _mode(db.parent) == 0o700 and _mode(cache) == 0o700
    service.close()

    in_repo = write_tree(tmp_path / "repo2", FILES)
    (in_repo / ".coderag.toml").write_text('[index]\nlocation = "repo"\n')
    from coderag_tui.config import read_toml
    from coderag_tui.trust import grant, split_restricted

    grant(in_repo, split_restricted(read_toml(in_repo / ".coderag.toml"))[1])
    kept = CodeRag.open(in_repo)
    kept.index()
    assert kept.db_path.parent == in_repo / ".coderag"
    assert _mode(kept.db_path.parent) == 0o700 and _mode(kept.db_path) == 0o600
    kept.close()


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_an_index_made_before_is_narrowed_when_opened(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", FILES)
    service = CodeRag(repo, Settings(), tmp_path / "index.db")
    service.index()
    service.close()
    (tmp_path / "index.db").chmod(0o644)  # as an earlier version left it
    again = CodeRag(repo, Settings(), tmp_path / "index.db")
    assert again.status().files == 2
    assert _mode(tmp_path / "index.db") == 0o600
    again.close()


def test_a_file_swapped_for_a_link_is_refused_by_every_reader(tmp_path: Path) -> None:
    from coderag_tui.answering.toolbox import CodeRagTools
    from coderag_tui.retrieval.source import CodeReader
    from coderag_tui.workspace import Workspace

    repo = write_tree(tmp_path / "repo", FILES)
    outside = write_tree(tmp_path / "outside", {"id_rsa": "PRIVATE-KEY-OUTSIDE\n"})
    service = CodeRag(repo, Settings(), tmp_path / "index.db")
    service.index()
    assert service.read_lines("app/tax.py", 1, 1) == ["def tax_for(amount):"]
    (repo / "app" / "tax.py").unlink()
    (repo / "app" / "tax.py").symlink_to(repo / ".env")  # a link inside the repository
    (repo / "app" / "long.py").unlink()
    (repo / "app" / "long.py").symlink_to(outside / "id_rsa")  # and one out of it
    for path in ("app/tax.py", "app/long.py"):
        with pytest.raises(RepoError, match="symbolic link"):
            service.read_lines(path)
    tools = CodeRagTools(service)
    tools.ready.set()
    for path in ("app/tax.py", "app/long.py"):
        text = tools.read_lines(path)
        assert "hunter2" not in text and "PRIVATE-KEY" not in text
    ws = Workspace([service])
    with pytest.raises(RepoError, match="symbolic link"):
        ws.lines("app/tax.py", 1, 400)
    assert "hunter2" not in ws.snippet(service.search("tax_for", 1)[0])
    reader = CodeReader(service.db, repo)
    assert "hunter2" not in reader.text("app/tax.py", 1, 3)  # the chunks' own text, never the link
    # a folder on the way swapped for a link is refused as well
    (repo / "app" / "tax.py").unlink()
    (repo / "app" / "tax.py").write_text(FILES["app/tax.py"])
    (repo / "app").rename(repo / "app-old")
    (repo / "app").symlink_to(repo / "app-old")
    with pytest.raises(RepoError, match="symbolic link"):
        service.read_lines("app/tax.py")
    service.close()


def test_secret_and_excluded_files_are_refused_at_read_time(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", {**FILES, "node_modules/lib/x.js": "secretish()\n",
                                           ".gitignore": "ignored.py\n", "ignored.py": "TOKEN = 'x'\n"})
    service = CodeRag(repo, Settings(), tmp_path / "index.db")
    service.index()
    for path, why in ((".env", "holds secrets"), ("config/prod.pem", "holds secrets"),
                      ("node_modules/lib/x.js", "excluded"), ("ignored.py", "excluded"), ("../outside", "outside")):
        with pytest.raises(RepoError, match=why):
            service.read_lines(path)
    assert service.read_lines("app/long.py", 3, -1) == []  # an end before the start: no lines
    assert service.read_lines("app/long.py", 49, 400) == ["X49 = 49", "X50 = 50"]
    service.close()


def test_workers_from_an_untrusted_config_are_ignored_and_capped(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from coderag_tui.trust import grant

    repo = write_tree(tmp_path / "repo", FILES)
    (repo / ".coderag.toml").write_text("[index]\nworkers = 64\n")
    assert load_settings(repo).index.workers == 0  # untrusted: ignored, with one line saying so
    assert "index.workers" in capsys.readouterr().err
    from coderag_tui.indexing.workers import usable_cores, worker_count

    grant(repo, {"index.workers": 64})
    trusted = load_settings(repo)
    assert trusted.index.workers == 64
    assert worker_count(trusted) == usable_cores()  # never more processes than cores
    assert worker_count(Settings()) == usable_cores()


def test_config_never_prints_the_servers_tokens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    read, admin, hook = "read-" + "1" * 30, "admin-" + "2" * 30, "hook-" + "3" * 30
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\nread_tokens = ["{read}"]\nadmin_tokens = ["{admin}"]\n')
    if "webhook_secret" in ServerSettings.__dataclass_fields__:
        config.write_text(config.read_text() + f'webhook_secret = "{hook}"\n')
    for args in (["config", "--config", str(config)], ["config", "--config", str(config), "--json"]):
        assert main(args) == 0
        out = capsys.readouterr().out
        assert read not in out and admin not in out and hook not in out
        assert "<hidden>" in out


def test_webhook_signatures_of_each_platform() -> None:
    from coderag_tui.server.hooks import verified

    secret, body = "s" * 24, b'{"ref": "refs/heads/main"}'
    good = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert verified("github", secret, {"x-hub-signature-256": good}, body)
    assert verified("bitbucket", secret, {"x-hub-signature": good}, body)
    assert verified("gitlab", secret, {"x-gitlab-token": secret}, body)
    tampered = body.replace(b"main", b"evil")
    assert not verified("github", secret, {"x-hub-signature-256": good}, tampered)
    assert not verified("github", secret, {"x-hub-signature": good}, body)  # GitHub signs with sha256 only
    assert not verified("bitbucket", secret, {"x-hub-signature": "sha1=" + good[7:]}, body)
    assert not verified("gitlab", secret, {"x-gitlab-token": secret + "x"}, body)
    assert not verified("github", "", {"x-hub-signature-256": good}, body)  # no secret: nothing is verified


def test_one_client_has_a_few_requests_running_and_a_bounded_queue() -> None:
    from coderag_tui.server.limits import WAITING_FACTOR, ClientSlots

    async def scenario() -> tuple[int, bool, int, bool]:
        slots = ClientSlots(2)
        assert await slots.enter("a") and await slots.enter("a")
        waiting = [asyncio.create_task(slots.enter("a")) for _ in range(2 * WAITING_FACTOR)]
        await asyncio.sleep(0)
        refused = not await slots.enter("a")  # beyond the queue: refused at once
        other = await slots.enter("b")  # another client is not held up
        running_before = sum(t.done() for t in waiting)
        slots.leave("a")
        await asyncio.sleep(0)
        return running_before, refused, sum(t.done() for t in waiting), other

    before, refused, after, other = asyncio.run(scenario())
    assert (before, refused, after, other) == (0, True, 1, True)
