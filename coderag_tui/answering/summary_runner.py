"""Summaries made in the background, never in the way.

One daemon thread (its own SQLite connection, a lower CPU priority, working at most half the
time: it rests after each summary as long as the summary took) works through a queue:
the units retrieved for a question first, then every stored summary that is no longer current
(an edit marked it stale, or the model changed), then the budget's plan. It takes the model one
summary at a time through the `ModelGate` and gives it up to an answer at once (the summary is
made again afterwards). `kick()` (after an index run) and `request(unit_ids)` (after an answer)
wake it; each summary is committed as made, so a killed process resumes where it stopped.
Progress (done/total, rate, ETA) goes to every subscriber, from the thread.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from coderag_tui.answering.model_gate import ModelGate
from coderag_tui.errors import CoderagError
from coderag_tui.models import Progress

if TYPE_CHECKING:
    from coderag_tui.answering.summarize import Summarizer

ProgressFn = Callable[[Progress], None]
NICE = 10  # added to the thread's niceness: the user's editor and build come first
CPU_SHARE = 0.5  # of the wall time the summarizer works (it rests the rest): a busy model, an idle box


class BackgroundSummaries:
    """`make()` builds a Summarizer on the calling (background) thread, or returns None when
    there is nothing to do it with (no local model)."""

    def __init__(self, make: Callable[[], Summarizer | None], gate: ModelGate) -> None:
        self._make = make
        self.gate = gate
        self._cond = threading.Condition()
        self._units: list[int] = []
        self._replan = False
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._subscribers: list[ProgressFn] = []
        self.made = 0  # summaries made since this object was created
        self.errors: list[str] = []
        self.last: Progress | None = None

    # ------------------------------------------------------------------ control
    def subscribe(self, fn: ProgressFn) -> None:
        with self._cond:
            if fn not in self._subscribers:  # the same callback twice would show each event twice
                self._subscribers.append(fn)

    def kick(self) -> None:
        """Plan again (after an index run) and work through the plan."""
        with self._cond:
            self._replan = True
            self._start()

    def request(self, unit_ids: Sequence[int]) -> None:
        """Summarize these units next (units retrieved for a question)."""
        if not unit_ids:
            return
        with self._cond:
            self._units.extend(unit_ids)
            self._start()

    @property
    def running(self) -> bool:
        return not self._idle.is_set()

    def wait_idle(self, timeout: float | None = None) -> bool:
        return self._idle.wait(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _start(self) -> None:  # holding self._cond
        if self._stop.is_set() or (self._thread is not None and self._thread.is_alive()):
            return
        self._idle.clear()
        self._thread = threading.Thread(target=self._main, name="coderag-summaries", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ the thread
    def _main(self) -> None:
        _lower_priority()
        try:
            while not self._stop.is_set():
                with self._cond:
                    units, self._units = self._units, []
                    replan, self._replan = self._replan, False
                    if not units and not replan:
                        self._thread = None
                        self._idle.set()
                        return
                try:
                    summarizer = self._make()
                    if summarizer is not None:
                        self._work(summarizer, summarizer.queue(units, planned=replan))
                except CoderagError as exc:
                    self.errors.append(exc.one_line())
                    self._emit(Progress("done", 0, 0, exc.one_line()))
        finally:
            with self._cond:
                if self._thread is threading.current_thread():
                    self._thread = None
            self._idle.set()

    def _work(self, summarizer: Summarizer, targets: list[Target]) -> None:
        from coderag_tui.answering.summarize import Stopped
        from coderag_tui.answering.summary_due import due

        # the same count `coderag summarize --estimate` gives (the parents of what is made
        # included); counted on from the summaries this runner made before (a question's units
        # start a new pass): done and total do not jump back or grow as it goes
        pending = {t.key for t in due(summarizer, targets)}
        before = self.made
        total, done, made_here = before + len(pending), before, 0
        started = time.monotonic()
        for t in targets:
            if self._stop.is_set():
                return
            with self._cond:
                if self._units:  # a question's units go first; the rest of the plan after them
                    self._replan = True
                    break
            if t.key not in pending:
                if not summarizer.needs(t):  # (a parent is due again once a child's summary changed)
                    continue
                total += 1
            began = time.monotonic()
            try:
                outcome = summarizer.summarize_gated(t, self.gate, self._stop.is_set)
            except Stopped:
                return
            except CoderagError as exc:
                self.errors = (self.errors + [f"{t.label}: {exc.one_line()}"])[-20:]
                outcome = None
            # at most CPU_SHARE of the time: as long again at rest after each summary
            self._stop.wait((time.monotonic() - began) * (1 - CPU_SHARE) / CPU_SHARE)
            done += 1
            if outcome is not None:
                made_here += 1
                self.made += 1
            elapsed = max(time.monotonic() - started, 1e-6)
            rate = made_here / elapsed  # per second of this pass, answers' time included
            self._emit(Progress("summarize", done, total, t.label, rate=rate,
                                eta_s=(total - done) / rate if rate else 0.0))
        if total > before:
            self._emit(Progress("done", done, total, f"{self.made} summaries made"))

    def _emit(self, p: Progress) -> None:
        self.last = p
        with self._cond:
            subscribers = list(self._subscribers)
        for fn in subscribers:
            try:
                fn(p)
            except Exception:  # a closed window must not end the summaries
                continue


if TYPE_CHECKING:
    from coderag_tui.answering.summarize import Target


def _lower_priority() -> None:
    """Lower this thread's CPU priority (Linux: per thread; llama.cpp's OpenMP workers started
    from it inherit it, while an answer's workers, started from the answering thread, do not)."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + NICE))
    except (AttributeError, OSError):
        pass


def local_summarizer(service: Any) -> Summarizer | None:
    """A Summarizer with the configured model on this thread's connection, when it is local
    (a remote model is only used when `coderag summarize` is asked, after its estimate) and
    not the tiny default model (which writes none: nothing runs in the background then)."""
    from coderag_tui.errors import NoSummariesError

    try:
        summarizer: Summarizer = service.summarizer(configured=True)
    except NoSummariesError:
        return None
    return summarizer if summarizer.local else None
