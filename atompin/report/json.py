"""JSON for machines. The check schema is documented in README.md ("JSON output")."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from atompin.model import COUNT_FIELDS, CheckResult, Finding

if TYPE_CHECKING:  # the lock models bring pydantic, which rendering a check does not need
    from atompin.lockdiff import LockDiff
    from atompin.lockfile import Lock

CHECK_SCHEMA = "atompin.check/1"


def finding_dict(f: Finding) -> dict[str, Any]:
    return {
        "rule": f.rule.value,
        "severity": f.severity.value,
        "symbol": f.symbol,
        "sites": [str(s) for s in f.sites],
        "message": f.message,
        "alternatives": [
            {"symbol": a.symbol, "sites": [str(s) for s in a.sites], "status": a.status.value} for a in f.alternatives
        ],
        "accepted": f.accepted,
        **({"detail": f.detail} if f.detail else {}),
    }


def check_dict(result: CheckResult) -> dict[str, Any]:
    s = result.summary
    return {
        "schema": CHECK_SCHEMA,
        "consumer": result.consumer,
        "provider": result.provider,
        "package": result.package,
        "summary": {
            **{name: getattr(s, name) for name in COUNT_FIELDS},
            "findings_by_rule": dict(s.findings_by_rule),
        },
        "findings": [finding_dict(f) for f in result.findings],
        "gates": [
            {"site": str(g.site), "text": g.text, "value": g.value, "baseline": g.baseline} for g in result.gates
        ],
    }


def render_check(result: CheckResult) -> str:
    return json.dumps(check_dict(result), indent=2, sort_keys=False) + "\n"


def diff_dict(diff: LockDiff) -> dict[str, Any]:
    def comp(c: Any) -> dict[str, Any] | None:
        return c.model_dump(mode="json", by_alias=True) if c is not None else None

    return {
        "schema": "atompin.diff/1",
        "worse": diff.worse,
        "pairs": [
            {
                "name": p.name,
                "status": p.status,
                "old_verdict": p.old_verdict.value if p.old_verdict else "",
                "new_verdict": p.new_verdict.value if p.new_verdict else "",
                "worse_gates": p.worse_gates,
                "components": [
                    {"name": c.name, "old": comp(c.old), "new": comp(c.new), "distance": c.distance}
                    for c in p.components
                ],
                "appeared": [f.model_dump(mode="json", by_alias=True) for f in p.appeared],
                "resolved": [f.model_dump(mode="json", by_alias=True) for f in p.resolved],
                "counts": [{"check": ch, "count": n, "old": a, "new": b} for ch, n, a, b in p.counts],
            }
            for p in diff.changed
        ],
    }


def render_diff(diff: LockDiff) -> str:
    return json.dumps(diff_dict(diff), indent=2) + "\n"


def render_lock(lock: Lock) -> str:
    return json.dumps(lock.model_dump(mode="json", by_alias=True), indent=2) + "\n"
