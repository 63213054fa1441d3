"""return-drift: a provider function's returned tuple and what the consumer does with it
must still have the same length.

A provider function returns N values when every `return` gives a literal tuple of N
(or it is annotated `-> tuple[...]` of N). Errors: a consumer call of it (direct,
through a saved original, `super()` or `self`, or through a method of the consumer class's own
that returns its result) unpacked into another count (ValueError,
or values in the wrong names); a replacement patched over it, or an override of it that
provider code still running for the consumer's class calls, whose returns are tuples of
another length (the provider's own callers unpack N). With a baseline where the length
was already so, or where the consumer's side did not fit it either, the consumer works
there: a warning (probably a path not taken).

Also an output buffer lost: a replacement returning its result where the provider's original
writes it into a parameter and returns nothing (`output_buffers`), on a path that runs here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from atompin.analysis.baseline import Baseline
from atompin.analysis.conditions import LIVE, Judgement, Reach
from atompin.analysis.hierarchy import Hierarchy
from atompin.analysis.members import chain_receiver
from atompin.analysis.method_overrides import OverridePair, overridden_at_baseline, override_pairs
from atompin.analysis.provider import ClassRef, ProviderIndex, Resolution, TargetKind
from atompin.analysis.signature import Signature
from atompin.analysis.usage import Condition, ConsumerUsage, Ref, Unpack
from atompin.model import Finding, Rule, Severity


def _function(res: Resolution | None) -> tuple[str, Signature] | None:
    if res is None or res.target is None or res.target.kind is not TargetKind.FUNCTION:
        return None
    if res.target.signature is None:
        return None
    return res.target.symbol, res.target.signature


def _at_baseline(baseline: Baseline | None, symbol: str) -> int | None:
    """How many values `symbol` returned at the baseline (None: unknown, or no baseline)."""
    sig = baseline.function(symbol) if baseline is not None else None
    return sig.returns if sig is not None else None


def _judged(
    baseline: Baseline | None, before: int | None, now: int, fits: Callable[[int], bool]
) -> tuple[Severity, str]:
    """The severity, and what the message says of the baseline. An error when the length
    changed since the baseline in a way the consumer's side no longer fits (`fits(n)`: it takes
    a tuple of n), or the function is new there; a warning when the consumer's side did not fit
    the baseline's length either (it works there: probably a path not taken), or with no
    baseline to tell. (Without a baseline, mismatches measured on released plugins were mostly
    on paths not taken.)"""
    if baseline is None:
        return Severity.WARNING, ""
    if before is None:
        return Severity.ERROR, ""
    if before == now:
        return Severity.WARNING, f" (so {baseline.since} too, where the consumer works: probably a path not taken)"
    if not fits(before):
        return Severity.WARNING, (
            f" (it returned {before} {baseline.since}, which did not fit either, where the consumer works:"
            " probably a path not taken)"
        )
    return Severity.ERROR, f" (it returned {before} {baseline.since})"


def check_returns(
    usage: ConsumerUsage,
    index: ProviderIndex,
    hierarchy: Hierarchy,
    first: Callable[[tuple[Ref, ...]], Resolution | None],
    baseline: Baseline | None = None,
    judge: Callable[[Sequence[Condition]], Judgement] | None = None,
) -> list[Finding]:
    """return-drift: unpacked results, replacements and overrides returning another tuple length,
    and replacements returning what the original writes into an output buffer. `judge` decides
    the version gates a replacement's return sits under."""
    findings: list[Finding] = []
    for unpack in usage.contact.unpacks:
        finding = _unpack(unpack, hierarchy, first, baseline)
        if finding is not None:
            findings.append(finding)
    for patch in usage.patches:
        replacement = patch.replacement
        if replacement is None or replacement.returns is None:
            continue
        owner = first(patch.owner)
        if owner is None or owner.target is None:
            continue
        found = _function(index.getattr(owner.target, patch.attr))
        if found is None or found[1].returns is None or found[1].returns == replacement.returns:
            continue
        symbol, original = found
        assert original.returns is not None
        mine = replacement.returns
        severity, since = _judged(baseline, _at_baseline(baseline, symbol), original.returns, mine.__eq__)
        message = (
            f"the replacement returns {mine} value(s); {symbol} returns {original.returns}"
            f"{since}, and the provider's callers unpack that many"
        )
        findings.append(Finding(Rule.RETURN_DRIFT, severity, symbol, (patch.site,), message))
    for pair in override_pairs(hierarchy):
        finding = _override(hierarchy, pair, baseline)
        if finding is not None:
            findings.append(finding)
    findings += _unwritten_buffers(usage, index, first, baseline, judge)
    return findings


def _unwritten_buffers(
    usage: ConsumerUsage,
    index: ProviderIndex,
    first: Callable[[tuple[Ref, ...]], Resolution | None],
    baseline: Baseline | None,
    judge: Callable[[Sequence[Condition]], Judgement] | None,
) -> list[Finding]:
    """A replacement returning its result, on a path that runs here, where the provider's original
    writes it into an output buffer and gives no value (`output_buffers`): the provider's callers
    read a buffer nothing wrote. An error; a warning when that path ran against the same original
    at the baseline too, or with no baseline to tell (the consumer works there: the buffer is
    probably not read), or under a version gate not decided here."""
    patches = {(p.site, p.attr): p for p in usage.patches if p.replacement is not None and not p.variants}
    findings: list[Finding] = []
    for replacement in usage.contact.replacements:
        patch = patches.get((replacement.site, replacement.attr))
        if not replacement.unwritten or patch is None:
            continue
        owner = first(patch.owner)
        found = _function(index.getattr(owner.target, patch.attr)) if owner and owner.target else None
        if found is None or not found[1].fills:
            continue
        symbol, original = found
        for ret in replacement.unwritten:
            lost = [name for name in ret.outputs if name in original.fills]
            when = (*patch.when, *ret.when)
            judgement = judge(when) if judge is not None else LIVE
            if not lost or judgement.reach is Reach.DEAD:
                continue
            before = baseline.function(symbol) if baseline is not None else None
            then = baseline is not None and before is not None and lost[0] in before.fills and baseline.runs(when)
            # (With no baseline to tell, as for tuple lengths: where the consumer works, probably not read.)
            severity = Severity.WARNING if then or baseline is None else Severity.ERROR
            since = (
                f" ({baseline.since} too, where this return ran as well and the consumer works: probably not read)"
                if then and baseline is not None
                else ""
            )
            message = (
                f"the replacement returns its result at {ret.site} and leaves `{lost[0]}` unwritten; {symbol} "
                f"writes its result into `{lost[0]}` and returns nothing{since}, so the provider's callers read "
                "a buffer nothing wrote (no error is raised)"
            )
            severity, message = judgement.adjust(severity, message)
            findings.append(Finding(Rule.RETURN_DRIFT, severity, symbol, (patch.site, ret.site), message))
    return findings


def _override(hierarchy: Hierarchy, pair: OverridePair, baseline: Baseline | None) -> Finding | None:
    """An override returning another tuple length than the method it overrides. An error when
    provider code that still runs for the consumer's class calls it on itself; a warning for a
    public method nothing of the provider's own class hierarchy calls (others may)."""
    mine, theirs = pair.method.signature.returns, pair.base_signature.returns
    if mine is None or theirs is None or mine == theirs:
        return None
    callers = list(
        dict.fromkeys(
            f"{node}.{call.method}"
            for cls in pair.classes
            for node in hierarchy.mro(cls.name)
            if isinstance(node, ClassRef) and (info := hierarchy.provider(node)) is not None
            for call in info.self_calls
            if call.name == pair.method.name and call.receiver == "self" and hierarchy.runs(cls.name, call.method, node)
        )
    )
    if not callers and pair.method.name.startswith("_"):
        return None
    before = overridden_at_baseline(hierarchy, pair, baseline) if baseline is not None else None
    severity, since = _judged(baseline, before.returns if before is not None else None, theirs, mine.__eq__)
    severity = severity if callers else Severity.WARNING
    who = f"{callers[0]} calls it on the object" if callers else "the provider's callers expect that many"
    message = f"the override returns {mine} value(s); {pair.base_symbol} returns {theirs}{since}, and {who}"
    return Finding(Rule.RETURN_DRIFT, severity, pair.symbol, (pair.site,), message)


def _unpack(
    unpack: Unpack,
    hierarchy: Hierarchy,
    first: Callable[[tuple[Ref, ...]], Resolution | None],
    baseline: Baseline | None,
) -> Finding | None:
    if unpack.method is not None:
        through = chain_receiver(hierarchy, unpack.method)  # `self.x.m(...)`: m of the class x holds
        if through is None:
            return None
        ref = hierarchy.call_target(through)  # `a, b = layer(x)` unpacks what `forward` returns
        method = hierarchy.provider_method(ref)
        if method is None or method[1].signature is None:
            return None
        found: tuple[str, Signature] | None = (f"{method[0]}.{ref.name}", method[1].signature)
    else:
        found = _function(first(unpack.choices))
    if found is None or found[1].returns is None:
        return None
    symbol, sig = found
    returns = sig.returns
    assert returns is not None

    def fits(n: int) -> bool:
        return n >= unpack.count - 1 if unpack.starred else n == unpack.count

    if fits(returns):
        return None
    severity, since = _judged(baseline, _at_baseline(baseline, symbol), returns, fits)
    names = f"at least {unpack.count - 1}" if unpack.starred else str(unpack.count)
    result = f"the result of {unpack.through}, which returns what {symbol} does," if unpack.through else "the result"
    message = f"unpacks {result} into {names} name(s); {symbol} returns a tuple of {returns}{since}: ValueError"
    return Finding(Rule.RETURN_DRIFT, severity, symbol, (unpack.site,), message)
