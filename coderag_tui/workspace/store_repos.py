"""Several repositories in one store given by URL (`--store postgresql://...`): which of the
database's repositories a command indexes or reads, and `coderag index A B URL ... --store`.

A folder or a git URL (cloned into the cache, as for every command) is indexed into its own
repository of the database, named by its last part (`backend`; `backend-2` when another source
has that name) and found again by its source. Reading, `--repo a,b` names repositories of the
database, `--repo PATH` the one indexed from that folder, and no repository every one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coderag_tui.config import load_settings
from coderag_tui.errors import RepoError, StoreError
from coderag_tui.indexing import store_build
from coderag_tui.models import IndexSummary
from coderag_tui.store.backend import open_store
from coderag_tui.workspace import store_links

if TYPE_CHECKING:
    from coderag_tui.store_service import StoreService


def repo_name(source: str) -> str:
    """A short name for a repository: its folder's or URL's last part, safe in URLs (as a
    workspace names its repositories)."""
    base = source.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.") or "repo"


def _remote(text: str) -> bool:
    """A git URL (a URL that is not a usable one: its one clear, redacted line)."""
    from coderag_tui.sources.urls import is_remote, parse_remote

    if "://" in text or re.match(r"^[\w.-]+@[\w.-]+:", text):
        parse_remote(text)
    return is_remote(text)


def _source(text: str) -> str:
    from coderag_tui.sources.urls import redact

    return redact(text)  # what the database keeps and shows: never a URL's credentials


def open_service(cls: type[StoreService], url: str, target: str | Path | None,
                 config: str | Path | None = None) -> StoreService:
    """The service `target` names in the database at `url` (see the module doc)."""
    text = str(target) if target is not None else ""
    base: Any = open_store(url)
    try:
        if text and _remote(text):
            # the URL as given clones (its credentials stay in memory); the database keeps it without
            service = cls(None, load_settings(None, config), _at(base, _source(text)), url, text)
            service.display_name = repo_name(_source(text))
            return service
        folder = Path(text or ".").expanduser().resolve()
        if folder.is_dir():
            reading = _at(base, str(folder)) if text else _across(base, None)
            return cls(folder, load_settings(folder, config), reading, url, str(folder))
        if "/" in text or text.startswith("."):
            raise RepoError(f"{folder} is not a folder", "with --store, give a repository folder, a git URL, "
                            "or names of the database's repositories (a,b)")
        names = [n.strip() for n in text.split(",") if n.strip()]
        if not hasattr(base, "across"):
            raise StoreError(f"{base.backend} holds one repository", "leave out --repo")
        service = cls(None, load_settings(None, config), base.across(names) if len(names) > 1
                      else base.repository(names[0]), url)
        service.display_name = ",".join(names)
        return service
    except BaseException:
        base.close()
        raise


def open_listed(url: str, chosen: str | None, config: str | Path | None, indexing: bool) -> Any:
    """`--workspace` on a store: the repositories of `[server] repositories` in the user's config,
    each indexed into the database (`indexing`), else read together (`chosen`, `a,b`: some of them
    by name)."""
    from coderag_tui.store_service import StoreService

    listed = [str(t) for t in load_settings(None, config).server.repositories]
    if not listed:
        raise RepoError("no workspace is configured", "list its folders and git URLs in [server] repositories "
                        "of the user's config, or give them: --repo A,B")
    if indexing:
        return StoreRepos.open(url, listed, config)
    sources = {_source(t) if _remote(t) else str(Path(t).expanduser().resolve()) for t in listed}
    base: Any = open_store(url)
    try:
        names = [r.name for r in base.repositories() if r.source in sources]
        wanted = [n.strip() for n in (chosen or "").split(",") if n.strip()]
        missing = [n for n in wanted if n not in names]
        if missing or not names:
            raise StoreError(f"the workspace has no repository {missing[0]!r} in this database" if missing else
                             "no repository of the workspace is in this database yet",
                             "index them: coderag index --workspace --store URL")
        service = StoreService(None, load_settings(None, config), base.across(wanted or names), url)
    except BaseException:
        base.close()
        raise
    service.display_name = ",".join(wanted or names)
    return service


def _at(base: Any, source: str) -> Any:
    """The repository indexed from `source` (an empty view when none was yet)."""
    at = getattr(base, "repository_at", None)
    return base if at is None else at(source) or base.across([])


def _across(base: Any, names: list[str] | None) -> Any:
    return base.across(names) if hasattr(base, "across") else base


def claim(service: StoreService) -> Any:
    """The service's own repository of the database (created when new), which it then reads."""
    store = service.store
    if hasattr(store, "repository") and service.source:
        source = _source(service.source)
        store = store.repository(service.display_name or repo_name(source), source=source)
        service.store = store
        service.display_name = store.repo or service.display_name
    return store


def index_into(service: StoreService, rebuild: bool, progress: store_build.ProgressFn | None) -> IndexSummary:
    """Index the service's folder (or clone) into its own repository of the database, then link
    the imports between the database's repositories."""
    if not service.source:
        raise StoreError(f"{service.display_name} names repositories of the database: nothing to index from",
                         "give the repository's folder or git URL to index")
    root = service.root
    commit = ""
    if root is None or _remote(service.source):  # a git URL: cloned (or fetched) into the cache first
        from coderag_tui.sources.clone import ensure_clone

        cloned = ensure_clone(service.source, settings=service.settings)
        root, commit = cloned.path, cloned.head_commit
        service.root = root  # its files are read from the clone
    store = claim(service)
    if commit and not rebuild and store.get_meta("commit") == commit:
        # the clone is where it was indexed: nothing to read (a fetch on the interval costs this alone)
        counts = store.counts()
        return IndexSummary(counts.files, 0, counts.files, 0, 0, counts.units, counts.chunks, store.edge_count(),
                            {}, 0.0)
    if rebuild:
        for path in store.files():
            store.delete_file(path)
        store.replace_skips({})  # every file is read again
    summary = store_build.build(store, root, service.settings, progress)
    if commit:
        store.set_meta("commit", commit)
    if hasattr(store, "set_packages"):
        store.set_packages(store_links.package_rows(root))
        store_links.link(store)
    return summary


class StoreRepos:
    """`coderag index A B URL ... --store URL`: each into its own repository of one database (what
    `_index_several` of the CLI reads: `chosen`, (name, service) pairs)."""

    workspace = True

    def __init__(self, services: list[StoreService]) -> None:
        self.chosen = [(s.display_name, s) for s in services]

    @classmethod
    def open(cls, url: str, targets: list[str], config: str | Path | None = None) -> StoreRepos:
        from coderag_tui.store_service import StoreService

        services: list[StoreService] = []
        try:
            for target in targets:
                service = StoreService.open(url, target, config)
                if not service.source:
                    raise StoreError(f"{target!r} is neither a folder nor a git URL", "give what to index")
                services.append(service)
                claim(service)
        except BaseException:
            for s in services:
                s.close()
            raise
        return cls(services)
