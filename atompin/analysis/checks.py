"""Judge what the consumer uses against the provider index: usage in, findings out.

Rules (stable names, see `atompin.model.Rule`): unresolved-import,
missing-patch-target, patch-addition, dynamic-target, unparseable.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from atompin.analysis.arity import call_problem, checkable, replacement_problem
from atompin.analysis.provider import ClassRef, ProviderIndex, Resolution, TargetKind
from atompin.analysis.usage import (
    CallUse,
    ConsumerUsage,
    Guard,
    ImportGroup,
    ImportUse,
    PatchSite,
    Ref,
    effective_guard,
)
from atompin.model import Alternative, Finding, Rule, Severity, Site, Status, Summary

# Class decorators that write the class's __init__: its signature is not in the source.
_GENERATED_INIT = {"dataclass", "define", "frozen", "mutable", "s", "attrs", "dataclass_transform"}


@dataclass
class _Draft:
    """Findings of one rule and symbol, merged across sites before they are frozen."""

    rule: Rule
    severity: Severity
    symbol: str
    message: str
    sites: set[Site] = field(default_factory=set)
    alternatives: tuple[Alternative, ...] = ()


class _Findings:
    def __init__(self) -> None:
        self._drafts: dict[tuple[str, str, str], _Draft] = {}

    def add(
        self,
        rule: Rule,
        severity: Severity,
        symbol: str,
        sites: list[Site] | tuple[Site, ...],
        message: str,
        alternatives: tuple[Alternative, ...] = (),
        key: str = "",
    ) -> None:
        k = (rule.value, symbol, key)
        draft = self._drafts.get(k)
        if draft is None:
            draft = self._drafts[k] = _Draft(rule, severity, symbol, message, alternatives=alternatives)
        elif severity.rank < draft.severity.rank:
            draft.severity, draft.message = severity, message
        draft.sites.update(sites)

    def freeze(self) -> list[Finding]:
        out = [
            Finding(d.rule, d.severity, d.symbol, tuple(sorted(d.sites)), d.message, d.alternatives)
            for d in self._drafts.values()
        ]
        return sorted(out, key=Finding.sort_key)


class UsageChecker:
    """Resolve every use in a `ConsumerUsage` against a `ProviderIndex`."""

    def __init__(self, usage: ConsumerUsage, index: ProviderIndex) -> None:
        self.usage = usage
        self.index = index
        self.findings = _Findings()
        self._memo: dict[Ref, Resolution] = {}
        self._read_kinds = usage.read_kinds()

    def resolve(self, ref: Ref) -> Resolution:
        if ref not in self._memo:
            self._memo[ref] = self.index.resolve(ref.module, ref.path)
        return self._memo[ref]

    def symbol(self, ref: Ref) -> str:
        return self.index.normalize(ref.module, ref.path)

    def first(self, choices: tuple[Ref, ...]) -> tuple[Ref, Resolution]:
        """The choice that wins at runtime: the first found, else the first unknown, else the first."""
        resolved = [(ref, self.resolve(ref)) for ref in choices]
        for status in (Status.FOUND, Status.UNKNOWN):
            for ref, res in resolved:
                if res.status is status:
                    return ref, res
        return resolved[0]

    # -- driver -----------------------------------------------------------------

    def run(self) -> list[Finding]:
        """Every finding about the consumer's imports, attribute chains, patches and calls."""
        patched = {(p.owner, p.attr) for p in self.usage.patches}
        # Reads of a patched attribute (the wrapper keeping the original) are reported
        # with the patch: when the target is gone, the read is what raises first.
        self._original_reads: dict[tuple[tuple[Ref, ...], str], list[Site]] = {}
        for group in self.usage.groups:
            self._group(group)
        for path, line, error in self.usage.unparseable:
            message = f"{path} does not parse ({error}); what it uses of the provider is unknown"
            self.findings.add(Rule.UNPARSEABLE, Severity.WARNING, path, [Site(path, line)], message)
        for use in self.usage.attributes:
            owner = tuple(Ref(r.module, r.path[:-1]) for r in use.choices)
            key = (owner, use.choices[0].path[-1] if use.choices[0].path else "")
            if key in patched:
                self._original_reads.setdefault(key, []).append(use.site)
                continue  # the patch finding speaks for it
            self._attribute(use.choices, use.site, use.guard)
        groups: dict[str, list[PatchSite]] = {}
        for patch in self.usage.patches:
            if patch.alternative_group:
                groups.setdefault(patch.alternative_group, []).append(patch)
        for patch in self.usage.patches:
            self._patch(patch, groups.get(patch.alternative_group, []))
        for call in self.usage.calls:
            self._call_drift(call)
        return self.findings.freeze()

    # -- imports ----------------------------------------------------------------

    def _alternative(self, uses: list[ImportUse]) -> tuple[Status, list[tuple[ImportUse, Resolution]]]:
        resolved = [(u, self.resolve(u.ref)) for u in uses]
        statuses = {res.status for _, res in resolved}
        if statuses == {Status.FOUND}:
            return Status.FOUND, resolved
        if Status.MISSING in statuses:
            return Status.MISSING, resolved
        return Status.UNKNOWN, resolved

    def _group(self, group: ImportGroup) -> None:
        judged = [self._alternative(alt) for alt in group.alternatives]
        if any(status is Status.FOUND for status, _ in judged):
            return
        if any(status is Status.UNKNOWN for status, _ in judged):
            for status, resolved in judged:
                if status is Status.UNKNOWN:
                    for use, res in resolved:
                        self._unknown(self.symbol(use.ref), res, [use.site])
            return
        if not group.ladder:
            for use, res in judged[0][1]:
                if res.status is Status.MISSING:
                    message = f"{res.reason}; the import raises ImportError{_via(use)}"
                    self.findings.add(Rule.UNRESOLVED_IMPORT, Severity.ERROR, self.symbol(use.ref), [use.site], message)
            return
        alternatives = tuple(
            Alternative(
                " + ".join(self.symbol(u.ref) for u, _ in resolved),
                tuple(sorted({u.site for u, _ in resolved})),
                status,
            )
            for status, resolved in judged
        )
        sites = sorted({u.site for alt in group.alternatives for u in alt})
        missing = "; ".join(res.reason for _, resolved in judged for _, res in resolved if res.status is Status.MISSING)
        symbol = alternatives[0].symbol
        where = f"{group.path}:{group.line}"
        n = len(group.alternatives)
        if not group.fallback:
            message = (
                f"every alternative of the import ladder at {where} fails ({n} tried: {missing}) "
                "and nothing catches it: the import raises"
            )
            self.findings.add(Rule.UNRESOLVED_IMPORT, Severity.ERROR, symbol, sites, message, alternatives)
            return
        # The installer's patches after the ladder: never made when its fallback returns.
        in_function = [p for p in self.usage.patches if p.site.path == group.path and p.function == group.function]
        lost = [p for p in in_function if p.site.line > group.line]
        if lost and group.function and "return" in group.fallback:
            names = ", ".join(sorted({self.symbol(p.owner[0].attr(p.attr)) for p in lost}))
            message = (
                f"the import ladder at {where} fails ({missing}) and the installer {group.function}() "
                f"{group.fallback}: {len(lost)} patch(es) are never installed: {names}"
            )
            self.findings.add(Rule.UNRESOLVED_IMPORT, Severity.ERROR, symbol, sites, message, alternatives)
            return
        message = f"degraded: the import at {where} fails ({missing}); the fallback {group.fallback}"
        self.findings.add(Rule.UNRESOLVED_IMPORT, Severity.WARNING, symbol, sites, message, alternatives)

    def _attribute(self, choices: tuple[Ref, ...], site: Site, guard: Guard) -> None:
        ref, res = self.first(choices)
        if res.status is Status.FOUND:
            return
        # Report the shortest prefix that is not found: that is what is gone (or unknown).
        for i in range(1, len(ref.path) + 1):
            prefix = Ref(ref.module, ref.path[:i])
            pres = self.resolve(prefix)
            if pres.status is not Status.FOUND:
                ref, res = prefix, pres
                break
        if res.status is Status.UNKNOWN:
            self._unknown(self.symbol(ref), res, [site])
            return
        severity = Severity.ERROR if guard is Guard.NONE else Severity.WARNING
        effect = "raises AttributeError" if guard is Guard.NONE else f"is skipped ({guard.value})"
        self.findings.add(
            Rule.UNRESOLVED_IMPORT, severity, self.symbol(ref), [site], f"{res.reason}; the access {effect}"
        )

    def _unknown(self, symbol: str, res: Resolution, sites: list[Site]) -> None:
        if res.rule is None:
            return
        severity = Severity.WARNING if res.rule is Rule.UNPARSEABLE else Severity.INFO
        self.findings.add(res.rule, severity, symbol, sites, f"unknown, not missing: {res.reason}")

    # -- patches ----------------------------------------------------------------

    def _patch(self, patch: PatchSite, alternatives: list[PatchSite]) -> None:
        owner_ref, owner = self.first(patch.owner)
        target = self.symbol(owner_ref.attr(patch.attr))
        reads = self._read_kinds.get((patch.owner, patch.attr), set())
        guard = effective_guard(patch, reads)
        if owner.status is Status.UNKNOWN:
            self._unknown(target, owner, [patch.site])
            return
        if owner.status is Status.MISSING or owner.target is None:
            if patch.guard is not Guard.GETATTR_DEFAULT:
                return  # the failing import or attribute access is reported where it happens
            message = f"the patched object is gone ({owner.reason}); {_effect(guard)}{_via(patch)}"
            self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.ERROR, target, [patch.site], message)
            return
        res = self.index.getattr(owner.target, patch.attr)
        if res.status is Status.FOUND:
            self._replacement_drift(patch, target, res)
            return
        if res.status is Status.UNKNOWN:
            self._unknown(target, res, [patch.site])
            return
        if patch.alternative_group and any(
            p is not patch and self.index.getattr(o.target, p.attr).found
            for p in alternatives
            for _, o in [self.first(p.owner)]
            if o.target is not None
        ):
            return  # a `for name in (...): ... break` loop: another name is patched instead
        if patch.literal_value or (not reads and guard in (Guard.NONE, Guard.TRY)):
            message = (
                f"adds an attribute the provider does not have ({res.reason}); nothing of the "
                "provider is replaced. If this was meant to replace a provider function, it has moved"
            )
            self.findings.add(Rule.PATCH_ADDITION, Severity.INFO, target, [patch.site], message)
            return
        read_sites = self._original_reads.get(patch.key(), [])
        message = f"{res.reason}; {_effect(guard)}{_via(patch)}"
        self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.ERROR, target, [patch.site, *read_sites], message)

    # -- signatures (arity-drift) -------------------------------------------------

    def _replacement_drift(self, patch: PatchSite, symbol: str, res: Resolution) -> None:
        original = res.target.signature if res.target is not None else None
        if patch.replacement is None or not checkable(original) or not checkable(patch.replacement):
            return
        assert original is not None
        problem = replacement_problem(original, patch.replacement)
        if problem:
            severity = Severity.ERROR if problem.definite else Severity.WARNING
            message = (
                f"the replacement does not fit the patched function: {problem.message}. "
                f"Original {original.render()}; replacement {patch.replacement.render()}"
            )
            self.findings.add(Rule.ARITY_DRIFT, severity, symbol, [patch.site], message)

    def _call_drift(self, call: CallUse) -> None:
        ref, res = self.first(call.choices)
        if not res.found or res.target is None:
            return
        target, bound = res.target, res.target.bound
        if target.kind is TargetKind.CLASS:
            if target.cls is not None and self._generates_init(target.cls):
                return  # a dataclass (or attrs class) writes its own __init__
            init = self.index.getattr(target, "__init__")
            if not init.found or init.target is None or init.target.kind is not TargetKind.FUNCTION:
                return
            target, bound = init.target, True
        if target.kind is not TargetKind.FUNCTION or not checkable(target.signature):
            return
        assert target.signature is not None
        problem = call_problem(target.signature, call.shape, bound)
        if problem:
            message = (
                f"the call {problem}: the provider has {target.symbol}{target.signature.render()}, "
                f"the call passes {call.shape.render()}"
            )
            self.findings.add(Rule.ARITY_DRIFT, Severity.ERROR, self.symbol(ref), [call.site], message)

    def _generates_init(self, ref: ClassRef) -> bool:
        """Is this class, or a base before the one that defines __init__, a generated-__init__ class?"""
        for node in self.index.mro(ref):
            if isinstance(node, str):
                return False
            info = self.index.class_info(node)
            if info is None:
                return False
            if any(d.split(".")[-1] in _GENERATED_INIT for d in info.decorators):
                return True
            if "__init__" in info.members:
                return False
        return False

    def sites_by_symbol(self) -> dict[str, list[Site]]:
        """Every consumer site, by the normalized symbol it reaches (imports, chains, patches, calls)."""
        out: dict[str, list[Site]] = {}
        for group in self.usage.groups:
            for alt in group.alternatives:
                for use in alt:
                    out.setdefault(self.symbol(use.ref), []).append(use.site)
        for attr in self.usage.attributes:
            out.setdefault(self.symbol(attr.choices[0]), []).append(attr.site)
        for call in self.usage.calls:
            out.setdefault(self.symbol(call.choices[0]), []).append(call.site)
        for patch in self.usage.patches:
            out.setdefault(self.symbol(patch.owner[0].attr(patch.attr)), []).append(patch.site)
        return out

    # -- counts -----------------------------------------------------------------

    def summary(self, findings: list[Finding], overrides: int = 0) -> Summary:
        """The counts of this usage, with `findings` (from every check of the edge) counted by rule."""
        uses = {(u.site, u.ref) for g in self.usage.groups for alt in g.alternatives for u in alt}
        symbols = {self.symbol(ref) for _, ref in uses}
        symbols.update(self.symbol(p.owner[0].attr(p.attr)) for p in self.usage.patches)
        by_rule = Counter(f.rule.value for f in findings)
        return Summary(
            import_sites=len(uses),
            symbols=len(symbols),
            groups=sum(1 for g in self.usage.groups if g.ladder),
            patch_sites=len({p.site for p in self.usage.patches}),
            patch_targets=len({self.symbol(p.owner[0].attr(p.attr)) for p in self.usage.patches}),
            references=len({(a.site, a.choices) for a in self.usage.attributes}),
            findings_by_rule=dict(sorted(by_rule.items())),
            overrides=overrides,
        )


def _effect(guard: Guard) -> str:
    if guard is Guard.NONE:
        return "unguarded: the installer raises AttributeError at start-up"
    return f"guarded ({guard.value}): the installer silently installs nothing and the provider's unpatched code runs"


def _via(item: ImportUse | PatchSite) -> str:
    return f" (reached through the helper call at {', '.join(map(str, item.via))})" if item.via else ""
