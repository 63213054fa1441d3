"""Reading and writing the files atompin owns: text with one clear error line, atomic writes."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from atompin.errors import InputError
from atompin.lines import line_numbers


def read_text(path: Path, what: str = "file", missing: str | None = None) -> str:
    """The UTF-8 text of `path`; InputError (one line, exit 2) when it is missing, a folder,
    unreadable, or not UTF-8 (naming the byte offset of the first bad byte).

    `missing`: the line to show when the file does not exist (default: "<path>: no such <what>").
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(missing or f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a {what}; rename or remove it") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")  # a byte order mark (Windows editors save one) is no text
    except UnicodeDecodeError as exc:
        line = line_numbers(data, [exc.start])[exc.start]
        raise InputError(
            f"{path}:{line}: byte {exc.start} (0x{data[exc.start]:02x}) is not UTF-8; save the {what} as UTF-8"
        ) from None


# Temporary files are named `.<name>.<pid>.<random>.tmp`, so a later run can tell a
# leftover of a killed run (its process is gone) from the file of a run still writing.
# (mkstemp's random part is eight letters, digits or '_'; older atompin wrote no pid.)
_TMP_MIDDLE = re.compile(r"^(?:(?P<pid>\d+)\.)?[a-z0-9_]{8}$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def remove_leftovers(path: Path) -> list[Path]:
    """Remove temporary files of `path` left by runs that were killed mid-write; returns them."""
    removed: list[Path] = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        prefix = f".{path.name}."
        if not (entry.name.startswith(prefix) and entry.name.endswith(".tmp")):
            continue
        match = _TMP_MIDDLE.match(entry.name[len(prefix) : -len(".tmp")])
        if match is None:
            continue
        pid = match["pid"]
        if pid is not None and (int(pid) == os.getpid() or _alive(int(pid))):
            continue  # a run still writing
        try:
            if entry.is_file() and not entry.is_symlink():
                entry.unlink()
                removed.append(entry)
        except OSError:
            continue
    return removed


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the new one, never a mix.

    InputError (one line) when `path` is a folder or its folder cannot be written.
    """
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give a file path to write to")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{path.parent}: cannot create the folder ({exc.strerror or exc})") from None
    remove_leftovers(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise InputError(f"{path}: cannot write in {path.parent} ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
