"""Class hierarchies that cross from the consumer into the provider.

A consumer class may inherit from provider classes directly or through classes of
its own; its method resolution order mixes both. The drift rules need that order to
tell which provider method a consumer method overrides, which provider code calls it,
and what a `super()` call reaches.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from typing import Any

from atompin.analysis.limits import parse_limited
from atompin.analysis.moduleinfo import BindingKind, ClassInfo, Member, MemberKind
from atompin.analysis.mro import c3_linearize
from atompin.analysis.names import split_symbol
from atompin.analysis.provider import ClassRef, ProviderIndex, Resolution, Target, TargetKind
from atompin.analysis.reach import is_test_module
from atompin.analysis.syntax import element_makers
from atompin.analysis.usage import (
    ConsumerClass,
    ConsumerMethod,
    ConsumerUsage,
    Handover,
    HandoverKind,
    MethodRef,
    Receiver,
    Ref,
    Stored,
)
from atompin.model import Status

# Handed over as the class to use: named by dotted path, or passed to a provider call.
_REGISTERED = (HandoverKind.PATH, HandoverKind.CALL)


@dataclass(frozen=True)
class ConsumerRef:
    """A consumer class in a mixed method resolution order, by dotted name."""

    name: str


# One entry of a mixed MRO: a consumer class, a provider class, or an outside base by name.
Node = ConsumerRef | ClassRef | str


@dataclass(frozen=True)
class Definition:
    """Where a name is defined in an MRO: the class, and the consumer method or provider member."""

    node: ConsumerRef | ClassRef
    index: int  # position in the MRO
    method: ConsumerMethod | None = None
    member: Member | None = None


# Outside bases whose classes take their annotated class attributes as constructor fields.
_FIELD_BASES = frozenset({"BaseModel", "NamedTuple", "Struct", "TypedDict"})


def first_found(index: ProviderIndex) -> Callable[[tuple[Ref, ...]], Resolution | None]:
    """A resolver of ladder choices: the first that is found (None when none is)."""
    memo: dict[tuple[Ref, ...], Resolution | None] = {}

    def resolve(choices: tuple[Ref, ...]) -> Resolution | None:
        if choices not in memo:
            memo[choices] = next(
                (r for r in (index.resolve(c.module, c.path) for c in choices) if r.status is Status.FOUND), None
            )
        return memo[choices]

    return resolve


def provider_class(
    resolve: Callable[[tuple[Ref, ...]], Resolution | None], choices: tuple[Ref, ...]
) -> ClassRef | None:
    """The provider class `choices` name (None when it is not a class that resolves)."""
    res = resolve(choices)
    if res is None or res.target is None or res.target.kind is not TargetKind.CLASS:
        return None
    return res.target.cls


def annotated_return(hierarchy: Hierarchy, function: Target) -> tuple[str, ClassRef | None]:
    """What a provider function's return annotation names ("" when it has none), and the provider
    class that is, read where the function is defined (`Hierarchy.named_class`; None when it is
    not one: a type variable, `Self`, an outside class)."""
    named = function.signature.returns_class if function.signature is not None else ""
    if not named:
        return "", None
    return named, hierarchy.named_class(split_symbol(function.symbol)[0], named)


class Hierarchy:
    """Mixed consumer/provider method resolution orders for the consumer's classes."""

    def __init__(
        self,
        usage: ConsumerUsage,
        index: ProviderIndex,
        mentions: Callable[[str], bool] = lambda word: True,
        naming: Callable[[str], AbstractSet[str] | None] = lambda word: None,
        importing: Callable[[str], AbstractSet[str] | None] = lambda module: None,
    ) -> None:
        """`mentions`: does the consumer's text write a word anywhere (unknown, so True, by default);
        `naming`: the consumer's files that write a word; `importing`: those whose imports name a
        consumer module or a name from it (both unknown, None, by default)."""
        self.index = index
        self.usage = usage
        self.classes = {c.name: c for c in usage.contact.classes}
        self.resolve = first_found(index)
        self._mro: dict[str, list[Node]] = {}
        self._below: set[tuple[str, str]] | None = None  # (class, method) defined in a consumer subclass
        self._imported_by: dict[str, set[str]] = {}  # provider module -> the top-level packages it imports
        # Results the rules share (e.g. the override pairs), computed once per hierarchy.
        self.memo: dict[str, Any] = {}
        # Provider methods the consumer patches ("module:Class.method"): their original body never runs.
        self.patched: set[str] = set()
        # Every attribute name the consumer assigns on a provider module or class.
        self.patched_names = {patch.attr for patch in usage.patches}
        # Every attribute name the consumer sets on an object from outside its class, outside its
        # test modules: a test's stub never runs beside the package's code (ai-dynamo's tests set
        # `stub.skipped_waiting`, which its scheduler reads of itself).
        self.member_stores = frozenset(
            store.name for store in usage.contact.outside_stores if not is_test_module(usage.module_of(store.site.path))
        )
        self.consumer_mentions = mentions
        self.consumer_naming = naming
        self.consumer_importing = importing
        for patch in usage.patches:
            cls = provider_class(self.resolve, patch.owner)
            if cls is not None:
                self.patched.add(f"{cls}.{patch.attr}")

    def consumer(self, node: Node) -> ConsumerClass | None:
        return self.classes.get(node.name) if isinstance(node, ConsumerRef) else None

    def derived_from(self, provider: ClassRef) -> list[ConsumerClass]:
        """The consumer classes whose MRO holds provider class `provider`."""
        memo: dict[ClassRef, list[ConsumerClass]] = self.memo.setdefault("derived_from", {})
        if provider not in memo:
            memo[provider] = [cls for cls in self.classes.values() if provider in self.mro(cls.name)]
        return memo[provider]

    def sets_attribute(self, holder: ClassRef, attribute: str) -> bool:
        """Does a consumer class deriving from provider class `holder`, or one of the consumer
        classes in its MRO (a mixin), set `attribute` on its instances (in its body or its
        methods, or by a `setattr` of any name)?"""
        stores = self._stores()
        return any(
            attribute in cls.attributes
            or attribute in cls.assigned
            or "*" in cls.assigned
            or (cls.name, attribute) in stores
            for derived in self.derived_from(holder)
            for cls in map(self.consumer, self.mro(derived.name))
            if cls is not None
        )

    def _stores(self) -> dict[tuple[str, str], list[Stored]]:
        """The scan's `self.x = ...` of each consumer class, by (class, x)."""
        stores: dict[tuple[str, str], list[Stored]] | None = self.memo.get("stores")
        if stores is None:
            stores = self.memo["stores"] = {}
            for stored in self.usage.contact.stores:
                stores.setdefault((stored.holder, stored.member), []).append(stored)
        return stores

    def line(self, names: AbstractSet[str]) -> list[ConsumerClass]:
        """The consumer classes `names` and those deriving from one of them: what an instance of
        one of `names` may be."""
        memo: dict[frozenset[str], list[ConsumerClass]] = self.memo.setdefault("line", {})
        key = frozenset(names)
        if key not in memo:
            refs = {ConsumerRef(name) for name in names}
            memo[key] = [c for c in self.classes.values() if c.name in names or not refs.isdisjoint(self.mro(c.name))]
        return memo[key]

    def line_names(self, names: AbstractSet[str]) -> set[str]:
        """The classes of the order of a class of the `line` of `names`, but the provider's: the
        consumer's by dotted name, outside ones (not `object` and the like) as their headers write
        them. Whose methods may run on an instance of one of `names`."""
        return {
            node.name if isinstance(node, ConsumerRef) else node
            for cls in self.line(names)
            for node in self.mro(cls.name)
            if isinstance(node, ConsumerRef) or (isinstance(node, str) and node not in PLAIN_BASES)
        } | set(names)

    def takes_as_field(self, ref: ClassRef) -> bool:
        """Does provider class `ref`'s constructor take its annotated class attributes as fields (a
        generated `__init__`: a dataclass; a pydantic model, a named tuple, a msgspec struct)?"""
        return self.index.generates_init(ref) or any(
            isinstance(node, str) and node.rpartition(".")[2] in _FIELD_BASES for node in self.index.mro(ref)
        )

    def made_instances(self, name: str) -> set[ClassRef]:
        """The provider classes consumer class `name` keeps instances of (`self.x = Cls(...)`)."""
        made: dict[str, set[ClassRef]] | None = self.memo.get("made_instances")
        if made is None:
            made = self.memo["made_instances"] = {}
            for stored in self.usage.contact.stores:
                cls = provider_class(self.resolve, stored.made) if stored.made else None
                if cls is not None:
                    made.setdefault(stored.holder, set()).add(cls)
        return made.get(name, set())

    def taken_over_by(self, provider: ClassRef, method: str) -> str:
        """The consumer class that overrides `method` of provider class `provider` without calling
        it (no `super()`, no `Base.m(self, ...)`), when every consumer class deriving from `provider`
        meets such an override first: then the provider's method runs only for instances the
        consumer does not make. "" when some consumer class still runs it (or none derives)."""
        memo: dict[tuple[ClassRef, str], str] = self.memo.setdefault("taken_over_by", {})
        key = (provider, method)
        if key not in memo:
            by = ""
            for cls in self.derived_from(provider):
                taker = self._taker(cls, method)
                if taker is None:
                    by = ""
                    break
                owner = self.consumer(taker.node)
                by = by or (owner.symbol if owner is not None and not owner.muted else "")
            memo[key] = by
        return memo[key]

    def standing_in(self, holder: ClassRef, method: str) -> ConsumerClass | None:
        """A consumer class handed to the provider as the class to use (`registered`) that
        implements `method` itself beside provider class `holder`: it derives from a provider base
        of holder's, not from holder (vllm-ascend's NPUWorker, a WorkerBase named as its
        platform's worker class, beside vLLM's GPU Worker). Where it stands in, holder's `method`
        runs only on instances of holder the consumer does not make. None when there is none."""
        memo: dict[tuple[ClassRef, str], ConsumerClass | None] = self.memo.setdefault("standing_in", {})
        key = (holder, method)
        if key not in memo:
            handed = self.registered()
            bases = [node for node in self.index.mro(holder)[1:] if isinstance(node, ClassRef)]
            memo[key] = next(
                (
                    cls
                    for base in bases
                    for cls in self.derived_from(base)
                    if cls.name in handed
                    and not cls.muted
                    and cls.method(method) is not None
                    and holder not in self.mro(cls.name)
                ),
                None,
            )
        return memo[key]

    def registered(self) -> set[str]:
        """The consumer classes handed to the provider as the class to use: named by dotted path,
        passed to a provider call, or returned by a method the provider calls for a class
        (`returned_to_provider`: ATOM's attention backend's `get_impl_cls`)."""
        found: set[str] | None = self.memo.get("registered")
        if found is None:
            handovers = self.usage.contact.handovers
            found = self.memo["registered"] = {h.target for h in handovers if h.kind in _REGISTERED} | {
                h.target for h in self.returned_to_provider()
            }
        return found

    def returned_to_provider(self) -> list[Handover]:
        """The RETURNED handovers whose method the provider calls: an override of a provider
        method, or a method of a consumer class the consumer hands over itself (a backend class
        named by its platform, whose `get_impl_cls` returns the class of its layers)."""
        found: list[Handover] | None = self.memo.get("returned_to_provider")
        if found is None:
            handovers = self.usage.contact.handovers
            targets = {h.target for h in handovers}
            found = self.memo["returned_to_provider"] = [
                h
                for h in handovers
                if h.kind is HandoverKind.RETURNED
                and h.holder in self.classes
                and (
                    h.holder in targets
                    or any(isinstance(d.node, ClassRef) for d in self.definitions(h.holder, h.member))
                )
            ]
        return found

    def stands_in_anywhere(self) -> bool:
        """Might a consumer class stand in for some provider class (`standing_in`): is one handed
        to the provider that derives from a provider class? Asked before searching for one."""
        found: bool | None = self.memo.get("stands_in_anywhere")
        if found is None:
            handed = self.registered()
            found = self.memo["stands_in_anywhere"] = any(
                name in self.classes and self.has_provider_base(name) for name in handed
            )
        return found

    def running(self, provider: ClassRef, method: str) -> list[ConsumerClass]:
        """The consumer classes deriving from provider class `provider` that still run its `method`
        (no override of theirs takes it over: see `taken_over_by`)."""
        return [cls for cls in self.derived_from(provider) if self._taker(cls, method) is None]

    def _taker(self, cls: ConsumerClass, method: str) -> Definition | None:
        """The consumer override of `method` that consumer class `cls` meets first and that does not
        call on; None when a provider class's method is reached."""
        # Follow `super()` down the MRO: a subclass's override may hand on to another consumer
        # override that does not (vllm-ascend's 310P sampler to its sampler).
        for definition in self.definitions(cls.name, method):
            if definition.method is None or definition.method.delegates_to:
                return None  # a provider class's method is reached (or a base's, called by name)
            if not definition.method.calls_super:
                return definition
        return None

    def kept_in(self, name: str, attribute: str) -> list[str] | None:
        """The consumer classes whose instances (or which themselves) instances of consumer class
        `name` keep in `attribute`, by every `self.attribute = ...` of the consumer classes of its
        MRO: `= Runner(...)`, or `= self.runner_cls(...)` with `runner_cls` a class attribute set to
        a consumer class in the MRO. None when one of them stores something else, or none does."""
        stores = self._stores()
        out: list[str] = []
        for node in self.mro(name):
            cls = self.consumer(node)
            if cls is None:
                continue
            mine = stores.get((cls.name, attribute), [])
            if "*" in cls.assigned or (attribute in cls.assigned and not mine):
                return None  # `setattr` of any name, or assignments the scan did not read (a helper's)
            for stored in mine:
                found = [stored.cls] if stored.cls else self._class_attribute(name, stored.attribute)
                if not found:
                    return None
                out += found
        return out or None

    def _class_attribute(self, name: str, attribute: str) -> list[str]:
        """The consumer classes a class attribute of consumer class `name` is set to (in the body
        of the first class of its MRO that sets it); none when that is not a consumer class, or an
        instance may set the attribute too."""
        if not attribute:
            return []
        for node in self.mro(name):
            cls = self.consumer(node)
            if cls is None:
                info = self.provider(node)
                if info is not None and attribute in info.members:
                    return []  # the provider's value
                continue
            if attribute in cls.assigned:
                return []
            if attribute in cls.attributes:
                handed = self._class_attributes().get((cls.name, attribute), [])
                return handed if handed and all(h in self.classes for h in handed) else []
        return []

    def _class_attributes(self) -> dict[tuple[str, str], list[str]]:
        """The consumer classes each class attribute is set to in a class body, by (class, name)."""
        found: dict[tuple[str, str], list[str]] | None = self.memo.get("class_attributes")
        if found is None:
            found = self.memo["class_attributes"] = {}
            for h in self.usage.contact.handovers:
                if h.kind is HandoverKind.ATTRIBUTE:
                    found.setdefault((h.holder, h.member), []).append(h.target)
        return found

    def provider(self, node: Node) -> ClassInfo | None:
        return self.index.class_info(node) if isinstance(node, ClassRef) else None

    def at(self, index: ProviderIndex) -> Hierarchy:
        """The same consumer classes over another provider (the baseline's), made once for all
        the rules that ask."""
        others: dict[ProviderIndex, Hierarchy] = self.memo.setdefault("at", {})
        if index not in others:
            others[index] = Hierarchy(self.usage, index, self.consumer_mentions)
        return others[index]

    def annotated_class(self, holder: ClassRef, member: Member) -> ClassRef | None:
        """The provider class that `member` of provider class `holder` is annotated with, read in
        `holder`'s module, or made by (a module-level function's return annotation, for a member
        stored from its call); None: no annotation, a name of the class's own scope, not a class."""
        if not member.annotation:
            return None
        info = self.provider(holder)
        first = member.annotation.split(".")[0]
        if info is not None and first in info.members:
            return None  # a name of the class's own scope (a nested class): not the module's
        # (`self.x = make(...)`: vLLM's `self.coordinator = get_kv_cache_coordinator(...)`.)
        return self.written_class(holder.module, member.annotation)

    def element_class(self, holder: ClassRef, attribute: str) -> ClassRef | None:
        """The provider class every element of the collection provider class `holder` keeps in
        `attribute` is an instance of (or of a subclass of), as its body says
        (`syntax.element_makers`: `x: tuple[Manager, ...]`, `self.x = tuple(make(...) for ...)`
        with `make` annotated to return one); None when unknown, or the consumer patches a name
        it goes by. Read from the class's source, once per class."""
        memo: dict[ClassRef, dict[str, str]] = self.memo.setdefault("element_makers", {})
        if holder not in memo:
            memo[holder] = self._element_makers(holder)
        written = memo[holder].get(attribute, "")
        if not written or self.patched_names & set(written.split(".")):
            return None
        return self.written_class(holder.module, written)

    def written_class(self, module: str, written: str) -> ClassRef | None:
        """The provider class a name written in provider module `module` stands for
        (`named_class`), or the one it makes: a provider function's or method's, as its return
        annotation names it (`annotated_return`)."""
        cls = self.named_class(module, written)
        if cls is not None:
            return cls
        res = self.resolve((Ref(module, tuple(written.split("."))),))
        target = res.target if res is not None else None
        if target is None or target.kind is not TargetKind.FUNCTION:
            return None
        return annotated_return(self, target)[1]

    def _element_makers(self, holder: ClassRef) -> dict[str, str]:
        node = self.class_node(holder)
        return element_makers(node) if node is not None else {}

    def named_class(self, module: str, named: str) -> ClassRef | None:
        """The provider class a name written in provider module `module` stands for ("Config",
        "config.Config", as an annotation writes it), also through a name only an `if
        TYPE_CHECKING:` import binds there (`ModuleInfo.type_only`: vLLM imports most classes it
        annotates with so); None when it is not a provider class."""
        parts = tuple(named.split("."))
        cls = provider_class(self.resolve, (Ref(module, parts),))
        if cls is not None:
            return cls
        info = self.index.module(module)
        target = info.type_only.get(parts[0], "") if info is not None else ""
        if not target:
            return None
        imported, _, name = target.partition(":")
        return provider_class(self.resolve, (Ref(imported, (name, *parts[1:]) if name else parts[1:]),))

    def bases(self, cls: ConsumerClass) -> list[Node]:
        out: list[Node] = []
        for base in cls.bases:
            if base.provider:
                ref = provider_class(self.resolve, base.provider)
                out.append(ref if ref is not None else base.text or "?")
            elif base.consumer and base.consumer in self.classes:
                out.append(ConsumerRef(base.consumer))
            elif base.text:
                out.append(base.text)
        return out

    def patched_in_place(self) -> frozenset[ClassRef]:
        """The provider classes a consumer class sets its members on (`ClassBase.in_place`:
        arctic-inference's `GPUModelRunnerPatch(ArcticPatch[GPUModelRunner])`)."""
        found: frozenset[ClassRef] | None = self.memo.get("patched_in_place")
        if found is None:
            refs = (
                provider_class(self.resolve, base.provider)
                for cls in self.classes.values()
                for base in cls.bases
                if base.in_place and base.provider
            )
            found = self.memo["patched_in_place"] = frozenset(ref for ref in refs if ref is not None)
        return found

    def mro(self, name: str) -> list[Node]:
        """The C3 order of a consumer class over consumer and provider classes alike."""
        if name not in self._mro:
            self._mro[name] = c3_linearize(ConsumerRef(name), self._bases_of)  # type: ignore[arg-type]
        return self._mro[name]

    def _bases_of(self, node: Node) -> list[Node]:
        if isinstance(node, ConsumerRef):
            cls = self.classes.get(node.name)
            return self.bases(cls) if cls is not None else []
        if isinstance(node, ClassRef):
            return list(self.index.bases(node))
        return []

    def provider_tree(self, path: str) -> ast.Module | None:
        """A provider file, parsed once per check (None when it cannot be read or parsed)."""
        trees: dict[str, ast.Module | None] = self.memo.setdefault("provider_trees", {})
        if path not in trees:
            try:
                trees[path] = parse_limited(self.provider_text(path))
            except (SyntaxError, ValueError, OSError, KeyError):
                trees[path] = None
        return trees[path]

    def class_node(self, ref: ClassRef) -> ast.ClassDef | None:
        """The `class` statement of provider class `ref`, nested ones followed by its qualname
        (None when its module does not define it so)."""
        tree = self.provider_tree(self.index.module_path(ref.module))
        node: ast.ClassDef | None = None
        body: list[ast.stmt] = tree.body if tree is not None else []
        for name in ref.qualname.split("."):
            node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == name), None)
            if node is None:
                return None
            body = node.body
        return node

    def provider_text(self, path: str) -> bytes:
        """The text of a provider file, read once per check (the rules ask about a few files often)."""
        texts: dict[str, bytes] = self.memo.setdefault("provider_texts", {})
        if path not in texts:
            texts[path] = self.index.tree.read(path)
        return texts[path]

    def has_provider_base(self, name: str) -> bool:
        return any(isinstance(n, ClassRef) for n in self.mro(name))

    def definitions(self, name: str, attr: str) -> list[Definition]:
        """Every class in the MRO of consumer class `name` that defines `attr`, in order."""
        out: list[Definition] = []
        for i, node in enumerate(self.mro(name)):
            consumer = self.consumer(node)
            if consumer is not None and isinstance(node, ConsumerRef):
                method = consumer.method(attr)
                if method is not None:
                    out.append(Definition(node, i, method=method))
                elif attr in consumer.attributes:
                    out.append(Definition(node, i))
                continue
            info = self.provider(node)
            if info is not None and isinstance(node, ClassRef) and attr in info.members:
                out.append(Definition(node, i, member=info.members[attr]))
        return out

    def consumer_members(self, name: str) -> set[str]:
        """Names the consumer classes of the MRO define (methods and class attributes)."""
        out: set[str] = set()
        for node in self.mro(name):
            cls = self.consumer(node)
            if cls is not None:
                out.update(m.name for m in cls.methods)
                out.update(cls.attributes)
        return out

    def provider_members(self, ref: ClassRef) -> dict[str, tuple[ClassRef, Member]]:
        """Every member of a provider class through its MRO: name -> (defining class, member)."""
        out: dict[str, tuple[ClassRef, Member]] = {}
        for node in self.index.mro(ref):
            info = self.index.class_info(node) if isinstance(node, ClassRef) else None
            if info is None or not isinstance(node, ClassRef):
                continue
            for name, member in info.members.items():
                out.setdefault(name, (node, member))
        return out

    def runs(self, cls: str, method: str, provider: ClassRef, _seen: frozenset[str] = frozenset()) -> bool:
        """Does `provider`'s own `method` run for instances of consumer class `cls`? Yes when it wins
        the MRO, or when every consumer override before it hands on to the original; not when the
        consumer patches it (the replacement runs instead). A private method (`_name`) runs only
        when provider code that still runs calls it on the object."""
        if f"{provider}.{method}" in self.patched or not self._wins(cls, method, provider):
            return False
        if not method.startswith("_") or method.startswith("__"):
            return True
        if method in self._called_on_self(cls):
            return True  # the consumer's own code calls it on the object (vllm-omni's `_cached_apply_hf_processor`)
        seen = _seen | {method}
        return any(
            self.runs(cls, call.method, node, seen)
            for node in self.mro(cls)
            if isinstance(node, ClassRef) and (info := self.provider(node)) is not None
            for call in info.self_calls
            if call.name == method and call.receiver == "self" and call.method not in seen
        )

    def _called_on_self(self, cls: str) -> set[str]:
        """The methods the consumer's own code calls on instances of consumer class `cls`: every
        `self.m(...)` written in the methods of a consumer class of its order."""
        memo: dict[str, set[str]] = self.memo.setdefault("called_on_self", {})
        if cls not in memo:
            if "self_calls" not in self.memo:  # consumer class -> the names its methods call on self
                written: dict[str, set[str]] = {}
                for call in self.usage.contact.method_calls:
                    if call.method.receiver is Receiver.SELF and not call.method.via:
                        written.setdefault(call.method.owner, set()).add(call.method.name)
                self.memo["self_calls"] = written
            by_owner: dict[str, set[str]] = self.memo["self_calls"]
            memo[cls] = {
                n for node in self.mro(cls) if isinstance(node, ConsumerRef) for n in by_owner.get(node.name, ())
            }
        return memo[cls]

    def _wins(self, cls: str, method: str, provider: ClassRef) -> bool:
        for d in self.definitions(cls, method):
            if d.node == provider:
                return True
            if isinstance(d.node, ConsumerRef):
                if d.method is None or not self.calls_original(d.node.name, d.method):
                    return False
                continue
            return False  # another provider class's version wins
        return False

    def calls_original(self, name: str, method: ConsumerMethod) -> bool:
        """Does a consumer method hand on to the method it overrides: `super().m(...)`, or
        `Base.m(self, ...)` with a base in the MRO of class `name` (not `nn.Module.__init__(self)`)
        whose order reaches the overridden provider method (`_hands_on`)?"""
        if method.calls_super:
            return True
        mro = self.mro(name)
        # The provider class whose method it overrides (none known: a consumer or outside class first).
        found = self.lookup(name, method.name, after=0)
        overridden = found.node if isinstance(found, Definition) and isinstance(found.node, ClassRef) else None
        for base in method.delegates_to:
            cls = provider_class(self.resolve, base.provider) if base.provider else None
            if cls is not None and cls in mro and (overridden is None or self._hands_on(cls, method.name, overridden)):
                return True
            if base.consumer and ConsumerRef(base.consumer) in mro:
                return True
        return False

    def explicitly_reached(self, method: ConsumerMethod) -> set[ClassRef]:
        """The provider classes a consumer method may run the method of its name of by calling a
        provider base explicitly (`Base.m(self, ...)`): Base's order. tpu-inference's
        `VllmMxfp4MoEMethod.__init__` calls `FusedMoEMethodBase.__init__`, not the
        `Mxfp4MoEMethod.__init__` it overrides, where vLLM 0.27 sets `is_k3_situ_aiter`."""
        bases = (provider_class(self.resolve, base.provider) for base in method.delegates_to if base.provider)
        return {node for cls in bases if cls is not None for node in self.index.mro(cls) if isinstance(node, ClassRef)}

    def _hands_on(self, cls: ClassRef, attr: str, overridden: ClassRef) -> bool:
        """Does `cls.attr` (provider class `cls`) run, or may it run, `overridden`'s `attr`? Not when
        `overridden` is not in its order, nor when a class before it there defines `attr`."""
        for node in self.index.mro(cls):
            if node == overridden:
                return True
            info = self.index.class_info(node) if isinstance(node, ClassRef) else None
            if info is None:
                return overridden in self.index.mro(cls)  # an outside or unindexed class first: may
            if attr in info.members:
                return False
        return False

    def lookup(self, name: str, attr: str, after: int = -1) -> Definition | str | None:
        """The first class after position `after` in the MRO of `name` that defines `attr`; an
        outside base's name when one comes first (it may define `attr`: unknown); None when none does."""
        wanted = {d.index: d for d in self.definitions(name, attr) if d.index > after}
        mro = self.mro(name)
        for i, node in enumerate(mro):
            if i <= after:
                continue
            if i in wanted:
                found = wanted[i]
                if isinstance(found.node, ClassRef):
                    return self._outside_before(mro[i + 1 :], found.node) or found
                return found
            if isinstance(node, str) and node not in PLAIN_BASES:
                return node
        return None

    def _outside_before(self, rest: list[Node], cls: ClassRef) -> str | None:
        """An outside base after provider class `cls` in a computed order that may really come
        before it: its own bases are unknown, and it may derive from `cls` (another plugin's runner
        subclassing the provider's), overriding what `cls` defines. None when none may."""
        outside = [n for n in rest if isinstance(n, str) and n not in PLAIN_BASES]
        if not outside:
            return None
        above = set(self.index.mro(cls))  # its own bases come after it: none of them
        return next((n for n in outside if n not in above and self._may_derive_from(n, cls)), None)

    def _may_derive_from(self, node: str, cls: ClassRef) -> bool:
        """Can an outside base derive from a provider class? Not when its package is one the
        provider class's module imports (a package the provider depends on cannot build on the
        provider's classes)."""
        if cls.module not in self._imported_by:
            info = self.index.module(cls.module)
            bindings = info.bindings.values() if info is not None else ()
            self._imported_by[cls.module] = {
                b.target.split(":")[0].split(".")[0]
                for b in bindings
                if b.kind in (BindingKind.IMPORT, BindingKind.MODULE) and b.target
            }
        return node.split(".")[0].split(":")[0] not in self._imported_by[cls.module]

    def subclass_defines(self, owner: str, attr: str) -> bool:
        """Does a consumer class deriving from `owner` define `attr` (so `self.attr` may land there)?"""
        if self._below is None:
            self._below = set()
            for name, cls in self.classes.items():
                for node in self.mro(name)[1:]:
                    if isinstance(node, ConsumerRef):
                        self._below.update((node.name, m.name) for m in cls.methods)
        return (owner, attr) in self._below

    def instance_class(self, choices: tuple[Ref, ...]) -> ClassRef | None:
        """The provider class an instance typed by `choices` is: the class itself, or the one a
        provider function's return annotation names (`self.rope = get_rope(...)`, `-> RotaryEmbedding`,
        read where the function is defined). None when neither is a provider class."""
        cls = provider_class(self.resolve, choices)
        if cls is not None:
            return cls
        res = self.resolve(choices)
        target = res.target if res is not None else None
        if target is None or target.kind is not TargetKind.FUNCTION:
            return None
        return annotated_return(self, target)[1]

    def provider_method(self, ref: MethodRef) -> tuple[ClassRef, Member] | None:
        """The provider method a call through a receiver lands on (None: the consumer's own,
        an outside base's, or not known)."""
        if ref.receiver is Receiver.INSTANCE:
            cls = self.instance_class(ref.choices)
            if cls is None:
                return None
            owner, member = self.provider_members(cls).get(ref.name, (None, None))
            if owner is None or member is None or not is_method(member):
                return None
            return None if self._patched_first(self.index.mro(cls), owner, ref.name) else (owner, member)
        if ref.owner not in self.classes:
            return None
        if not self.has_provider_base(ref.owner):
            return self._mixed_in(ref)
        if ref.receiver is not Receiver.SUPER and self.subclass_defines(ref.owner, ref.name):
            return None
        return self._landing(ref.owner, ref.name, 0 if ref.receiver is Receiver.SUPER else -1)

    def _landing(self, cls: str, name: str, after: int) -> tuple[ClassRef, Member] | None:
        """The provider method `name` of consumer class `cls`'s order after position `after`
        (None: a consumer's or outside base's comes first, or the consumer patched it)."""
        found = self.lookup(cls, name, after=after)
        if isinstance(found, Definition) and isinstance(found.node, ClassRef) and is_method(found.member):
            assert found.member is not None
            if self._patched_first(self.mro(cls)[after + 1 :], found.node, name):
                return None
            return found.node, found.member
        return None

    def _mixed_in(self, ref: MethodRef) -> tuple[ClassRef, Member] | None:
        """`self.m(...)` or `super().m(...)` in a mixin with no provider base (vllm-mblt's cached
        processor mixin): the provider method it lands on in every consumer class mixing it with a
        provider class, when they all land on the same one."""
        if "derived" not in self.memo:  # the consumer classes some consumer class derives from
            self.memo["derived"] = {b.consumer for c in self.classes.values() for b in c.bases if b.consumer}
        if ref.owner not in self.memo["derived"]:
            return None
        landed = [
            self._landing(cls.name, ref.name, self.mro(cls.name).index(ConsumerRef(ref.owner)) if super_ else -1)
            for cls in self.line({ref.owner})
            if cls.name != ref.owner and self.has_provider_base(cls.name)
            for super_ in [ref.receiver is Receiver.SUPER]
        ]
        return landed[0] if landed and all(each == landed[0] for each in landed) else None

    def call_target(self, ref: MethodRef) -> MethodRef:
        """The method calling an instance runs: `x(...)` (`__call__` of an annotated instance) runs
        `forward` when the first class of its order defining `__call__` is torch's `nn.Module`, an
        outside base known by name (`layer(x)` of a vLLM layer). Any other ref is itself."""
        if ref.receiver is not Receiver.INSTANCE or ref.name != "__call__":
            return ref
        cls = self.instance_class(ref.choices)
        if cls is None:
            return ref
        for node in self.index.mro(cls):
            if isinstance(node, str):
                if node.replace(":", ".") in TORCH_MODULE:
                    return replace(ref, name="forward")
                if node not in PLAIN_BASES:
                    return ref  # another outside base may define `__call__`: not known
                continue
            info = self.index.class_info(node)
            if info is None or "__call__" in info.members:
                return ref
        return ref

    def _patched_first(self, mro: Sequence[Node], owner: ClassRef, name: str) -> bool:
        """Does the consumer patch `name` on `owner`, or on a provider class the lookup meets
        before it (`Sub.m = mine` where `m` is defined on `Sub`'s base)? Then its replacement is
        what runs."""
        for node in mro:
            if isinstance(node, ClassRef) and f"{node}.{name}" in self.patched:
                return True
            if node == owner:
                return False
        return False


# torch's module class as the provider's bases write it: calling an instance runs `forward`.
TORCH_MODULE = {"nn.Module", "torch.nn.Module", "torch.nn.modules.module.Module"}

# Bases that give a class no members worth knowing about.
PLAIN_BASES = {
    *("object", "ABC", "abc.ABC", "ABCMeta", "abc.ABCMeta"),
    *("Generic", "typing.Generic", "Protocol", "typing.Protocol", "typing_extensions.Protocol"),
}


def is_method(member: Member | None) -> bool:
    return member is not None and member.kind is MemberKind.DEF
