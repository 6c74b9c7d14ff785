"""The on-disk compile cache: compiled kernels kept between processes, so that building an
unchanged model again costs a look-up per kernel instead of its lowering and LLVM.

An entry is a JSON header (what the loaded module needs besides the machine code: the
kernel's metadata, its optimized LLVM IR and its loop IR, for get_source and export)
and the object code, in one file named by its key under cache_dir(): the key is a
sha256 of everything the kernel's code follows from (graph/backend/build.py says what), the
code of the compiler itself included, so a key never names two different kernels.
Three other things a build would otherwise make again in every process are kept the
same way: a model's entry function (the native function that runs its steps,
codegen/compile.py compile_graph, keyed by its IR text), the native runtime's object
code (runtime/native.py) and the templates' config spaces, pickled
(search_spaces/registry.py: defining a space runs the template).

Safe under concurrent writers (processes building the same model, Ray workers): an
entry is written to a temporary file in its folder and renamed into place, which is
atomic, so a reader sees a whole entry or none; two writers of one key write the same
bytes. A missing, unreadable or malformed entry is a miss; a cache that cannot be
written (a read-only home, a full disk) is skipped with one warning: the cache never
fails a build.

Where: $AUTOSCHED_CACHE_DIR, else $XDG_CACHE_HOME/autosched/kernels, else
~/.cache/autosched/kernels. Off: $AUTOSCHED_NO_CACHE=1, or inside `with no_cache():`
(`autosched compile --no-cache`).
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import struct
import tempfile
import warnings
from functools import cache
from pathlib import Path

_OFF = contextvars.ContextVar("autosched_no_cache", default=False)
_HEADER = struct.Struct("<4sQ")  # magic, header length
_MAGIC = b"ASK1"
_warned = []


def cache_dir() -> Path | None:
    """The folder of the cache, or None while it is off (see the module docstring)."""
    if _OFF.get() or os.environ.get("AUTOSCHED_NO_CACHE", "") not in ("", "0"):
        return None
    given = os.environ.get("AUTOSCHED_CACHE_DIR")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "autosched" / "kernels"


@contextlib.contextmanager
def no_cache():
    """A block in which nothing is read from or written to the cache."""
    token = _OFF.set(True)
    try:
        yield
    finally:
        _OFF.reset(token)


def cache_key(*parts) -> str:
    """The sha256 (hex) of `parts` (JSON-able values) in order."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


@cache
def source_version(where: str) -> str:
    """A sha256 of every source file (.py, .ll, .c, .h) with its path: under the folder
    `where` (a package) and its subfolders, or beside the file `where` (a module of no
    package: its own folder's modules, which it may import): what a cached kernel was
    compiled by (computed once per process)."""
    digest = hashlib.sha256()
    root = Path(where)
    if root.is_file():
        root, files = root.parent, sorted(root.parent.glob("*.py"))
    else:
        files = sorted(p for p in root.rglob("*") if p.suffix in (".py", ".ll", ".c", ".h")
                       and "__pycache__" not in p.parts)
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def load(key: str) -> tuple[dict, bytes] | None:
    """The header and object code stored under `key`, or None."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        data = (folder / key[:2] / key).read_bytes()
        magic, size = _HEADER.unpack_from(data)
        if magic != _MAGIC:
            return None
        header = json.loads(data[_HEADER.size:_HEADER.size + size])
        blob = data[_HEADER.size + size:]
        return (header, blob) if len(blob) == header.get("blob_bytes") else None
    except (OSError, ValueError, struct.error):
        return None


def store(key: str, header: dict, blob: bytes) -> None:
    """Keep `header` (JSON-able) and `blob` under `key` (see the module docstring)."""
    folder = cache_dir()
    if folder is None:
        return
    text = json.dumps({**header, "blob_bytes": len(blob)}).encode()
    try:
        (folder / key[:2]).mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder / key[:2], prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_HEADER.pack(_MAGIC, len(text)) + text + blob)
            os.replace(tmp, folder / key[:2] / key)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as err:
        if not _warned:
            _warned.append(err)
            warnings.warn(f"the compile cache in {folder} cannot be written ({err}); "
                          "building without it", RuntimeWarning, stacklevel=2)


__all__ = ["cache_dir", "cache_key", "load", "no_cache", "source_version", "store"]
