"""Small helpers for dotted names, shared by the provider indexer and the consumer scanner."""

from __future__ import annotations

import ast


def dotted(node: ast.expr) -> str:
    """`a.b.c` -> "a.b.c"; a subscripted base like `Base[T]` -> "Base"; anything else -> ""."""
    if isinstance(node, ast.Subscript):
        node = node.value
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


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


def is_type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` / `if typing.TYPE_CHECKING:`: a block that never runs."""
    return dotted(test).split(".")[-1] == "TYPE_CHECKING"


def split_symbol(symbol: str) -> tuple[str, str]:
    """ "pkg.mod:Cls.meth" -> ("pkg.mod", "Cls.meth"); a bare module -> (module, "")."""
    module, _, qualname = symbol.partition(":")
    return module, qualname


def join_symbol(module: str, path: tuple[str, ...] | list[str]) -> str:
    return f"{module}:{'.'.join(path)}" if path else module
