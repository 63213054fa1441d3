"""Small helpers for module and symbol names as strings ("pkg.mod", "pkg.mod:Cls.meth").

Helpers that read syntax trees are in `syntax`.
"""

from __future__ import annotations

import re


def in_package(module: str, package: str) -> bool:
    """Is `module` the package `package` or inside it? ("a.b" is in "a"; "ab" is not.)"""
    return module == package or module.startswith(package + ".")


def absolute_module(current: str, is_package: bool, level: int, module: str | None) -> str:
    """Resolve `from ..x import y` written in module `current` to an absolute module name."""
    if level == 0:
        return module or ""
    parts = current.split(".")
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    base = ".".join(parts)
    if module:
        return f"{base}.{module}" if base else module
    return base


def quoted(name: str) -> tuple[bytes, bytes]:
    """`"name"` and `'name'` as bytes: how code writes a name it looks up by string (a getattr)."""
    word = name.encode()
    return b'"' + word + b'"', b"'" + word + b"'"


def word_pattern(name: str) -> re.Pattern[bytes]:
    """`name` as a whole word in bytes (no word character on either side): a use of an identifier."""
    return re.compile(rb"(?<!\w)" + re.escape(name.encode()) + rb"(?!\w)")


def writes_as_string(text: bytes, name: str) -> bool:
    """Does `text` write `name` as a string literal (`"name"` or `'name'`)?"""
    double, single = quoted(name)
    return double in text or single in text


def names_in_string(text: str, name: str) -> bool:
    """Is the string `name`, or a dotted path ending in it (`"pkg.mod.name"`, `"pkg.mod:name"`):
    how code looks a name up by string (`getattr(m, "name")`, a patch target's path)?"""
    return text == name or text.endswith((f".{name}", f":{name}"))


def split_symbol(symbol: str) -> tuple[str, str]:
    """ "pkg.mod:Cls.meth" -> ("pkg.mod", "Cls.meth"); a bare module -> (module, "")."""
    module, _, qualname = symbol.partition(":")
    return module, qualname


def join_symbol(module: str, path: tuple[str, ...] | list[str]) -> str:
    return f"{module}:{'.'.join(path)}" if path else module
