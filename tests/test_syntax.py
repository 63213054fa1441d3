"""The syntax helpers every visitor shares."""

from __future__ import annotations

import ast
from pathlib import Path

import atompin
from atompin.analysis.syntax import walk


def _ast_walk(node: ast.AST) -> list[int]:
    """ast.walk's nodes, expression contexts left out (as `walk` leaves them)."""
    return [id(n) for n in ast.walk(node) if not isinstance(n, ast.expr_context)]


def test_walk_gives_the_nodes_of_ast_walk_in_its_order() -> None:
    # atompin's own sources: every kind of statement and expression the visitors meet
    for path in sorted(Path(atompin.__file__).parent.rglob("*.py")):
        tree = ast.parse(path.read_bytes())
        assert [id(n) for n in walk(tree)] == _ast_walk(tree), path
    # a subtree, and a node without children
    expr = ast.parse("f(a, *b, k=c)[0].x", mode="eval").body
    assert [id(n) for n in walk(expr)] == _ast_walk(expr)
    name = ast.Name("x", ast.Load())
    assert walk(name) == [name]


def test_walk_reaches_every_kind_of_node() -> None:
    # Fields named like the leaves (`name`, `value`, `names`) that hold nodes elsewhere.
    source = """
import a.b as c
from .m import (x as y, z)
global g
try:
    pass
except E as e:
    pass
match p:
    case C(1, k=2) | None | [1, *others] | {"k": v, **kw} as bound:
        pass
f"{a!r:>{w}}"
async def f(x: int = 1, /, *a: T, k, **kw) -> R:
    async for i in b: ...
    async with c as (d, e.f): ...
    l = [y async for y in z if y]
    lambda q=1: q
    t: T = 1
    v += 1
    del o.p, q[r]
@deco(arg)
class K(B, metaclass=M): pass
"""
    tree = ast.parse(source)
    assert [id(n) for n in walk(tree)] == _ast_walk(tree)


def test_the_class_of_a_collection_s_elements():
    from atompin.analysis.syntax import dotted, element_type

    def of(annotation: str) -> str:
        found = element_type(ast.parse(annotation, mode="eval").body)
        return dotted(found) if found is not None else ""

    for annotation in ("list[C]", "List[C]", "typing.Sequence[C]", "'Iterable[C]'", "tuple[C, ...]", "set[C] | None"):
        assert of(annotation) == "C", annotation
    assert of("Optional[list[m.C]]") == "m.C"
    # Not one class for every element: a mapping, a fixed tuple, a union, a bare or nested collection.
    for annotation in ("dict[str, C]", "tuple[C, D]", "list[C | D]", "list", "C", "list[list[C]]", "tuple[C]"):
        assert of(annotation) == "", annotation


def test_the_class_of_a_mapping_s_values():
    from atompin.analysis.syntax import dotted, mapped_type

    def of(annotation: str) -> str:
        found = mapped_type(ast.parse(annotation, mode="eval").body)
        return dotted(found) if found is not None else ""

    for annotation in ("dict[str, C]", "Dict[int, C]", "typing.Mapping[str, C]", "'defaultdict[str, C]'"):
        assert of(annotation) == "C", annotation
    assert of("Optional[dict[str, m.C]]") == "m.C"
    for annotation in ("dict[str, C | D]", "dict[str, list[C]]", "list[C]", "dict", "dict[C]", "C"):
        assert of(annotation) == "", annotation


def test_a_setattr_in_a_loop_over_literal_names_sets_just_those():
    """ai-dynamo's scheduler drops its benchmark state with `for attr in ("_a", "_b"):
    setattr(self, attr, None)`: the class sets `_a` and `_b`, not any name."""
    from atompin.analysis.syntax import instance_assignments, literal_loops

    source = """
class C:
    def drop(self, extra):
        for attr in ("_a", "_b"):
            if hasattr(self, attr):
                setattr(self, attr, None)

    def any_name(self, names):
        for name in names:
            setattr(self, name, None)

    def rebound(self):
        for key in ("_c",):
            pass
        key = "other"
        setattr(self, key, 1)
"""
    [cls] = ast.parse(source).body
    assert sorted(instance_assignments(cls)) == ["*", "_a", "_b"]  # type: ignore[arg-type]
    drop, any_name, rebound = cls.body  # type: ignore[attr-defined]
    assert literal_loops(drop) == {"attr": ("_a", "_b")}
    assert literal_loops(any_name) == {}
    assert literal_loops(rebound) == {}  # bound twice: not only the loop's
    # Without the open-ended method, nothing but the two names.
    cls.body = [drop]  # type: ignore[attr-defined]
    assert sorted(instance_assignments(cls)) == ["_a", "_b"]  # type: ignore[arg-type]
