"""Literal tables a module serves names from, read without running it.

A module `__getattr__` that looks a name up in a dict literal (vLLM's
`MODULE_ATTRS = {"LLM": ".entrypoints.llm:LLM"}`) serves each key from the
module its value names; an import finder a package puts on `sys.meta_path`
that reads such a table (aiter's map of moved `aiter.ops.triton` modules) serves
each key as a submodule. The value may be written after a prefix the function
adds (`f"aiter.ops.triton.{MAP[name]}"`). The indexer finds the tables and the
functions that read them; this module says what a table holds and how it is read.
"""

from __future__ import annotations

import ast

from atompin.analysis.syntax import dotted, walk

# A prefix that is not plain text (a name, or text after the entry): nothing is assumed.
_UNKNOWN = "\0"


def table_prefix(node: ast.AST, table: str, names: dict[str, str]) -> str | None:
    """How `node` (a function) builds a name from an entry of the literal table `table`: the
    text written before it (`f"pkg.sub.{TABLE[name]}"`, `"pkg.sub." + TABLE[name]`; `names`
    gives `__name__` and `__package__`), "" when an entry is used as it is; None when the table
    is not read there, or is read in more than one way (then nothing is assumed of its entries)."""
    prefixes: set[str] = set()
    inside: set[int] = set()  # entries already read as part of a built string
    used = False
    # Locals an entry is read into (`sub = TABLE.get(name)`): a string built from them builds
    # it from the entry; the read itself, and their other uses (`if sub is None`), say nothing.
    kept = {
        sub.targets[0].id: sub
        for sub in walk(node)
        if isinstance(sub, ast.Assign)
        and len(sub.targets) == 1
        and isinstance(sub.targets[0], ast.Name)
        and _reads_table(sub.value, table)
    }
    inside.update(id(assign.value) for assign in kept.values())
    for sub in walk(node):
        if isinstance(sub, ast.Name) and sub.id == table:
            used = True
        elif isinstance(sub, ast.JoinedStr):
            text: str | None = ""
            for part in sub.values:
                value = part.value if isinstance(part, ast.FormattedValue) else part
                if _reads_table(value, table) or (isinstance(value, ast.Name) and value.id in kept):
                    # Text after the entry, or before it that is not known: not a plain prefix.
                    prefixes.add(text if text is not None and part is sub.values[-1] else _UNKNOWN)
                    inside.add(id(value))
                    break
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    text = text + value.value if text is not None else None
                elif isinstance(value, ast.Name) and value.id in names:
                    text = text + names[value.id] if text is not None else None
                else:
                    text = None
        elif (
            isinstance(sub, ast.BinOp)
            and isinstance(sub.op, ast.Add)
            and (_reads_table(sub.right, table) or (isinstance(sub.right, ast.Name) and sub.right.id in kept))
        ):
            left = sub.left
            prefixes.add(left.value if isinstance(left, ast.Constant) and isinstance(left.value, str) else _UNKNOWN)
            inside.add(id(sub.right))
        elif _reads_table(sub, table) and id(sub) not in inside:
            prefixes.add("")
    if not prefixes:
        return "" if used else None  # read some other way: its entries as they are
    if len(prefixes) != 1 or _UNKNOWN in prefixes:
        return None
    return prefixes.pop()


def served_names(function: ast.AST) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """What a module `__getattr__(name)` alone serves: (the tables whose keys, the literal names).
    Its body (past a docstring) is tests of the name whose bodies end in a return or a raise,
    `if`s one after another or an `elif` chain, then `raise AttributeError(...)` (last, or as
    the chain's `else`): vLLM's `envs` serves the keys of `environment_variables` (`if name in
    environment_variables:`), and from 0.11 `vllm.platforms` serves `current_platform` alone
    (`if name == "current_platform": ... elif name in globals(): ... else: raise`). A test that
    raises names what is gone; `name in globals()` serves nothing (a module's `__getattr__` runs
    only for names its globals lack). None for any other body: it may serve any name."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or len(function.args.args) != 1:
        return None
    param = function.args.args[0].arg
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    tests: list[tuple[ast.expr, ast.stmt]] = []  # each test, with the last statement of its body
    last: ast.stmt | None = None
    for k, stmt in enumerate(body):
        if k == len(body) - 1 and not isinstance(stmt, ast.If):
            last = stmt
            break
        chain: ast.stmt | None = stmt
        while isinstance(chain, ast.If):
            tests.append((chain.test, chain.body[-1]))
            orelse = chain.orelse
            if not orelse:
                chain = None
            elif len(orelse) == 1 and isinstance(orelse[0], ast.If):
                chain = orelse[0]
            elif k == len(body) - 1 and len(orelse) == 1:
                last, chain = orelse[0], None  # the chain's `else` ends the function
            else:
                return None
        if chain is not None:
            return None
    if not (
        isinstance(last, ast.Raise) and isinstance(last.exc, ast.Call) and dotted(last.exc.func) == "AttributeError"
    ):
        return None
    tables: list[str] = []
    names: list[str] = []
    for test, end in tests:
        if not isinstance(end, (ast.Return, ast.Raise)):
            return None
        served = _tested_names(test, param)
        if served is None:
            return None
        if isinstance(end, ast.Return):
            tables += served[0]
            names += served[1]
    return (tuple(tables), tuple(names)) if tables or names else None


def _tested_names(test: ast.expr, param: str) -> tuple[list[str], list[str]] | None:
    """What a test of `param` lets through: (tables, literal names); None for another test."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, ast.Eq):
        if isinstance(right, ast.Name) and right.id == param:
            left, right = right, left
        if isinstance(left, ast.Name) and left.id == param and _text(right) is not None:
            return [], [_text(right) or ""]
        return None
    if not (isinstance(op, ast.In) and isinstance(left, ast.Name) and left.id == param):
        return None
    if isinstance(right, ast.Name):
        return [right.id], []
    if (
        isinstance(right, ast.Call)
        and isinstance(right.func, ast.Name)
        and right.func.id == "globals"
        and not right.args
    ):
        return [], []  # the module's globals: found before `__getattr__` is asked
    if isinstance(right, (ast.Tuple, ast.List, ast.Set)):
        texts = [_text(each) for each in right.elts]
        return ([], [t for t in texts if t is not None]) if None not in texts else None
    return None


def _text(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def serves_named_attribute(function: ast.AST) -> bool:
    """Does a module `__getattr__(name)` return `getattr(<module>, name)`: an entry naming a
    module then serves the attribute of that name in it, not the module itself."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or not function.args.args:
        return False
    param = function.args.args[0].arg
    return any(
        isinstance(sub, ast.Call)
        and isinstance(sub.func, ast.Name)
        and sub.func.id == "getattr"
        and len(sub.args) == 2
        and isinstance(sub.args[1], ast.Name)
        and sub.args[1].id == param
        for sub in walk(function)
    )


def _reads_table(node: ast.AST, table: str) -> bool:
    """`table[...]` or `table.get(...)`."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Name) and node.value.id == table
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == table
    )


def literal_table(value: ast.Dict) -> dict[str, str] | None:
    """A lazy-export table: {"Name": "pkg.mod" | "pkg.mod:Attr" | ("pkg.mod", "Attr")}."""
    table: dict[str, str] = {}
    for key, val in zip(value.keys, value.values):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        if isinstance(val, ast.Constant) and isinstance(val.value, str):
            table[key.value] = val.value
        elif (
            isinstance(val, ast.Tuple)
            and len(val.elts) == 2
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in val.elts)
        ):
            table[key.value] = f"{val.elts[0].value}:{val.elts[1].value}"  # type: ignore[attr-defined]
        else:
            return None
    return table
