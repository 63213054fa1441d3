"""Plain text for people: findings grouped by rule, sites as `path:line`."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from atompin.model import CheckResult, Finding, RefKind, Severity

if TYPE_CHECKING:  # the lock models bring pydantic, which rendering a check does not need
    from atompin.lockdiff import LockDiff
    from atompin.lockfile import Lock, LockedFinding

_MAX_SITES = 6


def render_findings(
    findings: tuple[Finding, ...] | list[Finding], indent: str = "", verbose: bool = False
) -> list[str]:
    lines: list[str] = []
    by_rule: dict[str, list[Finding]] = {}
    for f in findings:
        by_rule.setdefault(f.rule.value, []).append(f)
    for rule in sorted(by_rule, key=lambda r: (min(f.severity.rank for f in by_rule[r]), r)):
        items = sorted(by_rule[rule], key=lambda f: (f.severity.rank, f.symbol))
        lines.append(f"{indent}{rule} ({len(items)})")
        for f in items:
            lines.append(f"{indent}  {f.severity.value:<7} {f.symbol}" + (" [accepted]" if f.accepted else ""))
            lines.append(f"{indent}          {f.message}")
            if f.accepted:
                lines.append(f"{indent}          accepted in pairs.toml: {f.accepted}")
            sites = [str(s) for s in f.sites]
            shown = ", ".join(sites[:_MAX_SITES]) + (
                f", … (+{len(sites) - _MAX_SITES})" if len(sites) > _MAX_SITES else ""
            )
            if shown:
                lines.append(f"{indent}          at {shown}")
            for alt in f.alternatives:
                lines.append(
                    f"{indent}          - {alt.status.value:<7} {alt.symbol} ({', '.join(map(str, alt.sites))})"
                )
            if verbose and f.detail:
                lines += [f"{indent}          | {line}" for line in f.detail.rstrip("\n").splitlines()]
        lines.append("")
    return lines


def severity_counts(findings: tuple[Finding, ...] | list[Finding]) -> str:
    counts = Counter(f.severity for f in findings)
    return ", ".join(f"{counts[s]} {s.value}" for s in Severity if counts[s]) or "no findings"


def render_gates(result: CheckResult) -> list[str]:
    """The consumer's version gates, as evaluated: `--verbose` output."""
    if not result.gates:
        return []
    lines = [f"version gates ({len(result.gates)}), evaluated statically"]
    for g in result.gates:
        before = f" (baseline: {g.baseline})" if g.baseline else ""
        lines.append(f"  {g.value:<9} {g.text}{before}  at {g.site}")
    return [*lines, ""]


def render_check(result: CheckResult, verbose: bool = False) -> str:
    s = result.summary
    lines = [
        f"atompin check: {result.consumer} -> {result.provider} (package {result.package})",
        f"  {s.import_sites} import sites, {s.symbols} symbols, {s.groups} ladder groups, "
        f"{s.patch_sites} patch sites ({s.patch_targets} targets), {s.references} attribute references"
        + (f", {s.overrides} model architectures overridden" if s.overrides else ""),
        "",
    ]
    lines += render_findings(result.findings, verbose=verbose)
    if verbose:
        lines += render_gates(result)
    verdict = "FAIL" if result.errors else "PASS"
    lines.append(f"{verdict}: {severity_counts(result.findings)}")
    return "\n".join(lines) + "\n"


def render_lock(lock: Lock, show_info: bool = False) -> str:
    """Per pair: verdict, pins, then each check with its counts and the findings that matter."""
    lines: list[str] = []
    for pair in lock.pairs:
        lines.append(f"{pair.name}: {pair.verdict.value.upper()}")
        for name, comp in pair.components.items():
            version = f" ({comp.version})" if comp.version else ""
            kind = f" [{comp.ref_kind.value}]" if comp.ref_kind is not RefKind.TAG else ""
            lines.append(f"  {name:<10} {comp.ref}{kind} -> {comp.commit[:12]}{version}")
            archs = sorted({a for values in comp.supported_archs.values() for a in values})
            if archs:
                lines.append(f"  {'':<10} kernels support {', '.join(archs)}")
        sections = [("pair", "pins")] + [(c.name, c) for c in pair.checks]  # type: ignore[list-item]
        for key, check in sections:
            found = sorted(
                (f for f in pair.findings if f.check == key), key=lambda f: (f.severity.rank, f.rule.value, f.symbol)
            )
            if isinstance(check, str):
                if found:
                    lines.append("  pins:")
            else:
                gate = "gate" if check.gate else "information only"
                overrides = f", {check.overrides} model architectures overridden" if check.overrides else ""
                lines.append(
                    f"  {check.name} ({gate}): {check.verdict.value}; {check.import_sites} import sites, "
                    f"{check.symbols} symbols, {check.patch_sites} patch sites{overrides}"
                )
            hidden = 0
            for f in found:
                if f.severity is Severity.INFO and not show_info:
                    hidden += 1
                    continue
                mark = " [accepted]" if f.accepted else ""
                lines.append(f"    {f.severity.value:<7} {f.rule.value}: {f.symbol}{_where(f)}{mark}")
                lines.append(f"            {f.message}")
                if f.accepted:
                    lines.append(f"            accepted in pairs.toml: {f.accepted}")
                if show_info and f.detail:
                    lines += [f"            | {line}" for line in f.detail.rstrip("\n").splitlines()]
            if hidden:
                lines.append(f"    ({hidden} info finding(s) not shown; see the lock)")
        lines.append("")
    return "\n".join(lines)


def _where(f: LockedFinding) -> str:
    """ " at A, B, C (+N)": where a locked finding is, its first three sites (a diff needs them
    too: two files declaring one target make two findings of one rule and symbol)."""
    if not f.sites:
        return ""
    return f" at {', '.join(f.sites[:3])}" + (f" (+{len(f.sites) - 3})" if len(f.sites) > 3 else "")


def render_diff(diff: LockDiff) -> str:
    """Per changed pair: pins, verdict, findings that appeared (with their messages, but for info)
    or were resolved, counts."""
    changed = diff.changed
    if not changed:
        return "no changes between the locks\n"
    lines: list[str] = []
    for p in changed:
        verdict = (
            p.new_verdict if p.old_verdict == p.new_verdict else f"{p.old_verdict or '-'} -> {p.new_verdict or '-'}"
        )
        worse = "  (gated verdict got worse: " + ", ".join(p.worse_gates) + ")" if p.worse else ""
        lines.append(f"{p.name}: {p.status}, verdict {verdict}{worse}")
        for c in p.components:
            lines.append(f"  {c.describe()}")
        for f in p.appeared:
            accepted = " (accepted)" if f.accepted else ""
            lines.append(f"  + {f.severity.value:<7} {f.rule.value}: {f.symbol} [{f.check}]{_where(f)}{accepted}")
            # What the change breaks, and why: the engineer reading a bump should not need the lock.
            if f.severity is not Severity.INFO:
                lines.append(f"            {f.message}")
        for f in p.resolved:
            lines.append(f"  - {f.severity.value:<7} {f.rule.value}: {f.symbol} [{f.check}]{_where(f)}")
        for check, count, a, b in p.counts:
            lines.append(f"  {check} {count.replace('_', ' ')}: {a} -> {b}")
        lines.append("")
    return "\n".join(lines)
