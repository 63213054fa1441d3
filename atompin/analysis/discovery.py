"""A package importing its own modules by listing its folder.

`pkgutil.iter_modules(__path__)` lists the modules right below the package; a helper doing it for a
path it is handed lists what is below that path. xinference's `model/llm/transformers/__init__.py`
defines `import_submodules(package_path, package_name, globals_dict)`, which lists
`[package_path]`, imports each module by name and calls itself for each subpackage, and calls it
once with `__path__[0]`: it imports the modules below its own package, not any module of the
consumer. Read from the module's syntax tree alone.
"""

from __future__ import annotations

import ast

# How a module writes its own package's folder.
_OWN_FOLDER = frozenset(
    {
        "__path__",
        "__path__[0]",
        "os.path.dirname(__file__)",
        "os.path.dirname(os.path.abspath(__file__))",
        "os.path.dirname(os.path.realpath(__file__))",
        "Path(__file__).parent",
        "str(Path(__file__).parent)",
    }
)


def lists_own_folder(tree: ast.Module, function: str) -> bool:
    """Does `function`, a module-level function of the module `tree`, list its own package's folder
    (or one below it) with `pkgutil.iter_modules` or `walk_packages` (`walks_own_path`)? Then the
    names it imports by computing them are of the modules it listed."""
    fn = next(
        (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function), None
    )
    return fn is not None and any(
        isinstance(node, ast.Call)
        and ast.unparse(node.func).rpartition(".")[2] in ("iter_modules", "walk_packages")
        and bool(node.args)
        and walks_own_path(tree, function, node.args[0])
        for node in ast.walk(fn)
    )


def walks_own_path(tree: ast.Module, function: str, path: ast.expr) -> bool:
    """Is `path`, the folder a listing call in `function` (a module-level function of the module
    `tree`) is handed, always the module's own package folder or one below it? It is when it is a
    parameter of the function (or a list of just that one), every call of the function outside it
    passes the package's folder (`__path__[0]`, `os.path.dirname(__file__)`), there is such a call,
    and the function's calls of itself pass that parameter or a path joined below it."""
    name = path.elts[0] if isinstance(path, ast.List) and len(path.elts) == 1 else path
    if not isinstance(name, ast.Name) or not function or "." in function:
        return False
    defs = (ast.FunctionDef, ast.AsyncFunctionDef)
    fn = next((node for node in tree.body if isinstance(node, defs) and node.name == function), None)
    params = [a.arg for a in (fn.args.posonlyargs + fn.args.args)] if fn is not None else []
    if fn is None or name.id not in params:
        return False
    index = params.index(name.id)
    inside = {id(node) for node in ast.walk(fn)}
    calls = [
        n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == function
    ]
    outside = 0
    for call in calls:
        given = call.args[index] if index < len(call.args) else None
        given = given or next((k.value for k in call.keywords if k.arg == name.id), None)
        if given is None:
            return False
        if id(call) in inside:
            if not _below(_bound_once(fn, given), name.id):
                return False
        elif ast.unparse(given) in _OWN_FOLDER:
            outside += 1
        else:
            return False
    return outside > 0


def _bound_once(fn: ast.FunctionDef | ast.AsyncFunctionDef, given: ast.expr) -> ast.expr:
    """What a local name of `fn` is bound to, when one assignment binds it (`sub = os.path.join(...)`);
    else `given` itself."""
    if not isinstance(given, ast.Name):
        return given
    values = [
        node.value
        for node in ast.walk(fn)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == given.id for t in node.targets)
    ]
    return values[0] if len(values) == 1 else given


def _below(given: ast.expr, param: str) -> bool:
    """Is `given` the parameter `param`, or a path joined below it (`os.path.join(param, name)`)?"""
    if isinstance(given, ast.Name):
        return given.id == param
    return (
        isinstance(given, ast.Call)
        and ast.unparse(given.func) in ("os.path.join", "join")
        and bool(given.args)
        and isinstance(given.args[0], ast.Name)
        and given.args[0].id == param
    )
