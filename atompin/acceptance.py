"""Accepted findings: what `pairs.toml` accepts on a check edge, applied to that edge's findings.

Applied after the analysis (the core knows no manifest): a finding an active acceptance
matches keeps its rule, severity and message, and carries the acceptance's reason; gates
ignore it. An active acceptance that matches nothing is reported as `stale-acceptance`, so
the list does not rot. An acceptance is active while the provider's version is in its
range and until its date.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date

from atompin.manifest import Acceptance, CheckEdge
from atompin.model import Finding, Rule, Severity


def accept(findings: Sequence[Finding], edge: CheckEdge, version: str, today: date | None = None) -> list[Finding]:
    """`findings` of `edge` with the accepted ones marked, plus a `stale-acceptance` warning for each active
    acceptance that matches none of them."""
    today = today or date.today()
    active = [a for a in edge.accept if a.active(version, today)]
    used: set[int] = set()
    out: list[Finding] = []
    for finding in findings:
        hit = next((i for i, a in enumerate(active) if a.matches(finding.rule.value, finding.symbol)), None)
        if hit is not None:
            used.add(hit)
            finding = replace(finding, accepted=active[hit].reason)
        out.append(finding)
    out += [_stale(edge, a) for i, a in enumerate(active) if i not in used]
    return out


def _stale(edge: CheckEdge, acceptance: Acceptance) -> Finding:
    return Finding(
        Rule.STALE_ACCEPTANCE,
        Severity.WARNING,
        f"{acceptance.rule.value} {acceptance.symbol}",
        (),
        f"pairs.toml accepts {acceptance.rule.value} findings of {acceptance.symbol} on {edge.name} "
        f"({acceptance.reason!r}), and there are none: remove the acceptance",
    )
