"""missing-member: a member the consumer reaches through a receiver is gone since the baseline.

`self.input_batch` in a subclass of a provider runner, `super().get_kv_cache_spec()`,
`config.compute_hash()` on a parameter annotated with a provider config class,
`self.vllm_config.compute_hash()` through an attribute the provider's class annotates: the
name is looked up where Python would look it up, through the class's method resolution order
(the consumer's classes and the provider's; for a chain, the class each attribute on the way
is annotated with). It is an error only when a careful reader would confirm it:

- the member was there at the baseline (through the same receiver), and is defined nowhere
  in that order at the pin: not as a method, a class attribute, or an attribute a method of
  those classes sets on the instance (`_lookup`);
- every class of the order is known: no base from outside the provider (it may serve the
  name) or written as an expression, no `__getattr__`/`__getattribute__`, no class decorator
  that may add members;
- nothing else may put it there: no consumer class deriving from the receiver's has it, the
  consumer sets no attribute of that name from outside a class, patches none; and the provider
  at the pin writes the name in no string (`setattr(x, "name", ...)`), assigns it on no other
  object, passes it as no keyword where a class of the order sets attributes by computed
  names, and for an annotated receiver (whose object may be a subclass) defines it in no
  subclass (`_set_elsewhere`).

A use under a `hasattr(X, "name")` test is judged with it (dead where X lacks the name). One
inside a try that catches AttributeError, or in a function that names the member in a string,
is a warning; so is an override's `super().m()` when `m` itself is gone and nobody calls it.
Without a baseline nothing is said: what the consumer expects is not known. Dunder names are
left out (the interpreter serves them).

An assignment through such a receiver (`x.name = ...`) of a member gone since the baseline raises
nothing: the object takes the value as its own attribute, and the provider no longer sees it
(`_lost_store`: an error for a property whose setter the assignment ran, a warning for a plain
attribute the provider read at the baseline and names nowhere now).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from atompin.analysis.arity import call_problem, checkable
from atompin.analysis.baseline import Baseline
from atompin.analysis.conditions import LIVE, Judgement, Reach
from atompin.analysis.hierarchy import PLAIN_BASES, ConsumerRef, Definition, Hierarchy, Node
from atompin.analysis.moduleinfo import Member
from atompin.analysis.name_sites import NameSearch, NameSite, SiteKind
from atompin.analysis.outside import PROTOCOL_BASES, STRUCT_BASES
from atompin.analysis.provider import ClassRef
from atompin.analysis.reach import is_test_module
from atompin.analysis.usage import (
    ELEMENT,
    Condition,
    ConditionKind,
    ConsumerUsage,
    MemberUse,
    MethodCall,
    MethodRef,
    OutsideStore,
    Receiver,
    Ref,
)
from atompin.model import Finding, Rule, Severity, Site

# Outside bases whose members are known (none served at run time beyond these). Not `nn.Module`:
# it serves the parameters its instance registers by name (`register_buffer("x", ...)`), which
# this rule does not follow.
_KNOWN_OUTSIDE = STRUCT_BASES


# A class defining one of these may serve any name.
_SERVES_ANY = frozenset({"__getattr__", "__getattribute__"})

# Class decorators known to add no member a lookup would miss (a dataclass's fields are in its body).
_PLAIN_DECORATORS = frozenset({"dataclass", "config", "total_ordering", "final", "runtime_checkable", "unique"})

# Provider files whose modules are indexed to look for subclasses defining a name, at most.
_MAX_INDEXED = 30


@dataclass(frozen=True)
class _Gone:
    """A member found at the baseline and nowhere at the pin."""

    holder: ClassRef  # where the baseline had it
    kind: str  # the baseline member's kind ("def", "value", "instance")
    receiver: ClassRef | str  # the annotated class, or the consumer class of self/cls/super()
    # Members of the pin's provider classes in the lookup, new since the baseline, whose names are
    # close to the gone one's: what may have replaced it (`_get_hf_mm_data`: `_get_hf_mm_inputs`).
    near: tuple[str, ...] = ()
    # A provider class of the lookup sets attributes by computed names (`ClassInfo.sets_computed`).
    computed: bool = False


def check_members(
    usage: ConsumerUsage,
    hierarchy: Hierarchy,
    search: NameSearch,
    baseline: Baseline | None,
    judge: Callable[[Sequence[Condition]], Judgement] | None = None,
    reads: Callable[[list[str], AbstractSet[str]], set[str]] = lambda words, classes: set(words),
) -> list[Finding]:
    """`missing-member` findings for the members the consumer reads through receivers. `reads`
    says which of some names the consumer reads itself (`x.name`, `"name"`)."""
    if baseline is None or not usage.contact.member_uses:
        return []
    before = hierarchy.at(baseline.index)
    outside = hierarchy.member_stores | hierarchy.patched_names
    # A test module's reads run beside its own stubs' stores too (`Hierarchy.member_stores` leaves
    # those out: the package's code never runs beside them).
    in_tests = frozenset(usage.contact.member_stores) | hierarchy.patched_names
    stores = _by_name(usage.contact.outside_stores)
    gone: dict[MethodRef, _Gone | None] = {}
    found: list[tuple[MemberUse, _Gone]] = []
    for use in usage.contact.member_uses:
        ref = use.method
        mine = in_tests if is_test_module(usage.module_of(use.site.path)) else outside
        if not _judged(use, mine, hierarchy.patched_names, stores.get(ref.name, [])):
            continue
        if ref not in gone:
            gone[ref] = _gone(hierarchy, before, ref)
        g = gone[ref] if gone[ref] is not None else _gone_where_mixed_in(hierarchy, before, use)
        if g is not None:
            found.append((use, g))
    if not found:
        return []
    # Only for the few candidates: is the name put there by provider code the orders do not show?
    names = sorted({use.method.name for use, _ in found})
    receivers = {g.receiver for _, g in found if isinstance(g.receiver, ClassRef)}
    keywords = {use.method.name for use, g in found if g.computed}
    elsewhere = _set_elsewhere(hierarchy, names, receivers, keywords)
    grouped: dict[tuple[str, Severity, str], list[Site]] = {}
    # What the consumer passes by keyword to provider callables (`super().__init__(name=...)`): a
    # class of the lookup setting attributes by computed names may set those.
    shapes = [call.shape for call in usage.calls] + [call.shape for call in usage.contact.method_calls]
    passed = {k for shape in shapes for k in shape.keywords}
    kept = [
        (use, g)
        for use, g in found
        if not ((use.method.name, None) in elsewhere or (use.method.name, g.receiver) in elsewhere)
        and not (g.computed and use.method.name in passed)
    ]
    # Flags gone too: `if self.flag:` reads a member gone since the baseline (its own finding), which
    # nothing sets any more; what runs only under it never does (vllm-omni 0.30's runners read
    # `self.routed_experts_capturer` under `if self.routed_experts_initialized:`, both gone in 0.31).
    gone_flags = {
        (use.method.owner, use.method.name)
        for use, _ in kept
        if use.method.receiver is Receiver.SELF and not use.method.via and not use.defaulted and not use.stored
    }
    for use, g in kept:
        name = use.method.name
        judgement = judge(use.when) if judge is not None and use.when else LIVE
        if judgement.reach is Reach.DEAD:
            continue
        if use.defaulted:
            # Nothing raises: where the consumer asks for the member, it now always gets the default.
            severity, message = judgement.adjust(Severity.WARNING, _message(use.method, g, baseline, defaulted=True))
            grouped.setdefault((f"{g.holder}.{name}", severity, message), []).append(use.site)
            continue
        if use.stored:
            if (lost := _lost_store(use, g, hierarchy, baseline, search, reads)) is not None:
                severity, message = judgement.adjust(*lost)
                grouped.setdefault((f"{g.holder}.{name}", severity, message), []).append(use.site)
            continue
        excuse = _excuse(use, g, usage, hierarchy, before, baseline, search, reads) or _under_gone_flag(use, gone_flags)
        severity = Severity.WARNING if excuse else Severity.ERROR
        message = _message(use.method, g, baseline) + (excuse or _ladder_fails(use, hierarchy))
        severity, message = judgement.adjust(severity, message)
        grouped.setdefault((f"{g.holder}.{name}", severity, message), []).append(use.site)
    return [
        Finding(Rule.MISSING_MEMBER, severity, symbol, tuple(sorted(set(sites))), message)
        for (symbol, severity, message), sites in grouped.items()
    ]


def _ladder_fails(use: MemberUse, hierarchy: Hierarchy) -> str:
    """ " (it tests for it with `hasattr`, and for ... in the same chain: ...)" when the use sits in
    a chain of `hasattr` tests whose last `else` raises (`MemberUse.alternatives`) and no class of
    its lookup has any of the other names either: the chain raises all the same ("" otherwise)."""
    if not use.guarded or use.alternatives is None:
        return ""
    found = _lookup_order(hierarchy, use.method)
    if found is None or not all(_absent(hierarchy, found[0], name) for name in use.alternatives):
        return ""
    others = ", ".join(use.alternatives)
    tested = f", and for {others} in the same chain," if others else ""
    return (
        f" (it tests for it with `hasattr`{tested} and none of them is there at the pin: the chain's last "
        "`else` raises)"
    )


def _under_gone_flag(use: MemberUse, gone_flags: AbstractSet[tuple[str, str]]) -> str:
    """ " (it runs only under `if self.flag:`, ...)" when the use sits under a flag of its class that
    is gone too ("" otherwise)."""
    for condition in use.when:
        if condition.kind is ConditionKind.FLAG and (condition.owner, condition.attr) in gone_flags:
            return (
                f" (it runs only under `if {condition.text}:`, and {condition.attr} is gone too: that read fails "
                "first, and nothing sets it at this provider)"
            )
    return ""


def _judged(use: MemberUse, outside: frozenset[str], patched: AbstractSet[str], stores: list[OutsideStore]) -> bool:
    """Is this use judged? Not for a special name, nor through an attribute the consumer sets from
    outside its class or patches (`outside`: its object is not known). A read of such a name may
    read what the consumer set itself, unless every place that sets it (`stores`) comes after the
    read in the same function (`_set_only_after`); a store is one of those sets, and is judged
    unless the name is patched."""
    ref = use.method
    if ref.name.startswith("__") or outside.intersection(ref.via):
        return False
    if use.stored:
        return ref.name not in patched
    return ref.name not in outside or (ref.name not in patched and _set_only_after(use, stores))


def _by_name(stores: list[OutsideStore]) -> dict[str, list[OutsideStore]]:
    out: dict[str, list[OutsideStore]] = {}
    for store in stores:
        out.setdefault(store.name, []).append(store)
    return out


def _set_only_after(use: MemberUse, stores: list[OutsideStore]) -> bool:
    """Does the consumer set the name only later in the function that reads it? Then the read
    runs first and finds only what the provider put there (vllm-rbln 0.11's replacement of
    `AutoWeightsLoader._load_module` reads `self.skip_prefixes`, then sets it and puts it back,
    and vLLM 0.30 has no such attribute)."""
    return bool(stores) and all(
        s.site.path == use.site.path and s.function == use.function and s.site.line > use.site.line for s in stores
    )


def _lost_store(
    use: MemberUse,
    g: _Gone,
    hierarchy: Hierarchy,
    baseline: Baseline,
    search: NameSearch,
    reads: Callable[[list[str], AbstractSet[str]], set[str]],
) -> tuple[Severity, str] | None:
    """`x.name = ...` of a member gone since the baseline: nothing raises, the object takes the
    value as an attribute of its own, and the provider no longer sees it (None when nothing is
    lost).

    - A property at the baseline: the assignment ran its setter (vllm-mblt's platform sets
      `scheduler_config.chunked_prefill_enabled`, whose setter set `enable_chunked_prefill` until
      vLLM 0.12). An error, unless a provider file still names it (then a warning).
    - A plain attribute: lost only where the provider read it at the baseline, outside methods
      the consumer replaces, and the consumer does not read it itself (then it is its own state).
      A warning: whether what it controlled is gone with it or moved, only a reader can tell.
    """
    name = use.method.name
    sets = _message(use.method, g, baseline, stored=True)
    elsewhere = not search.unused([name])
    if _was_property(g, baseline, name):
        if elsewhere:
            return Severity.WARNING, (
                f"{sets}; the assignment ran its setter there, and now adds an attribute of the consumer's own, "
                "which the provider reads only if it still reads that name on this object (it names it elsewhere)"
            )
        return Severity.ERROR, (
            f"{sets}; the assignment ran its setter there, and now only adds an attribute of the consumer's own "
            "that nothing of the provider names: the setting is silently lost"
        )
    if elsewhere or reads([name], frozenset()):
        return None
    read = [site for site in baseline.reads(name) if not _taken_over(hierarchy, baseline, site)]
    if not read:
        return None  # nothing of the provider read it at the baseline either: nothing is lost
    return Severity.WARNING, (
        f"{sets}; the provider read it at the baseline ({read[0].where}) and names it nowhere now: the "
        "assignment only adds an attribute of the consumer's own, and what it controlled is gone or moved"
    )


def _was_property(g: _Gone, baseline: Baseline, name: str) -> bool:
    member = baseline.method(g.holder, name) if g.kind == "def" else None
    return member is not None and member.signature is not None and member.signature.is_property


def _taken_over(hierarchy: Hierarchy, baseline: Baseline, site: NameSite) -> bool:
    """Is `site` in a provider method the consumer replaces (its patch's reads are its own)?"""
    module, _ = baseline.index.tree.module_name(site.path)
    return bool(site.cls) and f"{module}:{site.cls}.{site.function}" in hierarchy.patched


def _failed_at_baseline(use: MemberUse, g: _Gone, baseline: Baseline, calls: Sequence[MethodCall]) -> str:
    """Why the consumer's call of a gone method at `use`'s site did not fit the baseline's signature
    either ("" when it did, or it is no call): vllm-mindspore calls `_compute_cascade_attn_prefix_len`
    with four arguments, where vLLM 0.23 took five and 0.33 has no such method."""
    if g.kind != "def":
        return ""
    member = baseline.method(g.holder, use.method.name)
    sig = member.signature if member is not None else None
    if sig is None or not checkable(sig):
        return ""
    for call in calls:
        if call.site == use.site and call.method.name == use.method.name:
            problem = call_problem(sig, call.shape, call.binds(sig))
            if problem is not None:
                return problem
    return ""


def _in_dropped_hook(
    use: MemberUse,
    hierarchy: Hierarchy,
    before: Hierarchy,
    search: NameSearch,
    reads: Callable[[list[str], AbstractSet[str]], set[str]],
) -> str:
    """The provider method (at the baseline) that the consumer method reading `use` overrides, when
    no provider class of its order has it at the pin and nothing calls it: neither provider code
    (by name) nor the consumer (`x.m` outside `m`, `"m"`). An override's own `super().m()` of a
    dropped `get_dummy_processor_inputs`; vLLM 0.29 dropped the multimodal processor's
    `_call_hf_processor` hooks, and vllm-omni's overrides of them call what went with them. ""
    otherwise."""
    owner, (cls, _, name) = use.method.owner, use.function.rpartition(".")
    if not owner or not cls or "." in cls or not owner.endswith("." + cls) or name.startswith("__"):
        return ""  # not a method of the class whose `self` the use reads through
    if owner not in hierarchy.classes or any(isinstance(d.node, ClassRef) for d in hierarchy.definitions(owner, name)):
        return ""
    was = [d.node for d in before.definitions(owner, name) if isinstance(d.node, ClassRef)]
    if not was or _provider_calls(search, name):
        return ""
    # The consumer's own calls: on an object, or on `self` in a class of the override's line (its
    # subclasses, and the classes they derive from, whose methods may call it on it).
    if reads([name], {c.rpartition(".")[2] for c in hierarchy.line_names({owner})}):
        return ""
    return f"{was[0]}.{name}"


def _excuse(
    use: MemberUse,
    g: _Gone,
    usage: ConsumerUsage,
    hierarchy: Hierarchy,
    before: Hierarchy,
    baseline: Baseline,
    search: NameSearch,
    reads: Callable[[list[str], AbstractSet[str]], set[str]],
) -> str:
    """Why a read of a gone member does not raise where it runs, said after its message (a
    warning); "" when nothing says so (an error)."""
    failed = _failed_at_baseline(use, g, baseline, usage.contact.method_calls)
    if failed:
        return (
            f" (the call there did not fit it at the baseline either: it {failed}; where the consumer "
            "works, so that code does not run)"
        )
    if use.guarded and not _ladder_fails(use, hierarchy):
        return " (the code handles its absence there: a try that catches AttributeError, or a test of the name)"
    if hook := _in_dropped_hook(use, hierarchy, before, search, reads):
        return (
            f" (it is read in `{use.function}`, which overrides {hook}, gone since the baseline: "
            "the provider no longer calls it, nor does the consumer, so this code no longer runs)"
        )
    if installed := _installed_as_dropped(use, usage, hierarchy, search, reads):
        return (
            f" (it is read in `{use.function}`, installed as {installed}, a name the provider no longer has "
            "nor calls, nor does the consumer: this code no longer runs)"
        )
    return ""


def _installed_as_dropped(
    use: MemberUse,
    usage: ConsumerUsage,
    hierarchy: Hierarchy,
    search: NameSearch,
    reads: Callable[[list[str], AbstractSet[str]], set[str]],
) -> str:
    """The provider attribute the consumer function reading `use` is installed as, when the
    provider has no such attribute at the pin and nothing calls it by that name: neither provider
    code nor the consumer (vllm-ascend 0.18 installs `RoutedExpertsCapturer.init_buffer`, which
    vLLM 0.22 dropped: the function's reads of `self._device_buffer` never run). "" otherwise."""
    module = usage.module_of(use.site.path)
    for each in usage.contact.replacements:
        if each.function != f"{module}.{use.function}" or each.attr.startswith("__"):
            continue
        owner = hierarchy.resolve(each.owner)
        if owner is None or owner.target is None or hierarchy.index.getattr(owner.target, each.attr).found:
            continue
        used = [site for site in search.find([each.attr]).get(each.attr, []) if site.kind is not SiteKind.DEF]
        if used or reads([each.attr], set()):  # on `self` too: the provider's own `self.init_buffer()`
            continue
        return f"{owner.target.symbol}.{each.attr}"
    return ""


def _provider_calls(search: NameSearch, name: str) -> bool:
    """Does provider code call or read `name` anywhere but in a method of that name (a provider
    class's own dead override of it, handing on with `super().name(...)`), a definition aside?"""
    return any(
        site.kind is not SiteKind.DEF and site.function != name for site in search.find_text([name]).get(name, [])
    )


def _message(ref: MethodRef, g: _Gone, baseline: Baseline, stored: bool = False, defaulted: bool = False) -> str:
    """What is gone, and where it was at the baseline; `stored`: said of an assignment, `defaulted`:
    of `getattr(x, "name", default)`."""
    what = {"def": "a method", "value": "a class attribute", "instance": "an instance attribute"}.get(
        g.kind, "a member"
    )
    if _was_property(g, baseline, ref.name):
        what = "a property"
    if ref.via:
        start = (
            "x"
            if ref.other
            else {Receiver.INSTANCE: "x", Receiver.SUPER: "super()"}.get(ref.receiver, ref.receiver.value)
        )
        where = f" in {ref.owner}" if ref.owner else ""
        chain = ".".join(ref.via).replace(f".{ELEMENT}", "[…]")
        through = f"{start}.{chain}{where} (an instance of {g.receiver}, as the provider annotates it)"
    elif ref.receiver is Receiver.INSTANCE:
        through = f"an instance of {g.receiver} (as annotated, or the `self` of a function installed on it)"
    elif ref.other:
        through = f"an instance of {g.receiver} the consumer made or typed as one"
    else:
        through = f"{ref.receiver.value if ref.receiver is not Receiver.SUPER else 'super()'} in {g.receiver}"
    near = f"; new there since: {', '.join(f'`{n}`' for n in g.near)}" if g.near else ""
    verb, raises = ("set", "") if stored else ("read", " (AttributeError when this runs)")
    if defaulted:
        verb, raises = "read with getattr(..., default)", ": getattr here now always gives the default, silently"
    return (
        f"`{ref.name}`, {verb} through {through}, is gone: at the baseline ({baseline.label}) it was {what} of "
        f"{g.holder}; at the pin no class of the lookup defines or sets it{raises}{near}"
    )


def _gone(now: Hierarchy, before: Hierarchy, ref: MethodRef) -> _Gone | None:
    """The baseline's definition of a member the pin lacks through this receiver (None: it is
    there, was not, or may be served by something unknown)."""
    found, was = _lookup_order(now, ref), _lookup_order(before, ref)
    if found is None or was is None:
        return None
    order, receiver = found
    if not any(isinstance(node, ClassRef) for node in order) or not _absent(now, order, ref.name):
        return None
    if isinstance(receiver, ClassRef):  # an annotated object: it may be a consumer subclass's
        if any(_defines(now, c.name, ref.name) for c in now.derived_from(receiver)):
            return None
    elif ref.receiver is not Receiver.SUPER and _defined_below(now, ref.owner, ref.name):
        return None
    holder = _holder(before, was[0], ref.name)
    if holder is None:
        return None
    new = _provider_names(now, order) - _provider_names(before, was[0])
    near = tuple(difflib.get_close_matches(ref.name, sorted(new), n=2, cutoff=0.6))
    infos = [now.provider(node) for node in order if isinstance(node, ClassRef)]
    computed = any(info is not None and info.sets_computed for info in infos)
    return _Gone(holder[0], holder[1], receiver, near, computed)


def _gone_where_mixed_in(now: Hierarchy, before: Hierarchy, use: MemberUse) -> _Gone | None:
    """A read through `self` in a consumer class with no provider class in its order (a mixin),
    judged in each consumer class that mixes it in with provider classes (vllm-omni's
    `class OmniARScheduler(OmniSchedulerMixin, Scheduler)`), where the mixin's method is the one
    that runs (no class before the mixin in that order defines it)."""
    ref = use.method
    owner = now.classes.get(ref.owner)
    if ref.receiver is not Receiver.SELF or ref.via or ref.other or owner is None:
        return None
    if any(isinstance(node, ClassRef) for node in now.mro(ref.owner)):
        return None
    method = use.function.split(".")[1] if use.function.count(".") >= 1 else ""
    for mixer in _mixed_into(now, ref.owner):
        order = now.mro(mixer)
        before_mixin = order[: order.index(ConsumerRef(ref.owner))]
        if method and any(isinstance(n, ConsumerRef) and _defines(now, n.name, method) for n in before_mixin):
            continue
        g = _gone(now, before, MethodRef(ref.receiver, ref.name, mixer))
        if g is not None:
            return g
    return None


def _mixed_into(h: Hierarchy, owner: str) -> list[str]:
    """The consumer classes whose order holds consumer class `owner` and a provider class (asked
    for each read through `self` in a mixin: found once per mixin)."""
    memo: dict[str, list[str]] = h.memo.setdefault("mixed_into", {})
    if owner not in memo:
        memo[owner] = [
            name
            for name in h.classes
            if name != owner
            and ConsumerRef(owner) in (order := h.mro(name))
            and any(isinstance(node, ClassRef) for node in order)
        ]
    return memo[owner]


def _provider_names(h: Hierarchy, order: Sequence[Node]) -> set[str]:
    """Every member name of the provider classes of an order."""
    infos = (h.provider(node) for node in order if isinstance(node, ClassRef))
    return {name for info in infos if info is not None for name in info.members}


def _lookup_order(h: Hierarchy, ref: MethodRef) -> tuple[Sequence[Node], ClassRef | str] | None:
    """The classes a lookup of `ref.name` passes, in order, and the receiver's class (a provider
    class, or the consumer class of self/cls/super()). Through a chain (`self.vllm_config.x`),
    each attribute on the way is typed as its provider class annotates it. None when unknown."""
    receiver: ClassRef | str
    order: Sequence[Node]
    if ref.receiver is Receiver.INSTANCE:
        cls = h.instance_class(ref.choices)  # or what a provider function annotated to return one makes
        if cls is None:
            return None
        order, receiver = h.index.mro(cls), cls
    else:
        if ref.owner not in h.classes:
            return None
        if ref.via and ref.receiver is not Receiver.SUPER and _defined_below(h, ref.owner, ref.via[0]):
            return None  # a consumer subclass keeps something of its own there
        order, receiver = h.mro(ref.owner)[1 if ref.receiver is Receiver.SUPER else 0 :], ref.owner
    steps = list(ref.via)
    for i, step in enumerate(steps):
        if step == ELEMENT:
            continue  # (taken with the attribute before it)
        if i + 1 < len(steps) and steps[i + 1] == ELEMENT:
            step_class = _element(h, order, step)  # `for m in self.managers`: an element of it
        else:
            step_class = _annotated(h, order, step)
        if step_class is None:
            return None
        order, receiver = h.index.mro(step_class), step_class
    if isinstance(receiver, ClassRef) and PROTOCOL_BASES.intersection(n for n in order if isinstance(n, str)):
        return None  # any class with the right members is one: not only its subclasses
    return order, receiver


def chain_receiver(h: Hierarchy, ref: MethodRef) -> MethodRef | None:
    """A method reached through attributes of a receiver (`self.kv_cache_manager.get_computed_blocks`,
    in a consumer subclass of vLLM's `Scheduler`) as the same method of an instance of the provider
    class the last attribute holds, as the provider's classes say (`_lookup_order`); None when
    that is not known. A ref without attributes on the way is itself."""
    if not ref.via:
        return ref
    found = _lookup_order(h, ref)
    if found is None or not isinstance(found[1], ClassRef):
        return None
    cls = found[1]
    return MethodRef(Receiver.INSTANCE, ref.name, choices=(Ref(cls.module, tuple(cls.qualname.split("."))),))


def _annotated(h: Hierarchy, order: Sequence[Node], name: str) -> ClassRef | None:
    """The provider class that the first class of the order having attribute `name` annotates it
    with (None: unknown, or no annotation names a class)."""
    found = _lookup(h, order, name)
    return h.annotated_class(*found) if isinstance(found, tuple) else None


def _element(h: Hierarchy, order: Sequence[Node], name: str) -> ClassRef | None:
    """The provider class every element of what attribute `name` holds is, as the first class of
    the order having it says (`Hierarchy.element_class`; None: unknown)."""
    found = _lookup(h, order, name)
    return h.element_class(found[0], name) if isinstance(found, tuple) else None


def _absent(h: Hierarchy, order: Sequence[Node], name: str) -> bool:
    """Is `name` surely defined by no class of this order (all of them known)?"""
    return _lookup(h, order, name) is None


def _holder(h: Hierarchy, order: Sequence[Node], name: str) -> tuple[ClassRef, str] | None:
    """The provider class of the order (at the baseline) that has `name`, with its kind."""
    found = _lookup(h, order, name)
    return (found[0], found[1].kind.value) if isinstance(found, tuple) else None


_UNKNOWN = "unknown"


def _lookup(h: Hierarchy, order: Sequence[Node], name: str) -> tuple[ClassRef, Member] | str | None:
    """What a lookup of `name` along the order meets first: a provider class's member; None when
    no class has it; `_UNKNOWN` when something that may serve it comes first (the consumer's own
    class defining or setting it, an unknown class, an outside base, a `__getattr__`, a patch)."""
    for node in order:
        if isinstance(node, ConsumerRef):
            cls = h.consumer(node)
            # A base written as an expression (`with_ratio(2)`, `A if c else B`) is not in the order.
            if cls is None or _defines(h, node.name, name) or any(not b.text for b in cls.bases):
                return _UNKNOWN
        elif isinstance(node, ClassRef):
            info = h.provider(node)
            if info is None or info.has_getattr or info.opaque or f"{node}.{name}" in h.patched:
                return _UNKNOWN
            if _SERVES_ANY.intersection(info.members) or any(
                d.rpartition(".")[2] not in _PLAIN_DECORATORS for d in info.decorators
            ):
                return _UNKNOWN  # a decorator may add members, or bases (`support_torch_compile`)
            if name in info.members:
                return node, info.members[name]
        elif node not in PLAIN_BASES and (node not in _KNOWN_OUTSIDE or name in _KNOWN_OUTSIDE[node]):
            return _UNKNOWN
    return None


def _defines(h: Hierarchy, cls_name: str, name: str) -> bool:
    """Does consumer class `cls_name` define `name`, set it on its instances, or serve any name?"""
    cls = h.classes.get(cls_name)
    if cls is None:
        return False
    # `bound` holds its methods and class attributes (under an `if` or `try` too).
    return name in cls.bound or name in cls.assigned or "*" in cls.assigned or bool(_SERVES_ANY.intersection(cls.bound))


def _defined_below(h: Hierarchy, owner: str, name: str) -> bool:
    """Can a consumer class deriving from `owner` have `name` (`self` may be one of them): does
    a class of its own order (another base mixed in too) define or set it, or may it?"""
    memo: dict[tuple[str, str], bool] = h.memo.setdefault("defined_below", {})
    if (owner, name) not in memo:
        below: dict[str, list[str]] = h.memo.setdefault("classes_below", {})
        if owner not in below:  # asked for each read through `self` of the class: found once
            below[owner] = [other for other in h.classes if other != owner and ConsumerRef(owner) in h.mro(other)]
        memo[owner, name] = any(_lookup(h, h.mro(other), name) is not None for other in below[owner])
    return memo[owner, name]


# What surely reads a name written as a string: `hasattr(x, "n")`, `getattr(x, "n", d)` before
# it; `"n" in x.__dict__` after it. A string anywhere else may set it (`if name == "n":
# setattr(obj, name, f)` does).
_READ_BEFORE = re.compile(rb"\b(?:has|get)attr\(\s*[\w.\[\]]+\s*,\s*$")
_READ_AFTER = re.compile(rb"\s*(?:not\s+)?in\b")


def kept_false(h: Hierarchy, owner: str, attr: str) -> bool:
    """Is `attr` false on every instance of consumer class `owner`? The classes that set it set it
    only to a false constant, and nothing else may set it: no store from outside a class or
    patch of the consumer, no provider code on another object or by a string. Either the
    provider classes of its order define it (in the class body, or on the instance: vLLM 0.32's
    deprecated `self.cascade_attn_enabled = False`; `_kept_by_provider`), or no class defines it
    and consumer classes set it on their instances (`_kept_by_consumer`)."""
    if owner not in h.classes or attr in h.member_stores or attr in h.patched_names:
        return False
    defined = h.definitions(owner, attr)
    kept = _kept_by_provider(h, owner, attr, defined) if defined else _kept_by_consumer(h, owner, attr)
    return kept and (attr, None) not in _set_elsewhere(h, [attr], set(), set())


def _kept_by_provider(h: Hierarchy, owner: str, attr: str, defined: list[Definition]) -> bool:
    """Every class of `owner`'s order defining `attr` is a provider class setting it only to a
    false constant; no computed-name setter or outside base is in the order; no consumer class
    sets it, and no constructor takes it as a field (`Runner(cascade=True)`)."""
    if any(not isinstance(d.node, ClassRef) or d.member is None or d.member.truth is not False for d in defined):
        return False
    if _open_order(h, h.mro(owner)):
        return False
    providers = [d.node for d in defined if isinstance(d.node, ClassRef)]
    return not any(h.sets_attribute(node, attr) or h.takes_as_field(node) for node in providers)


def _kept_by_consumer(h: Hierarchy, owner: str, attr: str) -> bool:
    """Every consumer class whose instances may be `owner`'s (those of its order, and those deriving
    from it) that sets `attr` on its instances sets it only to a false constant, at least one does,
    and no provider class, computed-name setter or outside base is in their orders. vllm-rbln's copy
    of vLLM's `Fp8MoEMethod` sets `self.rocm_aiter_moe_enabled = False` and nothing else: `if
    self.rocm_aiter_moe_enabled:` never runs."""
    kin = [c.name for c in h.classes.values() if c.name == owner or ConsumerRef(owner) in h.mro(c.name)]
    setters = 0
    for name in dict.fromkeys([*(n.name for n in h.mro(owner) if isinstance(n, ConsumerRef)), *kin]):
        order = h.mro(name)
        if _open_order(h, order, attr):
            return False
        cls = h.classes.get(name)
        if cls is None or "*" in cls.assigned:
            return False
        if attr in cls.assigned:
            if attr not in cls.false_only:
                return False
            setters += 1
    return setters > 0


def _open_order(h: Hierarchy, order: list[Node], attr: str = "") -> bool:
    """Can a class of this order set attributes beyond what is read of it: a base from outside both
    packages, a provider class setting attributes by computed names, or (given `attr`) one that
    defines `attr`?"""
    if any(isinstance(node, str) and node not in PLAIN_BASES for node in order):
        return True
    return any(
        (info := h.provider(node)) is not None and (info.sets_computed or (attr and attr in info.members))
        for node in order
    )


def _may_store(text: bytes, match: re.Match[bytes]) -> bool:
    """Can this occurrence of a name put it on an object: an attribute store (`x.n = ...`), or
    the name written as a string, unless the string is one that surely only reads it?"""
    if match.group(0)[:1] not in (b'"', b"'"):
        return True
    line_start = text.rfind(b"\n", 0, match.start()) + 1
    if _READ_BEFORE.search(text, line_start, match.start()):
        return False
    return not _READ_AFTER.match(text, match.end())


def subclass_may_hold(h: Hierarchy, cls: ClassRef, names: list[str]) -> bool:
    """May an object typed with provider class `cls` hold each of `names`: a consumer class deriving
    from it defines or sets the name (`_defines`), a provider subclass does, or the
    provider may put it on any object (`_set_elsewhere`)?"""
    derived = h.derived_from(cls)
    names = [n for n in names if not any(_defines(h, c.name, n) for c in derived)]
    if not names:
        return True
    found = _set_elsewhere(h, names, {cls}, set())
    return all((name, None) in found or (name, cls) in found for name in names)


def _set_elsewhere(
    h: Hierarchy, names: list[str], receivers: set[ClassRef], keywords: set[str]
) -> set[tuple[str, ClassRef | None]]:
    """(name, None) for each name the provider at the pin may put on any object beyond the class
    orders (written in a string, assigned on an object other than `self`, `cls.name = ...` by a
    class decorator too); (name, C) for each name
    a provider subclass of annotated class C defines or sets. One pass over the files holding them;
    a name that more than `_MAX_INDEXED` files may define is taken as set (their modules would
    all be parsed). Names in `keywords` (a class of their lookup sets attributes by computed
    names) are taken as set where the provider passes them as keywords (`Config(name=...)`)."""
    tree, package = h.index.tree, h.index.package
    words = [name.encode() for name in names]
    quoted = {word: re.escape(word) for word in words}
    elsewhere = {
        word: re.compile(rb"[\"']" + q + rb"[\"']|(?<!\bself)\." + q + rb"\s*(?::[^=\n]*)?=(?!=)")
        for word, q in quoted.items()
    }
    defining = {word: re.compile(rb"(?m)(?:\bdef\s+|^\s+|\bself\.)" + q + rb"\s*[:=(]") for word, q in quoted.items()}
    self_store = {word: re.compile(rb"\bself\." + q + rb"\s*(?::[^=\n]*)?=(?!=)") for word, q in quoted.items()}
    out: set[tuple[str, ClassRef | None]] = set()
    to_index: dict[str, list[tuple[str, bool]]] = {}  # name -> (path, does it store `self.name`)
    registering = [(r, re.compile(rb"\b" + re.escape(r.qualname.encode()) + rb"\.register\(")) for r in receivers]
    words += [r.qualname.rpartition(".")[2].encode() for r in receivers]  # files registering one are read too
    for path, text in tree.read_many(tree.files_containing(tree.python_files(package), words)):
        for receiver, pattern in registering:
            if pattern.search(text):  # `Config.register(Impl)`: an object of another class is one
                out.update((name, receiver) for name in names)
        for name, word in zip(names, words):
            if word not in text or (name, None) in out:
                continue
            if any(_may_store(text, m) for m in elsewhere[word].finditer(text)) or (
                name in keywords and re.search(rb"[(,]\s*" + quoted[word] + rb"\s*=(?!=)", text)
            ):
                out.add((name, None))
            elif (stores := bool(self_store[word].search(text))) or (receivers and defining[word].search(text)):
                to_index.setdefault(name, []).append((path, stores))
    for name, paths in to_index.items():
        if (name, None) in out:
            continue
        if len(paths) > _MAX_INDEXED:
            out.add((name, None))
            continue
        for path, stores in paths:
            module = tree.module_name(path)[0]
            info = h.index.module(module)
            holders = [q for q, c in info.classes.items() if name in c.members] if info is not None else []
            if stores and not holders:
                out.add((name, None))  # `self.name = ...` outside any class (a helper handed the instance)
            for qualname in holders:
                mro = h.index.mro(ClassRef(module, qualname))
                out.update((name, r) for r in receivers if r in mro[1:])
    return out
