"""models: list the configured and available models; pull a GGUF into models/."""

from __future__ import annotations

import argparse

from coderag_tui.cli import render
from coderag_tui.cli.base import (
    add_json,
    arguments,
    command,
    open_service,
    print_json,
    width,
)
from coderag_tui.errors import CoderagError
from coderag_tui.textsafe import safe_line


def _models_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["list", "pull"], help="list: configured and found models; "
                   "pull: the models there are to download; pull NAME, or pull REPO FILE: download a GGUF "
                   "into models/")
    p.add_argument("repo_id", nargs="?", metavar="NAME|REPO",
                   help="pull: a name from `coderag models pull`, or a hub repository, "
                   "e.g. Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF")
    p.add_argument("filename", nargs="?", metavar="FILE", help="pull REPO FILE: the GGUF in the repository")
    p.add_argument("--model", help="list: also describe this GGUF path")
    p.add_argument("--base-url", default=None, help="pull: the model hub (default: $HF_ENDPOINT, else "
                   "https://huggingface.co)")
    add_json(p)


def _pull(args: argparse.Namespace) -> int:
    from coderag_tui.answering.catalog import CATALOG, catalog_lines, find, hub_pull
    from coderag_tui.paths import models_dir

    if not args.repo_id:
        if args.json:
            print_json(list(CATALOG))
            return 0
        print("\n".join(catalog_lines()))
        print("download one with `coderag models pull NAME` (or `coderag models pull REPO FILE`)")
        return 0
    if args.filename:
        repo, filename = args.repo_id, args.filename
    else:
        entry = find(args.repo_id)
        if entry is None:
            raise CoderagError(f"no model named {args.repo_id!r} in the list",
                               "`coderag models pull` lists them; or give REPO FILE")
        repo, filename = entry.repo, entry.file
    path = hub_pull(repo, filename, models_dir(), args.base_url)
    print(f"saved {path}; answer with it: --model {path.name}, or F8 in the app")
    return 0


@command("models", "list the configured and available models, or pull a GGUF into models/")
@arguments(_models_args)
def cmd_models(args: argparse.Namespace) -> int:
    if args.action == "pull":
        return _pull(args)
    service = open_service(args)
    infos = service.list_models(args.model)
    if args.json:
        print_json(infos)
        return 0 if infos else 1
    cols = width()
    for m in infos:
        print(render.model_line(m, cols))
        if m.choice and m.choice != m.path_or_url:  # (one line: a name to copy)
            print(f"{render.INDENT}--model {safe_line(m.choice)}")
    if not service.settings.llm.discover:
        print("(looking for model servers on this machine is off: [llm] discover = false)")
    return 0 if infos else 1
