"""Which provider class makes what a provider class keeps in one of its attributes.

A provider call on `self.x` (a `NameSite` with `made_by`) reaches whatever the class stored in
x. When the class stores there only what one provider class's constructor makes
(`self.processor = OutputProcessor(...)`), that is exactly an instance of that class; when
only what one of its factories makes (`Engine.from_args(...)`, or the class its return
annotation names), or a class handed in as a parameter annotated `type[Engine]` makes, that
class or a subclass. A call on a provider class named as written (`NewData.from_request(...)`)
runs that class's own method. A provider class that only one provider method makes (vLLM's
elastic-EP executor, made only in its GPU Worker's `__init__`) exists only where that method runs.
The override and protocol rules use this to leave out calls that cannot reach the consumer's class.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

from atompin.analysis.declared_roles import StandingIn, stand_in_for
from atompin.analysis.hierarchy import Hierarchy, annotated_return, provider_class
from atompin.analysis.indexer import CONTAINERS
from atompin.analysis.limits import parse_limited
from atompin.analysis.name_sites import NameSearch, NameSite, open_blocks
from atompin.analysis.names import absolute_module
from atompin.analysis.outside import PROTOCOL_BASES
from atompin.analysis.prose import ProseFinder
from atompin.analysis.provider import ClassRef, TargetKind
from atompin.analysis.usage import Ref
from atompin.model import Status
from atompin.sources.tree import SourceTree


@dataclass(frozen=True)
class Maker:
    """The provider class whose constructor (`exact`) or factory makes what `holder` keeps in an attribute."""

    holder: ClassRef  # the provider class that stores the value (the site's class)
    cls: ClassRef
    exact: bool


def stored_maker(hierarchy: Hierarchy, site: NameSite) -> Maker | None:
    """The maker of the value the call at `site` is made on (see the module docstring). None when
    there is no such maker, or the consumer may put something else there: it patches the name the
    callee goes by, or replaces one of the holder's methods."""
    if not site.made_by or not site.cls:
        return None
    of_class = site.made_by.startswith("type[") and site.made_by.endswith("]")
    parts = tuple((site.made_by[5:-1] if of_class else site.made_by).split("."))
    if hierarchy.patched_names & set(parts):
        return None
    module, _ = hierarchy.index.tree.module_name(site.path)
    holder = ClassRef(module, site.cls)
    if any(patched.startswith(f"{holder}.") for patched in hierarchy.patched):
        return None  # a replaced method of the holder may store something else in x
    made = provider_class(hierarchy.resolve, (Ref(module, parts),))
    if made is not None:
        return Maker(holder, made, exact=not of_class)  # a class handed in may be a subclass
    if of_class:
        return None
    factory_of = provider_class(hierarchy.resolve, (Ref(module, parts[:-1]),)) if len(parts) > 1 else None
    if factory_of is None:
        return None
    product = _annotated_product(hierarchy, Ref(module, parts), factory_of)
    return Maker(holder, product, exact=False) if product is not None else None


def _annotated_product(hierarchy: Hierarchy, factory: Ref, of: ClassRef) -> ClassRef | None:
    """The class a factory of class `of` makes: the one its return annotation names (a factory
    class's `create_connector(...) -> KVConnectorBase`), else `of` itself (`-> Self`, or none
    written). None when the annotation names something that is not a provider class (a type
    variable): then what it makes is unknown."""
    res = hierarchy.resolve((factory,))
    target = res.target if res is not None else None
    named, product = annotated_return(hierarchy, target) if target is not None else ("", None)
    if not named or named.rpartition(".")[2] == "Self":
        return of
    return product


def instance_class(hierarchy: Hierarchy, site: NameSite, tested_only: bool = False) -> ClassRef | None:
    """The provider class the receiver of the call at `site` is an instance of, or of a subclass
    of: the class an `isinstance` test names (`NameSite.instance_of`; not a test of shape), else,
    unless `tested_only`, the one the elements of the collection it is taken from are
    (`NameSite.element_of`): the class written there, or the one the callee written there makes
    (its return annotation's, for a provider function: `get_manager_for_kv_cache_spec(...) ->
    SingleTypeKVCacheManager`). None when unknown, or the consumer patches a name it goes by."""
    module, _ = hierarchy.index.tree.module_name(site.path)
    if site.instance_of and not hierarchy.patched_names & set(site.instance_of.split(".")):
        cls = hierarchy.named_class(module, site.instance_of)
        if cls is not None and not _tested_by_shape(hierarchy, cls):
            return cls
    parts = tuple(site.element_of.split("."))
    if tested_only or not site.element_of or hierarchy.patched_names & set(parts):
        return None
    return hierarchy.written_class(module, site.element_of)


def _tested_by_shape(hierarchy: Hierarchy, cls: ClassRef) -> bool:
    """May `isinstance(x, cls)` hold for an x of a class not deriving from `cls`? A protocol's
    test is of its members (vLLM's `SupportsLoRA`), and a class may define the test itself
    (`__subclasshook__`, `__instancecheck__` on a metaclass is not followed)."""
    for node in hierarchy.index.mro(cls):
        if isinstance(node, str):
            if node in PROTOCOL_BASES:
                return True
            continue
        info = hierarchy.index.class_info(node)
        if info is not None and "__subclasshook__" in info.members:
            return True
    return False


def on_container(hierarchy: Hierarchy, site: NameSite) -> bool:
    """Is the call's receiver `self.x`, an attribute the calling provider class (or a class it
    derives from) stores a container in (`indexer.CONTAINERS`)? Then the call is the container's
    method (vLLM 0.34's worker calls `self._incomplete_weight_updates.discard(...)` on a set),
    never a consumer subclass's or stand-in's."""
    if not site.attribute or not site.cls:
        return False
    module, _ = hierarchy.index.tree.module_name(site.path)
    found = hierarchy.provider_members(ClassRef(module, site.cls)).get(site.attribute)
    return found is not None and found[1].annotation in CONTAINERS


def on_named_class(hierarchy: Hierarchy, site: NameSite) -> bool:
    """Is the call's receiver a provider class named as written (`NewRequestData.from_request(...)`
    in vLLM's scheduler), a name the consumer replaces nowhere and the provider rebinds nowhere?
    Then the call runs that class's own method, never a consumer subclass's or stand-in's."""
    last = site.named.rpartition(".")[2]
    # Replaced by the consumer: patched, or set on any object (vllm-omni sets `module.Request =
    # OmniRequest` on every vLLM module it finds in `sys.modules`).
    if not site.named or last in hierarchy.patched_names or last in hierarchy.member_stores:
        return False
    module, _ = hierarchy.index.tree.module_name(site.path)
    found = hierarchy.index.resolve(module, tuple(site.named.split(".")))
    if found.status is not Status.FOUND or found.target is None or found.target.kind is not TargetKind.CLASS:
        return False
    # A provider function may rebind the module's name (`global NewData; NewData = cls`).
    root = re.escape(site.named.partition(".")[0].encode())
    return re.search(rb"\bglobal\b[^\n]*\b" + root + rb"\b", hierarchy.provider_text(site.path)) is None


@dataclass(frozen=True)
class MadeBeside:
    """Provider class `made` is made only in `maker.method`, which `stand_in`, handed to the
    provider in the maker's place, implements itself (`stand_in_for`)."""

    made: ClassRef
    maker: ClassRef
    method: str
    stand_in: StandingIn

    def telling(self) -> str:
        return (
            f"{self.made} is made only in {self.maker.qualname}.{self.method}, which {self.stand_in.telling()}, "
            "implements itself"
        )


def made_beside_stand_in(hierarchy: Hierarchy, search: NameSearch, site: NameSite) -> MadeBeside | None:
    """Is the call at `site` made in a method of a provider class that only one provider method
    makes, a method a consumer stand-in implements itself? Then the class is never made beside the
    consumer's stand-in, and the call never runs there (vLLM's elastic-EP executor, made only in
    its GPU Worker's `__init__`, beside vllm-spyre's and vllm-ascend's own workers)."""
    if not site.cls or "." in site.cls or not hierarchy.stands_in_anywhere():
        return None
    return made_beside(hierarchy, search, ClassRef(hierarchy.index.tree.module_name(site.path)[0], site.cls))


def made_beside(hierarchy: Hierarchy, search: NameSearch, made: ClassRef) -> MadeBeside | None:
    """`made_beside_stand_in` for provider class `made` (a module-level class)."""
    if "." in made.qualname or not hierarchy.stands_in_anywhere():
        return None
    memo: dict[ClassRef, MadeBeside | None] = hierarchy.memo.setdefault("made_beside_stand_in", {})
    if made not in memo:
        memo[made] = _made_beside_stand_in(hierarchy, search, made)
    return memo[made]


def _made_beside_stand_in(hierarchy: Hierarchy, search: NameSearch, made: ClassRef) -> MadeBeside | None:
    """Every use of the class's name in provider code must be a call of it inside one method, but
    its definition, its imports and prose: not made in two places, nor named otherwise (a base, a
    registry, a dotted path, an annotation), nor named by the consumer (which may make one)."""
    name = made.qualname
    tree = hierarchy.index.tree
    everything: list[str] | None = hierarchy.memo.get("provider_files")
    if everything is None:
        everything = hierarchy.memo["provider_files"] = tree.python_files(hierarchy.index.package)
    # The files calling it (told by the identifiers), their calls placed by indentation, nothing
    # parsed: most classes are made in several places, or in no method a stand-in implements, and
    # are let go here. Only then are those files parsed, and every other file naming it.
    calling = dict(tree.read_many(search.files_calling([name], everything)))
    guessed = {
        (tree.module_name(path)[0], *where) for path, text in calling.items() for where in _calls_by_text(text, name)
    }
    if len(guessed) != 1:
        return None
    [(module, holder, method)] = guessed
    maker = ClassRef(module, holder)
    stand_in = stand_in_for(hierarchy, search, maker, method) if holder and method else None
    if stand_in is None or not _runs_on_instances(hierarchy, maker, method):
        return None
    # A consumer class deriving from the maker and keeping its method runs it; so does a consumer
    # call naming it (`Worker.__init__(self)`); and the consumer naming the class may make one.
    if hierarchy.running(maker, method) or _consumer_names_method(hierarchy, maker, method):
        return None
    if hierarchy.consumer_mentions(name) or _makers(tree, made, calling.items()) != guessed:
        return None
    naming = [path for path in tree.files_containing(everything, [name.encode()]) if path not in calling]
    if _makers(tree, made, tree.read_many(naming)) != set():
        return None
    return MadeBeside(made, maker, method, stand_in)


def _runs_on_instances(hierarchy: Hierarchy, maker: ClassRef, method: str) -> bool:
    """Is the maker's method a plain method of its instances (not a static or class method, which
    the provider may call on the class as written, whatever instance it has)?"""
    info = hierarchy.index.class_info(maker)
    member = info.members.get(method) if info is not None else None
    signature = member.signature if member is not None else None
    return signature is not None and not (signature.is_staticmethod or signature.is_classmethod)


def _consumer_names_method(hierarchy: Hierarchy, maker: ClassRef, method: str) -> bool:
    """Does the consumer read or call `Maker.method` itself (`Worker.__init__(self, config)`)?"""
    usage = hierarchy.usage
    refs = [ref for use in usage.attributes for ref in use.choices] + [
        ref for call in usage.calls for ref in call.choices
    ]
    return any(ref.dotted.split(".")[-2:] == [maker.qualname, method] for ref in refs)


# What `bytes.lstrip` strips: a line's indentation, up to a place on it.
_LEADING_SPACE = re.compile(rb"[ \t\n\r\x0b\x0c]*")


def _calls_by_text(text: bytes, name: str) -> set[tuple[str, str]]:
    """(top-level class, its method) around each call of `name` the text writes (`Name(`,
    `.Name(`), told by indentation (`name_sites.open_blocks`); ("", "") outside a method. A guess:
    the syntax tree decides."""
    prose = ProseFinder(text)
    # Not its own `class Name(Base):` line (nor a `def` of the name: the syntax tree refuses those).
    pattern = re.compile(rb"(?<![\w])(?<!class )(?<!def )" + re.escape(name.encode()) + rb"\s*\(")
    blocks = list(open_blocks(text))
    starts = [start for start, _ in blocks]
    out: set[tuple[str, str]] = set()
    line_start = looked = 0  # looked for from the last call on: a long line is not read again each time
    for match in pattern.finditer(text):
        if prose.at(match.start()):
            continue
        line_start = max(line_start, text.rfind(b"\n", looked, match.start()) + 1)
        looked = match.start()
        indent = _LEADING_SPACE.match(text, line_start, match.start()).end() - line_start  # type: ignore[union-attr]
        before = bisect.bisect_left(starts, line_start)  # the blocks opened on earlier lines
        around = [b for b in (blocks[before - 1][1] if before else ()) if b[0] < indent]
        inside = len(around) > 1 and around[0][:2] == (0, "class") and around[1][1] == "def"
        out.add((around[0][2], around[1][2]) if inside else ("", ""))
    return out


def _makers(tree: SourceTree, made: ClassRef, texts: Iterable[tuple[str, bytes]]) -> set[tuple[str, str, str]] | None:
    """(module, class, method) of each call of class `made` in these files (path, text); None when
    one of them names it any other way (see `_ClassUses`) or cannot be read."""
    word = re.compile(rb"\b" + re.escape(made.qualname.encode()) + rb"\b")
    makers: set[tuple[str, str, str]] = set()
    for path, text in texts:
        if word.search(text) is None:
            continue
        module, is_package = tree.module_name(path)
        try:
            found = _ClassUses(made, module, is_package).read(parse_limited(text))
        except (SyntaxError, ValueError, RecursionError):
            return None
        if found is None:
            return None
        makers |= found
    return makers


class _ClassUses:
    """Where one provider module uses the name of class `cls`: the (module, class, method) of each
    call of it, or None when the module uses the name any other way than by calling it, defining
    it (in its own module) or importing it (from there) under its own name."""

    def __init__(self, cls: ClassRef, module: str, is_package: bool) -> None:
        self.cls, self.module, self.is_package = cls, module, is_package
        self.calls: set[tuple[str, str, str]] = set()
        self.other = False

    def read(self, tree: ast.Module) -> set[tuple[str, str, str]] | None:
        self._visit(tree, "", "")
        return None if self.other else self.calls

    def _visit(self, node: ast.AST, cls: str, method: str) -> None:
        for child in ast.iter_child_nodes(node):
            if self.other:
                return
            self._child(child, node, cls, method)

    def _child(self, child: ast.AST, parent: ast.AST, cls: str, method: str) -> None:
        """Read one node under `parent`, inside class `cls` and its method `method` ("": none)."""
        name = self.cls.qualname
        if isinstance(child, ast.ClassDef):
            if child.name == name and (self.module != self.cls.module or cls or method):
                self.other = True  # another class of the name
            self._visit(child, f"{cls}.{child.name}" if cls else child.name, method)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.other = self.other or child.name == name
            # A nested function runs where its method made it: it counts as that method. What its
            # signature's annotations name it does not make (`def __init__(self, worker: "Worker")`).
            for part in (*child.decorator_list, *child.args.defaults, *filter(None, child.args.kw_defaults)):
                self._child(part, child, cls, method)
            for statement in child.body:
                self._child(statement, child, cls, method or (child.name if cls else ""))
        elif isinstance(child, ast.AnnAssign) and method:
            # `self.sentinel: WorkerSentinel | None = None` in a method: the annotation makes nothing
            # (a class body's field annotation may: a pydantic model builds its fields' classes).
            for part in [child.target, *([child.value] if child.value is not None else [])]:
                self._child(part, child, cls, method)
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            self.other = self.other or not self._imports_own(child)
        elif isinstance(child, ast.Call) and _names(child.func, name):
            self.calls.add((self.module, cls, method))
            for part in (*child.args, *(keyword.value for keyword in child.keywords)):
                self._child(part, child, cls, method)
            if isinstance(child.func, ast.Attribute):
                self._child(child.func.value, child.func, cls, method)
        elif _names(child, name) or (
            isinstance(child, ast.Constant)
            and isinstance(child.value, str)
            and re.search(rf"\b{re.escape(name)}\b", child.value)
            and not (isinstance(parent, ast.Expr) and parent.value is child)  # a docstring
        ):
            self.other = True
        else:
            self._visit(child, cls, method)

    def _imports_own(self, node: ast.Import | ast.ImportFrom) -> bool:
        """Does this import, where it names the class, import it from its module under its name?"""
        name = self.cls.qualname
        for alias in node.names:
            if isinstance(node, ast.Import):
                if name in alias.name.split(".") or alias.asname == name:
                    return False
                continue
            source = absolute_module(self.module, self.is_package, node.level, node.module)
            if alias.name == name and (source != self.cls.module or (alias.asname or name) != name):
                return False
            if alias.asname == name and alias.name != name:
                return False
        return True


def _names(node: ast.AST, name: str) -> bool:
    """Is `node` the name as written (`Name`, `module.Name`)?"""
    return (isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name)
