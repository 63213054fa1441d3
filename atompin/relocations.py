"""Versioned relocation tables: `relocations/<provider>/<version>.toml`.

Each table names the provider package, a `packaging` specifier of the provider
versions it applies to, and entries `old` symbol -> `new` symbol with the
expected parameters at the new place. Tables are chosen per pair by the
provider's detected version; their hashes go into the lock.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import tomlkit
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from atompin.errors import InputError
from atompin.files import read_text
from atompin.lines import text_lines
from atompin.model import Relocation
from atompin.tomlfile import first_problem, key_path, locate, parse_toml

_SYMBOL = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*)?$")


def _check_symbol(value: str) -> str:
    if not _SYMBOL.match(value) or ":" not in value:
        raise ValueError(
            f"{value!r} is not a symbol; write module:qualname, e.g. vllm.v1.core.kv_cache_utils:get_kv_cache_groups"
        )
    return value


class _Entry(BaseModel):
    """One `[[moved]]` entry as written; validated, then handed on as a `model.Relocation`."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    old: str
    new: str
    params: list[str] | None = None
    note: str = ""

    @field_validator("old", "new")
    @classmethod
    def _symbol(cls, value: str) -> str:
        return _check_symbol(value)

    def relocation(self) -> Relocation:
        params = tuple(self.params) if self.params is not None else None
        return Relocation(old=self.old, new=self.new, params=params, note=self.note)


class RelocationTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    package: str
    applies: str
    entries: list[_Entry] = Field(default_factory=list, alias="moved")

    @field_validator("applies")
    @classmethod
    def _applies(cls, value: str) -> str:
        try:
            SpecifierSet(value)
        except InvalidSpecifier:
            raise ValueError(f'{value!r} is not a version specifier; write e.g. ">=0.33"') from None
        return value

    @property
    def moved(self) -> list[Relocation]:
        """The table's entries, as the analysis takes them."""
        return [entry.relocation() for entry in self.entries]

    def applies_to(self, version: str) -> bool:
        try:
            return SpecifierSet(self.applies).contains(Version(version), prereleases=True)
        except InvalidVersion:
            return False


@dataclass(frozen=True)
class LoadedTable:
    path: str  # relative to the manifest's folder, POSIX
    digest: str
    table: RelocationTable


def parse_table(text: str, path: str) -> RelocationTable:
    data = parse_toml(text, path)
    try:
        return RelocationTable.model_validate(data)
    except ValidationError as exc:
        loc, message = first_problem(exc, unknown_key="entries take old, new, params and note")
        raise InputError(f"{path}:{_locate_entry(text, loc)}: {key_path(loc)}: {message}") from None


def _locate_entry(text: str, loc: tuple[object, ...]) -> int:
    if len(loc) >= 2 and loc[0] == "moved" and isinstance(loc[1], int):
        headers = [i for i, line in enumerate(text_lines(text)) if line.strip() == "[[moved]]"]
        if loc[1] < len(headers):
            start = headers[loc[1]]
            key = loc[2] if len(loc) > 2 else None
            for j, line in enumerate(text_lines(text)[start:], start=start):
                if key and re.match(rf"^\s*{key}\s*=", line):
                    return j + 1
            return start + 1
    return locate(text, loc)


def load_tables(folder: Path, base: Path, package: str) -> list[LoadedTable]:
    """Every table under `folder/<package>/` (sorted by path); bad tables raise InputError."""
    out: list[LoadedTable] = []
    root = folder / package
    if not root.is_dir():
        return out
    for path in sorted(root.glob("*.toml")):
        rel = path.relative_to(base).as_posix() if path.is_relative_to(base) else path.as_posix()
        text = read_text(path, "relocation table")
        table = parse_table(text, rel)
        if table.package != package:
            raise InputError(
                f"{rel}:{locate(text, ('package',))}: package = {table.package!r}, but the table lives under {package}/"
            )
        out.append(LoadedTable(rel, "sha256:" + hashlib.sha256(text.encode()).hexdigest(), table))
    return out


def applicable(tables: list[LoadedTable], version: str) -> list[LoadedTable]:
    return [t for t in tables if version and t.table.applies_to(version)]


def manifest_tables(folder: Path, base: Path, packages: list[str]) -> dict[str, list[LoadedTable]]:
    """The tables of every provider package named in a manifest, by package."""
    return {package: load_tables(folder, base, package) for package in sorted(set(packages))}


def digests(tables: dict[str, list[LoadedTable]]) -> dict[str, str]:
    return dict(sorted((t.path, t.digest) for ts in tables.values() for t in ts))


def render_draft(package: str, applies: str, entries: list[Relocation], removed: list[str], header: list[str]) -> str:
    """A table in the relocations/ format, for review before it is committed."""
    doc = tomlkit.document()
    for line in header:
        doc.add(tomlkit.comment(line))
    doc.add("package", package)
    doc.add("applies", applies)
    moved = tomlkit.aot()
    for entry in entries:
        t = tomlkit.table()
        t.add("old", entry.old)
        t.add("new", entry.new)
        if entry.params is not None:
            t.add("params", list(entry.params))
        if entry.note:
            t.add("note", entry.note)
        moved.append(t)
    if entries:
        doc.add("moved", moved)
    text = tomlkit.dumps(doc)
    if removed:
        text += "\n# Gone at the new release, no candidate found (removed, or moved out of the package):\n"
        text += "".join(f"#   {symbol}\n" for symbol in removed)
    return text


def entries_from(path: Path, package: str, version: str) -> list[tuple[str, Relocation]]:
    """(table, entry) pairs from one table file, or from a folder's tables that apply to `version`."""
    if not path.is_dir():  # a table (a missing path is an error, not an empty set of tables)
        table = parse_table(read_text(path, "relocation table"), str(path))
        return [(str(path), entry) for entry in table.moved]
    tables = load_tables(path, path, package)
    chosen = applicable(tables, version) if version else tables
    return [(f"{path.name}/{t.path}", entry) for t in chosen for entry in t.table.moved]
