"""return-drift: a provider function's returned tuple and what the consumer does with it
must still have the same length.

A provider function returns N values when every `return` gives a literal tuple of N
(or it is annotated `-> tuple[...]` of N). Errors: a consumer call of it (direct,
through a saved original, `super()` or `self`) unpacked into another count (ValueError,
or values in the wrong names); a replacement patched over it, or an override of it,
whose returns are tuples of another length (the provider's own callers unpack N).
"""

from __future__ import annotations

from collections.abc import Callable

from atompin.analysis.baseline import Baseline
from atompin.analysis.hierarchy import Hierarchy
from atompin.analysis.method_overrides import override_pairs
from atompin.analysis.provider import ProviderIndex, Resolution, TargetKind
from atompin.analysis.signature import Signature
from atompin.analysis.usage import ConsumerUsage, Ref, Unpack
from atompin.model import Finding, Rule, Severity


def _function(res: Resolution | None) -> tuple[str, Signature] | None:
    if res is None or res.target is None or res.target.kind is not TargetKind.FUNCTION:
        return None
    if res.target.signature is None:
        return None
    return res.target.symbol, res.target.signature


def _before(baseline: Baseline | None, symbol: str, now: int) -> str:
    """ " (it returned 2 at 0.25.1)" when the length changed since the baseline."""
    if baseline is None:
        return ""
    sig = baseline.function(symbol)
    if sig is None or sig.returns is None or sig.returns == now:
        return ""
    return f" (it returned {sig.returns} {baseline.since})"


def check_returns(
    usage: ConsumerUsage,
    index: ProviderIndex,
    hierarchy: Hierarchy,
    first: Callable[[tuple[Ref, ...]], Resolution | None],
    baseline: Baseline | None = None,
) -> list[Finding]:
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
        message = (
            f"the replacement returns {replacement.returns} value(s); {symbol} returns {original.returns}"
            f"{_before(baseline, symbol, original.returns or 0)}, and the provider's callers unpack that many"
        )
        findings.append(Finding(Rule.RETURN_DRIFT, Severity.ERROR, symbol, (patch.site,), message))
    for pair in override_pairs(hierarchy):
        mine, theirs = pair.method.signature.returns, pair.base_signature.returns
        if mine is None or theirs is None or mine == theirs:
            continue
        message = (
            f"the override returns {mine} value(s); {pair.base_symbol} returns {theirs}"
            f"{_before(baseline, pair.base_symbol, theirs)}, and the provider's callers unpack that many"
        )
        findings.append(Finding(Rule.RETURN_DRIFT, Severity.ERROR, pair.symbol, (pair.site,), message))
    return findings


def _unpack(
    unpack: Unpack,
    hierarchy: Hierarchy,
    first: Callable[[tuple[Ref, ...]], Resolution | None],
    baseline: Baseline | None,
) -> Finding | None:
    if unpack.method is not None:
        method = hierarchy.provider_method(unpack.method)
        if method is None or method[1].signature is None:
            return None
        found: tuple[str, Signature] | None = (f"{method[0]}.{unpack.method.name}", method[1].signature)
    else:
        found = _function(first(unpack.choices))
    if found is None or found[1].returns is None:
        return None
    symbol, sig = found
    returns = sig.returns
    assert returns is not None
    fits = returns >= unpack.count - 1 if unpack.starred else returns == unpack.count
    if fits:
        return None
    names = f"at least {unpack.count - 1}" if unpack.starred else str(unpack.count)
    message = (
        f"unpacks the result into {names} name(s); {symbol} returns a tuple of {returns}"
        f"{_before(baseline, symbol, returns)}: ValueError"
    )
    return Finding(Rule.RETURN_DRIFT, Severity.ERROR, symbol, (unpack.site,), message)
