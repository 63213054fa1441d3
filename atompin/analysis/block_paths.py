"""Where a statement sits in its function: the compound statements around it, and which of
their blocks holds it. Pure.

Two statements of one function can be told apart by these paths: whether one runs on the way
to the other, or never with it (the two branches of one `if`), and which `if`s decide one but
not the other (`ifs_apart`). `keyword_tables` reads the keys a dict gets before a call so;
`output_buffers` the returns of a replacement that leave a buffer unwritten.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from atompin.analysis.syntax import is_type_checking, runtime_bodies
from atompin.analysis.syntax import walk as every_node

# Each compound statement around a statement, with which of its bodies (the index in
# `runtime_bodies`; an `if`'s body 0, its `else` 1) holds it.
Path = tuple[tuple[ast.stmt, int], ...]
# The `if`s around a statement that another is not in, each with the side it is on (True: the body).
Ifs = tuple[tuple[ast.If, bool], ...]


def placed(body: list[ast.stmt], path: Path = ()) -> Iterator[tuple[ast.stmt, Path]]:
    """Every statement under `body` with the compound statements around it, in source order;
    not entering nested functions or classes."""
    for stmt in body:
        yield stmt, path
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        blocks = [stmt.body, stmt.orelse] if isinstance(stmt, ast.If) else runtime_bodies(stmt)
        for i, block in enumerate(blocks):
            yield from placed(block, (*path, (stmt, i)))


def encloses(outer: Path, inner: Path) -> bool:
    """Is a statement at `inner` in the block a statement at `outer` is in, or one nested there?"""
    return inner[: len(outer)] == outer


def ifs_apart(stmt: Path, other: Path) -> Ifs | bool | None:
    """The `if`s around a statement that are not around `other` (each with its side); False when
    the statement sits in another branch of an `if` that `other` is in (they never both run);
    None when something else is around it that `other` is not in (a loop, a try, a `match`)."""
    common = 0
    while common < len(stmt) and common < len(other) and stmt[common] == other[common]:
        common += 1
    rest = stmt[common:]
    if rest and common < len(other) and rest[0][0] is other[common][0]:
        return False if isinstance(rest[0][0], ast.If) else None
    ifs = []
    for block, body in rest:
        if isinstance(block, (ast.With, ast.AsyncWith)):
            continue
        if not isinstance(block, ast.If) or is_type_checking(block.test):
            return None
        ifs.append((block, body == 0))
    return tuple(ifs)


def before(stmt: ast.stmt, node: ast.AST) -> bool:
    """Does `stmt` start before `node` in the source?"""
    return (stmt.lineno, stmt.col_offset) < (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def own_nodes(stmt: ast.stmt) -> list[ast.AST]:
    """The nodes of a statement that are not in the blocks it holds (an `if`'s test, not its body)."""
    if not runtime_bodies(stmt) and not isinstance(stmt, ast.If):
        return every_node(stmt)
    skip = {"body", "orelse", "finalbody", "handlers", "cases"}
    return [n for field in stmt._fields if field not in skip for n in _walk_field(getattr(stmt, field))]


def _walk_field(value: object) -> list[ast.AST]:
    items = value if isinstance(value, list) else [value]
    return [n for item in items if isinstance(item, ast.AST) for n in every_node(item)]
