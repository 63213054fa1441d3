"""A dict a function fills for a call's `**`, and the keywords that call passes with it. Pure.

vllm-ascend builds the arguments of a provider call this way, and adds the
one whose name a vLLM release changed under a version gate:

    kwargs = dict(kv_cache_config=config, max_model_len=n)
    if vllm_versionis_name("0.24.0"):
        kwargs["max_num_batched_tokens"] = budget
    else:
        kwargs["max_in_flight_tokens"] = budget
    return get_kv_cache_coordinator(**kwargs)

The keys are known only when nothing else can change the dict: the function
assigns the name once, from a dict literal or `dict(k=v, ...)` with every key
written out, and otherwise only adds keys written out (`kw["k"] = v`,
`kw.update(k=v)`) before the call, or unpacks it. A key added inside an `if`
the call is not in is passed only where that `if` goes the way it was added
in (`KeywordAdd.ifs`); the scanner says when that is (a version gate, say).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from atompin.analysis.block_paths import before, encloses, ifs_apart, own_nodes, placed
from atompin.analysis.syntax import function_body, is_name, single_assignment
from atompin.analysis.syntax import walk as every_node

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# More `if`s than this under a call's keyword dict make too many variants to list: not followed.
MAX_BRANCHES = 3
_Test = TypeVar("_Test", bound=Hashable)


@dataclass(frozen=True)
class KeywordAdd:
    """A key the dict gets, and where: the statement, and the `if`s around it that the call is not
    in, each with the side it is on (True: the body). No `if`s: the call always passes it."""

    key: str
    statement: ast.stmt
    ifs: tuple[tuple[ast.If, bool], ...] = ()


def keyword_adds(
    function: ast.FunctionDef | ast.AsyncFunctionDef, name: str, call: ast.Call
) -> list[KeywordAdd] | None:
    """The keys local `name` holds when `call` unpacks it (`call(**name)`), in the order added; None
    when they are not known (the dict is passed on, changed otherwise, added to after the call, in
    a loop or a try, or by a key not written out)."""
    nodes = every_node(function)
    inner = [n for n in nodes if isinstance(n, _SCOPES) and n is not function]
    if any(_names(n, name) for n in inner):
        return None  # a nested scope reads it: when is not known
    statements = list(placed(function_body(function)))
    call_at = next(((stmt, path) for stmt, path in statements if any(n is call for n in own_nodes(stmt))), None)
    if call_at is None:
        return None
    call_stmt, call_path = call_at
    uses = sum(1 for n in nodes if isinstance(n, ast.Name) and n.id == name)
    unpacks = sum(
        1
        for n in nodes
        if isinstance(n, ast.keyword) and n.arg is None and isinstance(n.value, ast.Name) and n.value.id == name
    )
    made: ast.stmt | None = None
    adds: list[KeywordAdd] = []
    recognized = unpacks
    for stmt, path in statements:
        keys = _made(stmt, name)
        if keys is not None:
            if made is not None or not encloses(path, call_path) or not before(stmt, call):
                return None
            made, recognized = stmt, recognized + 1
            adds += [KeywordAdd(key, stmt) for key in keys]
            continue
        keys = _added(stmt, name)
        if keys is None:
            continue
        recognized += 1
        if made is None or not before(stmt, call) or stmt is call_stmt:
            return None
        ifs = ifs_apart(path, call_path)
        if ifs is None:
            return None
        if not isinstance(ifs, bool):
            adds += [KeywordAdd(key, stmt, ifs) for key in keys]
    if made is None or recognized != uses:
        return None
    return adds


def passed_on_unchanged(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The name of `function`'s `**` parameter when the function hands it on as its caller filled
    it: unpacked into a call (`f(**kw)`) at least once, and otherwise only read (`kw[k]`,
    `kw.get(k)`, `k in kw`); not rebound, changed (`kw.pop(k)`, `kw[k] = v`), passed as a value or
    seen by a nested scope. None otherwise. vllm-omni's `_start_api_server_process_manager(*,
    cleanup_timeout, **manager_kwargs)` passes what its caller gives on to
    `APIServerProcessManager.__init__(manager, **manager_kwargs)`."""
    if function.args.kwarg is None:
        return None
    name = function.args.kwarg.arg
    kept: set[int] = set()  # the uses of the name that leave the dict as it is
    unpacked = False
    nodes = every_node(function)
    for n in nodes:
        if isinstance(n, _SCOPES) and n is not function and _names(n, name):
            return None
        if isinstance(n, ast.keyword) and n.arg is None and is_name(n.value, name):
            kept.add(id(n.value))
            unpacked = True
        elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and is_name(n.value, name):
            kept.add(id(n.value))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and is_name(n.func.value, name):
            if n.func.attr in _READS:
                kept.add(id(n.func.value))
        elif isinstance(n, ast.Compare) and all(isinstance(op, (ast.In, ast.NotIn)) for op in n.ops):
            kept.update(id(c) for c in n.comparators if is_name(c, name))
    uses = [n for n in nodes if isinstance(n, ast.Name) and n.id == name]
    return name if unpacked and all(id(n) in kept for n in uses) else None


# The methods of a dict that leave it as it is.
_READS = frozenset({"get", "keys", "values", "items", "copy"})


def keyword_variants(
    unconditional: Sequence[str],
    conditional: Sequence[tuple[str, tuple[_Test, ...]]],
    atom: Callable[[_Test], tuple[_Test, bool]],
    make: Callable[[_Test, bool], _Test],
) -> list[tuple[tuple[str, ...], tuple[_Test, ...]]] | None:
    """Every way the keys can be passed: for each outcome of the tests the conditional keys are
    added under, the keys passed then and the conditions of that outcome. `atom(c)` is a
    condition's test and the outcome it needs; `make(test, outcome)` the condition again. None
    when there are more than `MAX_BRANCHES` tests."""
    tests = list(dict.fromkeys(atom(c)[0] for _, conditions in conditional for c in conditions))
    if len(tests) > MAX_BRANCHES:
        return None
    out = []
    for outcome in itertools.product((True, False), repeat=len(tests)):
        holds = dict(zip(tests, outcome))
        keys = [*unconditional]
        keys += [k for k, conditions in conditional if all(holds[atom(c)[0]] is atom(c)[1] for c in conditions)]
        out.append((tuple(dict.fromkeys(keys)), tuple(make(t, v) for t, v in holds.items())))
    return out


def _names(node: ast.AST, name: str) -> int:
    return sum(1 for n in every_node(node) if isinstance(n, ast.Name) and n.id == name)


def _made(stmt: ast.stmt, name: str) -> list[str] | None:
    """The keys of `name = {...}` or `name = dict(k=v, ...)` (every key written out); None for any
    other statement."""
    assigned = single_assignment(stmt)
    if assigned is None:
        return None
    target, value = assigned
    if not (isinstance(target, ast.Name) and target.id == name) or _names(value, name):
        return None
    return _literal_keys(value)


def _literal_keys(value: ast.expr) -> list[str] | None:
    if isinstance(value, ast.Dict):
        keys = [k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        return keys if len(keys) == len(value.keys) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" and not value.args:
        keys = [k.arg for k in value.keywords if k.arg]
        return keys if len(keys) == len(value.keywords) else None
    return None


def _added(stmt: ast.stmt, name: str) -> list[str] | None:
    """The keys `name["k"] = v` or `name.update(...)` (of keywords and dict literals) adds; None for
    any other statement."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and target.value.id == name
            and isinstance(target.slice, ast.Constant)
            and isinstance(target.slice.value, str)
            and not _names(stmt.value, name)
        ):
            return [target.slice.value]
        return None
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    call = stmt.value
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "update" and isinstance(func.value, ast.Name)):
        return None
    if func.value.id != name or _names(call, name) != 1:
        return None
    keys: list[str] = []
    for arg in call.args:
        literal = _literal_keys(arg)
        if literal is None:
            return None
        keys += literal
    named = [k.arg for k in call.keywords if k.arg]
    return keys + named if len(named) == len(call.keywords) else None
