"""What a server does for its clients beyond reading the index: vectors and summaries made as
jobs, reviews of its repositories' changes, its models, and each caller's conversations. The
HTTP layer (server/) parses and serialises; this is the service side of it, so that nothing a
request says reaches a path, a model or a conversation it should not.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from coderag_tui.contract import Unsupported
from coderag_tui.errors import CoderagError, NotFoundError
from coderag_tui.models import ModelInfo

if TYPE_CHECKING:
    from coderag_tui.answering.answerer import StoredMessage
    from coderag_tui.review.build import Review
    from coderag_tui.service import CodeRag
    from coderag_tui.workspace import Workspace
    from coderag_tui.workspace.jobs import Job


def embed_job(ws: Workspace, repos: Sequence[str] | None = None) -> Job:
    """Embed the chunks that lack a vector in each chosen repository, as a job on the index
    jobs' thread (after any build or update queued before it). A repository whose vectors are
    off gets `null` as its result."""
    chosen = ws.chosen(repos)

    def work(job: Job) -> None:
        for name, service in chosen:
            if job.stopping():
                return
            job.note(name, "embed")
            if not service.settings.embed.enabled:
                job.results[name] = None
                continue
            summary = service.embed(progress=job.progress, should_stop=job.stopping)
            job.results[name] = dataclasses.asdict(summary)

    return ws.jobs.submit([name for name, _ in chosen], work, kind="embed")


def summaries_job(ws: Workspace, repo: str | None, paths: Sequence[str] | None, everything: bool,
                  model: str | None) -> Job:
    """Make the missing or out-of-date summaries of one repository with its model (or one of
    the server's own models, by the name its list gives), as a job on the model jobs' thread."""
    name, service = ws.one(repo)
    check_model(service, model)

    def work(job: Job) -> None:
        job.note(name, "summarize")
        result = service.summarize(paths, everything=everything, model=model or None, progress=job.progress,
                                   should_stop=job.stopping)
        job.results[name] = {**dataclasses.asdict(result), "per_summary_s": result.per_summary_s}

    return ws.model_jobs.submit([name], work, kind="summaries")


def job(ws: Workspace, job_id: str) -> Job | None:
    """An index job or a model job, by its id."""
    return ws.jobs.get(job_id) or ws.model_jobs.get(job_id)


def review(ws: Workspace, repo: str | None, base: str = "HEAD", *, diff_text: str | None = None,
           diff_label: str = "", max_tokens: int | None = None, similar: int = 3) -> tuple[str, Review]:
    """(the repository, its review): of the served repository's working tree against `base` (a
    revision of its git folder), or of a diff a client sent. Only files discovery would read
    take part, read through no link (a secret's name, an excluded file, a path outside the
    repository are left out, with a note). The server keeps the index current itself: the
    review waits for its watcher to have indexed the changes it has seen, and updates nothing."""
    from coderag_tui.review import DEFAULT_BUDGET, ReviewOptions, build_review

    name, service = ws.one(repo)
    if service.root is None:
        raise Unsupported(f"the files of {service.display_name} are not on the server (it reads them from "
                          f"{service.location}): nothing to review against", "review on a machine with its folder")
    options = ReviewOptions(base=base, diff_text=diff_text, diff_label=diff_label,
                            max_tokens=max_tokens or DEFAULT_BUDGET, update_index=False, similar=similar,
                            readable_only=True)
    if ws.refresher is not None:
        ws.refresher.wait_current(name)
    return name, build_review(service, options)


# ---------------------------------------------------------------------- models
def shown_model(info: ModelInfo) -> ModelInfo:
    """A model as a client sees it: a file by its name (no folder of the server's), a URL
    without credentials."""
    where = info.path_or_url
    if "://" in where:
        from coderag_tui.sources.urls import redact

        where = redact(where)
    elif where:
        where = where.replace("\\", "/").rsplit("/", 1)[-1]
    return dataclasses.replace(info, path_or_url=where)


def models(service: CodeRag, discover: bool = True) -> tuple[ModelInfo, list[ModelInfo]]:
    """(the model that answers by default, every model the server can answer with)."""
    return (shown_model(service.model_info()),
            [shown_model(m) for m in service.list_models(discover=discover)])


def check_model(service: CodeRag, name: str | None) -> None:
    """A client names a model only from the server's list (`choice`), never a path or a
    server of its own: CoderagError (one line) otherwise. None or "": the configured model."""
    if not name:
        return
    choices = [m.choice for m in service.list_models() if m.choice]
    if name not in choices:
        raise CoderagError(f"the server has no model named {name!r}",
                           "its models: " + ", ".join(choices) if choices else "it has only its configured model")


# ---------------------------------------------------------------------- conversations
def conversations(service: CodeRag, owner: str | None, limit: int = 100) -> list[tuple[int, str, float, int, str]]:
    """The caller's conversations, newest first (`owner` None: a server without tokens, every one)."""
    return service.conversations(limit, owner=owner)


def conversation(service: CodeRag, conversation_id: int, owner: str | None) -> list[StoredMessage]:
    """One conversation's messages, for whoever started it only: for anyone else, as for an id
    never used, NotFoundError."""
    found = service.conversation_owner(conversation_id)
    if found is None or (owner is not None and found != owner):
        raise NotFoundError(f"no conversation {conversation_id}")
    return service.load_conversation(conversation_id)
