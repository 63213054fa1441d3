"""arity-drift for calls the direct-call check cannot see: provider methods called through
a receiver. `super().m(...)` and `self.m(...)` in a consumer subclass (the method
inherited, not overridden), and `x.m(...)` where `x` is a parameter or attribute
annotated with (or assigned) a provider class. Each is judged like a direct call:
does what it passes still bind to the provider method's signature?
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from atompin.analysis.arity import call_problem, checkable, describe_change, render_shift, shifted_arguments
from atompin.analysis.baseline import Baseline
from atompin.analysis.conditions import LIVE, Judgement, Reach
from atompin.analysis.hierarchy import Hierarchy
from atompin.analysis.inits import init_run
from atompin.analysis.members import chain_receiver
from atompin.analysis.provider import ClassRef
from atompin.analysis.signature import Signature
from atompin.analysis.usage import Condition, ContactSurface, MethodCall, Receiver
from atompin.model import Finding, Rule, Severity


def _render_call(call: MethodCall, runs: str) -> str:
    if call.method.receiver is Receiver.CLASS:
        return f"{call.method.owner.rpartition('.')[2]}{call.shape.render()}"
    receiver = {
        Receiver.SELF: "x" if call.method.other else "self",
        Receiver.CLS: "cls",
        Receiver.SUPER: "super()",
        Receiver.INSTANCE: "x",
    }[call.method.receiver]
    if call.method.name == "__call__" and call.method.receiver is Receiver.INSTANCE:
        ran = " (torch's `nn.Module.__call__` runs `forward`)" if runs == "forward" else ""
        return f"{receiver}{call.shape.render()}{ran}"
    return f"{'.'.join((receiver, *call.method.via, call.method.name))}{call.shape.render()}"


def check_method_calls(
    hierarchy: Hierarchy,
    contact: ContactSurface,
    baseline: Baseline | None = None,
    judge: Callable[[Sequence[Condition]], Judgement] | None = None,
    makes: Callable[[str], bool] = lambda name: True,
) -> list[Finding]:
    """`makes` says whether the consumer calls a class of that name (`Name(...)`)."""
    findings: list[Finding] = []
    fitting = _fitting_sides(hierarchy, contact)
    for written in contact.method_calls:
        judgement = judge(written.when) if judge is not None and written.when else LIVE
        if judgement.reach is Reach.DEAD:
            continue  # under a version gate (or a failed import) that cannot hold at this provider
        call = _as_run(hierarchy, written)
        found = _runs(hierarchy, call) if call is not None else None
        if call is None or found is None:
            continue
        owner, sig, runs = found
        if not checkable(sig):
            continue
        if call.method.receiver is Receiver.CLS and not (sig.is_classmethod or sig.is_staticmethod):
            continue  # an instance method reached through the class: the caller passes self
        bound = call.binds(sig)
        problem = call_problem(sig, call.shape, bound)
        shifts = problem is None and call.shape.positional and baseline is not None and baseline.runs(call.when)
        if problem is None and not shifts:
            continue  # fits, and no baseline run to compare where its arguments go: no lookup there
        before = _before(hierarchy, baseline, owner, call)
        if problem is None:
            problem = _shifted_since(before, call, sig, bound)
        if problem is None:
            continue
        symbol = f"{owner}.{call.method.name}"
        severity, change = _at_baseline(baseline, before, call, sig, bound)
        taker = _subclass_taking(hierarchy, call, bound, makes)
        if taker:
            # `engine: EngineClient` given the consumer's own `AsyncOmni(EngineClient)`, whose
            # override takes the call: it fails only on an object of the provider's making.
            severity = Severity.WARNING
            change += f" ({taker} takes it: the call fits when the object is the consumer's)"
        duck = _duck_taking(hierarchy, contact, call, bound) if written.method.via and not taker else ""
        if duck:
            # vllm-ascend's 310P rejection sampler calls `self.sampler.apply_sampling_params(...)`,
            # typed vLLM's `Sampler` by its base's annotation; the consumer hands it its own
            # `Ascend310PSampler`, which derives from nothing and takes the call.
            severity = Severity.WARNING
            change += (
                f" ({duck}, of a class of the consumer's that derives from no provider class, takes it: "
                "the object there may be one of those, as the call was written for)"
            )
        other = _other_side(call)
        if other and (other, call.method) in fitting:
            # `if <probe>: super().m(a, b) else: super().m(a)`: one side fits this provider; the other is
            # the form for another release (a capability flag, an argument older releases do not pass).
            severity = Severity.WARNING
            change += f" (the other branch of the if at {other.rpartition('#')[0]} makes a call that fits: a form for another release)"
        message = (
            f"the call {_render_call(written, call.method.name)} {problem}: {runs}{sig.render()}{change}, "
            f"the call passes {call.shape.render()}"
        )
        severity, message = judgement.adjust(severity, message)
        findings.append(Finding(Rule.ARITY_DRIFT, severity, symbol, (call.site,), message))
    return findings


def _runs(hierarchy: Hierarchy, call: MethodCall) -> tuple[ClassRef, Signature, str] | None:
    """(the provider class whose method the call runs, its signature, how the message names it);
    None when what runs is the consumer's own, an outside base's, or not known."""
    if call.method.receiver is Receiver.CLASS:
        run = init_run(hierarchy, call.method.owner)
        if run is None:
            return None
        if run.dataclass:
            return (
                run.owner,
                run.signature,
                (
                    f"the `__init__` @dataclass writes for {run.dataclass} from the fields of its order "
                    f"({run.owner}'s among them) is __init__"
                ),
            )
        through = "".join(f"{name}.__init__ hands every argument on, and " for name in run.through)
        return run.owner, run.signature, f"{through}the provider has {run.owner}.__init__"
    found = hierarchy.provider_method(call.method)
    if found is None:
        return None
    owner, member = found
    if member.signature is None or (call.method.name == "__init__" and hierarchy.index.generates_init(owner)):
        return None
    return owner, member.signature, f"the provider has {owner}.{call.method.name}"


def _before(hierarchy: Hierarchy, baseline: Baseline | None, owner: ClassRef, call: MethodCall) -> Signature | None:
    """The signature the same call ran at the baseline (None: no baseline, or not there)."""
    if baseline is None:
        return None
    if call.method.receiver is Receiver.CLASS:
        run = init_run(hierarchy.at(baseline.index), call.method.owner)
        return run.signature if run is not None else None
    member = baseline.method(owner, call.method.name)
    return member.signature if member is not None else None


def _shifted_since(before: Signature | None, call: MethodCall, sig: Signature, bound: bool) -> str | None:
    """For a call that fits, in code that ran at the baseline: how its positional arguments fill
    other parameters than at the baseline, where it fit too (`shifted_arguments`); None when they
    fill the same."""
    if before is None or not checkable(before):
        return None
    if call_problem(before, call.shape, bound) is not None:
        return None
    shifted = shifted_arguments(before, sig, call.shape, bound)
    return render_shift(shifted) if shifted else None


def _as_run(hierarchy: Hierarchy, call: MethodCall) -> MethodCall | None:
    """The call with the method it runs: `layer(x)` runs the layer's `forward`; `self.x.m(...)` runs
    `m` of the class x holds (`chain_receiver`). None when that class is not known."""
    method = chain_receiver(hierarchy, call.method)
    if method is None:
        return None
    target = hierarchy.call_target(method)
    return call if target is call.method else replace(call, method=target)


def _at_baseline(
    baseline: Baseline | None, before: Signature | None, call: MethodCall, sig: Signature, bound: bool
) -> tuple[Severity, str]:
    """The severity of a call that does not fit, and what its message says of the baseline
    (`before`: the signature the call ran there): an error, with how the signature changed since;
    a warning when the call did not fit the baseline's signature either (the consumer works
    there: a path not taken), unless a version gate kept it from running there."""
    if baseline is None or before is None:
        return Severity.ERROR, ""
    described = describe_change(before, sig)
    if call_problem(before, call.shape, bound) is None or baseline.kept_from(call.site.path, call.when):
        return Severity.ERROR, "" if described.unchanged else f" ({described.render()} {baseline.since})"
    if described.unchanged:
        return Severity.WARNING, f" (the same {baseline.since}, where the consumer works: probably a path not taken)"
    return Severity.WARNING, (
        f" ({described.render()} {baseline.since}, where the call did not fit either and the consumer works:"
        " probably a path not taken)"
    )


def _subclass_taking(hierarchy: Hierarchy, call: MethodCall, bound: bool, makes: Callable[[str], bool]) -> str:
    """For a call through a receiver annotated with (or assigned) a provider class the consumer never
    makes itself (`makes`): the consumer override that takes the call, when every consumer class
    deriving from that class overrides the method so ("" otherwise)."""
    if call.method.receiver is not Receiver.INSTANCE:
        return ""
    cls = hierarchy.instance_class(call.method.choices)
    if cls is None:
        return ""
    takers: list[str] = []
    for derived in hierarchy.derived_from(cls):
        definitions = hierarchy.definitions(derived.name, call.method.name)
        first = definitions[0] if definitions else None
        owner = hierarchy.consumer(first.node) if first is not None else None
        sig = first.method.signature if first is not None and first.method is not None else None
        if owner is None or sig is None or not checkable(sig) or call_problem(sig, call.shape, bound) is not None:
            return ""  # an object of this class would fail the same way
        takers.append(f"{owner.symbol}.{call.method.name}")
    # A text search of every consumer file: asked last.
    return takers[0] if takers and not makes(cls.qualname.rpartition(".")[2]) else ""


def _duck_taking(hierarchy: Hierarchy, contact: ContactSurface, call: MethodCall, bound: bool) -> str:
    """For a call through an attribute typed only by the provider's annotations (`self.sampler.m(...)`,
    `sampler: Sampler` in a provider base class; the call as it runs): a method of that name in a consumer class deriving
    from no provider class, which takes the call ("" when there is none). The consumer may keep its
    own object there, and wrote the call for it."""
    for cls in contact.classes:
        method = cls.method(call.method.name)
        if method is None or cls.muted or hierarchy.has_provider_base(cls.name):
            continue
        if checkable(method.signature) and call_problem(method.signature, call.shape, bound) is None:
            return f"{cls.symbol}.{call.method.name}"
    return ""


def _other_side(call: MethodCall) -> str:
    """The other side of the plain if/else the call is on ("" when it is on none)."""
    if not call.branch:
        return ""
    where, _, side = call.branch.rpartition("#")
    return f"{where}#{'1' if side == '0' else '0'}"


def _fitting_sides(hierarchy: Hierarchy, contact: ContactSurface) -> set[tuple[str, object]]:
    """(branch, method) for each call on a side of an if/else whose arguments fit the provider's method."""
    out: set[tuple[str, object]] = set()
    for written in contact.method_calls:
        if not written.branch:
            continue
        call = _as_run(hierarchy, written)
        found = hierarchy.provider_method(call.method) if call is not None else None
        sig = found[1].signature if found is not None else None
        if call is None or sig is None or not checkable(sig):
            continue
        if call_problem(sig, call.shape, call.binds(sig)) is None:
            out.add((call.branch, call.method))
    return out
