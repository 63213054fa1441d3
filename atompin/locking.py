"""manifest -> sources -> analysis -> lock: resolve every pair and judge it.

`Locker` is the resolver behind `atompin lock` (and `bump`, `verify`): it
resolves each component's ref to a commit through the git cache, detects its
version, runs every check edge of every pair through the analysis engine, and
returns the typed `Lock`. The CLI only chooses paths and prints.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from enum import Enum
from pathlib import Path

from atompin import lockfile
from atompin.acceptance import accept
from atompin.analysis.archs import arch_coverage, arch_list_sites, supported_archs, uncovered
from atompin.analysis.cache import AnalysisCache, SqliteAnalysisCache, default_cache_dir
from atompin.analysis.packages import MissingPackage
from atompin.analysis.pinning import (
    baseline_unavailable,
    branch_ref,
    declared_target,
    declared_target_skew,
    read_pyproject,
    requirement_skew,
    unconstrained_plugin,
)
from atompin.analysis.provider import ProviderIndex
from atompin.analysis.results import check_trees
from atompin.errors import AtompinError, InputError, SourceError
from atompin.files import write_atomically
from atompin.lockfile import Lock, LockedAlternative, LockedCheck, LockedComponent, LockedFinding, LockedPair
from atompin.manifest import CheckEdge, Manifest, Pair, load_manifest
from atompin.model import COUNT_FIELDS, Finding, RefKind, Rule, Severity, Summary, Verdict
from atompin.refs import is_local
from atompin.relocations import LoadedTable, applicable, digests, manifest_tables
from atompin.sources.git import GitCache, GitTree, ResolvedRef
from atompin.sources.version import normalize_version, version_from_tree
from atompin.tomlfile import key_path, locate

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
        manifest_path: Path | None = None,
    ) -> None:
        # baseline_ref: the provider ref that relocation entries without params are compared
        # with (default: what the consumer declares it was written against).
        self.baseline_ref = baseline_ref
        # Where bad input in the manifest is said to be (file:line).
        self.manifest_path = manifest_path or manifest_dir / "pairs.toml"
        # The lock before this run: where each pair's provider was pinned (a baseline).
        self.previous: Lock | None = None
        self.manifest = manifest
        self.manifest_dir = manifest_dir
        self.git = git_cache
        self.cache = cache
        self.progress = progress or (lambda _m: None)
        providers = [manifest.components[e.provider].package for e in manifest.checks]
        self._resolved: dict[tuple[str, str], ResolvedComponent] = {}
        # The day acceptances with an `until` date are judged on.
        self.today = date.today()
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
            manifest,
            manifest_path.resolve().parent,
            git_cache,
            SqliteAnalysisCache(root),
            progress,
            baseline_ref,
            manifest_path,
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

    def resolve_all(self, pairs: Sequence[Pair]) -> None:
        """Resolve every component ref the pairs pin, one repository per thread (each is mostly
        waiting on git). Progress lines and errors come out in a fixed order, as one-by-one
        resolution would give them."""
        wanted = sorted({(name, ref) for p in pairs for name, ref in p.refs.items()} - self._resolved.keys())
        by_component: dict[str, list[str]] = {}
        for name, ref in wanted:
            by_component.setdefault(name, []).append(ref)
        if len(by_component) < 2:
            return
        import threading
        from concurrent.futures import ThreadPoolExecutor

        local = threading.local()
        emit, git_emit = self.progress, self.git.progress

        def held(say: Progress) -> Progress:
            return lambda msg: local.lines.append((say, msg)) if hasattr(local, "lines") else say(msg)

        def resolve(name: str) -> tuple[list[ResolvedComponent], list[tuple[Progress, str]]]:
            local.lines = []
            try:
                return [self._resolve_component(name, ref) for ref in by_component[name]], local.lines
            finally:
                del local.lines

        self.progress, self.git.progress = held(emit), held(git_emit)
        try:
            with ThreadPoolExecutor(max_workers=min(4, len(by_component))) as pool:
                for name, future in [(name, pool.submit(resolve, name)) for name in by_component]:
                    resolved, lines = future.result()
                    for say, msg in lines:
                        say(msg)
                    for ref, component in zip(by_component[name], resolved):
                        self._resolved.setdefault((name, ref), component)
        finally:
            self.progress, self.git.progress = emit, git_emit

    def forget(self, name: str, ref: str) -> None:
        """Drop a resolved component from memory (a search visits each candidate ref once)."""
        self._resolved.pop((name, ref), None)

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
        self,
        consumer: str,
        provider: str,
        pin: ResolvedComponent,
        declared: Sequence[tuple[str, str | None]],
        pair: str = "",
    ) -> tuple[Baseline | None, list[Finding]]:
        """The provider the consumer was written against, for the drift rules and for relocation
        entries without parameters: `--baseline` when given; else the version or commit the
        consumer declares (`declared`: each of its `declares` files with its text, None where the
        file is not there); else the same pair's provider in the previous
        lock (kept while the pin stays where it was, so a re-lock changes nothing). When one is
        named but none of its refs resolves, None and a `baseline-unavailable` warning: the edge
        is then checked without one, which finds much less, and the lock must say so."""
        refs: list[tuple[str, BaselineSource]] = []
        if self.baseline_ref:
            refs = [(self.baseline_ref, BaselineSource.OPTION)]
        path, text, others = "", None, []
        # What each declares file names, in order (a Dockerfile's `HEAD` names nothing); the first
        # that names something sites the warning when none resolves.
        for candidate, candidate_text in declared if not refs else []:
            if candidate_text is not None:
                version, commit = declared_target(candidate_text, provider)
                named = [f"v{version}"] if version else []
                named += [commit] if commit else []
                refs += [(ref, BaselineSource.DECLARED) for ref in named if (ref, BaselineSource.DECLARED) not in refs]
                if named and text is None:
                    path, text = candidate, candidate_text
                elif named:
                    others.append(candidate)
        if not refs:
            refs = self._previous_baseline(pair, consumer, provider, pin)
        failures: list[AtompinError] = []
        for ref, source in refs:
            try:
                return Baseline(self.resolve_component(provider, ref), source), []
            except AtompinError as exc:
                self.progress(f"baseline {provider}@{ref} for {consumer}: {exc}")
                failures.append(exc)
        if not refs:
            return None, []
        # The lock is committed: what went wrong is said without the messages' paths and URLs.
        why = (
            "git or network failure, or not in the cache offline"
            if any(isinstance(exc, SourceError) for exc in failures)
            else "no such ref in the repository"
        )
        source = refs[0][1]
        where = (path or "") if source is BaselineSource.DECLARED else ""
        return None, [baseline_unavailable(provider, [r for r, _ in refs], source.value, why, where, text, others)]

    def _missing_package(
        self, exc: MissingPackage, consumer: ResolvedComponent, provider: ResolvedComponent, edge: CheckEdge
    ) -> InputError:
        """The check's missing package (`exc`), said at the manifest's line that names it: the
        edge's `consumer-package`, else the component's `package`."""
        comp = consumer if exc.option == "--consumer-package" else provider
        if comp is consumer and edge.consumer_package:
            loc: tuple[str | int, ...] = ("checks", self.manifest.checks.index(edge), "consumer-package")
        else:
            loc = ("components", comp.name, "package")
        text = self.manifest_path.read_text(encoding="utf-8-sig") if self.manifest_path.is_file() else ""
        return InputError(
            f"{self.manifest_path}:{locate(text, loc)}: {key_path(loc)}: {comp.name} has no package "
            f"{exc.package!r} at {comp.resolved.ref} ({comp.resolved.commit[:12]}; top-level packages: {exc.found}); "
            "fix the name, or pin a ref that has it"
        )

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
        found = _archs_from_cache(self.cache.get_raw(key))
        if found is None:
            found = supported_archs(ProviderIndex(comp.tree, package, self.cache), constants)
            self.cache.put_raw(key, json.dumps(found).encode())
        for spec in constants:
            where, _, name = spec.rpartition(":")
            module = comp.tree.module_name(where)[0] if where.endswith(".py") else where
            if f"{module}:{name}" not in found:
                raise InputError(
                    f"pairs.toml: components.{comp.name}.arch-constants: {spec!r} names no literal list of GPU "
                    f"architectures in {comp.name} at {comp.resolved.ref} ({comp.resolved.commit[:12]}); fix the path "
                    "(path/to/file.py:NAME or module:NAME)"
                )
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
            declared = [
                (path, consumer.tree.read_text(path) if path in consumer.tree.files else None)
                for path in spec_c.declares_files(edge.provider)
            ]
            baseline, missing = self.baseline_tree(edge.consumer, edge.provider, provider, declared, pair.name)
            try:
                result = check_trees(
                    consumer.tree,
                    provider.tree,
                    spec_p.package,
                    edge.consumer_package or spec_c.package,
                    self.cache,
                    entries,
                    baseline.component.tree if baseline is not None else None,
                    provider_version=provider.version or None,
                    baseline_version=(baseline.component.version or None) if baseline is not None else None,
                    baseline_label=baseline.component.label if baseline is not None else "",
                    platform=self.manifest.fleet.platform,
                )
            except MissingPackage as exc:
                raise self._missing_package(exc, consumer, provider, edge) from None
            edge_findings = [*missing, *result.findings]
            for g in result.gates:  # shown with --verbose
                before = f", {g.baseline} at the baseline" if g.baseline else ""
                self.progress(f"  version gate {g.text} at {g.site}: {g.value} at {provider.label}{before}")
            for path, text in declared:
                edge_findings += declared_target_skew(
                    edge.consumer, edge.provider, path, text, provider.resolved.commit, provider.version
                )
            pyproject = read_pyproject(
                consumer.tree.read_text("pyproject.toml") if "pyproject.toml" in consumer.tree.files else None
            )
            edge_findings += unconstrained_plugin(
                edge.consumer, edge.provider, spec_p.package, spec_p.plugin_groups, pyproject
            )
            edge_findings += requirement_skew(edge.consumer, edge.provider, spec_p.package, pyproject, provider.version)
            edge_findings = [_escalated(f, edge.fail_on) for f in edge_findings]
            edge_findings = accept(edge_findings, edge, provider.version, self.today)
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
            coverage = None
            if uncovered(supported[comp.name], fleet):
                named = bool(spec.arch_constants)
                index = ProviderIndex(comp.tree, spec.package, self.cache)
                sites = {} if named else arch_list_sites(index, sorted(supported[comp.name]))
                coverage = arch_coverage(comp.name, supported[comp.name], fleet, named, sites)
            if coverage is not None:
                findings.append(_locked("pair", coverage))
        _, verdict = locked_verdicts({c.name: c.gate for c in checks}, findings)
        return LockedPair(
            name=pair.name,
            verdict=verdict,
            manifest_hash=self.pair_digest(pair),
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

    def pair_tables(self, pair: Pair) -> dict[str, str]:
        """The relocation tables (path -> digest) a pair's checks choose from."""
        return tables_for_pair(self.manifest, self.tables, pair)

    def pair_digest(self, pair: Pair) -> str:
        """What pairs.toml (and its relocation tables) say about one pair, hashed: a pair whose
        entry in the lock has another hash was locked from another manifest."""
        return pair_digest(self.manifest, pair, self.pair_tables(pair))

    def __enter__(self) -> Locker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cache.close()

    def lock(self, manifest_hash: str, only: list[str] | None = None, previous: Lock | None = None) -> Lock:
        """Lock every pair (or only the named ones, keeping the others from `previous`)."""
        wanted = [self.manifest.pair(n) for n in only] if only else list(self.manifest.pairs)
        self.previous = previous
        self.resolve_all(wanted)
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


def lock_manifest(
    manifest_path: Path,
    lock_path: Path | None = None,
    only: list[str] | None = None,
    cache_dir: Path | None = None,
    offline: bool = False,
    progress: Progress | None = None,
    baseline_ref: str | None = None,
) -> Relock:
    """`atompin lock`: resolve and check the manifest's pairs (or only the named ones, keeping
    the others from the lock on disk) and write the lock when it changed (`not run.current`)."""
    run = relock(manifest_path, lock_path, only, cache_dir, offline, progress, baseline_ref)
    if not run.current:
        write_atomically(run.path, run.text)
    return run


@dataclass
class Relock:
    """The lock `atompin lock` would write, beside the one on disk (nothing written)."""

    lock: Lock
    text: str
    path: Path
    before: str | None  # the lock file's text (None: there is none)
    differences: list[str] = field(default_factory=list)

    @property
    def current(self) -> bool:
        return self.text == self.before


def relock(
    manifest_path: Path,
    lock_path: Path | None = None,
    only: list[str] | None = None,
    cache_dir: Path | None = None,
    offline: bool = False,
    progress: Progress | None = None,
    baseline_ref: str | None = None,
) -> Relock:
    """Resolve and check like `atompin lock` and compare with the lock on disk, writing nothing:
    `lock` writes the result, `lock --check` and `verify --recheck` require it to be byte-identical."""
    from atompin.files import read_text

    manifest, _ = load_manifest(manifest_path)
    target = lock_path or lockfile.default_path(manifest_path)
    before: str | None = None
    previous: Lock | None = None
    if only and target.exists():  # the other pairs are kept: the lock must be one atompin wrote
        before = read_text(target, "lock file")
        previous = lockfile.loads(before, target)
    elif target.is_file():  # replaced whole: any damage in the old lock is overwritten
        before = target.read_bytes().decode("utf-8-sig", "replace")
        previous = _readable_lock(before, target)  # its provider commits are baselines
    with Locker.open(manifest, manifest_path, cache_dir, offline, progress, baseline_ref) as locker:
        result = locker.lock(manifest.digest(), only, previous)
    text = lockfile.dumps(result)
    run = Relock(result, text, target, before)
    if text != before:
        run.differences = lock_differences(target.name, before, result)
    return run


def lock_differences(name: str, before: str | None, new: Lock) -> list[str]:
    """One line per way the lock text `before` differs from the lock `new`."""
    if before is None:
        return [f"{name}: no lock file; run `atompin lock`"]
    try:
        old = lockfile.loads(before, name)
    except AtompinError as err:
        return [f"{err}"]
    lines: list[str] = []
    for key in ("version", "generator", "manifest_hash", "relocation_tables"):
        if getattr(old, key) != getattr(new, key):
            lines.append(
                f"{name} says {key.replace('_', '-')} = {getattr(old, key)!r}, a re-lock gives {getattr(new, key)!r}"
            )
    old_pairs, new_pairs = {p.name: p for p in old.pairs}, {p.name: p for p in new.pairs}
    for pair in sorted(old_pairs.keys() - new_pairs.keys()):
        lines.append(f"{name} has pair {pair!r}, a re-lock does not")
    for pair in sorted(new_pairs.keys() - old_pairs.keys()):
        lines.append(f"{name} lacks pair {pair!r}, a re-lock adds it")
    for pair in sorted(old_pairs.keys() & new_pairs.keys()):
        a, b = old_pairs[pair], new_pairs[pair]
        if a == b:
            continue
        what = [
            f"{field_name} {getattr(a, field_name)!s} -> {getattr(b, field_name)!s}"
            for field_name in ("verdict", "manifest_hash")
            if getattr(a, field_name) != getattr(b, field_name)
        ]
        for comp in sorted(a.components.keys() | b.components.keys()):
            ca, cb = a.components.get(comp), b.components.get(comp)
            if ca is None or cb is None:
                what.append(f"{comp} {'added' if ca is None else 'removed'}")
            elif ca != cb:
                changed = [k for k in type(ca).model_fields if getattr(ca, k) != getattr(cb, k)]
                what.append(f"{comp} {', '.join(k.replace('_', '-') for k in changed)}")
        if a.checks != b.checks:
            what.append("checks")
        if a.findings != b.findings:
            what.append(f"findings ({len(a.findings)} -> {len(b.findings)})")
        lines.append(f"{name}: pair {pair} differs from a re-lock: {'; '.join(what)}")
    if not lines:  # same data, other bytes: hand-edited layout
        lines.append(f"{name}: not byte-identical to what `atompin lock` writes (edited by hand?)")
    return lines


def tables_for_pair(manifest: Manifest, tables: dict[str, list[LoadedTable]], pair: Pair) -> dict[str, str]:
    """The relocation tables (path -> digest) the checks of `pair` choose from."""
    packages = {manifest.components[e.provider].package for e in manifest.edges(pair)}
    chosen = [t for package in sorted(packages) for t in tables.get(package, [])]
    return dict(sorted((t.path, t.digest) for t in chosen))


def pair_digest(manifest: Manifest, pair: Pair, tables: dict[str, str]) -> str:
    """The hash of `Manifest.pair_meaning` plus the digests of the relocation tables the pair uses."""
    data = {**manifest.pair_meaning(pair), "relocation-tables": tables}
    blob = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    return "sha256:" + hashlib.sha256(blob).hexdigest()


def _archs_from_cache(data: bytes | None) -> dict[str, tuple[str, ...]] | None:
    """A cached supported-architecture result; None when absent or not what atompin wrote."""
    if data is None:
        return None
    try:
        loaded = json.loads(data)
        if isinstance(loaded, dict) and all(
            isinstance(v, list) and all(isinstance(a, str) for a in v) for v in loaded.values()
        ):
            return {str(k): tuple(v) for k, v in loaded.items()}
    except ValueError:
        pass
    return None


def _escalated(finding: Finding, fail_on: list[Rule]) -> Finding:
    """A warning of a rule the edge names in `fail-on` counts as an error there."""
    if finding.severity is not Severity.WARNING or finding.rule not in fail_on:
        return finding
    return replace(finding, severity=Severity.ERROR, message=f"{finding.message} (an error here: fail-on)")


def _readable_lock(text: str, path: Path) -> Lock | None:
    """The lock in `text` when it is one atompin can read, else None (a damaged lock is replaced)."""
    try:
        return lockfile.loads(text, path)
    except AtompinError:
        return None


def edge_verdict(gate: bool, findings: Sequence[Finding | LockedFinding]) -> Verdict:
    """fail: an error on a gate edge; warn: an error elsewhere, or any warning; else pass.
    Findings pairs.toml accepts count for nothing."""
    severities = {f.severity for f in findings if not f.accepted}
    if Severity.ERROR in severities:
        return Verdict.FAIL if gate else Verdict.WARN
    return Verdict.WARN if Severity.WARNING in severities else Verdict.PASS


def locked_verdicts(gates: dict[str, bool], findings: Sequence[LockedFinding]) -> tuple[dict[str, Verdict], Verdict]:
    """Each check edge's verdict (edge name -> gate given) and the pair's, from its findings.

    The one place verdicts are judged from lock findings: `lock` writes what it returns and
    `verify` recomputes it from the lock on disk and the manifest's gates. Pair-level findings
    (check "pair") can only warn.
    """
    edges = {name: edge_verdict(gate, [f for f in findings if f.check == name]) for name, gate in sorted(gates.items())}
    pair_level = [Verdict.WARN for f in findings if f.check == "pair"]
    return edges, Verdict.worst([*edges.values(), *pair_level])


def _locked_check(
    consumer: str,
    provider: str,
    gate: bool,
    summary: Summary,
    findings: list[Finding],
    baseline: Baseline | None = None,
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
        accepted=f.accepted,
        detail=f.detail,
    )
