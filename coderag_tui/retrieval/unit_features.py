"""What the learned ranker sees of each candidate unit of a pasted report: its file's place in
the learned file ranking, the retrievers' ranks, its kind and size, and how its name and code
meet the report (the identifiers it names, its traceback's functions, quoted code and error
messages, the title's words), and whether the graph reaches it from the names the report uses.

Candidates are the fusion's units and every function and method of the best few files: on the
SWE-bench issues most function misses had the right file near the top and the unit far down in
it, behind the file's other units.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from coderag_tui.models import UnitRef
from coderag_tui.parsing.extract import is_test_path
from coderag_tui.parsing.identifiers import split_identifier
from coderag_tui.retrieval import lexical, prose, report, symbols
from coderag_tui.retrieval.fusion import Fused
from coderag_tui.retrieval.rank_features import QUERY_FEATURES, QueryFacts
from coderag_tui.store import rank_reads
from coderag_tui.store.backend import StoreBackend

# how a unit's own text meets the report beside its file's other units (what orders the units of
# a file the file ranking already found)
TEXT_FEATURES = ("idf_density", "file_share", "rank_in_file", "name_idf", "owner_mentioned", "trigrams",
                 "owner_words", "dunder_topic")
# what a report says when the bug is in a special method (`__repr__`: "the representation")
_DUNDER_TOPICS: dict[str, frozenset[str]] = {
    name: frozenset(words.split()) for names, words in (
        ("__repr__ __str__ __format__ _repr_html_ _repr_latex_",
         "repr representation display displayed displays print printed printing str string"),
        ("__init__ __new__ __post_init__ __init_subclass__",
         "init initialize initialise initialization constructor construct instantiate instantiating"),
        ("__eq__ __ne__ __lt__ __le__ __gt__ __ge__ __cmp__",
         "equal equality compare compared comparing comparison sort sorting sorted ordering"),
        ("__hash__", "hash hashable unhashable hashing"),
        ("__len__ __length_hint__", "len length"),
        ("__getitem__ __setitem__ __delitem__ __class_getitem__", "indexing subscript subscripting slice slicing"),
        ("__iter__ __next__ __aiter__ __anext__ __reversed__", "iterate iterating iteration iterator iterable"),
        ("__call__", "call callable calling"),
        ("__contains__", "contains membership"),
        ("__bool__ __nonzero__", "bool truth truthiness truthy falsy"),
        ("__copy__ __deepcopy__", "copy deepcopy copying copied"),
        ("__reduce__ __reduce_ex__ __getstate__ __setstate__ __getnewargs__", "pickle pickling unpickle unpickling pickled"),
        ("__enter__ __exit__ __aenter__ __aexit__", "context manager"),
        ("__getattr__ __getattribute__ __setattr__ __delattr__ __dir__", "attribute attributes getattr setattr"),
        ("__add__ __radd__ __iadd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __and__ __rand__ "
         "__or__ __ror__ __xor__ __matmul__ __neg__ __pow__ __mod__", "operator operators operand arithmetic"),
    ) for name in names.split()
}
UNIT_LISTS = ("bm25", "symbol", "fuzzy", "name", "trace", "summary", "vector", "filed")
UNIT_FEATURES = (
    *QUERY_FEATURES,
    "file_rank", "file_rel", "from_file",
    "fused_rel", "fused_rank", *(f"inv_{name}" for name in UNIT_LISTS),
    "k_function", "k_method", "k_class", "k_file", "k_other", "lines", "test", "prose",
    "name_mentioned", "qual_mentioned", "name_words", "name_frac", "name_title", "name_frame",
    "text_terms", "text_idf", "text_idf_rel", "title_terms", "code_names", "quoted", "errors",
    "g1", "g2", "has_text",
    *TEXT_FEATURES,
)
TOP_FILES = 5  # every function and method of the best files joins the candidates
MAX_FUSED = 60
_QUOTED = re.compile(r"""(?<![\w'"])(['"])([^'"\n]{6,120})\1""")
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_PROMPT = re.compile(r"^\s*(?:>>>|\.\.\.)\s?(.*)$", re.M)
_CALLED = re.compile(r"(?:\.|\b)([A-Za-z_]\w{2,})\s*\(|\.([A-Za-z_]\w{2,})\b")
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CONTAINERS = frozenset({"class", "struct", "interface", "trait", "enum", "impl", "module", "namespace", "file"})


@dataclass(frozen=True)
class ReportText:
    names: frozenset[str]  # identifiers the report mentions (`snake_case`, CamelCase, a.b, f())
    quals: frozenset[str]  # dotted names as written (`Cls.meth`)
    frames: frozenset[str]  # functions of its traceback frames
    code_names: frozenset[str]  # names its example code calls or reaches through an attribute
    quoted: tuple[str, ...]  # quoted strings (error messages, arguments), lower case
    errors: frozenset[str]  # error types it names
    terms: dict[str, float]  # search word -> idf
    trigrams: frozenset[tuple[str, str, str]] = frozenset()  # runs of three words, lower case


def report_text(db: StoreBackend, query: str, sig: report.ReportSignals) -> ReportText:
    mentioned = symbols.mentioned_names(sig.text, 40)
    names = frozenset(n.replace("::", ".").split(".")[-1] for n in mentioned)
    quals = frozenset(n.replace("::", ".") for n in mentioned if "." in n or "::" in n)
    code = "\n".join([*(_FENCE.findall(query)), *(_PROMPT.findall(query))])
    code_names = frozenset(a or b for a, b in _CALLED.findall(code))
    quoted = tuple(dict.fromkeys(m.group(2).strip().lower() for m in _QUOTED.finditer(sig.text)))[:20]
    words = lexical.query_terms(sig.text, 400)
    df, total = lexical.doc_freqs(db, words)
    terms = {w: math.log((1 + total) / (1 + df[w])) for w in words if w in df}
    return ReportText(names, quals, frozenset(f.function for f in sig.frames if f.function), code_names,
                      quoted, frozenset(sig.errors), terms, word_trigrams(sig.text.lower()))


def word_trigrams(low: str) -> frozenset[tuple[str, str, str]]:
    """Runs of three words (quoted code, an error message's text, a docstring's phrase)."""
    seq = _WORDS.findall(low)
    return frozenset(zip(seq, seq[1:], seq[2:], strict=False))


def _lines_of(chunks: Sequence[tuple[object, ...]]) -> dict[str, dict[int, str]]:
    out: dict[str, dict[int, str]] = {}
    for path, start, _end, text in chunks:
        lines = out.setdefault(str(path), {})
        for i, line in enumerate(str(text).split("\n")):
            lines.setdefault(int(start) + i, line)  # type: ignore[call-overload]
    return out


def unit_candidates(
    db: StoreBackend,
    facts: QueryFacts,
    rt: ReportText,
    lists: Mapping[str, Sequence[int]],
    units: Mapping[int, UnitRef],
    fused: Sequence[Fused[int]],
    files: Sequence[Fused[str]],
    graph: tuple[Mapping[int, float], Mapping[int, float]],
) -> tuple[list[UnitRef], np.ndarray]:
    """The candidate units (the fusion's first, then the best files' functions) and their
    UNIT_FEATURES rows."""
    file_at = {f.key: i + 1 for i, f in enumerate(files)}
    top_file = files[0].score if files else 0.0
    file_score = {f.key: f.score for f in files}
    best_files = [f.key for f in files[:TOP_FILES]]
    candidates: list[UnitRef] = [units[f.key] for f in fused[:MAX_FUSED] if f.key in units]
    seen = {u.id for u in candidates}
    from_file: set[int] = set()
    for u in rank_reads.units_of_files(db, best_files):
        if u.id not in seen and u.kind not in _CONTAINERS:
            seen.add(u.id)
            from_file.add(u.id)
            candidates.append(u)
    text_of = _lines_of(rank_reads.chunks_of_files(db, best_files))
    ranks = {name: {uid: i + 1 for i, uid in enumerate(dict.fromkeys(lists.get(name, ())))} for name in UNIT_LISTS}
    fused_at = {f.key: (i + 1, f.score) for i, f in enumerate(fused)}
    top_fused = fused[0].score if fused and fused[0].score > 0 else 1.0
    hop1, hop2 = graph
    rows = np.zeros((len(candidates), len(UNIT_FEATURES)), dtype=np.float32)
    idf_rows: list[float] = []
    owners: dict[str, float] = {}
    title = facts.title_words
    quoted = rt.quoted
    term_at = {t: i for i, t in enumerate(rt.terms)}
    for i, u in enumerate(candidates):
        at, score = fused_at.get(u.id, (MAX_FUSED + 1, 0.0))
        fr = file_at.get(u.path, len(files) + 1)
        row: list[float] = [*facts.values, math.log2(1 + fr),
                            file_score.get(u.path, top_file - 10.0) - top_file, float(u.id in from_file),
                            score / top_fused, math.log2(1 + at)]
        row += [1.0 / ranks[name][u.id] if u.id in ranks[name] else 0.0 for name in UNIT_LISTS]
        kind = u.kind
        row += [float(kind == "function"), float(kind == "method"), float(kind == "class"), float(kind == "file"),
                float(kind not in ("function", "method", "class", "file")),
                math.log1p(max(u.end_line - u.start_line + 1, 1)), float(is_test_path(u.path)),
                float(prose.is_prose_unit(u.path, u.language))]
        parts = {w.lower() for w in split_identifier(u.name)} or {u.name.lower()}
        qual = u.qualname or u.name
        in_words = len(parts & facts.words)
        row += [float(u.name in rt.names), float(any(qual == q or qual.endswith("." + q) for q in rt.quals)),
                float(in_words), in_words / max(len(parts), 1), float(len(parts & title)),
                float(u.name in rt.frames)]
        lines = text_of.get(u.path)
        if lines is not None and kind != "file":
            text = "\n".join(lines.get(n, "") for n in range(u.start_line, u.end_line + 1))
            low = text.lower()
            found = _WORDS.findall(text)
            raw = set(found)
            seq = " ".join(found).lower().split()  # the words in order, lower case (for the runs of three)
            words = set(seq)
            words |= {p for w in words if "_" in w for p in w.split("_") if p}  # ASCII: lower already
            present = sorted(words.intersection(rt.terms), key=term_at.__getitem__)  # in the report's order
            idf = sum(rt.terms[t] for t in present)
            idf_rows.append(idf)
            extra = unit_text_row(rt, u, parts, idf, seq, facts.words, owners)
            row += [float(len(present)), idf, 0.0, float(len(title & words)),
                    float(len(rt.code_names & raw)), float(sum(1 for q in quoted if q in low)),
                    float(len(rt.errors & raw))]
        else:
            idf_rows.append(0.0)
            extra = unit_text_row(rt, u, parts, 0.0, None, facts.words, owners)
            row += [0.0] * 7
        row += [hop1.get(u.id, 0.0), hop2.get(u.id, 0.0), float(lines is not None and kind != "file")]
        rows[i] = row + extra
    if len(candidates):
        within_file(candidates, rows, text_of)
        col = UNIT_FEATURES.index("text_idf_rel")
        top = max(idf_rows) or 1.0
        rows[:, col] = np.asarray(idf_rows, dtype=np.float32) / top
    return candidates, rows


def unit_text_row(rt: ReportText, u: UnitRef, parts: set[str], idf: float, seq: Sequence[str] | None,
                  words: frozenset[str], owners: dict[str, float]) -> list[float]:
    """TEXT_FEATURES of one unit, but for the two that compare it with its file's other units
    (within_file): its report words' idf per line, its name's words' idf, whether the report
    names its class, how many of the report's runs of three words its text holds, the share of
    its class's name's words the report uses, and whether it is a special method whose topic the
    report speaks of."""
    qual = (u.qualname or u.name).replace("::", ".").split(".")
    owner = float(len(qual) > 1 and qual[-2] in rt.names)
    owner_words = 0.0
    if len(qual) > 1:
        owner_words = owners.get(qual[-2], -1.0)
        if owner_words < 0:  # once per class and report
            owner_parts = {w.lower() for w in split_identifier(qual[-2])} - lexical.STOP_WORDS
            owner_words = owners[qual[-2]] = len(owner_parts & words) / len(owner_parts) if owner_parts else 0.0
    topic = float(bool(_DUNDER_TOPICS.get(u.name, frozenset()) & words))
    name_idf = sum(rt.terms.get(p, 0.0) for p in parts)
    if seq is None:
        return [0.0, 0.0, 0.0, name_idf, owner, 0.0, owner_words, topic]
    lines = max(u.end_line - u.start_line + 1, 1)
    shared = len(rt.trigrams.intersection(zip(seq, seq[1:], seq[2:], strict=False))) if rt.trigrams else 0
    return [idf / math.log2(2 + lines), 0.0, 0.0, name_idf, owner, float(shared), owner_words, topic]


def within_file(candidates: Sequence[UnitRef], rows: np.ndarray, text_of: Mapping[str, object]) -> None:
    """Fill file_share (the unit's part of the report words' idf summed over its file's candidate
    units) and rank_in_file (log2(1 + its place among them by that idf); 0 without text)."""
    idf = rows[:, UNIT_FEATURES.index("text_idf")]
    share = UNIT_FEATURES.index("file_share")
    rank = UNIT_FEATURES.index("rank_in_file")
    by_file: dict[str, list[int]] = {}
    for i, u in enumerate(candidates):
        if u.path in text_of and u.kind != "file":
            by_file.setdefault(u.path, []).append(i)
    for members in by_file.values():
        total = float(sum(idf[i] for i in members)) or 1.0
        for place, i in enumerate(sorted(members, key=lambda j: -idf[j]), 1):
            rows[i, share] = idf[i] / total
            rows[i, rank] = math.log2(1 + place)
