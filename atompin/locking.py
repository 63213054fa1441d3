"""manifest -> sources -> analysis -> lock: resolve every pair and judge it.

This is the one place that wires git sources to the analysis core; the CLI
only chooses paths and prints.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from atompin.analysis.archs import arch_coverage, supported_archs
from atompin.analysis.cache import IndexCache
from atompin.analysis.engine import check_trees
from atompin.analysis.pinning import branch_ref, declared_target_skew, parse_env, unconstrained_plugin
from atompin.analysis.provider import ProviderIndex
from atompin.errors import AtompinError
from atompin.lock import Lock, LockedAlternative, LockedCheck, LockedComponent, LockedFinding, LockedPair
from atompin.manifest import Manifest, Pair
from atompin.model import CheckResult, Finding, Severity
from atompin.relocations import applicable, digests, manifest_tables
from atompin.sources.git import GitCache, GitTree, RefKind, ResolvedRef, is_local, version_from_tag
from atompin.sources.version import version_from_tree

Progress = Callable[[str], None]


@dataclass
class ResolvedComponent:
    name: str
    resolved: ResolvedRef
    version: str
    tree: GitTree


class Locker:
    """Resolve and check the pairs of one manifest."""

    def __init__(self, manifest: Manifest, manifest_dir: Path, git_cache: GitCache, index_cache: IndexCache,
                 progress: Progress | None = None, baseline_ref: str | None = None) -> None:  # fmt: skip
        # baseline_ref: the provider ref that relocation entries without params are compared
        # with (default: what the consumer declares it was written against).
        self.baseline_ref = baseline_ref
        self.manifest = manifest
        self.manifest_dir = manifest_dir
        self.git = git_cache
        self.index_cache = index_cache
        self.progress = progress or (lambda _m: None)
        providers = [manifest.components[e.provider].package for e in manifest.checks]
        self._resolved: dict[tuple[str, str], ResolvedComponent] = {}
        self.tables = manifest_tables(manifest_dir / manifest.relocations, manifest_dir, providers)

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
        if resolved.kind is RefKind.TAG and (v := version_from_tag(resolved.ref)):
            return v
        if v := version_from_tree(tree, package):
            return v
        tag = self.git.exact_tag(resolved.url, resolved.commit)
        return version_from_tag(tag) if tag else ""

    def baseline_tree(self, consumer: str, provider: str, resolved: ResolvedComponent) -> GitTree | None:
        """The provider the consumer declares it was written against, when it declares one."""
        path = self.manifest.components[consumer].declares.get(provider)
        refs: list[str] = [self.baseline_ref] if self.baseline_ref else []
        if not refs and path and path in resolved.tree.files:
            env = parse_env(resolved.tree.read(path).decode("utf-8", "replace"))
            prefix = provider.upper().replace("-", "_")
            refs = [f"v{env[f'{prefix}_VERSION'][0]}"] if f"{prefix}_VERSION" in env else []
            refs += [env[f"{prefix}_COMMIT"][0]] if f"{prefix}_COMMIT" in env else []
        for ref in refs:
            try:
                return self.resolve_component(provider, ref).tree
            except AtompinError:
                continue  # not reachable: judge entries without a baseline
        return None

    def supported_archs(
        self, comp: ResolvedComponent, package: str, constants: list[str]
    ) -> dict[str, tuple[str, ...]]:
        """A component's supported GPU architectures, cached by commit (a commit never changes)."""
        key = "archs:" + json.dumps([package, sorted(constants), comp.resolved.commit])
        cached = self.index_cache.get_raw(key)
        if cached is not None:
            return {k: tuple(v) for k, v in json.loads(cached).items()}
        found = supported_archs(ProviderIndex(comp.tree, package, self.index_cache), constants)
        self.index_cache.put_raw(key, json.dumps(found).encode())
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
            baseline = None
            if any(entry.params is None for _, entry in entries):
                baseline = self.baseline_tree(edge.consumer, edge.provider, consumer)
            result = check_trees(consumer.tree, provider.tree, spec_p.package, edge.consumer_package or spec_c.package,
                                 self.index_cache, entries, baseline)  # fmt: skip
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
            checks.append(_locked_check(edge.consumer, edge.provider, edge.gate, result, edge_findings))
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
        verdicts = [c.verdict for c in checks] + ["warn" for f in findings if f.check == "pair"]
        return LockedPair(
            name=pair.name,
            verdict=_worst(verdicts),
            components={
                name: LockedComponent(
                    repo=self.manifest.components[name].repo,
                    ref=c.resolved.ref,
                    ref_kind=c.resolved.kind.value,
                    commit=c.resolved.commit,
                    version=c.version,
                    supported_archs={where: sorted(v) for where, v in supported[name].items()},
                )
                for name, c in components.items()
            },
            checks=checks,
            findings=findings,
        )

    def lock(self, manifest_hash: str, only: list[str] | None = None, previous: Lock | None = None) -> Lock:
        """Lock every pair (or only the named ones, keeping the others from `previous`)."""
        wanted = [self.manifest.pair(n) for n in only] if only else list(self.manifest.pairs)
        locked = {p.name: self.lock_pair(p) for p in wanted}
        if only and previous is not None:
            names = {p.name for p in self.manifest.pairs}
            for old in previous.pairs:
                if old.name in names and old.name not in locked:
                    locked[old.name] = old
        self.index_cache.flush()
        return Lock(
            manifest_hash=manifest_hash, relocation_tables=digests(self.tables), pairs=list(locked.values())
        ).normalized()


def edge_verdict(gate: bool, findings: list[Finding]) -> str:
    """fail: an error on a gate edge; warn: an error elsewhere, or any warning; else pass."""
    severities = {f.severity for f in findings}
    if Severity.ERROR in severities:
        return "fail" if gate else "warn"
    return "warn" if Severity.WARNING in severities else "pass"


def _worst(verdicts: list[str]) -> str:
    for v in ("fail", "warn"):
        if v in verdicts:
            return v
    return "pass"


def _locked_check(
    consumer: str, provider: str, gate: bool, result: CheckResult, findings: list[Finding]
) -> LockedCheck:
    s = result.summary
    by_rule: dict[str, int] = {}
    for f in findings:
        by_rule[f.rule.value] = by_rule.get(f.rule.value, 0) + 1
    return LockedCheck(
        consumer=consumer,
        provider=provider,
        gate=gate,
        verdict=edge_verdict(gate, findings),
        import_sites=s.import_sites,
        symbols=s.symbols,
        groups=s.groups,
        patch_sites=s.patch_sites,
        patch_targets=s.patch_targets,
        references=s.references,
        overrides=s.overrides,
        findings_by_rule=dict(sorted(by_rule.items())),
    )


def _locked(check: str, f: Finding) -> LockedFinding:
    return LockedFinding(
        check=check,
        rule=f.rule.value,
        severity=f.severity.value,
        symbol=f.symbol,
        message=f.message,
        sites=[str(s) for s in f.sites],
        alternatives=[
            LockedAlternative(symbol=a.symbol, status=a.status.value, sites=[str(s) for s in a.sites])
            for a in f.alternatives
        ],
    )
