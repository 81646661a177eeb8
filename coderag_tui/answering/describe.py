"""Files described: profile and summaries together, as `FileDescription`s for the interfaces."""

from __future__ import annotations

from collections.abc import Sequence

from coderag_tui.indexing.profiles import folder_of
from coderag_tui.models import FileDescription, UnitDescription
from coderag_tui.store import descriptions as store
from coderag_tui.store.backend import StoreBackend


def describe_files(db: StoreBackend, paths: Sequence[str] | None = None) -> list[FileDescription]:
    """The files under `paths` (files or folders; all when None), in path order."""
    file_ids = store.file_ids_under(db, paths) if paths else store.all_file_ids(db)
    units = store.units_of(db, file_ids)
    if paths:
        wanted = [p.strip("/") for p in paths]
        units = [u for u in units if any(not p or p == "." or u.path == p or u.path.startswith(p + "/")
                                         for p in wanted)]
    profiles = store.profiles_for(db, [u.id for u in units])
    summaries = store.summaries_of_paths(db, sorted({u.path for u in units}))
    folders = store.summaries_of_paths(db, sorted({folder_of(u.path) for u in units}))
    by_file: dict[str, list[store.UnitRow]] = {}
    for u in units:
        by_file.setdefault(u.path, []).append(u)
    out: list[FileDescription] = []
    for path in sorted(by_file):
        members = by_file[path]
        head = next((u for u in members if u.kind == "file"), None)
        if head is None:
            continue
        prof = store.profile_of(db, head.id)
        role, fan_in, fan_out, data, text = prof if prof else ("module", 0, 0, {}, "")
        own = summaries.get(store.summary_key(path, "file", path))
        folder = folders.get(store.summary_key(folder_of(path), "folder", folder_of(path)))
        described = []
        for u in members:
            if u.kind == "file":
                continue
            s = summaries.get(store.summary_key(u.path, u.kind, u.qualname))
            described.append(UnitDescription(u.kind, u.qualname, u.start_line, u.signature,
                                             profiles.get(u.id, (role,))[0], s.text if s else "",
                                             bool(s and s.stale), s.model if s else ""))
        out.append(FileDescription(
            path, head.language, int(data.get("lines", head.end_line) or 0), role, fan_in, fan_out, text,
            own.text if own else "", bool(own and own.stale), own.model if own else "",
            tuple(map(str, data.get("imports", ()))), tuple(map(str, data.get("imported_by", ()))),
            tuple(described), folder.text if folder else "", folder.model if folder else ""))
    return out
