"""Summaries with a remote model: several requests at once, under a rate limit.

A semaphore caps the requests in flight (`[summaries] concurrency`), a
limiter spaces their starts (`[summaries] requests_per_minute`), the provider retries a 429
or a 5xx with backoff (honouring Retry-After) and a fallback chain (`[[llm.fallback]]`) takes
over from a provider that keeps failing. Prompts are built and summaries stored on the calling
thread (it owns the SQLite connection); only the requests run on the pool's threads. A level
is finished before the next starts: a class's prompt holds its methods' summaries.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING

from coderag_tui.errors import CoderagError

if TYPE_CHECKING:
    from coderag_tui.answering.summarize import Job, ProgressFn, Summarizer, SummarizeResult, Target


class RateLimiter:
    """At most `per_minute` request starts a minute, spaced evenly (0: no limit). Thread-safe."""

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.gap = 60.0 / per_minute if per_minute > 0 else 0.0
        self.clock, self.sleep = clock, sleep
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> float:
        """Block until the next start is allowed; returns the seconds waited."""
        if not self.gap:
            return 0.0
        with self._lock:
            now = self.clock()
            start = max(now, self._next)
            self._next = start + self.gap
        delay = start - now
        if delay > 0:
            self.sleep(delay)
        return delay


class Limits:
    """The semaphore and the limiter of one model, shared by every run in this process."""

    def __init__(self, concurrency: int, per_minute: float) -> None:
        self.concurrency = max(1, concurrency)
        self.slots = threading.BoundedSemaphore(self.concurrency)
        self.limiter = RateLimiter(per_minute)


_LIMITS: dict[str, Limits] = {}
_LIMITS_LOCK = threading.Lock()


def limits_for(model: str, concurrency: int, per_minute: float) -> Limits:
    with _LIMITS_LOCK:
        found = _LIMITS.get(model)
        if found is None or (found.concurrency, found.limiter.gap) != (
                max(1, concurrency), 60.0 / per_minute if per_minute > 0 else 0.0):
            found = _LIMITS[model] = Limits(concurrency, per_minute)
        return found


def run_remote(summarizer: Summarizer, targets: Sequence[Target], progress: ProgressFn | None = None,
               should_stop: Callable[[], bool] | None = None) -> SummarizeResult:
    from coderag_tui.answering.summarize import PROMPT_VERSION, SummarizeResult, progress_event

    settings = summarizer.settings
    limits = limits_for(summarizer.model, settings.concurrency, settings.requests_per_minute)
    started = time.perf_counter()
    made = current = failed = prompt_chars = done = 0
    model_s = 0.0
    errors: list[str] = []
    total = len(targets)

    def stopped() -> bool:
        return should_stop is not None and should_stop()

    def ask(job: Job) -> tuple[str, float] | None:
        with limits.slots:
            limits.limiter.wait()
            if stopped():
                return None
            began = time.perf_counter()
            return summarizer.complete(job.prompt, job.target.level), time.perf_counter() - began

    def step(label: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(progress_event(done, total, label, time.perf_counter() - started))

    levels = sorted({t.level for t in targets})
    with ThreadPoolExecutor(max_workers=limits.concurrency, thread_name_prefix="coderag-summary") as pool:
        for level in levels:
            if stopped():
                break
            futures: dict[Future[tuple[str, float] | None], Job] = {}
            for t in (t for t in targets if t.level == level):
                try:
                    job = summarizer.prepare(t)
                except CoderagError as exc:
                    failed += 1
                    errors.append(f"{t.label}: {exc.one_line()}")
                    step(t.label)
                    continue
                if job is None:
                    current += 1
                    step(t.label)
                else:
                    futures[pool.submit(ask, job)] = job
            for future in as_completed(futures):
                job = futures[future]
                try:
                    answer = future.result()
                    if answer is not None:
                        summarizer.save(job, *answer)
                        made += 1
                        model_s += answer[1]
                        prompt_chars += len(job.prompt)
                except CoderagError as exc:
                    failed += 1
                    errors.append(f"{job.target.label}: {exc.one_line()}")
                step(job.target.label)
    return SummarizeResult(summarizer.model, PROMPT_VERSION, total, made, current, failed,
                           time.perf_counter() - started, model_s, prompt_chars, tuple(errors[:20]))
