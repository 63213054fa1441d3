"""How consumer code guards against a provider name being gone, read from syntax alone.

Two shapes matter to the scanner: a try/except around imports (an import
ladder, with what its handler does when every way fails) or around attribute
access, and an `if hasattr(owner, "name"):` test. Which owner a test is about
needs the scanner's values, so here are only the questions the syntax answers.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from atompin.analysis.names import absolute_module, in_package
from atompin.analysis.syntax import dotted, walk_shallow
from atompin.analysis.syntax import walk as every_node

_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}
_ATTRIBUTE_ERRORS = {"AttributeError"}
_BROAD = {"Exception", "BaseException"}
# Calls a handler makes only to say something went wrong.
_LOG_CALLS = {
    "debug",
    "info",
    "warning",
    "warn",
    "error",
    "exception",
    "critical",
    "print",
    "print_once",
    "warning_once",
    "info_once",
}


def _caught_names(handlers: list[ast.ExceptHandler]) -> set[str]:
    """The exception class names the handlers catch; a bare `except:` catches BaseException."""
    names: set[str] = set()
    for h in handlers:
        if h.type is None:
            names.add("BaseException")
            continue
        exprs = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
        names.update(dotted(e).split(".")[-1] for e in exprs)
    return names


def catches_import_error(handlers: list[ast.ExceptHandler]) -> bool:
    """Does one of `handlers` catch a failed import (ImportError, its subclass, or anything broader)?"""
    return bool(_caught_names(handlers) & (_IMPORT_ERRORS | _BROAD))


def catches_attribute_error(handlers: list[ast.ExceptHandler]) -> bool:
    """Does one of `handlers` catch a missing attribute (AttributeError or anything broader)?"""
    return bool(_caught_names(handlers) & (_ATTRIBUTE_ERRORS | _BROAD))


def catches_only_import_errors(handler: ast.ExceptHandler) -> bool:
    """Does this handler catch failed imports and nothing else?"""
    names = _caught_names([handler])
    return bool(names) and names <= _IMPORT_ERRORS


def catches_only_version_errors(handler: ast.ExceptHandler) -> bool:
    """Does this handler catch a version that does not parse (`InvalidVersion`, or the
    `ValueError` it is) and nothing else?"""
    return _catches_only(handler, {"InvalidVersion"}, {"InvalidVersion", "ValueError"})


def catches_only_version_errors_or_absence(handler: ast.ExceptHandler) -> bool:
    """Does this handler catch only a version that does not parse or a distribution that is not
    installed (`except (PackageNotFoundError, InvalidVersion):`)? Around a read of the provider's
    version, neither happens where it is checked."""
    return _catches_only(
        handler, {"InvalidVersion", "PackageNotFoundError"}, {"InvalidVersion", "PackageNotFoundError", "ValueError"}
    )


def _catches_only(handler: ast.ExceptHandler, one_of: set[str], within: set[str]) -> bool:
    """Does this handler catch one of `one_of` by name, and nothing outside `within`?"""
    names = _caught_names([handler])
    return bool(names & one_of) and names <= within


def catches_type_error(handler: ast.ExceptHandler) -> bool:
    """Does this handler catch a TypeError (by name, or anything broader)?"""
    return bool(_caught_names([handler]) & ({"TypeError"} | _BROAD))


def type_error_handling(handlers: list[ast.ExceptHandler]) -> str:
    """What the first handler that catches a TypeError (or anything broader) does; "" when none does."""
    for handler in handlers:
        if catches_type_error(handler):
            what = describe_fallback(handler.body)
            if what:
                return f"the handler at line {handler.lineno} {what}"
    return ""


def returns_instead(handlers: list[ast.ExceptHandler]) -> bool:
    """Does the handler `type_error_handling` describes end by returning? Then a TypeError anywhere
    in the try makes the function give the answer it has for failure (vLLM's `except Exception:
    device_comm._aiter_qr_rmsnorm_comm = False; return None` around its quick-reduce setup): what
    the rest of the try would have done is lost as the rest of the function is, by design."""
    for handler in handlers:
        if catches_type_error(handler) and describe_fallback(handler.body):
            return isinstance(handler.body[-1], ast.Return)
    return False


def body_imports(body: list[ast.stmt], module: str, is_package: bool) -> list[tuple[str, str]]:
    """(module, name) of every import in `body` (not in nested functions); name "" for `import m`."""
    out: list[tuple[str, str]] = []
    for node in walk_shallow(body):
        if isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = absolute_module(module, is_package, node.level, node.module)
            out += [(source, a.name) for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Call) and dotted(node.func).endswith("import_module") and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and not arg.value.startswith("."):
                out.append((arg.value, ""))
    return sorted(set(out))


def imports_package(body: list[ast.stmt], package: str, module: str, is_package: bool) -> bool:
    """Does `body`, written in `module`, import `package` or a module inside it?

    Nested functions and classes do not count: their imports run later, not
    under this try. `importlib.import_module("...")` with a literal name counts.
    """
    for node in walk_shallow(body):
        if isinstance(node, ast.Import) and any(in_package(a.name, package) for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom):
            if in_package(absolute_module(module, is_package, node.level, node.module), package):
                return True
        if isinstance(node, ast.Call) and dotted(node.func).endswith("import_module") and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and in_package(arg.value, package):
                return True
    return False


def imports_only_the_package(body: list[ast.stmt], package: str) -> bool:
    """Does `body` import the provider `package` itself (`import vllm`, `import vllm as v`) and no
    module of it, nor a name from it (either may be missing at a release)? Then an ImportError
    handler around it runs only where the provider is not installed. Other packages' imports may
    be there too: their absence is the environment's, not a provider release's."""
    plain = False
    for node in walk_shallow(body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == package:
                    plain = True
                elif in_package(alias.name, package):
                    return False
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and in_package(node.module, package):
            return False
    return plain


# Calls that end the program: what follows them never runs.
_EXIT_CALLS = {"sys.exit", "os._exit", "exit", "_exit", "quit"}


def _is_exit(stmt: ast.stmt) -> bool:
    """`sys.exit(...)`, `os._exit(...)`, `exit()` or `quit()` as a statement of its own."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and dotted(stmt.value.func) in _EXIT_CALLS


def exits(body: list[ast.stmt]) -> bool:
    """Does a block end the program (an exit among its own statements)?"""
    return any(_is_exit(stmt) for stmt in body)


def leaves(body: list[ast.stmt]) -> bool:
    """Does a block leave the one it is in: it exits, or its last statement returns, raises, or
    ends the loop's turn? Then what follows runs only when the block did not run."""
    return exits(body) or (bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break)))


def describe_fallback(body: list[ast.stmt]) -> str:
    """Say what a handler does instead of importing; "" when it re-raises."""
    parts: list[str] = []
    for stmt in body:
        if isinstance(stmt, ast.Raise):
            return ""
        if _is_exit(stmt):
            parts.append("exits")
            break  # nothing after an exit runs
        if isinstance(stmt, ast.Return):
            parts.append(f"returns {ast.unparse(stmt.value)}" if stmt.value is not None else "returns")
        elif isinstance(stmt, ast.Continue):
            parts.append("skips to the next iteration")
        elif isinstance(stmt, ast.Break):
            parts.append("leaves the loop")
        elif isinstance(stmt, ast.Pass):
            parts.append("does nothing")
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            parts.append(f"sets {ast.unparse(stmt).strip()}")
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            parts.append(f"imports {ast.unparse(stmt).strip()} instead")
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            call = func.attr if isinstance(func, ast.Attribute) else dotted(func).split(".")[-1]
            parts.append("logs" if call in _LOG_CALLS else f"calls {call}()")
        else:
            parts.append("runs other code")
    return ", ".join(dict.fromkeys(parts)) or "does nothing"


def suppressing_try(node: ast.With | ast.AsyncWith) -> ast.Try | None:
    """`with contextlib.suppress(ImportError): <body>` as the try it amounts to (`try: <body>` /
    `except ImportError: pass`), so that everything a try means is read the same; None for any
    other `with`."""
    if len(node.items) != 1 or node.items[0].optional_vars is not None:
        return None
    call = node.items[0].context_expr
    if not (isinstance(call, ast.Call) and call.args and not call.keywords):
        return None
    if dotted(call.func) not in ("suppress", "contextlib.suppress"):
        return None
    caught = call.args[0] if len(call.args) == 1 else ast.Tuple(elts=list(call.args), ctx=ast.Load())
    handler = ast.ExceptHandler(type=caught, name=None, body=[ast.copy_location(ast.Pass(), node)])
    return ast.copy_location(
        ast.Try(body=node.body, handlers=[ast.copy_location(handler, node)], orelse=[], finalbody=[]), node
    )


def feature_test(function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Try | None:
    """The try of a function that ends by testing whether something imports, else None: the try
    is its last statement but `return`s, holds only imports (maybe then a `return`), each handler
    ends in a `return`, and nothing returned names what was imported (`try: from m import f` /
    `except ImportError: return False` / `return True`). What comes before the try (platform
    checks returning early) cannot use what it imports, so the imported names never leave it."""
    body = function.body
    tries = [i for i, s in enumerate(body) if isinstance(s, ast.Try)]
    if not tries or not all(isinstance(s, ast.Return) for s in body[tries[-1] + 1 :]):
        return None
    node, after = body[tries[-1]], body[tries[-1] + 1 :]
    assert isinstance(node, ast.Try)
    tried = node.body[:-1] if node.body and isinstance(node.body[-1], ast.Return) else node.body
    imports = [s for s in tried if isinstance(s, (ast.Import, ast.ImportFrom))]
    if not tried or len(imports) != len(tried) or node.finalbody:
        return None
    if not all(isinstance(s, ast.Return) for s in node.orelse):
        return None
    if not node.handlers or not all(h.body and isinstance(h.body[-1], ast.Return) for h in node.handlers):
        return None
    imported = {(a.asname or a.name).split(".")[0] for s in imports for a in s.names}
    returns = [s for s in (*after, *node.body[len(tried) :], *node.orelse) if isinstance(s, ast.Return)]
    for ret in returns:
        if ret.value is not None and any(isinstance(n, ast.Name) and n.id in imported for n in ast.walk(ret.value)):
            return None
    return node


def hasattr_tests(test: ast.expr) -> Iterator[tuple[ast.Call, bool]]:
    """The `hasattr(owner, name)` calls an `if` test rests on, in order, each with whether it is negated.

    `if hasattr(X, "f") and ...:` guards its body; `if not hasattr(X, "f"):`
    guards its else branch (and, when the body leaves, the rest of the block).
    A negated `and` says nothing about any single call. Calls inside an `and`
    come out un-negated, even one under its own `not`.
    """
    negated = False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, True
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        if not negated:
            for value in test.values:
                for call, _ in hasattr_tests(value):
                    yield call, False
    elif isinstance(test, ast.Call) and dotted(test.func) == "hasattr" and len(test.args) == 2:
        yield test, negated


class StringTests:
    """A function's uses of names as strings, read once (`syntax.walk`), for `default_only`."""

    def __init__(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.end = (function.end_lineno or function.lineno) + 1
        self.strings: dict[str, list[int]] = {}  # a string -> the ids of its constants
        self.defaulted: set[int] = set()  # the name constants of `getattr(x, "name", default)`
        # `v = ...`: the names bound, the strings the value writes.
        self.assigns: list[tuple[set[str], set[str]]] = []
        # The tests (`if`, `while`, conditional expressions, `and`/`or`): the spans each guards
        # (where it holds or fails), the spans past it (an `if` whose body leaves), and the strings
        # and names its test reads.
        self.tests: list[tuple[list[tuple[int, int]], list[tuple[int, int]], set[str], set[str]]] = []
        for n in every_node(function):
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                self.strings.setdefault(n.value, []).append(id(n))
            elif isinstance(n, ast.Call) and dotted(n.func) == "getattr" and len(n.args) == 3:
                self.defaulted.add(id(n.args[1]))
            elif isinstance(n, ast.Assign):
                bound = {t.id for t in n.targets if isinstance(t, ast.Name)}
                if bound:
                    self.assigns.append((bound, _read(n.value)[0]))
            elif isinstance(n, (ast.If, ast.While)):
                past = [((n.end_lineno or n.lineno) + 1, self.end)] if isinstance(n, ast.If) and leaves(n.body) else []
                self.tests.append((_spans([*n.body, *n.orelse]), past, *_read(n.test)))
            elif isinstance(n, ast.IfExp):
                self.tests.append((_spans([n.body, n.orelse]), [], *_read(n.test)))
            elif isinstance(n, ast.BoolOp):
                self.tests.append((_spans(n.values[1:]), [], *_read(n.values[0])))

    def default_only(self, name: str) -> list[tuple[int, int]] | None:
        """Where the function writes `name` as a string only as the name of a `getattr(x,
        "name", default)` (which goes on with the default where the name is gone: it tests
        nothing), the lines under a test of it: the branches of an `if`, `while`, conditional
        expression or `and`/`or` whose test writes `name` as a string, or a local taken from
        such an expression (`v = getattr(x, "name", None)`, then `if v is not None:`), and the
        lines past an `if` so testing whose body leaves (`if not getattr(x, "name", None):
        return`), as (first, last) spans. None when the function writes the name otherwise (a
        `hasattr` test, say): what it tests is not read here. No span where no string of its code
        is the name (tpu-inference writes `"shared_by"` in a comment only)."""
        found = self.strings.get(name, [])
        if not found:
            return []
        if any(i not in self.defaulted for i in found):
            return None
        taken = {bound for names, strings in self.assigns if name in strings for bound in names}
        return [
            span
            for guarded, past, strings, names in self.tests
            if name in strings or not taken.isdisjoint(names)
            for span in (*guarded, *past)
        ]


def _read(expr: ast.AST) -> tuple[set[str], set[str]]:
    """The strings an expression writes, and the names it reads."""
    nodes = every_node(expr)
    strings = {n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return strings, {n.id for n in nodes if isinstance(n, ast.Name)}


def _spans(parts: list[ast.stmt] | list[ast.expr]) -> list[tuple[int, int]]:
    return [(n.lineno, n.end_lineno or n.lineno) for n in parts]
