"""llama.cpp's own log, kept off the terminal.

llama-cpp-python prints llama.cpp's errors to stderr even with `verbose=False`, and a stopped
prompt is one ("decode: removing memory module entries ..."): in the app that line lands on
the screen, and stays there after quitting. Every line goes to the `coderag.llama` logger at
DEBUG instead (Python's last-resort handler prints WARNING and up only).
"""

from __future__ import annotations

import ctypes
import logging
import threading
from typing import Any

_lock = threading.Lock()
_installed: Any = None  # the ctypes callback: llama.cpp keeps only its address, so we keep it alive


def quiet_llama_log() -> None:
    """Route llama.cpp's log to logging (once per process; needs llama_cpp importable)."""
    global _installed
    with _lock:
        if _installed is not None:
            return
        import llama_cpp

        log = logging.getLogger("coderag.llama")

        @llama_cpp.llama_log_callback
        def forward(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
            if log.isEnabledFor(logging.DEBUG):
                log.debug("%s", text.decode("utf-8", "replace").rstrip("\n"))

        llama_cpp.llama_log_set(forward, ctypes.c_void_p(0))
        _installed = forward
