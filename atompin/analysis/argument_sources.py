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

`origins` asks the other way round, exactly or not at all: every place a call's receiver comes
from, when each is `self.x` of a provider class, handed down through module-level functions'
parameters and constructors (vLLM's warm-up runs `runner._dummy_run(...)` on what
`kernel_warmup(self)` hands down from its GPU `Worker`'s `model_runner`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from atompin.analysis.limits import parse_limited
from atompin.analysis.names import absolute_module
from atompin.analysis.syntax import dotted, own_attribute

Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# How many callers up a parameter is followed (vLLM's composite backends: a method of a class made
# inside `create_composite_attention_backend(general, causal)` hands `general` to a helper).
MAX_DEPTH = 3
# More provider files than this calling a function: where its parameter's value comes from is not read.
MAX_CALLING = 24


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

    def __init__(
        self,
        read: Callable[[str], bytes],
        files_calling: Callable[[str], list[str]],
        module_name: Callable[[str], tuple[str, bool]] | None = None,
        parse: Callable[[str], ast.Module | None] | None = None,
    ) -> None:
        """`read`: a provider file's bytes; `files_calling(name)`: every provider file that calls
        `name` (by name or on an attribute; more is harmless); `module_name(path)`: the file's
        module and whether it is a package's `__init__` (without it, a bare name may be anything
        of that name); `parse(path)`: the file parsed, by someone who keeps the trees (without
        it, `read` and parsed here, once)."""
        self._read, self._search, self._module_name, self._parse = read, files_calling, module_name, parse
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

    def origins(self, path: str, line: int, name: str) -> Origins | None:
        """Where the receiver of the call `.name(...)` at `path:line` comes from, when every way
        there is `self.x` read in a method of a provider class: handed down through parameters of
        module-level functions (`flashinfer_autotune(worker.model_runner)` in `kernel_warmup(worker)`,
        called as `kernel_warmup(self)` in the GPU `Worker`), or through an attribute a class's
        constructor stores from its parameter (`self.worker` of vLLM's elastic-EP executor, made as
        `ElasticEPScalingExecutor(self)`). None when one way is anything else, or cannot be read."""
        index = self._index(path)
        found = index.receiving.get((line, name)) if index is not None else None
        if found is None:
            return None
        scopes, receiver = found
        out = Origins()
        return out if self._origins_of(path, scopes, receiver, (), MAX_DEPTH, out) else None

    def _origins_of(
        self, path: str, scopes: list[Scope], value: ast.expr, then: tuple[str, ...], depth: int, out: Origins
    ) -> bool:
        """Add to `out` where `value`, read inside `scopes`, comes from, and the attributes `then`
        read from it after; False when one way cannot be told."""
        if isinstance(value, ast.Attribute):
            return self._origins_of(path, scopes, value.value, (value.attr, *then), depth, out)
        if not isinstance(value, ast.Name):
            return False
        function = scopes[-1] if scopes and isinstance(scopes[-1], _FUNCTIONS) else None
        if function is None:
            return False
        cls = scopes[0] if len(scopes) == 2 and isinstance(scopes[0], ast.ClassDef) else None
        if cls is not None and _first_parameter(function) == value.id:
            if len(then) == 1:
                out.places.append(Origin(path, cls.name, function.name, then[0]))
                return True
            if len(then) == 2:
                return self._through_constructor(path, cls, then, depth, out)
            return False
        if len(scopes) != 1 or value.id not in _parameters(function) or depth == 0:
            return False  # a local, a closure's or a method's parameter: not followed
        out.followed.append((path, function.name, False))
        return self._each_call(path, function.name, function, value.id, then, depth, out, bound=False)

    def _each_call(
        self,
        path: str,
        name: str,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        parameter: str,
        then: tuple[str, ...],
        depth: int,
        out: Origins,
        bound: bool,
    ) -> bool:
        """Follow what every provider call of `name` (`function`, or a class whose `__init__` it
        is: `bound`) passes for `parameter`; False when one cannot be told, or nothing calls it."""
        files = self._files_calling(name)
        if len(files) > MAX_CALLING:
            return False
        module = self._module_name(path)[0] if self._module_name is not None else ""
        called = False
        for calling in dict.fromkeys([path, *files]):
            index = self._index(calling)
            if index is None:
                return False
            for call, at in index.uses.get(name, ()):
                if call is not None and isinstance(call.func, ast.Name) and not self.binds_to(calling, name, module):
                    continue  # the file's own name for something else
                # (For a class, a use that is no call hands it on, or derives from it: unknown.)
                argument = _argument(call, function, parameter, bound) if call is not None else None
                if argument is None:
                    return False  # handed on by name, or passed by `*args`, `**kw`
                if argument is _DEFAULT:
                    continue
                if not self._origins_of(calling, at, argument, then, depth - 1, out):
                    return False
                called = True
        return called  # one the provider never calls: whoever does is unknown

    def _through_constructor(
        self, path: str, cls: ast.ClassDef, then: tuple[str, ...], depth: int, out: Origins
    ) -> bool:
        """`self.a.b` in a method of module-level class `cls`: where `a` is stored only by its
        `__init__`, from a parameter, followed to what each call of the class passes there."""
        attribute, rest = then[0], then[1:]
        found = _stored_parameter(cls, attribute) if depth > 0 else None
        if found is None:
            return False
        init, parameter = found
        out.followed.append((path, cls.name, True))
        return self._each_call(path, cls.name, init, parameter, rest, depth, out, bound=True)

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

    def binds_to(self, path: str, name: str, module: str) -> bool:
        """May a bare `name` in the file at `path` be `module`'s top-level `name`?"""
        bound = self.binding(path, name)
        if bound is None or self._module_name is None:
            return True  # not bound at its top level: it may be
        here, is_package = self._module_name(path)
        written, level = bound
        if not written and not level:
            return here == module  # its own def or class
        return absolute_module(here, is_package, level, written) == module

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
            if self._parse is not None:
                self._trees[path] = self._parse(path)
                return self._trees[path]
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


@dataclass(frozen=True)
class Origin:
    """`self.attribute` read in `method` of provider class `cls` (module-level) of file `path`."""

    path: str
    cls: str
    method: str
    attribute: str


@dataclass
class Origins:
    """Every place a receiver comes from (`ArgumentSources.origins`), and the provider functions
    and classes whose callers were read on the way there ((file, name, a class?)): a consumer
    calling one of them itself, or deriving from the class, hands it something else."""

    places: list[Origin] = field(default_factory=list)
    followed: list[tuple[str, str, bool]] = field(default_factory=list)


_DEFAULT = ast.Constant(value=None)


def _stored_parameter(cls: ast.ClassDef, attribute: str) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
    """(the class's `__init__`, its parameter) when `self.attribute` of the class is only what
    `__init__` stores from that parameter: `self.attribute = p`, or a property `attribute`
    returning `self.r()` (or a local bound to it) where `__init__` keeps `self.r =
    weakref.ref(p)` (vLLM's elastic-EP executor keeps its worker so)."""
    held = _stored_once(cls, attribute)
    if held is None:
        prop = [f for f in cls.body if isinstance(f, _FUNCTIONS) and f.name == attribute]
        if len(prop) != 1 or not any(
            dotted(d) in ("property", "functools.cached_property", "cached_property") for d in prop[0].decorator_list
        ):
            return None
        reference = _dereferenced(prop[0])
        kept = _stored_once(cls, reference) if reference else None
        if kept is None:
            return None
        init, value = kept
        if not (
            isinstance(value, ast.Call)
            and dotted(value.func) in ("weakref.ref", "ref")
            and len(value.args) == 1
            and not value.keywords
        ):
            return None
        held = init, value.args[0]
    init, value = held
    if not isinstance(value, ast.Name) or value.id not in _parameters(init)[1:] or value.id in _bound_in(init):
        return None
    return init, value.id


def _stored_once(cls: ast.ClassDef, attribute: str) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.expr] | None:
    """(`__init__`, the value) when the class's methods store `self.attribute` once, in its
    `__init__`, by a plain assignment."""
    stores = [
        (method, node)
        for method in cls.body
        if isinstance(method, _FUNCTIONS)
        for node in ast.walk(method)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
        and any(_is_self_attribute(t, method, attribute) for t in _targets(node))
    ]
    if len(stores) != 1 or stores[0][0].name != "__init__":
        return None
    init, store = stores[0]
    if not isinstance(store, ast.Assign) or len(store.targets) != 1 or not isinstance(store.targets[0], ast.Attribute):
        return None
    return init, store.value


def _dereferenced(prop: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """`r` when every `return` of the property gives `self.r()`, or a local bound only to it."""
    self_name = _first_parameter(prop)

    def called_reference(value: ast.expr | None) -> str:
        if (
            isinstance(value, ast.Call)
            and not value.args
            and not value.keywords
            and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Name)
            and value.func.value.id == self_name
        ):
            return value.func.attr
        return ""

    bound: dict[str, list[ast.expr]] = {}
    returns: list[ast.expr | None] = []
    for node in ast.walk(prop):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.Return):
            returns.append(node.value)
    found = set()
    for value in returns:
        if isinstance(value, ast.Name) and len(bound.get(value.id, [])) == 1:
            value = bound[value.id][0]
        found.add(called_reference(value))
    return found.pop() if len(found) == 1 else ""


def _targets(node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> list[ast.expr]:
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]


def _is_self_attribute(target: ast.expr, method: ast.FunctionDef | ast.AsyncFunctionDef, attribute: str) -> bool:
    """Is `target` `self.attribute` (or a tuple holding it), self the method's first parameter?"""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_is_self_attribute(t, method, attribute) for t in target.elts)
    return own_attribute(target, _first_parameter(method)) == attribute


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
        # (line, attribute) -> the first call `receiver.attribute(...)` on that line, any receiver.
        self.receiving: dict[tuple[int, str], tuple[list[Scope], ast.expr]] = {}
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
                if isinstance(func, ast.Attribute):
                    for line in range(node.lineno, (func.end_lineno or node.lineno) + 1):
                        self.receiving.setdefault((line, func.attr), (scopes, func.value))
                        if isinstance(func.value, ast.Name):
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


def _argument(
    call: ast.Call, function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str, bound: bool = False
) -> ast.expr | None:
    """What `call` passes for `parameter` of `function`: the expression, `_DEFAULT` when it passes
    nothing there and the default is a constant, None when it cannot be told (`*args`, `**kw`).
    `bound`: the call binds the first parameter itself (a class's call, of its `__init__`)."""
    for keyword in call.keywords:
        if keyword.arg == parameter:
            return keyword.value
    a = function.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)][1 if bound else 0 :]
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
