"""The provider index: a lazy, cached loader of provider modules and the
resolver that answers "does `module:qualname` exist here, and what is it?".

Modules are indexed only when a lookup reaches them (the consumer's
references, re-export chains, base classes), and each file's index is cached
by content, so a warm run parses nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import Enum

from atompin.analysis.cache import AnalysisCache, RecordingCache, cache_key, prepare_codec
from atompin.analysis.dataclass_init import (
    PLAIN_CLASS_DECORATORS,
    FieldLayer,
    generated_init,
    outside_layer,
    writes_init,
)
from atompin.analysis.indexer import index_module, index_tree
from atompin.analysis.moduleinfo import BindingKind, ClassInfo, MemberKind, ModuleInfo
from atompin.analysis.mro import c3_linearize
from atompin.analysis.names import in_package, join_symbol, split_symbol
from atompin.analysis.prefetch import Shares, Task, Worker, fork_worker
from atompin.analysis.signature import Signature
from atompin.model import Rule, Status
from atompin.sources.tree import ModuleFile, ModuleKind, SourceTree


class TargetKind(str, Enum):
    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"  # a module-level def or a method
    VALUE = "value"  # anything else we cannot look into
    INSTANCE = "instance"  # `X = Cls(...)`: attributes are looked up on the class
    EXTERNAL = "external"  # outside the provider package (torch, typing, ...)


@dataclass(frozen=True)
class ClassRef:
    module: str
    qualname: str

    def __str__(self) -> str:
        return f"{self.module}:{self.qualname}"


@dataclass(frozen=True)
class Target:
    """What a symbol turned out to be, and where it is defined."""

    kind: TargetKind
    symbol: str
    signature: Signature | None = None
    cls: ClassRef | None = None  # the class itself (CLASS) or the instance's class (INSTANCE)
    owner: ClassRef | None = None  # for members: the class that defines it
    # A method reached so that its first parameter is supplied (through an instance, or a classmethod).
    bound: bool = False
    # A member reached through an instance, not its class: a plain function stored on the class in
    # its place would be bound (`binds_receiver`).
    through_instance: bool = False


@dataclass(frozen=True)
class Resolution:
    status: Status
    symbol: str
    target: Target | None = None
    reason: str = ""
    # For UNKNOWN: the rule a finding would carry; None means "not worth a finding"
    # (an attribute of a value or of an external object).
    rule: Rule | None = None

    @property
    def found(self) -> bool:
        return self.status is Status.FOUND


# External bases whose members nobody patches; a member missing from a class
# that only inherits these is really missing.
_PLAIN_BASES = {
    *("object", "type", "ABC", "abc.ABC", "ABCMeta", "abc.ABCMeta"),
    *("Generic", "typing.Generic", "Protocol", "typing.Protocol"),
    *("NamedTuple", "typing.NamedTuple", "TypedDict", "typing.TypedDict"),
    *("Enum", "enum.Enum", "IntEnum", "enum.IntEnum", "StrEnum", "enum.StrEnum"),
    *("Exception", "BaseException", "RuntimeError", "ValueError", "TypeError", "KeyError"),
}

# Members those plain bases (or their metaclasses) do provide.
_PLAIN_BASE_MEMBERS = {
    *("register", "_abc_impl"),  # ABC / ABCMeta
    *("name", "value", "_member_map_", "_value2member_map_", "_missing_", "__members__"),  # Enum
    *("_fields", "_replace", "_asdict", "_make", "_field_defaults"),  # NamedTuple
    *("args", "with_traceback", "add_note"),  # exceptions
}


# Less uncached source than this (bytes) named by the consumer: a second process would not pay
# (about a tenth of a second of parsing).
_MIN_UNCACHED = 300_000

# The modules a second process indexes are cut in this many shares (see `indexing_task`).
_INDEX_SHARES = 16


# What an index that may not parse says of a module no cache holds (see `ProviderIndex`).
NOT_INDEXED = "not indexed yet"


class ProviderIndex:
    """Static view of one provider package inside a source tree."""

    def __init__(self, tree: SourceTree, package: str, cache: AnalysisCache | None = None, parses: bool = True) -> None:
        """`parses`: False for an index that only reads what the cache holds (a guess made while
        another process indexes): a module it would have to parse is unknown to it, as one that
        does not parse is."""
        self.tree = tree
        self.package = package
        self.cache = cache or AnalysisCache()
        self.parses = parses
        self._modules: dict[str, ModuleInfo | None] = {}
        self._found: dict[str, ModuleFile | None] = {}
        self._mro: dict[ClassRef, list[ClassRef | str]] = {}
        self._active: set[tuple[str, str]] = set()
        self.parsed = 0
        # What `indexing_task` cut in shares: the shares, each one's symbols, the indexes warmed.
        self._indexing: tuple[Shares, list[list[str]], list[ProviderIndex]] | None = None
        # Might code outside the provider change this module-level table ("module.table"), or the
        # module's `__getattr__` itself, as a consumer that reaches it may? A `__getattr__` serving
        # the keys of tables alone is trusted only where nobody else can; by default, nowhere.
        # (Another provider module changing the table is not looked for: no vLLM release does.)
        self.table_changed_outside: Callable[[str], bool] = lambda table: True

    # -- loading ------------------------------------------------------------

    def find(self, name: str) -> ModuleFile | None:
        """Where module `name` lives in the provider tree (None outside the package or absent)."""
        if name not in self._found:
            self._found[name] = self.tree.find_module(name) if in_package(name, self.package) else None
        return self._found[name]

    def module_kind(self, name: str) -> ModuleKind | None:
        found = self.find(name)
        return found.kind if found else None

    def module(self, name: str) -> ModuleInfo | None:
        """The index of module `name`, parsing (or loading from cache) on first use."""
        if name in self._modules:
            return self._modules[name]
        found = self.find(name)
        info: ModuleInfo | None = None
        if found is not None:
            if not found.path:
                info = ModuleInfo(name=name, is_package=found.is_package)
                if found.kind is ModuleKind.COMPILED:
                    info.error = "compiled"
            else:
                content = self.tree.content_id(found.path)
                key = cache_key(content, name, found.is_package)
                info = self.cache.get(key)
                if info is None and not self.parses:
                    info = ModuleInfo(name=name, is_package=found.is_package, error=NOT_INDEXED)
                elif info is None:
                    info = index_module(self.tree.read(found.path), name, found.is_package)
                    self.parsed += 1
                    self.cache.put(key, info)
        self._modules[name] = info
        return info

    def adopt(self, name: str, is_package: bool, content: str, source: bytes, parsed: ast.Module) -> None:
        """Index module `name` from the syntax tree another search parsed (the caller search: the
        calling module is looked into next), so that `module` does not parse the file again."""
        key = cache_key(content, name, is_package)
        if name not in self._modules and self.cache.get_raw(key) is None:
            self.cache.put(key, index_tree(parsed, source, name, is_package))

    def warm(self, symbols: Iterable[str]) -> None:
        """Resolve `symbols` ("pkg.mod:Name" or module names), the classes they name down their
        bases and the modules they name: what a check will look into, indexed ahead."""
        for symbol in symbols:
            target = self.resolve_symbol(symbol).target
            if target is None:
                continue
            if target.cls is not None:
                self.mro(target.cls)
            elif target.kind is TargetKind.MODULE:  # `from vllm import _custom_ops as ops`: ops.f is read next
                self.module(target.symbol)

    def uncached(self, symbols: Iterable[str]) -> int:
        """How many bytes of source the modules `symbols` name hold that are neither indexed here
        nor cached: the parsing work they are."""
        paths = []
        for module in {split_symbol(symbol)[0] for symbol in symbols}:
            found = self.find(module)
            if module not in self._modules and found is not None and found.path.endswith(".py"):
                key = cache_key(self.tree.content_id(found.path), found.module, found.is_package)
                if self.cache.get_raw(key) is None:
                    paths.append(found.path)
        return sum(self.tree.sizes(sorted(paths)))

    def start_indexing(self, symbols: Iterable[str], also: Sequence[ProviderIndex] = ()) -> Worker | None:
        """`warm` these symbols, here and in the indexes `also` (a baseline), in a second process
        (see `prefetch`); `index_rest` indexes here what it has not taken yet, `collect` takes
        in the indexes it built. None when it would not pay (little to parse) or cannot run here."""
        task = self.indexing_task(symbols, also)
        return fork_worker(task) if task is not None else None

    def indexing_task(self, symbols: Iterable[str], also: Sequence[ProviderIndex] = ()) -> Task | None:
        """What `start_indexing` runs in a second process (to run there beside other work); None
        when what it would parse is too little to pay. The symbols are cut in shares of whole
        modules, in their order (`prefetch.Shares`): the second process warms one after the other,
        and this one, once free, takes those left (`index_rest`). Modules of a like name share
        their bases, so few are indexed in both processes."""
        wanted = sorted(set(symbols))
        indexes = [self, *also]
        size = sum(index.uncached(wanted) for index in indexes)
        if size < _MIN_UNCACHED:
            return None
        prepare_codec(ModuleInfo)
        by_module: dict[str, list[str]] = {}
        for symbol in wanted:
            by_module.setdefault(split_symbol(symbol)[0], []).append(symbol)
        groups = list(by_module.values())
        count = min(_INDEX_SHARES, len(groups))
        parts = [
            [s for group in groups[i * len(groups) // count : (i + 1) * len(groups) // count] for s in group]
            for i in range(count)
        ]
        shares = Shares(count)
        self._indexing = (shares, parts, indexes)

        def task() -> list[tuple[str, bytes]]:
            recorders = [RecordingCache(index.cache.reopened()) for index in indexes]
            copies = [ProviderIndex(index.tree, index.package, recorder) for index, recorder in zip(indexes, recorders)]
            for share in shares:
                for copy in copies:
                    copy.warm(parts[share])
            return [entry for recorder in recorders for entry in recorder.written]

        return task

    def index_rest(self) -> None:
        """Warm here the shares of `indexing_task` that no second process has taken yet (all of
        them when none ran): this process is free, and the second one would take them after
        the others."""
        if self._indexing is None:
            return
        shares, parts, indexes = self._indexing
        self._indexing = None
        for share in shares:
            for index in indexes:
                index.warm(parts[share])

    def collect(self, worker: Worker | None) -> None:
        """Take in what a second process indexed (into the cache, where every index finds it)."""
        if worker is not None:
            worker.collect_into(self.cache)

    def module_path(self, name: str) -> str:
        found = self.find(name)
        return found.path if found else name.replace(".", "/")

    # -- resolution ---------------------------------------------------------

    def resolve_symbol(self, symbol: str) -> Resolution:
        """Resolve "pkg.mod:Cls.attr" (or a bare module name)."""
        module, qualname = split_symbol(symbol)
        return self.resolve(module, qualname.split(".") if qualname else ())

    def normalize(self, module: str, path: Sequence[str]) -> str:
        """("vllm", ["v1", "core", "f"]) -> "vllm.v1.core:f": module parts move left of the colon."""
        rest = list(path)
        while rest and in_package(module, self.package) and self.module_kind(f"{module}.{rest[0]}") is not None:
            module = f"{module}.{rest.pop(0)}"
        return join_symbol(module, rest)

    def takes(self, module: str, path: Sequence[str], name: str) -> bool | None:
        """Does the provider function or method at `path` in `module` have a parameter named `name`
        (what `name in inspect.signature(f).parameters` answers)? None when that is not known."""
        res = self.resolve(module, path)
        target = res.target if res.found else None
        if target is not None and target.kind is TargetKind.CLASS and target.cls is not None:
            # `inspect.signature(C)` is its `__init__`'s, `self` left out.
            if self.generates_init(target.cls):
                generated = self.dataclass_init(target.cls)
                return None if generated is None else any(p.name == name for p in generated.params[1:])
            init = self.getattr(target, "__init__")
            target = init.target if init.found else None
            if target is None or target.kind is not TargetKind.FUNCTION or target.signature is None:
                return None
            return any(param.name == name for param in target.signature.params[1:])
        if target is None or target.kind is not TargetKind.FUNCTION or target.signature is None:
            return None
        return any(param.name == name for param in target.signature.params)

    def resolve(self, module: str, path: Sequence[str]) -> Resolution:
        """Resolve attribute `path` starting at `module`, the way `getattr` chains would."""
        symbol = join_symbol(module, tuple(path))
        if not in_package(module, self.package):
            return Resolution(Status.UNKNOWN, symbol, Target(TargetKind.EXTERNAL, module))
        res = self._module_resolution(module)
        for name in path:
            if not res.found or res.target is None:
                break
            res = self.getattr(res.target, name)
        return replace(res, symbol=symbol)

    def _module_resolution(self, module: str) -> Resolution:
        kind = self.module_kind(module)
        alias = self._finder_alias(module) if kind is None else None
        if alias is not None:
            return alias
        if kind is None:
            parent = module.rpartition(".")[0]
            while parent and self.module_kind(parent) is None:
                parent = parent.rpartition(".")[0]
            where = f" (closest existing package: {parent})" if parent else ""
            return Resolution(Status.MISSING, module, reason=f"no module {module}{where}")
        return Resolution(Status.FOUND, module, Target(TargetKind.MODULE, module))

    def _finder_alias(self, module: str) -> Resolution | None:
        """A module with no file that an import finder of a package above it serves
        (`ModuleInfo.module_aliases`): `pkg.old` is the module the alias names, and `pkg.old.sub`
        that module's `sub` (Python looks for it in the served module's folder). That module's
        resolution; None when no package above has such an alias."""
        parts = module.split(".")
        for i in range(len(parts) - 1, 0, -1):
            parent = ".".join(parts[:i])
            info = self.module(parent) if self.module_kind(parent) is ModuleKind.PACKAGE else None
            target = info.module_aliases.get(parts[i]) if info is not None else None
            if target is None:
                continue
            served = ".".join([target, *parts[i + 1 :]])
            if (module, "") in self._active:
                return None  # an alias table pointing back at itself
            self._active.add((module, ""))
            try:
                res = self._module_resolution(served)
            finally:
                self._active.discard((module, ""))
            if res.status is Status.MISSING:
                how = f"{parent}'s import finder serves {parent}.{parts[i]} from {target}"
                return replace(res, reason=f"{how}: {res.reason}")
            return res
        return None

    def getattr(self, target: Target, name: str) -> Resolution:
        """Look up attribute `name` on something already resolved."""
        if target.kind is TargetKind.MODULE:
            res = self._module_attr(target.symbol, name)
        elif target.kind in (TargetKind.CLASS, TargetKind.INSTANCE) and target.cls is not None:
            res = self._member(target.cls, name, instance=target.kind is TargetKind.INSTANCE)
        else:
            res = None
        if res is not None:
            if res.status is Status.MISSING and name.startswith("__") and name.endswith("__"):
                # __init__, __name__, __dict__ ... come from object/type/module: never missing.
                return Resolution(Status.UNKNOWN, res.symbol, reason="a Python special attribute")
            return res
        # Attributes of functions, plain values and external objects are runtime facts.
        return Resolution(Status.UNKNOWN, f"{target.symbol}.{name}", reason=f"{target.symbol} is a {target.kind.value}")

    def _module_attr(self, module: str, name: str, star: bool = False) -> Resolution:
        """Attribute `name` of `module`; `star`: as `from module import *` copies it (a module
        without `__all__` gives the names it binds, never what its `__getattr__` would serve)."""
        symbol = f"{module}:{name}"
        info = self.module(module)
        if info is None:
            return Resolution(Status.MISSING, symbol, reason=f"no module {module}")
        if info.error == "compiled":
            return Resolution(
                Status.UNKNOWN,
                symbol,
                reason=f"{module} is a compiled extension; its names are not visible",
                rule=Rule.DYNAMIC_TARGET,
            )
        if info.error:
            return Resolution(
                Status.UNKNOWN,
                symbol,
                reason=f"{self.module_path(module)} does not parse ({info.error})",
                rule=Rule.UNPARSEABLE,
            )
        key = (module, name)
        if key in self._active:  # a re-export cycle: Python would fail too, but say unknown
            return Resolution(Status.UNKNOWN, symbol, reason="re-export cycle")
        self._active.add(key)
        try:
            return self._module_attr_uncached(info, name, symbol, star and info.all_names is None)
        finally:
            self._active.discard(key)

    def _module_attr_uncached(self, info: ModuleInfo, name: str, symbol: str, bound_only: bool) -> Resolution:
        module = info.name
        binding = info.bindings.get(name)
        if binding is not None:
            return self._follow_binding(
                info, name, binding.kind, binding.target, binding.alias, binding.instance_of, binding.signature
            )
        if info.is_package and self.module_kind(f"{module}.{name}") is not None:
            return Resolution(Status.FOUND, symbol, Target(TargetKind.MODULE, f"{module}.{name}"))
        if name in info.module_aliases:  # a submodule its import finder serves, as a file's would be
            alias = self._finder_alias(f"{module}.{name}")
            if alias is not None:
                return replace(alias, symbol=symbol)
        for star in info.star_imports:
            res = self._star_export(star, name)
            if res is not None:
                return res
        if bound_only:  # copied by a star import: what `__getattr__` serves is not
            return Resolution(Status.MISSING, symbol, reason=f"{module} has no attribute {name!r}")
        if name in info.lazy_exports:
            target_module, _, attr = info.lazy_exports[name].partition(":")
            res = self.resolve(target_module, (attr,) if attr else ())
            if res.status is not Status.MISSING:
                return replace(res, symbol=symbol)
            return replace(
                res,
                symbol=symbol,
                reason=f"lazy export of {module}.{name} points at {info.lazy_exports[name]}: {res.reason}",
            )
        served = self._served(info)
        if served is not None:
            if name in served:  # one of the names its __getattr__ serves, made when read
                return Resolution(Status.FOUND, symbol, Target(TargetKind.VALUE, symbol))
            what = [f"the keys of {' and '.join(info.getattr_tables)}"] if info.getattr_tables else []
            what += [", ".join(info.getattr_names)] if info.getattr_names else []
            where = f"{self.module_path(module)}:{info.getattr_line}"
            reason = f"{module} has no attribute {name!r}: its __getattr__ ({where}) serves only {' and '.join(what)}"
            return Resolution(Status.MISSING, symbol, reason=reason)
        if info.getattr_line:
            return Resolution(
                Status.UNKNOWN,
                symbol,
                reason=f"served at runtime by {module}.__getattr__ ({self.module_path(module)}:{info.getattr_line})",
                rule=Rule.DYNAMIC_TARGET,
            )
        return Resolution(Status.MISSING, symbol, reason=f"{module} has no attribute {name!r}")

    def _served(self, info: ModuleInfo) -> frozenset[str] | None:
        """The names a module's `__getattr__` serves, when it serves only names it tests for
        literally and the keys of tables no code outside the provider changes
        (`table_changed_outside`); None when it may serve any name."""
        tables = info.getattr_tables
        if not (tables or info.getattr_names) or self.table_changed_outside(f"{info.name}.__getattr__"):
            return None  # (replaced from outside)
        if any(self.table_changed_outside(f"{info.name}.{t}") or t not in info.dict_keys for t in tables):
            return None
        return frozenset([*(key for table in tables for key in info.dict_keys[table]), *info.getattr_names])

    def _star_export(self, star: str, name: str) -> Resolution | None:
        if not in_package(star, self.package):
            return None
        info = self.module(star)
        if info is None:
            return None
        if info.error:
            return self._module_attr(star, name)  # unknown, with the reason
        exported = name in info.all_names if info.all_names is not None else not name.startswith("_")
        if not exported:
            return None
        res = self._module_attr(star, name, star=True)
        return res if res.status is not Status.MISSING else None

    def _follow_binding(
        self,
        info: ModuleInfo,
        name: str,
        kind: BindingKind,
        target: str,
        alias: str,
        instance_of: str,
        signature: Signature | None,
    ) -> Resolution:
        module = info.name
        symbol = f"{module}:{name}"
        plain = Resolution(Status.FOUND, symbol, Target(TargetKind.VALUE, symbol))
        if kind is BindingKind.DEF:
            return Resolution(Status.FOUND, symbol, Target(TargetKind.FUNCTION, symbol, signature))
        if kind is BindingKind.CLASS:
            ref = ClassRef(module, name)
            return Resolution(Status.FOUND, symbol, Target(TargetKind.CLASS, str(ref), cls=ref))
        if kind is BindingKind.MODULE:
            if not in_package(target, self.package):
                return Resolution(Status.FOUND, symbol, Target(TargetKind.EXTERNAL, target))
            res = self._module_resolution(target)
            return res if res.found else plain
        if kind is BindingKind.IMPORT:
            source, _, attr = target.partition(":")
            if not in_package(source, self.package):
                return Resolution(Status.FOUND, symbol, Target(TargetKind.EXTERNAL, f"{source}.{attr}"))
            res = self.resolve(source, (attr,))
            if res.found or res.rule is Rule.UNPARSEABLE:
                return replace(res, symbol=symbol)
            # Whatever the source turns out to be (compiled, lazy, or missing behind a
            # guarded fallback), the import binds the name here.
            return plain
        if alias:
            res = self._resolve_expression(module, alias)
            if res.found:
                return replace(res, symbol=symbol)
        if instance_of:
            res = self._resolve_expression(module, instance_of)
            if res.found and res.target is not None and res.target.kind is TargetKind.CLASS:
                return Resolution(Status.FOUND, symbol, Target(TargetKind.INSTANCE, symbol, cls=res.target.cls))
        return plain

    def _resolve_expression(self, module: str, expression: str) -> Resolution:
        """Resolve a dotted expression as written inside `module` (e.g. a base class)."""
        head, *rest = expression.split(".")
        res = self._module_attr(module, head)
        for part in rest:
            if not res.found or res.target is None:
                break
            res = self.getattr(res.target, part)
        return res

    # -- classes ------------------------------------------------------------

    def class_info(self, ref: ClassRef) -> ClassInfo | None:
        info = self.module(ref.module)
        return info.classes.get(ref.qualname) if info is not None else None

    def mro(self, ref: ClassRef) -> list[ClassRef | str]:
        """The class's C3 linearization; bases outside the provider appear as strings."""
        if ref not in self._mro:
            self._mro[ref] = c3_linearize(ref, self.bases)  # type: ignore[arg-type]
        return self._mro[ref]

    def init_writer(self, ref: ClassRef) -> ClassRef | None:
        """The class, this one or a base before the one that defines `__init__`, whose decorator
        writes the `__init__` a call of `ref` runs (a dataclass, an attrs class): its signature is
        not in the source. None when a class defines it, or the order is not known that far."""
        for node in self.mro(ref):
            info = self.class_info(node) if isinstance(node, ClassRef) else None
            if info is None:
                return None
            if any(writes_init(d) for d in info.decorators):
                return node if isinstance(node, ClassRef) else None
            if "__init__" in info.members:
                return None
        return None

    def generates_init(self, ref: ClassRef) -> bool:
        """Does a decorator write the `__init__` a call of `ref` runs (`init_writer`)?"""
        return self.init_writer(ref) is not None

    def dataclass_init(self, ref: ClassRef) -> Signature | None:
        """The `__init__` a standard-library `@dataclass` writes, when that is what a call of `ref`
        runs (the first class of its order defining `__init__` or generating one is such a
        dataclass, with no other decorator that might replace it): every field of the dataclasses
        in that class's order, the bases' first (one redeclared keeps its place), keyword-only
        ones last; a field written without a value has a default when a class of the order binds
        the name otherwise. None when it is not known for sure: another library writes the
        `__init__`, a class's fields or bases cannot be read, or a base is outside the provider
        (it may declare fields)."""
        runs = self.init_writer(ref)
        info = self.class_info(runs) if runs is not None else None
        if runs is None or info is None or info.fields is None or "__init__" in info.members:
            return None  # another library's, or a dataclass defining its own
        if any(d.rpartition(".")[2] not in PLAIN_CLASS_DECORATORS for d in info.decorators):
            return None  # another decorator may write or wrap __init__
        order = self.mro(ref)
        before = [n for n in order[: order.index(runs)] if isinstance(n, ClassRef)]
        if any((i := self.class_info(n)) is None or i.opaque for n in before):
            return None  # a base the index cannot follow may define __init__
        return generated_init(self.field_layer(node) for node in reversed(self.mro(runs)))

    def namedtuple_new(self, ref: ClassRef) -> Signature | None:
        """The `__new__` a call of `ref` runs when that is the one `typing.NamedTuple` writes: the
        first class of its order defining `__new__` or `__init__`, or a named tuple, is a named
        tuple whose fields could be read (`indexer.namedtuple_fields`). None otherwise."""
        for node in self.mro(ref):
            info = self.class_info(node) if isinstance(node, ClassRef) else None
            if info is None or info.opaque or "__new__" in info.members or "__init__" in info.members:
                return None
            if info.namedtuple and info.fields is not None:
                made = generated_init([FieldLayer(info.fields)])
                if made is None:
                    return None
                return replace(made, params=(replace(made.params[0], name="cls"), *made.params[1:]))
        return None

    def field_layer(self, node: ClassRef | str) -> FieldLayer:
        """A class of a dataclass's order as its generated `__init__` sees it (`dataclass_init`)."""
        if isinstance(node, str):
            return outside_layer(node)
        info = self.class_info(node)
        if info is None or info.opaque:
            return FieldLayer(unknown=True)
        if info.fields is None:
            # Another library's generated __init__, or fields not read for sure: unknown.
            return FieldLayer(unknown=any(writes_init(d) for d in info.decorators), members=frozenset(info.members))
        return FieldLayer(info.fields)

    def bases(self, node: ClassRef | str) -> list[ClassRef | str]:
        """The direct bases of a provider class, resolved (those outside the provider as strings)."""
        if isinstance(node, str):
            return []
        cls = self.class_info(node)
        if cls is None:
            return []
        out: list[ClassRef | str] = []
        for base in cls.bases:
            res = self._resolve_expression(node.module, base)
            if (
                res.found
                and res.target is not None
                and res.target.kind is TargetKind.CLASS
                and res.target.cls is not None
            ):
                out.append(res.target.cls)
            elif res.target is not None and res.target.kind is TargetKind.EXTERNAL:
                out.append(res.target.symbol)
            else:
                out.append(base)
        return out

    def _member(self, ref: ClassRef, name: str, instance: bool = False) -> Resolution:
        symbol = f"{ref}.{name}"
        external: list[str] = []
        for node in self.mro(ref):
            if isinstance(node, str):
                if node not in _PLAIN_BASES:
                    external.append(node)
                continue
            cls = self.class_info(node)
            if cls is None:
                continue
            member = cls.members.get(name)
            if member is not None:
                where = f"{node}.{name}"
                if member.kind is MemberKind.CLASS:
                    inner = ClassRef(node.module, f"{node.qualname}.{name}")
                    return Resolution(Status.FOUND, symbol, Target(TargetKind.CLASS, str(inner), cls=inner))
                if member.kind is MemberKind.DEF:
                    sig = member.signature
                    bound = sig is not None and (sig.is_classmethod or (instance and not sig.is_staticmethod))
                    target = Target(TargetKind.FUNCTION, where, sig, owner=node, bound=bound, through_instance=instance)
                    return Resolution(Status.FOUND, symbol, target)
                return Resolution(Status.FOUND, symbol, Target(TargetKind.VALUE, where, owner=node))
            if cls.has_getattr and instance:  # __getattr__ serves instances, not the class itself
                return Resolution(
                    Status.UNKNOWN, symbol, reason=f"{node} defines __getattr__", rule=Rule.DYNAMIC_TARGET
                )
        if name in _PLAIN_BASE_MEMBERS:  # e.g. ABCMeta.register
            return Resolution(Status.FOUND, symbol, Target(TargetKind.VALUE, symbol))
        if external:
            return Resolution(
                Status.UNKNOWN,
                symbol,
                reason=f"not defined in {ref} or its provider bases; it may come from {', '.join(external)}",
                rule=Rule.DYNAMIC_TARGET,
            )
        return Resolution(
            Status.MISSING, symbol, reason=f"{ref} has no attribute {name!r} (searched {len(self.mro(ref))} classes)"
        )
