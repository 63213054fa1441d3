"""A consumer module's code as the start-up walk (`startup`) reads it: an outline.

The walk reads little of a module: its statements in order and their lines, the modules an import
names, the calls by a name (`f()`, `m.f()`), the early exits (`if disabled: return`). An outline
holds just that, so it can be kept by the file's content (`OutlineReader`): a walk of a consumer
that did not change (a bump of the provider) parses nothing. A function's or a class's body, and
what its whole code may reach, are read only when a walk asks (functions are most of a module's
code, and most never run at start-up); what was read is kept with the outline from then on.

Pure: syntax trees in, outlines out; `OutlineReader` reads and keeps them through the cache it
is given.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from atompin.analysis.cache import AnalysisCache, dump_json, load_json
from atompin.analysis.names import absolute_module
from atompin.analysis.syntax import blocks_of, dotted, is_type_checking

# Bump when an outline's meaning changes, so old entries are ignored.
OUTLINE_FORMAT = "atompin-outline-3"

T = TypeVar("T")

# How much of an early exit's test an outline keeps (a message line, not the code).
MAX_TEST = 80

# What code may run elsewhere, in the order `ast.walk` meets it: (IMPORT, a module an import
# statement names: the module, and for `from m import n` also "m.n", which may be one), or
# (CALL, the name a call is written by: "f" for `f()`, "m.f" for `m.f()`).
Reach = tuple[str, str]
CALL = "call"

# The kinds of `Step`: one per way the walk treats a statement.
DEF = "def"  # a function (`async def` is ASYNC_DEF): bound, run when called
ASYNC_DEF = "async def"
CLASS = "class"  # its body runs where it stands
WITH = "with"  # its body runs
TRY = "try"  # its body runs; a handler only when something raises
HANDLER = "handler"  # an exception handler of a TRY
NEVER = "never"  # `if TYPE_CHECKING:`, `if __name__ == "__main__":`: never runs when the plugin loads
IF = "if"  # runs only where its test holds
LOOP = "loop"  # `for`, `while`, `match`: runs as often as it turns, or as a case holds
IMPORT = "import"  # `import m`
FROM = "from"  # `from m import n`
STATEMENT = "statement"  # any other

_TRIES = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))


@dataclass(frozen=True)
class Step:
    """One statement (or exception handler), with what the walk reads of it."""

    kind: str
    start: int  # its first line (a function's or class's `def`/`class` line, below its decorators)
    end: int
    name: str = ""  # DEF, ASYNC_DEF, CLASS: its name
    # All but DEF, ASYNC_DEF and CLASS, whose code is read on demand (`OutlineReader.reaches`):
    # what its code may reach.
    reaches: tuple[Reach, ...] = ()
    body: tuple[Step, ...] = ()  # WITH, TRY, IF (a DEF's or CLASS's: `OutlineReader.body`)
    handlers: tuple[Step, ...] = ()  # TRY
    orelse: tuple[Step, ...] = ()  # TRY, IF
    final: tuple[Step, ...] = ()  # TRY
    # IF without an `else`: "return" or "raise", when its body ends with one; STATEMENT: "return"
    # or "raise", when it is one.
    ends: str = ""
    test: str = ""  # IF: its test, as a message quotes it
    names: tuple[tuple[str, str], ...] = ()  # IMPORT, FROM: (name, as-name or "") of each alias
    source: str = ""  # FROM: the module, absolute
    # STATEMENT that is a call by a name, an assignment of one or a return of one: that name
    # ("f", "m.f"), what its arguments may reach, and each argument as (the parameter's name, or
    # its position "0", "1"...; "True", "False" or "None" where it is that constant, else ""),
    # ("*", "") for a `*` or `**` argument.
    callee: str = ""
    arguments: tuple[Reach, ...] = ()
    passed: tuple[tuple[str, str], ...] = ()
    # DEF, ASYNC_DEF: its positional parameters' names, in order, and the parameters whose
    # default is True, False or None, with it.
    params: tuple[str, ...] = ()
    defaults: tuple[tuple[str, str], ...] = ()
    # IF whose test is a name (`if flag:`) or its negation (`if not flag:`): the name, followed
    # where its value is known (`startup`). An IF's branches are `body` and `orelse`.
    switch: str = ""
    negated: bool = False


@dataclass
class ModuleOutline:
    """A module's top-level statements (`Step`), and the functions' and classes' parts read so far."""

    steps: tuple[Step, ...]
    bodies: dict[int, tuple[Step, ...]] = field(default_factory=dict)  # a def's or class's line -> its body
    wholes: dict[int, tuple[Reach, ...]] = field(default_factory=dict)  # -> what its whole code may reach
    rebound: dict[int, tuple[str, ...]] = field(default_factory=dict)  # a def's line -> the names its code binds


class Outliner:
    """Builds the steps of one module's statements (`module`, a package when `is_package`: what
    relative imports are read against)."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.module, self.is_package = module, is_package

    def steps(self, stmts: list[ast.stmt]) -> tuple[Step, ...]:
        """The steps of a block of statements, in order."""
        return tuple(self.step(stmt) for stmt in stmts)

    def step(self, stmt: ast.stmt) -> Step:
        """One statement's step."""
        start, end = stmt.lineno, stmt.end_lineno or stmt.lineno
        if isinstance(stmt, ast.ClassDef):
            return Step(CLASS, start, end, name=stmt.name)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = stmt.args
            positional = [*a.posonlyargs, *a.args]
            params = tuple(p.arg for p in positional)
            given = [
                *zip(positional[len(positional) - len(a.defaults) :], a.defaults),
                *zip(a.kwonlyargs, a.kw_defaults),
            ]
            defaults = tuple((p.arg, _constant(d)) for p, d in given if d is not None and _constant(d))
            kind = DEF if isinstance(stmt, ast.FunctionDef) else ASYNC_DEF
            return Step(kind, start, end, name=stmt.name, params=params, defaults=defaults)
        reaches = self.reaches(stmt)
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            return Step(WITH, start, end, reaches=reaches, body=self.steps(stmt.body))
        if isinstance(stmt, _TRIES):
            return Step(
                TRY,
                start,
                end,
                reaches=reaches,
                body=self.steps(stmt.body),
                handlers=tuple(
                    Step(HANDLER, h.lineno, h.end_lineno or h.lineno, reaches=self.reaches(h)) for h in stmt.handlers
                ),
                orelse=self.steps(stmt.orelse),
                final=self.steps(stmt.finalbody),
            )
        if isinstance(stmt, ast.If):
            if _never(stmt.test):
                return Step(NEVER, start, end, reaches=reaches)
            ends = _ending(stmt.body[-1]) if stmt.body and not stmt.orelse else ""
            negated = isinstance(stmt.test, ast.UnaryOp) and isinstance(stmt.test.op, ast.Not)
            switch = stmt.test.operand if isinstance(stmt.test, ast.UnaryOp) and negated else stmt.test
            return Step(
                IF,
                start,
                end,
                reaches=reaches,
                ends=ends,
                test=_quoted(stmt.test),
                switch=switch.id if isinstance(switch, ast.Name) else "",
                negated=negated,
                body=self.steps(stmt.body),
                orelse=self.steps(stmt.orelse),
            )
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.Match)):
            return Step(LOOP, start, end, reaches=reaches)
        if isinstance(stmt, ast.Import):
            return Step(IMPORT, start, end, reaches=reaches, names=_aliases(stmt))
        if isinstance(stmt, ast.ImportFrom):
            return Step(FROM, start, end, reaches=reaches, names=_aliases(stmt), source=self._source(stmt))
        value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.Return)) else None
        callee = ""
        arguments: tuple[Reach, ...] = ()
        passed: tuple[tuple[str, str], ...] = ()
        if isinstance(value, ast.Call) and (callee := _called(value)):
            arguments = tuple(reach for each in [*value.args, *value.keywords] for reach in self.reaches(each))
            passed = tuple(
                [("*", "") if isinstance(a, ast.Starred) else (str(i), _constant(a)) for i, a in enumerate(value.args)]
                + [(k.arg or "*", _constant(k.value) if k.arg else "") for k in value.keywords]
            )
        return Step(
            STATEMENT,
            start,
            end,
            reaches=reaches,
            ends=_ending(stmt),
            callee=callee,
            arguments=arguments,
            passed=passed,
        )

    def reaches(self, node: ast.AST) -> tuple[Reach, ...]:
        """What the code of `node` may reach, in the order `ast.walk` meets it."""
        found: list[Reach] = []
        for each in ast.walk(node):
            if isinstance(each, ast.Import):
                found += [(IMPORT, alias.name) for alias in each.names]
            elif isinstance(each, ast.ImportFrom):
                source = self._source(each)
                found += [(IMPORT, source), *((IMPORT, f"{source}.{alias.name}") for alias in each.names)]
            elif isinstance(each, ast.Call):
                called = _called(each)
                if called:
                    found.append((CALL, called))
        return tuple(found)

    def _source(self, stmt: ast.ImportFrom) -> str:
        return absolute_module(self.module, self.is_package, stmt.level, stmt.module or "")


def outline(tree: ast.Module, module: str, is_package: bool) -> ModuleOutline:
    """The outline of `module` (a package when `is_package`), from its syntax tree."""
    return ModuleOutline(Outliner(module, is_package).steps(tree.body))


def _constant(node: ast.expr) -> str:
    """ "True", "False" or "None" for that constant, else ""."""
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, bool)):
        return str(node.value)
    return ""


def bound_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """Every name the code of `function` binds or unbinds, or declares global or nonlocal (in
    nested functions too): where a parameter's value is known only where none of these is it."""
    names: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).partition(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not function:
            names.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return tuple(sorted(names))


def _ending(stmt: ast.stmt) -> str:
    """ "return" or "raise" for a statement that is one, else ""."""
    return "return" if isinstance(stmt, ast.Return) else "raise" if isinstance(stmt, ast.Raise) else ""


def _aliases(stmt: ast.Import | ast.ImportFrom) -> tuple[tuple[str, str], ...]:
    return tuple((alias.name, alias.asname or "") for alias in stmt.names)


def _called(call: ast.Call) -> str:
    """The name a call is written by: "f" for `f()`, "m.f" for `m.f()`; "" for any other."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return ""


def _never(test: ast.expr) -> bool:
    """A test that never holds when the plugin is loaded: `TYPE_CHECKING` (only a type checker
    reads its branch), `__name__ == "__main__"` (the module is imported, not run)."""
    if is_type_checking(test):
        return True
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and dotted(test.left) == "__name__"
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _quoted(test: ast.expr) -> str:
    text = ast.unparse(test)
    return text if len(text) <= MAX_TEST else text[: MAX_TEST - 1] + "…"


class OutlineReader:
    """The consumer's modules' outlines by name, each read once: from the cache, by the module's
    name and the file's content, or else built from its syntax tree; what a walk reads of its
    functions and classes is added, and kept (`keep`).

    `locate(module)`: its (path, content id), None for a module the consumer has no source of;
    `parse(module)`: its syntax tree, None for one that does not parse."""

    def __init__(
        self,
        locate: Callable[[str], tuple[str, str] | None],
        parse: Callable[[str], ast.Module | None],
        cache: AnalysisCache,
    ) -> None:
        self._locate, self._parse, self._cache = locate, parse, cache
        self._read: dict[str, tuple[str, ModuleOutline] | None] = {}
        self._keys: dict[str, str] = {}
        self._added: set[str] = set()  # modules whose outline has parts its cached one has not

    def outline(self, module: str) -> tuple[str, ModuleOutline] | None:
        """`module`'s path and outline; None for a module the consumer has no source of, or one
        that does not parse."""
        if module not in self._read:
            self._read[module] = self._outline(module)
        return self._read[module]

    def _outline(self, module: str) -> tuple[str, ModuleOutline] | None:
        located = self._locate(module)
        if located is None:
            return None
        path, content = located
        key = self._keys[module] = f"{OUTLINE_FORMAT}:{module}:{path}:{content}"
        data = self._cache.get_raw(key)
        kept = load_json(ModuleOutline, data) if data is not None else None
        if kept is not None:
            return path, kept
        tree = self._parse(module)
        if tree is None:
            return None
        self._added.add(module)
        return path, outline(tree, module, path.endswith("__init__.py"))

    def body(self, module: str, step: Step) -> tuple[Step, ...]:
        """The body of a function or class (`step`) of `module`."""
        return self._part(module, step, lambda kept: kept.bodies, lambda outliner, node: outliner.steps(node.body))

    def rebound(self, module: str, step: Step) -> tuple[str, ...]:
        """The names the code of a function (`step`, a DEF or ASYNC_DEF of `module`) binds
        (`bound_names`)."""
        return self._part(
            module,
            step,
            lambda kept: kept.rebound,
            lambda _, node: bound_names(node) if not isinstance(node, ast.ClassDef) else (),
        )

    def reaches(self, module: str, step: Step) -> tuple[Reach, ...]:
        """What the code of `step`, a statement of `module`, may reach."""
        if step.kind not in (DEF, ASYNC_DEF, CLASS):
            return step.reaches
        return self._part(module, step, lambda kept: kept.wholes, lambda outliner, node: outliner.reaches(node))

    def _part(
        self,
        module: str,
        step: Step,
        table: Callable[[ModuleOutline], dict[int, tuple[T, ...]]],
        read: Callable[[Outliner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef], tuple[T, ...]],
    ) -> tuple[T, ...]:
        """A part of a function or class (`step`) of `module` kept in one of its outline's
        `table`s: read from its syntax tree (`read`) the first time it is asked for."""
        found = self.outline(module)
        if found is None:
            return ()
        path, kept = found
        parts = table(kept)
        if step.start not in parts:
            node = self._definition(module, step)
            parts[step.start] = read(Outliner(module, path.endswith("__init__.py")), node) if node is not None else ()
            self._added.add(module)
        return parts[step.start]

    def keep(self) -> None:
        """Put the outlines built or added to in the cache."""
        for module in sorted(self._added):
            found = self._read.get(module)
            if found is not None:
                self._cache.put_raw(self._keys[module], dump_json(ModuleOutline, found[1]))
        self._added.clear()

    def _definition(self, module: str, step: Step) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
        """The def or class of `step` in `module`'s syntax tree: looked for down the blocks that
        hold its line only."""
        tree = self._parse(module)
        stmts: list[ast.stmt] = tree.body if tree is not None else []
        while stmts:
            inner: list[ast.stmt] = []
            for stmt in stmts:
                if not stmt.lineno <= step.start <= (stmt.end_lineno or stmt.lineno):
                    continue
                if (
                    isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    and stmt.lineno == step.start
                    and stmt.name == step.name
                ):
                    return stmt
                inner += [each for block in blocks_of(stmt) for each in block]
            stmts = inner
        return None
