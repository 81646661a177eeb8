"""A review from start to end: diff -> both sides parsed -> unit changes -> context -> budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from coderag_tui.errors import CoderagError
from coderag_tui.models import ComposedContext, ContextPiece
from coderag_tui.review import sources
from coderag_tui.review.changes import DELETED, FileSides, UnitChange, classify
from coderag_tui.review.diff import unit_diff
from coderag_tui.review.gather import ChangeContext, Gatherer, Ref
from coderag_tui.review.pack import Candidate, TokenCounter, pack
from coderag_tui.tokens import estimate_tokens

DEFAULT_BUDGET = 8000
MAX_PIECE_LINES = 40  # callers, callees and tests are cut to this many lines around the call
MAX_FINDINGS = 12  # orphaned callers / mismatched call sites listed per change in the overview


@dataclass(frozen=True)
class ReviewOptions:
    base: str = "HEAD"
    diff_text: str | None = None  # a unified diff instead of `git diff BASE`
    diff_label: str = ""  # where that diff came from (a file name, "stdin")
    max_tokens: int = DEFAULT_BUDGET
    update_index: bool = True  # bring the index up to date with the working tree first
    similar: int = 3  # similar units per change (when the index has vectors)
    count_tokens: Callable[[str], int] | None = None  # the model's own count (default: an estimate)
    # a server's review: only files discovery would read (no secret, excluded or ignored one, none
    # outside the repository or through a link), whatever paths the diff names
    readable_only: bool = False


@dataclass
class Review:
    label: str
    base: str | None
    files: list[FileSides]
    contexts: list[ChangeContext]
    overview: str
    headings: list[str]
    chosen: list[tuple[Candidate, ContextPiece]]
    budget: int
    tokens: int
    dropped: dict[str, int]
    notes: list[str] = field(default_factory=list)

    @property
    def changes(self) -> list[UnitChange]:
        return [c.change for c in self.contexts]

    def markdown(self) -> str:
        from coderag_tui.review.render import markdown

        return markdown(self)

    def to_json(self) -> dict[str, Any]:
        from coderag_tui.review.render import to_json

        return to_json(self)

    def file_count(self) -> int:
        """How many changed files the review covers (0: nothing to review)."""
        return len(self.files)

    def composed(self) -> ComposedContext:
        """The review's code context as a ComposedContext (for the answering layer; the
        overview goes with the question, as it cites no single range)."""
        pieces = tuple(p for _, p in self.chosen)
        return ComposedContext(self.label, "review", pieces, self.tokens, self.budget)


def _lines(service: Any, ref: Ref, focus: int = 0, limit: int = MAX_PIECE_LINES) -> tuple[int, int, str]:
    """A unit's code from disk, cut to `limit` lines around `focus` (or its head)."""
    start, end = ref.start_line, ref.end_line
    if end - start + 1 > limit:
        if focus and start <= focus <= end:
            start = max(start, min(focus - limit // 2, end - limit + 1))
        end = start + limit - 1
    try:
        lines = service.read_lines(ref.path, start, end)
    except CoderagError:
        return start, end, ""
    return start, start + max(len(lines), 1) - 1, "\n".join(lines)


def _language(path: str) -> str:
    from coderag_tui.parsing.languages import detect_language

    spec = detect_language(path)
    return spec.name if spec is not None else ""


def candidates_for(service: Any, i: int, ctx: ChangeContext) -> list[Candidate]:
    """Every piece the change could bring, by tier (0 = the change itself)."""
    c = ctx.change
    out: list[Candidate] = []
    seq = [0]

    def add(**kw: Any) -> None:
        seq[0] += 1
        out.append(Candidate(change=i, seq=seq[0], **kw))

    name = c.qualname
    if c.old is not None and c.new is not None:
        d = unit_diff(c.old_code, c.new_code, c.old.start_line, c.new.start_line)
        if d:
            what = f"{c.old_qualname} -> {c.qualname}" if c.old_qualname != c.qualname else name
            add(tier=0, role="diff", path=c.path, start_line=c.start_line, end_line=c.end_line,
                title=f"{c.kind}: {what}", text=d, language=c.language)
    if c.code:
        title = f"{name} (deleted; its last code)" if c.kind == DELETED else f"{name} ({c.kind})"
        path = (c.old_path or c.path) if c.kind == DELETED else c.path
        add(tier=0, role="change", path=path, start_line=c.start_line, end_line=c.end_line,
            title=title, text=c.code, language=c.language)

    callee_name = c.old.name if c.old is not None and c.kind in (DELETED, "renamed") else c.name
    issues = {(m.caller.path, m.caller.line): m for m in ctx.mismatched}
    shown: set[tuple[str, int]] = set()
    for ref in ctx.orphaned:
        s, e, text = _lines(service, ref, ref.line)
        if text:
            shown.add((ref.path, ref.start_line))
            add(tier=1, role="orphaned-caller", path=ref.path, start_line=s, end_line=e,
                title=f"{ref.qualname} still calls {callee_name} (line {ref.line})", text=text,
                language=_language(ref.path), focus=ref.line)
    # call sites that no longer fit come first, then the other callers
    ordered = sorted(ctx.callers, key=lambda r: (r.path, r.line) not in issues)
    for ref in ordered:
        key = (ref.path, ref.start_line)
        if key in shown:
            continue
        s, e, text = _lines(service, ref, ref.line)
        if not text:
            continue
        shown.add(key)
        issue = issues.get((ref.path, ref.line))
        if issue is not None:
            add(tier=1, role="call-site", path=ref.path, start_line=s, end_line=e,
                title=f"{ref.qualname} calls {c.name} at line {ref.line}: {issue.reason}", text=text,
                language=_language(ref.path), focus=ref.line)
        else:
            add(tier=1, role="caller", path=ref.path, start_line=s, end_line=e,
                title=f"{ref.qualname} calls {c.name} (line {ref.line})", text=text,
                language=_language(ref.path), focus=ref.line)
    for ref in ctx.callees:
        s, e, text = _lines(service, ref)
        if text:
            add(tier=2, role="callee", path=ref.path, start_line=s, end_line=e,
                title=f"{ref.qualname} (called at line {ref.line})", text=text, language=_language(ref.path))
    if ctx.outline:
        path, s, e = ctx.outline_range
        add(tier=3, role="outline", path=path, start_line=s, end_line=e,
            title="outline (* marks changed units)", text=ctx.outline, language=c.language)
    for ref in ctx.tests:
        if (ref.path, ref.start_line) in shown:
            continue  # already shown as a caller
        shown.add((ref.path, ref.start_line))
        s, e, text = _lines(service, ref, ref.line)
        if text:
            add(tier=3, role="test", path=ref.path, start_line=s, end_line=e,
                title=f"{ref.qualname} tests {c.name}", text=text, language=_language(ref.path), focus=ref.line)
    for ref in ctx.similar:
        if (ref.path, ref.start_line) in shown or ref.kind == "file":
            continue
        s, e, text = _lines(service, ref, limit=30)
        if text:
            add(tier=4, role="similar", path=ref.path, start_line=s, end_line=e,
                title=f"{ref.qualname} (similar code)", text=text, language=_language(ref.path))
    meta = metadata_text(ctx)
    if meta:
        add(tier=5, role="metadata", path=c.path, start_line=c.start_line, end_line=c.end_line,
            title=f"metadata of {name}", text=meta)
    return out


def metadata_text(ctx: ChangeContext) -> str:
    lines = []
    if ctx.imports:
        lines.append("- file imports: " + "; ".join(ctx.imports[:20]))
    if ctx.constants:
        lines.append("- constants used: " + ", ".join(ctx.constants[:20]))
    if ctx.caller_count:
        names = sorted({r.qualname for r in ctx.callers})
        more = f" (+{len(names) - 30} more)" if len(names) > 30 else ""
        lines.append(f"- called by {ctx.caller_count} call site{'s' if ctx.caller_count != 1 else ''} in "
                     f"{len(names)} unit{'s' if len(names) != 1 else ''}: " + ", ".join(names[:30]) + more)
    elif ctx.change.kind != DELETED:
        lines.append("- no callers in the index")
    if ctx.external_callees:
        lines.append("- calls outside the repository: " + ", ".join(ctx.external_callees[:30]))
    if ctx.tests or ctx.test_files:
        tests = sorted({r.qualname for r in ctx.tests})
        part = (f"{len(tests)} test{'s call' if len(tests) != 1 else ' calls'} it: " + ", ".join(tests[:10])
                if tests else "no test calls it")
        if ctx.test_files:
            part += "; test files for its file: " + ", ".join(ctx.test_files[:10])
        lines.append("- tests: " + part)
    else:
        lines.append("- tests: none found")
    return "\n".join(lines)


def _params(u: Any) -> str:
    return "(" + ", ".join(u.params) + ")" + (f" -> {u.return_type}" if u.return_type else "")


def change_line(c: UnitChange) -> str:
    """One line about a change (the overview's bullet)."""
    if c.kind == "renamed":
        head = f"**renamed** `{c.old_qualname}` → `{c.qualname}` {c.citation} (was {c.old_citation}"
        head += f", similarity {c.similarity:.2f})" if c.similarity < 1 else ", same code)"
        return head
    if c.kind == DELETED:
        return f"**deleted** `{c.qualname}` (was {c.old_citation})" + (
            f"; with its members {', '.join(c.members)}" if c.members else "")
    if c.kind == "signature-changed" and c.old is not None and c.new is not None:
        return f"**signature-changed** `{c.qualname}` {c.citation}: `{_params(c.old)}` → `{_params(c.new)}`"
    extra = f"; members {', '.join(c.members)}" if c.members else ""
    return f"**{c.kind}** `{c.qualname}` {c.citation}{extra}"


def overview_text(label: str, files: list[FileSides], contexts: list[ChangeContext], budget: int,
                  tokens: int, notes: list[str]) -> str:
    added = sum(fs.diff.stats()[0] for fs in files)
    deleted = sum(fs.diff.stats()[1] for fs in files)
    counts: dict[str, int] = {}
    for ctx in contexts:
        counts[ctx.change.kind] = counts.get(ctx.change.kind, 0) + 1
    kinds = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no function or class changed"
    lines = [f"{len(files)} file{'s' if len(files) != 1 else ''} changed (+{added} -{deleted}); "
             f"{len(contexts)} unit change{'s' if len(contexts) != 1 else ''}: {kinds}. "
             f"Context: {tokens}/{budget} tokens."]
    for ctx in contexts:
        c = ctx.change
        line = "- " + change_line(c)
        if c.kind not in (DELETED,):
            line += f"; {ctx.caller_count} caller{'s' if ctx.caller_count != 1 else ''}"
            if ctx.tests:
                line += f", {len(ctx.tests)} test{'s' if len(ctx.tests) != 1 else ''}"
        if c.partial:
            line += " (rebuilt from the diff alone: best effort)"
        lines.append(line)
        if c.kind in (DELETED, "renamed"):
            n = len(ctx.orphaned)
            if n:
                lines.append(f"  - ⚠ {n} orphaned caller{'s' if n != 1 else ''} still call{'s' if n == 1 else ''} "
                             f"`{c.old.name if c.old else c.name}`:")
                for r in ctx.orphaned[:MAX_FINDINGS]:
                    lines.append(f"    - {r.site} `{r.qualname}`" + (f" ({r.note})" if r.note else ""))
                if n > MAX_FINDINGS:
                    lines.append(f"    - … and {n - MAX_FINDINGS} more")
            else:
                lines.append("  - no caller of the old name left in the index")
        if ctx.mismatched:
            n = len(ctx.mismatched)
            lines.append(f"  - ⚠ {n} call site{'s' if n != 1 else ''} no longer match{'es' if n == 1 else ''} "
                         "the new signature:")
            for m in ctx.mismatched[:MAX_FINDINGS]:
                lines.append(f"    - {m.caller.site} `{m.caller.qualname}`: {m.reason}")
            if n > MAX_FINDINGS:
                lines.append(f"    - … and {n - MAX_FINDINGS} more")
    other = [fs for fs in files if fs.note]
    if other:
        lines.append("Other files: " + ", ".join(f"{fs.diff.path} ({fs.diff.status}, {fs.note})" for fs in other[:30]))
    lines.extend(notes)
    return "\n".join(lines)


def _cut_to(text: str, room: int, count: TokenCounter) -> str:
    if count(text) <= room:
        return text
    lines = text.split("\n")
    while lines and count("\n".join(lines) + "\n…") > room:
        lines.pop()
    return "\n".join(lines) + "\n…" if lines else ""


def build_review(service: Any, options: ReviewOptions) -> Review:
    """Build a review of the working tree against `options.base` (or of `options.diff_text`)."""
    notes: list[str] = []
    count = options.count_tokens or estimate_tokens
    rules = service.settings.index if options.readable_only else None
    left_out: list[str] = []
    if options.diff_text is not None:
        files = sources.from_diff_text(service.root, options.diff_text, service.settings, rules, left_out)
        label = f"diff from {options.diff_label or 'input'}"
        base: str | None = None
    else:
        files = sources.from_git(service.root, options.base, service.settings, rules, left_out)
        label = f"working tree vs {options.base}"
        base = options.base
    if left_out:
        noun = "file" if len(left_out) == 1 else "files"
        notes.append(f"Note: {len(left_out)} changed {noun} left out: secret, excluded or outside the repository.")
    if options.update_index:
        try:
            service.index()
            if options.similar > 0 and service.settings.embed.enabled and service.status().vectors > 0:
                service.embed()
        except CoderagError as exc:
            notes.append(f"Note: the index could not be updated ({exc.one_line()}); callers may be stale.")
    changes = classify(files)
    gatherer = Gatherer(service, files, changes)
    contexts = [gatherer.gather(c, options.similar) for c in changes]

    budget = max(1, int(options.max_tokens))
    headings = [f"## {i + 1}. {ctx.change.kind} `{ctx.change.qualname}` ({ctx.change.citation})"
                for i, ctx in enumerate(contexts)]
    title = f"# Review: {label}"
    overview = overview_text(label, files, contexts, budget, budget, notes)
    heading_cost = sum(count(h + "\n\n") for h in headings)
    room = budget - heading_cost - count(title + "\n\n")
    overview = _cut_to(overview, max(room - 1, 0), count)
    reserved = count(title + "\n\n" + overview + "\n\n") + heading_cost
    if reserved > budget:  # too many changes for this budget: headings are dropped from the text
        headings = []
        reserved = count(title + "\n\n" + overview + "\n\n")
    candidates = []
    outlines: set[tuple[str, int, int]] = set()
    for i, ctx in enumerate(contexts):
        for cand in candidates_for(service, i, ctx):
            if cand.role == "outline":  # one outline per class or module (it marks every change)
                key = (cand.path, cand.start_line, cand.end_line)
                if key in outlines:
                    continue
                outlines.add(key)
            candidates.append(cand)
    packed = pack(candidates, budget, reserved, count)
    final = overview_text(label, files, contexts, budget, packed.tokens, notes)
    final = _cut_to(final, max(room - 1, 0), count)
    if count(title + "\n\n" + final + "\n\n") > count(title + "\n\n" + overview + "\n\n"):
        final = overview  # never more than was reserved (the count's digits can only shrink)
    return Review(label, base, files, contexts, final, headings, packed.pieces, budget, packed.tokens,
                  packed.dropped, notes)
