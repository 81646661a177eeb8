"""Read the metadata of a GGUF file cheaply (memory-mapped header, no tensors, no llama.cpp).

Used to list models (name, trained context length, chat template or not) and to refuse a file
before handing it to llama.cpp, which would otherwise fail with a C-level message.
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path
from typing import Any

from coderag_tui.errors import ModelError

MAGIC = b"GGUF"

# GGUF value types
_SCALARS: dict[int, str] = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
    10: "<Q", 11: "<q", 12: "<d",
}
_STRING = 8
_ARRAY = 9


class _Reader:
    def __init__(self, buf: Any, size: int) -> None:
        self.buf = buf
        self.pos = 0
        self.size = size

    def unpack(self, fmt: str) -> Any:
        n = struct.calcsize(fmt)
        if self.pos + n > self.size:
            raise ValueError("truncated")
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += n
        return value

    def string(self, keep: bool = True) -> str:
        n = self.unpack("<Q")
        if self.pos + n > self.size:
            raise ValueError("truncated string")
        start = self.pos
        self.pos += n
        return bytes(self.buf[start:self.pos]).decode("utf-8", "replace") if keep else ""

    def value(self, vtype: int, keep: bool) -> Any:
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string(keep)
        if vtype == _ARRAY:
            item_type = self.unpack("<I")
            count = self.unpack("<Q")
            if item_type in _SCALARS:  # skip fixed-size arrays without reading them
                self.pos += struct.calcsize(_SCALARS[item_type]) * count
                if self.pos > self.size:
                    raise ValueError("truncated array")
                return count
            if item_type == _STRING:  # the tokenizer's vocabulary: skip it in a tight loop
                buf, pos, unpack = self.buf, self.pos, struct.Struct("<Q").unpack_from
                for _ in range(count):
                    pos += 8 + unpack(buf, pos)[0]
                if pos > self.size:
                    raise ValueError("truncated array")
                self.pos = pos
                return count
            for _ in range(count):
                self.value(item_type, keep=False)
            return count  # arrays are summarised by their length
        raise ValueError(f"unknown GGUF value type {vtype}")


def is_gguf(path: Path) -> bool:
    try:
        with Path(path).open("rb") as fh:
            return fh.read(4) == MAGIC
    except OSError:
        return False


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The key/value metadata of a GGUF file (arrays are replaced by their length).

    Raises ModelError (one line) for a missing, unreadable or non-GGUF file.
    """
    path = Path(path)
    try:
        fh = path.open("rb")
    except FileNotFoundError as exc:
        raise ModelError(f"model file not found: {path}") from exc
    except OSError as exc:
        raise ModelError(f"cannot read the model file {path}: {exc.strerror}") from exc
    with fh:
        try:
            size = path.stat().st_size
            if size < 24:
                raise ModelError(f"{path} is not a GGUF model file")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                if mm[:4] != MAGIC:
                    raise ModelError(f"{path} is not a GGUF model file")
                return _parse(mm, size)
        except ModelError:
            raise
        except (ValueError, struct.error, UnicodeDecodeError) as exc:
            raise ModelError(f"{path} is not a GGUF model file (damaged header: {exc})") from exc
        except OSError as exc:
            raise ModelError(f"cannot read the model file {path}: {exc.strerror}") from exc


def _parse(buf: Any, size: int) -> dict[str, Any]:
    r = _Reader(buf, size)
    r.pos = 4
    version = r.unpack("<I")
    if version == 1:  # v1 used 32-bit counts
        r.unpack("<I")
        kv_count = r.unpack("<I")
    else:
        r.unpack("<Q")
        kv_count = r.unpack("<Q")
    meta: dict[str, Any] = {"gguf.version": version}
    for _ in range(kv_count):
        key = r.string()
        vtype = r.unpack("<I")
        meta[key] = r.value(vtype, keep=True)
    return meta


def context_length(meta: dict[str, Any]) -> int:
    """The trained context length (`<arch>.context_length`), 0 when absent."""
    arch = meta.get("general.architecture", "")
    value = meta.get(f"{arch}.context_length")
    if isinstance(value, int):
        return value
    for key, val in meta.items():
        if key.endswith(".context_length") and isinstance(val, int):
            return val
    return 0


def has_chat_template(meta: dict[str, Any]) -> bool:
    template = meta.get("tokenizer.chat_template")
    return isinstance(template, str) and bool(template.strip())


def write_minimal_gguf(path: Path, meta: dict[str, str | int]) -> None:
    """Write a GGUF file with metadata only and no tensors (tests and tooling)."""
    out = bytearray(MAGIC)
    out += struct.pack("<IQQ", 3, 0, len(meta))
    for key, value in meta.items():
        kb = key.encode()
        out += struct.pack("<Q", len(kb)) + kb
        if isinstance(value, str):
            vb = value.encode()
            out += struct.pack("<IQ", _STRING, len(vb)) + vb
        else:
            out += struct.pack("<IQ", 10, value)
    Path(path).write_bytes(bytes(out))
