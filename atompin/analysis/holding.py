"""Where a consumer class reaches the provider, when it does only through the classes holding it.

A consumer class is handed to the provider in a few ways (`handed_classes`): named by a dotted
path, passed to a provider call, stored on an object of a consumer class deriving from a provider
class (its holder), or returned by one of a holder's overrides. When every way is through a holder
(`Holding.held_by` is not None), the provider gets the class only by reading one of those members
on a holder (`Holding.held_as`): ATOM's DeepSeek-V4 proxy backend is only what its proxy layer's
`get_attn_backend()` returns. A provider call found by a method's name is on such a class only
where its receiver can hold what such a read gives (`may_hold`). `protocol-drift` asks it of its
stand-ins, `override-drift` of the classes whose overrides it judges (`reaching`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from atompin.analysis.argument_sources import ArgumentQuestions, ArgumentSources
from atompin.analysis.hierarchy import Hierarchy, provider_class
from atompin.analysis.makers import stored_maker
from atompin.analysis.name_sites import NameSearch, NameSite
from atompin.analysis.provider import ClassRef, TargetKind
from atompin.analysis.usage import ConsumerClass, ContactSurface, HandoverKind, Ref
from atompin.model import Status

# More provider files than this reading a member a class is kept in: whether one of them stores it
# in an attribute is not read (`_fed_from_holders` says it may).
_MAX_READING = 48


@dataclass(frozen=True)
class Evidence:
    """How a class is handed to the provider; `holder` is the provider-derived class that stores
    it, `member` the attribute it is stored in or the method that returns it."""

    how: str
    holder: str = ""
    member: str = ""
    stored: bool = False  # kept in the member (not returned by it)


@dataclass(frozen=True)
class Holding:
    """How consumer class `cls` reaches the provider: `held_by`, the methods whose results may be
    it when every way is through a holder (None: it may reach any code); `kept`, the evidence."""

    cls: str
    held_by: frozenset[str] | None
    kept: tuple[Evidence, ...] = ()

    @property
    def held_as(self) -> frozenset[str]:
        """The holders' members it is kept in: attributes it is stored in, methods returning it."""
        return frozenset(e.member for e in self.kept)

    @property
    def holders(self) -> frozenset[str]:
        """The consumer classes that keep it."""
        return frozenset(e.holder for e in self.kept)


def handed_classes(hierarchy: Hierarchy, contact: ContactSurface) -> dict[str, list[Evidence]]:
    """Consumer classes handed to the provider: dotted name -> the evidence, in order. A class a
    method returns counts when the method overrides a provider method, or is a member of the
    provider class its holder is registered with (ROCm ATOM's indexer cache, registered with
    vLLM's `AttentionLayerBase`, returns its backend from the `get_attn_backend` its decorator sets)."""
    out: dict[str, list[Evidence]] = {}
    registered = registered_roles(hierarchy, contact)
    for h in contact.handovers:
        evidence = None
        if h.kind is HandoverKind.PATH:
            evidence = Evidence(f"named by the dotted path {h.target!r} at {h.site}")
        elif h.kind is HandoverKind.CALL:
            evidence = Evidence(f"passed to a provider call at {h.site}")
        elif h.kind in (HandoverKind.ATTRIBUTE, HandoverKind.STORED) and h.holder in hierarchy.classes:
            if hierarchy.has_provider_base(h.holder):
                how = f"stored as {hierarchy.classes[h.holder].symbol}.{h.member} at {h.site}"
                evidence = Evidence(how, h.holder, h.member, stored=True)
        elif h.kind is HandoverKind.RETURNED and h.holder in hierarchy.classes:
            role = registered.get(h.holder)
            if any(isinstance(d.node, ClassRef) for d in hierarchy.definitions(h.holder, h.member)) or (
                role is not None and h.member in hierarchy.provider_members(role[0])
            ):
                how = f"returned by {hierarchy.classes[h.holder].symbol}.{h.member} at {h.site}"
                evidence = Evidence(how, h.holder, h.member)
        if evidence is not None and evidence not in out.setdefault(h.target, []):
            out[h.target].append(evidence)
    return out


def registered_roles(hierarchy: Hierarchy, contact: ContactSurface) -> dict[str, tuple[ClassRef, str]]:
    """Consumer classes registered as virtual subclasses of a provider class (`P.register(C)`):
    dotted name -> (P, how). Read once per check (`protocols` and `handed_classes` ask)."""
    memo: dict[int, dict[str, tuple[ClassRef, str]]] = hierarchy.memo.setdefault("registered_roles", {})
    if id(contact) in memo:
        return memo[id(contact)]
    out: dict[str, tuple[ClassRef, str]] = {}
    memo[id(contact)] = out
    for h in contact.handovers:
        if not h.role or h.target not in hierarchy.classes or h.target in out:
            continue
        res = hierarchy.index.resolve_symbol(h.role)
        target = res.target if res.status is Status.FOUND else None
        # ABCMeta's `register`, not a method of the class's own (a registry's `register(item)`).
        if target is not None and target.kind is TargetKind.CLASS and target.cls is not None:
            if "register" not in hierarchy.provider_members(target.cls):
                out[h.target] = (target.cls, f"registered as a virtual subclass of {target.cls} at {h.site}")
    return out


def holding(hierarchy: Hierarchy, cls: str, role: ClassRef, evidence: Sequence[Evidence]) -> Holding:
    """How `cls`, handed over in provider class `role`'s place as `evidence` says, reaches the
    provider. When every way is through a holder, the methods whose results may be it: the
    holders' members, its own (a factory), its role's."""
    if not evidence or any(not e.holder for e in evidence):
        return Holding(cls, None, tuple(evidence))
    out = hierarchy.consumer_members(cls) | set(hierarchy.provider_members(role))
    out |= {e.member for e in evidence}  # also one set on the holder from outside its body
    for holder in {e.holder for e in evidence}:
        out |= hierarchy.consumer_members(holder)
        for node in hierarchy.mro(holder):
            info = hierarchy.provider(node)
            if info is not None:
                out.update(info.members)
    return Holding(cls, frozenset(out), tuple(evidence))


@dataclass(frozen=True)
class Reaching:
    """Which provider calls may be on one of some consumer classes, each of which reaches the
    provider only through the classes holding it; `how` says so of the first."""

    reaches: Callable[[NameSite], bool]
    how: str  # "atom...:ProxyBackend reaches the provider only as returned by ...Layer.get_attn_backend at f.py:9"


def reaching(
    hierarchy: Hierarchy, contact: ContactSurface, search: NameSearch
) -> Callable[[Sequence[ConsumerClass], ClassRef], Reaching | None]:
    """For the consumer classes an override is the method of, and the provider class whose method
    it overrides: which provider calls found by the method's name may be on one of them. None (every
    call) unless each of the classes reaches the provider only through its holders (`may_reach`)."""
    handed: dict[str, list[Evidence]] | None = None

    def reaches(classes: Sequence[ConsumerClass], base: ClassRef) -> Reaching | None:
        nonlocal handed
        if handed is None:
            handed = handed_classes(hierarchy, contact)
        holdings = [holding(hierarchy, c.name, base, handed.get(c.name, ())) for c in classes]
        if not holdings or any(h.held_by is None for h in holdings):
            return None
        how = f"{classes[0].symbol} reaches the provider only as {holdings[0].kept[0].how}"
        return Reaching(lambda site: any(may_reach(hierarchy, site, h, search) for h in holdings), how)

    return reaches


def in_holders_order(hierarchy: Hierarchy, site: NameSite, holders: AbstractSet[str]) -> bool:
    """Is the provider class the site is in one that a holder, or a consumer class deriving from one
    (a provider class mixed in), derives from: may its `self` be a holder?"""
    owner = ClassRef(hierarchy.index.tree.module_name(site.path)[0], site.cls)
    return any(owner in hierarchy.mro(c.name) for c in hierarchy.line(holders))


def may_reach(hierarchy: Hierarchy, site: NameSite, h: Holding, search: NameSearch) -> bool:
    """Can a provider call at `site` be a call on the class (`delegates`, `may_hold`)?"""
    return not delegates(site) and (h.held_by is None or may_hold(hierarchy, site, h, search))


def delegates(site: NameSite) -> bool:
    """Is `site` a method handing on to another object's method of its own name (`x.m()` in a
    class's `m`)?"""
    return bool(site.cls) and site.function == site.name


def may_hold(hierarchy: Hierarchy, site: NameSite, h: Holding, search: NameSearch) -> bool:
    """Can the receiver of `site` be the class, which the provider reaches only through the
    classes holding it? Not when it is what some other method returns, nor `self.x` of a provider
    class that stores in x only what a provider class makes (`makers.stored_maker`) while x is
    none of the holders' members the class is kept in, unless the class derives from what a
    factory there may make. Nor `self.x`, x a member it is kept in, in a provider class no holder
    derives from (vllm-metal's worker, a `WorkerBase`, keeps its runner in `model_runner`; vLLM's
    GPU `Worker` calls its own). Nor an attribute no holder sets on itself that the provider fills
    only from what it gets elsewhere (`_fed_from_holders`). Nor a parameter of a module-level
    function no caller of which can pass it there (`argument_sources`: vLLM 0.31's
    `_largest_kernel_block_within(attn_backend, ...)`)."""
    if site.source:
        return h.held_by is None or site.source in h.held_by or _hands_out_kept(hierarchy, search, site, h)
    if site.attribute in h.held_as:
        return not site.cls or in_holders_order(hierarchy, site, h.holders)
    if site.attribute and site.attribute not in _set_on_self(hierarchy, h):
        if not _fed_from_holders(hierarchy, search, h, site.attribute):
            return False  # the provider stores there only what it gets elsewhere
    if not site.attribute and not argument_sources(hierarchy, search).may_hold(
        site.path, site.line, site.name, _questions(hierarchy, search, h)
    ):
        return False  # a parameter no caller passes it in (vLLM 0.31's `_largest_kernel_block_within`)
    if (maker := stored_maker(hierarchy, site)) is None:
        return True
    if not maker.exact and maker.cls in hierarchy.mro(h.cls):
        return True  # a factory's product may be any class deriving from what it names
    # A consumer subclass of the holder that sets x itself may put the class there by a way
    # no handover records (`self.backend = self.backend_cls`).
    return hierarchy.sets_attribute(maker.holder, site.attribute)


def _set_on_self(hierarchy: Hierarchy, h: Holding) -> frozenset[str]:
    """What a holder sets on itself, in its own methods or its consumer bases' (asked for every
    call site judged: once per set of holders)."""
    memo: dict[frozenset[str], frozenset[str]] = hierarchy.memo.setdefault("set_on_self", {})
    if h.holders not in memo:
        memo[h.holders] = frozenset(
            name
            for c in hierarchy.line(h.holders)
            for node in hierarchy.mro(c.name)
            if (owner := hierarchy.consumer(node))
            for name in owner.assigned
        )
    return memo[h.holders]


def _fed_from_holders(hierarchy: Hierarchy, search: NameSearch, h: Holding, attribute: str) -> bool:
    """May the provider store in `attribute` of its own objects what it got from a holder? It gets
    the class only by reading a member the class is kept in (`x.m`, `self.m`, or `"m"` for a
    getattr); a provider file doing so that writes the attribute (`o.attribute = v`, a keyword
    `attribute=v`, or the name as a string, for a `setattr` or a dict of keywords) may. vLLM 0.31's
    `Attention` keeps in `attn_backend` what the platform selects or what its constructor is
    given; none of the files calling layers' `get_attn_backend()` writes an `attn_backend`.
    Nor may it where the consumer, near the class (`_near`), sets the attribute on objects from
    outside their classes, or replaces a provider name: a replacement may store it, or hand it to
    a file that does. A value one file reads and another stores (handed on between them) is not
    followed."""
    memo: dict[tuple[str, str], bool] = hierarchy.memo.setdefault("fed_from_holders", {})
    key = (h.cls, attribute)
    if key not in memo:
        near = _near(hierarchy, h)
        patches = [p for p in hierarchy.usage.patches if not p.literal_value and not p.stash]
        chosen = [p for p in patches if near is None or p.site.path in near]
        written = hierarchy.consumer_naming(attribute)  # the consumer files writing the attribute's name
        if written is None or near is None:
            memo[key] = True  # the consumer's files are not known
        elif any(s.name == attribute and s.site.path in near for s in hierarchy.usage.contact.outside_stores):
            memo[key] = True  # the consumer sets it on objects from outside their classes, near the class
        elif not written.isdisjoint(p.site.path for p in chosen):
            memo[key] = True  # a replacement there may store it in the attribute itself
        else:
            # (A replaced `__init__` returns nothing: what it stores is asked above.)
            replaced = {p.attr for p in chosen} - {"__init__"}
            reading = _files_reading(hierarchy, search, h.held_as, replaced)
            sources = argument_sources(hierarchy, search)  # (its parsed files, shared)
            memo[key] = reading is None or any(
                _writes(hierarchy.provider_text(path), sources.module(path), attribute) for path in reading
            )
    return memo[key]


def _files_reading(
    hierarchy: Hierarchy, search: NameSearch, members: frozenset[str], replaced: AbstractSet[str]
) -> list[str] | None:
    """The provider files that read one of `members` (as an attribute, or named as a string), or
    use a provider name in `replaced`; None when there are more than `_MAX_READING`."""
    files = hierarchy.index.tree.python_files(hierarchy.index.package)
    named = search.files_writing_as_string(members)
    using = [*search.files_reading(replaced), *search.files_calling(replaced, files)] if replaced else []
    found = sorted({*search.files_reading(members), *named, *using})
    return found if len(found) <= _MAX_READING else None


def _near(hierarchy: Hierarchy, h: Holding) -> set[str] | None:
    """The consumer files where code handing the class to the provider by other ways than its
    holders would be written (a replaced factory making it, a store of it on a provider object):
    those naming the class, and those whose imports name the module of one that does (or a name
    from it). A module's last name alone is too common a word: ATOM's backends live in
    `attention/backend.py`, and a hundred of its files write "backend". None when the consumer's
    files are not known."""
    naming_class = hierarchy.consumer_naming(h.cls.rpartition(".")[2])
    near: set[str] | None = set(naming_class) if naming_class is not None else None
    for path in sorted(naming_class or ()):
        importing = hierarchy.consumer_importing(hierarchy.usage.module_of(path))
        near = None if importing is None or near is None else near | importing
    return near


def _writes(text: bytes, tree: ast.Module | None, attribute: str) -> bool:
    """Does this provider file (its text, parsed) write `attribute`: store it on an object, pass
    it as a keyword, or name it in a string? (A file that cannot be parsed: it may.)"""
    if attribute.encode() not in text:
        return False
    if tree is None:
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == attribute and isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.keyword) and node.arg == attribute:
            return True
        if isinstance(node, ast.Constant) and node.value == attribute:
            return True
    return False


def argument_sources(hierarchy: Hierarchy, search: NameSearch) -> ArgumentSources:
    """The provider's files, read for what its functions' callers pass (once per check). The
    callers are found as the provider's calls are everywhere (`CallerSearch`): by the files'
    identifiers, the words written before `(`."""
    found: ArgumentSources | None = hierarchy.memo.get("argument_sources")
    if found is None:
        files = hierarchy.index.tree.python_files(hierarchy.index.package)
        found = ArgumentSources(
            hierarchy.provider_text,
            lambda name: search.files_calling([name], files),
            hierarchy.index.tree.module_name,
            hierarchy.provider_tree,
        )
        hierarchy.memo["argument_sources"] = found
    return found


def _questions(hierarchy: Hierarchy, search: NameSearch, h: Holding) -> ArgumentQuestions:
    """What a caller's argument can be for the class, which the provider reaches only through its
    holders: `self.x` of a provider class holds it, when x is a member it is kept in or that a
    holder sets on itself, only if a holder derives from that class (vLLM's `Attention` hands
    `self.attn_backend` on; ATOM's layers, which do not derive from it, keep their backends
    there); otherwise only if the provider may store there what it got from a holder
    (`_fed_from_holders`). A name of the provider's module that is a provider class the consumer
    does not patch is that class, not the consumer's."""

    def attribute(path: str, cls: str, name: str) -> bool:
        if name not in h.held_as and name not in _set_on_self(hierarchy, h):
            return _fed_from_holders(hierarchy, search, h, name)
        owner = ClassRef(hierarchy.index.tree.module_name(path)[0], cls)
        return any(owner in hierarchy.mro(c.name) for c in hierarchy.line(h.holders))

    def named(path: str, name: str) -> bool:
        module = hierarchy.index.tree.module_name(path)[0]
        return name in hierarchy.patched_names or provider_class(hierarchy.resolve, (Ref(module, (name,)),)) is None

    return ArgumentQuestions(attribute, named)


def _hands_out_kept(hierarchy: Hierarchy, search: NameSearch, site: NameSite, h: Holding) -> bool:
    """Is the site's receiver what a provider function returns (`site.source`) whose body reads a
    member the class is kept in? vLLM's `get_ep_all2all_manager()` returns
    `ep_group.device_communicator.all2all_manager`, where vllm-ascend keeps its manager; its
    `build_warmup_runner(...)` makes a `GPUModelRunner` and reads no `model_runner`."""
    module, _ = hierarchy.index.tree.module_name(site.path)
    res = hierarchy.resolve((Ref(module, (site.source,)),))
    target = res.target if res is not None else None
    if target is None or target.kind is not TargetKind.FUNCTION or target.owner is not None:
        return False  # a method's result, as before; or nothing of the provider's
    where, _, name = target.symbol.partition(":")
    tree = argument_sources(hierarchy, search).module(hierarchy.index.module_path(where))
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    found = [node for node in tree.body if isinstance(node, functions) and node.name == name] if tree else []
    if not found:
        return True  # not written as a def at its module's top level (bound another way): it may
    reads = (n.attr for n in ast.walk(found[-1]) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load))
    return not h.held_as.isdisjoint(reads)
