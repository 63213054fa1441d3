"""Where the plugin stops when the provider loads it: the first error on the code every process runs at start-up.

vLLM loads the consumer's `vllm.platform_plugins` entry points, then its `vllm.general_plugins`
ones, in every process it starts. What a general plugin's function raises ends the process; what
importing an entry point's module or calling a platform plugin raises, vLLM logs, and goes on
without the plugin. Either way the plugin does nothing after it. At vLLM 0.34, ATOM's
`register_model` calls `apply_vllm_spec_decode_patch()`, whose unguarded `from
vllm.v1.spec_decode.llm_base_proposer import SpecDecodeBaseProposer` raises: no model is built,
so the errors of code that would run later sit behind that one, and a reader should mend it first.

The start-up code is walked in the order it runs, from each entry point of a group of the
provider's: its module (its packages' `__init__` first), then the function. A module runs its
top-level statements and a class body its own; an import of a consumer module (at the top of a
module or of a function body) runs that module's first, once. A function runs its body's
statements in order. What may not run is not followed: under an `if`, in a loop, in an exception
handler, and what follows `if x: raise ...` in a `try` body (a handler may catch it); a `try`
body and a `with` body are. An `if` whose branch returns (`if disabled: return`) lets the rest
run where its test fails, and the message says so. A statement calling a consumer function by
name (defined in its module, imported from a consumer module, or `module.f(...)`), as a
statement, an assignment's value or a return value, runs that function there. The first
statement holding the site of an error that raises where it runs (an import, a patch, a
version assert: `stops`) is where the plugin stops. Where such an error sits in code not
followed, which one comes first is not known: nothing is told.

Pure: consumer modules' syntax trees in (`parse`), the stop out.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from atompin.analysis.names import absolute_module
from atompin.model import Finding, Rule, Severity, Site

# How many consumer modules and functions the walk runs, and how deep it goes into imports and
# calls, before it gives up (a bound: the answer is then "not known", never a guess).
MAX_STEPS = 400
MAX_DEPTH = 40

_TRIES = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))

# The rules whose errors raise where their site runs. Their messages say so ("raises"); an
# installer that returns where a ladder fails ("patches are never installed") does not stop.
_STOPPING = (Rule.UNRESOLVED_IMPORT, Rule.MISSING_PATCH_TARGET, Rule.VERSION_ASSERT)


def stops(finding: Finding) -> bool:
    """Does this finding's code raise where it runs (so the process stops there)?"""
    return (
        finding.severity is Severity.ERROR
        and not finding.accepted
        and finding.rule in _STOPPING
        and ("raises" in finding.message or finding.rule is Rule.VERSION_ASSERT)
    )


@dataclass(frozen=True)
class StartupStop:
    """The first statement of the start-up code that holds a stopping error's site."""

    site: Site
    chain: tuple[str, ...]  # the entry point, then each call on the way (`f() at path:line`)
    unless: tuple[str, ...]  # the tests of early exits passed on the way (`x` at path:line)

    def telling(self) -> str:
        """What a message says of it."""
        unless = f", unless {', '.join(self.unless)}" if self.unless else ""
        return (
            f"it raises at start-up ({self.site}), in every process that loads the plugin{unless}: "
            + " → ".join(self.chain)
            + "; what the plugin would do after it, and the errors there, are behind it"
        )


@dataclass
class _Walk:
    parse: Callable[[str], tuple[str, ast.Module] | None]  # module -> (path, tree)
    failing: dict[str, set[int]]  # path -> the lines of stopping errors' sites
    ran: set[str] = field(default_factory=set)  # modules and functions (module:name) run
    steps: int = 0
    chain: list[str] = field(default_factory=list)
    unless: list[str] = field(default_factory=list)
    found: StartupStop | None = None
    gave_up: bool = False


def startup_stop(
    entry_points: Iterable[tuple[str, str]],
    parse: Callable[[str], tuple[str, ast.Module] | None],
    findings: Iterable[Finding],
) -> tuple[StartupStop, Finding] | None:
    """The first stopping error on the start-up code of `entry_points` ((group, "module:function"),
    in the order the provider calls them), with where the walk met it; None when none is met (or
    the walk gave up). `parse(module)`: the consumer module's path and syntax tree (None for a
    module not the consumer's)."""
    errors = [f for f in findings if stops(f)]
    failing: dict[str, set[int]] = {}
    for f in errors:
        for site in f.sites:
            failing.setdefault(site.path, set()).add(site.line)
    if not failing:
        return None
    walk = _Walk(parse, failing)
    for group, target in entry_points:
        module, _, function = target.partition(":")
        walk.chain = [f"entry point {group} {target.strip()}"]
        walk.unless = []
        _run_module(walk, module.strip())
        if walk.found is None and not walk.gave_up and function.strip().isidentifier():
            _run_function(walk, module.strip(), function.strip())
        if walk.gave_up:
            return None
        if walk.found is not None:
            site = walk.found.site
            finding = next(f for f in errors if site in f.sites)
            return walk.found, finding
    return None


def _step(walk: _Walk, key: str) -> bool:
    """Run `key` (a module, or module:function) now? Not twice, nor past the bounds."""
    if key in walk.ran or walk.found is not None or walk.gave_up:
        return False
    walk.steps += 1
    if walk.steps > MAX_STEPS or len(walk.chain) > MAX_DEPTH:
        walk.gave_up = True
        return False
    walk.ran.add(key)
    return True


def _run_module(walk: _Walk, module: str) -> None:
    """Import `module`: its packages first, then its top-level statements."""
    parts = module.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        parsed = walk.parse(name)
        if parsed is None or not _step(walk, name):
            continue
        path, tree = parsed
        _block(walk, name, path, tree.body, {})


def _run_function(walk: _Walk, module: str, name: str) -> None:
    """Call `module`'s top-level function `name` (a re-export followed to its definition)."""
    found = _definition(walk, module, name, 4)
    if found is None:
        return
    where, function, path = found
    if not _step(walk, f"{where}:{name}"):
        return
    parsed = walk.parse(where)
    bound = _bindings(walk, where, path, parsed[1]) if parsed is not None else {}
    unless = len(walk.unless)
    _block(walk, where, path, function.body, bound)
    if walk.found is None:
        del walk.unless[unless:]  # an early exit of the function: the caller's code runs on after it


def _definition(walk: _Walk, module: str, name: str, depth: int) -> tuple[str, ast.FunctionDef, str] | None:
    """The module, def and path of `module`'s top-level `name`: its own def, or one it imports."""
    parsed = walk.parse(module)
    if parsed is None or depth == 0:
        return None
    path, tree = parsed
    found: tuple[str, ast.FunctionDef, str] | None = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            found = (module, node, path)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    source = absolute_module(module, path.endswith("__init__.py"), node.level, node.module or "")
                    found = _definition(walk, source, alias.name, depth - 1)
    return found


def _bindings(walk: _Walk, module: str, path: str, tree: ast.Module) -> dict[str, str]:
    """What `module`'s top-level names are bound to (consumer modules and functions), as
    `_block` keeps them: its defs, and what its top-level imports bind."""
    bound: dict[str, str] = {}
    is_package = path.endswith("__init__.py")
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bound[node.name] = f"{module}:{node.name}"
        elif isinstance(node, ast.ClassDef):
            bound.pop(node.name, None)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            _bind(walk, module, is_package, node, bound)
    return bound


def _block(
    walk: _Walk, module: str, path: str, stmts: list[ast.stmt], bound: dict[str, str], caught: bool = False
) -> None:
    """Run statements of `module` (at `path`) in order; `bound`: names the code has bound to
    consumer modules or their functions so far ("module" or "module:function"); `caught`: in a
    `try` body, where what raises may be caught."""
    for i, stmt in enumerate(stmts):
        if walk.found is not None or walk.gave_up:
            return
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bound[stmt.name] = f"{module}:{stmt.name}"
            continue
        if isinstance(stmt, ast.ClassDef):
            bound.pop(stmt.name, None)
            _block(walk, module, path, stmt.body, dict(bound), caught)
            continue
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            _block(walk, module, path, stmt.body, bound, caught)
            continue
        if isinstance(stmt, _TRIES):
            # The body runs (up to what raises); a handler only when something does.
            for handler in stmt.handlers:
                _not_followed(walk, path, handler)
            _block(walk, module, path, stmt.body, bound, caught=bool(stmt.handlers) or caught)
            for block in (stmt.orelse, stmt.finalbody):
                _block(walk, module, path, block, bound, caught)
            continue
        if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Match)):
            _not_followed(walk, path, stmt)  # what runs only under a test, or as often as a loop turns
            if isinstance(stmt, ast.If) and not _runs_on(walk, path, stmt, stmts[i + 1 :], caught):
                return
            continue
        hit = _failing(walk, path, stmt)
        if hit:
            walk.found = StartupStop(Site(path, hit[0]), tuple(walk.chain), tuple(walk.unless))
            return
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            _import(walk, module, path, stmt, bound)
        else:
            _calls(walk, module, path, stmt, bound)
        if isinstance(stmt, (ast.Return, ast.Raise)):
            return


def _runs_on(walk: _Walk, path: str, test: ast.If, rest: list[ast.stmt], caught: bool) -> bool:
    """Does the walk go on after an `if` it does not follow? After `if disabled: return` it does,
    where the test fails (said as "unless"); after `if x: raise ...` that a handler may catch, the
    rest of the `try` body may not run: not followed."""
    if test.orelse or not test.body:
        return True
    if isinstance(test.body[-1], ast.Return):
        walk.unless.append(f"`{ast.unparse(test.test)}` ({path}:{test.lineno})")
    elif caught and isinstance(test.body[-1], ast.Raise):
        for each in rest:
            _not_followed(walk, path, each)
        return False
    return True


def _failing(walk: _Walk, path: str, node: ast.stmt | ast.excepthandler) -> list[int]:
    """The lines of stopping errors' sites within `node`, in order."""
    end = node.end_lineno or node.lineno
    return sorted(line for line in walk.failing.get(path, ()) if node.lineno <= line <= end)


def _not_followed(walk: _Walk, path: str, node: ast.stmt | ast.excepthandler) -> None:
    """Code the walk does not follow (it may or may not run): where it holds a stopping error,
    which stops first is not known, and the walk gives up."""
    if _failing(walk, path, node):
        walk.gave_up = True


def _import(walk: _Walk, module: str, path: str, stmt: ast.Import | ast.ImportFrom, bound: dict[str, str]) -> None:
    """Run the consumer modules an import names, and bind what it binds."""
    is_package = path.endswith("__init__.py")
    if isinstance(stmt, ast.Import):
        names = [alias.name for alias in stmt.names]
    else:
        source = absolute_module(module, is_package, stmt.level, stmt.module or "")
        names = [source] + [f"{source}.{alias.name}" for alias in stmt.names]  # a submodule, if it is one
    for name in names:
        walk.chain.append(f"import of {name} at {path}:{stmt.lineno}")
        _run_module(walk, name)
        if walk.found is not None:
            return
        walk.chain.pop()
    _bind(walk, module, is_package, stmt, bound)


def _bind(walk: _Walk, module: str, is_package: bool, stmt: ast.Import | ast.ImportFrom, bound: dict[str, str]) -> None:
    """Bind the names an import binds: a consumer module ("a.b"), or a name of one ("a.b:f")."""
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                bound[alias.asname] = alias.name
            else:  # `import a.b` binds `a`
                bound[alias.name.partition(".")[0]] = alias.name.partition(".")[0]
        return
    source = absolute_module(module, is_package, stmt.level, stmt.module or "")
    for alias in stmt.names:
        if walk.parse(f"{source}.{alias.name}") is not None:  # a submodule
            bound[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif walk.parse(source) is not None:
            bound[alias.asname or alias.name] = f"{source}:{alias.name}"
        else:
            bound.pop(alias.asname or alias.name, None)


def _calls(walk: _Walk, module: str, path: str, stmt: ast.stmt, bound: dict[str, str]) -> None:
    """Run the consumer function a statement calls at its top: `f(...)` as a statement, an
    assignment's value or a return value, `module.f(...)` alike."""
    value = (
        getattr(stmt, "value", None) if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.Return)) else None
    )
    if not isinstance(value, ast.Call):
        return
    func = value.func
    target = ""
    if isinstance(func, ast.Name):
        target = bound.get(func.id, "")
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        held = bound.get(func.value.id, "")
        target = f"{held}:{func.attr}" if held and ":" not in held else ""
    if ":" not in target:
        return
    callee, _, name = target.partition(":")
    walk.chain.append(f"{name}() at {path}:{stmt.lineno}")
    _run_function(walk, callee, name)
    if walk.found is None:
        walk.chain.pop()


def tell_startup_stop(
    findings: list[Finding],
    entry_points: Iterable[tuple[str, str]],
    parse: Callable[[str], tuple[str, ast.Module] | None],
) -> list[Finding]:
    """The findings, the first stopping error on the start-up code (`startup_stop`) telling so at
    the end of its message."""
    found = startup_stop(entry_points, parse, findings)
    if found is None:
        return findings
    stop, first = found
    told = replace(first, message=f"{first.message}; {stop.telling()}")
    return [told if f is first else f for f in findings]
