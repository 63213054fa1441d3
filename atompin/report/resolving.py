"""The resolver's results for people and machines: the candidates `bump --latest` tried,
and the commit `bisect` found (text, JSON, or Markdown for a PR or an upstream report)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from atompin.bisecting import Bisection, is_worse
from atompin.refs import short_ref
from atompin.resolving import LatestSearch, Trial

BISECT_SCHEMA = "atompin.bisect/1"
BISECT_FORMATS = ("text", "json", "markdown")
_HOW = {"defines": "defines it", "module": "the module", "names": "names it"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def decided_by(trial: Trial) -> str:
    """The finding counts behind a trial's verdict: the gated errors by rule (per pair when several)."""
    parts = []
    for pair in trial.pairs:
        errors = Counter(f.rule.value for name, f in trial.gated_errors() if name == pair.name)
        text = (
            f"{sum(errors.values())} gated error{'s' if sum(errors.values()) != 1 else ''}: "
            + ", ".join(f"{rule} {n}" for rule, n in sorted(errors.items()))
            if errors
            else "no gated error"
        )
        warnings = sum(f.severity.value == "warning" for f in pair.findings)
        text += f", {warnings} warning{'s' if warnings != 1 else ''}" if warnings else ""
        parts.append(f"{pair.name}: {text}" if len(trial.pairs) > 1 else text)
    return "; ".join(parts)


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1] for row in rows]


def render_latest(search: LatestSearch) -> str:
    """`bump --latest`: what was searched, each candidate tried with its verdict, and the outcome."""
    n = len(search.candidates)
    lines = [f"atompin bump {search.component} --latest: {search.source} ({n} candidate{'s' if n != 1 else ''})"]
    if search.trials:
        rows = [["candidate", "commit", "version", "verdict", "decided by"]]
        for t in search.trials:
            rows.append([short_ref(t.ref), t.commit[:12], t.version or "?", t.verdict.value, decided_by(t)])
        lines += _table(rows)
    if search.older is not None:
        below = search.candidates[search.candidates.index(search.older) + 1 :]
        more = f" (and the {len(below)} older release{'s' if len(below) != 1 else ''} below it)" if below else ""
        lines.append(
            f"not tried: {short_ref(search.older.ref)}{more}, committed no later than {short_ref(search.older_than)}, "
            "whose tree says no version"
        )
    chosen = search.chosen
    if chosen is not None:
        where = f"pinning it in {', '.join(search.plan.changed)}" if search.plan else "already pinned: nothing to do"
        lines.append(f"newest passing: {search.component} {short_ref(chosen.ref)}; {where}")
    elif search.trials:
        lines.append("no candidate passes: nothing pinned (every gated verdict must be pass or warn)")
        refs = search.bisect_refs()
        if refs:
            lines.append(
                f"find the commit that broke it: atompin bisect {search.component} {refs[0]} {short_ref(refs[1])}"
            )
        elif search.pin_trial is not None and not search.pin_trial.passes:
            lines.append(
                f"the current pin {short_ref(search.floor_ref)} fails too ({decided_by(search.pin_trial)}), and "
                f"{short_ref(search.trials[-1].ref)} adds no gated error to it: nothing broke between them; mend or "
                "accept the pin's findings first"
            )
    else:
        lines.append("nothing newer than the current pins: nothing to do")
    return "\n".join(lines) + "\n"


def render_bisect(result: Bisection, format: str) -> str:
    """A bisection in one of `BISECT_FORMATS`."""
    if format == "json":
        return json.dumps(bisect_dict(result), indent=2) + "\n"
    if format == "markdown":
        return _bisect_markdown(result)
    return _bisect_text(result)


def _trial_dict(trial: Trial) -> dict[str, Any]:
    return {
        "ref": trial.ref,
        "commit": trial.commit,
        "version": trial.version,
        "verdict": trial.verdict.value,
        "pairs": {p.name: p.verdict.value for p in trial.pairs},
        "gated_errors": dict(sorted(Counter(f.rule.value for _, f in trial.gated_errors()).items())),
        "parsed": trial.parsed,
    }


def bisect_dict(result: Bisection) -> dict[str, Any]:
    """The JSON form (schema `atompin.bisect/1`); fields are only ever added."""
    c = result.culprit
    return {
        "schema": BISECT_SCHEMA,
        "component": result.component,
        "repo": result.repo,
        "good": _trial_dict(result.good),
        "bad": _trial_dict(result.bad) if result.bad else None,
        "commits": len(result.commits),
        "steps": [{"position": pos, **_trial_dict(t), "worse": is_worse(t, result.good)} for pos, t in result.steps],
        "culprit": None
        if c is None
        else {
            "commit": c.commit.commit,
            "date": c.commit.date,
            "subject": c.commit.subject,
            "position": c.position,
            "before": _trial_dict(c.before),
            "after": _trial_dict(c.after),
            "changed_files": list(c.changed),
            "findings": [
                {
                    "pair": a.pair,
                    "check": a.finding.check,
                    "rule": a.finding.rule.value,
                    "severity": a.finding.severity.value,
                    "symbol": a.finding.symbol,
                    "message": a.finding.message,
                    "sites": list(a.finding.sites),
                    "gated": a.gated,
                    "files": [{"path": h.path, "how": h.how} for h in a.files],
                }
                for a in c.appeared
            ],
        },
    }


def _headline(result: Bisection) -> str:
    bad = result.bad.ref if result.bad else "?"
    n = len(result.commits)
    return f"{result.component} {result.good.ref}..{bad}: {n} commit{'s' if n != 1 else ''} on the first-parent line"


def _bisect_text(result: Bisection) -> str:
    lines = [f"atompin bisect {_headline(result)}, {len(result.steps)} judged after {result.good.ref}"]
    c = result.culprit
    if c is None:
        lines.append(
            f"no finding that fails a gate appears from {result.good.ref} to {short_ref(result.bad.ref) if result.bad else '?'}"
        )
    else:
        lines.append(f"first worse commit: {c.commit.commit} ({c.position} of {len(result.commits)}), {c.commit.date}")
        lines.append(f"  {c.commit.subject}")
        for before, after in zip(c.before.pairs, c.after.pairs, strict=True):
            if before.verdict != after.verdict:
                lines.append(f"  pair {after.name}: verdict {before.verdict.value} -> {after.verdict.value}")
        lines.append("findings that appeared:")
        for a in c.appeared:
            f = a.finding
            gate = "  [fails the gate]" if a.gated else ""
            lines.append(f"  + {f.severity.value:<7} {f.rule.value}  {f.symbol}{gate}")
            lines.append(f"      {a.pair} ({f.check}): {f.message}")
            if f.sites:
                lines.append(f"      at {', '.join(f.sites[:6])}{' …' if len(f.sites) > 6 else ''}")
            held = ", ".join(f"{h.path} ({_HOW[h.how]})" for h in a.files)
            lines.append(f"      changed here: {held or '(no changed file holds it)'}")
    lines.append("steps:")
    rows = [["good", short_ref(result.good.ref), result.good.verdict.value, "baseline", decided_by(result.good)]]
    for pos, t in result.steps:
        mark = "worse" if is_worse(t, result.good) else "not worse"
        rows.append([f"{pos}/{len(result.commits)}", short_ref(t.ref), t.verdict.value, mark, decided_by(t)])
    lines += _table(rows)
    return "\n".join(lines) + "\n"


def _bisect_markdown(result: Bisection) -> str:
    c = result.culprit
    if c is None:
        lines = [f"**atompin bisect** {_headline(result)}: no finding that fails a gate appears.", ""]
    else:
        lines = [
            f"**atompin bisect** {_headline(result)}: first worse commit `{c.commit.commit[:12]}` "
            f"({c.position} of {len(result.commits)}), {c.commit.date}",
            "",
            f"> {_cell(c.commit.subject)}",
            "",
            f"Full commit: `{c.commit.commit}`",
            "",
            "| pair | severity | rule | symbol | changed here | message |",
            "|---|---|---|---|---|---|",
        ]
        for a in c.appeared:
            f = a.finding
            files = ", ".join(f"`{h.path}` ({_HOW[h.how]})" for h in a.files) or "—"
            severity = f"{f.severity.value} (gate)" if a.gated else f.severity.value
            lines.append(
                f"| {_cell(a.pair)} | {severity} | `{f.rule.value}` | `{_cell(f.symbol)}` | {files} | {_cell(f.message)} |"
            )
        lines.append("")
    lines += [
        "<details><summary>Steps</summary>",
        "",
        "| step | ref | verdict | worse | decided by |",
        "|---|---|---|---|---|",
    ]
    lines.append(
        f"| good | `{short_ref(result.good.ref)}` | {result.good.verdict.value} | baseline | {_cell(decided_by(result.good))} |"
    )
    for pos, t in result.steps:
        worse = "yes" if is_worse(t, result.good) else "no"
        lines.append(
            f"| {pos}/{len(result.commits)} | `{short_ref(t.ref)}` | {t.verdict.value} | {worse} | {_cell(decided_by(t))} |"
        )
    lines += ["", "</details>", ""]
    return "\n".join(lines)
