"""Summaries that never get in the way: the model gate (answers first), the rate limiter, remote
models (real loopback servers: a 429 then success, a failing server and its fallback, the
estimate asked before spending), and the CLI's and status bar's progress lines."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from typing import Any

from coderag_tui.answering.model_gate import ModelGate
from coderag_tui.answering.summary_remote import RateLimiter
from coderag_tui.cli.main import main
from coderag_tui.cli.progress import progress_text
from coderag_tui.config import LLMSettings, ProviderSettings, Settings, SummarySettings
from coderag_tui.models import Progress
from coderag_tui.store import descriptions as store
from tests.helpers.loopback import Handler, openai_sse

SMALL = {
    "shop/cart.py": '"""Cart."""\n\n\nclass Cart:\n    def add(self, price):\n        return fee(price)\n\n'
                    '    def clear(self):\n        return None\n\n\ndef fee(price):\n    return price + 1\n',
    "shop/pay.py": "from shop.cart import fee\n\n\ndef pay(x):\n    return fee(x)\n",
}


# --------------------------------------------------------------------------- the gate
def test_background_work_waits_for_an_answer_and_gives_the_model_up():
    gate = ModelGate()
    order: list[str] = []
    in_answer = threading.Event()
    finish_answer = threading.Event()

    def answer() -> None:
        with gate.foreground():
            order.append("answer")
            in_answer.set()
            finish_answer.wait(10)

    t = threading.Thread(target=answer)
    t.start()
    assert in_answer.wait(10)
    assert gate.wanted()
    got: list[bool] = []
    bg = threading.Thread(target=lambda: got.append(gate.acquire_background()))
    bg.start()
    bg.join(0.5)
    assert bg.is_alive() and not got  # the answer holds the model: background work waits
    finish_answer.set()
    t.join(10)
    bg.join(10)
    assert got == [True] and not gate.wanted()
    # an answer arriving while background work holds the model says so at once
    arrived = threading.Thread(target=lambda: gate.foreground().__enter__())
    arrived.start()
    for _ in range(100):
        if gate.wanted():
            break
        arrived.join(0.05)
    assert gate.wanted()  # what the summarizer's should_stop polls between tokens
    gate.release()
    arrived.join(10)
    assert not arrived.is_alive()


def test_a_stopped_background_wait_gives_up():
    gate = ModelGate()
    with gate.foreground():
        assert gate.acquire_background(should_stop=lambda: True, poll_s=0.01) is False


def test_the_rate_limiter_spaces_request_starts():
    now = [100.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)

    limiter = RateLimiter(120, clock=lambda: now[0], sleep=sleep)  # one start every 0.5 s
    waits = [limiter.wait() for _ in range(4)]
    assert waits == [0.0, 0.5, 1.0, 1.5] and slept == [0.5, 1.0, 1.5]
    now[0] += 10  # idle a while: the next start is free again
    assert limiter.wait() == 0.0
    assert RateLimiter(0).wait() == 0.0


def test_progress_lines_show_rate_and_eta():
    from coderag_tui.tui.widgets.status_bar import summaries_line

    p = Progress("summarize", 120, 800, rate=3.1 / 60, eta_s=240)
    assert summaries_line(p) == "summaries 120/800 units (background, low priority) · 3.1/min · eta 4:00"
    assert progress_text(p) == "120/800 units · 3.1/min · eta 4:00"
    assert summaries_line(Progress("done", 800, 800)) == ""


# --------------------------------------------------------------------------- remote models
def _summary_server(fail_first: int = 0, always: int = 0) -> Any:
    """A responder: `always` -> that status for every request; else `fail_first` 429s, then a
    summary naming the unit (taken from the prompt); the peak of requests in flight is kept."""
    state = {"now": 0, "peak": 0}
    lock = threading.Lock()

    def respond(h: Handler, n: int) -> None:
        if always:
            h.send_json(always, {"error": {"message": "down for maintenance"}})
            return
        if n < fail_first:
            h.send_json(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
            return
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        try:
            body = json.loads(h.server.loopback.requests[n]["body"])
            prompt = body["messages"][-1]["content"]
            name = next((line.split(":", 1)[1].strip() for line in prompt.splitlines()
                         if line.startswith(("Name:", "Path:"))), "code")
            threading.Event().wait(0.05)  # long enough for requests to overlap
            openai_sse(h, ["Handles ", f"{name} for the shop."])
        finally:
            with lock:
                state["now"] -= 1

    respond.state = state  # type: ignore[attr-defined]
    return respond


def _remote(url: str, fallback: tuple[ProviderSettings, ...] = (), retries: int = 2, **summaries: Any) -> Settings:
    s = Settings()
    llm = LLMSettings(provider="openai", base_url=url, model="m", retries=retries, timeout_s=10.0, discover=False,
                      fallback=fallback)
    return replace(s, llm=llm, summaries=SummarySettings(budget=3, **summaries))


def test_remote_summaries_retry_a_429_and_run_concurrently(make_repo, open_service, loopback):
    respond = _summary_server(fail_first=1)
    server = loopback(respond)
    service = open_service(make_repo(SMALL), _remote(server.url, concurrency=3))
    result = service.summarize(everything=True)
    assert (result.made, result.failed) == (8, 0), result.errors  # the budget is for local models
    stored = {s.qualname: s for s in store.all_summaries(service.db)}
    assert "fee" in stored["fee"].text and "shop/cart.py" in stored["shop/cart.py"].text
    assert len(server.requests) == 9  # one 429, retried, then one request per summary
    assert 1 <= respond.state["peak"] <= 3


def test_a_failing_provider_falls_back_to_the_next(make_repo, open_service, loopback):
    down = loopback(_summary_server(always=503))
    up = loopback(_summary_server())
    fallback = (ProviderSettings(provider="openai", base_url=up.url, model="m2", timeout_s=10.0),)
    service = open_service(make_repo(SMALL), _remote(down.url, fallback, retries=0, concurrency=2))
    result = service.summarize(everything=True)
    assert (result.made, result.failed) == (8, 0), result.errors
    assert len(up.requests) == 8 and len(down.requests) >= 8  # each tried first, retried, then passed on
    assert all(s.text.startswith("Handles") for s in store.all_summaries(service.db))


def test_remote_summarize_shows_the_estimate_and_asks_first(make_repo, loopback, tmp_path, capsys):
    server = loopback(_summary_server())
    repo = make_repo(SMALL)
    config = tmp_path / "remote.toml"
    config.write_text(f'[llm]\nprovider = "openai"\nbase_url = "{server.url}"\nmodel = "m"\ndiscover = false\n'
                      "[embed]\nenabled = false\n[summaries]\nrequests_per_minute = 6000\n")
    common = ["--repo", str(repo), "--config", str(config), "--db", str(tmp_path / "i.db")]
    assert main(["index", "--no-embed", *common]) == 0
    capsys.readouterr()
    assert main(["summarize", "--all", *common]) != 0  # no terminal to ask on: nothing is spent
    err = capsys.readouterr().err
    assert "8 requests, about" in err and "--yes" in err and not server.requests
    assert main(["summarize", "--all", "--yes", "--json", *common]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["made"] == 8 and len(server.requests) == 8


def test_background_summaries_are_off_when_the_setting_says_so(make_repo, open_service):
    s = Settings()
    service = open_service(make_repo(SMALL), replace(s, summaries=SummarySettings(background=False)))
    service.long_lived = True
    assert service.start_summaries() is False
    assert not service.summaries.running and store.summary_count(service.db) == 0


def test_a_remote_model_is_never_used_in_the_background(make_repo, open_service, loopback):
    server = loopback(_summary_server())
    service = open_service(make_repo(SMALL), _remote(server.url))
    service.long_lived = True
    assert service.start_summaries() is True
    assert service.summaries.wait_idle(60)
    assert not server.requests and store.summary_count(service.db) == 0


def test_a_one_shot_process_starts_no_background_work(make_repo, open_service):
    service = open_service(make_repo(SMALL))  # as `coderag ask` or `coderag search` open it
    assert service.long_lived is False and service.start_summaries() is False
    assert not service.summaries.running
