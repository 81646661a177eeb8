"""Parse workers: read, classify, hash and parse files in worker processes, each with a time
and memory limit, so that a file that crashes or hangs its parser costs that file only (it is
then indexed as plain text, with the reason)."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from coderag_tui.config import ChunkSettings, IndexSettings, Settings
from coderag_tui.parsing.extract import content_hash, parse_source
from coderag_tui.parsing.guard import ParseLimit, timed_parses
from coderag_tui.parsing.languages import detect_language
from coderag_tui.sources.discovery import Candidate, classify, read_regular
from coderag_tui.sources.names import fs_path
from coderag_tui.store.write import FileRows, file_rows

PARALLEL_MIN_FILES = 300  # fewer files are parsed in the indexing process itself
BATCH_JOBS = 32  # files per task sent to a parse worker
# a parse worker's address space: a file past max_file_bytes is never read, so only a parser
# gone wrong comes near it; it then costs that worker (its files are redone apart), not the machine
_WORKER_MEMORY = 4 << 30
FILE_SECONDS = 30.0  # one file's read, parse and extraction in a worker (a 1 MB file takes ~1 s)


@dataclass(frozen=True)
class Job:
    path: str
    abs_path: str
    size: int
    mtime_ns: int
    old_hash: str


@dataclass(frozen=True)
class Outcome:
    job: Job
    kind: str  # parsed, unchanged, skip, error
    rows: FileRows | None = None  # plain tuples: cheap to pickle back from a worker
    hash: str = ""
    reason: str = ""


def process_file(job: Job, index: IndexSettings, chunk: ChunkSettings, *, plain: str = "") -> Outcome:
    """Read, classify, hash and parse one file (runs in worker processes). Whatever the file
    holds, the answer is an outcome: a failure is this file's error, never the run's. A file
    past a safe limit of its parser is indexed as plain text, with the reason (`plain`: do
    that from the start, with this reason)."""
    try:
        data = read_regular(job.abs_path, index.max_file_bytes)
    except OSError as exc:
        return Outcome(job, "error", reason=f"cannot read: {exc.strerror or exc}")
    reason = classify(data, index, job.path)
    if reason:
        return Outcome(job, "skip", reason=reason)
    digest = content_hash(data)
    if digest == job.old_hash and not plain:
        return Outcome(job, "unchanged", hash=digest)
    spec = detect_language(job.path, data[:256])
    why = plain
    if not why:
        try:
            rows = file_rows(parse_source(job.path, data, spec, chunk))
            return Outcome(job, "parsed", rows=rows, hash=digest)
        except ParseLimit as exc:
            why = str(exc)
        except RecursionError:
            why = "nesting too deep for the extractor"
        except Exception as exc:  # a grammar bug must not stop the index
            return Outcome(job, "error", hash=digest, reason=f"parse failed: {type(exc).__name__}: {exc}")
    try:
        rows = file_rows(parse_source(job.path, data, spec, chunk, plain=True))
    except Exception as exc:  # as above
        return Outcome(job, "error", hash=digest, reason=f"{why}; as plain text: {type(exc).__name__}: {exc}")
    return Outcome(job, "parsed", rows=rows, hash=digest, reason=f"{why}: indexed as plain text")


def process_batch(jobs: list[Job], index: IndexSettings, chunk: ChunkSettings) -> list[Outcome]:
    alarm = _ALARM[0]
    out = []
    with gc_paused():
        for j in jobs:
            if alarm:
                # SIGALRM's default action ends the worker, even inside a parser's C loop (a
                # Python-level watchdog would need the GIL): its batch is then redone apart
                signal.setitimer(signal.ITIMER_REAL, FILE_SECONDS)
            out.append(process_file(j, index, chunk))
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
    return out


_ALARM = [False]  # set in parse workers, where the alarm's default action may end the process


def worker_init() -> None:
    # a worker lives for one build and makes no reference cycles (see gc_paused): with the
    # collector off for good it also skips the passes over each batch's rows that follow
    # every `gc_paused` (callgrind, every 10th Django file: 0.6% of a worker's instructions)
    gc.disable()
    limit_memory(_WORKER_MEMORY)
    if hasattr(signal, "setitimer"):
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        _ALARM[0] = True
        timed_parses(False)  # the alarm bounds each file: no per-parse clock needed


def limit_memory(extra: int) -> None:
    """Cap this process's address space at what it maps now plus `extra` bytes (Linux; a forked
    worker inherits its parent's mappings, so a fixed cap could be below what it already has)."""
    try:
        import resource

        with open("/proc/self/statm") as fh:
            mapped = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = mapped + extra
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        if soft == resource.RLIM_INFINITY or soft > cap:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, OSError, ValueError):
        pass  # not Linux: no cap


def parse_isolated(jobs: list[Job], index: IndexSettings, chunk: ChunkSettings) -> list[Outcome]:
    """Parse `jobs` one at a time in a one-worker process, after a file ended a pool worker: a
    file that crashes it (a segfault, the memory limit) or outlasts FILE_SECONDS is found,
    indexed as plain text with the reason (line chunks need no parser: safe here), and a fresh
    worker takes the next file. Only a broken pool gets here: the happy path never pays for it."""
    out: list[Outcome] = []
    pool: ProcessPoolExecutor | None = None
    try:
        for job in jobs:
            if pool is None:
                pool = ProcessPoolExecutor(max_workers=1, initializer=worker_init)
            try:
                out.extend(pool.submit(process_batch, [job], index, chunk).result(timeout=FILE_SECONDS + 5))
                continue
            except BrokenProcessPool:
                why = "the parser crashed its process (or passed the time or memory limit)"
            except TimeoutError:
                why = f"parsing took longer than {FILE_SECONDS:g} s"
                for proc in list(getattr(pool, "_processes", {}).values()):  # no public way to stop it
                    proc.kill()
            pool.shutdown(wait=True, cancel_futures=True)
            pool = None
            out.append(process_file(job, index, chunk, plain=why))
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return out


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cycle collector. Indexing makes millions of short-lived tuples and no reference
    cycles, so the collector's passes find nothing: they cost ~1% of a parse worker's
    instructions and ~4% of the writer's (callgrind, a Django subset)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Feed:
    """Job batches for the parse workers, sent as soon as they fill: during the walk of an empty
    index the workers parse the first files on the other core while the walk finds the rest."""

    def __init__(self, settings: Settings, root: str, workers: int) -> None:
        self.settings = settings
        self.root = root
        self.workers = workers
        self.jobs: list[Job] = []
        self.futures: list[Future[list[Outcome]] | None] = []
        self.batches: list[list[Job] | None] = []  # the jobs of each future
        self._pool: ProcessPoolExecutor | None = None
        self._sent = 0  # jobs[:_sent] are in futures

    def add(self, cand: Candidate) -> None:
        """A file the walk found (an empty index: every file is a job)."""
        self.jobs.append(Job(cand.path, os.path.join(self.root, fs_path(cand.path)), cand.size, cand.mtime_ns, ""))
        if len(self.jobs) >= PARALLEL_MIN_FILES and len(self.jobs) - self._sent >= BATCH_JOBS:
            self.send(everything=False)

    def send(self, *, everything: bool) -> None:
        """Submit the full batches of jobs not yet sent (and, with `everything`, the last one)."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers, initializer=worker_init)
        s = self.settings
        while len(self.jobs) - self._sent >= (1 if everything else BATCH_JOBS):
            batch = self.jobs[self._sent : self._sent + BATCH_JOBS]
            try:
                future = self._pool.submit(process_batch, batch, s.index, s.chunk)
            except BrokenProcessPool:  # a file crashed a worker: this batch is redone apart too
                future = Future()
                future.set_exception(BrokenProcessPool("a parse worker died"))
            self.futures.append(future)
            self.batches.append(batch)
            self._sent += len(batch)

    def close(self) -> None:
        """Stop the workers (idempotent); work not started is dropped."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def worker_count(settings: Settings) -> int:
    """Parse processes for a run: `[index] workers`, never more than the cores (more only
    compete for them, and a shared server's cores are its clients'), 0 meaning all of them."""
    cores = usable_cores()
    return min(settings.index.workers, cores) if settings.index.workers > 0 else cores


def parse_outcomes(jobs: list[Job], settings: Settings, root: str,
                   idle: Callable[[bool], None] = lambda last: None, feed: Feed | None = None) -> Iterator[Outcome]:
    """The outcomes of `jobs`, in order: parsed in this process when they are few (or one core
    is all there is), else by a pool of parse workers (`feed`'s, when the walk already started
    one). `idle(last)` is called while the next batch is still being parsed (`last`: one of the
    final batches), so the writer can write what came back meanwhile."""
    s = settings
    workers = worker_count(s)
    if len(jobs) < PARALLEL_MIN_FILES or workers <= 1:
        for job in jobs:
            yield process_file(job, s.index, s.chunk)
        return
    if feed is None:
        feed = Feed(s, root, workers)
        feed.jobs = jobs
    try:
        feed.send(everything=True)
        futures = feed.futures
        for i, future in enumerate(futures):  # in order, like pool.map
            if future is None:
                continue
            if not future.done():
                idle(len(futures) - i <= feed.workers)
            futures[i] = None  # a future keeps its rows: let them go once written
            batch, feed.batches[i] = feed.batches[i], None
            try:
                outcomes = future.result()
            except BrokenProcessPool:
                # a file crashed a worker: every batch not yet back is redone apart
                assert batch is not None
                outcomes = parse_isolated(batch, s.index, s.chunk)
            yield from outcomes
    finally:
        feed.close()
