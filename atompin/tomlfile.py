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
from tomlkit.exceptions import ParseError

from atompin.errors import InputError


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
    """Best-effort line of a key path in TOML text (1 when it cannot tell)."""
    if len(loc) >= 4 and isinstance(loc[1], int) and isinstance(loc[2], str) and isinstance(loc[3], int):
        nested = _locate_nested(text.splitlines(), loc)
        if nested:
            return nested
    lines = text.splitlines()
    keys = [k for k in loc if isinstance(k, str)]
    index = next((k for k in loc if isinstance(k, int)), None)
    if not keys:
        return 1
    top = keys[0]
    start, end = 0, len(lines)
    header_line = 0
    # Find the table (or n-th array-of-tables entry) that holds the key.
    count = -1
    for i, line in enumerate(lines):
        s = line.strip()
        if index is not None and s == f"[[{top}]]":
            count += 1
            if count == index:
                start, header_line = i + 1, i + 1
                end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("[")), len(lines))
                break
        elif index is None and len(keys) > 1 and s in (f"[{top}.{keys[1]}]", f'[{top}."{keys[1]}"]'):
            start, header_line = i + 1, i + 1
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("[")), len(lines))
            keys = keys[2:] or keys[1:2]
            break
        elif (
            index is None
            and len(keys) == 1
            and (s == f"[{top}]" or s.startswith(f"{top} =") or s.startswith(f"[{top}."))
        ):
            return i + 1
    wanted = keys[-1] if index is None else (keys[1] if len(keys) > 1 else None)
    if wanted:
        for j in range(start, end):
            if re.match(rf"^\s*\"?{re.escape(str(wanted))}\"?\s*=", lines[j]):
                return j + 1
    return header_line or 1


def _locate_nested(lines: list[str], loc: tuple[Any, ...]) -> int:
    """("checks", 0, "accept", 1, "reason"): the line in the 2nd [[checks.accept]] of the 1st [[checks]]."""
    top, index, sub, sub_index = loc[:4]
    count = sub_count = -1
    inside = False
    for i, line in enumerate(lines):
        s = line.strip()
        if s == f"[[{top}]]":
            count += 1
            inside = count == index
        elif inside and s == f"[[{top}.{sub}]]":
            sub_count += 1
            if sub_count == sub_index:
                wanted = next((k for k in loc[4:] if isinstance(k, str)), None)
                end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("[")), len(lines))
                for j in range(i + 1, end):
                    if wanted and re.match(rf"^\s*\"?{re.escape(wanted)}\"?\s*=", lines[j]):
                        return j + 1
                return i + 1
        elif s.startswith("[") and not s.startswith(f"[[{top}."):
            inside = False
    return 0
