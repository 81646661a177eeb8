"""The packages a repository defines, by the names other code imports them with: its Python
package folders (at the top or under `src/`, and the distribution name of `pyproject.toml` /
`setup.cfg` when a module or folder has it) and its `package.json` name. What a repository
holds is untrusted: files are read up to a size, and a broken one names nothing."""

from __future__ import annotations

import configparser
import dataclasses
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MAX_BYTES = 256 * 1024
JS_EXTENSIONS = ("", ".js", ".ts", ".jsx", ".tsx", ".mjs", ".cjs", "/index.js", "/index.ts")


@dataclass(frozen=True)
class Package:
    name: str  # as imported: shared_lib, @acme/ui-kit
    language: str  # python or js
    base: str  # its folder in the repository ("shared_lib", "src/shared_lib"; "" for a js package)
    main: str = ""  # a js package's entry file
    module: bool = False  # a single Python module file (`base` is "name.py")

    def files_for(self, module: str) -> list[str] | None:
        """The repository paths `module` may be, when it is this package or inside it."""
        if self.language == "python":
            if module != self.name and not module.startswith(self.name + "."):
                return None
            if self.module:
                return [self.base]
            rest = module[len(self.name):].strip(".").replace(".", "/")
            where = f"{self.base}/{rest}" if rest else self.base
            return [f"{where}.py", f"{where}/__init__.py"] if rest else [f"{where}/__init__.py"]
        if module != self.name and not module.startswith(self.name + "/"):
            return None
        rest = module[len(self.name):].strip("/")
        if not rest:
            return [self.main, *(f"index{e}" for e in JS_EXTENSIONS[1:6])] if self.main else \
                [f"index{e}" for e in JS_EXTENSIONS[1:6]]
        return [re.sub(r"^\./", "", rest) + e for e in JS_EXTENSIONS]


def _read(path: Path) -> str:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_BYTES:
            return ""
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _dist_names(root: Path) -> list[str]:
    names: list[str] = []
    try:
        doc = tomllib.loads(_read(root / "pyproject.toml") or "")
        for value in (doc.get("project", {}).get("name"), doc.get("tool", {}).get("poetry", {}).get("name")):
            if isinstance(value, str):
                names.append(value)
    except (tomllib.TOMLDecodeError, AttributeError):
        pass
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read_string(_read(root / "setup.cfg"))
        if cfg.has_option("metadata", "name"):
            names.append(cfg.get("metadata", "name"))
    except configparser.Error:
        pass
    return [re.sub(r"[-.]+", "_", n.strip()).lower() for n in names if n.strip()]


def packages(root: Path) -> list[Package]:
    """What `root` defines for others to import (see module doc)."""
    out: list[Package] = []
    for top in ("", "src"):
        folder = root / top if top else root
        try:
            entries = sorted(folder.iterdir()) if folder.is_dir() else []
        except OSError:
            entries = []
        for entry in entries:
            if entry.is_dir() and not entry.is_symlink() and (entry / "__init__.py").is_file() \
                    and entry.name.isidentifier() and entry.name not in ("tests", "test", "docs"):
                out.append(Package(entry.name, "python", f"{top}/{entry.name}".lstrip("/")))
    have = {p.name for p in out}
    for dist in _dist_names(root):
        for top in ("", "src"):
            single = root / top / f"{dist}.py"
            if dist not in have and single.is_file() and not single.is_symlink():
                out.append(Package(dist, "python", f"{top}/{dist}.py".lstrip("/"), module=True))
                have.add(dist)
    try:
        doc = json.loads(_read(root / "package.json") or "{}")
    except ValueError:
        doc = {}
    name = doc.get("name") if isinstance(doc, dict) else None
    if isinstance(name, str) and re.fullmatch(r"(@[\w.-]+/)?[\w.-]+", name):
        main = doc.get("main")
        out.append(Package(name, "js", "", re.sub(r"^\./", "", main) if isinstance(main, str) else ""))
    return out


_FIELDS = frozenset(f.name for f in dataclasses.fields(Package))


def package_rows(root: Path) -> list[dict[str, Any]]:
    """What the repository at `root` defines for others to import, as stored rows (a database
    keeps them with each repository: its files may not be on the machine that reads them)."""
    return [dataclasses.asdict(p) for p in packages(root)]


def from_rows(rows: Iterable[Any]) -> list[Package]:
    """Stored rows as packages (a row without a field names nothing)."""
    out = []
    for row in rows:
        try:
            out.append(Package(**{k: v for k, v in row.items() if k in _FIELDS}))
        except (TypeError, AttributeError):
            continue
    return out
