"""Where a function's parameter is known to be None, or known not to be, from its `is None` tests.

vLLM's `RequestState.make_request_output` returns early when `pooling_output is not None`, so the
5-argument `self._new_request_output(...)` after it runs only when `pooling_output` is None.
vllm-omni's override calls `super().make_request_output(...)` only under `if ... and
pooling_output is not None:`, passing that parameter on: the provider's later call never runs
for it. Told from three shapes of test on a parameter never bound again in the function:

- the body of `if p is None:` (p is None) or `if p is not None:` (p is not None), also when the
  test is an `and` holding that comparison;
- the `else` of such an `if` whose test is that comparison alone (the opposite);
- the rest of the block after such an `if` with no `else` whose body ends in `return` or `raise`
  (the opposite).
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from atompin.analysis.syntax import runtime_bodies, walk


@dataclass(frozen=True)
class KnownNone:
    """Lines `first`..`last` of a function where its parameter `name` is None (`none`) or is not."""

    first: int
    last: int
    name: str
    none: bool

    def holds_at(self, line: int) -> bool:
        return self.first <= line <= self.last


def known_none(
    function: ast.FunctionDef | ast.AsyncFunctionDef, lines: Collection[int] | None = None
) -> list[KnownNone]:
    """Every range of `function`'s lines where one of its parameters is known None or not None
    (with `lines`, only those holding at one of them: the rest of the function is then read only
    when one does)."""
    a = function.args
    own = (*a.posonlyargs, *a.args, *a.kwonlyargs)
    out: list[KnownNone] = []
    _block(function.body, {p.arg for p in own}, out)
    if lines is not None:
        out = [k for k in out if any(k.holds_at(line) for line in lines)]
    if not out:
        return out
    # A parameter bound again (assigned, a loop target, `del`), or shadowed by a nested function's
    # or lambda's own parameter, may hold anything later.
    rebound: set[str] = set()
    for node in walk(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            rebound.add(node.id)
        elif isinstance(node, ast.arg) and node not in own:
            rebound.add(node.arg)
    return [k for k in out if k.name not in rebound]


def tests_for_none(test: ast.expr, params: AbstractSet[str]) -> bool:
    """Might `test` tell one of `params` None (`p is None`, `p is not None`, or an `and` holding
    one)? Asked of every `if` before `known_none` reads a function again."""
    values = test.values if isinstance(test, ast.BoolOp) else [test]
    return any(_compared(v, params) is not None for v in values)


def _block(body: list[ast.stmt], params: AbstractSet[str], out: list[KnownNone]) -> None:
    for i, stmt in enumerate(body):
        if isinstance(stmt, ast.If):
            alone = _compared(stmt.test, params)
            for name, none in [alone] if alone else _conjuncts(stmt.test, params):
                out.append(KnownNone(stmt.body[0].lineno, _last_line(stmt.body), name, none))
            if alone:
                name, none = alone
                if stmt.orelse:
                    out.append(KnownNone(stmt.orelse[0].lineno, _last_line(stmt.orelse), name, not none))
                elif _exits(stmt.body) and i + 1 < len(body):
                    out.append(KnownNone(body[i + 1].lineno, _last_line(body), name, not none))
        for nested in runtime_bodies(stmt):
            if nested:
                _block(nested, params, out)


def _compared(test: ast.expr, params: AbstractSet[str]) -> tuple[str, bool] | None:
    """`p is None` -> (p, True), `p is not None` -> (p, False), p a parameter; None otherwise."""
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.left, ast.Name)
        and test.left.id in params
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        return test.left.id, isinstance(test.ops[0], ast.Is)
    return None


def _conjuncts(test: ast.expr, params: AbstractSet[str]) -> list[tuple[str, bool]]:
    """The comparisons of an `and` test: each holds in the body."""
    if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
        return []
    return [found for value in test.values if (found := _compared(value, params)) is not None]


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def _last_line(body: list[ast.stmt]) -> int:
    last = body[-1]
    return last.end_lineno or last.lineno
