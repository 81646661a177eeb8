"""Real Go, TypeScript and Rust code from the package registries, with its doc comments removed.

Each corpus is one pinned archive (a Debian package that ships the sources, an npm tarball),
fetched once into the data cache (bench.harness.data_cache) and checked against its sha256. Its
doc comments become queries: the first sentence of the comment, searched against the code with
every comment line removed; the gold is the unit the comment documented (the innermost unit that
starts at the declaration below it). `run_eval` indexes one corpus and scores the search on it.
Used by tests/test_eval_languages.py (which holds the baseline, BASELINE) and
bench/eval_languages.py.
"""

from __future__ import annotations

import hashlib
import io
import lzma
import re
import tarfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from bench.harness import ROOT, Unreachable, data_cache, unambiguous, wholefile_bm25
from coderag_tui.config import Settings
from coderag_tui.retrieval.evaluate import KS, Case, Hunk, accuracy, evaluate_case, table
from coderag_tui.retrieval.search import MODES
from coderag_tui.service import CodeRag
from coderag_tui.store import read

BASELINE = ROOT / "tests" / "data" / "eval_languages_baseline.json"
MAX_QUERIES = 120  # per language: the search part stays under a minute on 2 busy cores
MAX_ATTRIBUTE_LINES = 4  # a unit may start this far above its declaration (#[inline], @Decorator)
MIN_WORDS = 4
MAX_WORDS = 40
DEBIAN = "https://deb.debian.org/debian/"


@dataclass(frozen=True)
class Corpus:
    lang: str
    label: str  # what and where from, for the report
    url: str
    sha256: str
    prefix: str  # the sources' folder inside the archive's data
    suffix: str
    skip: str = r"$^"  # a regex of relative paths to leave out (tests, generated code)


CORPORA = (
    Corpus("go", "cobra 1.6.1 (Debian golang-github-spf13-cobra-dev)",
           DEBIAN + "pool/main/g/golang-github-spf13-cobra/golang-github-spf13-cobra-dev_1.6.1-1_all.deb",
           "4f5d20855133319beef3c5b49d3c21a0406f270bf94fb4b6f4d406b691283cb2",
           "./usr/share/gocode/src/github.com/spf13/cobra/", ".go", r"_test\.go$"),
    Corpus("typescript", "rxjs 7.8.1, src/internal (npm)",
           "https://registry.npmjs.org/rxjs/-/rxjs-7.8.1.tgz",
           "c532167725ab7d085123209156c93cef22f2479cb9c8527060f1cd903aa9d149",
           "package/src/internal/", ".ts", r"^(testing|ajax)/|\.d\.ts$"),
    Corpus("rust", "itertools 0.10.3 (Debian librust-itertools-dev)",
           DEBIAN + "pool/main/r/rust-itertools/librust-itertools-dev_0.10.3-1_amd64.deb",
           "3e13fc328508275c2c84270133f41a300ffb58b9b77001b89373ba7f7ab57fde",
           "./usr/share/cargo/registry/itertools-0.10.3/src/", ".rs"),
)


def fetch(corpus: Corpus, cache: Path | None = None) -> bytes:
    """The archive's bytes, from the cache or the registry (Unreachable when offline)."""
    dest = data_cache(cache) / "downloads" / corpus.url.rsplit("/", 1)[1]
    if dest.exists():
        data = dest.read_bytes()
    else:
        try:
            with urllib.request.urlopen(corpus.url, timeout=120) as resp:  # noqa: S310 - pinned https URL
                data = resp.read()
        except urllib.error.HTTPError:
            raise  # the registry answered: a moved file is a failure to fix, not a skip
        except (urllib.error.URLError, OSError) as exc:
            raise Unreachable(f"cannot reach {corpus.url.split('/')[2]}: {exc}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != corpus.sha256:
        raise ValueError(f"{corpus.url}: sha256 {digest}, expected {corpus.sha256}")
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    return data


def _deb_data(deb: bytes) -> tarfile.TarFile:
    """The data.tar.xz member of a Debian package (an `ar` archive)."""
    if not deb.startswith(b"!<arch>\n"):
        raise ValueError("not a Debian package")
    pos = 8
    while pos + 60 <= len(deb):
        name, size = deb[pos : pos + 16].decode().strip().rstrip("/"), int(deb[pos + 48 : pos + 58])
        body = deb[pos + 60 : pos + 60 + size]
        if name == "data.tar.xz":
            return tarfile.open(fileobj=io.BytesIO(lzma.decompress(body)))
        pos += 60 + size + (size & 1)
    raise ValueError("the Debian package has no data.tar.xz")


def sources(corpus: Corpus, data: bytes) -> dict[str, str]:
    """Relative path -> text of the corpus's source files."""
    out: dict[str, str] = {}
    with _deb_data(data) if corpus.url.endswith(".deb") else tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for m in tar.getmembers():
            if not (m.isfile() and m.name.startswith(corpus.prefix) and m.name.endswith(corpus.suffix)):
                continue
            rel = m.name[len(corpus.prefix):]
            if re.search(corpus.skip, rel):
                continue
            fh = tar.extractfile(m)
            if fh is not None:
                out[rel] = fh.read().decode("utf-8", errors="replace")
    return out


# --------------------------------------------------------------------------- comments and queries

_DECL = {
    "go": re.compile(r"^(func|type)\b"),
    "rust": re.compile(r"^\s*(pub(\([^)]*\))?\s+)?((const|unsafe|async|default)\s+)*(extern\s+\"\w+\"\s+)?"
                       r"(fn|struct|enum|trait|type|union|impl|macro_rules!)"),
    "typescript": re.compile(r"^\s*(export\s+)?(default\s+)?(declare\s+)?(abstract\s+)?(async\s+)?"
                             r"(function\b|class\b|interface\b|enum\b|type\s+\w+\s*[=<]|const\s+\w+\s*=)"
                             r"|^\s+((public|private|protected|static|readonly|async|get|set|abstract)\s+)*"
                             r"[A-Za-z_$][\w$]*\s*[<(]"),
}
_ATTRIBUTE = re.compile(r"^\s*(#\[|@[A-Za-z])")  # Rust attributes, TS decorators: between doc and item
_LINK = re.compile(r"\{@link(?:code|plain)?\s+([^}|\s]+)[^}]*\}")  # {@link Observer} -> Observer
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def first_sentence(doc: list[str], decl: str) -> str:
    """The first sentence of a doc comment's first paragraph, without a leading repeat of the
    declared name (Go's convention, `Execute uses the args...`: the name would give it away)."""
    para: list[str] = []
    for line in doc:
        if line.lstrip().startswith("@"):
            break  # JSDoc tags follow the description
        if not line.strip() or line.lstrip().startswith(("```", "#")):
            if para:
                break
            continue
        para.append(line.strip())
    text = _LINK.sub(r"\1", " ".join(para))
    m = _SENTENCE_END.search(text)
    text = text[: m.start()] if m else text
    words = text.split()
    if words and words[0] in re.findall(r"[A-Za-z_]\w*", decl):
        words = words[1:]
    return " ".join(words)


def strip_comments(text: str, lang: str) -> tuple[str, list[tuple[int, str]]]:
    """The code without whole-line comments, and (line of the declaration in the stripped code,
    query) for each doc comment directly above a declaration."""
    out: list[str] = []
    found: list[tuple[int, str]] = []
    doc: list[str] | None = None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        s = line.strip()
        i += 1
        if lang == "typescript" and s.startswith("/*"):
            block = [s[3:] if s.startswith("/**") else s[2:]]
            closed = "*/" in s[2:]
            while not closed and i < len(lines):
                closed = "*/" in lines[i]
                block.append(lines[i].strip().removeprefix("*") if not lines[i].strip().startswith("*/")
                             else lines[i].strip())
                i += 1
            head, _, rest = block[-1].partition("*/")
            block[-1] = head
            if s.startswith("/**"):
                doc = [b.strip() for b in block]
            if rest.strip():
                lines.insert(i, rest)
            continue
        if s.startswith("//"):
            if lang == "rust" and s.startswith("///") and not s.startswith("////"):
                doc = (doc or []) + [s[3:]]
            elif lang == "go":
                doc = (doc or []) + [s[2:]]
            continue
        if not s:
            doc = None
        elif _ATTRIBUTE.match(line):
            pass  # keeps the doc for the item below
        elif doc is not None:
            if _DECL[lang].match(line):
                query = first_sentence(doc, line)
                if MIN_WORDS <= len(query.split()) <= MAX_WORDS:
                    found.append((len(out) + 1, query))
            doc = None
        out.append(line)
    return "\n".join(out), found


def build(corpus: Corpus, root: Path, cache: Path | None = None) -> list[tuple[str, int, str]]:
    """Write the stripped sources under root; (path, declaration line, query) triples, queries
    that document two places left out (ambiguous)."""
    triples: list[tuple[str, int, str]] = []
    for rel, text in sorted(sources(corpus, fetch(corpus, cache)).items()):
        stripped, found = strip_comments(text, corpus.lang)
        out = root / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(stripped)
        triples.extend((rel, line, q) for line, q in found)
    return unambiguous(triples)




# --------------------------------------------------------------------------- the eval


def cases_for(service: CodeRag, triples: list[tuple[str, int, str]], limit: int = MAX_QUERIES) -> list[Case]:
    """A case for each query whose declaration line starts a unit of the index."""
    cases = []
    for path, line, query in triples:
        units = [u for u in read.units_at(service.db, path, line) if u.kind != "file"]
        if not units or not line - MAX_ATTRIBUTE_LINES <= units[0].start_line <= line:
            continue  # a field, a variable, an overload the parser does not make a unit
        cases.append(Case(f"{path}:{line}", query, (path,), (Hunk(path, max(line - 3, 1), 7),)))
    step = max(len(cases) / limit, 1.0)  # evenly spread over the package
    return [cases[int(i * step)] for i in range(min(len(cases), limit))]


def run_eval(corpus: Corpus, tmp: Path, settings: Settings | None = None, modes: tuple[str, ...] = MODES,
             limit: int = MAX_QUERIES) -> tuple[dict[str, dict[str, float]], str, int]:
    """Index and embed the corpus under tmp, search every query: (scores by mode and metric, the
    printed table, the number of queries)."""
    repo = tmp / corpus.lang
    triples = build(corpus, repo)
    service = CodeRag(repo, settings or Settings(), tmp / f"{corpus.lang}.db")
    try:
        service.index()
        service.embed()
        cases = cases_for(service, triples, limit)
        searcher = service.searcher()
        results = [evaluate_case(searcher, c, modes) for c in cases]
        baseline = wholefile_bm25.scores(service, cases)
    finally:
        service.close()
    scores = {mode: {f"{level}@{k}": round(accuracy(results, level, mode, k), 1)
                     for level in ("file", "func") for k in KS} for mode in modes}
    scores[wholefile_bm25.MODE] = baseline
    return scores, table(results, modes) + "\n" + wholefile_bm25.line(baseline), len(cases)
