"""`atompin export`: a locked pair as build inputs (bake override, env lines, GitHub outputs, JSON)."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path
from typing import Any

from atompin.errors import InputError
from atompin.lockfile import LockedPair


def bake(variables: dict[str, str]) -> str:
    """A docker buildx bake override: `docker buildx bake -f rocm-bake.hcl -f atompin.bake.json`."""
    return json.dumps({"variable": {k: {"default": v} for k, v in variables.items()}}, indent=2, sort_keys=True) + "\n"


def env(variables: dict[str, str]) -> str:
    """`NAME=value` lines (for --build-arg or an env file). A value with characters a shell
    would read (space, quote, `$`...) is single-quoted; names and values with line breaks
    or other control characters are refused (they would add lines)."""
    lines = []
    for name, value in sorted(variables.items()):
        _check_variable(name, value, multiline=False)
        lines.append(f"{name}={value if _PLAIN.match(value) else shlex.quote(value)}\n")
    return "".join(lines)


def github(variables: dict[str, str]) -> str:
    """Lines for `$GITHUB_OUTPUT`: `name=value`, or GitHub's heredoc form (`name<<DELIMITER`)
    for a value that holds a line break, with a delimiter the value does not contain."""
    lines = []
    for name, value in sorted(variables.items()):
        _check_variable(name, value, multiline=True)
        key = name.lower()
        if "\n" in value or "\r" in value:
            delimiter = "ATOMPIN_EOF_" + hashlib.sha256(value.encode()).hexdigest()[:16]
            while delimiter in value:
                delimiter += "_"
            lines.append(f"{key}<<{delimiter}\n{value}\n{delimiter}\n")
        else:
            lines.append(f"{key}={value}\n")
    return "".join(lines)


# Values that mean the same to a shell, docker's env files and GitHub, unquoted.
_PLAIN = re.compile(r"^[A-Za-z0-9_./:@+=,%~-]*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_variable(name: str, value: str, multiline: bool) -> None:
    if not _NAME.match(name):
        raise InputError(f"export: {name!r} is not a variable name; fix variables in pairs.toml")
    bad = [c for c in value if (ord(c) < 0x20 and (not multiline or c not in "\r\n")) or ord(c) == 0x7F]
    if bad:
        raise InputError(
            f"export: the value of {name} holds a control character ({bad[0]!r}); the lock is damaged: "
            "run `atompin lock`"
        )


def full_json(pair: LockedPair, variables: dict[str, str]) -> str:
    data: dict[str, Any] = {"pair": pair.model_dump(mode="json", by_alias=True), "variables": variables}
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


FORMATS = ("bake", "env", "github", "json")


def render(format: str, pair: LockedPair, variables: dict[str, str]) -> str:
    """A locked pair's pins in one of `FORMATS`."""
    if format == "json":
        return full_json(pair, variables)
    return {"bake": bake, "env": env, "github": github}[format](variables)


def export_pair(
    manifest_path: Path, lock_path: Path | None, pair: str | None, format: str, allow_stale: bool = False
) -> str:
    """`atompin export`: the pins of a locked pair (the named one, or the only one) in `format`.
    A stale lock is refused (StaleLockError, exit 1) unless `allow_stale`."""
    from atompin import lockfile
    from atompin.manifest import load_manifest
    from atompin.verify import pin_variables, require_current

    manifest, _ = load_manifest(manifest_path)
    path = lock_path or lockfile.default_path(manifest_path)
    lock = lockfile.read(path)
    locked = lockfile.select_pair(lock, pair)
    if not allow_stale:
        require_current(lock, path, manifest, manifest_path, locked.name)
    return render(format, locked, pin_variables(locked, manifest))


def write_export(path: Path, format: str, text: str) -> None:
    """Write an export to `path`: `github` appends (`-o "$GITHUB_OUTPUT"` keeps the outputs
    earlier steps wrote), every other format replaces the file atomically."""
    from atompin.files import write_atomically

    if format != "github":
        write_atomically(path, text)
        return
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give a file path to write to")
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise InputError(f"{path}: cannot append ({exc.strerror or exc})") from None
