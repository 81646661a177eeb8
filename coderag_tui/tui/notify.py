"""Errors as one-line notifications, never a crash: one handler for every worker."""

from __future__ import annotations

from textual.dom import DOMNode
from textual.worker import Worker, WorkerState


def one_line(error: BaseException | None) -> str:
    if error is None:
        return "unknown error"
    text = error.one_line() if hasattr(error, "one_line") else f"{type(error).__name__}: {error}"
    return " ".join(str(text).split())[:300]


def report_worker_errors(node: DOMNode, event: Worker.StateChanged) -> None:
    """Show a failed worker's error as a one-line notification."""
    if event.state == WorkerState.ERROR:
        node.app.notify(one_line(event.worker.error), title=event.worker.group, severity="error")
