"""The provider's own calls of a provider callable: the real calls a consumer's replacement must take.

A patch that installs a narrower function than the original (fewer parameters,
another order) only breaks when something calls it in a way it cannot take.
Here are the calls that reach a given function or method from inside the
provider: by its name where the module binds it, `module.f(...)`, and for
methods `self.m(...)`, `cls.m(...)`, `super().m(...)` and `Cls.m(...)` in the
class hierarchy (calls on receivers of unknown type are not counted). Only the
files whose text mentions the name are parsed, and what each file holds is
cached by its content. A special method's calls through its class (`__init__`,
called as `super().__init__(...)` in a third of vLLM's files) are searched for
as `of_class(name, classes)`: only in the files of the classes' family
(`family`), so not every file that calls the name is parsed.
"""

from __future__ import annotations

import ast
import pickle
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from atompin.analysis.arity import CallShape, binds_receiver
from atompin.analysis.cache import RecordingCache, dump_json, load_json
from atompin.analysis.family import ClassFamily, ClassGraph
from atompin.analysis.limits import parse_expression, parse_limited
from atompin.analysis.moduleinfo import BindingKind
from atompin.analysis.name_sites import NameSearch
from atompin.analysis.names import absolute_module, split_symbol
from atompin.analysis.platform_gates import PlatformGates
from atompin.analysis.prefetch import ANSWER, Shares, Worker, fork_worker, wait_until_ended
from atompin.analysis.provider import ClassRef, ProviderIndex, Target, TargetKind
from atompin.analysis.signature import Signature
from atompin.lines import line_starts
from atompin.model import Site
from atompin.sources.tree import blob_id

CALLS_FORMAT = "atompin-calls-7"

# The provider's files are searched in this many shares when two processes search them.
_SHARES = 32

_OF = " of "


def of_class(name: str, classes: frozenset[str]) -> str:
    """The search for the calls of method `name` that can reach the classes named `classes` (by
    last name): only those in the files of their family (`ClassFamily`). Searched, cached and
    primed as a name is (`CallerSearch.prime`)."""
    return f"{name}{_OF}{','.join(sorted(classes))}" if classes else name


def searched_as(name: str, owner: ClassRef | None) -> str:
    """What `CallerSearch.calls` searches for the calls of `name` that can reach an `owner`: for a
    special method (`__init__`), its calls in the owner's family; else every call of the name."""
    special = name.startswith("__") and name.endswith("__")
    return of_class(name, frozenset({owner.qualname.rpartition(".")[2]})) if owner is not None and special else name


def _called(wanted: str) -> tuple[str, frozenset[str]]:
    """The name called and the classes it is searched through (none: every call), of an `of_class` string."""
    name, _, classes = wanted.partition(_OF)
    return name, frozenset(classes.split(",")) if classes else frozenset()


@dataclass(frozen=True)
class RawCall:
    """A call by name as written in one provider file, before it is resolved."""

    line: int
    how: str  # "name" f(...), "self" self.f(...), "cls" cls.f(...), "super" super().f(...), "attr" x.f(...)
    base: str  # "attr": the dotted receiver as written (x or a.b)
    cls: str  # qualname of the enclosing class ("" outside one)
    function: str  # qualname of the enclosing function ("" at module level)
    shape: CallShape
    # "attr" on a parameter annotated with a class: that class as "module:qualname" (imports followed).
    annotated: str = ""
    # "name" / "attr" through the file's imports: the callee as "module:qualname" ("" when not imported).
    qualified: str = ""
    # The platforms it surely does not run on, under a test of the platform (`platform_gates`).
    never: tuple[str, ...] = ()

    def callee(self, module: str, name: str) -> tuple[str, tuple[str, ...]] | None:
        """Where the callee of this call of `name`, made in `module`, is looked up: (module, attribute
        path); None for `super().name(...)`, looked up along the calling class's MRO, and for
        calls on a receiver of unknown type."""
        if self.how in ("name", "attr") and self.qualified:
            return _symbol_path(self.qualified)  # through the file's imports
        if self.how == "name":
            return module, (name,)
        if self.how == "attr" and self.annotated:
            return _symbol_path(f"{self.annotated}.{name}")
        if self.how == "attr":
            return module, (*self.base.split("."), name)
        if self.how in ("self", "cls") and self.cls:
            return module, (*self.cls.split("."), name)
        return None

    def resolves_in(self, module: str, name: str) -> bool:
        """Is the call resolved in the calling module's own index, not only through the file's imports?"""
        callee = self.callee(module, name)
        return callee is None or callee[0] == module


@dataclass
class _Searched:
    """What a search for the calls of one name searched: each file's stamp then (path -> stamp),
    and the files that made such a call."""

    stamps: dict[str, str]
    found: list[str]


@dataclass(frozen=True)
class ProviderCall:
    """A provider call that reaches a target."""

    site: Site
    shape: CallShape
    function: str  # the enclosing function's symbol, "module:qualname" ("" at module level)
    caller_key: tuple[str, str]  # (owner symbol, function name): matches a consumer patch of the caller
    # The receiver is an instance (`self.f()`, `super().f()`, `x.f()` on an annotated or instance x,
    # `Cls(...)` for `__init__`), not the class (`cls.f()`, `Cls.f()`) nor a module (`f()`).
    through_instance: bool

    def binds(self, sig: Signature) -> bool:
        """Does this call supply the first parameter of `sig`, stored where it reaches: the
        original's, or a replacement's that binds otherwise (`binds_receiver`)?"""
        return binds_receiver(sig, self.through_instance)


class _Collector(ast.NodeVisitor):
    """Calls by `name` in one file. Definitions whose source does not mention the name are not entered."""

    def __init__(
        self, name: str, module: str, is_package: bool, source: bytes = b"", gates: PlatformGates | None = None
    ) -> None:
        self.name = name
        self.gates = gates or PlatformGates([])
        self._needle = name.encode()
        self._source = source
        self._line_starts = line_starts(source)
        self.module = module
        self.is_package = is_package
        self.classes: list[str] = []
        self.functions: list[str] = []
        self.calls: list[RawCall] = []
        self.imported: dict[str, str] = {}  # name -> "module:attr" or "module", from every import in the file
        self.annotations: list[dict[str, str]] = []  # per enclosing function: parameter -> annotation

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.imported[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                self.imported.setdefault(top, top)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        source = absolute_module(self.module, self.is_package, node.level, node.module)
        for alias in node.names:
            self.imported[alias.asname or alias.name] = f"{source}:{alias.name}"

    def _mentions(self, node: ast.stmt) -> bool:
        if not self._source or node.end_lineno is None:
            return True
        starts = self._line_starts
        end = starts[node.end_lineno] if node.end_lineno < len(starts) else len(self._source)
        return self._source.find(self._needle, starts[node.lineno - 1], end) >= 0

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if not self._mentions(node):
            return
        self.classes.append(".".join([*self.classes[-1:], node.name]) if self.classes else node.name)
        self.generic_visit(node)
        self.classes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if not self._mentions(node):
            return
        owner = self.classes[-1] if self.classes else ""
        self.functions.append(f"{owner}.{node.name}" if owner else node.name)
        a = node.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
        self.annotations.append({p.arg: _annotation(p.annotation) for p in params if p.annotation is not None})
        saved, self.classes = self.classes, []  # a class inside a function is not the method's class
        self.generic_visit(node)
        self.classes = saved
        self.functions.pop()
        self.annotations.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        func = node.func
        how, base = "", ""
        if isinstance(func, ast.Name) and func.id == self.name:
            how = "name"
        elif isinstance(func, ast.Attribute) and func.attr == self.name:
            value = func.value
            if isinstance(value, ast.Name) and value.id in ("self", "cls"):
                how = value.id
            elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
                how = "super"
            else:
                base = _dotted(value)
                how = "attr" if base else ""
        if not how:
            return
        shape = CallShape(
            positional=sum(1 for a in node.args if not isinstance(a, ast.Starred)),
            keywords=tuple(k.arg for k in node.keywords if k.arg),
            star=any(isinstance(a, ast.Starred) for a in node.args),
            starstar=any(k.arg is None for k in node.keywords),
        )
        cls = self.classes[-1] if self.classes else ""
        if not cls and self.functions and "." in self.functions[-1]:
            cls = self.functions[-1].rpartition(".")[0]
        function = self.functions[-1] if self.functions else ""
        annotated = qualified = ""
        if how == "attr" and self.annotations and base in self.annotations[-1]:
            annotated = self._qualify(self.annotations[-1][base])
        elif how == "name" and self.name in self.imported:
            qualified = self._qualify(self.name)
        elif how == "attr" and base.split(".")[0] in self.imported:
            qualified = self._qualify(f"{base}.{self.name}")
        never = self.gates.never(node)
        self.calls.append(RawCall(node.lineno, how, base, cls, function, shape, annotated, qualified, never))

    def _qualify(self, annotation: str) -> str:
        """An annotation's class as "module:qualname", through the file's imports (TYPE_CHECKING ones too)."""
        head, _, rest = annotation.partition(".")
        found = self.imported.get(head)
        if found is None:
            return f"{self.module}:{annotation}" if annotation else ""
        if ":" in found:
            return f"{found}.{rest}" if rest else found
        return f"{found}:{rest}" if rest else ""


def _annotation(node: ast.expr) -> str:
    """`Cls`, `mod.Cls`, `"Cls"`, `Cls | None`, `Optional[Cls]`: the one class named, as written."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        parsed = parse_expression(node.value)
        if parsed is None:
            return ""
        node = parsed
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [_annotation(node.left), _annotation(node.right)]
        named = [x for x in sides if x and x != "None"]
        return named[0] if len(named) == 1 else ""
    if isinstance(node, ast.Subscript) and _dotted(node.value).rpartition(".")[2] == "Optional":
        return _annotation(node.slice)
    return _dotted(node)


def call_pattern(names: list[str]) -> re.Pattern[bytes]:
    """A call of one of `names` by name, not its definition: `name(`, `.name(`, with any space
    before the parenthesis (group 1: the name)."""
    return re.compile(rb"(?<!def )\b(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\s*\(")


def caller_key(module: str, function: str) -> tuple[str, str]:
    """(owner symbol, function name) of a function by qualname in `module`: what a consumer patch
    of the caller replaces (`"m:Cls", "f"` for a method, `"m", "f"` for a module-level one)."""
    caller_class, _, func = function.rpartition(".")
    return (f"{module}:{caller_class}" if caller_class else module), func


def _symbol_path(symbol: str) -> tuple[str, tuple[str, ...]]:
    """ "pkg.mod:Cls.f" -> ("pkg.mod", ("Cls", "f"))."""
    module, qualname = split_symbol(symbol)
    return module, tuple(qualname.split(".")) if qualname else ()


def _dotted(node: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return ""


class CallerSearch:
    """Calls of provider callables made by the provider itself (see the module docstring)."""

    # Fewer provider files than this: searching them takes less than a second process costs.
    MIN_FILES = 200

    def __init__(self, index: ProviderIndex, names: NameSearch | None = None, platform: str | None = None) -> None:
        """`names`: the same package's name search, which says which files can call a name (from
        every file's identifiers, or searching in place: `NameSearch.in_place`); one of its own
        when not given. `platform`: the one the code runs on; a call the provider makes only on
        others (`RawCall.never`) is not found (None: any platform may run it)."""
        self.index = index
        self.names = names or NameSearch(index.tree, index.package, index.cache)
        self.platform = platform
        self._raw: dict[str, dict[str, list[RawCall]]] = {}  # name -> path -> calls
        self._worker: Worker | None = None  # searching shares of the files (see `start_search`)
        # Its names, all the files, the files of each share, and the shares not taken yet.
        self._shared: tuple[list[str], list[str], list[list[str]], Shares] | None = None
        self._go: Shares | None = None  # a search started ahead: taken by whoever decides it (`call_off_unstarted`)
        self._earlier: dict[str, _Searched] = {}  # see `_searched`
        self._graph: ClassGraph | None = None  # see `_family`
        self._families: dict[frozenset[str], ClassFamily] = {}

    def start_search(self, names: set[str], ahead: Sequence[Worker] | None = None) -> None:
        """Search for the calls of `names` in two processes (see `prefetch`): the provider's files
        are cut in shares (`Shares`), and a second process takes them one after the other from now
        on, while this one goes on; `prime` takes the shares left here and takes in the second
        one's. Nothing when they are cached, the provider is small, a search is under way, or no
        second process can run. `ahead`: started while the consumer is still scanned, beside these
        children doing the provider's side: the second process waits until they are done (a core
        is free then), and takes the identifiers they read from the cache, or, where they are not
        all there, searches the files in place (`NameSearch.in_place`)."""
        index = self.index
        todo = sorted(n for n in names if n not in self._raw and index.cache.get_raw(self._key(n)) is None)
        files = index.tree.python_files(index.package)
        if not todo or self._worker is not None or len(files) < self.MIN_FILES:
            return
        fresh, _ = self._unsettled(todo, files)
        if len(fresh) < self.MIN_FILES:
            return
        if ahead is None:
            self.names.load()  # the second process finds them in memory
            if self.names.in_place:  # the files that can call them are found once, for both processes
                self.names.files_calling(todo, fresh)
        count = min(_SHARES, len(fresh))
        parts = [fresh[i::count] for i in range(count)]  # every count-th file: shares of a like size
        shares = Shares(count)
        go = self._go = Shares(1) if ahead is not None else None

        def task() -> list[tuple[str, bytes]]:
            recorder = RecordingCache(index.cache.reopened())
            names = self.names
            if ahead is not None:
                wait_until_ended(ahead)
                if go is not None and go.take() is None:
                    return []  # called off (`call_off_unstarted`): the parent searches afresh
                # What those children read is on disk by now when they ended while the scan went on.
                names = NameSearch(index.tree, index.package, recorder)
                names.in_place = not names.all_cached()
            search = CallerSearch(ProviderIndex(index.tree, index.package, recorder), names)
            found = [(share, search._calls_in(todo, parts[share], [])) for share in shares]
            return [(ANSWER, pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL)), *recorder.written]

        self._worker = fork_worker(task)
        self._shared = (todo, files, parts, shares) if self._worker is not None else None

    def close(self) -> None:
        """Stop the second process if what it found was never asked for (the check failed)."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        self._shared = None
        self._go = None

    def call_off_unstarted(self) -> None:
        """Stop a search started `ahead` that has not begun yet: the children it waits for will
        send what they made to this process, not to the cache, so it would search in place (on a git
        commit, a grep of every blob: a third of a second for vLLM). `start_search` after they sent
        it starts one that has their identifiers in memory. A search already under way goes on."""
        if self._go is not None and self._go.take() is not None:
            self.close()
        self._go = None

    def prime(self, names: set[str]) -> None:
        """Find the calls of all `names` in one pass over the provider's files (cached by the files' stamps)."""
        if self._worker is not None:
            self._finish_shared()
        wanted = sorted(n for n in names if n not in self._raw)
        if not wanted:
            return
        todo = []
        for name in wanted:
            cached = self.index.cache.get_raw(self._key(name))
            found = load_json(dict[str, list[RawCall]], cached) if cached is not None else None
            if found is None:
                todo.append(name)
            else:
                self._raw[name] = found
        if todo:
            fresh, known = self._unsettled(todo, self.index.tree.python_files(self.index.package))
            self._raw.update(self._calls_in(todo, fresh, known))
            self._store(todo)

    def _finish_shared(self) -> None:
        """The search `start_search` shared: the shares not taken yet, searched here, then the
        second process's (those it took are searched here too when it failed), merged in the files' order."""
        assert self._worker is not None and self._shared is not None
        names, files, parts, shares = self._shared
        self._shared = None
        _, known = self._unsettled(names, files)
        found = [(-1, self._calls_in(names, [], known))]  # the files an earlier search found
        found += [(share, self._calls_in(names, parts[share], [])) for share in shares]
        answer = self._worker.collect_into(self.index.cache)
        self._worker = None
        theirs: list[tuple[int, dict[str, dict[str, list[RawCall]]]]] = (
            pickle.loads(answer) if answer is not None else []  # from our own child, never from a file
        )
        found += theirs
        done = {share for share, _ in found}
        found += [(share, self._calls_in(names, part, [])) for share, part in enumerate(parts) if share not in done]
        order = {path: i for i, path in enumerate(files)}
        for name in names:
            merged = {path: calls for _, calls_by_name in found for path, calls in calls_by_name[name].items()}
            self._raw[name] = {path: merged[path] for path in sorted(merged, key=order.__getitem__)}
        self._store(names)

    def _store(self, names: list[str]) -> None:
        """Keep the calls of `names` found in every file: the answer for this very package, and what
        was searched (each file's stamp) for a search of another commit (`_unsettled`)."""
        tree = self.index.tree
        stamps = {path: tree.stamp(path) for path in tree.python_files(self.index.package)}
        for name in names:
            self.index.cache.put_raw(self._key(name), dump_json(dict[str, list[RawCall]], self._raw[name]))
            searched = _Searched(stamps, sorted(self._raw[name]))
            self._earlier[name] = searched
            self.index.cache.put_raw(self._searched_key(name), dump_json(_Searched, searched))

    def _searched_key(self, name: str) -> str:
        return f"{CALLS_FORMAT}:searched:{self.index.package}:{name}"

    def _searched(self, name: str) -> _Searched:
        """What the last search for the calls of `name` in this package (at any commit) searched."""
        if name not in self._earlier:
            cached = self.index.cache.get_raw(self._searched_key(name))
            found = load_json(_Searched, cached) if cached is not None else None
            self._earlier[name] = found if found is not None else _Searched({}, [])
        return self._earlier[name]

    def _unsettled(self, names: list[str], files: list[str]) -> tuple[list[str], list[str]]:
        """(the files to search, the files an earlier search found a call in and need not search again):
        a file whose stamp (its content) the last search of every one of `names` met at the same path
        needs no search (a bump changes a few hundred of vLLM's three thousand files; a bisect step, fewer)."""
        tree = self.index.tree
        if any(_called(name)[1] for name in names):
            # A family's search again from the start: a file that did not change may have joined
            # it since (its class derives from one that now derives from the patched one).
            return list(files), []
        earlier = [self._searched(name) for name in names]
        found = set().union(*(e.found for e in earlier))
        fresh, known = [], []
        for path in files:
            stamp = tree.stamp(path)
            if any(e.stamps.get(path) != stamp for e in earlier):
                fresh.append(path)
            elif path in found:
                known.append(path)
        return fresh, known

    def _key(self, name: str) -> str:
        tree = self.index.tree
        return f"{CALLS_FORMAT}:{tree.label}:{tree.package_id(self.index.package)}:{name}"

    def _family(self, classes: frozenset[str]) -> ClassFamily:
        """The family of the provider classes named `classes` (the package's classes read once)."""
        found = self._families.get(classes)
        if found is None:
            if self._graph is None:
                tree = self.index.tree
                self._graph = ClassGraph.read(tree, tree.python_files(self.index.package))
            found = self._families[classes] = self._graph.family(classes)
        return found

    def _calls_in(self, names: list[str], files: list[str], known: list[str]) -> dict[str, dict[str, list[RawCall]]]:
        """name -> path -> the calls of `name` in each of `files` that makes one, and in each of `known`
        (files not searched: they made one before), each file's cached by its path and content. A
        name searched `of_class` counts only the files of the classes' family."""
        out: dict[str, dict[str, list[RawCall]]] = {name: {} for name in names}
        wanted = {each: _called(each) for each in names}
        called = sorted({name for name, _ in wanted.values()})
        families = {each: self._family(classes) for each, (_, classes) in wanted.items() if classes}
        pattern = call_pattern(called)
        tree = self.index.tree
        holding = {*(self.names.files_calling(called, files) if files else ()), *known}
        for path, data in tree.read_many([path for path in (*files, *known) if path in holding]):
            written = {m.decode() for m in pattern.findall(data)}
            # What is searched for here: a name called, through classes whose family this file is of.
            found = [
                each
                for each, (name, _) in wanted.items()
                if name in written and (each not in families or families[each].holds(path, data))
            ]
            hits = {wanted[each][0] for each in found}
            if not hits:
                continue
            content = blob_id(data)
            module, is_package = tree.module_name(path)
            parsed: ast.Module | None = None
            gates: PlatformGates | None = None
            for name in sorted(hits):
                key = f"{CALLS_FORMAT}:{path}:{content}:{name}"  # relative imports read by the path
                cached = self.index.cache.get_raw(key)
                calls = load_json(list[RawCall], cached) if cached is not None else None
                if calls is None:
                    if parsed is None:
                        try:
                            parsed = parse_limited(data)
                        except (SyntaxError, ValueError):
                            break
                    gates = gates or PlatformGates.read(parsed, data)
                    collector = _Collector(name, module, is_package, data, gates)
                    try:
                        collector.visit(parsed)
                    except RecursionError:  # hostile nesting: this file's calls are unknown
                        break
                    calls = collector.calls
                    self.index.cache.put_raw(key, dump_json(list[RawCall], calls))
                if calls:
                    for each in found:
                        if wanted[each][0] == name:
                            out[each][path] = calls
            if parsed is not None and any(
                call.resolves_in(module, wanted[each][0]) for each in found for call in out[each].get(path, ())
            ):
                self.index.adopt(module, is_package, content, data, parsed)
        return out

    def file_calls(self, path: str, name: str) -> list[RawCall]:
        """The calls of `name` written in the file at `path` (none when it is not in the tree): that
        file alone is read, not the package's identifiers."""
        if path not in self.index.tree.files:
            return []
        return self._on_platform(self._calls_in([name], [], [path])[name].get(path, []), path)

    def _on_platform(self, raws: list[RawCall], path: str) -> list[RawCall]:
        """The calls in the file at `path` that may run on the platform (all of them when none is
        given): neither under a test of it that fails there, nor in a module nothing imports there."""
        platform = self.platform
        if platform is None:
            return raws
        return [raw for raw in raws if self.names.runs_on(platform, raw.never, path)]

    def calling_functions(self, name: str) -> list[tuple[str, str]]:
        """Where the provider calls `name`, by any receiver: the (owner symbol, function name) of
        each function making such a call, ("module", "") for a call at module level."""
        self.prime({name})
        out = []
        for path, raws in sorted(self._raw[name].items()):
            module, _ = self.index.tree.module_name(path)
            out += [caller_key(module, raw.function) for raw in self._on_platform(raws, path)]
        return list(dict.fromkeys(out))

    def calling_functions_on(
        self, name: str, owner: ClassRef, replaced: Callable[[tuple[str, str]], bool]
    ) -> tuple[list[tuple[str, str]], bool]:
        """Where the provider calls `name` on what may be an `owner` instance, as `calling_functions`
        says, but a `self.name(...)` made in a method of a class in `owner`'s order counts as made by
        the function an `owner` runs under that method's name: the first class of the order that
        defines it, or that the consumer replaces it on (`replaced`, as the key of that replacement).
        A call in a method an `owner` does not run, or in a class outside its family, is left out.
        Also says whether the provider calls `name` anywhere."""
        self.prime({name})
        out = []
        found = False
        for path, raws in sorted(self._raw[name].items()):
            module, _ = self.index.tree.module_name(path)
            for raw in self._on_platform(raws, path):
                found = True
                key: tuple[str, str] | None = caller_key(module, raw.function)
                # Only a method's own body: a function nested in it runs when something else calls it.
                if raw.how in ("self", "cls", "super") and raw.cls and raw.function.rpartition(".")[0] == raw.cls:
                    key = self._run_on(ClassRef(module, raw.cls), raw.function, owner, replaced)
                if key is not None:
                    out.append(key)
        return list(dict.fromkeys(out)), found

    def _run_on(
        self, cls: ClassRef, function: str, owner: ClassRef, replaced: Callable[[tuple[str, str]], bool]
    ) -> tuple[str, str] | None:
        """The function an `owner` runs under the name of `cls`'s method `function` (a qualname):
        that method, a consumer replacement of it on a class between, or None (another class's
        method takes its place, or `cls` is outside `owner`'s family)."""
        method = function.rpartition(".")[2]
        if owner in self.index.mro(cls):
            return str(cls), method
        mro = self.index.mro(owner)
        if cls not in mro:
            return None
        for node in mro[: mro.index(cls)]:
            if replaced((str(node), method)):
                return str(node), method
            info = self.index.class_info(node) if isinstance(node, ClassRef) else None
            if info is not None and method in info.members:
                return None
        return str(cls), method

    def calls(
        self,
        target: Target,
        name: str,
        owner: ClassRef | None = None,
        replaced: Callable[[tuple[str, str]], bool] = lambda key: False,
        binding: str = "",
    ) -> list[ProviderCall]:
        """The provider's calls that reach `target` (a function or method named `name`, or a class's `__init__`
        when `name` is the class name). With `owner` (the patched class), a method's calls count only where the
        receiver can be an `owner`: a patch of `owner.name` does not change what other subclasses of the
        defining class call. `replaced((owner symbol, function))` says the consumer replaced a method. With
        `binding` (the module whose `name` was patched), a function's calls count only where they read that
        module's binding (`_reads_binding`)."""
        wanted = searched_as(name, owner)
        self.prime({wanted})
        out: list[ProviderCall] = []
        for path, raws in sorted(self._raw[wanted].items()):
            module, _ = self.index.tree.module_name(path)
            for raw in self._on_platform(raws, path):
                through_instance = self._reaches(module, raw, target, name)
                if through_instance is None and owner is not None:
                    through_instance = self._reaches_below(module, raw, target, name, owner)
                if through_instance is None:
                    continue
                if owner is not None and not self._through(module, raw, owner, replaced):
                    continue
                if binding and not self._reads_binding(module, raw, target, name, binding):
                    continue
                function = f"{module}:{raw.function}" if raw.function else ""
                key = caller_key(module, raw.function)
                out.append(ProviderCall(Site(path, raw.line), raw.shape, function, key, through_instance))
        return out

    def _reaches(self, module: str, raw: RawCall, target: Target, name: str) -> bool | None:
        """Does this call reach `target`? None when not; else whether through an instance
        (`ProviderCall.through_instance`)."""
        callee = raw.callee(module, name)
        if callee is None:
            if raw.how == "super" and raw.cls:
                return True if self._super_reaches(ClassRef(module, raw.cls), name, target) else None
            return None
        res = self.index.resolve(*callee)
        found = res.target
        if not res.found or found is None:
            return None
        if target.kind is TargetKind.CLASS:  # Cls(...) reaches Cls.__init__, on the new instance
            return True if found.kind is TargetKind.CLASS and found.symbol == target.symbol else None
        if found.kind is not TargetKind.FUNCTION or found.symbol != target.symbol:
            return None
        if raw.how in ("self", "cls") or raw.annotated:
            return raw.how != "cls"
        return found.through_instance

    def _reaches_below(self, module: str, raw: RawCall, target: Target, name: str, owner: ClassRef) -> bool | None:
        """Does a call on `self` in a method of a base of `owner` reach `target` when the instance is
        an `owner`: the method `owner` runs under `name` (its own, or one below the calling class)?
        vLLM 0.27's `Scheduler.update_from_output` calls `self._update_request_with_output(...)`,
        which `AsyncScheduler`, the default scheduler, defines itself. None when not; else whether
        through an instance. (Whether an `owner` runs the calling method is `_through`'s to say.)"""
        if raw.how not in ("self", "cls") or not raw.cls or target.kind is not TargetKind.FUNCTION:
            return None
        caller = ClassRef(module, raw.cls)
        mro = self.index.mro(owner)
        if caller == owner or caller not in mro:
            return None
        found = self._defined_first(mro[: mro.index(caller)], name)
        return raw.how != "cls" if found is not None and f"{found}.{name}" == target.symbol else None

    def _defined_first(self, order: list[ClassRef | str], name: str) -> ClassRef | None:
        """The first provider class of `order` (part of a class's MRO) that defines `name`; None
        when none does, or an outside class comes first."""
        for node in order:
            if isinstance(node, str):
                return None
            info = self.index.class_info(node)
            if info is not None and name in info.members:
                return node
        return None

    def _reads_binding(self, module: str, raw: RawCall, target: Target, name: str, binding: str) -> bool:
        """Does this call of a function read `binding`'s name for it? A patch of `m.f` replaces one
        module's binding: calls in m by name read it, and so do modules that import the name from m
        (or from a module that does), and `m.f(...)`; a module that imports f from elsewhere keeps the
        original. A patch where f is defined counts every call, as before (a star import or a lazy
        export cannot be followed). The calling file's imports are read from the call (`qualified`),
        so the calling module is not indexed for this."""
        if split_symbol(target.symbol)[0] == binding:
            return True
        if raw.how == "name":
            if module == binding:
                return True
            source, _, attr = raw.qualified.partition(":")
            return bool(raw.qualified) and self._binds_through(source, attr, binding)
        if raw.how != "attr" or raw.annotated:
            return False
        if raw.qualified:  # `m.f(...)` with m imported: "m:f", or "pkg:m.f" after `from pkg import m`
            source, _, path = raw.qualified.partition(":")
            owner = path.rpartition(".")[0]
            receiver = self.index.resolve_symbol(f"{source}:{owner}" if owner else source).target
        else:
            receiver = self.index.resolve(module, tuple(raw.base.split("."))).target
        return (
            receiver is not None
            and receiver.kind is TargetKind.MODULE
            and self._binds_through(receiver.symbol, name, binding)
        )

    def _binds_through(self, module: str, name: str, binding: str) -> bool:
        """Is `module`'s `name` the one `binding` holds: it is `binding`, or imports the name from a module that is?"""
        seen: set[str] = set()
        while module not in seen:
            if module == binding:
                return True
            seen.add(module)
            info = self.index.module(module)
            found = info.bindings.get(name) if info is not None else None
            if found is None or found.kind is not BindingKind.IMPORT:
                return False
            module, _, name = found.target.partition(":")
        return False

    def _through(self, module: str, raw: RawCall, owner: ClassRef, replaced: Callable[[tuple[str, str]], bool]) -> bool:
        """Can the call's receiver be an `owner`? Through an `owner` (or a subclass) it is; `self` in a base
        class's method is one when `owner` inherits that method (neither it nor the consumer overrides it)."""
        if raw.how in ("self", "cls", "super") and raw.cls:
            caller = ClassRef(module, raw.cls)
            # What an `owner` runs under the calling method's name is that method itself.
            return self._run_on(caller, raw.function, owner, replaced) == (str(caller), raw.function.rpartition(".")[2])
        receiver: ClassRef | None = None
        if raw.how == "attr":
            if raw.annotated:
                res = self.index.resolve_symbol(raw.annotated)
            elif raw.qualified and "." in raw.qualified.partition(":")[2]:
                res = self.index.resolve_symbol(raw.qualified.rpartition(".")[0])
            else:
                res = self.index.resolve(module, tuple(raw.base.split(".")))
            receiver = res.target.cls if res.found and res.target is not None else None
        else:
            receiver = None
        return receiver is not None and owner in self.index.mro(receiver)

    def _super_reaches(self, ref: ClassRef, name: str, target: Target) -> bool:
        found = self._defined_first(self.index.mro(ref)[1:], name)
        return found is not None and f"{found}.{name}" == target.symbol
