"""TOML files atompin reads (`pairs.toml`, relocation tables, `atompin.lock`):
parsing and validation problems turned into one line that names the file, the
line and the key path.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import tomlkit
from pydantic import ValidationError
from tomlkit.exceptions import ParseError, TOMLKitError

from atompin.errors import InputError
from atompin.lines import text_lines


class KeyProblem(ValueError):
    """A validation problem that knows its key path (relative to where it was raised, or absolute)."""

    def __init__(self, loc: tuple[Any, ...], message: str, relative: bool = False) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message
        self.relative = relative


def parse_toml(text: str, path: Path | str, fix: str = "fix the syntax") -> dict[str, Any]:
    """The TOML document as plain data; InputError naming the line on a syntax error."""
    try:
        return tomlkit.parse(text).unwrap()
    except ParseError as exc:
        raise InputError(f"{path}:{exc.line}: not valid TOML ({exc.args[0] if exc.args else exc}); {fix}") from None
    except TOMLKitError as exc:  # e.g. a key defined twice
        raise InputError(f"{path}:1: not valid TOML ({exc}); {fix}") from None
    except RecursionError:
        raise InputError(f"{path}:1: not valid TOML (nested too deeply); {fix}") from None


def first_problem(
    exc: ValidationError, unknown_key: str = "remove it or check its spelling"
) -> tuple[tuple[Any, ...], str]:
    """The key path and a readable message of the first problem pydantic found."""
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    message = err["msg"].removeprefix("Value error, ")
    ctx_error = err.get("ctx", {}).get("error")
    if isinstance(ctx_error, KeyProblem):
        loc = loc + ctx_error.loc if ctx_error.relative else ctx_error.loc
        message = ctx_error.message
    if err["type"] == "extra_forbidden":
        message = f"unknown key {loc[-1]!r}; {unknown_key}"
    elif err["type"] == "missing":
        message = f"missing required key {loc[-1]!r}"
    return loc, message


def key_path(loc: tuple[Any, ...]) -> str:
    """("pairs", 2, "vllm") -> "pairs[2].vllm"."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def locate(text: str, loc: tuple[Any, ...]) -> int:
    """Best-effort line of a key path in TOML text (1 when it cannot tell).

    Follows the path through table headers (`[a.b]`), the n-th entry of an array of
    tables (`[[a]]`), dotted keys and inline tables (`variables = { ref = 1 }`).
    """
    lines = text_lines(text)
    headers = [h for i, line in enumerate(lines) if (h := _header(i, line)) is not None]
    lo, hi, best = 0, len(lines), 1
    path: list[str] = []
    for part in loc:
        if isinstance(part, int):
            entries = [h for h in headers if lo <= h[0] < hi and h[1] and h[2] == tuple(path)]
            if part >= len(entries):
                break
            lo = entries[part][0]
            hi = entries[part + 1][0] if part + 1 < len(entries) else _section_end(headers, lo, tuple(path), hi)
            best = lo + 1
            continue
        path.append(str(part))
        table = next((h for h in headers if lo <= h[0] < hi and not h[1] and h[2] == tuple(path)), None)
        if table is not None:
            lo, hi, best = table[0], _section_end(headers, table[0], tuple(path), hi), table[0] + 1
            continue
        if any(lo <= h[0] < hi and h[2][: len(path)] == tuple(path) for h in headers):
            continue  # a prefix of a deeper header ([components] of [components.atom])
        key = re.compile(rf"(^|[\s{{,.]){re.escape(str(part))}\"?\s*[=.]|(^|[\s{{,.])\"{re.escape(str(part))}\"\s*[=.]")
        found = next((j for j in range(lo, hi) if key.search(_code(lines[j]))), None)
        if found is None:
            break
        lo, best = found, found + 1
    return best


def _code(line: str) -> str:
    """A line without a trailing comment (good enough for finding keys)."""
    return line.split("#", 1)[0] if '"' not in line else line


def _header(index: int, line: str) -> tuple[int, bool, tuple[str, ...]] | None:
    """(line index, is an array-of-tables entry, dotted key parts) for a table header line."""
    s = line.split("#", 1)[0].strip()
    aot = s.startswith("[[") and s.endswith("]]")
    if not (aot or (s.startswith("[") and s.endswith("]"))):
        return None
    inner = s[2:-2] if aot else s[1:-1]
    parts = tuple(p.strip().strip("\"'") for p in re.findall(r'"[^"]*"|\'[^\']*\'|[^.]+', inner))
    return index, aot, parts


def _section_end(headers: list[tuple[int, bool, tuple[str, ...]]], start: int, path: tuple[str, ...], hi: int) -> int:
    """Where the table that starts at `start` ends: the next header outside it (its subtables stay in)."""
    for line, aot, parts in headers:
        if line <= start or line >= hi:
            continue
        if parts[: len(path)] != path or (aot and parts == path):
            return line
    return hi
