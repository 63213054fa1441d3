"""protocol-drift: a consumer class that plays the part of a provider class without
inheriting from it must have what the provider calls on it.

A consumer class is a **stand-in** when it inherits from no provider class and either
is handed over (named by a dotted-path string, passed to a provider call, stored on an
object of a provider-derived class, or returned by an override of a provider method) and
defines at least two methods named as one provider class's methods, or defines at least
four (a guess from its shape, made only when its module names the provider and it is not a
same-named copy of the provider class), and in both cases at least half of its public methods
are named so. That provider class (its **role**) is the best match; a tie is skipped unless
one of the tied classes is a base of all the others (then it is the role).

For each public method of the role that the stand-in lacks and that provider code calls
by name on an object it was handed (not on `self`/`cls`, and not behind a `hasattr` or
`getattr(..., default)` test), and each class attribute it lacks that provider code reads
so: error when the stand-in was handed over and a method is abstract in the role or new
since the baseline; warning otherwise (one finding per stand-in, listing them). Members
the provider never uses by name are not reported.

A class registered as a virtual subclass of a provider class (`P.register(C)`, P an ABC)
stands in for P whatever its methods are named: it passes `isinstance(x, P)` but inherits
none of P's members. A class attribute of P it lacks that provider code reads on a handed
object is then an error too when new since the baseline or abstract (vLLM 0.34's
`AttentionLayerBase.is_draft_layer`, read on every registered layer).

A stand-in that reaches the provider only through the classes that hold it (stored on
them, returned by them) makes only a warning for a method when:
- every holder has that method itself, from the class that defines it in the role (both
  are connectors): the provider calls the holder, and the stand-in is its delegate; or
- every call found is on what some other method returns (`x.get_class().name()`, or a
  local bound once to that), or on `self.x` of a provider class that fills x only from a
  provider class's constructor or factory (`self.publisher = PublisherFactory.create()`)
  while the stand-in is kept in another attribute and no consumer subclass of it sets x, or
  on an attribute no holder keeps it in that the provider fills only from what it gets
  elsewhere (`holding`, which `override-drift` asks too).
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace

from atompin.analysis.arity import checkable, same_kind
from atompin.analysis.baseline import Baseline
from atompin.analysis.caller_chains import beside_stand_ins
from atompin.analysis.hierarchy import PLAIN_BASES, ConsumerRef, Hierarchy, is_method
from atompin.analysis.holding import (
    Evidence,
    Holding,
    delegates,
    handed_classes,
    holding,
    in_holders_order,
    may_hold,
    may_reach,
    registered_roles,
)
from atompin.analysis.makers import instance_class, made_beside_stand_in, on_container, on_named_class
from atompin.analysis.method_overrides import OverridePair, defined_apart, narrowing
from atompin.analysis.moduleinfo import Member, MemberKind
from atompin.analysis.name_sites import NameSearch, NameSite, SiteKind, SiteReceiver
from atompin.analysis.names import writes_as_string
from atompin.analysis.opt_in import only_when_set
from atompin.analysis.outside import STRUCT_BASES, TORCH_MODULE_BASES
from atompin.analysis.prose import ProseFinder
from atompin.analysis.provider import ClassRef
from atompin.analysis.usage import ConsumerClass, ContactSurface
from atompin.model import Finding, Rule, Severity, Site

# More provider files than this defining the stand-in's method names: no clear role (and
# reading them all would cost more than the answer is worth).
_MAX_CANDIDATES = 24
# More classes than this defining as many of the names themselves: no clear role.
_MAX_TIED = 4
_MIN_HANDED = 2
_MIN_SHAPED = 4
# What a stand-in's finding says it lacks: its kind, then each member with how the provider uses it.
Lacked = tuple[str, ...]


@dataclass(frozen=True)
class StandIn:
    cls: ConsumerClass
    role: ClassRef
    matched: int  # how many of its public methods the role has
    public: int
    handed: str  # how it is handed over ("" when only its shape says so)
    # How it reaches the provider: only through the classes holding it (stored on them, returned by
    # them), or any code (`Holding.held_by` None: named by a dotted path, passed to a call).
    holding: Holding
    # Registered as a virtual subclass of its role (`role.register(cls)`): it inherits nothing.
    registered: bool = False


def passes_on(text: bytes, member: str, on_self: bool = True) -> bool:
    """Does `text` read `x.member` for the object itself (to pass, return or bind it, call it for
    an instance, take an item of it), not only for its attributes (`x.member.m()`), to set it
    (`x.member = v`, `x.member: T = v`, `x.member += v`) or to test it for None, or write
    `"member"` (a getattr)? With `on_self` False, a read of `self.member` does not count (the file
    holds no method of the holder's line). Read from the bytes: a mention in a comment counts,
    erring on the side of a read."""
    if writes_as_string(text, member):
        return True
    word = re.escape(member.encode())
    # Not followed by `.` (its attribute), `=` or an augmented `+=` (set); `x.member: T = v` at a
    # statement's start is set too (a colon elsewhere, `for r in x.member:`, reads it).
    annotated = {m.end() for m in re.finditer(rb"(?m)^[ \t]*[\w.]*\." + word + rb"\b(?=\s*:(?!=))", text)}
    # Nor tested for None (`assert x.member is not None`): that hands nothing on.
    after = rb"\b(?!\s*(?:\.|=(?!=)|[-+*/%@&|^]=|//=|\*\*=|>>=|<<=|is\s+(?:not\s+)?None\b))"
    return any(
        m.end() not in annotated and (on_self or not _on_self(text, m.start()))
        for m in re.finditer(rb"\." + word + after, text)
    )


def _on_self(text: bytes, dot: int) -> bool:
    """Is the attribute read whose dot is at `dot` a read on `self` (`self.x`, not `myself.x`)?"""
    before = text[max(0, dot - 5) : dot]
    return before.endswith(b"self") and (len(before) < 5 or not (before[:1].isalnum() or before[:1] in b"_."))


def _reached_members(
    kept: dict[str, set[str]],
    groups: list[set[str]],
    hierarchy: Hierarchy,
    search: NameSearch,
    passed_on: Callable[[Mapping[str, AbstractSet[str]]], set[str]],
) -> dict[str, bool]:
    """Of the members consumer classes keep objects in (`kept`: each member, with the classes
    holding it; `groups`: each class's members), those through which the provider can get them:
    the consumer passes the object on from there (`passed_on`, asked once for all; False), or
    provider code writes the member as a string (a getattr), or reads `x.member` on an object it
    was handed, or `self.member` in a class one of the holders derives from (vllm-ascend keeps its
    Mooncake scheduler in `connector_scheduler`, which vLLM reads only in the methods of its own
    `MooncakeConnector`; True: the provider gets it itself). sendnn-inference's sampler keeps a
    ring buffer in `self._noise_buffer`, which only it uses and nothing of vLLM reads, and two
    shared method names made it a stand-in for vLLM's `WorkerBase`. A class one of whose members
    is passed on is reached already: its other members are only ranked (`_by_reach`), True when
    the provider writes them after a dot somewhere (its identifiers), without the text searches."""
    if not kept:
        return {}
    # What a file must name for its `self.member` to be of such an object: the classes an instance
    # of a holder may be, and the consumer classes they mix in.
    passed = passed_on({member: hierarchy.line_names(holders) for member, holders in kept.items()})
    asked = {m for group in groups if group.isdisjoint(passed) for m in group}
    named = asked - passed
    stringed = search.written_as_string(named) if named else set()  # a getattr may read it anywhere
    read = named - stringed - search.unread(named) if named else set()  # the rest nothing names
    sites = search.find(sorted(read)) if read else {}
    got = stringed | {m for m in read if any(_gets(hierarchy, s, kept[m]) for s in sites.get(m, []))}
    ranked = set(kept) - passed - asked
    named_there = ranked - search.unread(ranked) if ranked else set()
    return {**dict.fromkeys(passed, False), **dict.fromkeys(named_there | got, True)}


def _by_reach(evidence: list[Evidence], reached: Mapping[str, bool]) -> list[Evidence]:
    """The evidence of a class kept in members, the strongest first: kept where the provider
    gets it itself, then where the consumer passes it on, then where nothing reaches it (ATOM
    keeps one weights mapper in `hf_to_atom_mapper`, which only ATOM passes on, and in
    `hf_to_vllm_mapper`, which vLLM reads by name: the latter is what to cite)."""
    return sorted(evidence, key=lambda e: 0 if reached.get(e.member) else 1 if e.member in reached else 2)


def _gets(hierarchy: Hierarchy, site: NameSite, holders: AbstractSet[str]) -> bool:
    """Does this provider read of a member get what the consumer's `holders` keep there? A read on
    an object the provider was handed does; `self.member` only in a class a holder derives from."""
    if site.kind is SiteKind.DEF:
        return False
    return site.receiver is SiteReceiver.OTHER or not site.cls or in_holders_order(hierarchy, site, holders)


def _in_role(hierarchy: Hierarchy, evidence: list[Evidence], role: ClassRef) -> list[Evidence]:
    """The evidence that the class is handed over in the role. An object stored on a class that
    itself derives from the role is its delegate (a connector's worker), not a stand-in."""
    return [e for e in evidence if not e.holder or role not in hierarchy.mro(e.holder)]


def _public_methods(hierarchy: Hierarchy, cls: ConsumerClass) -> set[str]:
    out: set[str] = set()
    for node in hierarchy.mro(cls.name):
        c = hierarchy.consumer(node)
        if c is not None:
            out.update(m.name for m in c.methods if not m.name.startswith("_"))
    return out


def _external_bases(hierarchy: Hierarchy, cls: ConsumerClass) -> list[str]:
    return [n for n in hierarchy.mro(cls.name) if isinstance(n, str) and n not in PLAIN_BASES]


# A registered stand-in is judged beside these outside bases (their members are known).
_KNOWN_OUTSIDE = {**STRUCT_BASES, **TORCH_MODULE_BASES}


def _served_names(hierarchy: Hierarchy, s: StandIn) -> frozenset[str] | None:
    """The names the stand-in has beyond its classes' bodies: its known outside bases' members;
    for a registered one also what its instances set and what the consumer stores on any object
    (a class decorator's `cls.name = f`). None when unknown: the stand-in is not judged."""
    instance = _instance_names(hierarchy, s) if s.registered else frozenset()
    outside = _outside_members(hierarchy, s, instance)
    if outside is None or not s.registered:
        return outside
    return outside | hierarchy.member_stores | instance


def _instance_names(hierarchy: Hierarchy, s: StandIn) -> frozenset[str]:
    """What the stand-in's own classes set on their instances (`self.name = ...`): an attribute
    the provider reads on an object of the role is there too."""
    return frozenset(
        name for node in hierarchy.mro(s.cls.name) if (c := hierarchy.consumer(node)) for name in c.assigned
    )


def _outside_members(hierarchy: Hierarchy, s: StandIn, instance: frozenset[str]) -> frozenset[str] | None:
    """What the stand-in's bases outside both packages define (None: unknown, so it is not
    judged). Only a registered stand-in is judged beside a known outside base, and not when
    it sets attributes by names it computes (`instance`, what its instances set, holds "*")."""
    outside = _external_bases(hierarchy, s.cls)
    if "*" in instance:
        return None
    if not outside:
        return frozenset()
    if not s.registered or any(base not in _KNOWN_OUTSIDE for base in outside):
        return None
    return frozenset().union(*(_KNOWN_OUTSIDE[base] for base in outside))


def find_stand_ins(
    hierarchy: Hierarchy,
    contact: ContactSurface,
    search: NameSearch,
    passed_on: Callable[[Mapping[str, AbstractSet[str]]], set[str]] = set,
) -> list[StandIn]:
    """Every consumer class that stands in for a provider class, with its role. `passed_on` says
    which of some members the consumer passes on what it keeps there (`passes_on`; by default,
    all of them)."""
    handed = handed_classes(hierarchy, contact)
    registered = registered_roles(hierarchy, contact)
    out: list[StandIn] = []
    for name, (abc, how) in sorted(registered.items()):
        if not hierarchy.has_provider_base(name):
            public = _public_methods(hierarchy, hierarchy.classes[name])
            methods = {n for n, (_, m) in hierarchy.provider_members(abc).items() if m.kind is MemberKind.DEF}
            matched, anywhere = len(public & methods), Holding(name, None)
            out.append(StandIn(hierarchy.classes[name], abc, matched, len(public), how, anywhere, registered=True))
    candidates: list[tuple[ConsumerClass, set[str], int, list[Evidence]]] = []
    for cls in hierarchy.classes.values():
        evidence = handed.get(cls.name, [])
        if (cls.muted and not evidence) or hierarchy.has_provider_base(cls.name) or cls.name in registered:
            continue
        public = _public_methods(hierarchy, cls)
        need = max(_MIN_HANDED if evidence else _MIN_SHAPED, math.ceil(len(public) / 2))
        if len(public) >= need:
            candidates.append((cls, public, need, evidence))
    # One search for every candidate's method names; the files found are read through the index.
    found = search.files_defining([(public, need) for _, public, need, _ in candidates], _MAX_CANDIDATES)
    roles = [(c, _best_role(hierarchy, search, paths, c[1], c[2])) for c, paths in zip(candidates, found)]
    # The members of classes handed over only by being kept there, asked together.
    kept: dict[str, set[str]] = {}
    groups: list[set[str]] = []  # each such class's members
    for (_, _, _, evidence), role in roles:
        if role is not None and _kept_only(evidence):
            for e in evidence:
                kept.setdefault(e.member, set()).add(e.holder)
            groups.append({e.member for e in evidence})
    reached = _reached_members(kept, groups, hierarchy, search, passed_on)
    for (cls, public, _, evidence), role in roles:
        if role is None:
            continue
        if _kept_only(evidence) and not any(e.member in reached for e in evidence):
            if _only_kept(evidence, role):
                continue  # the provider cannot get it where it is kept
            evidence = []  # nor is it evidence: the class is a stand-in by its shape, if at all
        elif _kept_only(evidence):
            evidence = _by_reach(evidence, reached)
        in_role = _in_role(hierarchy, evidence, role[0])
        how = in_role[0].how if in_role else ""
        if how or _guessed_from_shape(hierarchy, cls, role[0], role[1]):
            held = holding(hierarchy, cls.name, role[0], in_role)
            out.append(StandIn(cls, role[0], role[1], len(public), how, held))
    return out


def _kept_only(evidence: list[Evidence]) -> bool:
    """Is the class handed over only by being kept in members?"""
    return bool(evidence) and all(e.stored for e in evidence)


def _only_kept(evidence: list[Evidence], role: tuple[ClassRef, int] | None) -> bool:
    """Is the class handed over only by being kept in members, while its shape alone (the methods
    it shares with its role) would not make it a stand-in?"""
    return role is not None and role[1] < _MIN_SHAPED and _kept_only(evidence)


def _guessed_from_shape(hierarchy: Hierarchy, cls: ConsumerClass, role: ClassRef, matched: int) -> bool:
    """A class not seen handed over is taken for a stand-in by its shape only when it matches
    enough of the role's methods, its module names the provider (a module that never does hands
    nothing over by itself), it is not a same-named copy of the role (a vendored
    `GroupCoordinator` kept beside the provider's, as sglang and vllm-omni keep vLLM's), and it
    does not keep an instance of the role it delegates to (vLLM's `AiterCustomAllreduce` keeps
    aiter's `CustomAllreduce` in `self._impl`: a wrapper the provider never sees), nor is a mixin
    of other classes (vllm-gguf-plugin's `_GGUFParamLoadMixin`, mixed only into subclasses of
    vLLM's `BasevLLMParameter` and torch's `UninitializedParameter`: never an object of its own)."""
    return (
        matched >= _MIN_SHAPED
        and not cls.muted
        and cls.names_provider
        and cls.name.rpartition(".")[2] != role.qualname.rpartition(".")[2]
        and role not in hierarchy.made_instances(cls.name)
        and not _mixin_of_other_classes(hierarchy, cls.name)
    )


def _mixin_of_other_classes(hierarchy: Hierarchy, name: str) -> bool:
    """Is the consumer class `name` a base of consumer classes, every one of which derives from a
    class not the consumer's (a provider class, or an outside one but `object`, `ABC`, `Generic`,
    `Protocol` and the like)?"""
    subclasses: dict[str, list[str]] | None = hierarchy.memo.get("consumer_subclasses")
    if subclasses is None:
        subclasses = {}
        for cls in hierarchy.classes.values():
            for base in cls.bases:
                if base.consumer:
                    subclasses.setdefault(base.consumer, []).append(cls.name)
        hierarchy.memo["consumer_subclasses"] = subclasses
    below = subclasses.get(name, [])
    return bool(below) and all(_mixes_in_other(hierarchy, sub) for sub in below)


def _mixes_in_other(hierarchy: Hierarchy, name: str) -> bool:
    """Does the consumer class `name` derive from a class not the consumer's (provider or outside,
    a plain one such as `ABC` left out)?"""
    if hierarchy.has_provider_base(name):
        return True
    return any(
        not base.provider and not base.consumer and base.text not in PLAIN_BASES
        for base in hierarchy.classes[name].bases
    )


def _best_role(
    hierarchy: Hierarchy, search: NameSearch, paths: list[str], public: set[str], need: int
) -> tuple[ClassRef, int] | None:
    """The provider class whose methods name the most of `public` (at least `need`).

    Classes are ranked by the methods they define themselves (read from the text), and only
    the best are indexed: the role defines its methods; its subclasses inherit them and tie.
    """
    own: dict[ClassRef, int] = {}
    for path in paths:
        module, _ = hierarchy.index.tree.module_name(path)
        for qualname, methods in search.class_methods(path).items():
            if len(methods & public) >= need:
                own[ClassRef(module, qualname)] = len(methods & public)
    if not own:
        return None
    top = max(own.values())
    if sum(1 for count in own.values() if count == top) > _MAX_TIED:
        return None  # many unrelated classes look alike (model classes): no clear role
    index = hierarchy.index
    scores: dict[ClassRef, int] = {}
    for ref, count in own.items():
        if count == top and index.class_info(ref) is not None:
            methods = {n for n, (_, m) in hierarchy.provider_members(ref).items() if m.kind is MemberKind.DEF}
            scores[ref] = len(public & methods)
    if not scores:
        return None
    best = max(scores.values())
    tied = [ref for ref, score in scores.items() if score == best]
    if best < need:
        return None
    if len(tied) == 1:
        return tied[0], best
    # Subclasses of the role tie with it: the role is the one every other derives from.
    roots = [r for r in tied if all(r in index.mro(other) for other in tied)]
    return (roots[0], best) if len(roots) == 1 else None


def _uses(sites: dict[str, list[NameSite]], name: str, kinds: tuple[SiteKind, ...]) -> list[NameSite]:
    """The sites of `name` of these kinds on an object the provider was handed, not behind a test."""
    return [x for x in sites.get(name, []) if x.kind in kinds and x.receiver is SiteReceiver.OTHER and not x.guarded]


def _names_role(hierarchy: Hierarchy, path: str, role: ClassRef) -> bool:
    """Does the provider file at `path` write the role's class name (in its code: a comment or a
    docstring naming it is no use of the role)?"""
    word = rb"\b" + re.escape(role.qualname.rpartition(".")[2].encode()) + rb"\b"
    text = hierarchy.provider_text(path)
    prose = ProseFinder(text)
    return any(not prose.at(match.start()) for match in re.finditer(word, text))


def _is_abstract(member: Member) -> bool:
    sig = member.signature
    return sig is not None and any(d.split(".")[-1] == "abstractmethod" for d in sig.decorators)


def check_protocols(
    hierarchy: Hierarchy,
    contact: ContactSurface,
    search: NameSearch,
    baseline: Baseline | None = None,
    passed_on: Callable[[Mapping[str, AbstractSet[str]]], set[str]] = set,
) -> list[Finding]:
    """protocol-drift; `passed_on` as `find_stand_ins` takes it."""
    served = {s: _served_names(hierarchy, s) for s in find_stand_ins(hierarchy, contact, search, passed_on)}
    stand_ins = [s for s, names in served.items() if names is not None]
    lacking = {
        s.cls.name: {n: pair for n, pair in _lacking(hierarchy, s).items() if n not in (served[s] or ())}
        for s in stand_ins
    }
    # What every stand-in lacks, found in the provider's text; the members that would be errors
    # (methods, abstract or new, of classes handed over) are confirmed in parsed code.
    names = {name for members in lacking.values() for name in members}
    sites = search.find_text(names)
    confirm = {
        (name, member.kind is MemberKind.DEF)
        for s in stand_ins
        if s.handed
        for name, (_, member) in lacking[s.cls.name].items()
        if (member.kind is MemberKind.DEF or s.registered)
        and _counts(_why(member, name, s, baseline), name, s, baseline)
    }
    # A method is looked for where it is called; a registered stand-in's attribute, where read too.
    parsed = search.find({name for name, _ in confirm}, called={name for name, method in confirm if method})
    # The baseline's text sites of those names, searched only when a warning asks (`_used_so_at_baseline`).
    before = functools.cache(lambda: baseline.find_text(names) if baseline is not None else {})
    findings: list[Finding] = []
    said: dict[tuple[str, ClassRef, Lacked], int] = {}  # (stand-in, role, what it lacks) -> its finding's index
    for stand_in in stand_ins:
        for finding, lacked in _check_stand_in(
            hierarchy, stand_in, lacking[stand_in.cls.name], sites, parsed, baseline, search, before
        ):
            said[(stand_in.cls.name, stand_in.role, lacked)] = len(findings)
            findings.append(finding)
        if stand_in.handed:
            findings += _narrower_methods(hierarchy, stand_in, search, baseline)
    return _folded_into_bases(hierarchy, findings, said)


def _folded_into_bases(
    hierarchy: Hierarchy, findings: list[Finding], said: dict[tuple[str, ClassRef, Lacked], int]
) -> list[Finding]:
    """A stand-in that lacks what a consumer class it derives from lacks, which stands in for the
    same role too, is said in that class's finding (its sites added): one fix mends both. ATOM's
    flexible-block MHA backend derives from its MHA backend; both lack vLLM 0.28's
    `customize_spec` (an error each), and the same 15 members vLLM uses by name (a warning each)."""
    folded: dict[int, list[str]] = {}  # a finding's index -> the subclasses said in it
    gone: set[int] = set()
    for (name, role, what), at in said.items():
        bases = [n.name for n in hierarchy.mro(name)[1:] if isinstance(n, ConsumerRef)]
        # The last such base in the order: none of its own bases says the same (each comes after it).
        base = next((b for b in reversed(bases) if (b, role, what) in said), None)
        if base is not None:
            gone.add(at)
            folded.setdefault(said[(base, role, what)], []).append(name)
    out = []
    for i, finding in enumerate(findings):
        if i in gone:
            continue
        if i in folded:
            classes = [hierarchy.classes[name] for name in folded[i]]
            names = ", ".join(c.symbol for c in classes)
            also = f"so does {names}" if len(classes) == 1 else f"so do {names}"
            finding = replace(
                finding,
                sites=(*finding.sites, *(Site(c.path, c.line) for c in classes)),
                message=f"{finding.message}; {also} (deriving from it, in the same role)",
            )
        out.append(finding)
    return out


def _narrower_methods(hierarchy: Hierarchy, s: StandIn, search: NameSearch, baseline: Baseline | None) -> list[Finding]:
    """The stand-in's methods that cannot take what the provider now passes to its role's (as
    `override-drift` (b) judges an override): vLLM 0.34 calls
    `backend.get_supported_kernel_block_sizes(spec)` on backends written as `()`. Errors only:
    a stand-in narrower than its role with no failing call found is not news."""
    role = hierarchy.provider_members(s.role)
    out: list[Finding] = []
    for node in hierarchy.mro(s.cls.name):
        owner = hierarchy.consumer(node)
        for method in owner.methods if owner is not None else ():
            base = role.get(method.name)
            if base is None or not is_method(base[1]) or base[1].signature is None or method.name.startswith("_"):
                continue
            if hierarchy.definitions(s.cls.name, method.name)[0].method is not method:
                continue  # overridden further down the stand-in's order
            signature = base[1].signature
            if not (checkable(signature) and checkable(method.signature) and same_kind(method.signature, signature)):
                continue
            assert owner is not None
            pair = OverridePair(s.cls, owner, method, base[0], signature, (s.cls,))
            found = narrowing(
                hierarchy, pair, search, baseline, lambda site: may_reach(hierarchy, site, s.holding, search)
            )
            if found is None or not found.hits:
                continue
            message = (
                f"{s.cls.symbol} stands in for {s.role} ({s.handed}), but its {method.name}"
                f"{method.signature.render()} cannot take {', '.join(f'{m}=' for m in found.missing)}"
                f"{found.change}; {found.failing_call(method.name)}: TypeError when the provider calls it that way. "
                f"Role {pair.base_symbol}{signature.render()}"
            )
            out.append(Finding(Rule.PROTOCOL_DRIFT, Severity.ERROR, pair.symbol, (pair.site,), message))
    return out


def _why(member: Member, name: str, s: StandIn, baseline: Baseline | None) -> str:
    """What makes a lacking member stand out: abstract in the role, or new since the baseline."""
    if _is_abstract(member):
        return "abstract"
    if baseline is not None:
        before = baseline.members(s.role)
        if before is not None and name not in before:
            return f"new {baseline.since}"
    return ""


def _counts(why: str, name: str, s: StandIn, baseline: Baseline | None) -> bool:
    """Does what `_why` says of a lacking member make its lack an error? Not for an abstract one the
    baseline's role had already: the stand-in lacked it there too, and works there all the same
    (vllm-mlx 0.6's attention backend never had vLLM's abstract `get_builder_cls`), so the bump
    changes nothing."""
    if why != "abstract" or baseline is None:
        return bool(why)
    before = baseline.members(s.role)
    return before is None or name not in before


def _lacking(hierarchy: Hierarchy, s: StandIn) -> dict[str, tuple[ClassRef, Member]]:
    """The role's public methods and class attributes the stand-in does not have."""
    have = hierarchy.consumer_members(s.cls.name)
    return {
        name: pair
        for name, pair in hierarchy.provider_members(s.role).items()
        if not name.startswith("_") and name not in have and pair[1].kind in (MemberKind.DEF, MemberKind.VALUE)
    }


def _confirming(
    hierarchy: Hierarchy, s: StandIn, name: str, member: Member, used: list[NameSite], search: NameSearch
) -> list[NameSite]:
    """Of the provider's parsed uses of a member the stand-in lacks, those that make its lack an
    error (none: a warning)."""
    # Not the calls a class's `m` makes on another object (`backend.m()` inside a composite's own
    # `m`): they run only where that `m` is called, and those calls count themselves.
    used = [x for x in used if not delegates(x)]
    # Nor calls on a provider class named as written (`AttentionBackend.m()`): that class's own method.
    used = [x for x in used if not on_named_class(hierarchy, x)]
    # Nor calls in a class made only where the consumer stands in (vLLM's elastic-EP executor), nor
    # in a function only such methods run (vLLM's FlashInfer autotune, under its GPU Worker's warmup).
    used = [x for x in used if made_beside_stand_in(hierarchy, search, x) is None]
    used = [x for x in used if not beside_stand_ins(hierarchy, search, x)]
    # Nor calls on `self.x` that the calling class stores a container in (vLLM 0.34's worker calls
    # `self._incomplete_weight_updates.discard(...)` on a set): the container's method.
    used = [x for x in used if not on_container(hierarchy, x)]
    # Nor calls under `if isinstance(x, C):` where the stand-in is no C (vLLM's coordinator calls
    # its cross-attention managers' methods so): it never passes the test.
    used = [x for x in used if not _tested_apart(hierarchy, s, x)]
    if used and member.kind is MemberKind.DEF and defined_apart(hierarchy, search, s.role, name):
        # Provider classes outside the role's family define the method too (vLLM 0.27's
        # communicators and FlashInfer's workspaces beside its worker's `checkpoint_prepare`): a
        # call by the name counts where the calling file names the role.
        used = [x for x in used if _names_role(hierarchy, x.path, s.role)]
    if used and s.holding.held_by is not None and not any(may_hold(hierarchy, x, s.holding, search) for x in used):
        # Only calls on what other methods return (`x.get_class().name()`) or what provider
        # classes make: not the stand-in, which the provider reaches through its holders.
        return []
    if used and member.kind is not MemberKind.DEF:
        # A registered stand-in's attribute: read by a name any object may have (`.dtype`), it
        # counts where the reading file names the role (`get_layers(config, AttentionLayerBase)`).
        used = [x for x in used if _names_role(hierarchy, x.path, s.role)]
    return used


def _tested_apart(hierarchy: Hierarchy, s: StandIn, site: NameSite) -> bool:
    """Is the call's receiver one an `isinstance` test of a class the stand-in does not derive
    from says it is (`makers.instance_class`)?"""
    cls = instance_class(hierarchy, site, tested_only=True)
    return cls is not None and cls not in hierarchy.mro(s.cls.name)


def _confirmed(
    hierarchy: Hierarchy,
    s: StandIn,
    name: str,
    member: Member,
    used: list[NameSite],
    search: NameSearch,
    baseline: Baseline | None,
) -> tuple[list[NameSite], str]:
    """`_confirming`'s sites, and why they make no error after all ("" when they do): each runs
    only under a setting the baseline did not have and that is off unless set, a break only for a
    user who turns on a feature newer than the consumer's code (`opt_in`)."""
    used = _confirming(hierarchy, s, name, member, used, search)
    opt_in = [only_when_set(hierarchy, search, baseline, x) for x in used]
    return used, opt_in[0] if used and all(opt_in) else ""


def _check_stand_in(
    hierarchy: Hierarchy,
    s: StandIn,
    lacking: dict[str, tuple[ClassRef, Member]],
    text_sites: dict[str, list[NameSite]],
    parsed_sites: dict[str, list[NameSite]],
    baseline: Baseline | None,
    search: NameSearch,
    before: Callable[[], Mapping[str, list[NameSite]]],
) -> list[tuple[Finding, Lacked]]:
    """The findings of one stand-in, each with what it says the stand-in lacks; `before`: the
    baseline's text sites of what stand-ins lack."""
    site = Site(s.cls.path, s.cls.line)
    what = f"{s.cls.symbol} stands in for {s.role} (it defines {s.matched} of its methods" + (
        f"; {s.handed})" if s.handed else "; it is not seen handed over, so this is a guess from its shape)"
    )
    if s.registered:
        what = f"{s.cls.symbol} stands in for {s.role} ({s.handed}: it inherits none of its members)"
    findings: list[tuple[Finding, Lacked]] = []
    warned: list[str] = []
    as_before: list[str] = []  # warned of, but lacked and used so at the baseline too
    for name in sorted(lacking):
        owner, member = lacking[name]
        # A method counts where it is called; a class attribute where it is read (a read of
        # `.name` where a method is expected is usually another object's attribute).
        kinds = (SiteKind.CALL,) if member.kind is MemberKind.DEF else (SiteKind.CALL, SiteKind.READ)
        # An error needs a reason that counts (`_counts`), the class handed over and a method called
        # by name (confirmed in parsed code); a class attribute read by a common name is weaker
        # evidence (a warning), unless the class is registered under the role: then every object
        # of the role may be it.
        why = _why(member, name, s, baseline)  # said in the message, an error's or the warning's
        error = _counts(why, name, s, baseline) and bool(s.handed) and (member.kind is MemberKind.DEF or s.registered)
        if why == "abstract":
            why = f"abstract in {owner}"
        used = _uses(parsed_sites if error else text_sites, name, kinds)
        if error and s.holding.held_by is not None and all(owner in hierarchy.mro(h) for h in s.holding.holders):
            # Every class holding it has the method itself, from the class that defines it in the
            # role (both are connectors): the provider calls the holder, and this is its delegate.
            error, used = False, _uses(text_sites, name, kinds)
            why = f"{why}; its holders have it" if why else "its holders have it"
        if error:
            used, opt_in = _confirmed(hierarchy, s, name, member, used, search, baseline)
            if opt_in or not used:  # the text's evidence is a warning
                error, why = False, "; ".join(filter(None, (why, opt_in)))
                used = used or _uses(text_sites, name, kinds)
        if not used:
            continue
        first = used[0]
        calls = f"the provider {'calls' if first.kind is SiteKind.CALL else 'reads'} .{name} at {first.where}"
        if len(used) > 1:
            calls += f" (+{len(used) - 1})"
        if error:
            message = f"{what}, but lacks {name} ({why}); {calls}: AttributeError when that runs on it"
            finding = Finding(Rule.PROTOCOL_DRIFT, Severity.ERROR, f"{s.cls.symbol}.{name}", (site,), message)
            findings.append((finding, ("error", name)))
        elif _used_so_at_baseline(baseline, s, name, used, before):
            as_before.append(f"{name}{f' ({why})' if why else ''}: {calls}")
        else:
            warned.append(f"{name}{f' ({why})' if why else ''}: {calls}")
    if warned:
        message = f"{what}, but lacks {len(warned)} member(s) the provider uses by name: " + "; ".join(warned)
        if as_before:
            message += f"; and {len(as_before)} more it lacked {_at(baseline)} too, used there the same way"
        finding = Finding(Rule.PROTOCOL_DRIFT, Severity.WARNING, s.cls.symbol, (site,), message)
        findings.append((finding, ("warning", *warned, "and as before:", *as_before)))
    elif as_before:
        # Lacking each where the consumer works, used there the same way: nothing the bump changed.
        message = (
            f"{what}, but lacks {len(as_before)} member(s) the provider uses by name, as it did {_at(baseline)}, "
            "where the provider used them the same way: " + "; ".join(as_before)
        )
        findings.append(
            (Finding(Rule.PROTOCOL_DRIFT, Severity.INFO, s.cls.symbol, (site,), message), ("info", *as_before))
        )
    return findings


def _at(baseline: Baseline | None) -> str:
    return f"at {baseline.label}" if baseline is not None else ""


def _used_so_at_baseline(
    baseline: Baseline | None,
    s: StandIn,
    name: str,
    used: list[NameSite],
    before: Callable[[], Mapping[str, list[NameSite]]],
) -> bool:
    """Did the role have member `name` at the baseline too, and did each file using it now (`used`,
    found in the text) use it there as many times at least, the same way (`before`: the baseline's
    text sites)? The stand-in (the same code) lacked it there, where the consumer works, and
    nothing new reaches for it since."""
    if baseline is None:
        return False
    members = baseline.members(s.role)
    if members is None or name not in members:
        return False
    then = Counter((x.path, x.kind) for x in before().get(name, []))
    return all(then[key] >= count for key, count in Counter((x.path, x.kind) for x in used).items())
