"""Which definitions a change touched: a symbol's `def`, `class` or assignment compared
between two versions of one file (parsed, never run). `bisect` uses it to say which
files of the commit it found hold each finding's symbol.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from atompin.analysis.limits import parse_limited
from atompin.analysis.syntax import target_names


def _bindings(body: list[ast.stmt]) -> Iterator[tuple[str, ast.stmt]]:
    """(name, statement) for what a block defines, looking inside if/try/with blocks
    (version gates, import fallbacks) but not inside functions or classes."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield stmt.name, stmt
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                for name in target_names(target):
                    yield name, stmt
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            yield stmt.target.id, stmt
        elif isinstance(stmt, ast.If):
            yield from _bindings(stmt.body + stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from _bindings(stmt.body + [s for h in stmt.handlers for s in h.body] + stmt.orelse + stmt.finalbody)
        elif isinstance(stmt, ast.With):
            yield from _bindings(stmt.body)


def definitions(source: bytes, qualname: str) -> list[str]:
    """Every definition of `qualname` ("f", "Cls.meth", "Cls.Inner.x") in `source`, each as
    an AST dump (comments and layout do not count); [] when none, or the file does not parse."""
    try:
        tree = parse_limited(source)
    except (SyntaxError, ValueError):
        return []
    nodes: list[ast.stmt] = [tree]  # type: ignore[list-item]
    for part in qualname.split("."):
        bodies = [n.body for n in nodes if isinstance(n, (ast.Module, ast.ClassDef))]
        nodes = [stmt for body in bodies for name, stmt in _bindings(body) if name == part]
    try:
        return [ast.dump(node) for node in nodes]
    except RecursionError:  # hostile nesting: compare by line span instead of structure
        return [f"{node.lineno}-{getattr(node, 'end_lineno', node.lineno)}" for node in nodes]


def definition_changed(before: bytes | None, after: bytes | None, qualname: str) -> bool:
    """Whether `qualname`'s definition differs between two versions of a file (None: the file
    does not exist on that side): added, removed, or written differently."""
    old = definitions(before, qualname) if before is not None else []
    new = definitions(after, qualname) if after is not None else []
    return old != new
