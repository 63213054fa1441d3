"""Errors that become warnings, and why: code the consumer does not run where it is judged.

Each rule of that kind (`reach`, `served_definitions`, `uncalled`, `baseline_failures`) tells,
for an error, why every one of its sites never runs; `demote` applies the answer the same way
for all of them: the finding stays, as a warning whose message ends with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from atompin.model import Finding, Severity, Site

Hider = TypeVar("Hider")


def demote(findings: list[Finding], why_idle: Callable[[Finding], str | None]) -> list[Finding]:
    """The findings, each error for which `why_idle` gives a reason (asked only of errors with
    sites) made a warning whose message ends with it, in parentheses."""
    out: list[Finding] = []
    for f in findings:
        reason = why_idle(f) if f.severity is Severity.ERROR and f.sites else None
        out.append(replace(f, severity=Severity.WARNING, message=f"{f.message} ({reason})") if reason else f)
    return out


def demote_hidden(
    findings: list[Finding], hider: Callable[[Site], Hider | None], reason: Callable[[Hider], str]
) -> list[Finding]:
    """`demote` for the rules that tell it site by site: an error whose every site `hider` finds
    something keeping from running (an unreached module, a method nothing calls, an import that
    fails first) becomes a warning whose reason `reason` says of its first site's."""

    def why_idle(f: Finding) -> str | None:
        hiding = [hider(site) for site in f.sites]
        first = hiding[0]
        return reason(first) if first is not None and all(h is not None for h in hiding) else None

    return demote(findings, why_idle)
