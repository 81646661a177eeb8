"""serve: the repositories over HTTP, for `--server` clients and any HTTP client."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from coderag_tui.cli.base import UsageError, arguments, command, progress_printer, store_url

if TYPE_CHECKING:
    pass


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"not a port: {value} (0 picks a free one)")
    return value


def _serve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", nargs="*", metavar="PATH|URL",
                   help="the repositories to serve, each a folder or a git URL (default: --repo, else "
                   "[server] repositories, else the cwd's repository); indexed first where they have no index")
    p.add_argument("--host", help="the address to listen on (default: [server] host, 127.0.0.1); any "
                   "other than loopback needs tokens ($CODERAG_ADMIN_TOKENS, $CODERAG_READ_TOKENS)")
    p.add_argument("--port", type=_port, help="the port (default: [server] port, 8765; 0: a free one)")
    p.add_argument("--json", action="store_true", help='once listening, print {"url", "repositories", '
                   '"tokens_required", "token"} on one line (for scripts that start a server; "token": the '
                   'one it made, else null)')
    p.add_argument("--no-token", action="store_true", help="on loopback without tokens, answer anyone on this "
                   "machine instead of making a token (default: [server] loopback_token, a token is made)")


@command("serve", "serve repositories over HTTP: search, context, symbols, answers (docs/server.md)")
@arguments(_serve_args)
def cmd_serve(args: argparse.Namespace) -> int:
    import os

    from coderag_tui.config import load_settings
    from coderag_tui.errors import ConfigError
    from coderag_tui.server import Tokens, is_loopback, serve
    from coderag_tui.server.auth import MIN_LENGTH
    from coderag_tui.service import CodeRag  # noqa: F811 (the one that runs)
    from coderag_tui.workspace import Workspace

    settings = load_settings(None, args.config)
    host = args.host or settings.server.host
    port = settings.server.port if args.port is None else args.port
    tokens = Tokens.load(settings.server)
    tokens.check_host(host)  # before minutes of indexing, not after
    made = not tokens.required and is_loopback(host) and settings.server.loopback_token and not args.no_token
    if made:  # on loopback too, a web page the user visits must not read the code
        tokens = Tokens.random()
    hook_secret = os.environ.get("CODERAG_WEBHOOK_SECRET", "") or settings.server.webhook_secret
    if hook_secret and len(hook_secret) < MIN_LENGTH:
        raise ConfigError(f"the webhook secret is shorter than {MIN_LENGTH} characters",
                          "make it long and random, as the tokens")
    targets = args.targets or ([args.repo] if args.repo else list(settings.server.repositories) or [None])
    if args.db and len(targets) > 1:
        raise UsageError("--db names one index file, for one repository", "serve each with its own index")
    if args.branch or args.rev:
        raise UsageError("serve takes no --branch or --rev", "clone the revision first, then serve the folder")
    store = store_url(args, targets[0]) if len(targets) == 1 else getattr(args, "store", None)
    if store and args.db:
        raise UsageError("--db names an index file; --store a database", "give one of them")
    if store and targets == [None] and not args.targets and not args.repo:
        # the database's repositories, each served from the database alone
        from coderag_tui.store.postgres.opening import stored_repositories

        services = [CodeRag.named(store, r.name, config=args.config) for r in stored_repositories(store)]
        if not services:
            raise UsageError("the database holds no repository yet", "index one: coderag index PATH --store URL")
    else:
        services = [CodeRag.open_any(t, config=args.config, db_path=args.db, progress=progress_printer("clone"),
                                     store=store or None) for t in targets]
    workspace = Workspace(services)
    bar = progress_printer("index")
    workspace.ensure_indexed(progress=bar)
    bar.close()
    announce = None
    if args.json:
        def announce(url: str) -> None:
            print(json.dumps({"url": url, "repositories": list(workspace.services),
                              "tokens_required": tokens.required, "token": tokens.admin[0] if made else None}),
                  flush=True)
    serve(workspace, host, port, tokens, announce, settings=settings.server, made_token=made,
          hook_secret=hook_secret)
    return 0
