"""Relocation tables judged against the provider directly: `relocation-state`, and
`arity-drift` for entries whose new place has other parameters than expected.

Resolved against the provider itself, not only through the consumer's imports:
once a consumer routes calls through a shim, no import statement is left to
scan, and the check must not go quiet on the symbols most likely to move again.
"""

from __future__ import annotations

from collections.abc import Sequence

from atompin.analysis.arity import checkable, describe_change, params_problem
from atompin.analysis.provider import ProviderIndex, Resolution, TargetKind
from atompin.model import Finding, Relocation, RelocationState, Rule, Severity, Site, Status

# state -> severity: a table that points nowhere is an error; a move that has not
# happened yet at this provider is worth a look; the rest is information.
_SEVERITY = {
    RelocationState.RELOCATED: Severity.INFO,
    RelocationState.BOTH: Severity.INFO,
    RelocationState.PENDING: Severity.WARNING,
    RelocationState.BROKEN: Severity.ERROR,
}


def relocation_state(old: Resolution, new: Resolution) -> RelocationState:
    """relocated (new resolves, old gone), both, pending (old only), broken (neither)."""
    old_there, new_there = old.status is not Status.MISSING, new.status is not Status.MISSING
    if new_there:
        return RelocationState.BOTH if old_there else RelocationState.RELOCATED
    return RelocationState.PENDING if old_there else RelocationState.BROKEN


def check_relocations(
    entries: Sequence[tuple[str, Relocation]],
    index: ProviderIndex,
    baseline: ProviderIndex | None = None,
    sites: dict[str, list[Site]] | None = None,
) -> list[Finding]:
    """One `relocation-state` finding per entry, plus `arity-drift` where the signature moved too."""
    sites = sites or {}
    findings: list[Finding] = []
    for table, entry in entries:
        old, new = index.resolve_symbol(entry.old), index.resolve_symbol(entry.new)
        state = relocation_state(old, new)
        where = tuple(sorted({*sites.get(entry.old, []), *sites.get(entry.new, [])}))
        note = f"; {entry.note}" if entry.note else ""
        detail = {
            RelocationState.RELOCATED: f"{entry.new} resolves and {entry.old} is gone",
            RelocationState.BOTH: f"{entry.old} stays in place"
            if entry.old == entry.new
            else f"both {entry.old} and {entry.new} resolve",
            RelocationState.PENDING: f"{entry.old} is still there and {entry.new} is not "
            "(is the table applied to the right version?)",
            RelocationState.BROKEN: f"neither {entry.old} ({old.reason}) nor {entry.new} ({new.reason}) resolves",
        }[state]
        message = f"{state.value}: {detail} ({table}{note})"
        findings.append(Finding(Rule.RELOCATION_STATE, _SEVERITY[state], entry.old, where, message))
        target = new.target
        if state not in (RelocationState.RELOCATED, RelocationState.BOTH):
            continue
        if target is None or target.kind is not TargetKind.FUNCTION:
            continue
        if not checkable(target.signature):
            continue
        assert target.signature is not None
        shown = f"{entry.new}{target.signature.render()}"
        if entry.params is not None:
            problem = params_problem(target.signature, entry.params)
            if problem:
                findings.append(
                    Finding(Rule.ARITY_DRIFT, Severity.ERROR, entry.new, where, f"{problem}: {shown} ({table})")
                )
        elif baseline is not None:
            before = baseline.resolve_symbol(entry.old)
            if before.found and before.target is not None and checkable(before.target.signature):
                assert before.target.signature is not None
                change = describe_change(before.target.signature, target.signature)
                if not change.unchanged:
                    message = (
                        f"{change.render()}: {entry.old}{before.target.signature.render()} at the baseline, "
                        f"{shown} now ({table}); a call that only fixed the import path passes the wrong arguments"
                    )
                    findings.append(Finding(Rule.ARITY_DRIFT, Severity.ERROR, entry.new, where, message))
    return findings
