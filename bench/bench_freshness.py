"""Freshness: from saving a file to the change being searchable, with the watcher running.

Copies a repository of >= 2,000 files (default: Django 5.1's sdist from PyPI) into a temp folder,
indexes it once, gives it vectors (see below), starts the watcher, then edits N different
files one after the other: each edit appends a function with a unique name and a distinctive
body (words drawn at random per edit) and saves. For each edit it measures, from the save:

  symbols   until `service.symbols(name)` finds the new function
  keywords  until a keyword search finds it (`service.search` when present, else FTS5)
  vec-db    until the index holds a vector for the new function's chunk (the watcher embedded it)
  vectors   until a vector-only search (`service.searcher().search(source, mode="vector")`)
            whose query is the new function's source text finds it in the top --vector-k
  indexed   until the watcher reports the batch done (vectors refreshed too, when embedding)
  work      the watcher's own time for the batch (indexing + embedding, without the debounce)
  embed     the part of `work` spent in `service.embed` (finding, embedding, writing vectors)

(`vec-lag` is vectors minus vec-db: how long search lags behind the index), and prints the
median, p95 and max of each; a probe that does not succeed within --timeout
counts as a miss (reported, and the exit status is 1). Target: save -> searchable < 1 s.
After each measured edit the file is restored (an unmeasured save the watcher indexes too), so
the next edit's function competes with no earlier one (--accumulate leaves them in place).
Edited files are source files (not tests, which search ranks lower unless the query is about
tests) of 3 KB or more, so the appended function is a chunk of its own.

Vectors before the edits: `--embed on` embeds every chunk for real (Django: ~48k chunks,
about half an hour on 2 cores). `--prefill-vectors N` instead embeds N random chunks for real
and gives every other chunk hash a noisy, normalised copy of one of them (as
bench_retrieval.py's fill_vectors does), so the index starts with a vector for every chunk in
a minute; the chunks the edits change are still embedded for real, by the watcher. The
vector-search cost depends on the number of vectors, not their values; the ranking against
noisy copies is easier than against real neighbours, which is why the query is the new
function's own text (it should come first; the probe accepts the top --vector-k).

    python -m bench.bench_freshness [--source DIR] [--edits 50] [--save-debounce-ms 150]
        [--embed on] [--prefill-vectors 512]
"""

from __future__ import annotations

import argparse
import functools
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import machine_line, percentile, require_sdist
from coderag_tui.config import EmbedSettings, WatchSettings, load_settings
from coderag_tui.models import WatchEvent
from coderag_tui.parsing.kinds import is_test_path
from coderag_tui.service import CodeRag

POLL_S = 0.005
_WORDS = (
    "abacus acorn albatross almanac amber anchor anvil apricot archive armada astrolabe aurora "
    "avalanche badger bagpipe balsam banjo barnacle basalt bassoon beacon beetle bellows birch "
    "bison blizzard bobbin bonfire bramble brass brigantine buckwheat bugle bulrush cactus "
    "caldera camphor canoe canyon caramel caravan cardamom carousel cassowary catapult cedar "
    "chalk chameleon chandelier chestnut chimney cinnamon citadel clarinet clover cobalt "
    "coconut comet compass coral cormorant crater crocus crossbow cypress daffodil dandelion "
    "delta dervish dolphin dragonfly driftwood dromedary dune eclipse eiderdown elderberry "
    "ember emerald falcon fathom fennel fern fiddle fjord flamingo flint fossil foxglove "
    "gadfly galleon garnet gazelle geyser ginger glacier gondola gooseberry granite gryphon "
    "hammock harpoon harvest hazelnut hedgehog heron hickory honeycomb horizon hurricane "
    "iceberg iguana indigo inkwell iris ivory jackal jasmine javelin jellyfish juniper kayak "
    "kelp kestrel kettle kiln kiwi labyrinth lagoon lantern larch lavender lemur lichen "
    "lighthouse lilac limestone lobster locomotive lotus lynx magnolia mahogany mandolin "
    "mango marmalade marsh meadow meteor mistletoe monsoon moraine mosaic mulberry mussel "
    "narwhal nebula nectar nettle nightingale nutmeg oasis obsidian ocelot octopus orchard "
    "origami osprey otter oyster paddock pagoda panther papyrus parchment parsnip pelican "
    "peppermint periscope pewter pheasant pinecone plankton plover porcupine prairie "
    "quartz quicksand quill quince raccoon radish rainbow raven reef rhubarb saffron "
    "sandalwood sapphire sardine scarecrow seashell sextant sherbet shipwreck sleet "
    "snowdrop sorrel sparrow spindle squid starfish sundial swallow sycamore tadpole "
    "tamarind tangerine tapestry telescope thicket thistle thunder tortoise toucan "
    "trombone tulip tundra turquoise typhoon umbrella urchin valley vanilla velvet "
    "vineyard violin volcano walnut walrus waterfall weasel whirlpool willow windmill "
    "wisteria wombat yarrow zephyr zeppelin"
)
WORDS = _WORDS.split()  # drawn at random: each appended function reads unlike the others


def line(label: str, values: list[float], missed: int = 0) -> str:
    if not values and not missed:
        return f"  {label:<9} (not measured)"
    if not values:
        return f"  {label:<9} every probe missed ({missed})"
    tail = f", {missed} MISSED" if missed else ""
    return (f"  {label:<9} median {statistics.median(values) * 1000:7.0f} ms   p95 {percentile(values, 0.95) * 1000:7.0f} ms"
            f"   max {max(values) * 1000:7.0f} ms   (n={len(values)}{tail})")


def new_function(name: str, rng: random.Random) -> str:
    """A function of 650-1,100 non-blank characters made of words drawn for this edit only, with
    no sentence shared between edits (the functions of earlier edits stay in the index and must
    not look alike). Over 600 characters, the chunker (which packs top-level nodes up to 600)
    gives it a chunk of its own in a file of more than 1,200."""
    def words(n: int) -> str:
        return " ".join(rng.sample(WORDS, n))

    var = "_".join(rng.sample(WORDS, 2))
    lines = [f"def {name}(value):", f'    """{words(12).capitalize()}.', "", f"    {words(10)}.", '    """',
             f"    {var} = {{'{rng.choice(WORDS)}': value}}"]
    for _ in range(3):
        lines.append(f"    {var}['{rng.choice(WORDS)}'] = '{words(4)}'")
    body = "\n".join(lines) + "\n"
    while sum(not c.isspace() for c in body) < 650:
        body += f"    # {words(6)}\n"
    return body + f"    return {var}\n"


def prefill_vectors(service: CodeRag, n: int, noise: float) -> None:
    """Real vectors for n random chunk hashes; every other hash a noisy normalised copy of one."""
    from coderag_tui.store.embeddings import chunk_texts, pending_chunks

    db = service.db
    t = time.perf_counter()
    model = service._retrieval().model(service.settings.embed)  # the service's own (warm) model
    print(f"model     {model.id} loaded in {time.perf_counter() - t:.1f}s")
    db.ensure_model_table(model.id, model.dim)
    pending, _ = pending_chunks(db)
    if not pending:
        print("PREFILLED nothing to do: every chunk of this (kept) index already has a vector")
        return
    sample = random.Random(5).sample(pending, min(n, len(pending)))
    texts = chunk_texts(db, [cid for cid, _ in sample])
    sample = sorted((p for p in sample if p[0] in texts), key=lambda p: len(texts[p[0]]))
    t = time.perf_counter()
    base = model.embed([texts[cid] for cid, _ in sample])
    real_s = time.perf_counter() - t
    db.write_vectors([h for _, h in sample], base, model.id)
    taken = {h for _, h in sample}
    rest = [h for _, h in pending if h not in taken]
    rng = np.random.default_rng(11)
    t = time.perf_counter()
    for i in range(0, len(rest), 5000):
        part = rest[i : i + 5000]
        vecs = base[rng.integers(0, len(base), len(part))] + rng.normal(0, noise, (len(part), model.dim))
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        db.write_vectors(part, vecs.astype(np.float32), model.id)
    print(f"PREFILLED {len(sample)} chunk hashes embedded for real in {real_s:.1f}s "
          f"({len(sample) / max(real_s, 1e-6):.1f}/s); {len(rest)} others given noisy copies of those "
          f"(noise sd {noise}, normalised) in {time.perf_counter() - t:.1f}s. NOT real embeddings of "
          f"the repository: the edits themselves are embedded for real by the watcher.")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", help="repository to copy (>= 2,000 files; default: Django 5.1's sdist)")
    ap.add_argument("--edits", type=int, default=50)
    ap.add_argument("--debounce-ms", type=int, default=None,
                    help="the watcher's debounce for bursts (default: the settings' [watch] debounce_ms)")
    ap.add_argument("--save-debounce-ms", type=int, default=None,
                    help="its quiet period for a save of a few files (default: [watch] save_debounce_ms)")
    ap.add_argument("--embed", choices=("auto", "on", "off"), default="auto",
                    help="refresh vectors too (auto: when the service has embed()); without "
                         "--prefill-vectors, 'on' embeds every chunk for real before the edits")
    ap.add_argument("--prefill-vectors", type=int, default=0, metavar="N",
                    help="embed N random chunks for real and give every other chunk a noisy copy of "
                         "one, instead of embedding everything (implies --embed on)")
    ap.add_argument("--noise", type=float, default=0.05, help="sd of the noise of the prefilled copies")
    ap.add_argument("--vector-k", type=int, default=10, help="the vector probe wants the function in this top k")
    ap.add_argument("--watcher-embed", choices=("on", "off"), default="on",
                    help="off: the watcher does not embed (a control: the vector probe must then miss)")
    ap.add_argument("--workdir", default=None, help="where to copy the repository (default: a temp dir)")
    ap.add_argument("--accumulate", action="store_true",
                    help="leave each appended function in place (default: restore the file after "
                         "measuring, unmeasured, so the functions of earlier edits do not compete "
                         "with the next one in the vector probe)")
    ap.add_argument("--settle-search", action="store_true",
                    help="after restoring a file, run one search before the next edit, so that the "
                         "in-memory vector copy reloads (the restore removed a vector) outside the "
                         "measured window; without it the next edit's first search pays for that")
    ap.add_argument("--keep", action="store_true", help="keep the copy and its index")
    ap.add_argument("--timeout", type=float, default=60.0, help="give up on one edit after this long")
    args = ap.parse_args()

    source = Path(args.source) if args.source else require_sdist("django", "5.1")
    if not source.is_dir():
        print(f"no such repository: {source}", file=sys.stderr)
        return 2
    if args.prefill_vectors and args.embed == "off":
        print("--prefill-vectors needs vectors: drop --embed off", file=sys.stderr)
        return 2
    work = Path(args.workdir or tempfile.mkdtemp(prefix="coderag-fresh-"))
    repo = work / "repo"
    print(machine_line())
    t = time.perf_counter()
    if not repo.exists():
        shutil.copytree(source, repo, symlinks=True)
    files = [p for p in repo.rglob("*") if p.is_file()]
    print(f"copied    {source} -> {repo}: {len(files)} files in {time.perf_counter() - t:.1f}s")

    base = load_settings(None)
    debounce = args.debounce_ms if args.debounce_ms is not None else base.watch.debounce_ms
    save_ms = args.save_debounce_ms if args.save_debounce_ms is not None else base.watch.save_debounce_ms
    quiet = f"{min(save_ms, debounce)} ms for a save, {debounce} ms for a burst"
    has_embed = hasattr(CodeRag, "embed")
    use_embed = args.embed == "on" or bool(args.prefill_vectors) or (args.embed == "auto" and has_embed)
    settings = replace(base, watch=WatchSettings(enabled=True, debounce_ms=debounce, save_debounce_ms=save_ms),
                       embed=replace(base.embed, enabled=use_embed) if use_embed else EmbedSettings(enabled=False))
    service = CodeRag(repo, settings, work / "index.db")

    t = time.perf_counter()
    summary = service.index()
    print(f"indexed   {summary.files_indexed} files, {summary.units} units, {summary.chunks} chunks, "
          f"{summary.edges} edges in {time.perf_counter() - t:.1f}s")
    if use_embed and not has_embed:
        print("embed     the service has no embed(): vectors not measured", file=sys.stderr)
        use_embed = False
    if use_embed:
        if args.prefill_vectors:
            prefill_vectors(service, args.prefill_vectors, args.noise)
        t = time.perf_counter()
        done_now = service.embed(progress=None)
        print(f"embedded  {done_now.embedded} chunks for real now ({done_now.reused} already had a vector); "
              f"{service.status().vectors} vectors in {time.perf_counter() - t:.1f}s")
        t = time.perf_counter()
        warm = service.searcher().search("warm up the model and the in-memory vectors", 10, mode="vector")
        print(f"warmed    vector search ({len(warm.hits)} hits; query model + in-memory copy of the vectors) "
              f"in {time.perf_counter() - t:.2f}s")
    watch_embed = args.watcher_embed == "on"
    print(f"watching  debounce {quiet}; vectors {'on' if use_embed else 'off'}"
          f"{'' if watch_embed or not use_embed else ' (CONTROL: the watcher does not embed)'}; keywords via "
          "service.search")

    done: dict[str, float] = {}
    batches_of: dict[str, int] = {}  # how many finished batches included the path
    work_s: dict[str, float] = {}
    embed_s: dict[str, float] = {}
    current: list[tuple[str, ...]] = [()]
    cond = threading.Condition()
    errors: list[str] = []

    def on_event(event: WatchEvent) -> None:
        now = time.perf_counter()
        with cond:
            if event.phase == "indexing":
                current[0] = event.paths
            elif event.phase == "indexed":
                for p in event.paths:
                    done.setdefault(p, now)
                    batches_of[p] = batches_of.get(p, 0) + 1
                    work_s.setdefault(p, event.seconds)
            elif event.phase == "error":
                errors.append(event.message)
            cond.notify_all()

    real_embed = service.embed

    @functools.wraps(real_embed)
    def timed_embed(*a: Any, **kw: Any) -> Any:  # the watcher's call, timed per batch
        t0 = time.perf_counter()
        try:
            return real_embed(*a, **kw)
        finally:
            with cond:
                for p in current[0]:
                    embed_s[p] = embed_s.get(p, 0.0) + time.perf_counter() - t0

    service.embed = timed_embed  # type: ignore[method-assign]
    watcher = service.watch(on_event, embed=watch_embed)
    time.sleep(0.5)

    db = service.db
    # source files (not tests: search ranks test code lower unless the query is about tests) big
    # enough that the appended function is a chunk of its own
    candidates = sorted(rel for p in repo.rglob("*.py")
                        if 3_000 <= p.stat().st_size < 200_000 and "/locale/" not in p.as_posix()
                        and not is_test_path(rel := p.relative_to(repo).as_posix()))
    picks = random.Random(1234).sample(candidates, min(args.edits, len(candidates)))
    token = f"{int(time.time()) % 100000:05d}"
    words = random.Random(f"words-{token}")  # a kept copy edited again gets new texts

    probes = ("symbols", "keywords", "vec-db", "vectors") if use_embed else ("symbols", "keywords")
    took: dict[str, list[float]] = {p: [] for p in (*probes, "indexed", "work", "embed")}
    missed: dict[str, int] = dict.fromkeys(took, 0)
    ranks: list[int] = []
    lag: list[float] = []  # per edit: vectors - vec-db
    settle_s: list[float] = []  # --settle-search: the search after a restore
    for i, rel in enumerate(picks):
        name = f"zz_fresh_{token}_{i}"
        path = repo / rel
        original = path.read_bytes()
        text = original.decode("utf-8", "replace").rstrip("\n")
        func = new_function(name, words)
        first = text.count("\n") + 4  # the def line (1-based): text, two blank lines, the def
        last = first + func.count("\n") - 1
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text + "\n\n\n" + func)
        saved = time.perf_counter()

        got: dict[str, float] = {}
        rank = -1
        deadline = saved + args.timeout
        while time.perf_counter() < deadline and len(got) < len(probes):
            if ("symbols" not in got and db.one("SELECT 1 FROM units WHERE name=? COLLATE NOCASE", (name,))
                    and any(u.name == name for u in service.symbols(name, 5))):
                got["symbols"] = time.perf_counter()
            if "keywords" not in got and db.one("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT 1",
                                                (f'"{name}"',)) and any(h.unit.path == rel
                                                                         for h in service.search(name)):
                got["keywords"] = time.perf_counter()
            if use_embed and "vec-db" not in got and db.one(
                    "SELECT 1 FROM chunks c JOIN files f ON f.id = c.file_id JOIN vectors v ON v.hash = c.hash "
                    "WHERE f.path = ? AND c.start_line <= ? AND c.end_line >= ? LIMIT 1", (rel, last, first)):
                got["vec-db"] = time.perf_counter()
            if use_embed and "vec-db" in got and "vectors" not in got:
                found = service.searcher().search(func, args.vector_k, mode="vector").hits
                for r, h in enumerate(found):
                    if h.unit.path == rel and (h.unit.name == name or (
                            h.chunk_start and h.chunk_start <= last and h.chunk_end >= first)):
                        got["vectors"] = time.perf_counter()
                        rank = r + 1
                        break
            time.sleep(POLL_S)
        with cond:
            cond.wait_for(lambda rel=rel: rel in done, timeout=max(0.0, deadline - time.perf_counter()))
            t_done = done.get(rel)
        if t_done is not None:
            got["indexed"] = t_done
        row = []
        for probe in (*probes, "indexed"):
            if probe in got:
                took[probe].append(got[probe] - saved)
                row.append(f"{probe} {took[probe][-1] * 1000:6.0f} ms")
            else:
                missed[probe] += 1
                row.append(f"{probe} MISSED")
        if rel in work_s:
            took["work"].append(work_s[rel])
            row.append(f"(work {work_s[rel] * 1000:5.0f} ms")
            if use_embed and rel in embed_s:
                took["embed"].append(embed_s[rel])
                row[-1] += f", embed {embed_s[rel] * 1000:4.0f} ms"
            row[-1] += ")"
        if "vectors" in got and "vec-db" in got:
            lag.append(got["vectors"] - got["vec-db"])
        if rank > 0:
            ranks.append(rank)
            row.append(f"rank {rank}")
        print(f"  edit {i + 1:>2}/{len(picks)} {rel:<60} " + "  ".join(row), flush=True)
        if len(got) < len(probes) + 1:
            print(f"  edit {i + 1}: {rel}: {', '.join(p for p in (*probes, 'indexed') if p not in got)} "
                  f"not seen within {args.timeout:.0f}s", file=sys.stderr)
        watcher.wait_idle(args.timeout)
        if not args.accumulate:  # restore the file (not measured) and wait until that is indexed
            with cond:
                before = batches_of.get(rel, 0)
            path.write_bytes(original)
            with cond:
                cond.wait_for(lambda rel=rel, before=before: batches_of.get(rel, 0) > before, timeout=args.timeout)
            watcher.wait_idle(args.timeout)
            if args.settle_search and use_embed:
                t0 = time.perf_counter()
                service.search("settle the in-memory vector copy")
                settle_s.append(time.perf_counter() - t0)

    watcher.stop()
    misses = sum(missed[p] for p in (*probes, "indexed"))
    print()
    how = ("off" if not use_embed else
           f"on, {args.prefill_vectors} real + noisy copies prefilled" if args.prefill_vectors else "on, all real")
    print(f"freshness over {len(picks)} edits in a repository of {len(files)} files "
          f"(debounce {quiet}, vectors {how}{'' if watch_embed else ', watcher NOT embedding'}, "
          f"{'edits accumulated' if args.accumulate else 'each file restored after its edit'}"
          f"{', a settling search after each restore' if args.settle_search else ''}):")
    for probe in (*probes, "indexed", "work", "embed"):
        if probe == "embed" and not use_embed:
            continue
        print(line(probe, took[probe], missed[probe]))
    if lag:
        print(line("vec-lag", lag) + "  <- vectors minus vec-db: the vector is in the index, "
              "search does not see it yet (its own time + the in-memory copy's staleness)")
    if settle_s:
        print(line("settle", settle_s) + "  <- not in the figures: one hybrid search after each restore "
              "(reloads the in-memory vectors)")
    if ranks:
        print(f"  vector rank of the new function: {sum(r == 1 for r in ranks)}/{len(ranks)} first, "
              f"worst {max(ranks)} (top {args.vector_k} wanted)")
    searchable = [p for p in probes if p != "vec-db"]
    if all(took[p] for p in searchable):
        verdict = []
        for p in searchable:
            ok = not missed[p] and percentile(took[p], 0.95) < 1.0
            verdict.append(f"{p} {'met' if ok else 'NOT met'}")
        print(f"  target    save -> searchable < 1 s at p95: {', '.join(verdict)}")
    if misses or errors:
        print(f"  {misses} probes missed; watcher errors: {errors[:3]}")
    print(machine_line())
    service.close()
    if not args.keep and args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if not misses and not errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
