"""The command line as a new user meets it: piped answers that come as they are written, a
qualified symbol that names one definition, unknown paths and symbols said to be unknown,
paths and signatures kept on one line, and typos that get a "did you mean".

Real repositories written by each test, indexed for real; where a model answers, the real
answerer runs over a scripted provider (isolates the model).
"""

from __future__ import annotations

import io
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.cli import commands_ask
from coderag_tui.cli.main import main
from coderag_tui.models import ChatMessage, ModelInfo
from coderag_tui.service import CodeRag
from tests.helpers.app import make_service


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- piped ask


class Pipe(io.StringIO):
    """stdout as a pipe: not a terminal; only what was flushed has reached the reader."""

    def __init__(self) -> None:
        super().__init__()
        self.read_so_far = ""

    def isatty(self) -> bool:
        return False

    def flush(self) -> None:
        super().flush()
        self.read_so_far = self.getvalue()


class LineByLine:
    """A provider writing three lines, noting before each what the reader of the pipe had
    (isolation only: retrieval, the opening and the answerer are real)."""

    name = "scripted"

    def __init__(self, pipe: Pipe) -> None:
        self.pipe = pipe
        self.seen: list[str] = []

    def context_window(self) -> int:
        return 4096

    def count_tokens(self, text: str) -> int:
        return len(text) // 4 + 1

    def stream(self, messages: list[ChatMessage], *, max_tokens: int, temperature: float,
               stop: list[str] | None = None,
               should_stop: Callable[[], bool] | None = None) -> Iterator[str]:
        for line in ("Cart.total adds the tax\n", "to the subtotal (shop/cart.py:18-20)\n", "and rounds it.\n"):
            self.seen.append(self.pipe.read_so_far)
            yield line

    def info(self) -> ModelInfo:
        return ModelInfo("scripted", "scripted", "", 4096)


def test_piped_ask_prints_the_opening_then_each_line_as_it_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = Pipe()
    model = LineByLine(pipe)

    class Service(CodeRag):
        def llm(self, name: str | None = None) -> Any:
            return model

    service = make_service(tmp_path, Service)
    service.index()
    monkeypatch.setattr(commands_ask, "open_service", lambda args: service)
    monkeypatch.setattr("sys.stdout", pipe)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["ask", "what does Cart.total return"]) == 0
    before_model, after_one, after_two = model.seen
    # the opening (what the index knows: the code that answers) is out before the model writes
    assert "shop/cart.py" in before_model and "Cart.total adds" not in before_model
    assert after_one.endswith("Cart.total adds the tax\n")
    assert after_two.endswith("to the subtotal (shop/cart.py:18-20)\n")
    out = pipe.getvalue()
    assert out.count("Cart.total adds the tax") == 1  # printed once, not again at the end
    assert "and rounds it." in out and "Sources" in out and "\x1b" not in out


# --------------------------------------------------------------------------- names and paths

VIEWS = {
    "web/app.py": '''class App:
    def dispatch(self, request):
        """Route the request to its view."""
        return self.view(request)

    def view(self, request):
        return request


def serve(app, request):
    return app.dispatch(request)
''',
    "web/views.py": '''class View:
    def dispatch(self, request):
        return "view"


class MethodView(View):
    def dispatch(self, request):
        return "method"
''',
}


@pytest.fixture
def views(make_repo: Callable[..., Path], tmp_path: Path) -> list[str]:
    """An indexed repository with three `dispatch` methods; the options that name it."""
    root = make_repo(VIEWS)
    common = ["--repo", str(root), "--db", str(tmp_path / "index.db")]
    assert main(["index", "--no-embed", *common]) == 0
    return common


def test_a_qualified_name_that_matches_exactly_shows_that_definition_alone(
        views: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code, out, err = run(["symbol", "App.dispatch", *views], capsys)
    assert code == 0
    assert out.startswith("web/app.py:2-4  method    App.dispatch") and "View.dispatch" not in out
    assert "2 more definitions match 'App.dispatch': -n 20 lists them" in err
    code, out, _ = run(["symbol", "App.dispatch", "-n", "20", *views], capsys)  # asked for more
    assert out.startswith("web/app.py:2-4") and "MethodView.dispatch" in out
    code, out, _ = run(["symbol", "dispatch", *views], capsys)  # a plain name: every definition
    assert out.count("dispatch") >= 3


def test_callers_of_an_unknown_name_say_it_is_unknown(views: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code, out, err = run(["callers", "nosuchthing", *views], capsys)
    assert code == 1 and out == ""  # no results
    assert err.startswith("no definition named 'nosuchthing' (") and err.count("\n") == 1
    assert "no callers found" not in err
    code, out, err = run(["callers", "App.view", *views], capsys)
    assert code == 0 and "App.dispatch" in out and "no definition" not in err


def test_a_path_filter_under_which_nothing_is_indexed_is_an_error(
        views: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code, out, err = run(["search", "dispatch", "--path", "nonexist/", *views], capsys)
    assert code == 2 and out == ""
    assert err == "coderag: error: no indexed file is under 'nonexist/' (folders: web/)\n"
    code, _, err = run(["search", "dispatch", "--path", "wbe", *views], capsys)
    assert code == 2 and "did you mean 'web/'?" in err
    code, out, _ = run(["search", "dispatch", "--path", "web/", *views], capsys)
    assert code == 0 and "web/app.py" in out


# --------------------------------------------------------------------------- status


def test_status_names_the_secret_files_and_the_commit_of_a_git_repository(
        make_repo: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_repo({"app.py": "def main():\n    return 1\n", ".env": "API_KEY=sk-not-for-the-index\n",
                      "deploy/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n"}, git=True)
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    common = ["--repo", str(root), "--db", str(tmp_path / "index.db")]
    assert main(["index", "--no-embed", *common]) == 0
    capsys.readouterr()
    code, out, _ = run(["status", *common], capsys)
    assert code == 0
    assert " ".join(out.split("\nindex")[0].split()) == f"repository {root} @ {head[:12]}"  # (wrapped at 80)
    assert "  secret (never read): .env, deploy/id_rsa" in out.splitlines()
    assert "sk-not-for-the-index" not in out
    code, out, _ = run(["status", "--json", *common], capsys)
    data = json.loads(out)
    assert data["commit"] == head and data["secrets"] == [".env", "deploy/id_rsa"]


def test_status_of_a_folder_that_is_no_git_repository_has_no_commit(
        make_repo: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_repo({"app.py": "def main():\n    return 1\n"})
    common = ["--repo", str(root), "--db", str(tmp_path / "index.db")]
    assert main(["index", "--no-embed", *common]) == 0
    capsys.readouterr()
    code, out, _ = run(["status", "--json", *common], capsys)
    assert code == 0 and json.loads(out)["commit"] == ""


# --------------------------------------------------------------------------- what is printed

SIGNATURES = {
    "pkg/server.py": '''class Server:
    def __init__(
        self,
        host: str,
        port: int = 8080,
    ) -> None:
        self.host, self.port = host, port

    def route(self, rule: str, **options: object) -> None:
        return None
''',
}


def test_a_signature_written_over_lines_prints_on_one_line_as_written(
        make_repo: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_repo(SIGNATURES)
    common = ["--repo", str(root), "--db", str(tmp_path / "index.db")]
    assert main(["index", "--no-embed", *common]) == 0
    capsys.readouterr()
    code, out, _ = run(["symbol", "Server.__init__", *common], capsys)
    assert code == 0
    signature = "def __init__(self, host: str, port: int = 8080) -> None"  # not "( self, ..., )"
    assert out.splitlines() == ["pkg/server.py:2-7", "    method    Server.__init__", f"    {signature}"]
    assert all(len(line) <= 80 for line in out.splitlines())
    code, out, _ = run(["symbol", "Server.route", "--json", *common], capsys)
    assert json.loads(out)[0]["signature"] == "def route(self, rule: str, **options: object) -> None"


def test_search_shows_how_a_result_was_found_only_when_asked(
        views: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code, out, _ = run(["search", "route the request", *views], capsys)
    assert code == 0 and "web/app.py" in out and "bm25#" not in out and "[" not in out
    code, out, _ = run(["search", "route the request", "--explain", *views], capsys)
    assert code == 0 and "bm25#" in out
    code, out, _ = run(["search", "route the request", "--json", *views], capsys)
    assert "bm25#" in out  # JSON always has them


def test_a_config_key_typo_gets_a_did_you_mean(
        make_repo: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_repo({"a.py": "x = 1\n"})
    config = tmp_path / "typo.toml"
    config.write_text('[llm]\nmodle = "qwen"\n')
    capsys.readouterr()
    code, out, err = run(["status", "--repo", str(root), "--config", str(config)], capsys)
    assert code == 2 and out == ""
    assert err == f"coderag: error: config: unknown setting llm.modle (in {config}) (did you mean llm.model?)\n"
    config.write_text('[serach]\nk = 5\n')
    code, _, err = run(["status", "--repo", str(root), "--config", str(config)], capsys)
    assert code == 2 and "unknown section [serach]" in err and "did you mean [search]?" in err


def test_a_listed_model_that_is_not_on_disk_suggests_pulling_it(
        make_repo: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_repo({"a.py": "def f():\n    return 1\n"})
    common = ["--repo", str(root), "--db", str(tmp_path / "index.db")]
    assert main(["index", "--no-embed", *common]) == 0
    config = tmp_path / "quiet.toml"
    config.write_text("[llm]\ndiscover = false\n")
    capsys.readouterr()
    code, out, err = run(["ask", "what does f return", "--model", "qwen2.5-coder-1.5b", "--config", str(config),
                          *common], capsys)
    assert code == 2
    assert err == ("coderag: error: 'qwen2.5-coder-1.5b' is not on this machine (download it once, with a "
                   "network: `coderag models pull qwen2.5-coder-1.5b`)\n")


def test_models_list_keeps_a_path_on_one_line(
        make_repo: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from coderag_tui.answering.providers.local import bundled_model_path

    bundled = bundled_model_path()
    if bundled is None:
        pytest.skip("needs the bundled GGUF")
    deep = tmp_path / "a_folder_with_a_rather_long_name" / "and_another_one_below_it" / "models"
    deep.mkdir(parents=True)
    model = deep / "SmolLM2-135M-Instruct.Q4_1.gguf"
    model.symlink_to(bundled)
    assert len(str(model)) > 80
    config = tmp_path / "model.toml"
    config.write_text(f'[llm]\nmodel = "{model}"\ndiscover = false\n')
    root = make_repo({"a.py": "x = 1\n"})
    capsys.readouterr()
    code, out, _ = run(["models", "list", "--repo", str(root), "--config", str(config)], capsys)
    assert code == 0
    assert f"    {model}" in out.splitlines()


# --------------------------------------------------------------------------- watch


def test_a_rename_with_its_caller_in_the_same_file_reports_the_orphan(
        make_repo: Callable[..., Path], tmp_path: Path) -> None:
    """What `coderag watch` prints after each batch: the calls a change orphaned, also those of
    the changed file itself (a function renamed, its caller beside it still calling the old name)."""
    from tests.helpers.watch import Recorder, _settings, wait_for
    root = make_repo({"geo.py": "def area(w, h):\n    return w * h\n\n\ndef room():\n    return area(2, 3)\n"})
    service = CodeRag(root, _settings(), tmp_path / "index.db")
    service.index()
    events = Recorder()
    watcher = service.watch(events)
    try:
        time.sleep(0.1)
        (root / "geo.py").write_text("def surface(w, h):\n    return w * h\n\n\ndef room():\n    return area(2, 3)\n")
        wait_for(lambda: events.phase("indexed"))
        event = events.phase("indexed")[-1]
        assert event.new_orphans == 1 and event.orphaned == 1
        assert event.orphans[0].source is not None and event.orphans[0].source.qualname == "room"
        assert "area (was area (geo.py:1))" in event.orphans[0].name
        assert "1 orphaned caller" in event.message and "room" in event.message
        # it stays orphaned while the file changes on, until the call resolves again
        (root / "geo.py").write_text("def surface(w, h):\n    return w * h\n\n\ndef room():\n    return area(2, 4)\n")
        wait_for(lambda: len(events.phase("indexed")) >= 2)
        assert [e.source.qualname for e in service.status().orphaned if e.source] == ["room"]
        (root / "geo.py").write_text("def area(w, h):\n    return w * h\n\n\ndef room():\n    return area(2, 4)\n")
        wait_for(lambda: len(events.phase("indexed")) >= 3)
        assert service.status().orphaned == ()
    finally:
        watcher.stop()
        service.close()


# --------------------------------------------------------------------------- progress


SMALL = {
    "shop/cart.py": '"""Cart."""\n\n\nclass Cart:\n    def add(self, price):\n        return fee(price)\n\n'
                    '    def clear(self):\n        return None\n\n\ndef fee(price):\n    return price + 1\n',
    "shop/pay.py": "from shop.cart import fee\n\n\ndef pay(x):\n    return fee(x)\n",
}


class Summaries:
    """A local model that writes a new summary each time (isolation only: the summarizer, its
    plan and the background runner are real)."""

    name = "scripted"

    def __init__(self) -> None:
        self.calls = 0

    def context_window(self) -> int:
        return 4096

    def count_tokens(self, text: str) -> int:
        return len(text) // 4 + 1

    def stream(self, messages: list[ChatMessage], *, max_tokens: int, temperature: float,
               stop: list[str] | None = None, should_stop: Callable[[], bool] | None = None) -> Iterator[str]:
        self.calls += 1
        yield f"Summary number {self.calls}."

    def info(self) -> ModelInfo:
        return ModelInfo("scripted.gguf", "llama", "", 4096)


def test_the_summaries_count_is_one_count_and_one_format(
        make_repo: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`summarize --estimate`, the background summaries' progress (the app's status line and
    `coderag watch`) count the same summaries, and the total does not grow as they are made."""
    from dataclasses import replace

    from coderag_tui.config import Settings, SummarySettings
    from coderag_tui.progress_text import background_summaries_text
    from coderag_tui.tui.widgets.status_bar import summaries_line

    model = Summaries()

    class Service(CodeRag):
        def _provider(self, name: str | None) -> Any:
            return model

    settings = replace(Settings(), summaries=SummarySettings(budget=0))
    service = Service(make_repo(SMALL), settings, tmp_path / "index.db")
    service.index()
    service.long_lived = True
    events: list[Any] = []
    service.start_summaries(events.append)
    assert service.summaries.wait_idle(60)
    assert {e.total for e in events if e.phase == "summarize"} == {8}

    # fee changes: it, its callers, their files and folder are out of date; Cart is made again
    # from its method's new summary, so it is counted from the start
    root = service.root
    (root / "shop/cart.py").write_text(SMALL["shop/cart.py"].replace("price + 1", "price + 2"))
    service.index()
    monkeypatch.setattr("coderag_tui.cli.commands_summarize.open_service", lambda args: service)
    capsys.readouterr()
    assert main(["summarize", "--estimate", "--json"]) == 0
    estimated = json.loads(capsys.readouterr().out)["requests"]
    events.clear()
    service.summaries.kick()
    assert service.summaries.wait_idle(60)
    totals = {e.total - 8 for e in events if e.phase == "summarize"}  # (8 made by the first pass)
    assert totals == {estimated} == {7}
    last = [e for e in events if e.phase == "summarize"][-1]
    assert summaries_line(last) == background_summaries_text(last)  # the app writes what watch writes
    service.summaries.stop()
    service.close()


# --------------------------------------------------------------------------- call confidence


def test_a_self_call_in_the_class_body_to_its_one_definition_is_not_a_guess(
        make_repo: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_repo({"box.py": '''class Box:
    def size(self):
        return 2

    area = property(lambda self: self.size() * 2)


def measure(box):
    return box.size()
'''})
    common = ["--repo", str(root), "--db", str(tmp_path / "index.db")]
    assert main(["index", "--no-embed", *common]) == 0
    capsys.readouterr()
    code, out, _ = run(["callers", "Box.size", "--json", *common], capsys)
    assert code == 0
    by = {e["caller"]["qualname"] if e.get("caller") else e.get("qualname"): e for e in json.loads(out)}
    found = {name: (e.get("resolved_by"), e.get("confidence")) for name, e in by.items()}
    assert found["Box"] == ("scope", 1.0)  # `self.size()` in Box's own body
    code, out, _ = run(["callers", "Box.size", *common], capsys)
    assert "box.py:5  class     Box\n" in out and "Box  [guess" not in out
