"""Benchmark: the app's own latencies on Flask 3.0.3, as a user at a real terminal sees them.

The real `coderag` app runs on a pseudo-terminal (100x30) over an index of the Flask sdist;
keys are written to it and the clock stops when the terminal receives the text that shows the
result (escape sequences stripped):

- first frame: from starting the process to the welcome line of the chat;
- open a source: ctrl+t, a symbol, Enter: from Enter to the viewer's title naming the file
  (four different files, each opened for the first time);
- switch panes: F4 (into the viewer), F3 (back to the question), twice: from the key to the
  footer of the pane that took the focus;
- open a file in process: the app run headless (Pilot) in the bench's own process, each of six
  Flask files opened through the viewer's own path: to the frame that shows its lines, and the
  process's CPU seconds until it is coloured (less noisy than the terminal's figures on a busy
  machine);
- quit (ctrl+q to the process's end): idle; while the index is being embedded; while the
  bundled model reads a question's prompt. After each, what the terminal received after the
  app left the alternate screen must be empty (no llama.cpp log line).

    .venv/bin/python -m bench.bench_tui [--repeats 3] [--open-only] [FLASK_SOURCE]

FLASK_SOURCE defaults to the sdist fetched from PyPI (tests/data_sources.py). Figures are
wall-clock seconds on this machine: compare runs made in the same conditions (load).
"""

from __future__ import annotations

import argparse
import os
import re
import select
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COLS, ROWS = 100, 30
ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78cDEHMNOZ]")
LEAVE_ALT = "\x1b[?1049l"
SOURCES = [("Flask.dispatch_request", "src/flask/app.py"), ("Config.from_pyfile", "src/flask/config.py"),
           ("url_for", "src/flask/helpers.py"), ("Blueprint.register", "src/flask/sansio/blueprints.py")]


class App:
    """The real app on a pseudo-terminal."""

    def __init__(self, repo: Path, db: Path, env: dict[str, str]) -> None:
        import fcntl
        import pty
        import termios

        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "coderag_tui", "--db", str(db)], cwd=repo,
                                     stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
                                     start_new_session=True)
        os.close(slave)
        self.raw = ""
        self.exit_cpu = 0.0  # the process's CPU seconds when it ended

    def cpu(self) -> float:
        """CPU seconds the app's process has used so far (all its threads)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:
            return False
        self.raw += data.decode("utf-8", "replace")
        return bool(data)

    def mark(self) -> int:
        return len(self.raw)

    def wait_text(self, text: str, since: int = 0, timeout: float = 120.0) -> float:
        """Seconds (from now) until `text` is on the terminal after position `since`."""
        start = time.perf_counter()
        while text not in ANSI.sub("", self.raw[since:]):
            if time.perf_counter() - start > timeout:
                raise TimeoutError(f"{text!r} not shown in {timeout:.0f} s")
            self.read(0.05)
        return time.perf_counter() - start

    def key(self, data: str) -> int:
        at = self.mark()
        os.write(self.master, data.encode())
        return at

    def quit(self, timeout: float = 60.0) -> tuple[float, str]:
        """ctrl+q: (seconds to the process's end, what came after leaving the alternate screen)."""
        at = self.key("\x11")
        start = time.perf_counter()
        while True:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                self.exit_cpu = usage.ru_utime + usage.ru_stime
                break
            if time.perf_counter() - start > timeout:  # recorded as never (inf), then killed
                self.proc.kill()
                self.proc.wait()
                os.close(self.master)
                return float("inf"), "(killed: it had not quit)"
            self.read(0.01)
        seconds = time.perf_counter() - start
        while self.read(0.05):
            pass
        os.close(self.master)
        tail = self.raw[at:].rsplit(LEAVE_ALT, 1)[-1] if LEAVE_ALT in self.raw[at:] else self.raw[at:]
        return seconds, ANSI.sub("", tail).strip()


LEFT: list[str] = []  # what terminals received after the app had left (should be nothing)


def left_over(tail: str) -> None:
    if tail:
        LEFT.append(tail)


def prepare(source: Path, work: Path) -> tuple[Path, dict[str, str]]:
    repo = work / "flask"
    shutil.copytree(source, repo)
    env = {**os.environ, "XDG_CONFIG_HOME": str(work / "config"), "XDG_CACHE_HOME": str(work / "cache"),
           "XDG_DATA_HOME": str(work / "data"), "HF_HUB_OFFLINE": "1", "TERM": "xterm-256color",
           "COLUMNS": str(COLS), "LINES": str(ROWS), "PYTHONPATH": str(ROOT)}
    env.pop("NO_COLOR", None)
    return repo, env


def index(repo: Path, db: Path, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "coderag_tui", "index", "--no-embed", "--db", str(db)], cwd=repo,
                   env=env, check=True, capture_output=True)


def config(work: Path, embed: bool) -> None:
    """The user's config: no watcher, no background summaries, embedding on or off."""
    folder = work / "config" / "coderag"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(
        f"[embed]\nenabled = {'true' if embed else 'false'}\n[watch]\nenabled = false\n"
        "[summaries]\nbackground = false\n[llm]\ndiscover = false\n")


def session(repo: Path, db: Path, env: dict[str, str], figures: dict[str, list[float]]) -> None:
    """One run of the app: first frame, four sources, pane switches, quit when idle."""
    app = App(repo, db, env)
    figures["first frame"].append(app.wait_text("Ask anything about flask"))
    figures["first frame, CPU s"].append(app.cpu())
    app.wait_text("files ·")  # the status line: the index is open
    for name, path in SOURCES:
        at = app.key("\x14")  # ctrl+t
        app.wait_text("Go to symbol", at, 10)
        at = app.key(name)
        app.wait_text(path, at, 20)  # the palette lists it
        time.sleep(0.3)
        cpu = app.cpu()
        at = app.key("\r")
        figures["open a source"].append(app.wait_text(f"{path} · {name}", at))
        time.sleep(0.5)  # its colours and notes follow
        figures["open a source, CPU s"].append(app.cpu() - cpu)
    # F4 into the viewer (the footer then lists its keys: "Definition"), F3 back to the question
    # (the footer drawn again without them: "New chat"), twice
    for key, drawn in (("\x1bOS", "Definition"), ("\x1bOR", "New chat")) * 2:
        at = app.key(key)
        figures["switch panes"].append(app.wait_text(drawn, at, 10))
        time.sleep(0.3)
    time.sleep(1.0)
    cpu = app.cpu()
    seconds, tail = app.quit()
    figures["quit (idle)"].append(seconds)
    figures["quit (idle), CPU s"].append(app.exit_cpu - cpu)
    left_over(tail)


def quit_embedding(repo: Path, db: Path, env: dict[str, str], figures: dict[str, list[float]]) -> None:
    app = App(repo, db, env)
    app.wait_text("embedding")
    time.sleep(2.0)  # well into a batch
    seconds, tail = app.quit()
    figures["quit (embedding)"].append(seconds)
    left_over(tail)


def quit_reading(repo: Path, db: Path, env: dict[str, str], figures: dict[str, list[float]], run: int) -> None:
    app = App(repo, db, env)
    app.wait_text("files ·")
    at = app.key(f"How does Flask dispatch a request to a view function, take {run}?\r")
    # the model reads the prompt (older builds showed "asking ...: N prompt tokens" instead)
    app.wait_text("tokens", at, timeout=180)
    time.sleep(1.0)
    seconds, tail = app.quit()
    figures["quit (model reading)"].append(seconds)
    left_over(tail)


IN_PROCESS = [("src/flask/app.py", 842), ("src/flask/config.py", 187), ("src/flask/helpers.py", 195),
              ("src/flask/sansio/blueprints.py", 273), ("src/flask/ctx.py", 100), ("src/flask/cli.py", 300)]


def open_in_process(repo: Path, db: Path, figures: dict[str, list[float]], rounds: int) -> None:
    """Opening a file in the app run headless in this process (Pilot, 100x30): from the call
    to the frame that shows its lines, and the process's CPU seconds until it is coloured."""
    import asyncio

    from coderag_tui.config import load_settings
    from coderag_tui.service import CodeRag
    from coderag_tui.tui.app import create_app
    from coderag_tui.tui.history import Location

    service = CodeRag(repo, load_settings(repo, None), db)

    def coloured(doc: object) -> bool:
        return bool(getattr(doc, "highlighted", True))  # (older builds showed it coloured at once)

    async def run() -> None:
        app = create_app(service, auto_index=False, watch=False, embed=False, local_clipboard=False)
        async with app.run_test(size=(COLS, ROWS)) as pilot:
            for _ in range(4):
                await pilot.pause()
                await app.workers.wait_for_complete()
            screen: object = app.screen_stack[1]
            code = screen.code  # type: ignore[attr-defined]
            for n in range(rounds + 1):
                for path, line in IN_PROCESS:
                    screen.open_location(Location.file("README.md", 1, 1, 1))  # type: ignore[attr-defined]
                    while code.document is None or code.document.path != "README.md" or not coloured(code.document):
                        await pilot.pause(0)
                    await pilot.pause(0.2)
                    start, cpu = time.perf_counter(), time.process_time()
                    screen.open_location(Location.file(path, line, line, line + 5))  # type: ignore[attr-defined]
                    while code.document is None or code.document.path != path:
                        await pilot.pause(0)
                    await pilot.pause(0)  # the frame that shows it
                    shown = time.perf_counter() - start
                    while not coloured(code.document):
                        await pilot.pause(0)
                    await pilot.pause(0)
                    if n:  # the first round warms the imports and caches up
                        figures["open a file, in process"].append(shown)
                        figures["open a file, in process, CPU s"].append(time.process_time() - cpu)

    asyncio.run(run())
    service.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, help="the unpacked Flask 3.0.3 sdist")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--open-only", action="store_true", help="only the in-process opening of files "
                        "(quick: run it alternately for two builds to compare them on a busy machine)")
    args = parser.parse_args()
    source = args.source
    if source is None:
        from bench.harness import sdist

        source = sdist("flask", "3.0.3")
        if source is None:
            print("cannot fetch flask 3.0.3 from PyPI", file=sys.stderr)
            return 2
    figures: dict[str, list[float]] = {k: [] for k in (
        "first frame", "first frame, CPU s", "open a source", "open a source, CPU s", "switch panes", "quit (idle)",
        "quit (idle), CPU s", "quit (embedding)", "quit (model reading)", "open a file, in process",
        "open a file, in process, CPU s")}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo, env = prepare(source, work)
        db = work / "flask.db"
        index(repo, db, env)
        for key in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "HF_HUB_OFFLINE"):
            os.environ[key] = env[key]  # this process's app reads the same (fresh) user folders
        config(work, embed=False)
        open_in_process(repo, db, figures, args.repeats)
        for run in range(0 if args.open_only else args.repeats):
            config(work, embed=False)
            session(repo, db, env, figures)
            quit_reading(repo, db, env, figures, run)
            config(work, embed=True)
            fresh = work / f"unembedded-{run}.db"
            shutil.copy(db, fresh)
            quit_embedding(repo, fresh, env, figures)
    load = os.getloadavg()[0]
    print(f"coderag app on Flask 3.0.3, {COLS}x{ROWS} pty, {os.cpu_count()} cores, load {load:.1f}, "
          f"{args.repeats} runs")
    for name, values in figures.items():
        if not values:
            continue
        print(f"  {name:<24} median {statistics.median(values):.3f} s  max {max(values):.3f} s  (n={len(values)})")
    quits = sum(len(figures[k]) for k in ("quit (idle)", "quit (embedding)", "quit (model reading)"))
    print(f"  terminal clean after quitting: {quits - len(LEFT)}/{quits}"
          + "".join(f"\n    left: {t[:120]!r}" for t in LEFT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
