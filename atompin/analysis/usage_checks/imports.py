"""Imports: does every import the consumer makes of the provider resolve?"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from atompin.analysis.baseline_failures import ImportFailure
from atompin.analysis.conditions import Reach
from atompin.analysis.provider import Resolution
from atompin.analysis.usage import Condition, Guard, ImportGroup, ImportUse, Ref
from atompin.analysis.usage_checks.common import at_baseline_too, via_of
from atompin.model import Alternative, Rule, Severity, Site, Status

if TYPE_CHECKING:
    from atompin.analysis.checks import UsageChecker


class ImportChecks:
    """Imports: does every import the consumer makes of the provider resolve?"""

    # Set here, made in `UsageChecker.__init__` (declared so the type is that one).
    _left_ladders: set[tuple[str, Ref]] | None
    _probes: dict[str, ImportGroup] | None

    def _alternative(self: UsageChecker, uses: list[ImportUse]) -> tuple[Status, list[tuple[ImportUse, Resolution]]]:
        # An import under a branch that cannot run here (`else:` of a true gate) is not tried.
        resolved = [(u, self.resolve(u.ref)) for u in uses if self.judge(u.when).reach is not Reach.DEAD]
        statuses = {res.status for _, res in resolved}
        if statuses <= {Status.FOUND}:
            return Status.FOUND, resolved
        if Status.MISSING in statuses:
            return Status.MISSING, resolved
        return Status.UNKNOWN, resolved

    def _group(self: UsageChecker, group: ImportGroup) -> None:
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
                    severity, message = self._failed_import(group, use, res)  # an error raises
                    self.findings.add(
                        Rule.UNRESOLVED_IMPORT, severity, self.symbol(use.ref), [use.site], message, stops=[use.site]
                    )
                    self._note_failure_at_baseline(group, [[use.ref]], use.site)
            return
        alternatives = tuple(
            Alternative(
                " + ".join(self.symbol(u.ref) for u, _ in resolved),
                tuple(sorted({u.site for u, _ in resolved})),
                status,
            )
            for status, resolved in judged
        )
        sites = sorted({u.site for _, resolved in judged for u, _ in resolved})  # the imports tried here
        missing = "; ".join(res.reason for _, resolved in judged for _, res in resolved if res.status is Status.MISSING)
        symbol = alternatives[0].symbol
        where = f"{group.path}:{group.line}"
        n = len(group.alternatives)
        if not group.fallback or group.exits:
            end = f"its handler {group.fallback}" if group.exits else "nothing catches it: the import raises"
            message = f"every alternative of the import ladder at {where} fails ({n} tried: {missing}) and {end}"
            severity = Severity.ERROR
            tried = [[u.ref for u, _ in resolved] for _, resolved in judged]
            if self._fails_at_baseline(tried, group.path, group.when):
                severity, message = Severity.WARNING, f"{message}; {at_baseline_too()}"
            # Raised, or the handler exits: the process stops either way.
            self.findings.add(Rule.UNRESOLVED_IMPORT, severity, symbol, sites, message, alternatives, stops=sites)
            if not group.exits:
                self._note_failure_at_baseline(group, tried, sites[0])
            return
        # The installer's patches after the ladder: never made when its fallback returns.
        in_function = [p for p in self.usage.patches if p.site.path == group.path and p.function == group.function]
        lost = [p for p in in_function if p.site.line > group.line]
        if lost and group.function and "return" in group.fallback:
            # Patches that are alternatives of one another (one name of several) are one patch.
            by_group: dict[str, set[str]] = {}
            for i, p in enumerate(lost):
                by_group.setdefault(p.alternative_group or str(i), set()).add(self.symbol(p.owner[0].attr(p.attr)))
            names = ", ".join(sorted(" or ".join(sorted(each)) for each in by_group.values()))
            message = (
                f"the import ladder at {where} fails ({missing}) and the installer {group.function}() "
                f"{group.fallback}: {len(by_group)} patch(es) are never installed: {names}"
            )
            severity = Severity.ERROR
            if self._fails_at_baseline(
                [[u.ref for u, _ in resolved] for _, resolved in judged], group.path, group.when
            ):
                # The installer returned at the baseline too: its patches were never made there either.
                severity, message = Severity.WARNING, f"{message}; {at_baseline_too()}"
            self.findings.add(Rule.UNRESOLVED_IMPORT, severity, symbol, sites, message, alternatives)
            return
        message = f"degraded: the import at {where} fails ({missing}); the fallback {group.fallback}"
        self.findings.add(Rule.UNRESOLVED_IMPORT, Severity.WARNING, symbol, sites, message, alternatives)

    def _failed_import(self: UsageChecker, group: ImportGroup, use: ImportUse, res: Resolution) -> tuple[Severity, str]:
        """How bad an import that is not a ladder's is when it fails: an error, unless a feature test
        of the consumer, a try around every call of its function, or the baseline says that code
        does not run here."""
        fails = f"{res.reason}; the import raises ImportError{via_of(use)}"
        probe = self._probe(use.ref) if group.function else None
        if probe is not None:
            return Severity.WARNING, (
                f"{res.reason}; the import in {group.function}() raises ImportError{via_of(use)}, but the "
                f"consumer tests for it at {probe.path}:{probe.line} (when it fails, the handler "
                f"{probe.fallback}): the function presumably runs only where that test passed"
            )
        tested = self._module_probe(use.ref.module) if group.function else None
        if tested is not None:
            return Severity.WARNING, (
                f"{res.reason}; the import in {group.function}() raises ImportError{via_of(use)}, but the "
                f"consumer tests whether the provider has {use.ref.module} at {tested.site} (`{tested.text}`): "
                "the function presumably runs only where that test passes"
            )
        caught = self.usage.caught_calls.get(f"{group.path}:{group.function}") if group.function else None
        if caught is not None:
            return Severity.WARNING, (
                f"{res.reason}; the import in {group.function}() raises ImportError{via_of(use)}, but every "
                f"call of {group.function}() is inside a try that catches it ({caught}): what the function "
                "would do is skipped there"
            )
        if self._fails_at_baseline([[use.ref]], use.site.path, (*group.when, *use.when)):
            return Severity.WARNING, f"{fails}; {at_baseline_too()}"
        return Severity.ERROR, fails

    def _note_failure_at_baseline(self: UsageChecker, group: ImportGroup, tried: list[list[Ref]], site: Site) -> None:
        """Keep an import that makes its module stop at the baseline (`baseline_failures`): at the
        top level, under no branch that may not run there, failing there too (`_fails_at_baseline`)."""
        if group.function or self.baseline is None or not self.baseline.runs(group.when):
            return
        if self._fails_at_baseline(tried, site.path, group.when):
            self.import_failures.append(ImportFailure(site, self.symbol(tried[0][0])))

    def _fails_at_baseline(
        self: UsageChecker, tried: list[list[Ref]], path: str, when: Sequence[Condition] = ()
    ) -> bool:
        """Does every alternative of an import (the names each imports; one name for a plain import
        or an attribute read) fail at the baseline too, one of its names missing there (not unknown)?
        Then the consumer, which works against the provider it was written for, does not run it
        there. Not for code that did not run there (`Baseline.kept_from`): that says nothing of it.
        vllm-spyre 1.10's ladder for the pooling runner imports `pooler_for_classify`, which vLLM
        has, beside `get_cross_encoder_act_fn`, which it has lacked since before the 0.22 baseline."""
        if self.baseline is None or not tried or self.baseline.kept_from(path, when):
            return False
        index = self.baseline.index
        return all(any(index.resolve(r.module, r.path).status is Status.MISSING for r in refs) for refs in tried)

    def _module_probe(self: UsageChecker, module: str) -> Condition | None:
        """The first test of whether the provider has `module` (`find_spec`), when the consumer
        makes one: vllm-spyre's `_setup_profiler` returns early unless
        `importlib.util.find_spec("vllm.profiler.wrapper")` finds it, then calls the method that
        imports from it."""
        probes = [c for c in self.usage.module_probes if c.refs and c.refs[0].module == module and not c.refs[0].path]
        return min(probes, key=lambda c: (c.site.path, c.site.line), default=None)

    def _probe(self: UsageChecker, ref: Ref) -> ImportGroup | None:
        """The first feature test (`guards.feature_test`: a function that only tries the import and
        returns whether it worked) that imports `ref`, or the module `ref` is in; None if none does."""
        if self._probes is None:
            self._probes = {}
            for group in sorted(self.usage.groups, key=lambda g: (g.path, g.line)):
                if group.ladder and group.feature_test:
                    for use in (u for alternative in group.alternatives for u in alternative):
                        self._probes.setdefault(use.ref.dotted, group)
        return self._probes.get(ref.dotted) or self._probes.get(ref.module)

    def _attribute(self: UsageChecker, choices: tuple[Ref, ...], site: Site, guard: Guard, function: str = "") -> None:
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
        if self._import_left(site.path, ref):
            return
        if guard is Guard.GETATTR_DEFAULT:
            # `getattr(X, "n", default)` probes for a name: silent when it is gone, worth a word only
            # where the release the consumer was written for had it (it now always takes the default).
            if self.baseline is not None and self.baseline.index.resolve(ref.module, ref.path).status is Status.FOUND:
                message = (
                    f"{res.reason}, which the baseline had: getattr(..., default) here now always gives the "
                    "default, silently"
                )
                self.findings.add(Rule.UNRESOLVED_IMPORT, Severity.WARNING, self.symbol(ref), [site], message)
            return
        severity = Severity.ERROR if guard in (Guard.NONE, Guard.REQUIRED) else Severity.WARNING
        if guard is Guard.REQUIRED:
            message = f"{res.reason}; the `if not hasattr(...): raise` check here raises"
        else:
            effect = "raises AttributeError" if guard is Guard.NONE else f"is skipped ({guard.value})"
            message = f"{res.reason}; the access {effect}"
        if severity is Severity.ERROR and self._fails_at_baseline([[ref]], site.path):
            severity, message = Severity.WARNING, f"{message}; {at_baseline_too()}"  # as an import's
        elif severity is Severity.ERROR and (tested := self._tested_in(site.path, function)):
            severity = Severity.WARNING
            message += (
                f", but {function}() reads {tested}, which the consumer tests for elsewhere (getattr with a "
                "default, or hasattr) and this provider lacks: the function presumably runs only where that test passes"
            )
        raises = [site] if guard in (Guard.NONE, Guard.REQUIRED) else []
        self.findings.add(Rule.UNRESOLVED_IMPORT, severity, self.symbol(ref), [site], message, stops=raises)

    def _import_left(self: UsageChecker, path: str, missing: Ref) -> bool:
        """Is what is missing the import itself, made by a ladder in `path` whose handler leaves, or
        defines a stand-in for it? Then the use runs only when an alternative imported, or reaches
        the stand-in, and the ladder's finding is the one to report."""
        if self._left_ladders is None:
            self._left_ladders = {
                (group.path, use.ref)
                for group in self.usage.groups
                if group.ladder and group.leaves
                for alternative in group.alternatives
                for use in alternative
            }
            self._left_ladders |= {(group.path, ref) for group in self.usage.groups for ref in group.stand_ins}
        module = Ref(missing.module, ())  # `import a.b as m` then `m.x`: the module is what is gone
        return (path, missing) in self._left_ladders or (
            (path, module) in self._left_ladders and self.resolve(module).status is Status.MISSING
        )

    def _unknown(self: UsageChecker, symbol: str, res: Resolution, sites: list[Site]) -> None:
        if res.rule is None:
            return
        severity = Severity.WARNING if res.rule is Rule.UNPARSEABLE else Severity.INFO
        self.findings.add(res.rule, severity, symbol, sites, f"unknown, not missing: {res.reason}")
