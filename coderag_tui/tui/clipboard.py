"""The local clipboard, for terminals without OSC 52 (the app always sends OSC 52 too).

No textual import here. Over SSH the local tools write the remote machine's clipboard, which
is harmless; the terminal's OSC 52 support is what reaches the user's machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys


def local_command() -> list[str] | None:
    """The clipboard tool of this machine, or None."""
    if os.environ.get("CODERAG_NO_LOCAL_CLIPBOARD"):
        return None
    candidates: list[list[str]] = []
    if sys.platform == "darwin":
        candidates.append(["pbcopy"])
    elif sys.platform == "win32":
        candidates.append(["clip"])
    else:
        if os.environ.get("WAYLAND_DISPLAY"):
            candidates.append(["wl-copy"])
        if os.environ.get("DISPLAY"):
            candidates += [["xclip", "-selection", "clipboard"], ["xsel", "--clipboard", "--input"]]
        candidates.append(["clip.exe"])  # WSL
    for cmd in candidates:
        if shutil.which(cmd[0]):
            return cmd
    return None


def copy_local(text: str) -> bool:
    """Copy with the local tool; True when one ran successfully."""
    cmd = local_command()
    if cmd is None:
        return False
    try:
        subprocess.run(cmd, input=text.encode(), check=True, timeout=3,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return True
