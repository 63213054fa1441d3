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
from atompin.model import Finding, Rule, Severity, Site, Status
from atompin.relocations import Relocation

# state -> severity: a table that points nowhere is an error; a move that has not
# happened yet at this provider is worth a look; the rest is information.
_STATES = {
    "relocated": Severity.INFO,
    "both": Severity.INFO,
    "pending": Severity.WARNING,
    "broken": Severity.ERROR,
}


def relocation_state(old: Resolution, new: Resolution) -> str:
    """relocated (new resolves, old gone), both, pending (old only), broken (neither)."""
    old_there, new_there = old.status is not Status.MISSING, new.status is not Status.MISSING
    if new_there:
        return "both" if old_there else "relocated"
    return "pending" if old_there else "broken"


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
            "relocated": f"{entry.new} resolves and {entry.old} is gone",
            "both": f"{entry.old} stays in place"
            if entry.old == entry.new
            else f"both {entry.old} and {entry.new} resolve",
            "pending": f"{entry.old} is still there and {entry.new} is not (is the table applied to the right version?)",
            "broken": f"neither {entry.old} ({old.reason}) nor {entry.new} ({new.reason}) resolves",
        }[state]
        findings.append(
            Finding(Rule.RELOCATION_STATE, _STATES[state], entry.old, where, f"{state}: {detail} ({table}{note})")
        )
        target = new.target
        if state not in ("relocated", "both") or target is None or target.kind is not TargetKind.FUNCTION:
            continue
        if not checkable(target.signature):
            continue
        assert target.signature is not None
        shown = f"{entry.new}{target.signature.render()}"
        if entry.params is not None:
            problem = params_problem(target.signature, entry.params)
            if problem:
                findings.append(Finding(Rule.ARITY_DRIFT, Severity.ERROR, entry.new, where,
                                        f"{problem}: {shown} ({table})"))  # fmt: skip
        elif baseline is not None:
            before = baseline.resolve_symbol(entry.old)
            if before.found and before.target is not None and checkable(before.target.signature):
                assert before.target.signature is not None
                change = describe_change(before.target.signature, target.signature)
                if change != "signature unchanged":
                    findings.append(Finding(Rule.ARITY_DRIFT, Severity.ERROR, entry.new, where,
                                            f"{change}: {entry.old}{before.target.signature.render()} at the baseline, "
                                            f"{shown} now ({table}); a call that only fixed the import path passes the "
                                            "wrong arguments"))  # fmt: skip
    return findings
