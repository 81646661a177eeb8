"""Progress events as rows on the terminal (stderr): one row per phase, each one completed when
its work ends, every row within the console's width.

A row reads `phase  bar  done/total noun  rate/s  eta m:ss  message`; the counts, rate and ETA
have a fixed place and the message gets what is left, cut at its end with an ellipsis.
"""

from __future__ import annotations

import sys
import time
from functools import cache
from typing import TYPE_CHECKING, Any

from coderag_tui.models import Progress as ProgressEvent
from coderag_tui.progress_text import NOUNS, clock, progress_text, rate_text  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, ProgressColumn

@cache
def stats_column_type() -> type[ProgressColumn]:
    """The column class, made on first use: rich is imported only when progress is shown."""
    from rich.progress import ProgressColumn, Task
    from rich.table import Column
    from rich.text import Text

    class StatsColumn(ProgressColumn):
        """Counts, rate and ETA while running; counts and elapsed time once complete."""

        def __init__(self) -> None:
            super().__init__(table_column=Column(no_wrap=True, overflow="ellipsis"))

        def render(self, task: Task) -> Text:
            noun = NOUNS.get(str(task.description), "")
            took = f"in {task.elapsed or 0.0:.1f}s"
            if task.fields.get("ended") and not task.fields.get("counted", True):  # nothing to count
                return Text(f"done {took}", style="progress.download")
            if task.total is None:  # not known yet (a walk still running)
                count = f"{int(task.completed):,} {noun}".strip() if task.completed else ""
                return Text(count, style="progress.download")
            count = f"{int(task.completed):,}/{int(task.total):,} {noun}".rstrip()
            if task.fields.get("ended"):
                return Text(f"{count} {took}", style="progress.download")
            rate = float(task.fields.get("rate") or 0.0) or float(task.speed or 0.0)
            parts = [count]
            if rate > 0:
                parts.append(rate_text(rate))
                eta = float(task.fields.get("eta") or 0.0)
                if eta > 0:  # counts down between events (a batch of chunks can take a while)
                    eta = max(eta - (time.monotonic() - float(task.fields.get("at") or 0.0)), 0.0)
                else:
                    eta = max(task.total - task.completed, 0) / rate
                parts.append(f"eta {clock(eta)}")
            return Text(" ".join(parts), style="progress.download")

    return StatsColumn


class progress_printer:
    """A callable that shows Progress events as rows of a rich progress display.

    Nothing is shown when stderr is not a terminal, unless a console is given (tests give one
    writing into a buffer). A row completes when its phase reports its last item, when a later
    phase starts (the work moved on, so the earlier phase is over) and at "done".
    """

    def __init__(self, label: str, console: Console | None = None) -> None:
        self.label = label
        self.console = console
        self._progress: Progress | None = None
        self._tasks: dict[str, Any] = {}
        self._order: list[str] = []
        self._ended: set[str] = set()

    # the repository whose work comes now, when several share one display (`index A B`): each
    # has its own rows, its name before their message, and its "done" ends only its rows
    repo = ""

    def __call__(self, event: ProgressEvent) -> None:
        if self.console is None and not sys.stderr.isatty():
            return
        key = f"{self.repo}\0{event.phase}" if self.repo else event.phase
        info = f"{self.repo}: {event.message}" if self.repo else event.message
        if event.phase == "done":
            mine = [k for k in self._order if k.startswith(f"{self.repo}\0")] if self.repo else self._order
            last = mine[-1] if mine else None
            if self._progress is not None and last is not None and event.total:
                state = next(t for t in self._progress.tasks if t.id == self._tasks[last])
                if state.total == event.total and event.done >= state.completed:  # its last count
                    self._progress.update(self._tasks[last], completed=event.done, info=info)
            if self.repo:
                for k in mine:
                    self._complete(k)
            else:
                self.close()
            return
        progress = self._progress or self._start()
        for phase in self._order:
            if phase != key:
                self._complete(phase)
        total = event.total or None
        task = self._tasks.get(key)
        if task is None:
            task = progress.add_task(event.phase, total=total, info=info, rate=0.0, eta=0.0)
            self._tasks[key] = task
            self._order.append(key)
        progress.update(task, completed=event.done, total=total, info=info,
                        rate=event.rate, eta=event.eta_s, at=time.monotonic())
        if total is not None and event.done >= total:
            self._complete(key)

    def _start(self) -> Progress:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn
        from rich.table import Column

        console = self.console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("[bold]{task.description}", table_column=Column(no_wrap=True, width=9)),
            BarColumn(bar_width=20),
            stats_column_type()(),
            TextColumn("{task.fields[info]}", table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1,
                                                                   min_width=0)),
            console=console, transient=False, expand=True,
        )
        self._progress.start()
        return self._progress

    def _complete(self, phase: str) -> None:
        """End a phase's row: its final count (a bar full when the work was), how long it took."""
        progress, task = self._progress, self._tasks.get(phase)
        if progress is None or task is None or phase in self._ended:
            return
        self._ended.add(phase)
        state = next(t for t in progress.tasks if t.id == task)
        done = int(state.completed)
        if state.total is None:  # never knew its total: what it counted is all there was
            progress.update(task, total=max(done, 1), completed=max(done, 1))
        # a step of one ("resolve") or a phase that found nothing to do has no count worth showing
        counted = done > 1 or (done == 1 and phase.rsplit("\0", 1)[-1] in NOUNS)
        progress.update(task, ended=True, counted=counted)
        progress.stop_task(task)

    def refresh(self) -> None:
        """Draw the rows now (they are otherwise drawn ten times a second)."""
        if self._progress is not None:
            self._progress.refresh()

    def close(self) -> None:
        """Complete every row and leave them on the screen."""
        if self._progress is not None:
            for phase in self._order:
                self._complete(phase)
            self._progress.stop()
            self._progress = None
            self._tasks.clear()
            self._order.clear()
            self._ended.clear()
