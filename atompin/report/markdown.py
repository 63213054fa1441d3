"""Markdown for pull requests: a one-line summary first, the details folded."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from atompin.model import CheckResult, Finding, Severity, Verdict

if TYPE_CHECKING:  # the lock models bring pydantic, which rendering a check does not need
    from atompin.lockdiff import LockDiff
    from atompin.lockfile import Lock, LockedFinding

_MARK = {Verdict.PASS: "✅ pass", Verdict.WARN: "⚠️ warn", Verdict.FAIL: "❌ fail"}
_MAX_ROWS = 50


# Put at the top of the lock-diff comment: the CI recipe finds atompin's own comment by it.
DIFF_MARKER = "<!-- atompin:lock-diff -->"
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")


def escape(text: str) -> str:
    """Message text as Markdown that renders literally: punctuation Markdown reads as markup is
    backslash-escaped (no emphasis, links, HTML or table cells), newlines become spaces."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def _code(text: str) -> str:
    """A code span that is safe inside a table cell."""
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def _findings_table(findings: list[tuple[str, str, str, str, list[str]]]) -> list[str]:
    """Rows of (severity, rule, symbol, message, sites): a narrow table (number, severity,
    rule, first site), then each finding's symbol and message under its number, folded."""
    if not findings:
        return ["No findings."]
    shown = findings[:_MAX_ROWS]
    lines = ["| # | severity | rule | where |", "|---|---|---|---|"]
    for number, (severity, rule, _symbol, _message, sites) in enumerate(shown, start=1):
        where = _code(sites[0]) + (f" (+{len(sites) - 1})" if len(sites) > 1 else "") if sites else ""
        lines.append(f"| {number} | {severity} | {_code(rule)} | {where} |")
    lines += ["", "<details><summary>Symbols and messages</summary>", ""]
    for number, (_severity, _rule, symbol, message, sites) in enumerate(shown, start=1):
        more = (
            f" (also {', '.join(_code(s) for s in sites[1:4])}{' …' if len(sites) > 4 else ''})"
            if len(sites) > 1
            else ""
        )
        lines.append(f"{number}. {_code(symbol)}{more}: {escape(message)}")
    lines += ["", "</details>"]
    if len(findings) > _MAX_ROWS:
        lines.append(f"\n…and {len(findings) - _MAX_ROWS} more (see the lock).")
    return lines


def _rows(findings: Sequence[LockedFinding | Finding]) -> list[tuple[str, str, str, str, list[str]]]:
    ordered = sorted(findings, key=lambda f: (bool(f.accepted), f.severity.rank, f.rule.value, f.symbol))
    return [
        (
            f"{f.severity.value} (accepted)" if f.accepted else f.severity.value,
            f.rule.value,
            f.symbol,
            f"{f.message} — accepted: {f.accepted}" if f.accepted else f.message,
            [str(s) for s in f.sites],
        )
        for f in ordered
    ]


def render_check(result: CheckResult) -> str:
    counts = Counter(f.severity.value for f in result.findings)
    verdict = "❌ fail" if result.errors else "✅ pass"
    summary = ", ".join(f"{counts[s]} {s}" for s in ("error", "warning", "info") if counts[s]) or "no findings"
    s = result.summary
    lines = [
        f"**atompin check** `{result.package}`: {verdict} ({summary})",
        "",
        "<details><summary>Details</summary>",
        "",
        f"{s.import_sites} import sites, {s.symbols} symbols, {s.groups} ladder groups, {s.patch_sites} patch sites.",
        "",
    ]
    lines += _findings_table(_rows(result.findings))
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def render_lock(lock: Lock) -> str:
    verdicts = Counter(p.verdict for p in lock.pairs)
    summary = ", ".join(f"{verdicts[v]} {v.value}" for v in sorted(Verdict, key=lambda v: -v.rank) if verdicts[v])
    lines = [f"**atompin lock**: {len(lock.pairs)} pair(s): {summary}", ""]
    for pair in lock.pairs:
        lines.append(f"<details><summary><b>{pair.name}</b>: {_MARK[pair.verdict]}</summary>")
        lines.append("")
        lines.append("| component | ref | commit | version |")
        lines.append("|---|---|---|---|")
        for name, comp in pair.components.items():
            lines.append(f"| {name} | `{comp.ref}` | `{comp.commit[:12]}` | {comp.version or '?'} |")
        lines.append("")
        for check in pair.checks:
            gate = "gate" if check.gate else "information only"
            lines.append(
                f"- `{check.name}` ({gate}): {_MARK[check.verdict]}; "
                f"{check.import_sites} import sites, {check.patch_sites} patch sites"
            )
        lines.append("")
        lines += _findings_table(_rows([f for f in pair.findings if f.severity is not Severity.INFO]))
        lines += ["", "</details>", ""]
    return "\n".join(lines)


def render_diff(diff: LockDiff) -> str:
    changed = diff.changed
    if not changed:
        return f"{DIFF_MARKER}\n**atompin**: no changes to the pinned pairs.\n"
    heads = []
    for p in changed:
        if p.status in ("added", "removed"):
            heads.append(f"`{p.name}` {p.status}")
        elif p.old_verdict != p.new_verdict:
            heads.append(f"`{p.name}` {p.old_verdict} → {p.new_verdict}")
        else:
            heads.append(f"`{p.name}` changed ({p.new_verdict})")
    warning = " — ❌ a gated verdict got worse" if diff.worse else ""
    lines = [DIFF_MARKER, f"**atompin**: {'; '.join(heads)}{warning}", ""]
    for p in changed:
        mark = _MARK[p.new_verdict] if p.new_verdict else "removed"
        lines.append(f"<details><summary><b>{p.name}</b>: {p.status}, {mark}</summary>")
        lines.append("")
        for c in p.components:
            lines.append(f"- {c.describe()}")
        for check, count, a, b in p.counts:
            lines.append(f"- `{check}` {count.replace('_', ' ')}: {a} → {b}")
        if p.appeared:
            lines += ["", f"**Appeared** ({len(p.appeared)})", ""] + _findings_table(_rows(p.appeared))
        if p.resolved:
            lines += ["", f"**Resolved** ({len(p.resolved)})", ""] + _findings_table(_rows(p.resolved))
        lines += ["", "</details>", ""]
    return "\n".join(lines)
