"""What a provider function's parameter can hold: the arguments its provider callers pass there.

A provider call made on a parameter (`attn_backend.get_supported_kernel_block_sizes(spec)`
inside vLLM 0.31's `_largest_kernel_block_within(attn_backend, ...)`) is a call on a consumer's
object only if some caller can pass that object there. The function's callers are read (its
own module, and each file that calls it by name: `files_calling`, parsed once) and what each
passes is asked of `ArgumentQuestions`: `self.x` in a method of a class, or a module-level name.
A parameter of the caller is followed to its own callers, a few levels up. Whatever is not read
exactly may hold it: a method's parameter (its callers go through instances), a local, a call, a
`*args`, the function handed on by name in a file read. As the provider's calls are found
everywhere (`callsites`), a file that only hands the function on, never calling it, is not read.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from atompin.analysis.limits import parse_limited

Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# How many callers up a parameter is followed (vLLM's composite backends: a method of a class made
# inside `create_composite_attention_backend(general, causal)` hands `general` to a helper).
MAX_DEPTH = 3


@dataclass(frozen=True)
class ArgumentQuestions:
    """What the asker knows about the values it cares for (a consumer's stand-in, say)."""

    # May `self.x` (`cls.x`) in a method of provider class `cls` (its qualname) in the module of
    # file `path` hold it? (path, class qualname, attribute)
    attribute: Callable[[str, str, str], bool]
    # May module-level name `name` of the module of file `path` hold it? (path, name)
    name: Callable[[str, str], bool]


class ArgumentSources:
    """The provider's files, read to answer `may_hold` (each parsed once)."""

    def __init__(self, read: Callable[[str], bytes], files_calling: Callable[[str], list[str]]) -> None:
        """`read`: a provider file's bytes; `files_calling(name)`: every provider file that calls
        `name` (by name or on an attribute; more is harmless)."""
        self._read, self._search = read, files_calling
        self._trees: dict[str, ast.Module | None] = {}
        self._calling: dict[str, list[str]] = {}
        self._indexes: dict[str, _FileIndex] = {}

    def may_hold(self, path: str, line: int, name: str, ask: ArgumentQuestions) -> bool:
        """May the receiver of the call `.name(...)` at `path:line` hold what `ask` cares for? False
        only when it is a parameter of a module-level function every caller of which passes there
        something `ask` says cannot."""
        index = self._index(path)
        found = index.receiver(line, name) if index is not None else None
        if found is None:
            return True
        scopes, receiver = found
        return self._name_may_hold(path, scopes, receiver, ask, MAX_DEPTH)

    def callers(self, name: str, at_most: int) -> list[tuple[str, ast.Call | None, list[Scope]]] | None:
        """Every use of `name` as a callee (`name(...)`, `x.name(...)`: the call) or a value (None)
        in the provider files that call it, with the scopes around it (outermost first) and its
        file; None when more than `at_most` files call it, or one cannot be read."""
        files = self._files_calling(name)
        if len(files) > at_most:
            return None
        out: list[tuple[str, ast.Call | None, list[Scope]]] = []
        for path in files:
            index = self._index(path)
            if index is None:
                return None
            out += [(path, call, scopes) for call, scopes in index.uses.get(name, ())]
        return out

    def binding(self, path: str, name: str) -> tuple[str, int] | None:
        """Where the module at `path` binds top-level `name` from: (the module written, its
        relative level) for a `from m import name` (or `as name`), ("", 0) for a `def` or `class` of
        its own; None when it binds it otherwise or not at the top level."""
        tree = self.module(path)
        found: tuple[str, int] | None = None
        for node in tree.body if tree is not None else ():
            if isinstance(node, ast.ImportFrom):
                if any((alias.asname or alias.name) == name for alias in node.names):
                    found = (node.module or "", node.level)
            elif isinstance(node, (*_FUNCTIONS, ast.ClassDef)) and node.name == name:
                found = ("", 0)
        return found

    def _index(self, path: str) -> _FileIndex | None:
        if path not in self._indexes:
            tree = self.module(path)
            if tree is None:
                return None
            self._indexes[path] = _FileIndex(tree)
        return self._indexes[path]

    def _files_calling(self, name: str) -> list[str]:
        if name not in self._calling:
            self._calling[name] = self._search(name)
        return self._calling[name]

    def module(self, path: str) -> ast.Module | None:
        """The provider file at `path`, parsed once (None when it cannot be)."""
        if path not in self._trees:
            try:
                self._trees[path] = parse_limited(self._read(path))
            except (SyntaxError, ValueError):
                self._trees[path] = None
        return self._trees[path]

    def _name_may_hold(self, path: str, scopes: list[Scope], name: str, ask: ArgumentQuestions, depth: int) -> bool:
        """May `name`, read inside `scopes` (outermost first), hold it? A parameter of a module-level
        function is followed to its callers; a local is not read; a module-level name is asked."""
        if scopes and isinstance(scopes[-1], ast.ClassDef):
            return True  # read in a class body: its names come first (not followed)
        for i in range(len(scopes) - 1, -1, -1):
            scope = scopes[i]
            if not isinstance(scope, _FUNCTIONS):
                continue  # a class body's names are not its methods'
            if name in _parameters(scope):
                # Followed only for a module-level function: a method's or a closure's callers are not all named.
                return i != 0 or depth == 0 or self._parameter_may_hold(path, scope, name, ask, depth)
            if name in _bound_in(scope):
                return True  # a local: what it holds is not read
        return ask.name(path, name)

    def _parameter_may_hold(
        self,
        path: str,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        parameter: str,
        ask: ArgumentQuestions,
        depth: int,
    ) -> bool:
        """May `parameter` of module-level `function` (of file `path`) hold it: does a caller pass there
        what may? A function the provider never names is called by someone unknown: it may."""
        called = False
        for calling in dict.fromkeys([path, *self._files_calling(function.name)]):
            index = self._index(calling)
            if index is None:
                return True
            for call, scopes in index.uses.get(function.name, ()):
                if call is None:
                    return True  # handed on by name (a callback): who calls it, with what, is unknown
                argument = _argument(call, function, parameter)
                if argument is None:
                    return True
                called = True
                if argument is not _DEFAULT and self._value_may_hold(calling, scopes, argument, ask, depth - 1):
                    return True
        return not called  # never called by the provider: whoever calls it is unknown

    def _value_may_hold(
        self, path: str, scopes: list[Scope], value: ast.expr, ask: ArgumentQuestions, depth: int
    ) -> bool:
        if isinstance(value, ast.Constant):
            return False
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
            method = scopes[-1] if scopes and isinstance(scopes[-1], _FUNCTIONS) else None
            in_class = len(scopes) > 1 and isinstance(scopes[-2], ast.ClassDef)
            if method is not None and in_class and _first_parameter(method) == value.value.id:
                return ask.attribute(path, ".".join(s.name for s in scopes[:-1]), value.attr)
            return True
        if isinstance(value, ast.Name):
            return self._name_may_hold(path, scopes, value.id, ask, depth)
        return True


_DEFAULT = ast.Constant(value=None)


def _parameters(scope: Scope) -> list[str]:
    if not isinstance(scope, _FUNCTIONS):
        return []
    a = scope.args
    return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


def _first_parameter(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    positional = [*function.args.posonlyargs, *function.args.args]
    return positional[0].arg if positional else ""


def _bound_in(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names a function's own body binds (not those of functions or classes inside it)."""
    out: set[str] = set()
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            out.add(node.name)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


class _FileIndex:
    """One module's calls and the names it reads, each with the functions and classes enclosing
    it (outermost first): read once, asked about many names."""

    def __init__(self, tree: ast.Module) -> None:
        # (line, attribute) -> the first call `receiver.attribute(...)` on that line, a plain name receiving.
        self._receivers: dict[tuple[int, str], tuple[list[Scope], str]] = {}
        # name -> each use as a callee (`name(...)`, `x.name(...)`: the call) or as a value (None).
        self.uses: dict[str, list[tuple[ast.Call | None, list[Scope]]]] = {}
        callees: set[int] = set()  # a call is read before its callee: a name read after is a value
        todo: list[tuple[ast.AST, list[Scope]]] = [(tree, [])]
        while todo:
            node, scopes = todo.pop()
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if name:
                    self.uses.setdefault(name, []).append((node, scopes))
                    callees.add(id(func))
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                    for line in range(node.lineno, (func.end_lineno or node.lineno) + 1):
                        self._receivers.setdefault((line, func.attr), (scopes, func.value.id))
            elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
                if id(node) not in callees:  # handed on (`partial(name, ...)`, `f(name)`)
                    self.uses.setdefault(node.id if isinstance(node, ast.Name) else node.attr, []).append((None, []))
            inner = [*scopes, node] if isinstance(node, (*_FUNCTIONS, ast.ClassDef)) else scopes
            todo.extend((child, inner) for child in ast.iter_child_nodes(node))

    def receiver(self, line: int, name: str) -> tuple[list[Scope], str] | None:
        """For the call `receiver.name(...)` on `line`, its receiver a plain name: (the scopes
        enclosing the call, the name)."""
        return self._receivers.get((line, name))


def _argument(call: ast.Call, function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> ast.expr | None:
    """What `call` passes for `parameter` of `function`: the expression, `_DEFAULT` when it passes
    nothing there and the default is a constant, None when it cannot be told (`*args`, `**kw`)."""
    for keyword in call.keywords:
        if keyword.arg == parameter:
            return keyword.value
    a = function.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    index = positional.index(parameter) if parameter in positional else -1
    if any(isinstance(arg, ast.Starred) for arg in call.args[: index + 1 if index >= 0 else len(call.args)]):
        return None
    if 0 <= index < len(call.args):
        return call.args[index]
    if any(keyword.arg is None for keyword in call.keywords):
        return None  # `**kwargs` may pass it
    default = _default(function, parameter)
    return _DEFAULT if isinstance(default, ast.Constant) else None


def _default(function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> ast.expr | None:
    a = function.args
    positional = [*a.posonlyargs, *a.args]
    defaults = dict(zip([p.arg for p in positional[len(positional) - len(a.defaults) :]], a.defaults))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    return defaults.get(parameter)
