"""An on-disk cache of analysis results keyed by content: per-file module
indexes, consumer scans, and per-commit results such as supported GPU archs.

A module index's key is the file's content id (git blob id) plus the module
name and kind, so a re-run, another checkout of the same commit, or a bump that
leaves a file untouched parses nothing. One SQLite file holds everything: it is
safe for concurrent runs and stays one file however many entries it has.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sqlite3
from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from atompin.analysis.moduleinfo import ModuleInfo

if TYPE_CHECKING:
    from pydantic import TypeAdapter

# Bump when the indexer's output changes meaning, so old entries are ignored.
INDEX_FORMAT = "atompin-index-6"

T = TypeVar("T")


@functools.cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    # pydantic is imported on first use, so importing the analysis core stays cheap.
    from pydantic import TypeAdapter

    return TypeAdapter(kind)


def dump_json(kind: Any, value: Any, exclude_defaults: bool = False) -> bytes:
    """A cached value as JSON bytes (dataclasses, enums and tuples included)."""
    return _adapter(kind).dump_json(value, exclude_defaults=exclude_defaults)


def load_json(kind: type[T], data: bytes) -> T | None:
    """A cached value back from JSON bytes; None when the entry does not fit `kind` (stale or damaged)."""
    try:
        value: T = _adapter(cast(Hashable, kind)).validate_json(data)
        return value
    except ValueError:
        return None


def default_cache_dir() -> Path:
    """`$ATOMPIN_CACHE_DIR`, else `$XDG_CACHE_HOME/atompin`, else `~/.cache/atompin`."""
    env = os.environ.get("ATOMPIN_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "atompin"


def cache_key(content_id: str, module: str, is_package: bool) -> str:
    return hashlib.sha1(f"{INDEX_FORMAT}\0{module}\0{int(is_package)}\0{content_id}".encode()).hexdigest()


class AnalysisCache:
    """No-op cache (also a context manager); `SqliteAnalysisCache` stores for real."""

    def get(self, key: str) -> ModuleInfo | None:
        return None

    def put(self, key: str, info: ModuleInfo) -> None:
        pass

    def get_raw(self, key: str) -> bytes | None:
        return None

    def put_raw(self, key: str, data: bytes) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> AnalysisCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Counters the benchmark and `--verbose` report.
    hits = 0
    misses = 0


class SqliteAnalysisCache(AnalysisCache):
    """Everything in `<dir>/index.sqlite`. Writes are batched until `flush()` (or `close()`)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / "index.sqlite"
        self._db = self._open()
        self._pending: dict[str, bytes] = {}
        self.hits = 0
        self.misses = 0

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except sqlite3.DatabaseError:
            # A corrupt cache is only a cache: start it again.
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE IF NOT EXISTS modules (key TEXT PRIMARY KEY, data BLOB NOT NULL)")
        return db

    def get_raw(self, key: str) -> bytes | None:
        if key in self._pending:
            return self._pending[key]
        row = self._db.execute("SELECT data FROM modules WHERE key = ?", (key,)).fetchone()
        return bytes(row[0]) if row is not None else None

    def put_raw(self, key: str, data: bytes) -> None:
        self._pending[key] = data

    def get(self, key: str) -> ModuleInfo | None:
        data = self.get_raw(key)
        if data is None:
            self.misses += 1
            return None
        info = load_json(ModuleInfo, data)
        if info is None:
            self.misses += 1
            return None
        self.hits += 1
        return info

    def put(self, key: str, info: ModuleInfo) -> None:
        self.put_raw(key, dump_json(ModuleInfo, info, exclude_defaults=True))

    def flush(self) -> None:
        if not self._pending:
            return
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO modules (key, data) VALUES (?, ?)", self._pending.items())
        self._pending.clear()

    def close(self) -> None:
        self.flush()
        self._db.close()
