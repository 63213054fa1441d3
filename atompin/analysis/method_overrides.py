"""override-drift: a consumer method that overrides a provider method must still take
the calls the provider makes to it.

For every consumer method that overrides a provider method (through the mixed MRO,
also when a consumer class sits between):

(a) error when a call the provider's own class hierarchy makes to it does not bind to
    the override's signature: `self.m(...)`, `cls.m(...)`, `super().m(...)`, and for
    `__init__` the generic rebuilds `self.__class__(...)`, `type(self)(...)`, `cls(...)`;
(b) error when the provider's method takes a keyword the override cannot, and some
    provider call of a method of that name passes it (`.m(..., scale=x)`); warning
    when no such call is found (the override is narrower than its base). A call on `self.x`
    where the provider class stores in x only what another class makes
    (`self.engine = Engine.from_args()`, Engine not a base of the consumer's class) does not count,
    nor one on what cannot hold a class the provider reaches only through the consumer classes
    holding it (`holding`: ATOM's proxy backend, returned by its proxy layer's `get_attn_backend`);
    With a baseline, the message says what changed since it. An override narrower only by
    parameters its base had at the baseline too (the method it overrode there) is info, not a
    warning: it was as narrow where the consumer works, and the bump changes nothing there;
(c) with a baseline, error when the override still requires a parameter its base took there and
    no longer does, and some provider call of a method of that name leaves it out; warning when
    no such call is found (`_still_required`);
(d) overrides of a method the provider no longer has (`_dropped_hooks`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace

from atompin.analysis.arity import (
    call_problem,
    checkable,
    describe_change,
    filled_by_position,
    positional_names,
    same_kind,
    untakeable_keywords,
)
from atompin.analysis.baseline import Baseline
from atompin.analysis.caller_chains import beside_stand_ins, handed_down
from atompin.analysis.declared_roles import StandingIn, stand_in_for
from atompin.analysis.hierarchy import PLAIN_BASES, ConsumerRef, Definition, Hierarchy, is_method, provider_class
from atompin.analysis.holding import Reaching
from atompin.analysis.makers import (
    instance_class,
    made_beside_stand_in,
    on_container,
    on_named_class,
    stored_maker,
)
from atompin.analysis.moduleinfo import MemberKind, SelfCall
from atompin.analysis.name_sites import NameSearch, NameSite, SiteKind, SiteReceiver
from atompin.analysis.names import absolute_module
from atompin.analysis.outside import BUILTIN_METHODS
from atompin.analysis.provider import ClassRef
from atompin.analysis.signature import ParamKind, Signature
from atompin.analysis.syntax import FALSE_CONSTANT, instance_assignments
from atompin.analysis.usage import ConsumerClass, ConsumerMethod, Ref
from atompin.model import Finding, Rule, Severity, Site


@dataclass(frozen=True)
class OverridePair:
    """A consumer method and the provider method it overrides, for one consumer class."""

    cls: ConsumerClass  # the first class whose MRO this is
    owner: ConsumerClass  # the consumer class that defines the override
    method: ConsumerMethod
    base: ClassRef  # the provider class whose method it overrides
    base_signature: Signature
    # Every consumer class whose MRO meets this override first, a provider method behind it (`cls`
    # first): a mixin's override is called by the provider classes each subclass mixes it with.
    classes: tuple[ConsumerClass, ...] = ()

    @property
    def site(self) -> Site:
        return Site(self.owner.path, self.method.line)

    @property
    def symbol(self) -> str:
        return f"{self.owner.symbol}.{self.method.name}"

    @property
    def base_symbol(self) -> str:
        return f"{self.base}.{self.method.name}"

    @property
    def bound(self) -> bool:
        return not self.method.signature.is_staticmethod


def override_pairs(hierarchy: Hierarchy) -> list[OverridePair]:
    """Every (consumer override, provider method) pair, once per defining consumer class."""
    if "override_pairs" not in hierarchy.memo:
        hierarchy.memo["override_pairs"] = _override_pairs(hierarchy)
    pairs: list[OverridePair] = hierarchy.memo["override_pairs"]
    return pairs


def _override_pairs(hierarchy: Hierarchy) -> list[OverridePair]:
    out: dict[tuple[str, str], OverridePair] = {}
    for cls in hierarchy.classes.values():
        if cls.muted or not hierarchy.has_provider_base(cls.name):
            continue
        names = {m.name for node in hierarchy.mro(cls.name) if (c := hierarchy.consumer(node)) for m in c.methods}
        for name in sorted(names):
            defs = hierarchy.definitions(cls.name, name)
            if not defs or defs[0].method is None:
                continue
            owner = hierarchy.consumer(defs[0].node)
            base = next((d for d in defs[1:] if isinstance(d.node, ClassRef)), None)
            if owner is None or base is None or not is_method(base.member) or not isinstance(base.node, ClassRef):
                continue
            assert base.member is not None and base.member.signature is not None
            key = (owner.name, name)
            if key in out:
                out[key] = replace(out[key], classes=(*out[key].classes, cls))
            elif checkable(base.member.signature) and checkable(defs[0].method.signature):
                out[key] = OverridePair(cls, owner, defs[0].method, base.node, base.member.signature, (cls,))
    return sorted(out.values(), key=lambda p: (p.symbol, p.cls.name))


def base_signature(hierarchy: Hierarchy, cls: str, name: str) -> Signature | None:
    """The signature of the first provider method `name` in consumer class `cls`'s order."""
    member = next((d.member for d in hierarchy.definitions(cls, name) if isinstance(d.node, ClassRef)), None)
    return member.signature if member is not None and is_method(member) else None


def overridden_at_baseline(hierarchy: Hierarchy, pair: OverridePair, baseline: Baseline) -> Signature | None:
    """The signature of what the override overrode at the baseline: the same provider method,
    else the first of that name in the consumer class's order there (vLLM 0.22 moved
    EagleProposer's methods up into a new SpecDecodeBaseProposer); None when neither was there."""
    before = baseline.method(pair.base, pair.method.name)
    if before is not None and before.signature is not None:
        return before.signature
    return base_signature(hierarchy.at(baseline.index), pair.cls.name, pair.method.name)


def check_method_overrides(
    hierarchy: Hierarchy,
    search: NameSearch,
    baseline: Baseline | None = None,
    makes: Callable[[str], bool] = lambda name: True,
    reaching: Callable[[Sequence[ConsumerClass], ClassRef], Reaching | None] | None = None,
    may_make: Callable[[str, AbstractSet[str]], bool] = lambda cls, quiet: True,
) -> list[Finding]:
    """override-drift. `makes` says whether the consumer calls a class of that name (`Name(...)`);
    `reaching`, given the classes an override is the method of and the provider class whose method
    it overrides, which provider calls by the method's name may be on one of them (by default,
    every one: `holding.reaching`); `may_make`, whether the consumer may make or hand on a class
    (dotted) it names otherwise than to read those of its members (by default, every one)."""
    findings: list[Finding] = _dropped_hooks(hierarchy, baseline) if baseline is not None else []
    for pair in override_pairs(hierarchy):
        if not same_kind(pair.method.signature, pair.base_signature):
            continue
        if pair.method.raises:
            continue  # every call of it fails (a stub the consumer never expects called): what it takes does not matter
        finding = _hierarchy_calls(hierarchy, pair, baseline, search, makes)
        if finding is None and not pair.method.name.startswith("__"):  # (b) would only repeat an error (a) found
            held = reaching(pair.classes or (pair.cls,), pair.base) if reaching is not None else None
            finding = _narrower(hierarchy, pair, search, baseline, held) or _still_required(
                hierarchy, pair, search, baseline, held
            )
        if finding is not None and finding.severity is Severity.ERROR and _never_made(hierarchy, pair, may_make):
            finding = replace(
                finding,
                severity=Severity.WARNING,
                message=f"{finding.message} (but {pair.owner.symbol} is not seen made or handed over: its code "
                "names it only to read its static methods and class attributes)",
            )
        if finding is not None:
            findings.append(finding)
    return findings


def _never_made(hierarchy: Hierarchy, pair: OverridePair, may_make: Callable[[str, AbstractSet[str]], bool]) -> bool:
    """Is no instance of a class the override is met first in made: none is handed to the provider,
    and the consumer's code names none but to read its static methods and class attributes
    (`ConsumerText.may_make`)? arctic-inference keeps a copy of vLLM's `FlashAttentionBackend`
    whose `get_supported_kernel_block_sizes` vLLM 0.31 calls with a spec; it installs another."""
    classes = pair.classes or (pair.cls,)
    handed = {h.target for h in hierarchy.usage.contact.handovers}
    if any(c.name in handed for c in classes):
        return False
    return not any(
        may_make(c.name, {m.name for m in c.methods if m.signature.is_staticmethod} | set(c.attributes))
        for c in classes
    )


def _still_required(
    hierarchy: Hierarchy, pair: OverridePair, search: NameSearch, baseline: Baseline | None, held: Reaching | None
) -> Finding | None:
    """(c) The override requires a parameter its base took at the baseline and no longer does:
    the provider now calls the method without it. tpu-inference 0.32's MLA layer overrides
    `process_weights_after_loading(self, act_dtype)`; vLLM 0.34's base takes nothing, and its
    loader calls the hook with no argument. A provider call found by the method's name that the
    base takes and the override does not (and that may be on the consumer's object) is an error;
    without one, a warning."""
    now = {p.name for p in pair.base_signature.params}
    required = [
        p.name
        for p in pair.method.signature.params
        if not p.has_default and p.kind not in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD) and p.name not in now
    ]
    # (The baseline is read only for such an override: most take nothing their base does not.)
    before = overridden_at_baseline(hierarchy, pair, baseline) if baseline is not None and required else None
    if baseline is None or before is None:
        return None
    was = {p.name for p in before.params}
    dropped = [name for name in required if name in was]
    if not dropped:
        return None
    name = pair.method.name
    hits = []
    untyped: NameSite | None = None  # the first call through `getattr` left out for its receiver's type
    # A call that leaves a parameter out, found by the method's name, may be another class's method
    # of that name (`self.base_layer.forward(x)` beside a layer's `forward`), unless its receiver
    # is typed as one of the base's family. So may one through `hook = getattr(x, "name", None)`.
    apart = defined_apart(hierarchy, search, pair.base, name)
    found = search.find([name], called=[name]).get(name, [])
    seen = {(s.path, s.line) for s in found}
    taken = [s for s in search.find_taken(name) if s.kind is SiteKind.CALL and (s.path, s.line) not in seen]
    found = [*found, *taken]
    for site in found:
        if site.shape is None or not _may_call_override(hierarchy, pair, site):
            continue
        if call_problem(pair.base_signature, site.shape, bound=pair.bound) is not None:
            continue  # not a call the base takes: another class's method of that name
        if call_problem(pair.method.signature, site.shape, bound=pair.bound) is None:
            continue
        if (held is not None and not held.reaches(site)) or _excuse(hierarchy, search, pair, site, [], baseline):
            continue
        if apart and not _typed_in_family(hierarchy, site, pair.base):
            if site in taken:  # (on whatever object has the method: told; `x.name()` is weaker)
                untyped = untyped or site
            continue
        hits.append(site)
    shown = ", ".join(dropped)
    signatures = (
        f"Base {pair.base_symbol}{pair.base_signature.render()}; override "
        f"{pair.owner.symbol}.{name}{pair.method.signature.render()}"
    )
    if hits:
        site = hits[0]
        more = f" (+{len(hits) - 1})" if len(hits) > 1 else ""
        message = (
            f"the provider calls .{name}{site.shape.render() if site.shape else ''} at {site.where}{more}, without "
            f"{shown}, which the base no longer takes (it did at {baseline.label}) and the override still requires: "
            f"TypeError when the provider calls it that way. {signatures}"
        )
        return Finding(Rule.OVERRIDE_DRIFT, Severity.ERROR, pair.symbol, (pair.site,), message)
    where = (
        f"one is made at {untyped.where}, on an object whose class is not known: other provider classes define the name"
        if untyped is not None
        else "none is found by the method's name, nor through `getattr`"
    )
    message = (
        f"the override still requires {shown}, which the base took at {baseline.label} and no longer does: a call "
        f"of the base's shape leaves it out ({where}). {signatures}"
    )
    return Finding(Rule.OVERRIDE_DRIFT, Severity.WARNING, pair.symbol, (pair.site,), message)


def _dropped_hooks(hierarchy: Hierarchy, baseline: Baseline) -> list[Finding]:
    """(d) Overrides of a method a provider class of the order had at the baseline and no longer
    has, nor any other provider class of the order: the provider cannot call it as that method
    any more, so what it customised is silently gone (unless the consumer calls it itself, as
    `self.m(...)`). Judged only where every base at the pin is known and the class that had the
    method is still there (a class renamed or gone fails louder elsewhere), and not for an override
    that only raises. Warnings."""
    before = hierarchy.at(baseline.index)
    # A read of the name is the consumer calling it itself, but an override's own `super().m()`.
    called = {use.method.name for use in hierarchy.usage.contact.member_uses if not (use.hands_on or use.stored)}
    out: list[Finding] = []
    for cls in hierarchy.classes.values():
        if cls.muted or not hierarchy.has_provider_base(cls.name):
            continue
        order = hierarchy.mro(cls.name)
        if any(isinstance(node, str) and node not in PLAIN_BASES for node in order):
            continue  # an outside base may define anything
        for method in cls.methods:
            name = method.name
            if name.startswith("__") or name in called or method.raises:
                continue  # (an override that only raises customised nothing: verl's receive-only adapter)
            now = [d for d in hierarchy.definitions(cls.name, name) if isinstance(d.node, ClassRef)]
            was = [d for d in before.definitions(cls.name, name) if isinstance(d.node, ClassRef)]
            if now or not was or was[0].node not in order:
                continue
            holder = was[0].node
            message = (
                f"overrides {holder}.{name}, which {holder} had at {baseline.label} and no longer has (nor any "
                "other provider class it derives from): the provider no longer calls it as that method, so what "
                "it customised is silently gone, unless the consumer calls it itself"
            )
            out.append(
                Finding(
                    Rule.OVERRIDE_DRIFT,
                    Severity.WARNING,
                    f"{cls.symbol}.{name}",
                    (Site(cls.path, method.line),),
                    message,
                )
            )
    return out


# -- (a) calls from the provider's own class hierarchy ------------------------------------


def _reaches(hierarchy: Hierarchy, cls: str, pair: OverridePair, call: SelfCall, caller: ClassRef) -> bool:
    """Does this call in provider class `caller` land on the consumer's override, for an instance of `cls`?"""
    if call.receiver == "super":
        mro = hierarchy.mro(cls)
        if caller not in mro:
            return False
        after = mro.index(caller)
        defs = [d for d in hierarchy.definitions(cls, pair.method.name) if d.index > after]
        return bool(defs) and defs[0].node == ConsumerRef(pair.owner.name)
    return True  # self.m / cls.m / rebuilds dispatch on the instance: the override wins


def _handed_not_none(hierarchy: Hierarchy, cls: str, caller: ClassRef, call: SelfCall) -> bool:
    """Is provider class `caller`'s `call.method` reached, for consumer class `cls`, only through
    a consumer override whose every `super()` call passes not None (`SuperCall`) a parameter
    that `call` runs only when it is None (`SelfCall.none_params`)? Then the call never runs for
    it (vllm-omni's `make_request_output` hands on only when `pooling_output is not None`, where
    vLLM's returns before its 5-argument `_new_request_output`)."""
    defined = hierarchy.definitions(cls, call.method)
    at = next((i for i, d in enumerate(defined) if d.node == caller), None)
    if not at:
        return False  # not defined there, or met first: no override hands on to it
    override = defined[at - 1].method
    info = hierarchy.provider(caller)
    member = info.members.get(call.method) if info is not None else None
    sig = member.signature if member is not None else None
    if override is None or override.delegates_to or not override.super_calls or sig is None:
        return False
    names = positional_names(sig, bound=not sig.is_staticmethod)
    for each in override.super_calls:
        passed = {names[i] for i in each.positions if i < len(names)} | set(each.keywords)
        if not passed & set(call.none_params):
            return False
    return True


def _hierarchy_calls(
    hierarchy: Hierarchy,
    pair: OverridePair,
    baseline: Baseline | None,
    search: NameSearch,
    makes: Callable[[str], bool],
) -> Finding | None:
    name = pair.method.name
    problems: list[tuple[ClassRef, SelfCall, str, str]] = []  # (..., the consumer class met through)
    seen: set[tuple[ClassRef, int]] = set()  # a provider class's call, met through several classes
    for cls in pair.classes:
        # The provider method the override stands over in this class's order (a subclass mixing
        # the override with a provider subclass may stand it over a widened method).
        stood_over = base_signature(hierarchy, cls.name, name) or pair.base_signature
        for node in hierarchy.mro(cls.name):
            info = hierarchy.provider(node)
            if info is None or not isinstance(node, ClassRef):
                continue
            for call in info.self_calls:
                wanted = call.receiver == "rebuild" if name == "__init__" else call.receiver != "rebuild"
                if call.name != name or not wanted or (node, id(call)) in seen:
                    continue
                seen.add((node, id(call)))
                if not hierarchy.runs(cls.name, call.method, node) or not _reaches(
                    hierarchy, cls.name, pair, call, node
                ):
                    continue
                if call.none_params and _handed_not_none(hierarchy, cls.name, node, call):
                    continue
                problem = call_problem(pair.method.signature, call.shape, bound=pair.bound)
                if problem and call_problem(stood_over, call.shape, bound=pair.bound) is None:
                    problems.append((node, call, problem, cls.name))
    if not problems:
        return None
    # A call that failed the same way at the baseline, where the consumer works, is on a path
    # that is probably not taken: a warning. A new one is an error. Without a baseline nothing
    # tells which: the provider's helpers that make such calls are often on paths a plugin never
    # takes (measured on released plugins at their declared vLLM), so it is a warning.
    new = [
        (caller, call, problem, cls)
        for caller, call, problem, cls in problems
        if baseline is not None and not _failed_at_baseline(hierarchy, baseline, pair, caller, call, cls)
    ]
    caller, call, problem, _ = (new or problems)[0]
    path = hierarchy.index.module_path(caller.module)
    what = "rebuilds the object" if call.receiver == "rebuild" else f"calls {call.receiver}.{name}"
    if call.receiver == "super":
        what = f"calls super().{name}"
    since = " (no baseline tells whether this changed: `lock` takes the consumer's declared provider)"
    beside = ""
    if baseline is not None:
        since = ""
        if not new:
            since = f" (it did so {baseline.since} too, where the override works: probably a path not taken)"
        elif baseline.method(caller, call.method) is None:
            since = f" ({caller.qualname}.{call.method} is new {baseline.since})"
            beside = _called_beside_stand_ins(hierarchy, search, caller, call.method)
    more = f" ({len(problems) - 1} more such call(s))" if len(problems) > 1 else ""
    message = (
        f"{caller}.{call.method} ({path}:{call.line}) {what}{call.shape.render()}{since}, which the override "
        f"{pair.owner.symbol}.{name}{pair.method.signature.render()} cannot take: it {problem}{more}. "
        f"TypeError when that path runs{beside}"
    )
    severity = Severity.ERROR if new and not beside else Severity.WARNING
    if severity is Severity.ERROR and _overridden_below(hierarchy, pair, makes):
        severity = Severity.WARNING
        message += (
            f" (but every consumer class deriving from {pair.owner.symbol} overrides {name} again, and "
            f"{pair.owner.symbol} is not seen made: the provider's calls land on those overrides)"
        )
    return Finding(Rule.OVERRIDE_DRIFT, severity, pair.symbol, (pair.site,), message)


def _overridden_below(hierarchy: Hierarchy, pair: OverridePair, makes: Callable[[str], bool]) -> bool:
    """Is the override met first only by its own class, which the consumer derives other classes
    from (each overriding it again) but never makes, nor hands over? vllm-omni's runner base: the
    runners it makes are its subclasses, and they get only what their overrides pass on."""
    owner = pair.owner
    if [c.name for c in pair.classes] != [owner.name]:
        return False
    subclasses = [c for c in hierarchy.line({owner.name}) if c.name != owner.name]
    if not subclasses or any(_forwards_any_keyword(hierarchy, c.name, pair.method.name) for c in subclasses):
        return False  # an override passing on `**kwargs` through super() brings the provider's call down
    if any(h.target == owner.name for h in hierarchy.usage.contact.handovers):
        return False
    return not makes(owner.name.rpartition(".")[2])  # a text search: asked last


def _forwards_any_keyword(hierarchy: Hierarchy, cls: str, name: str) -> bool:
    """Does the override of `name` consumer class `cls` meets first take any keyword (`**kwargs`) and
    call the overridden method (`super().name(...)`, `Base.name(self, ...)`)?"""
    first = next(iter(hierarchy.definitions(cls, name)), None)
    method = first.method if first is not None else None
    if method is None or not (method.calls_super or method.delegates_to):
        return False
    return any(p.kind is ParamKind.VAR_KEYWORD for p in method.signature.params)


def _called_beside_stand_ins(hierarchy: Hierarchy, search: NameSearch, caller: ClassRef, method: str) -> str:
    """For a provider method new since the baseline (the consumer, written against it, does not
    call it itself): when the provider calls it, on an object it was handed, only inside methods
    of classes that a consumer class handed over in their place implements itself
    (`stand_in_for`), say so; "" otherwise (no such call, or one elsewhere)."""
    info = hierarchy.provider(caller)
    member = info.members.get(method) if info is not None else None
    if member is None or member.signature is None:
        return ""
    beside: list[tuple[NameSite, StandingIn]] = []
    for site in search.find([method], called=[method]).get(method, []):
        handed = site.kind is SiteKind.CALL and site.receiver is SiteReceiver.OTHER
        if handed and site.shape is not None and call_problem(member.signature, site.shape, bound=True) is not None:
            continue  # not a call this method takes: another class's method of that name
        if handed and _typed_apart(hierarchy, site, caller):
            continue  # on an attribute typed as a class outside the caller's family: its method
        if not handed or not site.cls:
            return ""  # read, or called on itself, or outside a class: it may reach the consumer's object
        module, _ = hierarchy.index.tree.module_name(site.path)
        stand_in = stand_in_for(hierarchy, search, ClassRef(module, site.cls), site.method)
        if stand_in is None:
            return ""
        beside.append((site, stand_in))
    if not beside:
        return ""
    site, stand_in = beside[0]
    more = f" (and {len(beside) - 1} more such call(s))" if len(beside) > 1 else ""
    return (
        f"; but the provider calls {method} only at {site.where}, inside {site.cls}.{site.method}{more}, which "
        f"{stand_in.telling()}, implements itself: only instances the consumer does not make run that call"
    )


def _failed_at_baseline(
    hierarchy: Hierarchy, baseline: Baseline, pair: OverridePair, caller: ClassRef, call: SelfCall, cls: str
) -> bool:
    """Did the provider's class make the same failing call at the baseline? When that class is
    not there (the method making the call moved up to a new base since), did one of the provider
    classes in consumer class `cls`'s order there?"""
    info = baseline.class_info(caller)
    if info is not None:
        infos = [info]
    else:
        order = hierarchy.at(baseline.index).mro(cls)
        infos = [i for node in order if isinstance(node, ClassRef) and (i := baseline.class_info(node)) is not None]
    return any(
        c.name == call.name
        and c.receiver == call.receiver
        and c.method == call.method
        and call_problem(pair.method.signature, c.shape, bound=pair.bound) is not None
        for i in infos
        for c in i.self_calls
    )


def _site_failed_at_baseline(baseline: Baseline, pair: OverridePair, site: NameSite) -> bool:
    """Did the same provider function make a call of the method at the baseline that the override
    cannot take, as `_failed_at_baseline` asks of a class's own calls? The consumer works there, so
    it does not run that call (found by name, in the same file)."""
    return any(
        old.kind is SiteKind.CALL
        and old.shape is not None
        and (old.cls, old.function) == (site.cls, site.function)
        and call_problem(pair.method.signature, old.shape, bound=pair.bound) is not None
        for old in baseline.file_sites(site.path, site.name)
    )


# -- (b) keywords the provider passes that the override cannot take -----------------------


@dataclass(frozen=True)
class Narrowing:
    """What an override (or a stand-in's method) cannot take of its base, and the provider
    calls that pass it anyway."""

    missing: list[str]  # the base's named parameters it cannot take by keyword
    change: str  # " (out new since 0.22.0)" with a baseline
    searched: bool  # some of them are new since the baseline (calls were looked for)
    hits: list[tuple[NameSite, list[str]]]  # the calls that fail, with what each passes of them
    excuses: list[tuple[int, str]]  # why other such calls do not reach it (`_excuse`)
    # The base had every one of them at the baseline already, as the method the override overrode
    # there: it was narrower in the same way where the consumer works.
    unchanged: bool = False

    def failing_call(self, name: str) -> str:
        """ "the provider calls .m(..., out=) at f.py:3 and 2 more call(s)" (hits only)."""
        site, passed = self.hits[0]
        more = f" and {len(self.hits) - 1} more call(s)" if len(self.hits) > 1 else ""
        assert site.shape is not None
        keywords = [k for k in passed if k in site.shape.keywords]
        called = f"(..., {', '.join(f'{k}=' for k in passed)})" if keywords == passed else site.shape.render()
        return f"the provider calls .{name}{called} at {site.where}{more}"


def narrowing(
    hierarchy: Hierarchy,
    pair: OverridePair,
    search: NameSearch,
    baseline: Baseline | None,
    reaches: Callable[[NameSite], bool] = lambda site: True,
    held: str = "",
) -> Narrowing | None:
    """(b) for one pair: None when the override takes every named parameter of its base.
    `reaches` filters the calls that may be on the consumer's object; `held` says why a call it
    keeps out cannot be (`holding.Reaching.how`)."""
    missing = untakeable_keywords(pair.method.signature, pair.base_signature)
    if not missing:
        return None
    name = pair.method.name
    change, added, unchanged = _change(hierarchy, pair, baseline, missing)
    hits = []
    excuses: list[tuple[int, str]] = []  # calls that do not reach the override (`_excuse`)
    # The calls are found by method name, indirect evidence they reach this override. A keyword
    # the base gained since the baseline is the drift this rule is for: only those are searched
    # for, and a call passing one is an error; otherwise the override is only narrower (a warning).
    searched = [m for m in missing if m in added]
    # A new parameter the provider may fill by position is looked for in every call, not only
    # in files that pass it by keyword.
    by_position = [m for m in searched if m in positional_names(pair.base_signature, pair.bound)]
    # A call by position found by the name may be another class's method of that name, unless
    # the receiver is typed as one of the base's family (`self.scheduler` of a class annotating
    # `scheduler: SchedulerInterface`).
    apart = bool(by_position) and defined_apart(hierarchy, search, pair.base, name)
    also = [] if by_position else [f"{m}=" for m in searched]
    sites = search.find([name], also=also, called=[name]).get(name, []) if searched else []
    for site in sites:
        if site.shape is None or not _may_call_override(hierarchy, pair, site):
            continue
        filled = filled_by_position(pair.base_signature, site.shape, pair.bound)
        if apart and not _typed_in_family(hierarchy, site, pair.base):
            filled = []
        passed = [k for k in site.shape.keywords if k in searched] + [k for k in filled if k in by_position]
        if not passed or (not held and not reaches(site)):  # (asked last: it may read the provider's callers)
            continue
        if call_problem(pair.base_signature, site.shape, bound=pair.bound) is not None:
            if _made_for_override(pair, site) and call_problem(pair.method.signature, site.shape, bound=pair.bound):
                if not held or reaches(site):
                    hits.append((site, passed))  # made for methods taking what the override takes: it fails there
            continue  # not a call the provider's method takes: another class's method of that name
        if call_problem(pair.method.signature, site.shape, bound=pair.bound) is not None:
            # Keywords the override could not take at the baseline either: did the call fail there too?
            old = [k for k in site.shape.keywords if k in missing and k not in added]
            excuse = _excuse(hierarchy, search, pair, site, old, baseline, by_position=any(k in filled for k in passed))
            if excuse is None and held and not reaches(site):
                excuse = _NOT_HELD, f"the provider passes them at {site.where}, in a call that cannot be on it: {held}"
            if excuse is None:
                hits.append((site, passed))
            else:
                excuses.append(excuse)
    return Narrowing(missing, change, bool(searched), hits, excuses, unchanged)


def _may_call_override(hierarchy: Hierarchy, pair: OverridePair, site: NameSite) -> bool:
    """May a provider site found by the method's name be a call of the override: a call on
    another object (not `self`: part (a)'s), not on what only another class makes
    (`_made_elsewhere`) nor on an instance of a class no class running it derives from
    (`_instance_elsewhere`)?"""
    return (
        site.kind is SiteKind.CALL
        and site.receiver is SiteReceiver.OTHER
        and not _made_elsewhere(hierarchy, pair, site)
        and not _instance_elsewhere(hierarchy, pair, site)
    )


def _made_for_override(pair: OverridePair, site: NameSite) -> bool:
    """Is the call made only where the method takes a parameter the override has and its base
    has not (`NameSite.taken`)? Then it is made for overrides such as this one: vLLM 0.11.2 passes
    `use_v1` first to a platform's `get_attn_backend_cls` that still takes it, which its base no
    longer does, and one argument more than vllm-kunlun's takes."""
    names = {p.name for p in pair.method.signature.params}
    return bool(site.taken) and site.taken in names and site.taken not in {p.name for p in pair.base_signature.params}


def _narrower(
    hierarchy: Hierarchy,
    pair: OverridePair,
    search: NameSearch,
    baseline: Baseline | None,
    held: Reaching | None = None,
) -> Finding | None:
    if held is None:
        found = narrowing(hierarchy, pair, search, baseline)
    else:
        found = narrowing(hierarchy, pair, search, baseline, held.reaches, held.how)
    if found is None:
        return None
    name = pair.method.name
    shown = ", ".join(f"{m}=" for m in found.missing)
    signatures = (
        f"{pair.base_symbol}{pair.base_signature.render()}; override "
        f"{pair.owner.symbol}.{name}{pair.method.signature.render()}"
    )
    if found.hits:
        message = (
            f"{found.failing_call(name)}; the override cannot take {shown}{found.change}: TypeError when the "
            f"provider calls it that way. Base {signatures}"
        )
        return Finding(Rule.OVERRIDE_DRIFT, Severity.ERROR, pair.symbol, (pair.site,), message)
    why = "no provider call passes the new ones by keyword yet" if found.searched else "a call passing them would fail"
    if found.excuses:
        why = min(found.excuses, key=lambda excuse: excuse[0])[1]  # the first of the kind told first
    message = (
        f"the override is narrower than the method it overrides: it cannot take {shown}{found.change}; {why}. "
        f"Base {signatures}"
    )
    # Narrower in the same way at the baseline, where the consumer works: nothing the bump changed.
    severity = Severity.INFO if found.unchanged else Severity.WARNING
    return Finding(Rule.OVERRIDE_DRIFT, severity, pair.symbol, (pair.site,), message)


# More provider files than this defining a method's name: whose method a call by position is
# cannot be told (each of their classes would be indexed).
_MAX_DEFINING = 64


def _in_family(hierarchy: Hierarchy, cls: ClassRef, base: ClassRef) -> bool:
    """Is `cls` in `base`'s order, or derived from it?"""
    return cls in hierarchy.index.mro(base) or base in hierarchy.index.mro(cls)


def defined_apart(hierarchy: Hierarchy, search: NameSearch, base: ClassRef, name: str) -> bool:
    """Does a provider class outside `base`'s family (`_in_family`) define `name`, or are there
    too many to tell, or is it a built-in type's method name? A call found by the name alone, passing a new parameter by position, may
    then be that class's (vLLM 0.34's `sampler.profile_run(hidden_states)` beside
    `GPUModelRunner.profile_run(self, randomize_inputs=False)`). A class the index cannot place
    (defined in a function) is of the family when its header names a base of the family."""
    memo: dict[tuple[ClassRef, str], bool] = hierarchy.memo.setdefault("defined_apart", {})
    key = (base, name)
    if key not in memo:
        if name in BUILTIN_METHODS:
            memo[key] = True  # `d.update(other)`: perhaps a built-in object's
            return True
        [paths] = search.files_defining([({name}, 1)], _MAX_DEFINING)
        index = hierarchy.index
        family_names = {n.qualname.rpartition(".")[2] for n in index.mro(base) if isinstance(n, ClassRef)}

        def of_family(path: str, cls: ClassRef) -> bool:
            if index.class_info(cls) is not None:
                return _in_family(hierarchy, cls, base)
            return bool(family_names & _header_bases(index.tree.read(path), cls.qualname.rpartition(".")[2]))

        defining = (
            (path, ClassRef(index.tree.module_name(path)[0], qualname))
            for path in paths
            for qualname, methods in search.class_methods(path).items()
            if name in methods
        )
        memo[key] = not paths or not all(of_family(path, cls) for path, cls in defining)
    return memo[key]


def _header_bases(text: bytes, name: str) -> set[str]:
    """The last names of the bases written in the header of class `name` in a file's text."""
    match = re.search(rb"^[ \t]*class\s+" + re.escape(name.encode()) + rb"\s*\(([^)]*)\)", text, re.MULTILINE)
    if match is None:
        return set()
    return {part.strip().rpartition(".")[2] for part in match.group(1).decode(errors="replace").split(",")}


def _typed_in_family(hierarchy: Hierarchy, site: NameSite, base: ClassRef) -> bool:
    """Is the receiver of `site` `self.x` of a provider class that annotates x with a class of
    `base`'s family?"""
    cls = _receiver_class(hierarchy, site)
    return cls is not None and _in_family(hierarchy, cls, base)


def _typed_apart(hierarchy: Hierarchy, site: NameSite, base: ClassRef) -> bool:
    """Is the receiver of `site` `self.x` of a provider class that annotates x with a class
    outside `base`'s family (vLLM's IPC weight-transfer engine calls `self.client.update_weights`,
    its `VLLMWeightSyncClient`'s, beside the engines' own `update_weights`), or stores a container
    in it (`on_container`)?"""
    if on_container(hierarchy, site):
        return True
    cls = _receiver_class(hierarchy, site)
    return cls is not None and not _in_family(hierarchy, cls, base)


def _receiver_class(hierarchy: Hierarchy, site: NameSite) -> ClassRef | None:
    """The provider class the class of `site` annotates its receiver `self.x` with (the first
    class of its order that has `x`), or the class a local receiver is known to be an instance of
    (`makers.instance_class`); None when the receiver is no such attribute, or untyped."""
    if site.instance_of or site.element_of:
        return instance_class(hierarchy, site)
    if not (site.attribute and site.cls):
        return None
    index = hierarchy.index
    holder = ClassRef(index.tree.module_name(site.path)[0], site.cls)
    for node in index.mro(holder):
        info = index.class_info(node) if isinstance(node, ClassRef) else None
        member = info.members.get(site.attribute) if info is not None else None
        if member is not None and isinstance(node, ClassRef):
            return hierarchy.annotated_class(node, member)
    return None


# The order in which the warning tells why a call does not reach the override: the consumer took
# the calling method over (or stands in for its class), the call failed at the baseline too, a
# flag keeps it off, the consumer keeps other classes where the call is made, the call is on a
# provider class by name, the call is on what cannot hold the class (`holding`).
_TAKEN_OVER, _FAILED_BEFORE, _SWITCHED_OFF, _KEPT_APART, _ON_NAMED_CLASS, _NOT_HELD = range(6)


def _excuse(
    hierarchy: Hierarchy,
    search: NameSearch,
    pair: OverridePair,
    site: NameSite,
    old: list[str],
    baseline: Baseline | None,
    by_position: bool = False,
) -> tuple[int, str] | None:
    """Why a provider call the override cannot take does not reach it, with its rank (above) in
    the warning's telling; None when nothing says so (the call is an error). `old`: the keywords
    it passes that the override could not take at the baseline either; `by_position`: it passes
    a new parameter by position (found by the method's name only: weaker evidence)."""
    module, _ = hierarchy.index.tree.module_name(site.path)
    holder = ClassRef(module, site.cls)
    by = hierarchy.taken_over_by(holder, site.method) if site.cls else ""
    if by:
        return _TAKEN_OVER, (
            f"the provider passes them at {site.where}, inside {site.cls}.{site.method}, which {by} overrides "
            "without calling it: only instances the consumer does not make run that call"
        )
    stand_in = stand_in_for(hierarchy, search, holder, site.method) if site.cls else None
    if stand_in is not None:
        return _TAKEN_OVER, (
            f"the provider passes them at {site.where}, inside {site.cls}.{site.method}, which "
            f"{stand_in.telling()}, implements itself: only instances the consumer does not make run that call"
        )
    beside = made_beside_stand_in(hierarchy, search, site)
    if beside is not None:
        return _TAKEN_OVER, (
            f"the provider passes them at {site.where}, inside {site.cls}.{site.method}; {beside.telling()}: "
            "only instances the consumer does not make run that call"
        )
    chain = beside_stand_ins(hierarchy, search, site)
    if chain:
        return _TAKEN_OVER, (
            f"the provider passes them at {site.where}; {chain}: only instances the consumer does not make run that call"
        )
    apart = _kept_apart(hierarchy, pair, holder, site.method, site.attribute) if site.cls else None
    if apart:
        holders, others = apart
        return _KEPT_APART, (
            f"the provider passes them at {site.where}, on self.{site.attribute} of {site.cls}; the consumer "
            f"classes that run {site.cls}.{site.method} ({', '.join(holders)}) keep other classes there "
            f"({', '.join(others)})"
        )
    upstream = _kept_apart_upstream(hierarchy, search, pair, site) if not site.attribute else None
    if upstream:
        places, holders, others = upstream
        return _KEPT_APART, (
            f"the provider passes them at {site.where}, on what is handed down from {places}; the consumer "
            f"classes that run those ({', '.join(holders)}) keep other classes there ({', '.join(others)})"
        )
    off = _switched_off(hierarchy, pair, site.flag) if site.flag else ""
    if off:
        running = pair.cls.symbol + (f" (and {len(pair.classes) - 1} more)" if len(pair.classes) > 1 else "")
        return _SWITCHED_OFF, (
            f"the provider passes them at {site.where} only when {site.flag} is true, and {running} has "
            f"{site.flag.rpartition('.')[2]} False (set in {off}'s body, and by none of the consumer's classes)"
        )
    if on_named_class(hierarchy, site):
        return _ON_NAMED_CLASS, (
            f"the provider passes them at {site.where} on {site.named}, a provider class named as written: "
            "a call on that class itself, where no override is looked up"
        )
    if by_position and not old and baseline is not None and _site_failed_at_baseline(baseline, pair, site):
        return _FAILED_BEFORE, (
            f"the provider calls .{pair.method.name}{site.shape.render() if site.shape else ''} at {site.where}, "
            f"and the same function made such a call at {baseline.label}, which the override could not take "
            "there either: the consumer works there, so that call is on another object"
        )
    if old and baseline is not None and _site_failed_at_baseline(baseline, pair, site):
        return _FAILED_BEFORE, (
            f"the provider passes them at {site.where}, together with {', '.join(f'{k}=' for k in old)}, which "
            f"the override could not take at {baseline.label} either, where the same function made such a call: "
            "it failed there as well, and the consumer works there, so it does not run that call"
        )
    return None


def _made_elsewhere(hierarchy: Hierarchy, pair: OverridePair, site: NameSite) -> bool:
    """Is the call's receiver `self.x` of a provider class that stores in x only what cannot be an
    instance of a class running the override (`makers.stored_maker`: what a provider class's
    constructor makes, or its factory when none of those classes derives from that class)? Then
    the call reaches another class's method. Not decided when a consumer class deriving from the
    provider class holding x sets x itself (`Hierarchy.sets_attribute`). (An outside base is not
    taken to derive from the holder: `Hierarchy._may_derive_from` would count nearly every one,
    `nn.Module` included.)"""
    maker = stored_maker(hierarchy, site)
    if maker is None:
        return False
    if hierarchy.sets_attribute(maker.holder, site.attribute):
        return False
    return maker.exact or all(maker.cls not in hierarchy.mro(cls.name) for cls in pair.classes)


def _instance_elsewhere(hierarchy: Hierarchy, pair: OverridePair, site: NameSite) -> bool:
    """Is the call's receiver a local known to be an instance of a provider class (or a subclass:
    `makers.instance_class`) that no class running the method derives from? vLLM 0.27's
    coordinator calls `manager.get_num_blocks_to_allocate(...)` for its cross-attention managers
    under `if isinstance(manager, CrossAttentionManager):`, with other arguments than for the rest.
    A stand-in (a class deriving from none of its role's) is where its role is expected, whatever
    the provider annotates: only an `isinstance` test keeps it out."""
    classes = pair.classes or (pair.cls,)
    stand_in = all(pair.base not in hierarchy.mro(c.name) for c in classes)
    cls = instance_class(hierarchy, site, tested_only=stand_in)
    return cls is not None and all(cls not in hierarchy.mro(c.name) for c in classes)


def _switched_off(hierarchy: Hierarchy, pair: OverridePair, flag: str) -> str:
    """For a call made only when `R.attr` is true (`NameSite.flag`): the provider class(es) that set
    `attr` to a false constant in their body, when every consumer class running the override
    inherits that and nothing else sets it: no consumer class deriving from such a class
    (`Hierarchy.sets_attribute`), no provider class's method on the instance, no generated
    `__init__` taking it as a field (a dataclass's `use_cache: bool = False`). "" otherwise. Then
    an instance of the override's classes never makes that call (vLLM's `if
    offloader.supports_tower_offload:`, False but for the one offloader that supports it)."""
    attr = flag.rpartition(".")[2]
    holders = set()
    for cls in pair.classes:
        found = hierarchy.lookup(cls.name, attr)
        if not isinstance(found, Definition) or not isinstance(found.node, ClassRef) or found.member is None:
            return ""
        if found.member.truth is not False or hierarchy.sets_attribute(found.node, attr):
            return ""
        defined = hierarchy.definitions(cls.name, attr)
        if any(d.member is not None and d.member.kind is MemberKind.INSTANCE for d in defined):
            return ""  # a provider class's method sets it on the instance
        if hierarchy.takes_as_field(found.node):
            return ""  # a field: the constructor sets it
        holders.add(str(found.node))
    return ", ".join(sorted(holders))


def _kept_apart_upstream(
    hierarchy: Hierarchy, search: NameSearch, pair: OverridePair, site: NameSite
) -> tuple[str, list[str], list[str]] | None:
    """For a call on what the provider hands down from `self.x` of its classes (`handed_down`):
    those places told, and as `_kept_apart` says of each of them. vLLM 0.27's
    `flashinfer_autotune(runner)` calls `runner._dummy_run(...)` on the `model_runner` of the GPU
    `Worker` that runs `kernel_warmup(self)`; vllm-omni's GPU workers keep its GPU runners there,
    and its NPU runners are kept by NPU workers that do not derive from that Worker."""
    found = handed_down(hierarchy, search, site)
    if found is None:
        return None
    module_of = hierarchy.index.tree.module_name
    holders: list[str] = []
    others: list[str] = []
    for place in found.places:
        holder = ClassRef(module_of(place.path)[0], place.cls)
        apart = _kept_apart(hierarchy, pair, holder, place.method, place.attribute)
        if apart is None:
            return None
        holders += apart[0]
        others += apart[1]
    told: dict[str, list[str]] = {}
    for place in found.places:
        told.setdefault(place.attribute, []).append(f"{place.cls}.{place.method}")
    places = "; ".join(f"self.{a} in {', '.join(sorted(set(m)))}" for a, m in sorted(told.items()))
    return places, list(dict.fromkeys(holders)), list(dict.fromkeys(others))


def _kept_apart(
    hierarchy: Hierarchy,
    pair: OverridePair,
    holder: ClassRef,
    method: str,
    attribute: str,
) -> tuple[list[str], list[str]] | None:
    """For a call on `self.x` (x: `attribute`) inside `method` of provider class `holder`: the
    consumer classes that run that method (derive from `holder` and do not take the method over),
    and what they keep in x, when every one of them keeps there only what is not an instance of a
    class running the override (`Hierarchy.kept_in`): then the consumer's own objects do not bring
    the call to the override. None otherwise. (The provider's own instances of `holder` may still:
    a warning, not silence.) A class of them setting x nowhere keeps what its provider bases store
    there (`_provider_made_in`)."""
    if not attribute:
        return None
    running = hierarchy.running(holder, method)
    others: list[str] = []
    for cls in running:
        kept = hierarchy.kept_in(cls.name, attribute)
        if kept is None:
            made = _provider_made_in(hierarchy, cls.name, attribute)
            if made is not None:
                others += made
                continue
        if kept is None or any(ConsumerRef(c.name) in hierarchy.mro(name) for c in pair.classes for name in kept):
            return None
        others += [hierarchy.classes[name].symbol for name in kept]
    return ([cls.symbol for cls in running], list(dict.fromkeys(others))) if running else None


def _provider_made_in(hierarchy: Hierarchy, name: str, attribute: str) -> list[str] | None:
    """The provider classes instances of consumer class `name` keep in `attribute`, when no
    consumer class of its order sets it and the provider classes there store in `self.attribute`
    only constants and instances made by calling a provider class by its name, which the consumer
    neither patches nor replaces a method of, nor of the storing class: vllm-omni's `OmniGPUWorkerBase`,
    a GPU `Worker` keeping the `GPUModelRunnerV1` or `GPUModelRunnerV2` its `init_device` makes
    (what its methods store: `syntax.instance_assignments`; a name an import inside them binds,
    read as that import's). None otherwise (a base outside both packages may store anything)."""
    index = hierarchy.index
    made: list[str] = []
    for node in hierarchy.mro(name):
        owner = hierarchy.consumer(node)
        if owner is not None:
            if "*" in owner.assigned or attribute in owner.assigned:
                return None
            continue
        if not isinstance(node, ClassRef):
            if str(node) in PLAIN_BASES:
                continue
            return None
        if _patched_class(hierarchy, node):
            return None  # a replaced method, or one set on it in place, may store something else
        cls = hierarchy.class_node(node)
        if cls is None:
            return None
        for callee in sorted(instance_assignments(cls).get(attribute, ())):
            if callee == FALSE_CONSTANT:
                continue
            parts = tuple(callee.split("."))
            refs = _imported_in(cls, parts, *index.tree.module_name(index.module_path(node.module)))
            if len(refs) > 1:
                return None  # imported differently in two methods
            ref = refs[0] if refs else Ref(node.module, parts)
            made_class = provider_class(hierarchy.resolve, (ref,)) if all(parts) else None
            if made_class is None or hierarchy.patched_names & {*parts, *ref.path}:
                return None  # ("*": anything else stored; a callee not a provider class)
            if _patched_class(hierarchy, made_class):
                return None  # the consumer puts its methods on it (arctic-inference's runner patch)
            made.append(str(made_class))
    return made or None  # (stored nowhere it reads: set some other way)


def _patched_class(hierarchy: Hierarchy, cls: ClassRef) -> bool:
    """Does the consumer replace a method of provider class `cls`, or of a provider class it
    derives from, or set a class's members on one of them (`Hierarchy.patched_in_place`)?"""
    order = [node for node in hierarchy.index.mro(cls) if isinstance(node, ClassRef)]
    names = {str(node) for node in order}
    in_place = hierarchy.patched_in_place()
    return any(node in in_place for node in order) or any(p.rpartition(".")[0] in names for p in hierarchy.patched)


def _imported_in(node: ast.AST, parts: tuple[str, ...], module: str, is_package: bool) -> list[Ref]:
    """What a dotted name read in `node` (a class's methods) of `module` may refer to when its
    first part is bound by imports inside it (`from vllm.v1.worker.gpu_model_runner import
    GPUModelRunner as GPUModelRunnerV1` in vLLM's `Worker.init_device`): each import's, in order;
    none when it is not bound so."""
    refs: list[Ref] = []
    for each in ast.walk(node):
        if isinstance(each, ast.ImportFrom):
            source = absolute_module(module, is_package, each.level, each.module or "")
            refs += [Ref(source, (a.name, *parts[1:])) for a in each.names if (a.asname or a.name) == parts[0]]
        elif isinstance(each, ast.Import):
            refs += [Ref(a.name, parts[1:]) for a in each.names if a.asname == parts[0]]
    return list(dict.fromkeys(refs))


def _change(
    hierarchy: Hierarchy, pair: OverridePair, baseline: Baseline | None, missing: list[str]
) -> tuple[str, set[str], bool]:
    """ " (out, output_scale new since 0.22.0)" and those names, when the base gained them since the
    baseline: since the same provider method there, else the one the override overrode there
    (the method moved up to a new base class since); and whether none is new (the base had them
    all there)."""
    if baseline is None:
        return "", set(), False
    then = overridden_at_baseline(hierarchy, pair, baseline)
    if then is None:
        return f" ({pair.base_symbol} is new {baseline.since})", set(missing), False
    change = describe_change(then, pair.base_signature)
    new = [m for m in missing if m in change.added]
    if not new:
        return f" (unchanged {baseline.since})", set(), True
    return f" ({', '.join(new)} new {baseline.since})", set(new), False
