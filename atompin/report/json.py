"""JSON for machines. The check schema is documented in README.md ("JSON output")."""

from __future__ import annotations

import json
from typing import Any

from atompin.model import CheckResult, Finding

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
    }


def check_dict(result: CheckResult) -> dict[str, Any]:
    s = result.summary
    return {
        "schema": CHECK_SCHEMA,
        "consumer": result.consumer,
        "provider": result.provider,
        "package": result.package,
        "summary": {
            "import_sites": s.import_sites,
            "symbols": s.symbols,
            "groups": s.groups,
            "patch_sites": s.patch_sites,
            "patch_targets": s.patch_targets,
            "references": s.references,
            "findings_by_rule": dict(s.findings_by_rule),
        },
        "findings": [finding_dict(f) for f in result.findings],
    }


def render_check(result: CheckResult) -> str:
    return json.dumps(check_dict(result), indent=2, sort_keys=False) + "\n"
