"""Context and answers across several repositories under one token budget.

Each chosen repository composes its own context (its search, graph expansion and packing);
the pieces are then merged under the one budget in proportion to how many of the merged
search's top hits each repository holds, so a question whose code spans two repositories
gets pieces of both, and a repository with no top hit gets none. Every piece's path is
prefixed with its repository (`backend:app/checkout.py`), so its citation reads
`backend:app/checkout.py:6-9`, and a citation is verified only against the pieces of the
repository it names.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from coderag_tui.models import AnswerEvent, AnswerOpening, ComposedContext, ContextPiece, SearchHit

if TYPE_CHECKING:
    from coderag_tui.service import CodeRag

TOP_HITS = 10  # of the merged search: a repository's share of the budget is its share of these
SEP = ":"  # between a repository's name and a path, as in `backend:app/main.py:3-9`


def tagged_path(repo: str, path: str) -> str:
    return f"{repo}{SEP}{path}"


def split_path(path: str, repos: Sequence[str]) -> tuple[str, str]:
    """(repository, path) of a tagged path; ("", path) when it names no repository given."""
    head, sep, rest = path.partition(SEP)
    return (head, rest) if sep and head in repos else ("", path)


def _tag_piece(piece: ContextPiece, repo: str) -> ContextPiece:
    return dataclasses.replace(piece, path=tagged_path(repo, piece.path))


def merge_contexts(query: str, parts: Sequence[tuple[str, ComposedContext]], budget: int,
                   top: Sequence[SearchHit]) -> ComposedContext:
    """One context from each repository's: pieces taken in turn, a repository with n of the
    `top` hits taking n pieces per round (its own order: its best first), while they fit."""
    share = {name: sum(1 for h in top if h.unit.repo == name) for name, _ in parts}
    keyed: list[tuple[float, int, int, ContextPiece]] = []
    order = {name: i for i, name in enumerate(dict.fromkeys(h.unit.repo for h in top))}
    for name, ctx in parts:
        if not share.get(name):
            continue
        for i, piece in enumerate(ctx.pieces):
            keyed.append((i / share[name], order.get(name, len(order)), i, _tag_piece(piece, name)))
    keyed.sort(key=lambda t: t[:3])
    chosen: list[ContextPiece] = []
    used = 0
    for _, _, _, piece in keyed:
        if used + piece.tokens <= budget:
            chosen.append(piece)
            used += piece.tokens
    kept = {n for n, _ in parts if share.get(n)}
    routes = [ctx.route for n, ctx in parts if n in kept]
    kinds = [ctx.kind for n, ctx in parts if n in kept]
    return ComposedContext(query=query, route=routes[0] if routes else "semantic", pieces=tuple(chosen),
                           tokens=used, budget=budget, hits=tuple(top), kind=kinds[0] if kinds else "")


def compose_across(chosen: Sequence[tuple[str, CodeRag]], query: str, max_tokens: int | None,
                   top: Sequence[SearchHit],
                   count_tokens: Callable[[str], int] | None = None,
                   strategy: str = "relevance") -> ComposedContext:
    """Each repository's context (with the whole budget), merged under the budget."""
    budget = max_tokens or chosen[0][1].settings.context.max_tokens
    wanted = {h.unit.repo for h in top}
    parts = [(name, service.context(query, max_tokens=budget, count_tokens=count_tokens,
                                             strategy=strategy))
             for name, service in chosen if name in wanted]
    return merge_contexts(query, parts, budget, top)


def opening_across(context: ComposedContext, limit: int = 5) -> AnswerOpening:
    """The opening's units: the top hits of every repository, each path naming its repository
    (no call path: the graph of one repository does not reach into another)."""
    from coderag_tui.answering.opening import answer_unit, is_test

    seen: dict[tuple[str, int], SearchHit] = {}
    for h in context.hits:
        seen.setdefault((h.unit.repo, h.unit.id), h)
    units = sorted((dataclasses.replace(h.unit, path=tagged_path(h.unit.repo, h.unit.path)) for h in seen.values()),
                   key=lambda u: (is_test(u), u.kind == "file"))[:limit]
    return AnswerOpening(units=tuple(answer_unit(u) for u in units), call_path=(), flow=False)


def repo_map_across(chosen: Sequence[tuple[str, CodeRag]], max_tokens: int) -> str:
    """Each repository's map under its name, sharing the budget (each path relative to it)."""
    share = max(64, max_tokens // max(1, len(chosen)))
    maps = [(name, service.repo_map(max_tokens=share)) for name, service in chosen]
    return "\n\n".join(f"== {name} (cite its paths as {tagged_path(name, 'PATH')})\n{text}"
                         for name, text in maps if text)


def ask_across(chosen: Sequence[tuple[str, CodeRag]], question: str, top: Callable[[str], list[SearchHit]],
               conversation_id: int | None = None, *, model: str | None = None,
               should_stop: Callable[[], bool] | None = None, attachment: str = "",
               tools: Callable[[], object] | None = None, owner: str | None = None) -> Iterator[AnswerEvent]:
    """A cited answer from the code of several repositories. The first chosen repository
    answers (its model settings) and keeps the conversation; its follow-ups are retrieved
    across the same repositories. `tools`: makes the tools of these repositories (citing
    `repo:path`) for a model that calls tools (`[llm] tools`). Never raises: errors are events."""
    from coderag_tui.answering import Answerer
    from coderag_tui.answering.tools import tools_wanted
    from coderag_tui.errors import CoderagError
    from coderag_tui.service_ask import answer_budgets, retrieval_query
    from coderag_tui.tokens import counter_for

    conv = conversation_id or 0
    question = question.strip()
    if not question:
        yield AnswerEvent("error", text="ask a question first", conversation_id=conv)
        return
    name, primary = chosen[0]
    with primary.model_gate.foreground():
        try:
            started = time.perf_counter()
            yield AnswerEvent("status", text="loading the model", conversation_id=conv)
            provider = primary.llm(model)
            yield AnswerEvent("status", text=f"retrieving code from {len(chosen)} repositories",
                              conversation_id=conv)
            given_tools = tools() if tools is not None and tools_wanted(primary.settings.llm, provider) else None
            answerer = Answerer(provider, primary.db, max_tokens=primary.settings.llm.max_tokens,
                                temperature=primary.settings.llm.temperature,
                                tiny_max_tokens=primary.settings.llm.tiny_max_tokens, tools=given_tools,
                                tool_steps=primary.settings.llm.tool_steps if given_tools is not None else 0,
                                owner=owner)
            query, same_topic = retrieval_query(answerer, question, conversation_id, attachment)
            budget, map_budget = answer_budgets(primary, provider)
            context = compose_across(chosen, query, budget, top(query), counter_for(provider))
            repo_map = repo_map_across(chosen, map_budget) if map_budget > 0 else ""
            opening = opening_across(context)
            retrieval_s = time.perf_counter() - started
        except CoderagError as exc:
            yield AnswerEvent("error", text=exc.one_line(), conversation_id=conv)
            return
        with primary._generating():
            yield from answerer.ask(question, context, repo_map, conversation_id, retrieval_s=retrieval_s,
                                    should_stop=should_stop, use_history=same_topic, attachment=attachment,
                                    opening=opening)
