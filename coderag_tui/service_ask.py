"""Asking a question: retrieval, the answer cache, the model and the background summaries'
queue, as one stream of `AnswerEvent`s (the flow behind `CodeRag.ask`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coderag_tui.answering import Provider
    from coderag_tui.answering.answer_cache import AnswerCache, CachedAnswer
    from coderag_tui.answering.answerer import Answerer
    from coderag_tui.models import AnswerEvent, AnswerOpening
    from coderag_tui.service import CodeRag

ATTACHMENT_QUERY_CHARS = 1000  # of text given with a question, the end used to retrieve code


def ask(
    rag: CodeRag,
    question: str,
    conversation_id: int | None = None,
    *,
    model: str | None = None,
    should_stop: Callable[[], bool] | None = None,
    attachment: str = "",
    fresh: bool = False,
    owner: str | None = None,
) -> Iterator[AnswerEvent]:
    """`CodeRag.ask` (see there): the events of one question's answer."""
    from coderag_tui.answering import Answerer
    from coderag_tui.answering.opening import build_opening
    from coderag_tui.errors import CoderagError
    from coderag_tui.models import AnswerEvent
    from coderag_tui.store import conversations
    from coderag_tui.tokens import counter_for

    conv = conversation_id or 0
    question = question.strip()
    if not question:
        yield AnswerEvent("error", text="ask a question first", conversation_id=conv)
        return
    with rag.model_gate.foreground():
        try:
            started = time.perf_counter()
            rag.require_index()  # no model is asked without code to give it
            if conversation_id and owner is not None and not conversations.exists(rag.db, conversation_id, owner):
                # another's conversation is refused before anything is read or asked
                yield AnswerEvent("error", text=f"no conversation {conversation_id}", conversation_id=conv)
                return
            if not rag._verified:  # once per service: ~0.6 s for a 90 MB index
                rag.db.verify()  # a damaged index fails here, before a model loads
                rag._verified = True
            yield AnswerEvent("status", text="loading the model", conversation_id=conv)
            provider = rag.llm(model)
            cache = answer_cache(rag, provider, conversation_id, attachment)
            hit = cache.lookup(question) if cache is not None and not fresh else None
            if hit is not None:
                # the opening says what the index knows now, so a cached answer gets it fresh
                context = rag.context(question, max_tokens=answer_budgets(rag, provider)[0],
                                      count_tokens=counter_for(provider))
                opening = build_opening(rag.db, question, context)
                yield from _cached_answer(rag, provider, question, hit, started, opening, owner)
                return
            yield AnswerEvent("status", text="retrieving code", conversation_id=conv)
            tools, steps = answer_tools(rag, provider)
            answerer = Answerer(provider, rag.db, max_tokens=rag.settings.llm.max_tokens,
                                temperature=rag.settings.llm.temperature, tools=tools, tool_steps=steps,
                                tiny_max_tokens=rag.settings.llm.tiny_max_tokens, owner=owner)
            query, same_topic = retrieval_query(answerer, question, conversation_id, attachment)
            context_budget, map_budget = answer_budgets(rag, provider)
            context = rag.context(query, max_tokens=context_budget,
                                   count_tokens=counter_for(provider))
            if not context.pieces and not attachment.strip():  # no model is asked without code
                raise CoderagError("nothing in the index matches the question, so no model was asked",
                                   "name a function, class or file of the code; `coderag search` shows what matches")
            repo_map = rag.repo_map(max_tokens=map_budget) if map_budget > 0 else ""
            opening = build_opening(rag.db, question, context)
            retrieval_s = time.perf_counter() - started
        except CoderagError as exc:
            yield AnswerEvent("error", text=exc.one_line(), conversation_id=conv)
            return
        parts: list[str] = []
        checked: AnswerEvent | None = None
        with rag._generating():
            for event in answerer.ask(question, context, repo_map, conversation_id,
                                      retrieval_s=retrieval_s, should_stop=should_stop,
                                      use_history=same_topic, attachment=attachment,
                                      opening=opening):
                if event.kind == "token":
                    parts.append(event.text)
                elif event.kind == "sources":
                    checked = event
                elif (event.kind == "done" and cache is not None and checked is not None
                      and not event.stats.get("stopped")):
                    _remember(cache, question, "".join(parts).strip(), checked, event.model)
                yield event
    # after the answer, never before it: the units it was given get summaries next (not
    # after a stop: the user wants the cores back, or is quitting)
    if should_stop is None or not should_stop():
        rag._summaries_wanted(context)


def retrieval_query(answerer: Answerer, question: str, conversation_id: int | None,
                    attachment: str) -> tuple[str, bool]:
    """(what retrieval searches for, whether the question continues the conversation): a
    follow-up on the same topic is searched with the question before it, and the end of an
    attached log or traceback (it names what failed) steers retrieval too."""
    from coderag_tui.retrieval.followup import continues

    query, same_topic = question, True
    if conversation_id:
        earlier = [m.content for m in answerer.load_conversation(conversation_id) if m.role == "user"]
        if earlier:
            same_topic = continues(earlier[-1], question)
            if same_topic:
                query = f"{earlier[-1]}\n{question}"
    if attachment.strip():
        query = f"{query}\n{attachment.strip()[-ATTACHMENT_QUERY_CHARS:]}"
    return query, same_topic


def answer_cache(rag: CodeRag, provider: Provider, conversation_id: int | None,
                  attachment: str) -> AnswerCache | None:
    """The answer cache for this model, when it applies (not to follow-ups or given text)."""
    from coderag_tui.answering.answer_cache import AnswerCache
    from coderag_tui.errors import CoderagError

    threshold = rag.settings.llm.cache_similarity
    if threshold <= 0 or conversation_id or attachment.strip():
        return None
    try:
        embed = rag.searcher().embed_query
    except CoderagError:  # no usable vectors: the same words still hit
        embed = None
    return AnswerCache(rag.db, provider.name, threshold, embed, rag.db.get_meta("embed_model") or "")

def _cached_answer(rag: CodeRag, provider: Provider, question: str, hit: CachedAnswer,
                   started: float, opening: AnswerOpening, owner: str | None = None) -> Iterator[AnswerEvent]:
    """The stored answer as a new conversation of `owner`. The cache is shared by everyone who
    asks the repository: it holds first questions only (never a follow-up, never given text),
    answered from the repository's code alone. On a server (`owner` given), the earlier
    question is not quoted: it was someone else's words."""
    from dataclasses import replace

    from coderag_tui.answering import Answerer
    from coderag_tui.models import AnswerEvent

    opening = replace(opening, model_note=str(getattr(provider, "tiny_note", "") or ""))
    # stored as a turn of a new conversation, so a follow-up works as after any answer
    from coderag_tui.answering.checked import Checks

    checks = Checks(hit.invalid, hit.absent, hit.unknown_names, hit.model or provider.name)
    cid = Answerer(provider, rag.db, owner=owner)._save(None, question, hit.answer, hit.sources,
                                                        invalid=tuple(hit.invalid), opening=opening, checks=checks)
    yield AnswerEvent("opening", text=opening.render(), opening=opening, conversation_id=cid, cached=True)
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(hit.created))
    same = ("" if hit.similarity >= 1.0 else f" for a question of similarity {hit.similarity:.2f}"
            if owner is not None else f" for {hit.question!r} (similarity {hit.similarity:.2f})")
    yield AnswerEvent("status", text=f"answered from the cache{same}", conversation_id=cid, cached=True)
    yield AnswerEvent("token", text=hit.answer, conversation_id=cid, cached=True)
    yield AnswerEvent("sources", sources=hit.sources, invalid_citations=hit.invalid, conversation_id=cid,
                      cached=True, absent_citations=hit.absent, unknown_names=hit.unknown_names)
    stats = {"cached": 1.0, "similarity": hit.similarity,
             "total_s": round(time.perf_counter() - started, 4),
             "cited": float(sum(1 for s in hit.sources if s.cited)),
             "invalid_citations": float(len(hit.invalid))}
    yield AnswerEvent("done", text=f"answered from the cache (first answered {when} by {provider.name}; "
                      "ask again with --fresh)", conversation_id=cid, stats=stats, cached=True,
                      model=hit.model or provider.name)

def _remember(cache: AnswerCache, question: str, answer: str, checked: AnswerEvent, model: str) -> None:
    import logging

    from coderag_tui.answering.checked import Checks
    from coderag_tui.store.db import clear_error

    try:
        cache.remember(question, answer, checked.sources, checked.invalid_citations,
                       Checks(checked.invalid_citations, checked.absent_citations, checked.unknown_names,
                              model))
    except Exception as exc:  # a cache that cannot write (a locked index) must not fail the answer
        logging.getLogger("coderag").warning("answer cache: %s", clear_error(exc) or exc)

def answer_tools(rag: CodeRag, provider: Provider) -> tuple[object, int]:
    """The index's tools for a model that can call them (`[llm] tools`), and how many rounds."""
    from coderag_tui.answering.toolbox import CodeRagTools
    from coderag_tui.answering.tools import tools_wanted

    if not tools_wanted(rag.settings.llm, provider):
        return None, 0
    tools = CodeRagTools(rag)
    tools.ready.set()  # asking needs an index already: the tools never wait for a first one
    return tools, rag.settings.llm.tool_steps

def answer_budgets(rag: CodeRag, provider: Provider) -> tuple[int, int]:
    """Tokens for the composed context and the repo map, so that the system rules, the
    history, the question and the answer still fit in the model's window."""
    window = provider.context_window()
    available = max(window - rag.settings.llm.max_tokens - 700, 256)
    if getattr(provider, "tiny_note", ""):  # the tiny bundled model: see [llm] tiny_context_tokens
        return min(rag.settings.llm.tiny_context_tokens, available), 0
    map_budget = min(rag.settings.context.repo_map_tokens, int(available * 0.15))
    return min(rag.settings.context.max_tokens, available - map_budget), map_budget
