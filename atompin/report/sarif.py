"""SARIF 2.1.0 for code scanning: one rule per stable rule name, one result per finding site."""

from __future__ import annotations

import json
from typing import Any

from atompin import __version__
from atompin.lockfile import Lock
from atompin.model import RULE_DESCRIPTIONS, CheckResult, Rule, Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _driver() -> dict[str, Any]:
    return {
        "name": "atompin",
        "version": __version__,
        "informationUri": "https://github.com/ROCm/ATOM",
        "rules": [
            {
                "id": rule.value,
                "name": "".join(part.title() for part in rule.value.split("-")),
                "shortDescription": {"text": RULE_DESCRIPTIONS[rule]},
                "defaultConfiguration": {"level": "error" if rule in _ERROR_RULES else "warning"},
            }
            for rule in Rule
        ],
    }


_ERROR_RULES = {
    Rule.UNRESOLVED_IMPORT,
    Rule.MISSING_PATCH_TARGET,
    Rule.ARITY_DRIFT,
    Rule.MOVED_REF,
    Rule.OVERRIDE_DRIFT,
    Rule.PROTOCOL_DRIFT,
    Rule.RETURN_DRIFT,
}


def _result(
    rule: Rule,
    severity: Severity,
    symbol: str,
    message: str,
    sites: list[str],
    fallback: str,
    properties: dict[str, Any],
) -> dict[str, Any]:
    locations = []
    for site in sites or [f"{fallback}:1"]:
        path, _, line = site.rpartition(":")
        locations.append(
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": path, "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": max(int(line or 1), 1)},
                }
            }
        )
    return {
        "ruleId": rule.value,
        "ruleIndex": list(Rule).index(rule),
        "level": _LEVELS[severity],
        "message": {"text": f"{symbol}: {message}"},
        "locations": locations[:10],  # code scanning keeps the first locations; more add noise
        "partialFingerprints": {"atompinFinding/v1": f"{rule.value}:{symbol}"},
        "properties": properties,
    }


def _log(results: list[dict[str, Any]]) -> str:
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": _driver()}, "results": results, "columnKind": "utf16CodeUnits"}],
    }
    return json.dumps(log, indent=2) + "\n"


def render_check(result: CheckResult) -> str:
    results = [
        _result(
            f.rule,
            f.severity,
            f.symbol,
            f.message,
            [str(s) for s in f.sites],
            result.consumer,
            {"package": result.package},
        )
        for f in result.findings
    ]
    return _log(results)


def render_lock(lock: Lock, manifest_name: str = "pairs.toml") -> str:
    """Lock findings; those without a site in the consumer point at the manifest."""
    results = [
        _result(
            f.rule,
            f.severity,
            f.symbol,
            f"[{pair.name}] {f.message}",
            f.sites,
            manifest_name,
            {"pair": pair.name, "check": f.check},
        )
        for pair in lock.pairs
        for f in pair.findings
    ]
    return _log(results)
