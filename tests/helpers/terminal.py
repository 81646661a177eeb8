"""Running a real command on a pseudo-terminal, the way a user's shell runs it."""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Mapping, Sequence


def run_on_a_terminal(cmd: Sequence[str], env: Mapping[str, str] | None = None,
                      timeout: float = 600.0) -> tuple[int, bytes]:
    """Run `cmd` with a pseudo-terminal as its stdin, stdout and stderr; returns its exit code
    and everything it wrote (read until it closes the terminal, exits, or `timeout` passes)."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(list(cmd), stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # Linux: the other side closed
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
    return proc.wait(timeout=60), b"".join(chunks)
