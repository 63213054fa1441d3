"""A package importing its own modules by listing its folder, or by putting a folder on `sys.path`.

`pkgutil.iter_modules(__path__)` lists the modules right below the package; a helper doing it for a
path it is handed lists what is below that path. xinference's `model/llm/transformers/__init__.py`
defines `import_submodules(package_path, package_name, globals_dict)`, which lists
`[package_path]`, imports each module by name and calls itself for each subpackage, and calls it
once with `__path__[0]`: it imports the modules below its own package, not any module of the
consumer. Its audio models put its `thirdparty` folder on `sys.path` (computed from `__file__`)
and import the modules there by other names (`confuciustts.cli.inference`). Read from the
module's syntax tree alone.
"""

from __future__ import annotations

import ast
import posixpath

from atompin.analysis.syntax import walk_shallow

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
            local = _bound_once_in([fn.body], given.id) if isinstance(given, ast.Name) else None
            if not _below(local or given, name.id):
                return False
        elif ast.unparse(given) in _OWN_FOLDER:
            outside += 1
        else:
            return False
    return outside > 0


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


def import_path_folders(tree: ast.Module, path: str) -> dict[int, str]:
    """The folders, relative to the tree's root, that the `sys.path.insert(...)` and
    `sys.path.append(...)` calls of the module at `path` put on the import path, by the call's line,
    when computed from the file's own place: `os.path.join(os.path.dirname(__file__),
    "../../thirdparty")`, `Path(__file__).parents[2] / "thirdparty"`, or a name bound once to such a
    value in the function making the call or at module level (xinference's audio models put
    `thirdparty` there and import `confuciustts.cli.inference`)."""
    found: dict[int, str] = {}
    scopes: list[tuple[list[ast.stmt], list[list[ast.stmt]]]] = [(tree.body, [tree.body])]
    scopes += [
        (node.body, [node.body, tree.body])
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    for body, bodies in scopes:
        for node in walk_shallow(body):
            if (
                isinstance(node, ast.Call)
                and ast.unparse(node.func) in ("sys.path.insert", "sys.path.append")
                and node.args
                and (folder := _folder(node.args[-1], path, bodies, 0)) is not None
            ):
                found[node.lineno] = folder
    return found


def _folder(expr: ast.expr, path: str, bodies: list[list[ast.stmt]], depth: int) -> str | None:
    """The folder `expr` names (`import_path_folders`), names looked up in `bodies`, innermost first."""
    if depth > 8:
        return None
    if isinstance(expr, ast.Name):
        if expr.id == "__file__":
            return path
        value = _bound_once_in(bodies, expr.id)
        return _folder(value, path, bodies, depth + 1) if value is not None else None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return None  # a literal folder: not of the file's own place
    if isinstance(expr, ast.Attribute) and expr.attr == "parent":
        inner = _folder(expr.value, path, bodies, depth + 1)
        return posixpath.dirname(inner) if inner is not None else None
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute) and expr.value.attr == "parents":
        inner = _folder(expr.value.value, path, bodies, depth + 1)
        step = expr.slice
        if inner is None or not (isinstance(step, ast.Constant) and isinstance(step.value, int)):
            return None
        for _ in range(step.value + 1):
            inner = posixpath.dirname(inner)
        return inner
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):  # a `Path` joined with `/`
        return _joined(expr.left, [expr.right], path, bodies, depth)
    if not isinstance(expr, ast.Call):
        return None
    name = ast.unparse(expr.func)
    last = name.rpartition(".")[2]
    if name in ("os.path.dirname", "dirname") and len(expr.args) == 1:
        inner = _folder(expr.args[0], path, bodies, depth + 1)
        return posixpath.dirname(inner) if inner is not None else None
    if last in ("abspath", "realpath", "normpath", "resolve", "Path", "str", "fspath") and len(expr.args) <= 1:
        target = expr.args[0] if expr.args else expr.func.value if isinstance(expr.func, ast.Attribute) else None
        return _folder(target, path, bodies, depth + 1) if target is not None else None
    if name in ("os.path.join", "join") and expr.args:
        return _joined(expr.args[0], expr.args[1:], path, bodies, depth)
    return None


def _joined(base: ast.expr, parts: list[ast.expr], path: str, bodies: list[list[ast.stmt]], depth: int) -> str | None:
    """`base` joined with literal `parts`, normalized (`..` taken back); None when a part is no literal
    or the result leaves the tree."""
    folder = _folder(base, path, bodies, depth + 1)
    if folder is None or not all(isinstance(p, ast.Constant) and isinstance(p.value, str) for p in parts):
        return None
    joined = posixpath.normpath(posixpath.join(folder, *(str(p.value) for p in parts if isinstance(p, ast.Constant))))
    return None if joined.startswith("..") or posixpath.isabs(joined) else joined


def _bound_once_in(bodies: list[list[ast.stmt]], name: str) -> ast.expr | None:
    """The value `name` is bound to by the one assignment that binds it in the first of `bodies`
    binding it at all (a function's body, then its module's); None when not exactly one."""
    for body in bodies:
        values = [
            node.value
            for node in walk_shallow(body)
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        ]
        if values:
            return values[0] if len(values) == 1 else None
    return None


def modules_below(folder: str, path: str, module: str, is_package: bool) -> str | None:
    """The dotted name of `folder` (relative to the tree's root) as a module path, seen from the
    file at `path` that is `module`: "pkg.thirdparty" for "pkg/thirdparty" (below `src/` in the src
    layout); None when the folder is not below the file's package root."""
    own = module.replace(".", "/") + ("/__init__.py" if is_package else ".py")
    if not path.endswith(own):
        return None
    root = path[: -len(own)]
    if not folder.startswith(root) or len(folder) <= len(root):
        return None
    return folder[len(root) :].replace("/", ".")


def imported_names(tree: ast.Module) -> set[str]:
    """The module names a module imports absolutely (`import a.b`, `from a.b import c` as `a.b.c`,
    `importlib.import_module("a.b")` with a literal), anywhere in it: what it may import from a
    folder it puts on `sys.path`."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.update(f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*")
            names.add(node.module)
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func).rpartition(".")[2] == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def import_path_targets(tree: ast.Module, path: str, module: str, is_package: bool) -> dict[int, list[str]]:
    """By the line of each call putting a consumer folder on `sys.path` (`import_path_folders`) in
    the module `module` at `path`: the module edges it makes, one for each name the module imports
    (`confuciustts.cli.inference` from `pkg/thirdparty`: `pkg.thirdparty.confuciustts.cli.inference`,
    read as the longest module of that name there is). Modules there that import one another by
    such names are not followed further; relative imports are."""
    out: dict[int, list[str]] = {}
    for line, folder in import_path_folders(tree, path).items():
        below = modules_below(folder, path, module, is_package)
        if below is not None:
            out[line] = [f"{below}.{name}" for name in sorted(imported_names(tree))]
    return out
