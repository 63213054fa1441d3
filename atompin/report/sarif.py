"""SARIF 2.1.0 for code scanning: one rule per stable rule name, one result per finding.

What code scanning needs, and how this log gives it:

- Rules carry `shortDescription`, `fullDescription`, `help` (text and Markdown) and `helpUri`.
- A result's first location is where the alert shows. For a lock that is the `pairs.toml`
  line of the result's pair: a file of the repository that uploads the log. The consumer's
  sites are `relatedLocations`, linked from the message, each with a `uriBaseId` per
  component and commit that `originalUriBaseIds` (and `versionControlProvenance`) map to
  the component's repository at that commit.
- `partialFingerprints` name the pair, the check edge, the rule and the symbol, so the same
  finding in two pairs is two alerts and a finding whose line moved stays one.
- URIs are percent-encoded; message text escapes what SARIF reads as markup (`\\`, `[`, `]`
  of embedded links, `{`/`}` of placeholders).

Results leave room for a `suppressions` key (accepted findings).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from atompin import __version__
from atompin.errors import InputError
from atompin.files import read_text
from atompin.lines import text_lines
from atompin.model import RULE_DESCRIPTIONS, CheckResult, Rule, Severity
from atompin.refs import is_local

if TYPE_CHECKING:  # the lock models bring pydantic, which rendering a check does not need
    from atompin.lockfile import Lock, LockedPair

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# Where atompin's README (the rule tables) is read; each rule's helpUri is an anchor in it.
DOCS_URI = "https://github.com/ROCm/atompin/blob/main/README.md"
_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_ERROR_RULES = {
    Rule.UNRESOLVED_IMPORT,
    Rule.MISSING_PATCH_TARGET,
    Rule.ARITY_DRIFT,
    Rule.MOVED_REF,
    Rule.OVERRIDE_DRIFT,
    Rule.PROTOCOL_DRIFT,
    Rule.RETURN_DRIFT,
    Rule.MISSING_MEMBER,
}
_MAX_SITES = 10  # code scanning shows the first related locations; more add noise

# What each rule means in practice and what to do about it (help text).
_RULE_HELP: dict[Rule, str] = {
    Rule.UNRESOLVED_IMPORT: "An import in the consumer names something the provider no longer has at the pinned "
    "commit. Unguarded, start-up raises; inside a try/except ladder whose every alternative fails, the fallback "
    "runs instead. Find where the name went (`atompin relocations suggest`), import it from there, or do not "
    "bump the pin yet.",
    Rule.MISSING_PATCH_TARGET: "The consumer monkeypatches an attribute the provider no longer has. Unguarded, "
    "start-up raises; guarded (getattr, hasattr, try), nothing is patched and nothing says so: the engine runs "
    "unpatched. Patch the attribute where it lives now, or add a relocation table entry.",
    Rule.PATCH_ADDITION: "An assignment adds an attribute the provider never had. Usually a marker; check that "
    "it is not a patch whose target was renamed.",
    Rule.RELOCATION_STATE: "Where a relocation table entry stands at the provider commit: relocated and both are "
    "fine, pending means the move has not happened at this pin, broken means neither the old nor the new symbol "
    "exists. Fix the table entry.",
    Rule.ARITY_DRIFT: "A signature no longer fits: a moved symbol's parameters differ from the table or the "
    "baseline, a patch's replacement cannot take every call the original takes, or a call passes arguments that "
    "no longer fit. Nothing raises when positions shift: values land in the wrong parameters. Compare both "
    "signatures in the message and fix the call or the replacement.",
    Rule.DECLARED_TARGET_SKEW: "The consumer says it was written against another provider version or commit "
    "than the pair pins, or requires a provider version range the pin is outside of. Update the consumer's "
    "declaration or requirement, or the pin.",
    Rule.UNPARSEABLE: "A file does not parse, so what is behind it is unknown, not missing. Check the file at "
    "the pinned commit.",
    Rule.DYNAMIC_TARGET: "A name is served at runtime (module __getattr__, a compiled extension, a base class "
    "outside the provider): static reading cannot say whether it exists.",
    Rule.BRANCH_REF: "A pin names a branch: it moves, and image layers cached on the ref string never rebuild. "
    "Pin a tag or a commit.",
    Rule.MOVED_REF: "A tag now points at another commit than the lock recorded. Re-lock and review the diff.",
    Rule.UNCONSTRAINED_PLUGIN: "The consumer registers entry points in the provider's plugin groups but requires "
    "no provider version, so pip installs any pairing and the plugin arms itself. Declare the provider range.",
    Rule.MODEL_OVERRIDE: "A model-class override whose wrapper does not resolve (error), or whose architecture "
    "the provider no longer knows (the replacement is silently inactive). Fix the registration.",
    Rule.ARCH_COVERAGE: "No GPU architecture of the fleet is among those a list of supported architectures "
    "names: code under it cannot run on this fleet. Never a gate.",
    Rule.GATE_FLIP: "A version gate of the consumer (`if vllm_version_is(...)`, a version comparison) has another "
    "value at the pin than at the baseline: other code runs now although the consumer did not change. Read the "
    "branch that runs at the pin.",
    Rule.STALE_ACCEPTANCE: "An accepted finding in pairs.toml matches no finding any more: the problem is gone or "
    "its symbol changed. Remove the acceptance or update its symbol.",
    Rule.VERSION_ASSERT: "A module-level assert on the provider's version fails at the pin: importing the module "
    "raises. Bump the consumer or keep the pin.",
    Rule.OVERRIDE_DRIFT: "A consumer method overrides a provider method, and the provider now calls that method "
    "in a way the override cannot take (a keyword the base method gained, a rebuild of the object through "
    "`self.__class__(...)`): TypeError on that path. Give the override the new parameters.",
    Rule.PROTOCOL_DRIFT: "A consumer class plays the part of a provider class without inheriting from it (handed "
    "over by dotted path or registration), and the provider now calls a member it lacks: AttributeError at run "
    "time. Add the member (the provider's base class shows what it should do).",
    Rule.RETURN_DRIFT: "A provider function returns a tuple of another length than the consumer unpacks, or a "
    "replacement returns another length than the provider's callers unpack: ValueError, or values in the wrong "
    "names. Follow the new shape.",
    Rule.MISSING_MEMBER: "The consumer reads or calls a member through `self`, `super()` or an object annotated "
    "with a provider class, and the provider no longer has it: it was there at the baseline, and no class the "
    "lookup passes defines or sets it now. AttributeError when the code runs. Use what replaced it (the "
    "provider's history of that class says), or guard the read for both releases.",
    Rule.BASELINE_UNAVAILABLE: "The baseline (the provider the consumer was written against: --baseline, its "
    "declares file, or the previous lock's pin) could not be resolved, so the edge was checked without one: "
    "nothing counts as gone or changed since, and the rules that need that comparison find less. Make the "
    "commit reachable in the provider's repository, or pass --baseline REF.",
    Rule.ANALYSIS_BOUND: "The scan reads a helper again with the provider objects a call hands it, up to a bound "
    "that keeps it finite on any input; past it, what those helpers do with them is unknown, not checked. Split "
    "the consumer into several check edges (consumer-package), or report the consumer's size upstream.",
    Rule.NO_CONTACT: "The consumer package checked imports, patches and reads nothing of the provider, so the "
    "check passes without proving anything. Usually the wrong consumer package or provider package: fix "
    "consumer-package (or --consumer-package), or the edge.",
    Rule.SHADOW_DRIFT: "A consumer copy of a provider method (an override that never calls super(), a replacement "
    "that never calls the original) whose upstream changed since the baseline: the copy silently skips the new "
    "work; an error when that work sets an attribute on the object which provider methods the consumer class "
    "still runs read. Port what changed upstream (`--verbose` shows the diff).",
}
# README sections (GitHub anchors) that document each rule.
_PAIR_RULES = {
    Rule.DECLARED_TARGET_SKEW,
    Rule.BRANCH_REF,
    Rule.UNCONSTRAINED_PLUGIN,
    Rule.MODEL_OVERRIDE,
    Rule.BASELINE_UNAVAILABLE,
}
_README_SECTION = {
    rule: "pinned-pairs-pairstoml--atompinlock" if rule in _PAIR_RULES | {Rule.ARCH_COVERAGE} else "rules"
    for rule in Rule
}


def escape(text: str) -> str:
    """Plain text for a SARIF message: backslashes and square brackets escaped (they delimit
    embedded links) and curly braces doubled (they delimit placeholders)."""
    return re.sub(r"([\\\[\]])", r"\\\1", text).replace("{", "{{").replace("}", "}}")


def uri(path: str) -> str:
    """A relative POSIX path as a URI reference: percent-encoded, "/" kept."""
    return quote(path, safe="/")


def _rule(rule: Rule) -> dict[str, Any]:
    help_text = _RULE_HELP[rule]
    return {
        "id": rule.value,
        "name": "".join(part.title() for part in rule.value.split("-")),
        "shortDescription": {"text": RULE_DESCRIPTIONS[rule]},
        "fullDescription": {"text": f"{RULE_DESCRIPTIONS[rule][:1].upper()}{RULE_DESCRIPTIONS[rule][1:]}."},
        "help": {"text": help_text, "markdown": f"**`{rule.value}`**: {help_text}"},
        "helpUri": f"{DOCS_URI}#{_README_SECTION[rule]}",
        "defaultConfiguration": {"level": "error" if rule in _ERROR_RULES else "warning"},
    }


def _driver() -> dict[str, Any]:
    return {
        "name": "atompin",
        "version": __version__,
        "informationUri": DOCS_URI,
        "rules": [_rule(rule) for rule in Rule],
    }


def _fingerprint(*parts: str) -> dict[str, str]:
    return {"atompinFinding/v2": hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]}


class _Fingerprints:
    """The fingerprints of one log. A symbol whose sites fail in two ways is two findings (one
    per severity): the first keeps the fingerprint a symbol always had, a second one adds its
    severity, so code scanning keeps two alerts apart."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, ...]] = set()

    def __call__(self, severity: str, *parts: str) -> dict[str, str]:
        if parts in self._seen:
            return _fingerprint(*parts, severity)
        self._seen.add(parts)
        return _fingerprint(*parts)


def _location(path: str, line: int, base: str, **extra: Any) -> dict[str, Any]:
    return {
        **extra,
        "physicalLocation": {
            "artifactLocation": {"uri": uri(path), "uriBaseId": base},
            "region": {"startLine": max(line, 1)},
        },
    }


def _split(site: str) -> tuple[str, int]:
    path, _, line = site.rpartition(":")
    return (path, int(line)) if path and line.isdigit() else (site, 1)


def _result(
    rule: Rule,
    severity: Severity,
    message: str,
    primary: dict[str, Any],
    sites: list[str],
    base: str,
    fingerprint: dict[str, str],
    properties: dict[str, Any],
    accepted: str = "",
) -> dict[str, Any]:
    related = [_location(*_split(site), base, id=i) for i, site in enumerate(sites[:_MAX_SITES], start=1)]
    links = ", ".join(f"[{escape(site)}]({i})" for i, site in enumerate(sites[:_MAX_SITES], start=1))
    more = f" and {len(sites) - _MAX_SITES} more" if len(sites) > _MAX_SITES else ""
    text = escape(message) + (f" (at {links}{more})" if links else "")
    result: dict[str, Any] = {
        "ruleId": rule.value,
        "ruleIndex": list(Rule).index(rule),
        "level": _LEVELS[severity],
        "message": {"text": text},
        "locations": [primary],
        "partialFingerprints": fingerprint,
        "properties": properties,
    }
    if related:
        result["relatedLocations"] = related
    if accepted:  # accepted in pairs.toml: shown as suppressed, with the reason
        result["suppressions"] = [{"kind": "external", "justification": accepted}]
    return result


def _log(results: list[dict[str, Any]], bases: dict[str, Any] | None = None, vcs: list[Any] | None = None) -> str:
    run: dict[str, Any] = {"tool": {"driver": _driver()}, "results": results, "columnKind": "utf16CodeUnits"}
    if bases:
        run["originalUriBaseIds"] = bases
    if vcs:
        run["versionControlProvenance"] = vcs
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2) + "\n"


# -- check: one consumer folder against one provider -----------------------------------------


def render_check(result: CheckResult) -> str:
    """A check's findings; paths are relative to the consumer folder, which code scanning
    finds when the log is uploaded from it (`atompin check . ../vllm`)."""
    results = []
    fingerprint = _Fingerprints()
    for f in result.findings:
        sites = [str(s) for s in f.sites]
        primary = _location(*_split(sites[0]), "%SRCROOT%") if sites else _location(".", 1, "%SRCROOT%")
        results.append(
            _result(
                f.rule,
                f.severity,
                f"{f.symbol}: {f.message}",
                primary,
                sites[1:],
                "%SRCROOT%",
                # the consumer's label is a path, which differs between checkouts: not in the fingerprint
                fingerprint(f.severity.value, f"->{result.package}", f.rule.value, f.symbol),
                {"package": result.package},
                f.accepted,
            )
        )
    return _log(results)


# -- lock: every pair, anchored on pairs.toml ----------------------------------------------------


def pair_lines(text: str) -> dict[str, int]:
    """The line of each `[[pairs]]` table's `name = "..."` in a manifest's text."""
    out: dict[str, int] = {}
    in_pairs = False
    for number, line in enumerate(text_lines(text), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            in_pairs = stripped.replace(" ", "") == "[[pairs]]"
        match = re.match(r'name\s*=\s*"((?:[^"\\]|\\.)*)"', stripped) if in_pairs else None
        if match:
            out.setdefault(match.group(1), number)
    return out


def _manifest_uri(manifest: str) -> str:
    path = Path(manifest)
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.name


def browse_uri(repo: str, commit: str, manifest_dir: str) -> dict[str, Any]:
    """An originalUriBaseIds entry: the component's files at `commit`, as a URI ending in "/"."""
    github = re.match(r"^(?:https://|ssh://git@|git@)(github\.com|gitlab\.com)[/:]([^/]+/[^/]+?)(?:\.git)?/?$", repo)
    if github:
        host, name = github.groups()
        middle = "/-/blob/" if host == "gitlab.com" else "/blob/"
        return {"uri": f"https://{host}/{name}{middle}{commit}/"}
    if is_local(repo) and not repo.startswith("file://"):
        where = Path(repo) if Path(repo).is_absolute() else Path(manifest_dir) / repo
        try:
            rel = where.resolve().relative_to(Path.cwd().resolve()).as_posix()
            return {"uri": uri(rel.rstrip("/") + "/") if rel != "." else "./", "uriBaseId": "%SRCROOT%"}
        except ValueError:
            return {"uri": where.resolve().as_uri() + "/"}
    return {"uri": repo.rstrip("/") + "/"}


def repository_uri(repo: str) -> str | None:
    """The repository as an absolute URI (for versionControlProvenance), or None for a local path."""
    github = re.match(r"^(?:ssh://)?git@([^:/]+)[:/](.+?)/?$", repo)
    if github:
        return f"https://{github.group(1)}/{github.group(2)}"
    if is_local(repo) and not repo.startswith("file://"):
        return None
    return repo


def _base_id(component: str, commit: str) -> str:
    return f"{component.upper()}@{commit[:12]}"


def _consumer(pair: LockedPair, check: str) -> str | None:
    name = check.partition("->")[0]
    return name if check != "pair" and name in pair.components else None


def render_lock(lock: Lock, manifest: str = "pairs.toml") -> str:
    """Lock findings, each anchored on its pair's line of the manifest, with the consumer's
    sites as related locations in the component's repository at the locked commit."""
    try:
        lines = pair_lines(read_text(Path(manifest), "manifest"))
    except InputError:  # the lock was read: its findings are still worth reporting, unanchored
        lines = {}
    manifest_uri = _manifest_uri(manifest)
    manifest_dir = os.path.dirname(os.path.abspath(manifest))
    bases: dict[str, Any] = {}
    vcs: list[dict[str, Any]] = []
    results = []
    fingerprint = _Fingerprints()
    for pair in lock.pairs:
        primary = _location(manifest_uri, lines.get(pair.name, 1), "%SRCROOT%")
        for f in pair.findings:
            consumer = _consumer(pair, f.check)
            base = "%SRCROOT%"
            if consumer is not None:
                comp = pair.components[consumer]
                base = _base_id(consumer, comp.commit)
                if base not in bases:
                    bases[base] = {
                        **browse_uri(comp.repo, comp.commit, manifest_dir),
                        "description": {"text": f"{consumer} at {comp.commit} ({comp.repo})"},
                    }
                    repository = repository_uri(comp.repo)
                    if repository:
                        vcs.append(
                            {"repositoryUri": repository, "revisionId": comp.commit, "mappedTo": {"uriBaseId": base}}
                        )
            results.append(
                _result(
                    f.rule,
                    f.severity,
                    f"{pair.name}: {f.symbol}: {f.message}",
                    primary,
                    f.sites if consumer is not None else [],
                    base,
                    fingerprint(f.severity.value, pair.name, f.check, f.rule.value, f.symbol),
                    {"pair": pair.name, "check": f.check, "symbol": f.symbol},
                    f.accepted,
                )
            )
    return _log(results, bases, vcs)
