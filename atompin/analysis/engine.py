"""One consumer -> provider check over two source trees: the pipeline's middle.

Trees in, a `CheckResult` out (`results.check_trees` reads a cached one first). Files and
caches are passed in; nothing here prints, touches git, or imports the code it reads.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import pickle
import re
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from atompin.analysis.baseline import Baseline
from atompin.analysis.baseline_failures import demote_after_failures, first_failures
from atompin.analysis.cache import AnalysisCache, RecordingCache, code_digest, dump_json, load_json
from atompin.analysis.callsites import CallerSearch
from atompin.analysis.checks import UsageChecker
from atompin.analysis.code_outline import OutlineReader
from atompin.analysis.conditions import Judgement, Reach, judge
from atompin.analysis.consumer_text import ConsumerText
from atompin.analysis.contact import ContactPart, check_contact, searches_names
from atompin.analysis.gates import Gate, GateOp, describe, evaluate
from atompin.analysis.gcpause import without_gc
from atompin.analysis.hierarchy import Hierarchy
from atompin.analysis.idle_hooks import check_idle_hooks
from atompin.analysis.limits import parse_limited
from atompin.analysis.module_stops import demote_stopped
from atompin.analysis.name_sites import NameSearch
from atompin.analysis.overrides import check_overrides
from atompin.analysis.packages import consumer_packages, provider_package
from atompin.analysis.param_types import typed_params
from atompin.analysis.prefetch import (
    ANSWER,
    Shares,
    Task,
    Worker,
    fork_worker,
    parallel_jobs,
    store,
    written_there,
)
from atompin.analysis.provider import ProviderIndex, Resolution
from atompin.analysis.reach import (
    Reachability,
    ReachRoots,
    demote_unreached,
    named_entry_points,
    provider_strings,
    reach_roots,
    reachability,
    strings_reader,
)
from atompin.analysis.relevant import imported_modules, provider_names, relevant_files
from atompin.analysis.relocation_checks import check_relocations
from atompin.analysis.requirements import demote_refused
from atompin.analysis.results import CheckOptions
from atompin.analysis.scanner import ConsumerScanner
from atompin.analysis.served_definitions import ServedModule, definitions, demote_unread_served, reads_served
from atompin.analysis.startup import Imports, StartupWalk
from atompin.analysis.uncalled import (
    ConsumerFiles,
    UncalledFunctions,
    UncalledMethods,
    UnnamedClasses,
    asked_names,
    demote_uncalled,
    demote_uncalled_functions,
    demote_unnamed_classes,
    provider_silence,
)
from atompin.analysis.usage import Condition, ConsumerUsage, ModuleEdge, Ref
from atompin.model import CheckResult, Finding, GateReading, Rule, Severity, Site, Status
from atompin.sources.tree import SourceTree

# Bump when the scanner's output changes meaning, so cached scans are ignored (a scan is also
# keyed by the digest of atompin's code: another build never reads this one's scans).
SCAN_FORMAT = "atompin-scan-113"
# Bump when `relevant.imported_modules` changes meaning: what the start-up walk keeps of it.
IMPORTS_FORMAT = "atompin-imports-1"


@without_gc
def scan_consumer(
    tree: SourceTree,
    packages: list[str],
    provider: str,
    cache: AnalysisCache | None = None,
    before_parse: Callable[[list[bytes]], None] | None = None,
    bodies_read: Callable[[ConsumerUsage], None] | None = None,
    kept: list[object] | None = None,
) -> ConsumerUsage:
    """Scan the consumer's packages for what they use of `provider` (cached by content).
    `before_parse` is handed every file's source as soon as they are read, before the files to
    scan are chosen (on a cache miss only): what they import of the provider is what the scanned
    ones import (a file that imports the provider is scanned). `bodies_read` is handed the usage
    once its patches are known, before the scan ends (`ConsumerScanner.scan`; on a miss only).
    `kept` is handed the scanner, syntax trees and all, instead of freeing them here (tens of
    milliseconds for a big consumer): its owner frees them where it waits anyway."""
    cache = cache or AnalysisCache()
    paths = [path for package in packages for path in tree.python_files(package)]
    ids = [(path, tree.content_id(path)) for path in paths]
    key_text = json.dumps([SCAN_FORMAT, code_digest(), provider, packages, ids])
    key = "scan:" + hashlib.sha256(key_text.encode()).hexdigest()
    cached = cache.get_raw(key)
    if cached is not None:
        usage = load_json(ConsumerUsage, cached)
        if usage is not None and all(_module_id(tree, m) == cid for m, cid in usage.helper_modules.items()):
            return usage

    files = []
    for path, source in tree.read_many(paths):
        module, is_package = tree.module_name(path)
        files.append((path, module, is_package, source))
    if before_parse is not None:
        before_parse([f[3] for f in files])
    tops = tuple(sorted({p.split(".")[0] for p in packages}))
    # Only files that can reach the provider are scanned up front; helpers are loaded on demand.
    relevant, edges = relevant_files(((f[0], f[1], f[3]) for f in files), provider, tops)
    # The imports and strings of the files left out are still read (from their bytes): what the
    # entry points reach can pass through them, and a class they name by dotted path is handed over.
    unread_edges = [
        ModuleEdge(module, target, Site(path, line))
        for path, module, _, _ in files
        if path not in relevant
        for target, line in edges[path]
    ]
    unscanned = [(f[0], f[3]) for f in files if f[0] not in relevant]
    files = [f for f in files if f[0] in relevant]
    helpers: dict[str, str] = {}

    def load(module: str) -> tuple[str, bool, bytes] | None:
        found = tree.find_module(module)
        helpers[module] = _module_id(tree, module)
        if found is None or not found.path or not found.path.endswith(".py"):
            return None
        return found.path, found.is_package, tree.read(found.path)

    scanner = ConsumerScanner(provider, tops, load)
    usage = scanner.scan(files, unscanned, bodies_read)
    if kept is not None:
        kept.append(scanner)
    usage.helper_modules = dict(sorted(helpers.items()))
    usage.module_edges += unread_edges
    usage.package_root = tree.package_root
    cache.put_raw(key, dump_json(ConsumerUsage, usage))
    return usage


def scan_beside_provider(
    consumer: SourceTree,
    packages: list[str],
    cache: AnalysisCache,
    index: ProviderIndex,
    baseline: ProviderIndex | None,
    search: NameSearch,
    bodies_read: Callable[[ConsumerUsage, Sequence[Worker]], None] | None = None,
    kept: list[object] | None = None,
    scan_ended: Callable[[], None] | None = None,
) -> ConsumerUsage:
    """Scan the consumer while second processes do the provider's side (see `prefetch`): index
    the provider modules its import statements name (here and at the baseline) and read the
    provider's identifiers for the contact rules' searches. When the scan is cached, what it
    names is known and the provider's side is shared between the two processes. The indexes and
    the search hold what the workers made when this returns. `bodies_read`: see `scan_consumer`;
    it is also handed the children doing the provider's side. `kept`: see `scan_consumer`.
    `scan_ended`: called once the scan ended, when a child that ends from then on sends what it
    made here rather than to the cache (work started ahead that waits for it can be called off)."""
    also = [baseline] if baseline is not None else []
    workers: list[Worker | None] = []
    reading: list[Task] = []  # reading the identifiers, shared by whoever is free (`Shares`)
    ahead: list[Shares] = []  # taken by a child that ends before the scan does (`written_there`)

    def start(sources: list[bytes]) -> None:
        found, task = index.indexing_task(provider_names(sources, index.package), also), search.reading_task()
        reading.extend([task] if task is not None else [])
        # A child that ends while this process still scans writes what it made to disk itself:
        # this process would write it later, on its own way to the result.
        if found is not None or task is not None:
            ahead.append(Shares(2 if found is not None and task is not None else 1))
            found, task = (written_there(each, cache, ahead[0]) if each is not None else None for each in (found, task))
        if found is not None and task is not None and parallel_jobs() == 2:
            workers.extend([fork_worker(found, task), None])  # one child indexes, then reads
        else:
            workers.extend(fork_worker(each) if each is not None else None for each in (found, task))

    try:
        read = None if bodies_read is None else (lambda usage: bodies_read(usage, [w for w in workers if w]))
        usage = scan_consumer(consumer, packages, index.package, cache, start, read, kept)
        for shares in ahead:  # a child that ends from now on is waited for: it sends at once
            shares.take_rest()
        if scan_ended is not None:
            scan_ended()
        if not workers:  # the scan was cached: what it names is known, and is indexed by both processes
            # A tree that searches its files in place is searched so (`search_in_place_unless_read`)
            # rather than every file's identifiers read now.
            task = search.reading_task() if searches_names(usage) and not search.tree.searches_in_place else None
            reading.extend([task] if task is not None else [])
            workers += [
                index.start_indexing(used_symbols(usage), also),
                fork_worker(task) if task is not None else None,
            ]
        if workers[0] is not None:
            index.index_rest()  # the shares of the index its child has not taken: this process is free
        if reading and search.tree.searches_in_place:
            # The files are searched in place instead: what the second process read while the
            # scan went on is used if it is every file's (see `search_in_place_unless_read`).
            search.stop_reading()
        elif reading and any(workers) and searches_names(usage):
            # The shares no second process has taken yet. What this process reads stays in memory
            # (the contact rules' process, forked later, has it at no cost); the rest is loaded
            # from the cache where it is asked for.
            store(reading[0](), cache)
        index.collect(workers.pop(0))
        search.collect(workers.pop(0))
        search.search_in_place_unless_read()
    finally:
        for worker in workers:  # the scan failed: nobody will read what they send
            if worker is not None:
                worker.close()
    return usage


# The parts of the contact rules in the order the second process takes them: protocol-drift, most
# of their time, first; this process takes the others if they are left when its checks are done.
_PARTS = (ContactPart.PROTOCOLS, ContactPart.OTHERS)


class ContactRules:
    """The contact rules of one check (`check_contact`), run in a second process where one can
    run and the consumer is big enough to pay for it (see `prefetch`); otherwise here, when
    their findings are asked for. They are in two parts (`ContactPart`): this process takes the
    part the second one has not begun when it asks for the findings. The second process sends
    back its findings and what it wrote to the cache; it reads the cache through a connection of
    its own."""

    # Fewer scanned consumer files than this: the rules take less than a process costs.
    MIN_FILES = 20

    def __init__(
        self,
        usage: ConsumerUsage,
        index: ProviderIndex,
        search: NameSearch,
        baseline: Baseline | None,
        judge: Callable[[Sequence[Condition]], Judgement],
        text: ConsumerText | None = None,
    ) -> None:
        """`text`: the consumer's scanned files, asked what it passes on (none: all of it)."""
        self.usage, self.index, self.search, self.baseline, self.judge = usage, index, search, baseline, judge
        self.text = text
        self.worker: Worker | None = None
        self._shares: Shares | None = None  # one per part (`_PARTS`), taken by either process

    def run(self, part: ContactPart | None = None) -> list[Finding]:
        """The findings of the rules of `part` (by default, all of them), computed here."""
        if self.text is None:
            return check_contact(self.usage, self.index, self.search, self.baseline, self.judge, part=part)
        text = self.text
        return check_contact(
            self.usage,
            self.index,
            self.search,
            self.baseline,
            self.judge,
            text.passes_on,
            text.makes,
            text.reads,
            text.mentions,
            text.refers_to,
            text.naming,
            part,
            lambda module: text.importing(module, self.usage.located),
            text.function_at,
            lambda cls, quiet: text.may_make(cls, quiet, self.usage.located),
        )

    def start(self) -> None:
        if self.usage.files < self.MIN_FILES:
            return
        if searches_names(self.usage):
            # In memory before the fork: the child then has them at no cost (this process loads
            # them next anyway, for the caller search's second process).
            self.search.load()
        holders: list[ProviderIndex | NameSearch | ConsumerText] = [self.index, self.search]
        if self.baseline is not None:
            holders.append(self.baseline.index)
        if self.text is not None:
            holders.append(self.text)

        shares = Shares(len(_PARTS))

        def task() -> list[tuple[str, bytes]]:
            recorder = RecordingCache(self.index.cache.reopened())
            for holder in holders:
                holder.cache = recorder
            found = {share: self.run(_PARTS[share]) for share in shares}
            return [(ANSWER, pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL)), *recorder.written]

        self.worker = fork_worker(task)
        self._shares = shares if self.worker is not None else None

    def close(self) -> None:
        """Stop the second process if its findings were never asked for (the check failed)."""
        if self.worker is not None:
            self.worker.close()

    def findings(self) -> list[Finding]:
        """The rules' findings: the parts the second process has not begun are computed here (this
        process, done with its own checks, would only wait), then its are waited for; what it did
        not send (it failed) is computed here too. Without a second process, all of them here."""
        if self.worker is None or self._shares is None:
            return self.run()
        found = {share: self.run(_PARTS[share]) for share in self._shares}
        answer = self.worker.collect_into(self.index.cache)
        if answer is not None:
            theirs: dict[int, list[Finding]] = pickle.loads(answer)  # from our own child, never from a file
            found = {**theirs, **found}
        return [f for share, part in enumerate(_PARTS) for f in (found[share] if share in found else self.run(part))]


def _imported(usage: ConsumerUsage, skipped: AbstractSet[str] = frozenset()) -> set[Ref]:
    """What the consumer's import statements name of the provider (but in the files `skipped`)."""
    return {
        use.ref
        for group in usage.groups
        if group.path not in skipped
        for alternative in group.alternatives
        for use in alternative
    }


def provider_names_reached(usage: ConsumerUsage, skipped: AbstractSet[str] = frozenset()) -> set[str]:
    """Every provider name the consumer imports, reads, calls or patches, dotted
    ("vllm.envs.environment_variables.update"): what of the provider it can change. `skipped`:
    files whose uses do not count (code that cannot run at this provider)."""
    refs = _imported(usage, skipped)
    refs |= {ref for use in usage.attributes if use.site.path not in skipped for ref in use.choices}
    refs |= {ref for use in usage.calls if use.site.path not in skipped for ref in use.choices}
    refs |= {ref.attr(patch.attr) for patch in usage.patches if patch.site.path not in skipped for ref in patch.owner}
    return {ref.dotted for ref in refs}


def _changed_by(
    reached_anywhere: set[str], usage: ConsumerUsage, gated_off: Callable[[], AbstractSet[str]]
) -> Callable[[str], bool]:
    """`ProviderIndex.table_changed_outside` at a provider: does the consumer reach the table (or
    `__getattr__`) in code that can run there? Which files only false version gates import there
    (`gated_off`) is asked only for a name it reaches somewhere (most consumers reach none)."""
    reached: set[str] | None = None

    def changed(name: str) -> bool:
        nonlocal reached
        last = name.rpartition(".")[2]
        if last not in reached_anywhere:
            return False
        if reached is None:
            reached = {part for each in provider_names_reached(usage, gated_off()) for part in each.split(".")}
        return last in reached

    return changed


def _unknown(ref: Ref) -> Status:
    """What a name's status is before the names are judged."""
    return Status.UNKNOWN


def _gated_off(
    start: ReachRoots | None, usage: ConsumerUsage, version: str | None, platform: str | None = None
) -> set[str]:
    """The files of consumer modules that only branches false at this provider's version (or on
    `platform`) import (`Reachability.blocked`, with version gates and tests of the platform alone
    decided: before the checks, which need what this says): the code there cannot run here."""
    if start is None:
        return set()
    # Names are not judged yet: a condition on one is taken to hold (only version gates and tests
    # of the platform decide).
    found = reachability(start, usage, lambda when: judge(when, version, _unknown, platform=platform))
    return {start.modules[module] for module in found.blocked if module in start.modules}


def used_symbols(usage: ConsumerUsage) -> list[str]:
    """The provider symbols a scan found imported or patched: what its checks resolve first."""
    refs = _imported(usage) | {owner for patch in usage.patches for owner in patch.owner}
    return sorted(ref.symbol for ref in refs)


def _module_id(tree: SourceTree, module: str) -> str:
    found = tree.find_module(module)
    return tree.content_id(found.path) if found is not None and found.path.endswith(".py") else ""


@dataclass(frozen=True)
class _Edge:
    """What the checks of one edge read once the consumer is scanned: the trees' indexes and
    searches `analyse_trees` made, the consumer's packages, the options and the cache."""

    consumer: SourceTree
    packages: list[str]
    index: ProviderIndex
    base_index: ProviderIndex | None
    search: NameSearch
    callers: CallerSearch
    options: CheckOptions
    cache: AnalysisCache
    reach: ReachRoots | None  # where the consumer's reachability starts, if it is judged
    declared: dict[str, list[tuple[str, str]]]  # the consumer's entry points (`named_entry_points`)


@without_gc
def analyse_trees(
    consumer: SourceTree,
    provider: SourceTree,
    baseline: SourceTree | None,
    options: CheckOptions,
    cache: AnalysisCache,
) -> CheckResult:
    """Run every part of one check (`results.check_trees` says what the arguments are; it
    reads a cached result first). `cache` is handed to every part: what second processes
    send is found there."""
    package = provider_package(provider, options.package)
    packages = consumer_packages(consumer, options.consumer_package, package)
    index = ProviderIndex(provider, package, cache)
    base_index = ProviderIndex(baseline, package, cache) if baseline is not None else None
    search = NameSearch(provider, package, cache, platform=options.platform)
    declared = named_entry_points(consumer)  # read once: for the reach's roots and the start-up walk
    reach = reach_roots(consumer, packages, package, declared)
    if reach is not None:  # the provider's strings, read with its identifiers (`provider_strings`)
        search.also_read = strings_reader(provider, reach.tops)
    callers = CallerSearch(index, search, options.platform)
    left_by_scan: list[object] = []  # the scan's syntax trees, freed while the contact rules end
    try:
        usage = scan_beside_provider(
            consumer,
            packages,
            cache,
            index,
            base_index,
            search,
            search_callers_ahead(callers, options.provider_version),
            left_by_scan,
            callers.call_off_unstarted,
        )
        edge = _Edge(consumer, packages, index, base_index, search, callers, options, cache, reach, declared)
        return _check_usage(edge, usage, left_by_scan)
    finally:
        callers.close()  # a search started ahead whose answer was never asked for (the check failed)


def _check_usage(edge: _Edge, usage: ConsumerUsage, left_by_scan: list[object]) -> CheckResult:
    """`analyse_trees` once the consumer is scanned: every check of what it uses. `left_by_scan`
    holds what the scan left to free (`scan_consumer`'s `kept`)."""
    consumer, packages, options, cache = edge.consumer, edge.packages, edge.options, edge.cache
    index, base_index, search = edge.index, edge.base_index, edge.search
    provider, package = index.tree, index.package
    provider_version, baseline_version = options.provider_version, options.baseline_version
    consumer_indexes: dict[str, ProviderIndex] = {}

    def in_consumer(symbol: str) -> Resolution:
        top = symbol.split(".")[0].split(":")[0]
        if top not in consumer_indexes:
            consumer_indexes[top] = ProviderIndex(consumer, top, cache)
        return consumer_indexes[top].resolve_symbol(symbol)

    scanned = [path for each in packages for path in consumer.python_files(each)]
    text = ConsumerText(consumer, scanned, cache, set(usage.contact.passed_members), set(usage.read_paths))

    # What the consumer reaches of a table (or a module's `__getattr__`), under any module that
    # re-exports it, it may change (vllm-rbln adds its env vars to vLLM's table).
    # Code that cannot run at a provider's version changes nothing there (ROLL reads the table only
    # in its patch package for vLLM 0.8.4).
    names_reached = provider_names_reached(usage)
    reached_anywhere = {part for name in names_reached for part in name.split(".")}
    # The provider's modules the consumer imports itself, by every dotted prefix of what it reaches:
    # imported on every platform (`ImportGates`, asked only for a platform).
    consumer_reaches = (
        frozenset(name.rsplit(".", i)[0] for name in names_reached for i in range(name.count(".") + 1))
        if options.platform is not None
        else frozenset()
    )
    search.consumer_reaches = consumer_reaches
    # The files only false version gates import, at a release's version: asked once each, and only
    # when something needs it.
    # Bound to what it reads, not to `edge`: the indexes hold it, and `edge` holds them (a cycle
    # would keep every index and the scan alive until the collector's next pass).
    roots, platform = edge.reach, options.platform
    gated_off_at = functools.cache(lambda version: frozenset(_gated_off(roots, usage, version, platform)))
    for each, version in ((index, provider_version), (base_index, baseline_version)):
        if each is not None:
            each.table_changed_outside = _changed_by(reached_anywhere, usage, functools.partial(gated_off_at, version))
    drift_baseline = (
        Baseline(
            base_index,
            options.baseline_label or base_index.tree.label,
            baseline_version,
            functools.partial(gated_off_at, baseline_version),
            options.platform,
            consumer_reaches,
        )
        if base_index is not None
        else None
    )
    # What the provider hands a method overriding one of its own, as that method annotates it.
    usage = typed_params(usage, Hierarchy(usage, index, text.mentions))
    checker = UsageChecker(
        usage,
        index,
        provider_version,
        drift_baseline,
        in_consumer,
        text.mentions,
        search,
        edge.callers,
        options.platform,
    )

    entry, commands = _plugin_entry_points(edge.declared, package), _commands(edge.declared, packages)
    modules = _consumer_modules(consumer, cache)
    contact = ContactRules(usage, index, search, drift_baseline, checker.judge, text)
    contact.start()  # in a second process, while the names are checked here
    try:
        checker.callers.start_search(checker.caller_names())  # in another: a core is free for most of the checks
        # Before the checks here, which take shares of the caller search: it goes on meanwhile.
        idle = check_idle_hooks(checker.hierarchy, usage.contact, search, drift_baseline, text.reading_classes)
        findings = checker.run()
        if options.relocations:
            findings += check_relocations(options.relocations, index, base_index, checker.sites_by_symbol())
        override_findings, replaced = check_overrides(
            usage, index, in_consumer, base_index, lambda module: consumer.find_module(module) is not None
        )
        judged_since = baseline_version if base_index is not None else None
        gates = gate_readings(usage, provider_version, judged_since)
        flips, refusing = gate_flips(usage, provider_version, judged_since)
        findings += flips
        checker.findings.stops.update(refusing)
        findings += override_findings
        startup: StartupWalk | None = None
        if contact.worker is not None:
            # Its findings are waited for next: what the cache holds is written meanwhile (most of
            # what the run will write: the identifiers and indexes), not after; and the start-up
            # code is walked, once the scan's trees are let go (the peak memory is theirs).
            cache.flush()
            left_by_scan.clear()  # freed now, not on the way to the checks
            startup = StartupWalk(entry, modules, findings, checker.findings.stops, commands)
        functions, classes = _uncalled_rules(edge, usage, checker, search, findings)
        contact_findings = contact.findings()
        # A hook another rule reported already is not reported again as no longer called.
        reported = {f.symbol for f in contact_findings if f.rule in (Rule.OVERRIDE_DRIFT, Rule.PROTOCOL_DRIFT)}
        findings += contact_findings + [f for f in idle if f.symbol not in reported]
    finally:
        contact.close()
        checker.callers.close()
    reach = None
    if edge.reach is not None:
        reach = reachability(
            edge.reach,
            usage,
            checker.judge,
            lambda module: provider.find_module(module) is not None,
            lambda tops: provider_strings(provider, package, tops, cache),
        )
        findings = demote_unreached(findings, reach, lambda path: consumer.module_name(path)[0])
        findings = _demote_unread_served(findings, usage, consumer, packages, provider, package, reach)
    findings = demote_after_failures(findings, first_failures(checker.import_failures))
    stops = [stop for stop in usage.module_stops if checker.judge(stop.rest).reach is Reach.DEAD]
    findings = demote_stopped(findings, stops, usage.module_of)
    refused = [r for r in usage.requirements if checker.judge((r.holds,)).reach is Reach.DEAD]
    findings = demote_refused(findings, refused)
    findings = demote_uncalled(findings, UncalledMethods(checker.hierarchy, search.unused, text.reads))
    findings = demote_uncalled_functions(findings, functions)
    if classes is not None:
        findings = demote_unnamed_classes(findings, classes)
    startup = startup or StartupWalk(entry, modules, findings, checker.findings.stops, commands)
    findings = startup.tell(findings)
    findings = sorted(findings, key=Finding.sort_key)
    summary = checker.summary(findings, overrides=replaced)
    if not (usage.read_paths or summary.import_sites or summary.patch_sites or findings):
        # No file of the consumer even names the provider (outside comments and strings).
        findings = [_no_contact(package, packages)]
        summary = checker.summary(findings, overrides=replaced)
    result = CheckResult(
        consumer=consumer.label,
        provider=provider.label,
        package=package,
        summary=summary,
        findings=tuple(findings),
        gates=tuple(gates),
    )
    return result


def _plugin_entry_points(declared: dict[str, list[tuple[str, str]]], package: str) -> list[tuple[str, str]]:
    """(group, "module:function") of each entry point the consumer declares (`named_entry_points`)
    in a group of the provider's, in the order vLLM calls them: its platform plugins (to choose
    the platform), then the others."""
    groups = {group: items for group, items in declared.items() if group.startswith(f"{package}.")}
    ordered = sorted(groups, key=lambda group: ("platform" not in group, group))
    return [(group, value) for group in ordered for _, value in groups[group]]


def _commands(declared: dict[str, list[tuple[str, str]]], packages: list[str]) -> list[tuple[str, str]]:
    """(name, "module:function") of each console script the consumer declares (`named_entry_points`)
    whose module is in one of its top packages: a command the plugin's package starts on its own."""
    tops = {package.split(".")[0] for package in packages}
    scripts = declared.get("console_scripts", [])
    return [(name, target) for name, target in scripts if target.partition(":")[0].strip().split(".")[0] in tops]


def _consumer_modules(consumer: SourceTree, cache: AnalysisCache) -> Callable[[], tuple[OutlineReader, Imports]]:
    """What `StartupWalk` reads the consumer's modules with, made anew for each walk (what one
    walk read goes with it): their outlines and their imports, kept in `cache` by content, each
    module found once for both."""

    def modules() -> tuple[OutlineReader, Imports]:
        locate = functools.cache(functools.partial(_located, consumer))
        return _consumer_outlines(consumer, cache, locate), _consumer_imports(consumer, cache, locate)

    return modules


def _located(consumer: SourceTree, module: str) -> tuple[str, str] | None:
    """A consumer module's path and content id (None for a module the consumer has no source of)."""
    found = consumer.find_module(module)
    if found is None or not found.path.endswith(".py"):
        return None
    return found.path, consumer.content_id(found.path)


def _consumer_outlines(
    consumer: SourceTree, cache: AnalysisCache, locate: Callable[[str], tuple[str, str] | None]
) -> OutlineReader:
    """The consumer modules' outlines (`code_outline`), each file parsed at most once, and only
    where the cache has not its outline or the part of it a walk asks for."""

    @functools.cache
    def parse(module: str) -> ast.Module | None:
        located = locate(module)
        if located is None:
            return None
        try:
            return parse_limited(consumer.read(located[0]))
        except (SyntaxError, ValueError):
            return None

    return OutlineReader(locate, parse, cache)


def _consumer_imports(
    consumer: SourceTree, cache: AnalysisCache, locate: Callable[[str], tuple[str, str] | None]
) -> Imports:
    """A consumer module's path and what importing it imports (`relevant.imported_modules`), read
    from its bytes once and kept in `cache` by its content (None for a module the consumer has no
    source of)."""

    @functools.cache
    def imports(module: str) -> tuple[str, frozenset[str]] | None:
        located = locate(module)
        if located is None:
            return None
        path, content = located
        key = f"{IMPORTS_FORMAT}:{module}:{path}:{content}"
        data = cache.get_raw(key)
        kept = load_json(list[str], data) if data is not None else None
        if kept is None:
            kept = sorted(imported_modules(path, module, path.endswith("__init__.py"), consumer.read(path)))
            cache.put_raw(key, dump_json(list[str], kept))
        return path, frozenset(kept)

    return imports


def _no_contact(package: str, packages: list[str]) -> Finding:
    """A check that found the consumer using nothing of the provider proves nothing: most often
    the wrong consumer package, or the wrong provider (`no-contact`)."""
    scanned = ", ".join(packages)
    return Finding(
        Rule.NO_CONTACT,
        Severity.WARNING,
        scanned,
        (),
        f"no file of {scanned} names {package} (outside comments and strings): this check proves nothing "
        "about the pair; check the consumer package (consumer-package, --consumer-package) and the provider's",
    )


def _uncalled_rules(
    edge: _Edge, usage: ConsumerUsage, checker: UsageChecker, search: NameSearch, findings: list[Finding]
) -> tuple[UncalledFunctions, UnnamedClasses | None]:
    """The rules of private functions and of a plugin's classes nothing names, with the consumer's
    files naming what they will ask about for `findings` already read: while the contact rules'
    process works (what its findings add is read when asked)."""
    consumer = edge.consumer
    files = ConsumerFiles(consumer)
    # Consumer modules provider code may import by a provider module's name: an import hook's, or
    # put in `sys.modules` ("*": a value not known, any module).
    serving = [each.target for each in usage.module_edges if each.after] + usage.injected_values
    served = {found.path for module in serving if module != "*" for found in [consumer.find_module(module)] if found}
    silent = provider_silence(served, "*" in serving, search.unwritten, search.written_as_string)
    functions = UncalledFunctions(files, silent, checker.idle_installs)
    plugin = edge.reach is not None and bool(edge.reach.groups)  # as `Reachability.library` tells it
    classes = UnnamedClasses(checker.hierarchy, files, silent) if plugin else None
    files.look_for(asked_names(findings, functions, classes))  # one search of the consumer's files for all
    return functions, classes


def _demote_unread_served(
    findings: list[Finding],
    usage: ConsumerUsage,
    consumer: SourceTree,
    packages: list[str],
    provider: SourceTree,
    package: str,
    reach: Reachability,
) -> list[Finding]:
    """`served_definitions.demote_unread_served` over the modules an import hook of the consumer
    serves in a provider module's place; their files are read only when an error has a site there."""
    hooked = sorted({(edge.target, edge.after) for edge in usage.module_edges if edge.after})
    errors = [site for f in findings if f.severity is Severity.ERROR for site in f.sites]
    error_paths = {site.path for site in errors}
    served = []
    for module, provider_module in hooked:
        found = consumer.find_module(module)
        if found is None or not found.path.endswith(".py") or found.path not in error_paths:
            continue
        try:
            tree = parse_limited(consumer.read(found.path))
        except (SyntaxError, ValueError):
            continue
        served.append(ServedModule(module, found.path, provider_module, tuple(definitions(tree))))
    if not served:
        return findings
    # The names of the definitions holding an error's site: both trees are searched once for all.
    asked = sorted(
        {d.name for m in served for d in m.definitions for s in errors if s.path == m.path and d.holds(s.line)}
    )
    words = [name.encode() for name in asked]
    own_files = [path for top in packages for path in consumer.python_files(top)]
    consumer_texts = dict(consumer.read_many(consumer.files_containing(own_files, words)))
    provider_texts = dict(provider.read_many(provider.files_containing(provider.python_files(package), words)))
    provider_trees: dict[str, ast.Module | None] = {}

    def provider_tree(path: str) -> ast.Module | None:
        if path not in provider_trees:
            try:
                provider_trees[path] = parse_limited(provider_texts[path])
            except (SyntaxError, ValueError):
                provider_trees[path] = None
        return provider_trees[path]

    def unreached(path: str) -> bool:
        return reach.unreached(consumer.module_name(path)[0]) is not None

    def unread(module: ServedModule, name: str) -> bool:
        needle = name.encode()
        word = re.compile(rb"\b" + re.escape(needle) + rb"\b")
        for path, data in consumer_texts.items():
            if needle in data and len(word.findall(data)) > (path == module.path) and not unreached(path):
                return False  # the plugin names it besides its definition: it may use it itself
        replaced = provider.find_module(module.provider_module)
        for path, data in provider_texts.items():
            if needle not in data or (replaced is not None and path == replaced.path):
                continue  # (the module served in its place is never loaded)
            reader, is_package = provider.module_name(path)
            parsed = provider_tree(path)
            if parsed is None or reads_served(parsed, reader, is_package, module.provider_module, name):
                return False
        return True

    return demote_unread_served(findings, served, unread, unreached)


def search_callers_ahead(
    callers: CallerSearch, version: str | None
) -> Callable[[ConsumerUsage, Sequence[Worker]], None]:
    """The scan's `bodies_read`, given the children doing the provider's side: once its patches
    are known, start the search for the provider's calls of what they replace with a narrower
    function (`UsageChecker.caller_names`), while the scan resolves what was handed over, in a
    process that starts once those children are done, on the core they free. The names are
    told from what the second process has indexed so far (parsing here would hold up the scan):
    a module it has not is unknown to this guess. A guess from part of the usage costs time when
    wrong, never a finding: the checks search whatever names it missed, after the scan, as
    they would anyway."""

    def start(usage: ConsumerUsage, busy: Sequence[Worker]) -> None:
        index = callers.index
        if parallel_jobs() < 2 or not any(patch.replacement for patch in usage.patches):
            return  # no second process would search, or nothing is replaced by a function
        # Read through, so that the guess's lookups are not counted as the run's own.
        cached = ProviderIndex(index.tree, index.package, RecordingCache(index.cache), parses=False)
        callers.start_search(UsageChecker(usage, cached, version).caller_names(), ahead=busy)

    return start


def _version_gates(usage: ConsumerUsage) -> list[tuple[Condition, Gate]]:
    """The consumer's version gates, one per site and text (the first met), in that order."""
    out: dict[tuple[str, int, str], tuple[Condition, Gate]] = {}
    for condition in usage.gates:
        if condition.gate is None or not condition.gate.varies:
            continue  # a helper answering one literal (negated, combined) is the same at every version
        out.setdefault((condition.site.path, condition.site.line, condition.text), (condition, condition.gate))
    return [out[k] for k in sorted(out)]


def gate_readings(usage: ConsumerUsage, version: str | None, baseline_version: str | None) -> list[GateReading]:
    """Every version gate of the consumer, evaluated at the provider's version (and the baseline's)."""
    return [
        GateReading(
            condition.site,
            condition.text,
            describe(evaluate(gate, version)),
            describe(evaluate(gate, baseline_version)) if baseline_version else "",
        )
        for condition, gate in _version_gates(usage)
    ]


def gate_flips(
    usage: ConsumerUsage, version: str | None, baseline_version: str | None
) -> tuple[list[Finding], set[tuple[str, str, Site]]]:
    """`gate-flip`: a gate whose value differs between the baseline and the pin; or, where runtime
    state leaves the gate undecided at one of them, a version part of its `and`/`or` that flips
    (`not envs.SKIP_CHECK and not version_compatible()`). One finding per test as written, with
    every place it is tested. A test guarding a function's `raise` that now holds where it did not
    is the consumer refusing this provider version (`_refusal`); with the stops of such errors
    (the raise, which raises where it runs: for the start-up walk)."""
    if not baseline_version:
        return [], set()
    raising = dict(usage.gated_raises)
    sites: dict[tuple[str, str], list[Site]] = {}
    errors: set[tuple[str, str]] = set()
    for condition, gate in _version_gates(usage):
        before, now = evaluate(gate, baseline_version), evaluate(gate, version)
        raise_site = raising.get(condition.site)
        error = False
        if before is not None and now is not None:
            if before == now:
                continue
            told = f"`{condition.text}` is {describe(before)} at the baseline ({baseline_version}) and {describe(now)}"
            message = f"{told} at {version}: the code that runs here changed without the consumer changing"
            if raise_site is not None and now is True:
                message, error = f"{told} at {version}: {_REFUSES.format(raise_site)}", True
        else:
            parts = gate.parts if gate.op in (GateOp.ALL, GateOp.ANY) else ()
            flips = [
                (part, was, is_)
                for part in parts
                if part.is_version
                and (was := evaluate(part, baseline_version)) is not None
                and (is_ := evaluate(part, version)) is not None
                and was != is_
            ]
            if not flips:
                continue
            part, was, is_ = flips[0]
            told = f"`{part.text}` is {describe(was)} at the baseline ({baseline_version}) and {describe(is_)}"
            told = f"{told} at {version}, in `{condition.text}`"
            message = f"{told}, which runtime state decides too: the code that runs here may change without the consumer changing"
            if raise_site is not None and is_ is True and gate.op is GateOp.ALL:
                message, error = _refusal(told, raise_site, [p for p in parts if p is not part])
        at = sites.setdefault((condition.text, message), [])
        at.append(condition.site)
        if error and raise_site is not None:
            errors.add((condition.text, message))
            at.append(raise_site)
    # One flip of one test is one finding, with every place the consumer tests it (trl tests its
    # `_HAS_STATEFUL_TRAINER_ENGINE` flag at 15 places).
    findings = [
        Finding(
            Rule.GATE_FLIP,
            Severity.ERROR if key in errors else Severity.WARNING,
            key[0],
            tuple(sorted(set(at))),
            key[1],
        )
        for key, at in sites.items()
    ]
    raises = set(raising.values())
    stops = {(Rule.GATE_FLIP.value, key[0], site) for key in errors for site in sites[key] if site in raises}
    return findings, stops


_REFUSES = "the consumer raises at {} (it refuses this provider version)"


def _refusal(told: str, raise_site: Site, rest: list[Gate]) -> tuple[str, bool]:
    """The message of a function's `if a and <version part> and ...: raise` whose version part
    now holds, and whether it is an error: the other parts are opt-outs (`not envs.SKIP_CHECK`),
    so it raises unless someone set one; for other runtime state, a warning, where it holds."""
    opt_out = [p for p in rest if p.op is GateOp.RUNTIME and p.text.startswith("not ")]
    others = [f"`{p.text}`" for p in rest if p not in opt_out]
    if others:
        return f"{told}: where {' and '.join(others)} holds, {_REFUSES.format(raise_site)}", False
    unless = " or ".join(f"`{p.text[4:].strip()}`" for p in opt_out)
    return f"{told}: {_REFUSES.format(raise_site)}" + (f", unless {unless} is set" if unless else ""), True
