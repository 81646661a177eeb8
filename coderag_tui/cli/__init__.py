"""The command line: `coderag [PATH|URL]` opens the app; `coderag COMMAND ...` runs one job.

Each commands_*.py module registers its subcommands with `command()`; this module dispatches.
"""

from coderag_tui.cli.main import main

__all__ = ["main"]
