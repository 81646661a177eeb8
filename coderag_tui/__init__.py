"""coderag: ask any code repository a question, in your terminal, offline."""

import os as _os

# onnxruntime (under fastembed) sends telemetry by default on Linux, and reads its documented
# off switch only when it loads: every entry point (CLI, MCP server, parse and embed workers)
# imports this package first, so the switch is in the environment before it can load.
_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

__version__ = "0.1.0"
