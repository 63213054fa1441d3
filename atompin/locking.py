"""manifest -> sources -> analysis -> lock: resolve every pair and judge it.

`Locker` is the resolver behind `atompin lock` (and `bump`, `verify`): it
resolves each component's ref to a commit through the git cache, detects its
version, runs every check edge of every pair through the analysis engine, and
returns the typed `Lock`. The CLI only chooses paths and prints.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

from atompin import lockfile
from atompin.analysis.archs import arch_coverage, supported_archs
from atompin.analysis.cache import AnalysisCache, SqliteAnalysisCache, default_cache_dir
from atompin.analysis.engine import check_trees
from atompin.analysis.pinning import branch_ref, declared_target, declared_target_skew, unconstrained_plugin
from atompin.analysis.provider import ProviderIndex
from atompin.errors import AtompinError
from atompin.files import write_atomically
from atompin.lockfile import Lock, LockedAlternative, LockedCheck, LockedComponent, LockedFinding, LockedPair
from atompin.manifest import Manifest, Pair, load_manifest
from atompin.model import COUNT_FIELDS, Finding, RefKind, Rule, Severity, Summary, Verdict
from atompin.refs import is_local
from atompin.relocations import applicable, digests, manifest_tables
from atompin.sources.git import GitCache, GitTree, ResolvedRef
from atompin.sources.version import normalize_version, version_from_tree

Progress = Callable[[str], None]


@dataclass
class ResolvedComponent:
    name: str
    resolved: ResolvedRef
    version: str
    tree: GitTree

    @property
    def label(self) -> str:
        """How messages name it: its version, else its short commit."""
        return self.version or self.resolved.commit[:12]


class BaselineSource(str, Enum):
    """Where an edge's baseline came from (recorded in the lock for reviewers)."""

    OPTION = "option"  # lock --baseline REF
    DECLARED = "declared"  # the consumer's declares file
    PREVIOUS_LOCK = "previous-lock"  # the same pair's provider pin in the previous lock


@dataclass
class Baseline:
    component: ResolvedComponent
    source: BaselineSource


class Locker:
    """Resolve and check the pairs of one manifest."""

    def __init__(
        self,
        manifest: Manifest,
        manifest_dir: Path,
        git_cache: GitCache,
        cache: AnalysisCache,
        progress: Progress | None = None,
        baseline_ref: str | None = None,
    ) -> None:
        # baseline_ref: the provider ref that relocation entries without params are compared
        # with (default: what the consumer declares it was written against).
        self.baseline_ref = baseline_ref
        # The lock before this run: where each pair's provider was pinned (a baseline).
        self.previous: Lock | None = None
        self.manifest = manifest
        self.manifest_dir = manifest_dir
        self.git = git_cache
        self.cache = cache
        self.progress = progress or (lambda _m: None)
        providers = [manifest.components[e.provider].package for e in manifest.checks]
        self._resolved: dict[tuple[str, str], ResolvedComponent] = {}
        self.tables = manifest_tables(manifest_dir / manifest.relocations, manifest_dir, providers)

    @classmethod
    def open(
        cls,
        manifest: Manifest,
        manifest_path: Path,
        cache_dir: Path | None = None,
        offline: bool = False,
        progress: Progress | None = None,
        baseline_ref: str | None = None,
    ) -> Locker:
        """A locker for `manifest` (read from `manifest_path`) over the shared caches under `cache_dir`."""
        root = cache_dir or default_cache_dir()
        git_cache = GitCache(root, offline=offline, progress=progress)
        return cls(
            manifest, manifest_path.resolve().parent, git_cache, SqliteAnalysisCache(root), progress, baseline_ref
        )

    def fetch_url(self, repo: str) -> str:
        """Relative local paths in pairs.toml are relative to the manifest's folder."""
        if is_local(repo) and not repo.startswith("file://") and not Path(repo).is_absolute():
            return str((self.manifest_dir / repo).resolve())
        return repo

    def resolve_component(self, name: str, ref: str) -> ResolvedComponent:
        """A component at a ref: commit, version and tree (once per run, however many pairs pin it)."""
        key = (name, ref)
        if key not in self._resolved:
            self._resolved[key] = self._resolve_component(name, ref)
        return self._resolved[key]

    def _resolve_component(self, name: str, ref: str) -> ResolvedComponent:
        component = self.manifest.components[name]
        self.progress(f"resolving {name} @ {ref}")
        resolved = self.git.resolve(self.fetch_url(component.repo), ref)
        tree = self.git.tree(resolved)
        tree.label = f"{name}@{resolved.commit[:12]}"
        version = self.detect_version(component.package, resolved, tree)
        return ResolvedComponent(name, resolved, version, tree)

    def detect_version(self, package: str, resolved: ResolvedRef, tree: GitTree) -> str:
        """From the tag name, else a version file in the tree, else a version tag on the commit."""
        if resolved.kind is RefKind.TAG and (v := normalize_version(resolved.ref)):
            return v
        if v := version_from_tree(tree, package):
            return v
        tag = self.git.exact_tag(resolved.url, resolved.commit)
        return normalize_version(tag) if tag else ""

    def baseline_tree(
        self, consumer: str, provider: str, resolved: ResolvedComponent, pin: ResolvedComponent, pair: str = ""
    ) -> Baseline | None:
        """The provider the consumer was written against, for the drift rules and for relocation
        entries without parameters: `--baseline` when given; else the version or commit the
        consumer declares (its `declares` file); else the same pair's provider in the previous
        lock (kept while the pin stays where it was, so a re-lock changes nothing)."""
        refs: list[tuple[str, BaselineSource]] = []
        if self.baseline_ref:
            refs = [(self.baseline_ref, BaselineSource.OPTION)]
        path = self.manifest.components[consumer].declares.get(provider)
        if not refs and path and path in resolved.tree.files:
            version, commit = declared_target(resolved.tree.read(path).decode("utf-8", "replace"), provider)
            refs = [(f"v{version}", BaselineSource.DECLARED)] if version else []
            refs += [(commit, BaselineSource.DECLARED)] if commit else []
        if not refs:
            refs = self._previous_baseline(pair, consumer, provider, pin)
        for ref, source in refs:
            try:
                return Baseline(self.resolve_component(provider, ref), source)
            except AtompinError:
                continue  # not reachable: judge without a baseline
        return None

    def _previous_baseline(
        self, pair: str, consumer: str, provider: str, pin: ResolvedComponent
    ) -> list[tuple[str, BaselineSource]]:
        old = self.previous.pair(pair) if self.previous is not None and pair else None
        if old is None or provider not in old.components:
            return []
        old_commit = old.components[provider].commit
        if old_commit != pin.resolved.commit:
            return [(old_commit, BaselineSource.PREVIOUS_LOCK)]
        check = next((c for c in old.checks if c.consumer == consumer and c.provider == provider), None)
        if check is not None and check.baseline_commit and check.baseline_from == BaselineSource.PREVIOUS_LOCK:
            return [(check.baseline_commit, BaselineSource.PREVIOUS_LOCK)]
        return []

    def supported_archs(
        self, comp: ResolvedComponent, package: str, constants: list[str]
    ) -> dict[str, tuple[str, ...]]:
        """A component's supported GPU architectures, cached by commit (a commit never changes)."""
        key = "archs:" + json.dumps([package, sorted(constants), comp.resolved.commit])
        cached = self.cache.get_raw(key)
        if cached is not None:
            return {k: tuple(v) for k, v in json.loads(cached).items()}
        found = supported_archs(ProviderIndex(comp.tree, package, self.cache), constants)
        self.cache.put_raw(key, json.dumps(found).encode())
        return found

    def lock_pair(self, pair: Pair) -> LockedPair:
        components = {name: self.resolve_component(name, ref) for name, ref in sorted(pair.refs.items())}
        findings: list[LockedFinding] = []
        checks: list[LockedCheck] = []
        for comp in components.values():
            if comp.resolved.kind is RefKind.BRANCH:
                findings.append(_locked("pair", branch_ref(comp.name, comp.resolved.ref)))
        for edge in self.manifest.edges(pair):
            consumer, provider = components[edge.consumer], components[edge.provider]
            spec_c, spec_p = self.manifest.components[edge.consumer], self.manifest.components[edge.provider]
            self.progress(f"checking {pair.name}: {edge.name}")
            tables = applicable(self.tables.get(spec_p.package, []), provider.version)
            entries = [(t.path, entry) for t in tables for entry in t.table.moved]
            baseline = self.baseline_tree(edge.consumer, edge.provider, consumer, provider, pair.name)
            result = check_trees(
                consumer.tree,
                provider.tree,
                spec_p.package,
                edge.consumer_package or spec_c.package,
                self.cache,
                entries,
                baseline.component.tree if baseline is not None else None,
                baseline_label=baseline.component.label if baseline is not None else "",
            )
            edge_findings = list(result.findings)
            if edge.provider in spec_c.declares:
                path = spec_c.declares[edge.provider]
                text = consumer.tree.read(path).decode("utf-8", "replace") if path in consumer.tree.files else None
                edge_findings += declared_target_skew(
                    edge.consumer, edge.provider, path, text, provider.resolved.commit, provider.version
                )
            pyproject = (
                consumer.tree.read("pyproject.toml").decode("utf-8", "replace")
                if "pyproject.toml" in consumer.tree.files
                else None
            )
            edge_findings += unconstrained_plugin(
                edge.consumer, edge.provider, spec_p.package, spec_p.plugin_groups, pyproject
            )
            edge_findings = [_escalated(f, edge.fail_on) for f in edge_findings]
            checks.append(
                _locked_check(edge.consumer, edge.provider, edge.gate, result.summary, edge_findings, baseline)
            )
            findings += [_locked(edge.name, f) for f in edge_findings]
        fleet = self.manifest.gpu_archs(pair)
        supported: dict[str, dict[str, tuple[str, ...]]] = {}
        for comp in components.values():
            spec = self.manifest.components[comp.name]
            # Opt-in: only a declared fleet or named constants make the search worth its reads.
            wanted = bool(fleet or spec.arch_constants) and comp.tree.find_module(spec.package) is not None
            supported[comp.name] = self.supported_archs(comp, spec.package, spec.arch_constants) if wanted else {}
            coverage = arch_coverage(comp.name, supported[comp.name], fleet)
            if coverage is not None:
                findings.append(_locked("pair", coverage))
        verdicts = [c.verdict for c in checks] + [Verdict.WARN for f in findings if f.check == "pair"]
        return LockedPair(
            name=pair.name,
            verdict=Verdict.worst(verdicts),
            components={
                name: LockedComponent(
                    repo=self.manifest.components[name].repo,
                    ref=c.resolved.ref,
                    ref_kind=c.resolved.kind,
                    commit=c.resolved.commit,
                    version=c.version,
                    supported_archs={where: sorted(v) for where, v in supported[name].items()},
                )
                for name, c in components.items()
            },
            checks=checks,
            findings=findings,
        )

    def __enter__(self) -> Locker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cache.close()

    def lock(self, manifest_hash: str, only: list[str] | None = None, previous: Lock | None = None) -> Lock:
        """Lock every pair (or only the named ones, keeping the others from `previous`)."""
        wanted = [self.manifest.pair(n) for n in only] if only else list(self.manifest.pairs)
        self.previous = previous
        locked = {p.name: self.lock_pair(p) for p in wanted}
        if only and previous is not None:
            names = {p.name for p in self.manifest.pairs}
            for old in previous.pairs:
                if old.name in names and old.name not in locked:
                    locked[old.name] = old
        self.cache.flush()
        return Lock(
            manifest_hash=manifest_hash, relocation_tables=digests(self.tables), pairs=list(locked.values())
        ).normalized()


@dataclass
class LockRun:
    lock: Lock
    text: str
    path: Path
    written: bool  # False when the lock on disk already said exactly this


def lock_manifest(
    manifest_path: Path,
    lock_path: Path | None = None,
    only: list[str] | None = None,
    cache_dir: Path | None = None,
    offline: bool = False,
    progress: Progress | None = None,
    baseline_ref: str | None = None,
) -> LockRun:
    """`atompin lock`: resolve and check the manifest's pairs (or only the named ones, keeping
    the others from the lock on disk) and write the lock when it changed."""
    manifest, _ = load_manifest(manifest_path)
    target = lock_path or lockfile.default_path(manifest_path)
    previous = lockfile.read(target) if (only and target.exists()) else _readable(target)
    with Locker.open(manifest, manifest_path, cache_dir, offline, progress, baseline_ref) as locker:
        result = locker.lock(manifest.digest(), only, previous)
    before = target.read_text() if target.exists() else None
    text = lockfile.dumps(result)
    if text != before:
        write_atomically(target, text)
    return LockRun(result, text, target, text != before)


def _escalated(finding: Finding, fail_on: list[Rule]) -> Finding:
    """A warning of a rule the edge names in `fail-on` counts as an error there."""
    if finding.severity is not Severity.WARNING or finding.rule not in fail_on:
        return finding
    return replace(finding, severity=Severity.ERROR, message=f"{finding.message} (an error here: fail-on)")


def _readable(path: Path) -> Lock | None:
    """The lock at `path` when there is one this atompin reads: only a source of baselines, so a
    lock it cannot read is not an error here (it is about to be replaced)."""
    try:
        return lockfile.read(path) if path.exists() else None
    except AtompinError:
        return None


def edge_verdict(gate: bool, findings: list[Finding]) -> Verdict:
    """fail: an error on a gate edge; warn: an error elsewhere, or any warning; else pass."""
    severities = {f.severity for f in findings}
    if Severity.ERROR in severities:
        return Verdict.FAIL if gate else Verdict.WARN
    return Verdict.WARN if Severity.WARNING in severities else Verdict.PASS


def _locked_check(
    consumer: str, provider: str, gate: bool, summary: Summary, findings: list[Finding], baseline: Baseline | None = None
) -> LockedCheck:
    by_rule: dict[str, int] = {}
    for f in findings:
        by_rule[f.rule.value] = by_rule.get(f.rule.value, 0) + 1
    return LockedCheck(
        consumer=consumer,
        provider=provider,
        gate=gate,
        verdict=edge_verdict(gate, findings),
        findings_by_rule=dict(sorted(by_rule.items())),
        baseline_commit=baseline.component.resolved.commit if baseline is not None else "",
        baseline_version=baseline.component.version if baseline is not None else "",
        baseline_from=baseline.source.value if baseline is not None else "",
        **{name: getattr(summary, name) for name in COUNT_FIELDS},
    )


def _locked(check: str, f: Finding) -> LockedFinding:
    return LockedFinding(
        check=check,
        rule=f.rule,
        severity=f.severity,
        symbol=f.symbol,
        message=f.message,
        sites=[str(s) for s in f.sites],
        alternatives=[
            LockedAlternative(symbol=a.symbol, status=a.status, sites=[str(s) for s in a.sites]) for a in f.alternatives
        ],
        detail=f.detail,
    )
