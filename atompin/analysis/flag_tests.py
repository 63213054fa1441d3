"""Tests of the consumer's own flags (`if _use_aiter:`, `if _is_cuda or _is_hip:`), read as what
holds in each branch, and whether what holds at one place rules out another.

A branch's facts are clauses (an `and` of `or`s) of literals: a name as written (`_use_aiter`,
`envs.X`) and whether it is true. Only names, `not`, and one level of `and` / `or` of them are
read; any other test says nothing. The checks use them for a name that one branch binds to the
provider's function and another to something else (sglang binds `rms_norm` to aiter's under
`if _use_aiter:` and to vLLM's under `elif _is_hip:`): a call in the `else` of `if _use_aiter:`
gets vLLM's, one under `if _use_aiter:` never does.
"""

from __future__ import annotations

import ast

from atompin.analysis.syntax import dotted

Literal = tuple[str, bool]
Clauses = tuple[frozenset[Literal], ...]


def _literal(node: ast.expr) -> Literal | None:
    """`x` or `not x` for a name or attribute chain `x`; None for anything else."""
    truth = True
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node, truth = node.operand, not truth
    name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else ""
    return (name, truth) if name else None


def branch_clauses(test: ast.expr) -> tuple[Clauses, Clauses]:
    """What holds in the body of `if test:` and in its `else`, as clauses (both empty when the
    test is not made of the consumer's flags)."""
    if isinstance(test, ast.BoolOp):
        literals = [_literal(value) for value in test.values]
        if any(literal is None for literal in literals):
            return (), ()
        known = [literal for literal in literals if literal is not None]
        negated = [(name, not truth) for name, truth in known]
        if isinstance(test.op, ast.And):  # every one holds; in the else, one of them fails
            return tuple(frozenset([each]) for each in known), (frozenset(negated),)
        return (frozenset(known),), tuple(frozenset([each]) for each in negated)
    literal = _literal(test)
    if literal is None:
        return (), ()
    name, truth = literal
    return (frozenset([literal]),), (frozenset([(name, not truth)]),)


def excludes(here: Clauses, there: Clauses) -> bool:
    """Can what holds `here` and what holds `there` not both hold? (Told from the single-literal
    clauses of one side, each clause of the other: all of its literals contradicted.)"""

    def one_way(units_from: Clauses, clauses: Clauses) -> bool:
        units = {next(iter(clause)) for clause in units_from if len(clause) == 1}
        return any(all((name, not truth) in units for name, truth in clause) for clause in clauses)

    return one_way(here, there) or one_way(there, here)
