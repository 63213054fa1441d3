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
import shutil
import sqlite3
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from atompin.analysis.moduleinfo import ModuleInfo
from atompin.errors import InputError

if TYPE_CHECKING:
    import msgspec

# Bump when the indexer's output changes meaning, so old entries are ignored.
INDEX_FORMAT = "atompin-index-30"

T = TypeVar("T")


@functools.cache
def _codec(kind: Any) -> tuple[msgspec.json.Encoder, msgspec.json.Decoder[Any]]:
    # msgspec, not pydantic, for the cache's own dataclasses: a check builds their codecs on
    # every cold run, and pydantic's imports and schemas took about 0.1 s of it (msgspec: a few
    # milliseconds). Imported on first use, so importing the analysis core stays cheap.
    import msgspec

    return msgspec.json.Encoder(), msgspec.json.Decoder(kind)


def prepare_codec(kind: Any) -> None:
    """Build `kind`'s JSON codec now: done before a fork, it is built once for the parent, which
    reads what the child writes, and the child."""
    _codec(kind)


def dump_json(kind: Any, value: Any) -> bytes:
    """A cached value as JSON bytes (dataclasses, enums and tuples included)."""
    return _codec(kind)[0].encode(value)


def load_json(kind: type[T], data: bytes) -> T | None:
    """A cached value back from JSON bytes; None when the entry does not fit `kind` (stale or damaged)."""
    import msgspec

    try:
        value: T = _codec(cast(Hashable, kind))[1].decode(data)
        return value
    except msgspec.DecodeError:  # a ValidationError is one too
        return None


def default_cache_dir() -> Path:
    """`$ATOMPIN_CACHE_DIR`, else `$XDG_CACHE_HOME/atompin`, else `~/.cache/atompin`."""
    env = os.environ.get("ATOMPIN_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "atompin"


@functools.cache
def code_digest() -> str:
    """An id of this atompin's own code and the Python that parses: results cached under it are
    never served by another build (a change to a rule needs no format bump to take effect)."""
    import sys

    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(repr(sys.version_info[:2]).encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def cache_key(content_id: str, module: str, is_package: bool) -> str:
    return hashlib.sha1(f"{INDEX_FORMAT}\0{module}\0{int(is_package)}\0{content_id}".encode()).hexdigest()


class AnalysisCache:
    """A cache kept in memory for one run (what `--no-cache` gets: nothing read from or written
    to disk); `SqliteAnalysisCache` keeps its entries on disk. Also a context manager."""

    def __init__(self) -> None:
        self._entries: dict[str, bytes] = {}

    def get(self, key: str) -> ModuleInfo | None:
        data = self.get_raw(key)
        return load_json(ModuleInfo, data) if data is not None else None

    def put(self, key: str, info: ModuleInfo) -> None:
        self.put_raw(key, dump_json(ModuleInfo, info))

    def get_raw(self, key: str) -> bytes | None:
        return self._entries.get(key)

    def put_raw(self, key: str, data: bytes) -> None:
        self._entries[key] = data

    def flush(self) -> None:
        pass

    def write_now(self, entries: list[tuple[str, bytes]]) -> bool:
        """Write `entries` to disk at once, apart from what is pending (a forked child's results,
        through the child's own connection): False, nothing written, when this cache keeps nothing
        on disk or the write failed (they are then `put_raw` by whoever receives them)."""
        return False

    def put_written(self, key: str, data: bytes) -> None:
        """An entry already on disk (`write_now` wrote it): kept for this run, not written again."""
        self.put_raw(key, data)

    def reopened(self) -> AnalysisCache:
        """This cache for a forked child process: its own connection (one is never shared across
        a fork), the same entries, including those not written yet."""
        return self

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> AnalysisCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Counters the benchmark and `--verbose` report.
    hits = 0
    misses = 0


class RecordingCache(AnalysisCache):
    """Reads through to a cache and keeps what is written: a forked child's cache, whose writes
    are sent back to the parent (`prefetch.written_there` also writes them to disk)."""

    def __init__(self, inner: AnalysisCache) -> None:
        super().__init__()
        self.inner = inner

    def get_raw(self, key: str) -> bytes | None:
        found = super().get_raw(key)
        return found if found is not None else self.inner.get_raw(key)

    @property
    def written(self) -> list[tuple[str, bytes]]:
        return list(self._entries.items())


class SqliteAnalysisCache(AnalysisCache):
    """Everything in `<dir>/index.sqlite`. Writes are batched until `flush()` (or `close()`).

    A cache is only a cache: a file that is not SQLite, a table of another shape, or a
    damaged page is thrown away and started again; when even that fails, one line names
    the folder to delete.
    """

    WRITE_NOW_WAIT_MS = 1000  # how long `write_now` waits for another run's write to end

    def __init__(self, directory: Path) -> None:
        if directory.exists() and not directory.is_dir():
            raise InputError(f"{directory}: the cache folder is a file; remove it or pass --cache-dir FOLDER")
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"{directory}: cannot create the cache folder ({exc.strerror or exc})") from None
        self.path = directory / "index.sqlite"
        self._db = self._open()
        self._pending: dict[str, bytes] = {}
        self._written: dict[str, bytes] = {}  # on disk already (a child wrote them): read from memory until a flush
        self.hits = 0
        self.misses = 0

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except sqlite3.DatabaseError:
            self._remove()
        try:
            return self._connect()
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None

    def _unusable(self, exc: Exception) -> InputError:
        return InputError(
            f"{self.path.parent}: the analysis cache is damaged and could not be rebuilt ({exc}); "
            "delete that folder and run again"
        )

    def _remove(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            path = Path(f"{self.path}{suffix}")
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)

    def _rebuild(self) -> None:
        try:
            self._db.close()
        except sqlite3.Error:
            pass
        self._remove()
        self._db = self._open()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS modules (key TEXT PRIMARY KEY, data BLOB NOT NULL)")
            columns = [row[1] for row in db.execute("PRAGMA table_info(modules)")]
            if columns != ["key", "data"]:
                raise sqlite3.DatabaseError(f"table modules has columns {columns}, not key and data")
            db.execute("SELECT key, data FROM modules LIMIT 1").fetchall()
        except BaseException:
            db.close()
            raise
        return db

    def get_raw(self, key: str) -> bytes | None:
        found = self._pending.get(key)
        if found is None:
            found = self._written.get(key)
        if found is not None:
            return found
        try:
            row = self._db.execute("SELECT data FROM modules WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError as exc:
            if _busy(exc):
                return None  # another run holds the cache too long: go without it
            self._rebuild()
            return None
        except sqlite3.DatabaseError:
            self._rebuild()
            return None
        if row is None:
            return None
        data = row[0]
        if isinstance(data, str):
            return data.encode()
        return bytes(data) if isinstance(data, (bytes, memoryview)) else None

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
        self.put_raw(key, dump_json(ModuleInfo, info))

    def put_written(self, key: str, data: bytes) -> None:
        self._written[key] = data

    def reopened(self) -> SqliteAnalysisCache:
        other = SqliteAnalysisCache(self.path.parent)
        other._pending = dict(self._pending)
        other._written = dict(self._written)
        return other

    def write_now(self, entries: list[tuple[str, bytes]]) -> bool:
        try:
            # Another run writing: soon given up, the receiver writes them later.
            self._db.execute(f"PRAGMA busy_timeout = {self.WRITE_NOW_WAIT_MS}")
            self._write(entries)
        except sqlite3.Error:  # busy, or damaged: the receiver writes them with its own
            return False
        return True

    def flush(self) -> None:
        self._written.clear()  # on disk: read from there from now on, like what was pending
        if not self._pending:
            return
        for attempt in (0, 1):
            try:
                self._write(self._pending.items())
                break
            except sqlite3.OperationalError as exc:
                if _busy(exc):
                    break  # results are kept for this run only; the next run computes them again
                if attempt:
                    raise self._unusable(exc) from None
                self._rebuild()
            except sqlite3.DatabaseError as exc:
                if attempt:
                    raise self._unusable(exc) from None
                self._rebuild()
        self._pending.clear()

    def _write(self, entries: Iterable[tuple[str, bytes]]) -> None:
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO modules (key, data) VALUES (?, ?)", entries)

    def close(self) -> None:
        self.flush()
        self._db.close()


def _busy(exc: sqlite3.OperationalError) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)
