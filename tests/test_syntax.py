"""The syntax helpers every visitor shares."""

from __future__ import annotations

import ast
from pathlib import Path

import atompin
from atompin.analysis.syntax import walk


def test_walk_gives_the_nodes_of_ast_walk_in_its_order() -> None:
    # atompin's own sources: every kind of statement and expression the visitors meet
    for path in sorted(Path(atompin.__file__).parent.rglob("*.py")):
        tree = ast.parse(path.read_bytes())
        assert [id(n) for n in walk(tree)] == [id(n) for n in ast.walk(tree)], path
    # a subtree, and a node without children
    expr = ast.parse("f(a, *b, k=c)[0].x", mode="eval").body
    assert [id(n) for n in walk(expr)] == [id(n) for n in ast.walk(expr)]
    name = ast.Name("x", ast.Load())
    assert list(walk(name)) == [name, name.ctx]
