"""Judge what the consumer uses against the provider index: usage in, findings out.

`UsageChecker.run` is the entry point. This module holds how a name is resolved
and which conditions a use runs under, the driver and the counts; the checks
themselves are in `atompin.analysis.usage_checks`, one kind each: `imports`
(unresolved-import and the import ladders), `patches` (missing-patch-target,
patch-addition, dynamic-target, what a patch no longer does) and `signatures`
(arity-drift: calls, replacements and handovers against the provider's
signatures); `state` keeps the findings as they are made. Rule names are
stable (`atompin.model.Rule`).
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace

from atompin.analysis.baseline import Baseline
from atompin.analysis.baseline_failures import ImportFailure
from atompin.analysis.callsites import CallerSearch
from atompin.analysis.conditions import LIVE, Judgement, Reach, judge
from atompin.analysis.gates import evaluate
from atompin.analysis.members import kept_false
from atompin.analysis.name_sites import NameSearch
from atompin.analysis.own import ConsumerOwn
from atompin.analysis.provider import ClassRef, ProviderIndex, Resolution
from atompin.analysis.usage import Condition, ConsumerUsage, Guard, ImportGroup, PatchSite, ReadKind, Ref, VersionAssert
from atompin.analysis.usage_checks.imports import ImportChecks
from atompin.analysis.usage_checks.patches import PatchChecks
from atompin.analysis.usage_checks.signatures import SignatureChecks
from atompin.analysis.usage_checks.state import BaselinePatches, Findings
from atompin.model import Finding, Rule, Severity, Site, Status, Summary


def _patched_read(
    choices: tuple[Ref, ...], patched: set[tuple[tuple[Ref, ...], str]]
) -> tuple[tuple[Ref, ...], str] | None:
    """The patched attribute (owner, name) an attribute chain reads, itself or on the way to a
    deeper name (`original = X.f` then `original.__get__`: reading X.f is what raises first)."""
    for length in range(min(len(r.path) for r in choices), 0, -1):
        key = (tuple(Ref(r.module, r.path[: length - 1]) for r in choices), choices[0].path[length - 1])
        if key in patched:
            return key
    return None


class UsageChecker(ImportChecks, PatchChecks, SignatureChecks):
    """Resolve every use in a `ConsumerUsage` against a `ProviderIndex`."""

    def __init__(
        self,
        usage: ConsumerUsage,
        index: ProviderIndex,
        version: str | None = None,
        baseline: Baseline | None = None,
        in_consumer: Callable[[str], Resolution] | None = None,
        consumer_mentions: Callable[[str], bool] = lambda word: True,
        names: NameSearch | None = None,
        callers: CallerSearch | None = None,
        platform: str | None = None,
    ) -> None:
        """`version`: the provider's, for version gates; `baseline`: the provider the consumer was
        written against (its version for the version gates of calls judged there); `in_consumer` resolves "module:qualname" in the consumer's own tree;
        `consumer_mentions` says whether the scanned consumer files' text holds a word; `names`:
        the provider's name search (its identifiers pick the files the caller search reads);
        `callers`: the provider's caller search, when one was started already (made here otherwise);
        `platform`: the one the code runs on, for its tests of the platform (None: any)."""
        self.usage = usage
        self.platform = platform
        self.index = index
        self.version = version
        self.baseline = baseline
        self.in_consumer = in_consumer
        self.consumer_mentions = consumer_mentions
        self.findings = Findings()
        # Top-level imports that raise at the baseline too: what follows them never runs there.
        self.import_failures: list[ImportFailure] = []
        # Patches installing under a name the baseline had and nothing reads any more: what they
        # install runs nowhere through them (`uncalled.UncalledFunctions`).
        self.idle_installs: set[Site] = set()
        self._memo: dict[Ref, Resolution] = {}
        self._raw: dict[Ref, Resolution] = {}
        self._read_kinds = usage.read_kinds()
        self.callers = callers or CallerSearch(index, names, platform)
        self._baseline_callers: CallerSearch | None = None  # see `_made_at_baseline`
        self._baseline_patches: BaselinePatches | None = None  # see `_replaced_at_baseline`
        # The baseline's files read by `_inert_at_baseline`: the names searched, each file's text
        # and syntax tree (None: it does not parse), each read once.
        self._baseline_words: set[str] | None = None
        self._baseline_texts: dict[str, bytes] = {}
        self._baseline_trees: dict[str, ast.Module | None] = {}
        self._flags_off: dict[tuple[str, str], bool] = {}  # see `_kept_false`
        self._caller_names: set[str] | None = None
        self._not_run: dict[tuple[tuple[str, str], ClassRef | None], str] = {}  # see `_why_not_run`
        self._left_ladders: set[tuple[str, Ref]] | None = None  # see `_import_left`
        self._probes: dict[str, ImportGroup] | None = None  # see `_probe`
        self._tested: dict[tuple[str, str], str] | None = None  # see `_tested_in`
        # Built before the variants are judged: a `hasattr` test among their conditions is looked
        # up through `resolve`, which asks it what the consumer puts there itself.
        self.own = ConsumerOwn.build(usage, index, self._resolve_raw, self._read_kinds)
        running = [self._running_variant(p) for p in usage.patches]
        if running != usage.patches:  # a replacement defined once per release: the one made here
            self.usage = usage = replace(usage, patches=running)
            self.own = ConsumerOwn.build(usage, index, self._resolve_raw, self._read_kinds)

    def _running_variant(self, patch: PatchSite) -> PatchSite:
        """`patch` with the replacement defined under conditions that hold here, when its name is
        defined more than once (one definition per release, each under its version gate): the
        first that runs, as the name holds it at run time. Unchanged when none is decided to run."""
        for variant in patch.variants:
            if self.judge(variant.when).reach is Reach.LIVE:
                return replace(patch, replacement=variant.signature)
        return patch

    def _resolve_raw(self, ref: Ref) -> Resolution:
        if ref not in self._raw:
            self._raw[ref] = self.index.resolve(ref.module, ref.path)
        return self._raw[ref]

    def resolve(self, ref: Ref) -> Resolution:
        """What `ref` is at the provider; a name the consumer itself puts there is found (with no target)."""
        if ref not in self._memo:
            res = self._resolve_raw(ref)
            if res.status is Status.MISSING:
                site = self.own.owns(ref, self._resolve_raw)
                if site is not None:
                    res = Resolution(Status.FOUND, res.symbol, reason=f"the consumer's own, made at {site}")
            self._memo[ref] = res
        return self._memo[ref]

    def judge(self, when: Sequence[Condition]) -> Judgement:
        """Can a use under these conditions run at this provider?"""
        if not when:
            return LIVE
        takes = self.index.takes
        return judge(
            when,
            self.version,
            lambda ref: self.resolve(ref).status,
            self._kept_false,
            lambda r, n: takes(r.module, r.path, n),
            self.platform,
        )

    def _kept_false(self, owner: str, attr: str) -> bool:
        """`members.kept_false`, once per (class, attribute)."""
        key = (owner, attr)
        if key not in self._flags_off:
            self._flags_off[key] = kept_false(self.hierarchy, owner, attr)
        return self._flags_off[key]

    def _judged(self, when: Sequence[Condition]) -> bool:
        """Set the judgement findings of the next use get; False when the use cannot run here."""
        self.findings.judgement = self.judge(when)
        return self.findings.judgement.reach is not Reach.DEAD

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
        self._read_functions: dict[Site, str] = {}  # the function each of those reads is in
        # Attributes the consumer sets to a literal somewhere (`parallel_state._SP = None`, a reset
        # or a declaration): its own state, so its other stores of them are additions too.
        self._set_to_literal = {(p.owner, p.attr) for p in self.usage.patches if p.literal_value and not p.declared}
        for group in self.usage.groups:
            if self._judged(group.when):
                self._group(group)
        self.findings.judgement = LIVE
        for path, line, error in self.usage.unparseable:
            message = f"{path} does not parse ({error}); what it uses of the provider is unknown"
            self.findings.add(Rule.UNPARSEABLE, Severity.WARNING, path, [Site(path, line)], message)
        if (first := self.usage.first_unread_helper) is not None:
            message = (
                f"the scan reached its bound on reading helpers again with what calls hand them: "
                f"{self.usage.unread_helpers} such read(s) were skipped, the first of {first}; what those "
                "helpers do with the provider objects handed to them is unknown, not checked"
            )
            self.findings.add(Rule.ANALYSIS_BOUND, Severity.WARNING, first.path, [first], message)
        self._attributes(patched)
        self._replacements_reads(patched)
        groups: dict[str, list[PatchSite]] = {}
        for patch in self.usage.patches:
            if patch.alternative_group:
                groups.setdefault(patch.alternative_group, []).append(patch)
        self._prime_callers()
        for patch in self.usage.patches:
            if self._judged(patch.when):
                self._patch(patch, groups.get(patch.alternative_group, []))
        for registration in self.usage.registrations:
            if self._judged(registration.when):
                self._registered_in_place(registration)
        for call in self.usage.calls:
            if self._judged(call.when):
                self._call_drift(call)
        for tripwire in self.usage.version_asserts:
            if self._judged(tripwire.when):
                self._version_assert(tripwire)
        self.findings.judgement = LIVE
        return self.findings.freeze()

    def _attributes(self, patched: set[tuple[tuple[Ref, ...], str]]) -> None:
        for use in self.usage.attributes:
            key = _patched_read(use.choices, patched)
            if key is not None:
                # (a probe with a default, `getattr(cls, name, None)`, is the patch's guard, not a read)
                if self.judge(use.when).reach is Reach.LIVE and use.guard is not Guard.GETATTR_DEFAULT:
                    self._original_reads.setdefault(key, []).append(use.site)
                    self._read_functions[use.site] = use.function
                continue  # the patch finding speaks for it
            if self._judged(use.when):
                self._attribute(use.choices, use.site, use.guard, use.function)
        self.findings.judgement = LIVE

    def _replacements_reads(self, patched: set[tuple[tuple[Ref, ...], str]]) -> None:
        """A replacement reading on its `self` a member the consumer patches onto the same class
        (`self._allocate_kv_cache_tensors(...)` in a replacement of `initialize_kv_cache_tensors`)
        reads that patch's value: one of the consumer's own reads of it."""
        for replacement in self.usage.contact.replacements:
            for attr, site in replacement.self_reads:
                key = (replacement.owner, attr)
                if key in patched and site not in self._original_reads.get(key, []):
                    self._original_reads.setdefault(key, []).append(site)

    def _tested_in(self, path: str, function: str) -> str:
        """A provider name the consumer tests for somewhere (`getattr(X, "n", default)`, `hasattr`),
        missing here, that `function` of `path` reads as it is: the function presumably runs only
        where that test passes (vllm-spyre calls its legacy profiler only when
        `getattr(envs, "VLLM_TORCH_PROFILER_DIR", None)` is set, and it reads that name and four
        more). Its symbol; "" when there is none."""
        if self._tested is None:
            probed = {
                ref.attr(read.attr)
                for read in self.usage.reads
                if read.kind in (ReadKind.DEFAULT, ReadKind.HASATTR)
                for ref in read.owner
            }
            self._tested = {}
            for use in self.usage.attributes:
                hit = next((ref for ref in use.choices if ref in probed), None) if use.guard is Guard.NONE else None
                if hit is not None and use.function and self.resolve(hit).status is Status.MISSING:
                    self._tested.setdefault((use.site.path, use.function), self.symbol(hit))
        return self._tested.get((path, function), "") if function else ""

    def _version_assert(self, tripwire: VersionAssert) -> None:
        """A module-level `assert <gate>` that is false at this provider: importing the module raises."""
        gate = tripwire.gate
        if gate.gate is None or evaluate(gate.gate, self.version) is not False:
            return
        message = (
            f"`{gate.text}` is false at {self.version}: importing {tripwire.module} raises AssertionError "
            "(the consumer refuses this provider version)"
        )
        self.findings.add(Rule.VERSION_ASSERT, Severity.ERROR, gate.text, [gate.site], message, stops=[gate.site])

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
