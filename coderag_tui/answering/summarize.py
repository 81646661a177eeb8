"""Model summaries, bottom up: functions and methods, then classes (from their methods'
summaries), then files (from their units' summaries, imports and importers), then folders.

A parent's prompt holds its parts' summaries. Each summary is stored with the model, the prompt version, a hash of the
unit's code and a hash of its children's summaries, and committed as soon as it is made, so a
killed run resumes where it stopped. A summary is current only when all four match and nothing
marked it stale; a model or prompt change therefore regenerates rather than mixes.

With a local model a run makes at most `budget` summaries: files and classes first (by role and
connectivity), then functions and methods by PageRank over the call graph. With a remote model
everything, after `estimate` says how many requests and tokens that takes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import numpy as np

from coderag_tui.answering.model_gate import ModelGate
from coderag_tui.answering.providers.base import accepts_keyword
from coderag_tui.answering.summary_prompts import (
    CLASS_PROMPT,
    FILE_PROMPT,
    FOLDER_PROMPT,
    FUNCTION_PROMPT,
    SYSTEM_PROMPT,
    child_digest,
    clean,
)
from coderag_tui.config import SummarySettings
from coderag_tui.errors import CoderagError
from coderag_tui.indexing.profiles import IMPORTANCE, first_sentence, folder_of, keyword_text
from coderag_tui.models import ChatMessage, Progress
from coderag_tui.retrieval.repo_map import pagerank
from coderag_tui.store import descriptions as store
from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.descriptions import StoredSummary, UnitRow

PROMPT_VERSION = "seed002-1"  # (a stored value: changing it marks every summary stale)
LEVELS = {"function": 0, "method": 0, "class": 1, "interface": 1, "struct": 1, "enum": 1, "trait": 1,
          "impl": 1, "file": 2, "folder": 3}
CodeReader = Callable[[str, int, int], str]
ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True)
class Target:
    """One summary to make: a unit, or a folder (unit None)."""

    key: str
    path: str
    kind: str
    qualname: str
    unit: UnitRow | None

    @property
    def level(self) -> int:
        return LEVELS.get(self.kind, 0)

    @property
    def label(self) -> str:
        return self.path if self.kind in ("file", "folder") else f"{self.path}::{self.qualname}"


class Yielded(Exception):
    """A summary was cut short because an answer wanted the model."""


class Stopped(Exception):
    """The run was told to stop while it waited for the model."""


@dataclass(frozen=True)
class Job:
    """A summary ready to be asked for: its prompt and the hashes it is stored with."""

    target: Target
    prompt: str
    code_hash: str
    child_hash: str


@dataclass(frozen=True)
class SummarizeResult:
    model: str
    prompt_version: str
    planned: int
    made: int
    current: int
    failed: int
    seconds: float
    model_seconds: float
    prompt_chars: int
    errors: tuple[str, ...] = ()

    @property
    def per_summary_s(self) -> float:
        return self.model_seconds / self.made if self.made else 0.0

    def text(self) -> str:
        line = (f"{self.made} summaries made, {self.current} already current, {self.failed} failed "
                f"({self.planned} planned) in {self.seconds:.1f}s with {self.model}")
        if self.made:
            line += f"; {self.per_summary_s:.2f}s per summary"
        return line


@dataclass(frozen=True)
class Estimate:
    requests: int
    prompt_tokens: int
    max_output_tokens: int

    def text(self) -> str:
        return (f"{self.requests} requests, about {self.prompt_tokens} prompt tokens and at most "
                f"{self.max_output_tokens} output tokens")


@dataclass(frozen=True)
class SummaryEstimate:
    model: str  # what a summarize run would use (`provider:name`)
    local: bool  # on the machine that summarizes (no money spent)
    estimate: Estimate


@dataclass
class _Tree:
    """The units of the index, with their children, for one run."""

    units: dict[int, UnitRow]
    children: dict[int, list[int]] = field(default_factory=dict)
    file_unit: dict[str, int] = field(default_factory=dict)

    @classmethod
    def load(cls, db: StoreBackend) -> _Tree:
        units = {u.id: u for u in store.units_of(db, store.all_file_ids(db))}
        tree = cls(units)
        for u in units.values():
            if u.kind == "file":
                tree.file_unit[u.path] = u.id
            elif u.parent_id is not None:
                tree.children.setdefault(u.parent_id, []).append(u.id)
        return tree


class Summarizer:
    """Makes and stores summaries with one model. `read_code(path, start, end)` returns source."""

    def __init__(self, db: StoreBackend, provider: object, model_name: str, read_code: CodeReader,
                 settings: SummarySettings, *, local: bool = True) -> None:
        self.db = db
        self.provider = provider
        self.model = model_name
        self.read_code = read_code
        self.settings = settings
        self.local = local
        self._tree: _Tree | None = None

    @property
    def tree(self) -> _Tree:
        if self._tree is None:
            self._tree = _Tree.load(self.db)
        return self._tree

    # ------------------------------------------------------------------ planning
    def targets(self, paths: Sequence[str] | None = None) -> list[Target]:
        """Every unit that gets a summary (functions, methods, classes, files) and their folders,
        under `paths` (files or folders) when given."""
        out: list[Target] = []
        folders: set[str] = set()
        for u in self.tree.units.values():
            if u.kind not in LEVELS or (paths and not _under(u.path, paths)):
                continue
            out.append(Target(store.summary_key(u.path, u.kind, u.qualname), u.path, u.kind, u.qualname, u))
            if u.kind == "file":
                folders.add(folder_of(u.path))
        for f in sorted(folders):
            out.append(Target(store.summary_key(f, "folder", f), f, "folder", f, None))
        return out

    def plan(self, paths: Sequence[str] | None = None, everything: bool = False) -> list[Target]:
        """The targets of a run in the order they are made (bottom up). With a local model and
        not `everything`: the first `budget` by importance."""
        targets = self.targets(paths)
        budget = self.settings.budget
        if self.local and not everything and budget > 0:
            units = [t for t in targets if t.unit is not None]
            chosen = self.by_importance(units)[:budget]
            files = {t.path for t in chosen if t.kind == "file"}
            keep = {t.key for t in chosen}
            targets = [t for t in targets if t.key in keep or (t.kind == "folder" and any(
                folder_of(p) == t.path for p in files))]
        return bottom_up(targets)

    def by_importance(self, targets: Sequence[Target]) -> list[Target]:
        """Files and classes first (by role, then how many files refer to them), then functions
        and methods by PageRank over the resolved calls."""
        ids = [t.unit.id for t in targets if t.unit is not None]
        profiles = store.profiles_for(self.db, ids)
        rank = self._unit_rank()

        def key(t: Target) -> tuple[int, float, str]:
            assert t.unit is not None
            role, fan_in, _, _ = profiles.get(t.unit.id, ("module", 0, 0, ""))
            if t.kind == "file" or t.level == 1:
                return (0, -(IMPORTANCE.get(role, 3) * 1000 + fan_in + rank.get(t.unit.id, 0.0)), t.key)
            return (1, -rank.get(t.unit.id, 0.0), t.key)

        return sorted(targets, key=key)

    def _unit_rank(self) -> dict[int, float]:
        pairs = store.call_pairs(self.db)
        if not pairs:
            return {}
        index: dict[int, int] = {}
        for a, b in pairs:
            index.setdefault(a, len(index))
            index.setdefault(b, len(index))
        edges: dict[tuple[int, int], float] = {}
        for a, b in pairs:
            edges[(index[a], index[b])] = edges.get((index[a], index[b]), 0.0) + 1.0
        ranks = pagerank(len(index), edges)
        scale = float(np.max(ranks)) or 1.0
        return {uid: float(ranks[i]) / scale for uid, i in index.items()}

    def estimate(self, targets: Sequence[Target]) -> Estimate:
        """Requests and tokens a run over `targets` takes (prompt size from the code's length)."""
        chars = 0
        for t in targets:
            if t.unit is not None and t.level < 2:
                span = (t.unit.end_line - t.unit.start_line + 1) * 40
                chars += min(span, self.settings.code_chars) + len(SYSTEM_PROMPT) + 200
            else:
                chars += len(SYSTEM_PROMPT) + 800
        return Estimate(len(targets), chars // 4,
                        sum(self.max_tokens(t.level) for t in targets))

    # ------------------------------------------------------------------ making
    def run(self, targets: Sequence[Target], progress: ProgressFn | None = None,
            should_stop: Callable[[], bool] | None = None, gate: ModelGate | None = None) -> SummarizeResult:
        """Make the targets' summaries in order. `gate`: the model is taken one summary at a
        time and given up to an answer (the summary is made again after it). A remote model's
        requests go out `[summaries] concurrency` at a time under its rate limit."""
        if not self.local:
            from coderag_tui.answering.summary_remote import run_remote

            return run_remote(self, targets, progress, should_stop)
        started = time.perf_counter()
        made = current = failed = prompt_chars = 0
        model_s = 0.0
        errors: list[str] = []
        total = len(targets)
        for done, t in enumerate(targets, start=1):
            if should_stop is not None and should_stop():
                break
            try:
                outcome = self.summarize_gated(t, gate, should_stop)
            except Stopped:
                break
            except CoderagError as exc:
                failed += 1
                errors.append(f"{t.label}: {exc.one_line()}")
                outcome = None
            if outcome is None:
                if not errors or not errors[-1].startswith(t.label):
                    current += 1
            else:
                made += 1
                model_s += outcome[0]
                prompt_chars += outcome[1]
            if progress is not None:
                progress(progress_event(done, total, t.label, time.perf_counter() - started))
        return SummarizeResult(self.model, PROMPT_VERSION, total, made, current, failed,
                               time.perf_counter() - started, model_s, prompt_chars, tuple(errors[:20]))

    def summarize_gated(self, t: Target, gate: ModelGate | None,
                        should_stop: Callable[[], bool] | None = None) -> tuple[float, int] | None:
        """`summarize` holding the gate (when given), started again whenever an answer took
        the model meanwhile; raises Stopped when `should_stop` ends the wait."""
        if gate is None:
            return self.summarize(t)

        def give_up() -> bool:  # to an answer, or because the run ends
            return gate.wanted() or (should_stop is not None and should_stop())

        while True:
            with gate.background(should_stop) as held:
                if not held:
                    raise Stopped()
                try:
                    return self.summarize(t, should_stop=give_up)
                except Yielded:
                    continue

    def current(self, t: Target) -> tuple[bool, str, dict[str, StoredSummary | None], str]:
        """Whether `t`'s stored summary is current, with its code hash, children and their hash."""
        existing = store.summaries_by_key(self.db, [t.key]).get(t.key)
        code_hash = self._code_hash(t)
        children = self._children(t)
        child_hash = child_digest(children.values())
        ok = (existing is not None and not existing.stale and existing.model == self.model
              and existing.prompt_version == PROMPT_VERSION and existing.code_hash == code_hash
              and existing.child_hash == child_hash)
        return ok, code_hash, children, child_hash

    def needs(self, t: Target) -> bool:
        return not self.current(t)[0]

    def prepare(self, t: Target, force: bool = False) -> Job | None:
        """The prompt and hashes of `t`'s summary, or None when the stored one is current."""
        ok, code_hash, children, child_hash = self.current(t)
        if ok and not force:
            return None
        return Job(t, self.prompt(t, children), code_hash, child_hash)

    def summarize(self, t: Target, force: bool = False,
                  should_stop: Callable[[], bool] | None = None) -> tuple[float, int] | None:
        """Make and store `t`'s summary unless the stored one is current. Returns (model seconds,
        prompt characters) when one was made; raises Yielded when `should_stop` cut it short."""
        job = self.prepare(t, force)
        if job is None:
            return None
        began = time.perf_counter()
        text = self.complete(job.prompt, t.level, should_stop)
        seconds = time.perf_counter() - began
        self.save(job, text, seconds)
        return seconds, len(job.prompt)

    def save(self, job: Job, raw: str, seconds: float) -> None:
        """Store a made summary (one commit: a killed run keeps what it made)."""
        t = job.target
        text = clean(raw)
        if not text:
            raise CoderagError(f"{self.model} returned an empty summary")
        summary = StoredSummary(t.key, t.path, t.kind, t.qualname, text, self.model, PROMPT_VERSION,
                                job.code_hash, job.child_hash, False, time.time(), seconds)
        with self.db.transaction():
            store.put_summary(self.db, summary)
            now = store.units_by_id(self.db, [t.unit.id]).get(t.unit.id) if t.unit is not None else None
            # (the index may have changed meanwhile: a re-indexed file's units have new ids, and
            # its refreshed profiles pick the summary up by key)
            if t.unit is not None and now is not None and (now.path, now.kind, now.qualname) == (
                    t.path, t.kind, t.qualname) and store.summaries_searched(self.db):
                store.write_keyword_rows(self.db, {t.unit.id: self._keywords(t.unit, text)})

    def queue(self, unit_ids: Sequence[int] = (), planned: bool = True) -> list[Target]:
        """The background's work: the units asked for (retrieved for a question) first, then
        every stored summary that is no longer current (stale, another model or prompt) and
        the budget's plan, bottom up."""
        wanted = [self.target_of(self.tree.units[i]) for i in dict.fromkeys(unit_ids)
                  if i in self.tree.units and self.tree.units[i].kind in LEVELS]
        rest: dict[str, Target] = {}
        if planned:
            stored = {s.key for s in store.all_summaries(self.db)}
            for t in self.targets():
                if t.key in stored:
                    rest[t.key] = t
            for t in self.plan():
                rest.setdefault(t.key, t)
        first = {t.key for t in wanted}
        return wanted + bottom_up(t for t in rest.values() if t.key not in first)

    @staticmethod
    def target_of(u: UnitRow) -> Target:
        return Target(store.summary_key(u.path, u.kind, u.qualname), u.path, u.kind, u.qualname, u)

    def max_tokens(self, level: int) -> int:
        return self.settings.max_tokens if level == 0 else self.settings.max_tokens * 3 // 2

    def complete(self, prompt: str, level: int, should_stop: Callable[[], bool] | None = None) -> str:
        messages = [ChatMessage("system", SYSTEM_PROMPT), ChatMessage("user", prompt)]
        max_tokens = self.max_tokens(level)
        stream = self.provider.stream  # type: ignore[attr-defined]
        if should_stop is None or not accepts_keyword(stream, "should_stop"):
            return "".join(stream(messages, max_tokens=max_tokens, temperature=self.settings.temperature))
        stopped = False

        def stop() -> bool:
            nonlocal stopped
            stopped = stopped or should_stop()
            return stopped

        text = "".join(stream(messages, max_tokens=max_tokens, temperature=self.settings.temperature,
                              should_stop=stop))
        if stopped:  # cut short: never stored, made again later
            raise Yielded()
        return text

    def _keywords(self, unit: UnitRow, text: str) -> str:
        if unit.kind != "file":
            return text
        prof = store.profile_of(self.db, unit.id)
        return (keyword_text(prof[3]) + "\n" + text).strip() if prof and prof[3] else text

    def _code_hash(self, t: Target) -> str:
        if t.unit is None:
            return ""
        return store.code_hashes(self.db, [t.unit])[t.unit.id]

    def _children(self, t: Target) -> dict[str, StoredSummary | None]:
        """The summaries the target's prompt is built from (key -> summary or None)."""
        tree = self.tree
        if t.unit is None:
            keys = [store.summary_key(p, "file", p) for p in sorted(tree.file_unit) if folder_of(p) == t.path]
        elif t.level == 0:
            return {}
        else:
            keys = [store.summary_key(c.path, c.kind, c.qualname)
                    for c in (tree.units[i] for i in tree.children.get(t.unit.id, ())) if c.kind in LEVELS]
        found = store.summaries_by_key(self.db, keys)
        return {k: found.get(k) for k in keys}

    # ------------------------------------------------------------------ prompts
    def prompt(self, t: Target, children: dict[str, StoredSummary | None]) -> str:
        u = t.unit
        if u is None:
            lines = []
            for key, s in children.items():
                path = key.split(store.SEP)[0]
                lines.append(f"- {PurePosixPath(path).name}: {_first(s) if s else self._profile_line(path)}")
            return FOLDER_PROMPT.format(path=t.path or ".", files_overview="\n".join(lines[:40]) or "(none)")
        language = u.language
        if t.level == 0:
            callers = store.callers(self.db, [u.id]).get(u.id, [])
            context = f"Called by: {', '.join(callers[:3])}" if callers else ""
            return FUNCTION_PROMPT.format(language=language, name=u.name, signature=u.signature or u.name,
                                          file_path=u.path, caller_context=context, code=self._code(u))
        if t.level == 1:
            overview = []
            for key, s in children.items():
                name = key.split(store.SEP)[2]
                overview.append(f"- {name.rsplit('.', 1)[-1]}: {_first(s) if s else self._unit_line(key)}")
            bases = store.bases_of(self.db, u.id)
            return CLASS_PROMPT.format(language=language, name=u.name, file_path=u.path,
                                       inheritance=f"Extends: {', '.join(bases)}" if bases else "",
                                       method_overview="\n".join(overview[:30]) or "(none)", code=self._code(u))
        prof = store.profile_of(self.db, u.id)
        data = prof[3] if prof else {}
        exports: list[str] = []
        internal: list[str] = []
        for key, s in children.items():
            _, kind, qual = key.split(store.SEP)
            line = f"- {kind} {qual}: {_first(s) if s else self._unit_line(key)}"
            (internal if qual.rsplit(".", 1)[-1].startswith("_") else exports).append(line)
        used_by = data.get("imported_by") or []
        return FILE_PROMPT.format(language=language, file_path=u.path,
                                  exports_overview="\n".join(exports[:25]) or "(none)",
                                  internal_overview="\n".join(internal[:15]) or "(none)",
                                  imports="\n".join(str(m) for m in (data.get("imports") or [])[:20]) or "(none)",
                                  used_by=", ".join(map(str, used_by[:5])) or "Not imported by other files")

    def _code(self, u: UnitRow) -> str:
        text = self.read_code(u.path, u.start_line, u.end_line)
        limit = self.settings.code_chars
        return text if len(text) <= limit else text[:limit] + "\n..."

    def _unit_line(self, key: str) -> str:
        path, kind, qual = key.split(store.SEP)
        for i in self.tree.children.get(self.tree.file_unit.get(path, -1), []) + [
                c for p in self.tree.children.get(self.tree.file_unit.get(path, -1), [])
                for c in self.tree.children.get(p, [])]:
            u = self.tree.units[i]
            if u.kind == kind and u.qualname == qual:
                return first_sentence(u.docstring) if u.docstring else (u.signature or f"{kind} {u.name}")
        return kind

    def _profile_line(self, path: str) -> str:
        uid = self.tree.file_unit.get(path)
        prof = store.profile_of(self.db, uid) if uid is not None else None
        if prof is None:
            return "file"
        data = prof[3]
        return f"{prof[0]}" + (f"; {data['doc']}" if data.get("doc") else "")


def bottom_up(targets: Iterable[Target]) -> list[Target]:
    """Functions and methods, classes, files, then folders (deepest first)."""
    return sorted(targets, key=lambda t: (t.level, -t.path.count("/") if t.kind == "folder" else 0,
                                          t.path, t.unit.start_line if t.unit else 0))


def progress_event(done: int, total: int, label: str, elapsed: float) -> Progress:
    rate = done / max(elapsed, 1e-6)
    return Progress("summarize", done, total, label, rate=rate, eta_s=(total - done) / rate if rate else 0.0)


def _first(s: StoredSummary) -> str:
    return first_sentence(s.text, 160)


def _under(path: str, prefixes: Sequence[str]) -> bool:
    for p in prefixes:
        p = p.strip("/")
        if not p or p == "." or path == p or path.startswith(p + "/"):
            return True
    return False
