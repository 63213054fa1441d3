"""Judge what the consumer uses against the provider index: usage in, findings out.

Rules (stable names, see `atompin.model.Rule`): unresolved-import,
missing-patch-target, patch-addition, dynamic-target, unparseable.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from atompin.analysis.arity import (
    CallShape,
    Mismatch,
    as_called,
    binding_problem,
    binds_receiver,
    call_problem,
    checkable,
    describe_change,
    keywords_not_taken,
    launch_problem,
    render_shift,
    replacement_problem,
    same_kind,
    shifted_arguments,
    takes_anything,
    untakeable_keywords,
)
from atompin.analysis.baseline import Baseline
from atompin.analysis.baseline_failures import ImportFailure
from atompin.analysis.callsites import CallerSearch, ProviderCall, call_pattern, caller_key, searched_as
from atompin.analysis.conditions import LIVE, Judgement, Reach, judge
from atompin.analysis.gates import evaluate, is_older
from atompin.analysis.hierarchy import Hierarchy
from atompin.analysis.limits import parse_limited
from atompin.analysis.members import kept_false, subclass_may_hold
from atompin.analysis.name_sites import NameSearch, SiteKind, SiteReceiver
from atompin.analysis.names import quoted, word_pattern
from atompin.analysis.own import ConsumerOwn, installed_when_absent, is_addition
from atompin.analysis.patch_readers import FunctionKey, PatchedName, readers
from atompin.analysis.provider import ClassRef, ProviderIndex, Resolution, Target, TargetKind
from atompin.analysis.signature import Signature
from atompin.analysis.usage import (
    CallUse,
    Condition,
    ConditionKind,
    ConsumerUsage,
    Guard,
    ImportGroup,
    ImportUse,
    PatchSite,
    ReadKind,
    Ref,
    Registration,
    VersionAssert,
    effective_guard,
)
from atompin.model import Alternative, Finding, Rule, Severity, Site, Status, Summary


@dataclass
class _Draft:
    """Findings of one rule and symbol, merged across sites before they are frozen."""

    rule: Rule
    severity: Severity
    symbol: str
    message: str
    sites: set[Site] = field(default_factory=set)
    alternatives: tuple[Alternative, ...] = ()


def _binding_kind(sig: Signature) -> str:
    """How a function stored on a class binds, for a message."""
    if sig.is_staticmethod:
        return "a staticmethod"
    return "a classmethod" if sig.is_classmethod else "a plain function (a method: it binds the instance)"


def _at_baseline_too(how: str = "") -> str:
    """Said of a failure the baseline shares: not drift (the consumer works against the provider it
    was written for, so the code does not run there, or it shipped broken), a warning."""
    return (
        f"it fails at the baseline too{f' ({how})' if how else ''}: not a change since (code that does not run "
        "there, or that was broken there already)"
    )


@dataclass
class _BaselinePatches:
    """The consumer's patches as the baseline provider resolves them."""

    # (module, name) -> the patches that set a name on a provider module.
    installed: dict[tuple[str, str], list[PatchSite]] = field(default_factory=dict)
    # (owner symbol, name) -> the patches that replace a provider function with one of the
    # consumer's that never calls the original.
    without_original: dict[FunctionKey, list[PatchSite]] = field(default_factory=dict)


def _runs_with(other: PatchSite, patch: PatchSite) -> bool:
    """Does `other` run wherever `patch` does: in the same file and function, under conditions
    `patch` is under too? Inside an `if`, a try or a loop, only on the same side of the same
    `if`/`else` (other blocks cannot be told apart)."""
    same_place = other.site.path == patch.site.path and other.function == patch.function
    if not same_place or patch.when[: len(other.when)] != other.when:
        return False
    return not other.nested or (bool(other.branch) and other.branch == patch.branch and other.when == patch.when)


def _shape(sig: Signature) -> tuple[object, ...]:
    """What a call binds to in a signature: its parameters (names, kinds, defaults) and decorators."""
    return tuple((p.name, p.kind, p.has_default) for p in sig.params), sig.decorators


def _runs_init(patch: PatchSite) -> bool:
    """Is a class patched in a class's place when its module is imported (not for a while, inside a
    function)? Then it is judged by the two `__init__`s."""
    return patch.constructor and not (patch.function or patch.nested)


def _callable_run(index: ProviderIndex, target: Target | None) -> tuple[Target, bool] | None:
    """The function a call of `target` runs, with whether it is bound (a class runs its `__init__`),
    when its signature can judge the call; None for a class whose `__init__` a decorator writes
    unless it is a standard-library dataclass (`ProviderIndex.dataclass_init`), or no function
    with a checkable signature."""
    if target is None:
        return None
    bound = target.bound
    if target.kind is TargetKind.CLASS:
        made = index.namedtuple_new(target.cls) if target.cls is not None else None
        if made is not None:
            return Target(TargetKind.FUNCTION, f"{target.cls}.__new__", made, owner=target.cls), True
        if target.cls is not None and index.generates_init(target.cls):
            # A dataclass (or attrs class) writes its own __init__: read from the standard
            # library's fields, else not known.
            generated = index.dataclass_init(target.cls)
            if generated is None:
                return None
            return Target(TargetKind.FUNCTION, f"{target.cls}.__init__", generated, owner=target.cls), True
        init = index.getattr(target, "__init__")
        if not init.found or init.target is None:
            return None
        target, bound = init.target, True
    if target.kind is not TargetKind.FUNCTION or not checkable(target.signature):
        return None
    return target, bound


class _Findings:
    """The findings so far, one per rule, symbol and severity: a symbol whose sites fail in
    different ways (one import raises, another is caught) is told apart; a site said twice
    keeps the worse verdict only."""

    def __init__(self) -> None:
        self._drafts: dict[tuple[str, str, str, int], _Draft] = {}
        # What the conditions of the use being judged say (a fallback, an undecided version gate).
        self.judgement: Judgement = LIVE

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
        severity, message = self.judgement.adjust(severity, message)
        k = (rule.value, symbol, key, severity.rank)
        draft = self._drafts.get(k)
        if draft is None:
            draft = self._drafts[k] = _Draft(rule, severity, symbol, message, alternatives=alternatives)
        draft.sites.update(sites)

    def freeze(self) -> list[Finding]:
        worst: dict[tuple[str, str, str, Site], int] = {}
        for (rule, symbol, key, rank), d in self._drafts.items():
            for site in d.sites:
                at = (rule, symbol, key, site)
                worst[at] = min(worst.get(at, rank), rank)
        out = []
        for (rule, symbol, key, rank), d in self._drafts.items():
            sites = tuple(sorted(s for s in d.sites if worst[(rule, symbol, key, s)] == rank))
            if sites:
                out.append(Finding(d.rule, d.severity, d.symbol, sites, d.message, d.alternatives))
        return sorted(out, key=Finding.sort_key)


class UsageChecker:
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
    ) -> None:
        """`version`: the provider's, for version gates; `baseline`: the provider the consumer was
        written against (its version for the version gates of calls judged there); `in_consumer` resolves "module:qualname" in the consumer's own tree;
        `consumer_mentions` says whether the scanned consumer files' text holds a word; `names`:
        the provider's name search (its identifiers pick the files the caller search reads);
        `callers`: the provider's caller search, when one was started already (made here otherwise)."""
        self.usage = usage
        self.index = index
        self.version = version
        self.baseline = baseline
        self.in_consumer = in_consumer
        self.consumer_mentions = consumer_mentions
        self.findings = _Findings()
        # Top-level imports that raise at the baseline too: what follows them never runs there.
        self.import_failures: list[ImportFailure] = []
        # Patches installing under a name the baseline had and nothing reads any more: what they
        # install runs nowhere through them (`uncalled.UncalledFunctions`).
        self.idle_installs: set[Site] = set()
        self._memo: dict[Ref, Resolution] = {}
        self._raw: dict[Ref, Resolution] = {}
        self._read_kinds = usage.read_kinds()
        self.callers = callers or CallerSearch(index, names)
        self._baseline_callers: CallerSearch | None = None  # see `_made_at_baseline`
        self._baseline_patches: _BaselinePatches | None = None  # see `_replaced_at_baseline`
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
            when, self.version, lambda ref: self.resolve(ref).status, self._kept_false, lambda r, n: takes(r.module, r.path, n)
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
        self.findings.add(Rule.VERSION_ASSERT, Severity.ERROR, gate.text, [gate.site], message)

    # -- imports ----------------------------------------------------------------

    def _alternative(self, uses: list[ImportUse]) -> tuple[Status, list[tuple[ImportUse, Resolution]]]:
        # An import under a branch that cannot run here (`else:` of a true gate) is not tried.
        resolved = [(u, self.resolve(u.ref)) for u in uses if self.judge(u.when).reach is not Reach.DEAD]
        statuses = {res.status for _, res in resolved}
        if statuses <= {Status.FOUND}:
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
                    severity, message = self._failed_import(group, use, res)
                    self.findings.add(Rule.UNRESOLVED_IMPORT, severity, self.symbol(use.ref), [use.site], message)
                    self._note_failure_at_baseline(group, [use.ref], use.site)
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
            if self._imports_missing_at_baseline(
                [u.ref for _, resolved in judged for u, _ in resolved], group.path, group.when
            ):
                severity, message = Severity.WARNING, f"{message}; {_at_baseline_too()}"
            self.findings.add(Rule.UNRESOLVED_IMPORT, severity, symbol, sites, message, alternatives)
            if not group.exits:
                self._note_failure_at_baseline(group, [u.ref for _, resolved in judged for u, _ in resolved], sites[0])
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
            gone = [u.ref for _, resolved in judged for u, res in resolved if res.status is Status.MISSING]
            severity = Severity.ERROR
            if self._imports_missing_at_baseline(gone, group.path, group.when):
                # The installer returned at the baseline too: its patches were never made there either.
                severity, message = Severity.WARNING, f"{message}; {_at_baseline_too()}"
            self.findings.add(Rule.UNRESOLVED_IMPORT, severity, symbol, sites, message, alternatives)
            return
        message = f"degraded: the import at {where} fails ({missing}); the fallback {group.fallback}"
        self.findings.add(Rule.UNRESOLVED_IMPORT, Severity.WARNING, symbol, sites, message, alternatives)

    def _failed_import(self, group: ImportGroup, use: ImportUse, res: Resolution) -> tuple[Severity, str]:
        """How bad an import that is not a ladder's is when it fails: an error, unless a feature test
        of the consumer, a try around every call of its function, or the baseline says that code
        does not run here."""
        fails = f"{res.reason}; the import raises ImportError{_via(use)}"
        probe = self._probe(use.ref) if group.function else None
        if probe is not None:
            return Severity.WARNING, (
                f"{res.reason}; the import in {group.function}() raises ImportError{_via(use)}, but the "
                f"consumer tests for it at {probe.path}:{probe.line} (when it fails, the handler "
                f"{probe.fallback}): the function presumably runs only where that test passed"
            )
        tested = self._module_probe(use.ref.module) if group.function else None
        if tested is not None:
            return Severity.WARNING, (
                f"{res.reason}; the import in {group.function}() raises ImportError{_via(use)}, but the "
                f"consumer tests whether the provider has {use.ref.module} at {tested.site} (`{tested.text}`): "
                "the function presumably runs only where that test passes"
            )
        caught = self.usage.caught_calls.get(f"{group.path}:{group.function}") if group.function else None
        if caught is not None:
            return Severity.WARNING, (
                f"{res.reason}; the import in {group.function}() raises ImportError{_via(use)}, but every "
                f"call of {group.function}() is inside a try that catches it ({caught}): what the function "
                "would do is skipped there"
            )
        if self._imports_missing_at_baseline([use.ref], use.site.path, (*group.when, *use.when)):
            return Severity.WARNING, f"{fails}; {_at_baseline_too()}"
        return Severity.ERROR, fails

    def _note_failure_at_baseline(self, group: ImportGroup, refs: list[Ref], site: Site) -> None:
        """Keep an import that makes its module stop at the baseline (`baseline_failures`): at the
        top level, under no branch that may not run there, of names the baseline lacks too."""
        if group.function or self.baseline is None or not self.baseline.runs(group.when):
            return
        if self._imports_missing_at_baseline(refs, site.path, group.when):
            self.import_failures.append(ImportFailure(site, self.symbol(refs[0])))

    def _imports_missing_at_baseline(self, refs: list[Ref], path: str, when: Sequence[Condition] = ()) -> bool:
        """Is each of these imports (in the file at `path`) missing at the baseline too (not unknown
        there)? Then the consumer, which works against the provider it was written for, does not run
        them there. Not for code that did not run there (`Baseline.kept_from`): that says nothing
        of it."""
        if self.baseline is None or not refs or self.baseline.kept_from(path, when):
            return False
        return all(self.baseline.index.resolve(ref.module, ref.path).status is Status.MISSING for ref in refs)

    def _module_probe(self, module: str) -> Condition | None:
        """The first test of whether the provider has `module` (`find_spec`), when the consumer
        makes one: vllm-spyre's `_setup_profiler` returns early unless
        `importlib.util.find_spec("vllm.profiler.wrapper")` finds it, then calls the method that
        imports from it."""
        probes = [c for c in self.usage.module_probes if c.refs and c.refs[0].module == module and not c.refs[0].path]
        return min(probes, key=lambda c: (c.site.path, c.site.line), default=None)

    def _probe(self, ref: Ref) -> ImportGroup | None:
        """The first feature test (`guards.feature_test`: a function that only tries the import and
        returns whether it worked) that imports `ref`, or the module `ref` is in; None if none does."""
        if self._probes is None:
            self._probes = {}
            for group in sorted(self.usage.groups, key=lambda g: (g.path, g.line)):
                if group.ladder and group.feature_test:
                    for use in (u for alternative in group.alternatives for u in alternative):
                        self._probes.setdefault(use.ref.dotted, group)
        return self._probes.get(ref.dotted) or self._probes.get(ref.module)

    def _attribute(self, choices: tuple[Ref, ...], site: Site, guard: Guard, function: str = "") -> None:
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
        if severity is Severity.ERROR and self._imports_missing_at_baseline([ref], site.path):
            severity, message = Severity.WARNING, f"{message}; {_at_baseline_too()}"  # as an import's
        elif severity is Severity.ERROR and (tested := self._tested_in(site.path, function)):
            severity = Severity.WARNING
            message += (
                f", but {function}() reads {tested}, which the consumer tests for elsewhere (getattr with a "
                "default, or hasattr) and this provider lacks: the function presumably runs only where that test passes"
            )
        self.findings.add(Rule.UNRESOLVED_IMPORT, severity, self.symbol(ref), [site], message)

    def _import_left(self, path: str, missing: Ref) -> bool:
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
        if owner.found and owner.target is None:
            return  # an object of the consumer's own (a module it registered, an attribute it added)
        if owner.status is Status.MISSING or owner.target is None:
            if patch.guard is not Guard.GETATTR_DEFAULT:
                return  # the failing import or attribute access is reported where it happens
            message = f"the patched object is gone ({owner.reason}); {_effect(guard)}{_via(patch)}"
            later = self._came_after() if self._baseline_owner(patch) is not None else ""
            severity = Severity.WARNING if later else Severity.ERROR
            self.findings.add(Rule.MISSING_PATCH_TARGET, severity, target, [patch.site], message + later)
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
        read_sites = self._original_reads.get(patch.key(), [])
        # Reads only where the patch has run call the name it installs (`m.f = mine` here, `m.f(...)`
        # in the consumer's runner): they keep no original.
        elsewhere = bool(read_sites) and all(self._gets_installed(patch, site) for site in read_sites)
        if is_addition(patch, reads - {ReadKind.PLAIN} if elsewhere else reads) or patch.key() in self._set_to_literal:
            self._addition(patch, target, res, guard, read_sites if elsewhere else [])
            return
        message = f"{res.reason}; {_effect(guard)}{_via(patch)}"
        if not patch.declared and self._missing_at_baseline(patch):
            # Inert at the provider the consumer was written against too, where it works: a patch
            # for another release (vllm-ascend's `if hasattr(m, "f"): m.f = mine` for vLLM main);
            # unguarded, it would raise there too: code that does not run (vllm-mindspore's
            # patch of `cli.serve.run_api_server_worker_proc`, which no vLLM it ran on had).
            if guard is Guard.NONE:
                message += f"; {_at_baseline_too()}"
            else:
                message += "; the same at the baseline, where the consumer works: a patch for another release"
            self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.WARNING, target, [patch.site, *read_sites], message)
            return
        later = self._came_after() if guard is not Guard.NONE and self._at_baseline(patch) is not None else ""
        if later and not patch.declared:
            self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.WARNING, target, [patch.site, *read_sites], message + later)
            return
        # Only a module's name can have moved onto a class (a class's method is judged as an override).
        moved = guard is not Guard.NONE and not patch.declared and owner.target.kind is TargetKind.MODULE
        covered = self._covered_elsewhere(patch.attr) if moved else ""
        if covered:
            # The name moved onto a provider class whose method the consumer overrides: the
            # provider's code now asks that class, and the consumer answers there.
            message += f"; but {covered}: the name lives on that class now, and the consumer's override answers there"
            self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.WARNING, target, [patch.site, *read_sites], message)
            return
        if patch.declared:
            message = (
                f"{res.reason}; the consumer names it as a patch target by its dotted path, and a registry that "
                "sets it anyway installs the replacement under a name nothing calls: the provider's code runs "
                f"unpatched{_via(patch)}"
            )
        self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.ERROR, target, [patch.site, *read_sites], message)

    def _gets_installed(self, patch: PatchSite, read: Site) -> bool:
        """Does the consumer's read of a name it patches get what the patch installs, rather than
        keep the original? In another file, or in a function of the patch's file other than the one
        installing it (vllm-gaudi's helper calling the `torch_utils.make_tensor_with_pad` it installs
        at import); not at the patch's own level (`orig = m.f` before `m.f = mine`)."""
        if read.path != patch.site.path:
            return True
        function = self._read_functions.get(read, "")
        return bool(function) and function != patch.function and not function.startswith(f"{patch.function}.")

    def _addition(
        self, patch: PatchSite, target: str, res: Resolution, guard: Guard, uses: list[Site] | None = None
    ) -> None:
        """An attribute the provider does not have: the consumer's own, unless the baseline had it.
        `uses`: where the consumer reads it itself, through the same object, in other files."""
        absent = installed_when_absent(patch)
        if absent is not None and not patch.stash:
            where = "only where it lacks it" if absent.kind is ConditionKind.ATTR_ABSENT else "wherever it lacks it"
            message = (
                f"adds an attribute the provider does not have ({res.reason}), and {where} "
                f"(`{absent.text}` at {absent.site}): the consumer's own, for providers without it"
            )
            self.findings.add(Rule.PATCH_ADDITION, Severity.INFO, target, [patch.site], message)
            return
        before = None if patch.stash or patch.literal_value else self._at_baseline(patch)
        if before is not None and uses:
            where = ", ".join(str(site) for site in uses[:3]) + (f" and {len(uses) - 3} more" if len(uses) > 3 else "")
            if not (patch.function or patch.nested or patch.when):
                # Installed whenever the module is imported: the consumer's reads get its value.
                message = (
                    f"{res.reason}, but {before} existed at the baseline: this assignment adds the name back, "
                    f"and the consumer's own reads of it ({where}) get the replacement; the provider's code "
                    f"that used it at the baseline no longer does{_via(patch)}"
                )
                self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.WARNING, target, [patch.site, *uses], message)
                return
            message = (
                f"{res.reason}, but {before} existed at the baseline: the consumer reads it itself ({where}), "
                "which raises AttributeError wherever this assignment did not run (it runs only under a "
                f"condition, or when its function is called){_via(patch)}"
            )
            self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.ERROR, target, [patch.site, *uses], message)
            return
        if before is not None:
            origin = self._origin_patched(patch, before)
            if origin is not None:
                # At the baseline the name was an import of `before`, which the consumer patches too
                # (vllm-mindspore sets `current_platform` on `vllm.platforms` and on every module that
                # imported it): the provider's code that reads it where it is defined gets the consumer's.
                message = (
                    f"{res.reason}; at the baseline it was {before}, imported there, and the consumer patches "
                    f"{before} itself ({origin.site}): the provider's code that reads it there gets what the "
                    f"consumer sets, and this assignment adds a name nothing reads any more{_via(patch)}"
                )
                self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.WARNING, target, [patch.site], message)
                self.idle_installs.add(patch.site)
                return
            self.idle_installs.add(patch.site)
            message = (
                f"{res.reason}, but {before} existed at the baseline: the assignment installs the replacement "
                "under a name nothing calls any more, and the provider's code runs unpatched "
                f"({guard.value}){_via(patch)}"
            )
            inert = self._inert_at_baseline(patch)
            if inert:
                message = (
                    f"{res.reason}; at the baseline, which had {before}, the assignment reached no code that "
                    f"runs ({inert}): it did nothing there either, and does nothing now; a line to "
                    f"remove{_via(patch)}"
                )
                self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.WARNING, target, [patch.site], message)
                return
            successor = self._successor(patch)
            if successor is not None:
                # vllm-ascend 0.28.0rc1 patches vLLM's `_allocate_kv_cache` (gone at 0.29) and, where
                # `vllm_version_is("0.28.0")` fails, the `allocate_kv_cache` that took its place.
                message += (
                    f"; the same file also patches {successor.attr}, new on that object since the baseline "
                    f"({successor.site}): probably what took its place, already patched"
                )
                self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.WARNING, target, [patch.site], message)
                return
            self.findings.add(Rule.MISSING_PATCH_TARGET, Severity.ERROR, target, [patch.site], message)
            return
        if patch.stash:
            message = (
                f"keeps a provider object under a name the provider does not have ({res.reason}): "
                "an addition of the consumer's own"
            )
        else:
            message = (
                f"adds an attribute the provider does not have ({res.reason}); nothing of the "
                "provider is replaced. If this was meant to replace a provider function, it has moved"
            )
            if self.baseline is None and not patch.literal_value:
                message += " (no baseline: a baseline would tell whether it vanished)"
        self.findings.add(Rule.PATCH_ADDITION, Severity.INFO, target, [patch.site], message)

    def _inert_at_baseline(self, patch: PatchSite) -> str:
        """Why no code that runs at the baseline read the name `patch` installs where the patch
        reached it (`patch_readers`): "no provider code reads the name", or which functions the
        consumer replaces hold every read, or which modules read a name the consumer sets there
        too; "" when some code may read it, or when that cannot be told (a file unparseable)."""
        baseline = self.baseline
        before = self._baseline_attr(patch)
        owner = self._baseline_owner(patch)
        if baseline is None or before is None or before.target is None or owner is None or owner.target is None:
            return ""
        module, _, qualname = before.target.symbol.partition(":")
        definition = caller_key(module, qualname) if qualname else None
        on_module = owner.target.kind is TargetKind.MODULE
        # A copy of the module (`PatchSite.on_copy`) is not the globals its own functions read.
        patched = PatchedName(patch.attr, owner.target.symbol if on_module and not patch.on_copy else "", definition)
        replaced = self._replaced_at_baseline()
        # Only a patch that runs wherever this one does stands for it (one in the same `if` branch,
        # not in its `else`: vllm-ascend replaces `do_mamba_copy_block` only where it cannot launch
        # the Triton kernel its `batch_memcpy` patch is for).
        installed = {
            symbol
            for (symbol, attr), others in replaced.installed.items()
            if attr == patch.attr and any(_runs_with(other, patch) for other in others)
        }

        def replaced_here(key: FunctionKey) -> bool:
            return any(_runs_with(other, patch) for other in replaced.without_original.get(key, ()))

        tree = baseline.index.tree
        held: list[FunctionKey] = []
        covered: list[str] = []
        for path in self._baseline_holding(patch.attr):
            parsed = self._baseline_tree(path)
            if parsed is None:
                return ""
            file_module, _ = tree.module_name(path)
            found = readers(parsed, file_module, patched, replaced_here, file_module in installed)
            if found.lines:
                return ""
            held += found.held
            covered += [file_module] if found.covered else []
        why = []
        if held:
            where = ", ".join(f"{symbol.replace(':', '.')}.{name}" for symbol, name in sorted(set(held)))
            why.append(f"its reads are in {where}, which the consumer replaces without calling the original")
        if covered:
            where = ", ".join(sorted(covered))
            why.append(f"{where} reads the name it binds itself, where the consumer sets its replacement too")
        return "; ".join(why) if why else "no provider code reads the name"

    def _came_after(self) -> str:
        """What a finding says of a name the baseline has and this release lacks, when this
        release is older than the baseline: the name, and the provider code a patch of it
        changes, came after it, so a guard skipping the patch here does what it was written for
        (kvcached's `getattr(utils, "TransferTopology", None)`, a class of vLLM 0.23, at 0.18).
        "" when not older, or a version is not known (a name gone since stays an error)."""
        baseline = self.baseline
        if baseline is None or not is_older(self.version, baseline.version):
            return ""
        return (
            f"; the baseline ({baseline.version}) has it: it came after {self.version}, and the guard skips "
            "the patch here, as it was written to"
        )

    def _baseline_owner(self, patch: PatchSite) -> Resolution | None:
        """The patched object at the baseline (None: no baseline, or it is not there)."""
        if self.baseline is None:
            return None
        for ref in patch.owner:
            owner = self.baseline.index.resolve(ref.module, ref.path)
            if owner.found and owner.target is not None:
                return owner
        return None

    def _replaced_at_baseline(self) -> _BaselinePatches:
        """What the consumer's patches replace at the baseline (see `_BaselinePatches`)."""
        if self._baseline_patches is None:
            # A replacement may reach the original through a name the consumer keeps it under on the
            # patched object (vllm-ascend's `self._ascend_glm_original_chat_completion_stream_generator`):
            # any member of that object it reads that a patch of the consumer's stashes counts.
            stashed = {(p.owner, p.attr) for p in self.usage.patches if p.stash}
            calls_original = {
                (r.site, r.attr)
                for r in self.usage.contact.replacements
                if r.calls_original or any((r.owner, name) in stashed for name, _ in r.self_reads)
            }
            found = _BaselinePatches()
            for patch in self.usage.patches:
                owner = self._baseline_owner(patch)
                if owner is None or owner.target is None or patch.literal_value or patch.stash:
                    continue
                key = (owner.target.symbol, patch.attr)
                if owner.target.kind is TargetKind.MODULE:
                    found.installed.setdefault(key, []).append(patch)
                if patch.replacement is not None and (patch.site, patch.attr) not in calls_original:
                    found.without_original.setdefault(key, []).append(patch)
            self._baseline_patches = found
        return self._baseline_patches

    def _baseline_holding(self, name: str) -> list[str]:
        """The baseline provider's files whose text holds `name`. Their texts are read once, for the
        names of every patch that adds a name the provider lacks (`ConsumerOwn.additions`: where
        `_inert_at_baseline` is asked), and for another name when it is asked."""
        if self._baseline_words is None:
            self._baseline_words = {attr for _, attr in self.own.additions}
            self._read_baseline(self._baseline_words | {name})
        elif name not in self._baseline_words:
            self._read_baseline({name})
        self._baseline_words.add(name)
        needle = name.encode()
        return [path for path, text in self._baseline_texts.items() if needle in text]

    def _read_baseline(self, names: set[str]) -> None:
        """Read the baseline's files holding one of `names` (one search, one batch of reads)."""
        assert self.baseline is not None
        tree = self.baseline.index.tree
        files = tree.python_files(self.baseline.index.package)
        holding = tree.files_containing(files, sorted(n.encode() for n in names))
        self._baseline_texts.update(tree.read_many([p for p in holding if p not in self._baseline_texts]))

    def _baseline_tree(self, path: str) -> ast.Module | None:
        """A baseline file's syntax tree, parsed once (None: it does not parse)."""
        if path not in self._baseline_trees:
            try:
                self._baseline_trees[path] = parse_limited(self._baseline_texts[path])
            except (SyntaxError, ValueError):
                self._baseline_trees[path] = None
        return self._baseline_trees[path]

    def _missing_at_baseline(self, patch: PatchSite) -> bool:
        """Was the patched attribute surely missing at the baseline provider too, where the patch's
        patch ran (`Baseline.kept_from`)?"""
        if self.baseline is not None and self.baseline.kept_from(patch.site.path, patch.when):
            return False
        found = self._baseline_attr(patch)
        return found is not None and found.status is Status.MISSING

    def _origin_patched(self, patch: PatchSite, before: str) -> PatchSite | None:
        """Another patch of the consumer's that sets `before` itself, where the pin defines it: what
        `patch` set at the baseline was a module's import of `before` (its symbol is another module's),
        and the module still writes the name at the pin (it imports it where it is used now). One
        that no longer does uses something else instead (vLLM 0.30's GPU attention utilities call
        `bind_kv_cache_to_layers`, not the `bind_kv_cache` vllm-ascend patches): that code runs
        unpatched."""
        module = self.symbol(patch.owner[0]).partition(":")[0]
        if before.partition(":")[0] == module:
            return None  # defined in the patched module itself at the baseline: no import of another's
        found = self.index.find(module)
        if found is None or not found.path or word_pattern(patch.attr).search(self.index.tree.read(found.path)) is None:
            return None
        origin_module, _, name = before.partition(":")
        for other in self.usage.patches:
            if other is patch or other.attr != name:
                continue
            _, owner = self.first(other.owner)
            # Where `before` is defined, not another module importing it (vllm-ascend sets
            # `gumbel_sample` on vLLM's sampler too, which imported it from `gumbel`).
            if owner.found and owner.target is not None and owner.target.symbol == origin_module:
                res = self.index.getattr(owner.target, other.attr)
                if res.found and res.target is not None and res.target.symbol == before:
                    return other
        return None

    def _successor(self, patch: PatchSite) -> PatchSite | None:
        """A patch with a function, in the same file and on the same object, of a name that object
        has here and lacked at the baseline, installed where the provider checked runs it: the
        consumer's adaptation to the name that replaced the one `patch` sets."""
        for other in self.usage.patches:
            if (
                other.attr == patch.attr
                or other.owner != patch.owner
                or other.site.path != patch.site.path
                or other.replacement is None
                or self.judge(other.when).reach is Reach.DEAD
            ):
                continue
            owner = self.first(other.owner)[1]
            now = self.index.getattr(owner.target, other.attr) if owner.found and owner.target else None
            then = self._baseline_attr(other)
            if now is not None and now.found and then is not None and not then.found:
                return other
        return None

    def _at_baseline(self, patch: PatchSite) -> str | None:
        """The patched attribute's symbol at the baseline provider, when it was there."""
        found = self._baseline_attr(patch)
        return found.target.symbol if found is not None and found.found and found.target is not None else None

    def _baseline_attr(self, patch: PatchSite) -> Resolution | None:
        """The patched attribute looked up on its owner at the baseline (None: no baseline, or the
        owner is not there)."""
        owner = self._baseline_owner(patch)
        if self.baseline is None or owner is None or owner.target is None:
            return None
        return self.baseline.index.getattr(owner.target, patch.attr)

    # -- signatures (arity-drift) -------------------------------------------------

    def caller_names(self) -> set[str]:
        """The names of every callable replaced by a narrower function, as the caller search looks
        for their calls (`searched_as`: a method's, through the patched class): whose calls in the
        provider the patch checks look up (`callers.start_search` can look for them ahead)."""
        if self._caller_names is None:
            self._caller_names = set()
            for patch in self.usage.patches:
                if self._narrower(patch):
                    through = self._patched_class(patch)
                    self._caller_names.update(
                        searched_as(name, through if reached.kind is TargetKind.FUNCTION else None)
                        for reached, name in self._call_targets(patch)
                    )
        return self._caller_names

    def _patched_class(self, patch: PatchSite) -> ClassRef | None:
        """The provider class a patch sets an attribute of (None for a module's)."""
        _, owner = self.first(patch.owner)
        return owner.target.cls if owner.target is not None and owner.target.kind is TargetKind.CLASS else None

    def _prime_callers(self) -> None:
        """Search the provider once for the calls of every callable replaced by a narrower function."""
        names = self.caller_names()
        if names:
            self.callers.prime(names)

    def _narrower(self, patch: PatchSite) -> bool:
        """Is the patch's replacement narrower than the original it replaces?"""
        if patch.replacement is None or not checkable(patch.replacement):
            return False
        _, owner = self.first(patch.owner)
        if not owner.found or owner.target is None:
            return False
        res = self.index.getattr(owner.target, patch.attr)
        original = res.target.signature if res.found and res.target is not None else None
        if original is None or not checkable(original):
            return False
        if takes_anything(original) or not same_kind(original, patch.replacement):
            return True  # (binding otherwise, through the class or an instance, only real calls can tell)
        return replacement_problem(original, patch.replacement) is not None

    def _replacement_problem(self, patch: PatchSite, original: Signature, replacement: Signature) -> Mismatch | None:
        """Why `replacement` cannot take every call `original` takes. When the two bind otherwise
        (a plain function stored in a staticmethod's place), they are compared as a call through
        an instance sees them; a call through the class that misses is found among the real calls."""
        if same_kind(original, replacement):
            return replacement_problem(original, replacement)
        through_instance = self._patched_class(patch) is not None
        found = replacement_problem(
            as_called(original, binds_receiver(original, through_instance)),
            as_called(replacement, binds_receiver(replacement, through_instance)),
        )
        if found is None:
            return None
        how = f"the original is {_binding_kind(original)}, the replacement {_binding_kind(replacement)}"
        return Mismatch(f"{how}; called through an instance, {found.message}", found.definite)

    def _call_targets(self, patch: PatchSite) -> list[tuple[Target, str]]:
        """What a provider call names to reach the patched callable: the method or function by its name,
        and for `__init__` the class itself."""
        _, owner = self.first(patch.owner)
        if not owner.found or owner.target is None:
            return []
        res = self.index.getattr(owner.target, patch.attr)
        if not res.found or res.target is None:
            return []
        out = [(res.target, patch.attr)]
        if patch.attr == "__init__" and owner.target.kind is TargetKind.CLASS and owner.target.cls is not None:
            out.append((owner.target, owner.target.cls.qualname.rpartition(".")[2]))
        return out

    def _real_calls(self, patch: PatchSite, target: Target) -> list[ProviderCall]:
        """Calls of the patched callable in the provider (but from callers the consumer replaced too) and in
        the consumer (their function "" and caller key ("", ""))."""
        out: list[ProviderCall] = []
        _, owner = self.first(patch.owner)
        owner_class = self._patched_class(patch)
        owner_module = (
            owner.target.symbol if owner.target is not None and owner.target.kind is TargetKind.MODULE else ""
        )
        for reached, name in self._call_targets(patch):
            through = owner_class if reached.kind is TargetKind.FUNCTION else None
            binding = owner_module if reached.kind is TargetKind.FUNCTION else ""
            for call in self.callers.calls(reached, name, through, self.own.replacements.__contains__, binding):
                if call.caller_key in self.own.replacements or self._substituted_caller(call.caller_key[0]):
                    continue  # the consumer replaced the function (or the class) that makes this call
                calling_module = call.caller_key[0].partition(":")[0]
                if binding and calling_module != binding and (calling_module, patch.attr) in self.own.replacements:
                    # The consumer also patches the calling module's own binding (`m.f` and `n.f`, n
                    # importing f from m): the call reads that one, and is that patch's to judge.
                    continue
                out.append(call)
        for use in self.usage.calls:
            _, res = self.first(use.choices)
            if res.found and (found := res.target) is not None and found.symbol == target.symbol:
                out.append(ProviderCall(use.site, use.shape, "", ("", ""), found.through_instance))
        return out

    def _registered_in_place(self, registration: Registration) -> None:
        """A consumer class registered out of tree under the name of a provider class it derives
        from, one whose `__new__` hands out what is registered under its own name (vLLM's
        `CustomOp.register_oot`): every construction of that class builds the consumer's, so the
        provider's constructions are judged against its `__init__`, as a class installed in the
        provider class's place is."""
        init = self._consumer_init(registration.consumer_class)
        if init is None or registration.consumer_class not in self.hierarchy.classes:
            return
        replaced = next(
            (
                node
                for node in self.hierarchy.mro(registration.consumer_class)
                if isinstance(node, ClassRef)
                and node.qualname.rpartition(".")[2] == registration.name
                and self._custom_new(node)
            ),
            None,
        )
        if replaced is None:
            return
        *outer, name = replaced.qualname.split(".")
        patch = PatchSite(
            owner=(Ref(replaced.module, tuple(outer)),),
            attr=name,
            site=registration.site,
            guard=Guard.NONE,
            function="",
            replacement=init,
            when=registration.when,
            constructor=True,
            registered=True,
        )
        _, owner = self.first(patch.owner)
        if owner.found and owner.target is not None:
            res = self.index.getattr(owner.target, name)
            if res.found:
                self._replacement_drift(patch, self.symbol(Ref(replaced.module, (*outer, name))), res)

    def _replacement_drift(self, patch: PatchSite, symbol: str, res: Resolution) -> None:
        """A replacement narrower than the original is an error when a real call cannot take it, else a
        warning. A class in a class's place, installed when its module is imported (not for a while,
        inside a function), is judged by the two `__init__`s."""
        original = res.target.signature if res.target is not None else None
        if _runs_init(patch) and res.target is not None:
            run = _callable_run(self.index, res.target) if res.target.kind is TargetKind.CLASS else None
            original = run[0].signature if run is not None else None
        if patch.replacement is None or not checkable(original) or not checkable(patch.replacement):
            return
        assert original is not None and res.target is not None
        replacement = patch.replacement
        problem = self._replacement_problem(patch, original, replacement)
        if not problem and not takes_anything(original) and same_kind(original, replacement):
            return
        both = f"Original {original.render()}; replacement {replacement.render()}"
        calls = self._real_calls(patch, res.target)
        # A call that does not fit is an error; one that may never run (`_why_not_run`), a warning.
        misfits = []
        for call in calls:
            site, shape, caller = call.site, call.shape, call.caller_key
            # Each binds as it is: a function stored in a staticmethod's place binds its receiver.
            bound, bound_there = call.binds(original), call.binds(replacement)
            if call_problem(original, shape, bound) is None:
                misfit = call_problem(replacement, shape, bound_there)
                misfit = f"it {misfit}" if misfit else binding_problem(original, replacement, shape, bound, bound_there)
                if misfit:
                    # An error needs a call that may run and that the baseline provider did not make too.
                    why = self._why_not_run(caller, self._patched_class(patch)) if caller[0] else ""
                    if not why and caller[0]:
                        why = self._made_at_baseline(patch, site, shape, caller, bound_there)
                    misfits.append((site, shape, why, misfit))
        misfits.sort(key=lambda m: bool(m[2]))
        if misfits:
            site, shape, not_run, misfit = misfits[0]
            severity = Severity.WARNING if not_run else Severity.ERROR
            where = f" ({not_run})" if not_run else ""
            alike = (str(m[0]) for m in misfits[1:] if bool(m[2]) == bool(not_run))
            others = [where for where in dict.fromkeys(alike) if where != str(site)]
            also = f"; so do {len(others)} more, at {', '.join(others[:3])}{', …' if len(others) > 3 else ''}"
            message = (
                f"{_registered_lead(patch)}the replacement cannot take the real call at {site}{where}: {misfit} "
                f"(the call passes {shape.render()}){also if others else ''}. {both}"
            )
            self.findings.add(Rule.ARITY_DRIFT, severity, symbol, [patch.site], message)
            return
        if not problem:
            return  # the original takes anything, and no real call misses the replacement
        passing = self._passing_new_keyword(patch, res.target, original)
        if passing is not None:
            site, keyword = passing
            message = (
                f"the replacement cannot take {keyword}= ({keyword} new since the baseline), which the provider "
                f"passes to a .{patch.attr}(...) call at {site} (found by the name and the keyword). {both}"
            )
            self.findings.add(Rule.ARITY_DRIFT, Severity.ERROR, symbol, [patch.site], message)
            return
        if patch.registered:
            return  # (one of many classes a registry swaps in: only a construction that fails is said)
        narrower = (
            "the replacement class's `__init__` is narrower than the patched class's"
            if patch.constructor
            else "the replacement is narrower than the patched function"
        )
        # As narrow where the consumer works, the patched callable the same there: nothing the bump changed.
        unchanged = self._same_at_baseline(patch, res.target, original)
        since = f" (unchanged {self.baseline.since})" if unchanged and self.baseline is not None else ""
        message = (
            f"{_registered_lead(patch)}{narrower}{since}: {problem.message}; no call found in the "
            f"provider or the consumer fails ({len(calls)} checked). {both}"
        )
        severity = Severity.INFO if unchanged else Severity.WARNING
        self.findings.add(Rule.ARITY_DRIFT, severity, symbol, [patch.site], message)

    def _same_at_baseline(self, patch: PatchSite, target: Target, original: Signature) -> bool:
        """Was the patched callable's signature (`original`, its `__init__`'s for a class) the same at
        the baseline, where the patch ran too? Then the replacement was as narrow there."""
        if self.baseline is None or self.baseline.kept_from(patch.site.path, patch.when):
            return False
        before = self.baseline.index.resolve_symbol(target.symbol)
        then = before.target if before.found else None
        if then is not None and then.kind is TargetKind.CLASS and _runs_init(patch):
            run = _callable_run(self.baseline.index, then)  # as `_replacement_drift` reads the original
            then = run[0] if run is not None else None
        if then is None or then.signature is None:
            return False
        return _shape(then.signature) == _shape(original)

    def _made_at_baseline(
        self,
        patch: PatchSite,
        site: Site,
        shape: CallShape,
        caller: tuple[str, str],
        bound: bool,
    ) -> str:
        """Did the baseline provider make this call of the patched callable too, or another that the
        replacement could not take either (`bound`: the call supplies its first parameter): in the
        same file, in a function of the same name, or of a name that no longer makes such a call
        where this function made none (renamed: vLLM 0.30's `get_transfer_results`, 0.27's
        `get_finished`)? (Lines move between releases.) Then the replacement missed it where the
        consumer works: not drift (`_at_baseline_too`, saying which); "" when it did not, or when
        the patch did not run at the baseline (`Baseline.kept_from`)."""
        if self.baseline is None or self.baseline.kept_from(patch.site.path, patch.when):
            return ""
        if self._baseline_callers is None:
            self._baseline_callers = CallerSearch(self.baseline.index)
        owner = caller[0].partition(":")[2]  # the calling class's qualname ("" for a function)
        names = [name for _, name in self._call_targets(patch)]
        then = [raw for name in names for raw in self._baseline_callers.file_calls(site.path, name)]
        made = [raw.shape for raw in then if raw.function.rpartition(".")[::2] == (owner, caller[1])]
        if not made:
            now = {raw.function for name in names for raw in self.callers.file_calls(site.path, name)}
            made = [raw.shape for raw in then if raw.function not in now and raw.function.rpartition(".")[0] == owner]
        if shape in made:
            return _at_baseline_too("the provider made the same call there")
        assert patch.replacement is not None
        if any(call_problem(patch.replacement, each, bound) is not None for each in made):
            return _at_baseline_too("the provider made a call there that the replacement could not take either")
        return ""

    def _passing_new_keyword(self, patch: PatchSite, target: Target, original: Signature) -> tuple[Site, str] | None:
        """A provider call of a method of the patched name, on an object it was handed, that passes by
        keyword a parameter of the original new since the baseline which the replacement cannot
        take, and fits the original (the keyword is the evidence it is that method: vLLM 0.34's
        `pool.free_blocks(blocks, evict_first=...)` against a `(self, ordered_blocks)` wrapper).
        None without a baseline, or when no call does."""
        replacement = patch.replacement
        _, owner = self.first(patch.owner)
        on_class = owner.target is not None and owner.target.kind is TargetKind.CLASS
        if self.baseline is None or replacement is None or not on_class or original.is_staticmethod:
            return None  # (a method called on an object: its first parameter is supplied)
        before = self.baseline.index.resolve_symbol(target.symbol)
        old = before.target.signature if before.found and before.target is not None else None
        if old is None:
            return None
        added = describe_change(old, original).added
        new = [name for name in untakeable_keywords(replacement, original) if name in added]
        if not new:
            return None
        found = self.callers.names.find([patch.attr], also=[f"{k}=" for k in new], called=[patch.attr])
        for site in found.get(patch.attr, []):
            if site.kind is not SiteKind.CALL or site.receiver is not SiteReceiver.OTHER or site.shape is None:
                continue
            passed = [k for k in site.shape.keywords if k in new]
            if passed and call_problem(original, site.shape, True) is None:
                if call_problem(replacement, site.shape, True) is not None:
                    return Site(site.path, site.line), passed[0]
        return None

    def _call_drift(self, call: CallUse) -> None:
        judged = self._call_problem(call)
        if judged is None:
            self._shifted_call(call)
            return
        ref, target, problem = judged
        assert target.signature is not None
        what = "the launch" if call.launch else "the call"
        message = (
            f"{what} {problem}: the provider has {target.symbol}{target.signature.render()}, "
            f"{what} passes {call.shape.render()}"
        )
        if call.keywords_from:
            message += f" (its `**` hands on the keywords of the call at {call.keywords_from})"
        severity = Severity.ERROR
        if call.caught:
            severity, message = Severity.WARNING, f"degraded: {message}; the TypeError is caught ({call.caught})"
        elif call.mixed:
            # Which branch bound the name where the call runs is the consumer's own state, not read here.
            severity = Severity.WARNING
            message += (
                "; the called name is bound to the provider's object by one branch of an `if` on the "
                "consumer's own state and to another object by the other: this call may never reach it"
            )
        elif call.fallback_of and self._fits_in_try(call.fallback_of, self.symbol(ref)):
            # `try: f(new form) except TypeError: f(old form)`: the try's call fits, so this one never runs here.
            severity = Severity.WARNING
            message += (
                f"; a fallback for another release: the call it falls back from (the try at {call.fallback_of}) fits"
            )
        elif (patch := self._replaced_binding(call, ref, target)) is not None:
            assert patch.replacement is not None
            severity = Severity.WARNING
            message += (
                f"; but the consumer replaces that name at {patch.site} with {patch.replacement.render()}, which "
                "takes this call: it fails only where the name is bound before that patch runs"
            )
        elif (before := self._baseline_call_problem(ref, call)) is not None:
            # Not drift: the provider the consumer was written against could not take it either, and
            # the consumer works there. Code that does not run, or a bug it shipped with.
            severity = Severity.WARNING
            message += f"; {_at_baseline_too(before)}"
        # Sites failing another way are another finding: each message says what is wrong at its sites.
        self.findings.add(Rule.ARITY_DRIFT, severity, self.symbol(ref), [call.site], message, key=problem)

    def _shifted_call(self, call: CallUse) -> None:
        """A call that fits both the baseline's signature and this one, whose positional arguments
        fill other parameters here (`shifted_arguments`): no TypeError, wrong values. Not for a
        callable the consumer replaces (its own function takes the call)."""
        if self.baseline is None or not call.shape.positional or call.shape.star:
            return  # nothing passed by position (or not known what): nothing can shift
        ref, res = self.first(call.choices)
        if not res.found or res.target is None or self.own.replacements.get(self._callable_key(ref, res.target)):
            return
        then = self.baseline.index.resolve(ref.module, ref.path)
        run = _callable_run(self.index, res.target)
        before = _callable_run(self.baseline.index, then.target) if then.found else None
        if run is None or before is None:
            return
        (target, bound), (old, bound_then) = run, before
        assert target.signature is not None and old.signature is not None
        if bound != bound_then or call_problem(old.signature, call.shape, bound) is not None:
            return
        if not self.baseline.runs(call.when):
            return  # not code that ran at the baseline (`else:` of `if vllm_version_is("0.23.0")`)
        shifted = shifted_arguments(old.signature, target.signature, call.shape, bound)
        if not shifted:
            return
        message = (
            f"the call {render_shift(shifted)}: the provider has {target.symbol}{target.signature.render()}, "
            f"it had {old.signature.render()} at the baseline; the call passes {call.shape.render()}"
        )
        self.findings.add(Rule.ARITY_DRIFT, Severity.ERROR, self.symbol(ref), [call.site], message, key=message)

    def _baseline_call_problem(self, ref: Ref, call: CallUse) -> str | None:
        """What is wrong with the same call at the baseline, by the callable's own signature there
        (the consumer's patches aside); None when it fits there, or there is no baseline or no
        signature to judge it by, or a version gate kept the call from running there."""
        if self.baseline is None or self.baseline.kept_from(call.site.path, call.when):
            return None  # (a call that did not run there: where the consumer works says nothing of it)
        res = self.baseline.index.resolve(ref.module, ref.path)
        if call.launch:
            return launch_problem(res.target.signature if res.found and res.target else None, call.shape)
        run = _callable_run(self.baseline.index, res.target) if res.found else None
        if run is None:
            return None
        target, bound = run
        assert target.signature is not None
        return call_problem(target.signature, call.shape, bound)

    def _replaced_binding(self, call: CallUse, ref: Ref, target: Target) -> PatchSite | None:
        """For a call of a name bound by an import (`from m import f` then `f(...)`): a consumer patch
        of `m.f` whose function takes the call. Whether the import runs before or after the patch is
        not known here; after it, the call reaches the replacement."""
        if not call.imported or target.kind is not TargetKind.FUNCTION:
            return None
        for patch in self.own.replacements.get(self._callable_key(ref, target), []):
            if patch.replacement is not None and call_problem(patch.replacement, call.shape, target.bound) is None:
                return patch
        return None

    def _fits_in_try(self, try_site: str, symbol: str) -> bool:
        """Does a call of `symbol` that is the body of the try at `try_site` fit this provider?"""
        return any(
            c.try_site == try_site and self.symbol(self.first(c.choices)[0]) == symbol and self._call_problem(c) is None
            for c in self.usage.calls
        )

    def _call_problem(self, call: CallUse) -> tuple[Ref, Target, str] | None:
        """What is wrong with a call of a provider callable here: (its ref, the callable judged, the
        problem); None when it fits (or cannot be judged)."""
        ref, res = self.first(call.choices)
        if not res.found or res.target is None:
            return None
        if call.launch:
            problem = launch_problem(res.target.signature, call.shape)
            return (ref, res.target, problem) if problem else None
        if (
            res.target.kind is TargetKind.CLASS
            and res.target.cls is not None
            and self._substituted(res.target.cls, call)
        ):
            return None
        run = _callable_run(self.index, res.target)
        if run is None:
            return None
        target, bound = run
        key = (res.target.symbol, "__init__") if target is not res.target else self._callable_key(ref, res.target)
        assert target.signature is not None
        problem = call_problem(target.signature, call.shape, bound)
        if problem and call.replaces and res.target.cls is not None:
            # `replace(spec, compress_ratio=1)` of a `spec: KVCacheSpec`: a field of a subclass's.
            lacking = keywords_not_taken(target.signature, call.shape)
            if lacking and subclass_may_hold(self.hierarchy, res.target.cls, lacking):
                return None
        # A class call looks __init__ up when it runs, and so does `C.f(...)`: they reach a consumer patch.
        late = call.by_attribute or key[1] == "__init__"
        replaced = [p for p in self.own.replacements.get(key, []) if p.replacement is not None] if late else []
        if replaced:
            problem = self._replaced_call_problem(call, target.signature, bound, replaced, problem)
        return (ref, target, problem) if problem else None

    def _callable_key(self, ref: Ref, target: Target) -> tuple[str, str]:
        """(owner symbol, name) of a called provider object, as the consumer's patches of it are keyed."""
        if not ref.path:
            return (target.symbol, "")
        owner = self.resolve(Ref(ref.module, ref.path[:-1]))
        return (owner.target.symbol if owner.found and owner.target is not None else "", ref.path[-1])

    def _replaced_call_problem(
        self, call: CallUse, original: Signature, bound: bool, replaced: list[PatchSite], problem: str | None
    ) -> str | None:
        """A call of a callable the consumer replaced binds to the replacement: it fails only when it fits
        none of the replacements (nor the original, where a patch may not be installed)."""
        conditional = any(p.guard is not Guard.NONE or p.when or p.alternative_group for p in replaced)
        if conditional and problem is None:
            return None
        misfits = []
        for patch in replaced:
            assert patch.replacement is not None
            misfit = call_problem(patch.replacement, call.shape, bound)
            if misfit is None:
                return None
            misfits.append(f"{misfit} (the consumer's replacement at {patch.site} has {patch.replacement.render()})")
        return misfits[0] if misfits else problem

    def _substituted(self, cls: ClassRef, call: CallUse) -> bool:
        """Does the provider's `__new__` hand back a consumer class registered under this class's name?
        Then the call builds the consumer's class and is checked against its `__init__`, when known."""
        registered = self.own.registered_as(cls.qualname.rpartition(".")[2])
        if not registered or not self._custom_new(cls):
            return False
        for registration in registered:
            init = self._consumer_init(registration.consumer_class)
            if init is None or call_problem(init, call.shape, True) is None:
                return True
        return False

    def _why_not_run(self, caller_key: tuple[str, str], on: ClassRef | None = None) -> str:
        """Why a provider call made inside the function `caller_key` (owner symbol, name) may never run
        ("" when nothing says so): a consumer subclass took that method over, or the provider calls
        the method only from functions the consumer replaces without calling the originals. With
        `on` (the class whose instances the call is about), only calls on such an instance count."""
        if (caller_key, on) not in self._not_run:
            self._not_run[caller_key, on] = self._why_not_run_uncached(caller_key, on)
        return self._not_run[caller_key, on]

    def _why_not_run_uncached(self, caller_key: tuple[str, str], on: ClassRef | None) -> str:
        taken_over = self._taken_over(caller_key)
        if taken_over:
            return (
                f"made inside a provider method that {taken_over} overrides without calling it: only "
                "instances the consumer does not create run it"
            )
        for only_on in (None, on) if on is not None else (None,):
            callers = self._only_called_from_replaced(caller_key, only_on)
            if callers:
                where = ", ".join(f"{owner}.{name}" for owner, name in callers)
                on_one = f" on a {only_on}" if only_on is not None else ""
                return (
                    f"made inside {caller_key[0]}.{caller_key[1]}, which the provider calls{on_one} only from "
                    f"{where}, which the consumer replaces without calling the original"
                )
        return ""

    def _only_called_from_replaced(
        self, caller_key: tuple[str, str], on: ClassRef | None = None
    ) -> list[tuple[str, str]]:
        """For a provider method: the functions the provider calls it from, by its name on any receiver,
        when every one of them is a function the consumer replaces without calling the original (and
        the name is written nowhere in the provider as a string, for `getattr`, nor anywhere in the
        consumer's text); else []. With `on`, only the calls that may be made on an `on` instance
        count, each as made by what `on` runs under its calling method's name
        (`CallerSearch.calling_functions_on`): vllm-ascend 0.23 replaces, on vLLM's
        `DeepSeekV4ToolParser`, both methods of the base class that call
        `_convert_params_with_schema`, whose call of `_repair_param_dict` then never runs on a V4
        parser, while it still does on the base class's."""
        owner, name = caller_key
        if ":" not in owner or not name or name.startswith("__"):
            return []  # a module-level function can be imported and called from anywhere
        if self.consumer_mentions(name):
            return []  # the consumer may call it itself
        if on is None:
            if not self._replaced_module_calls(name):
                return []  # no function the consumer replaces can call it
            callers = self.callers.calling_functions(name)
            anywhere = bool(callers)
        else:
            if not self._family_calls(name, on):
                return []  # no method `on` runs in the consumer's place can call it
            callers, anywhere = self.callers.calling_functions_on(name, on, self.own.replacements.__contains__)
        if not anywhere or not all(self._replaced_without_original(key) for key in callers):
            return []
        tree = self.index.tree
        if tree.files_containing(tree.python_files(self.index.package), list(quoted(name))):
            return []
        return callers

    def _family_calls(self, name: str, on: ClassRef) -> bool:
        """Does the consumer replace a method of `on` or of a class of its order, and does the module
        of a class of that order call `name` (by its text)? Without both, no method that `on` runs in
        the consumer's place is among the callers: the provider-wide search is not needed."""
        order = [node for node in self.index.mro(on) if isinstance(node, ClassRef)]
        symbols = {str(node) for node in order}
        if not any(owner in symbols for owner, _ in self.own.replacements):
            return False
        return self._modules_call({node.module for node in order}, name)

    def _replaced_module_calls(self, name: str) -> bool:
        """Does a module holding a provider function the consumer replaces call `name` (by its text)?
        Without one, no such function calls it: the provider-wide search is not needed."""
        return self._modules_call({owner.partition(":")[0] for owner, _ in self.own.replacements}, name)

    def _modules_call(self, modules: set[str], name: str) -> bool:
        """Does one of these provider modules call `name` (by its text: `call_pattern`)?"""
        pattern = call_pattern([name])
        for module in modules:
            found = self.index.find(module)
            if found is not None and found.path.endswith(".py") and pattern.search(self.index.tree.read(found.path)):
                return True
        return False

    def _replaced_without_original(self, key: tuple[str, str]) -> bool:
        """Does the consumer replace the provider function `key` with one that never calls the original?"""
        sites = {patch.site for patch in self.own.replacements.get(key, [])}
        found = [r for r in self.usage.contact.replacements if r.site in sites and r.attr == key[1]]
        return bool(found) and not any(r.calls_original for r in found)

    def _taken_over(self, caller_key: tuple[str, str]) -> str:
        """For a call made inside provider method (class symbol, name): the consumer class that took
        that method over (`Hierarchy.taken_over_by`), or ""."""
        module, _, qualname = caller_key[0].partition(":")
        return self.hierarchy.taken_over_by(ClassRef(module, qualname), caller_key[1]) if qualname else ""

    def _covered_elsewhere(self, name: str) -> str:
        """For a patch target the provider no longer has where the consumer patches it: "C.name
        overrides P.name" when a consumer class C overrides the provider method P.name, and every
        provider class that defines `name` derives from the one defining it first (the name is that
        class family's, not a common one such as `forward`); "" otherwise. vLLM 0.23 moved
        `config.model.is_cumem_allocator_available` onto `Platform`, which vllm-ascend's platform
        overrides; its guarded patch of the old name is for older releases."""
        if name.startswith("__"):
            return ""
        for cls in self.usage.contact.classes:
            if cls.muted or cls.method(name) is None:
                continue
            # The provider classes defining it in the class's order: the last is where it starts.
            provider = [d.node for d in self.hierarchy.definitions(cls.name, name) if isinstance(d.node, ClassRef)]
            if provider and self._defined_only_below(name, provider[-1]):
                return f"{cls.symbol}.{name} overrides {provider[-1]}.{name}"
        return ""

    def _defined_only_below(self, name: str, root: ClassRef) -> bool:
        """Is every provider definition of `name` (`def name`, by the files' identifiers) a method of
        `root` or of a class deriving from it? Not when more than a few files define it."""
        [files] = self.callers.names.files_defining([({name}, 1)], at_most=_FEW_FILES)
        for path in files:
            module, _ = self.index.tree.module_name(path)
            info = self.index.module(module)
            if info is None or name in info.bindings:
                return False  # unreadable, or a module-level function of that name
            owners = [ClassRef(module, q) for q, c in info.classes.items() if name in c.members]
            if not owners or any(root not in self.index.mro(owner) for owner in owners):
                return False
        return bool(files)

    @cached_property
    def hierarchy(self) -> Hierarchy:
        """The consumer's classes over the provider's, built once (the idle-hook rule reads it too)."""
        return Hierarchy(self.usage, self.index, self.consumer_mentions)

    def _substituted_caller(self, owner: str) -> bool:
        """Is the caller's class one the provider hands out as the consumer's class (registered out of tree)?"""
        module, _, qualname = owner.partition(":")
        if not qualname or not self.own.registered_as(qualname.rpartition(".")[2]):
            return False
        return self._custom_new(ClassRef(module, qualname))

    def _custom_new(self, ref: ClassRef) -> bool:
        for node in self.index.mro(ref):
            if isinstance(node, str):
                continue
            info = self.index.class_info(node)
            if info is not None and "__new__" in info.members:
                return True
        return False

    def _consumer_init(self, dotted_class: str) -> Signature | None:
        """The `__init__` signature of a consumer class ("pkg.mod.Cls"), when it can be read."""
        if self.in_consumer is None:
            return None
        module, _, name = dotted_class.rpartition(".")
        res = self.in_consumer(f"{module}:{name}.__init__")
        if not res.found or res.target is None or not checkable(res.target.signature):
            return None
        return res.target.signature

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


# More files than this define a name: it is a common one, not one class family's.
_FEW_FILES = 8


def _registered_lead(patch: PatchSite) -> str:
    """What a finding about a class registered out of tree says first: how it comes to be built."""
    if not patch.registered:
        return ""
    return f"the consumer's class is registered out of tree in {patch.attr}'s place, so `{patch.attr}(...)` builds it: "


def _effect(guard: Guard) -> str:
    if guard is Guard.NONE:
        return "unguarded: the installer raises AttributeError at start-up"
    return f"guarded ({guard.value}): the installer silently installs nothing and the provider's unpatched code runs"


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


def _via(item: ImportUse | PatchSite) -> str:
    return f" (reached through the helper call at {', '.join(map(str, item.via))})" if item.via else ""
