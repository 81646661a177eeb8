"""Profiles (no model) and model summaries (the real bundled model, few tokens) on fixture repos."""

from __future__ import annotations

import json

from coderag_tui.config import Settings, SummarySettings
from coderag_tui.store import descriptions as store
from tests.helpers.summaries import FILES


def _profiles(service) -> dict[str, tuple[str, int, int, dict, str]]:
    out = {}
    for path in [r[0] for r in service.db.rows("SELECT path FROM files")]:
        head = next(u for u in store.units_of(service.db, [service.db.scalar(
            "SELECT id FROM files WHERE path=?", (path,))]) if u.kind == "file")
        prof = store.profile_of(service.db, head.id)
        assert prof is not None, path
        out[path] = prof
    return out


def test_profiles_describe_every_file_and_unit_without_a_model(make_repo, open_service):
    service = open_service(make_repo(FILES))
    prof = _profiles(service)
    roles = {p: v[0] for p, v in prof.items()}
    assert roles == {"app/main.py": "entry point", "app/core.py": "core module", "app/util.py": "utility",
                     "app/kinds.py": "types", "app/report.py": "module", "app/export.py": "module",
                     "config/settings.toml": "config", "tests/test_core.py": "test"}
    role, fan_in, fan_out, data, text = prof["app/core.py"]
    assert fan_in == 5 and fan_out == 1
    assert data["imports"] == ["app.util"] and data["doc"] == "Shopping cart arithmetic."
    assert data["imported_by"] == ["app/export.py", "app/kinds.py", "app/main.py", "app/report.py",
                                   "tests/test_core.py"]
    assert data["main"] == ["class Cart"]
    assert text.startswith("app/core.py: core module (python, 12 lines; referred to by 5 files, refers to 1).")
    # every unit has one; a method's lists its callers
    assert store.profile_count(service.db) == service.db.scalar("SELECT count(*) FROM units")
    total = next(u for u in store.units_of(service.db, [service.db.scalar(
        "SELECT id FROM files WHERE path='app/core.py'")]) if u.qualname == "Cart.total")
    role, fan_in, _, udata, utext = store.profile_of(service.db, total.id)
    assert (role, fan_in, udata["callers"]) == ("core module", 1, ["Cart.add"])
    assert "Signature: def total(self, price)." in utext
    # a file's role and docstring sentence are searchable words
    hits = service.db.description_search(["helpers"], 5)
    assert [service.db.scalar("SELECT f.path FROM units u JOIN files f ON f.id=u.file_id WHERE u.id=?", (h,))
            for h in hits] == ["app/util.py"]


def test_profiles_follow_edits_and_deletes(make_repo, open_service):
    repo = make_repo(FILES)
    service = open_service(repo)
    (repo / "app/extra.py").write_text("from app.util import rounded\n\n\ndef extra():\n    return rounded(1)\n")
    service.index()
    prof = _profiles(service)
    assert prof["app/util.py"][1] == 2 and "app/extra.py" in prof["app/util.py"][3]["imported_by"]
    (repo / "app/extra.py").unlink()
    (repo / "app/report.py").write_text("def report():\n    return 1\n")
    service.index()
    prof = _profiles(service)
    assert prof["app/util.py"][3]["imported_by"] == ["app/core.py"]
    assert "app/report.py" not in prof["app/core.py"][3]["imported_by"]
    assert prof["app/report.py"][2] == 0
    # no profile or keyword row is left behind by the units that went
    assert store.profile_count(service.db) == service.db.scalar("SELECT count(*) FROM units")
    assert not service.db.rows("SELECT unit_id FROM profiles WHERE unit_id NOT IN (SELECT id FROM units)")
    assert not service.db.description_search(["extra"], 5)


class _Canned:
    """A stand-in model for the unit test of how stored summary words reach search."""

    name = "canned"

    def stream(self, messages, *, max_tokens, temperature, stop=None):
        yield "Summary: Reconciles the refund ledger nightly."


def test_summary_words_are_searched(make_repo, open_service):
    from coderag_tui.answering.summarize import Summarizer

    service = open_service(make_repo(FILES), Settings(summaries=SummarySettings(search=True)))
    summarizer = Summarizer(service.db, _Canned(), "canned", lambda p, a, b: "code",
                            SummarySettings(budget=0))
    targets = [t for t in summarizer.plan(["app/util.py"]) if t.kind == "function"]
    assert summarizer.summarize(targets[0]) is not None
    stored = store.all_summaries(service.db)
    assert [(s.qualname, s.text) for s in stored] == [("rounded", "Reconciles the refund ledger nightly.")]
    hits = service.search("where is the refund ledger reconciled", k=3)
    assert hits and hits[0].unit.qualname == "rounded"
    assert any(r.startswith("summary") for r in hits[0].reasons)
    # a re-index of an unchanged file keeps the summary and its words
    (FILES_ROOT := service.root / "app/util.py").write_text(FILES["app/util.py"] + "\n")
    service.index()
    assert service.search("refund ledger", k=1)[0].unit.qualname == "rounded"
    assert FILES_ROOT.exists()


def test_a_context_ends_with_its_files_descriptions(make_repo, open_service):
    service = open_service(make_repo(FILES))
    ctx = service.context("Cart total rounded", max_tokens=2000)
    notes = [p for p in ctx.pieces if p.title == "about this file"]
    assert notes and ctx.pieces[-len(notes):] == tuple(notes)
    assert any(n.text.startswith("app/core.py: core module") for n in notes)
    assert {n.path for n in notes} <= {p.path for p in ctx.pieces if p.role != "metadata"}
    assert ctx.tokens <= ctx.budget and sum(n.tokens for n in notes) <= 0.08 * ctx.budget


def test_export_and_show_write_profiles_and_summaries(make_repo, open_service, capsys, tmp_path):
    from coderag_tui.cli.main import main

    service = open_service(make_repo(FILES))
    key = store.summary_key("app/util.py", "function", "rounded")
    store.put_summary(service.db, store.StoredSummary(key, "app/util.py", "function", "rounded", "Rounds money.",
                                                      "llama:x.gguf", "1", "", "", True, 0.0, 0.0))
    common = ["--repo", str(service.root), "--db", str(service.db_path)]
    assert main(["export", *common, "--format", "json", "app/util.py"]) == 0
    files = json.loads(capsys.readouterr().out)
    assert [f["path"] for f in files] == ["app/util.py"] and files[0]["role"] == "utility"
    assert files[0]["units"][0]["summary"] == "Rounds money." and files[0]["units"][0]["stale"] is True
    assert main(["summarize", *common, "--show", "app"]) == 0
    out = capsys.readouterr().out
    assert "## app/core.py\n" in out and "*core module*" in out and "- `rounded` (function, line 4): Rounds money." in out
    assert "## tests/test_core.py" not in out
    target = tmp_path / "out.md"
    assert main(["export", *common, "-o", str(target)]) == 0
    assert target.read_text().count("## ") == 8


PLUGINS = {
    "plugins/alpha.py": '"""\n$description Global live streaming platform for gamers.\n"""\nimport re\n\n\n'
                        "class Alpha:\n    def fetch(self):\n        return re.compile('x')\n",
    "stream/playlist.py": "def reload_playlist(url):\n    return url.strip()\n",
}


def test_a_file_profile_ranks_files_not_the_files_head(make_repo, open_service):
    service = open_service(make_repo(PLUGINS))
    query = "which plugin serves the global live streaming platform for gamers"
    files = service.search_files(query, k=3)
    assert files and files[0].unit.path == "plugins/alpha.py"
    assert any(r.startswith("summary") for r in files[0].reasons)  # the profile still ranks files
    hits = service.search(query, k=5)
    # ... but in unit search a whole file is no hit for its profile's words alone
    assert not any(h.unit.kind == "file" and any(r.startswith("summary") for r in h.reasons) for h in hits)
