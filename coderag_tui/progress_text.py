"""Progress in words, the same in every interface: `120/800 units · 3.1/min · eta 4:10`
(the command line's rows and log lines, the app's status line)."""

from __future__ import annotations

from coderag_tui.models import Progress as ProgressEvent

NOUNS = {"discover": "files", "parse": "files", "embed": "chunks", "summarize": "units"}


def clock(seconds: float) -> str:
    """m:ss, or h:mm:ss from an hour on."""
    s = max(int(seconds + 0.5), 0)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def rate_text(rate: float) -> str:
    if rate < 0.5:  # a summary every few seconds reads better per minute
        return f"{rate * 60:.1f}/min"
    return f"{rate:,.0f}/s" if rate >= 10 else f"{rate:.1f}/s"


def background_summaries_text(p: ProgressEvent) -> str:
    """The background summaries' progress, as the app's status line and `coderag watch` write it:
    `summaries 120/800 units (background, low priority) · 3.1/min · eta 4:10`."""
    done, _, rest = progress_text(p).partition(" · ")
    return f"summaries {done} (background, low priority)" + (f" · {rest}" if rest else "")


def progress_text(p: ProgressEvent) -> str:
    """One plain line for a log: `120/800 units · 3.1/min · eta 4:10`, or the closing message."""
    if p.phase == "done" or not p.total:
        return p.message or "done"
    line = f"{p.done:,}/{p.total:,} {NOUNS.get(p.phase, '')}".rstrip()
    if p.rate > 0:
        line += f" · {rate_text(p.rate)} · eta {clock(p.eta_s or (p.total - p.done) / p.rate)}"
    return line
