"""The hardened git runner: every git command coderag runs, on a clone or on a local
repository, goes through `GitRunner` (safety flags, a clean environment, transient
credentials) and streams its progress as `Progress` events.

Security: a cloned repository is untrusted input, and nothing from it is ever run
--------------------------------------------------------------------------------
A clone brings objects and refs, never the remote's `.git/config` or `.git/hooks`, so what could
run is only what *this machine's* configuration or templates would run inside it. Every git
command we run on a clone therefore gets `_SAFE_CONFIG` on its command line:

- `core.hooksPath=/dev/null` and `clone --template=` (no template hooks are copied): no hook
  (post-checkout, reference-transaction, post-index-change, ...) from any template dir, global
  `core.hooksPath` or the clone can run.
- `core.fsmonitor=false`: a global fsmonitor hook command is not started in the clone.
- `protocol.ext.allow=never`: `ext::` transports (which run arbitrary commands) are refused;
  `parse_remote` only accepts http(s), ssh, git and file URLs anyway.
- `submodule.recurse=false`, `fetch.recurseSubmodules=false` and no `--recurse-submodules`:
  `.gitmodules` of the clone is never followed (submodules would bring URLs of the
  repository author's choosing).
- Filters: `.gitattributes` (which the clone does bring) can only *name* a filter driver; its
  command comes from config, which a clone cannot bring. Still, the user's own config often
  defines drivers (`git lfs install` adds `filter.lfs.*`, which would download LFS objects from
  a server the repository chooses), so `.git/info/attributes` of every clone says `* -filter`
  (highest precedence: no driver runs for any path, LFS files stay pointer text) and the lfs
  driver is blanked on the command line as well (`filter.lfs.smudge=` etc.).
- Diffs run with `--no-ext-diff --no-textconv`; the environment drops `GIT_DIR`-style variables
  and `GIT_TRACE*` (a trace file could record an Authorization header).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from coderag_tui.errors import RepoError
from coderag_tui.models import Progress
from coderag_tui.sources.credentials import ASKPASS_SCRIPT, Credentials
from coderag_tui.sources.urls import redact

ProgressCallback = Callable[[Progress], None]

# Passed as `-c` to every git command run on a clone (see the module docstring).
_SAFE_CONFIG: tuple[str, ...] = (
    f"core.hooksPath={os.devnull}",
    "core.fsmonitor=false",
    "protocol.ext.allow=never",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "filter.lfs.smudge=",
    "filter.lfs.process=",
    "filter.lfs.required=false",
    "advice.detachedHead=false",
    "gc.autoDetach=false",  # no background gc still writing when the caller moves on
    "maintenance.autoDetach=false",
    "core.pager=cat",
)
# Environment variables that would point git somewhere else or record secrets.
_DROPPED_ENV = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX",
    "GIT_CURL_VERBOSE", "GIT_ASKPASS_OVERRIDE", "GIT_EXTERNAL_DIFF", "GIT_PAGER",
    "CODERAG_GIT_USERNAME", "CODERAG_GIT_PASSWORD", "CODERAG_GIT_HOST",
)




def git_executable() -> str:
    git = shutil.which("git")
    if not git:
        raise RepoError("git is not installed (or not on PATH)",
                        "install git to open remote repositories")
    return git


@dataclass
class GitResult:
    rc: int
    out: str
    err: str


class GitRunner:
    """Runs git with the safety flags, a clean environment and transient credentials."""

    def __init__(self, git: str, workdir: Path, creds: Credentials | None,
                 username_hint: str | None) -> None:
        self.git = git
        self.creds = creds
        self.secrets = tuple(s for s in (creds.password if creds else "",) if len(s) >= 3)
        self.env = {k: v for k, v in os.environ.items()
                    if k not in _DROPPED_ENV and not k.startswith("GIT_TRACE")}
        self.env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", LANGUAGE="C",
                        GIT_LFS_SKIP_SMUDGE="1", GIT_TRACE_REDACT="1")
        self.env.setdefault("GIT_HTTP_LOW_SPEED_LIMIT", "1")
        self.env.setdefault("GIT_HTTP_LOW_SPEED_TIME", "120")
        self.flags: list[str] = []
        for item in _SAFE_CONFIG:
            self.flags += ["-c", item]
        self._tmp: str | None = None
        if creds is not None:
            self._tmp = tempfile.mkdtemp(prefix=".askpass-", dir=workdir)
            script = Path(self._tmp) / "askpass.sh"
            script.write_text(ASKPASS_SCRIPT, encoding="utf-8")
            script.chmod(stat.S_IRWXU)
            self.env.update(GIT_ASKPASS=str(script), CODERAG_GIT_USERNAME=creds.username,
                            CODERAG_GIT_PASSWORD=creds.password, CODERAG_GIT_HOST=creds.host)
            # No credential helper is asked, nor told to store the token afterwards.
            self.flags += ["-c", "credential.helper="]
        elif username_hint:
            # Through the environment (git >= 2.31), not the command line, in case it is a token.
            try:
                n = int(self.env.get("GIT_CONFIG_COUNT", "0") or 0)
            except ValueError:
                n = 0
            self.env.update({"GIT_CONFIG_COUNT": str(n + 1), f"GIT_CONFIG_KEY_{n}":
                             "credential.username", f"GIT_CONFIG_VALUE_{n}": username_hint})

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return redact(text)

    def cmd(self, args: Sequence[str]) -> list[str]:
        return [self.git, *self.flags, *args]

    def run(self, args: Sequence[str], cwd: Path) -> GitResult:
        proc = self.run_bytes(args, cwd)
        return GitResult(proc.returncode, proc.stdout.decode("utf-8", "replace"),
                       proc.stderr.decode("utf-8", "replace"))

    def run_bytes(self, args: Sequence[str], cwd: Path, *, ceiling: bool = True,
                  timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run git in `cwd`; `ceiling`: git may not look above `cwd` for the repository (a clone's
        own folder), off for a folder inside a local repository."""
        env = dict(self.env, GIT_CEILING_DIRECTORIES=str(cwd.parent)) if ceiling else self.env
        try:
            return subprocess.run(self.cmd(args), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, check=False, timeout=timeout)
        except OSError as exc:
            raise RepoError(f"cannot run git: {exc.strerror}", "check that git is installed") from None

    def stream(self, args: Sequence[str], cwd: Path, phase: str,
               progress: ProgressCallback | None) -> GitResult:
        """Run a network command (clone, fetch), feeding its progress lines to `progress`."""
        if progress is None:
            return self.run(args, cwd)
        feed = progress_feeder(phase, progress)
        env = dict(self.env, GIT_CEILING_DIRECTORIES=str(cwd.parent))
        try:
            proc = subprocess.Popen(self.cmd([args[0], "--progress", *args[1:]]), cwd=cwd,
                                    env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except OSError as exc:
            raise RepoError(f"cannot run git: {exc.strerror}", "check that git is installed") from None
        assert proc.stderr is not None
        lines: list[str] = []
        pending = b""
        while True:
            chunk = os.read(proc.stderr.fileno(), 8192)
            if not chunk:
                break
            pending += chunk
            *complete, pending = re.split(rb"[\r\n]", pending)
            for raw in complete:
                line = raw.decode("utf-8", "replace").strip()
                if line:
                    feed(line)
                    lines.append(line)
                    del lines[:-400]
        if pending.strip():
            lines.append(pending.decode("utf-8", "replace").strip())
        rc = proc.wait()
        return GitResult(rc, "", "\n".join(lines))


# git's progress lines: "Receiving objects:  45% (450/1000), 1.20 MiB | 2.00 MiB/s", sometimes
# after "remote: ", ending in ", done." on the last one.
_PROGRESS_RE = re.compile(
    r"^(?:remote:\s*)?(?P<op>[A-Za-z][A-Za-z ]*?):\s+\d+%\s+\((?P<cur>\d+)/(?P<max>\d+)\)"
    r"(?:,\s*(?P<extra>.*?))?(?:,?\s*done\.?)?\s*$")


def _local_git() -> GitRunner:
    git = shutil.which("git")
    if not git:
        raise RepoError("git is not installed (or not on PATH)", "install git")
    runner = GitRunner(git, Path.cwd(), None, None)
    # read-only commands only: no index refresh written into the user's repository
    runner.env["GIT_OPTIONAL_LOCKS"] = "0"
    return runner


def _filter_off_flags(git: GitRunner, root: Path) -> list[str]:
    """`-c` flags that blank every filter driver the configuration defines: a local repository
    has no `.git/info/attributes` of ours, and its `.gitattributes` may name any driver."""
    proc = git.run_bytes(["config", "--null", "--name-only", "--get-regexp", r"^filter\."], root,
                         ceiling=False, timeout=60)
    drivers = set()
    for key in proc.stdout.decode("utf-8", "replace").split("\0"):
        name, _, setting = key.rpartition(".")
        if name.startswith("filter.") and setting in ("clean", "smudge", "process", "required"):
            drivers.add(name)
    flags: list[str] = []
    for name in sorted(drivers):
        for item in (f"{name}.clean=", f"{name}.smudge=", f"{name}.process=", f"{name}.required=false"):
            flags += ["-c", item]
    return flags


def run_local_git(args: Sequence[str], root: Path, *, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    """Run a read-only git command in a local repository (or a folder inside one) with the
    clones' safety flags and no filter driver: nothing the repository configures runs (diff
    commands must still pass `--no-ext-diff --no-textconv`)."""
    git = _local_git()
    flags = _filter_off_flags(git, root)
    return git.run_bytes([*flags, *args], root, ceiling=False, timeout=timeout)


def local_head(root: Path) -> str:
    """The commit checked out in the git repository holding `root` ("" when it is none, or git
    is missing): what `status` shows the index was built from."""
    if not (root / ".git").exists():
        return ""
    try:
        proc = run_local_git(["rev-parse", "--verify", "-q", "HEAD"], root, timeout=30)
    except (RepoError, OSError, subprocess.SubprocessError):
        return ""
    head = proc.stdout.decode("ascii", "replace").strip()
    return head if proc.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", head) else ""


def progress_feeder(phase: str, progress: ProgressCallback) -> Callable[[str], None]:
    """A function taking git's stderr lines and emitting `Progress` events (other lines, such
    as "Cloning into ..." or warnings, emit nothing)."""

    def feed(line: str) -> None:
        m = _PROGRESS_RE.match(line.strip())
        if m is None:
            return
        extra = (m["extra"] or "").strip(" ,")
        text = f"{m['op'].strip()} {extra}".strip()
        progress(Progress(phase, int(m["cur"]), int(m["max"]), redact(text)))

    return feed
