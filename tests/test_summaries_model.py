"""Model summaries with a real local GGUF (few tokens each) on a fixture repo: made bottom up,
invalidated by edits (the unit, its parents, callers and importers), regenerated for another
model, resumed after a kill, and never blocking search.

The only GGUF at hand is the bundled SmolLM2-135M, which as the tiny default model writes no
summaries (its summaries were wrong): these tests load the same file under another name, as a
user's own model, since what they test is the pipeline, not the text."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from coderag_tui.config import Settings, SummarySettings
from coderag_tui.store import descriptions as store

pytestmark = pytest.mark.usefixtures("bundled_gguf")  # every test here has the bundled GGUF write


def _model() -> str:
    """The bundled GGUF under another name: a local model that is not the tiny default."""
    import tempfile

    from coderag_tui.answering.providers.local import bundled_model_path

    bundled = bundled_model_path()
    link = Path(tempfile.gettempdir()) / "coderag-test-models" / "fixture-model.gguf"
    if bundled is not None and not link.exists():
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(bundled)
    return str(link)


SMALL = {
    "shop/cart.py": '"""Cart."""\n\n\nclass Cart:\n    def add(self, price):\n        return fee(price)\n\n'
                    '    def clear(self):\n        return None\n\n\ndef fee(price):\n    return price + 1\n',
    "shop/pay.py": "from shop.cart import fee\n\n\ndef pay(x):\n    return fee(x)\n",
}


def _settings() -> Settings:
    s = Settings()
    return replace(s, summaries=SummarySettings(budget=0, max_tokens=12, code_chars=400),
                   llm=replace(s.llm, n_ctx=2048, threads=1, model=_model()))


def test_summaries_bottom_up_stale_after_edits_and_a_model_change(make_repo, open_service):
    repo = make_repo(SMALL)
    service = open_service(repo, _settings())
    thread = service.summarize_in_background()
    found_while_running = []
    while thread.is_alive():  # search is never blocked by the summarizer
        found_while_running.append(bool(service.search("fee", k=3)))
        time.sleep(0.2)
    thread.join()
    result = thread.result
    assert not isinstance(result, Exception), result
    assert found_while_running and all(found_while_running)
    assert result.made == result.planned == 8 and result.failed == 0
    stored = sorted(store.all_summaries(service.db), key=lambda s: s.created)
    order = [(s.kind, s.qualname) for s in stored]
    levels = [{"function": 0, "method": 0, "class": 1, "file": 2, "folder": 3}[k] for k, _ in order]
    assert levels == sorted(levels)  # functions and methods, then the class, the files, the folder
    assert {s.model for s in stored} == {result.model} and all(s.text for s in stored)
    assert service.summarize().made == 0  # all current

    # an edit of fee marks fee, its callers (Cart.add, pay), its file, the importer and the folder
    (repo / "shop/cart.py").write_text(SMALL["shop/cart.py"].replace("price + 1", "price + 2"))
    service.index()
    stale = {s.qualname for s in store.all_summaries(service.db) if s.stale}
    assert stale == {"fee", "Cart.add", "shop/cart.py", "pay", "shop/pay.py", "shop"}
    before = {s.key: s.created for s in store.all_summaries(service.db)}
    again = service.summarize()
    after = {s.key: s for s in store.all_summaries(service.db)}
    remade = {after[k].qualname for k in after if after[k].created != before.get(k)}
    # Cart is redone only if its method's new summary reads differently (its prompt holds them)
    assert stale <= remade <= stale | {"Cart"} and "Cart.clear" not in remade
    assert again.made == len(remade) and again.current == 8 - len(remade)
    assert not any(s.stale for s in after.values())

    # another model (here: the same weights under another name) regenerates everything
    from coderag_tui.answering.summarize import Summarizer

    other = Summarizer(service.db, service.llm(), "llama:other.gguf", service.summarizer().read_code,
                       service.settings.summaries)
    assert other.run(other.plan()).made == 8
    assert {s.model for s in store.all_summaries(service.db)} == {"llama:other.gguf"}


KILL_SCRIPT = """
import sys
from dataclasses import replace
from pathlib import Path
from coderag_tui.config import Settings, SummarySettings
from coderag_tui.service import CodeRag
s = Settings()
s = replace(s, summaries=SummarySettings(budget=0, max_tokens=12, code_chars=400),
            llm=replace(s.llm, n_ctx=2048, threads=1, model=sys.argv[3]))
svc = CodeRag(Path(sys.argv[1]), s, Path(sys.argv[2]))
svc.long_lived = True
svc.start_summaries()  # the background summarizer, as the app and `coderag watch` start it
svc.summaries.wait_idle()
"""


def test_a_killed_run_resumes(make_repo, open_service, tmp_path):
    repo = make_repo(SMALL)
    service = open_service(repo, _settings())
    db_path = str(service.db_path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(repo), db_path, _model()], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 600
        while store.summary_count(service.db) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    kept = store.summary_count(service.db)
    assert 2 <= kept < 8
    result = service.summarize()
    assert result.current == kept and result.made == 8 - kept
    assert store.summary_count(service.db) == 8
    assert json.dumps([s.text for s in store.all_summaries(service.db)])


def test_a_retrieved_unit_is_summarized_on_demand(make_repo, open_service):
    service = open_service(make_repo(SMALL), _settings())
    hit = service.search("fee", k=1)[0]
    assert service.summarize_units([hit.unit.id]) == 1
    assert service.summarize_units([hit.unit.id]) == 0  # current: not made again
    [made] = store.all_summaries(service.db)
    assert (made.qualname, made.kind) == (hit.unit.qualname, hit.unit.kind) and made.text


def _probe_generations(monkeypatch) -> dict[str, int]:
    """Counts the llama instance's generations in progress (the real one runs inside)."""
    from coderag_tui.answering.providers.local import LlamaProvider

    original = LlamaProvider.stream
    seen = {"now": 0, "peak": 0, "cut": 0}
    lock = threading.Lock()

    def stream(self, messages, *, max_tokens, temperature, stop=None, should_stop=None):
        with lock:
            seen["now"] += 1
            seen["peak"] = max(seen["peak"], seen["now"])
        try:
            yield from original(self, messages, max_tokens=max_tokens, temperature=temperature, stop=stop,
                                should_stop=should_stop)
            if should_stop is not None and should_stop():
                seen["cut"] += 1
        finally:
            with lock:
                seen["now"] -= 1

    monkeypatch.setattr(LlamaProvider, "stream", stream)
    return seen


def _wait_for(check, seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_background_summaries_yield_to_an_answer_then_summarize_its_units(make_repo, open_service, monkeypatch):
    seen = _probe_generations(monkeypatch)
    s = _settings()
    s = replace(s, summaries=replace(s.summaries, budget=1),
                llm=replace(s.llm, max_tokens=16, tiny_max_tokens=16, tools="off", cache_similarity=0))
    service = open_service(make_repo(SMALL), s)
    service.long_lived = True  # as in the app: background work and on-demand summaries
    events: list = []
    planned = len(service.summarizer().plan())
    assert service.start_summaries(events.append)
    _wait_for(lambda: seen["now"] > 0)  # a summary is being generated: now an answer comes
    answer = list(service.ask("what does fee return?"))
    assert [e.kind for e in answer if e.kind in ("done", "error")] == ["done"]
    hits = {(h.unit.path, h.unit.kind, h.unit.qualname) for h in service.context("what does fee return?").hits}
    assert service.summaries.wait_idle(600)
    assert seen["peak"] == 1  # never two generations on the one llama instance
    stored = {(x.path, x.kind, x.qualname): x for x in store.all_summaries(service.db)}
    # the budget's plan, and on demand (after the answer) the units retrieved for it
    summarizable = {h for h in hits if h[1] in ("function", "method", "class", "file")}
    assert summarizable and summarizable <= set(stored) and len(stored) > planned
    progress = [e for e in events if e.phase == "summarize"]
    assert progress and progress[-1].done == progress[-1].total and progress[-1].rate > 0
    assert events[-1].phase == "done"


def test_background_summaries_remake_what_an_edit_made_stale(make_repo, open_service):
    repo = make_repo(SMALL)
    service = open_service(repo, _settings())
    service.long_lived = True
    assert service.start_summaries() and service.summaries.wait_idle(600)
    before = {x.key: x.created for x in store.all_summaries(service.db)}
    assert len(before) == 8
    (repo / "shop/cart.py").write_text(SMALL["shop/cart.py"].replace("price + 1", "price + 2"))
    service.index()  # as the watcher does, then it starts the summaries again
    stale = {x.qualname for x in store.all_summaries(service.db) if x.stale}
    assert stale == {"fee", "Cart.add", "shop/cart.py", "pay", "shop/pay.py", "shop"}
    assert service.start_summaries() and service.summaries.wait_idle(600)
    after = store.all_summaries(service.db)
    assert not any(x.stale for x in after)
    assert stale <= {x.qualname for x in after if x.created != before[x.key]}
