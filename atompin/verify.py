"""`atompin verify`: is the lock current, passing, and do build files agree with it?

The gate trusts nothing it can re-derive. Offline by default: the lock parses,
its manifest hash matches, and everything the lock says that pairs.toml also
says is compared field by field (pairs, components, repos, refs, check edges,
gates, each pair's manifest hash); every verdict is recomputed from the lock's
findings and the manifest's gates; ref kinds are checked against the git cache
where it holds the repository. `--remote` asks the remotes whether tags moved,
`--recheck` re-runs the whole lock and requires the same bytes. Bake files (HCL
or JSON) are compared variable by variable.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from atompin.analysis.cache import AnalysisCache
from atompin.errors import InputError, StaleLockError
from atompin.lockfile import Lock, LockedComponent, LockedPair
from atompin.manifest import Manifest, Pair
from atompin.model import RefKind, Severity
from atompin.refs import HEX
from atompin.sources.git import GitCache
from atompin.sources.installed import Installed, commit_matches


@dataclass
class VerifyReport:
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    passes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def run_verify(
    manifest_path: Path,
    lock_path: Path | None = None,
    *,
    remote: bool = False,
    bake: list[Path] | None = None,
    pair: str | None = None,
    installed: str | None = None,
    consumer: Path | None = None,
    site: list[str] | None = None,
    cache_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    recheck: bool = False,
) -> VerifyReport:
    """`atompin verify`: every check the options ask for, in one report."""
    from atompin import lockfile
    from atompin.locking import Locker, relock
    from atompin.manifest import load_manifest
    from atompin.relocations import digests

    report = VerifyReport()
    manifest, _ = load_manifest(manifest_path)
    path = lock_path or lockfile.default_path(manifest_path)
    with Locker.open(manifest, manifest_path, cache_dir, False, progress) as locker:
        locked = lockfile.read(path)
        verify_lock(
            locked,
            manifest,
            report,
            digests(locker.tables),
            pair_tables=locker.pair_tables,
            cached_kind=lambda repo, ref: locker.git.cached_kind(locker.fetch_url(repo), ref),
            names=(path.name, manifest_path.name),
        )
        if remote:
            verify_remote(locked, locker.git, locker.fetch_url, report)
        if bake:
            verify_bake(bake, lockfile.select_pair(locked, pair), manifest, report)
        if installed is not None:
            chosen = lockfile.select_pair(locked, pair)
            verify_installed(manifest, chosen, installed, consumer, site, locker.cache, report)
    if recheck:
        run = relock(manifest_path, lock_path, cache_dir=cache_dir, progress=progress)
        if run.current:
            report.passes.append(f"{path.name}: a re-lock gives the same bytes")
        else:
            report.failures += [f"recheck: {line}; run `atompin lock`" for line in run.differences]
    return report


def staleness(lock: Lock, manifest: Manifest, tables: dict[str, str] | None = None) -> str | None:
    """Why the lock no longer matches the manifest or the relocation tables (one line that says
    to run `atompin lock`), or None when it is current."""
    if lock.manifest_hash != manifest.digest():
        return "stale: pairs.toml changed since the lock was written; run `atompin lock`"
    if tables is not None and tables != lock.relocation_tables:
        changed = sorted(set(tables.items()) ^ set(lock.relocation_tables.items()))
        names = ", ".join(sorted({path for path, _ in changed}))
        return f"stale: relocation tables changed since the lock was written ({names}); run `atompin lock`"
    return None


def require_current(
    lock: Lock, lock_path: Path, manifest: Manifest, manifest_path: Path, pair: str | None = None
) -> None:
    """StaleLockError (exit 1, one line) unless the lock matches the manifest and its relocation
    tables, and (with `pair`) that pair's entry re-derives from pairs.toml (pins, gates, verdicts)."""
    from atompin.locking import tables_for_pair
    from atompin.relocations import digests, manifest_tables

    base = manifest_path.resolve().parent
    providers = [manifest.components[e.provider].package for e in manifest.checks]
    loaded = manifest_tables(base / manifest.relocations, base, providers)
    problem = staleness(lock, manifest, digests(loaded))
    locked = lock.pair(pair) if pair is not None else None
    if problem is None and locked is not None:
        wanted = next((p for p in manifest.pairs if p.name == locked.name), None)
        out = _Disagreements(lock_path.name, manifest_path.name)
        if wanted is None:
            out.say(f"pair {locked.name}", "it exists", "there is no such pair")
        else:
            _rederive_pair(locked, wanted, manifest, out, lambda p: tables_for_pair(manifest, loaded, p), None)
        problem = out.lines[0] if out.lines else None
    if problem:
        raise StaleLockError(f"{lock_path}: {problem} (or pass --allow-stale)")


def require_current_file(manifest_path: Path, lock_path: Path) -> None:
    """`require_current` for the lock and manifest files at these paths."""
    from atompin import lockfile
    from atompin.manifest import load_manifest

    manifest, _ = load_manifest(manifest_path)
    require_current(lockfile.read(lock_path), lock_path, manifest, manifest_path)


def verify_lock(
    lock: Lock,
    manifest: Manifest,
    report: VerifyReport,
    tables: dict[str, str] | None = None,
    *,
    pair_tables: Callable[[Pair], dict[str, str]] | None = None,
    cached_kind: Callable[[str, str], RefKind | None] | None = None,
    names: tuple[str, str] = ("atompin.lock", "pairs.toml"),
) -> None:
    """The lock matches the manifest (and relocation tables), re-derives, and every gated verdict passes."""
    problem = staleness(lock, manifest, tables)
    if problem:
        report.failures.append(problem)
        return
    disagreements = rederive(lock, manifest, pair_tables, cached_kind, names)
    report.failures += disagreements
    if disagreements:
        return  # verdicts of a lock that does not re-derive mean nothing
    for pair in lock.pairs:
        failed = pair.gated_failures()
        if failed:
            # Findings pairs.toml accepts fail no gate.
            errors = sum(
                1
                for f in pair.findings
                if f.severity is Severity.ERROR and not f.accepted and f.check in {c.name for c in failed}
            )
            report.failures.append(
                f"{pair.name}: verdict fail ({', '.join(c.name for c in failed)}: {errors} error findings)"
            )
        else:
            report.passes.append(f"{pair.name}: verdict {pair.verdict.value}")


def rederive(
    lock: Lock,
    manifest: Manifest,
    pair_tables: Callable[[Pair], dict[str, str]] | None = None,
    cached_kind: Callable[[str, str], RefKind | None] | None = None,
    names: tuple[str, str] = ("atompin.lock", "pairs.toml"),
) -> list[str]:
    """What the lock says that the manifest, the lock's own findings or the git cache
    contradict: one line per field ("atompin.lock says X, pairs.toml says Y: run atompin lock").

    Offline and cheap. A lock rewritten to be consistent with itself and the manifest
    (findings removed along with their counts) is caught only by `--recheck`.
    """
    out = _Disagreements(*names)
    wanted_pairs = {p.name: p for p in manifest.pairs}
    locked_pairs = {p.name: p for p in lock.pairs}
    for name in sorted(locked_pairs.keys() - wanted_pairs.keys()):
        out.say(f"pair {name}", "it exists", "there is no such pair")
    for name in sorted(wanted_pairs.keys() - locked_pairs.keys()):
        out.say(f"pair {name}", "nothing of it", "it exists")
    for name in sorted(locked_pairs.keys() & wanted_pairs.keys()):
        _rederive_pair(locked_pairs[name], wanted_pairs[name], manifest, out, pair_tables, cached_kind)
    return out.lines


@dataclass
class _Disagreements:
    lock_name: str
    manifest_name: str
    lines: list[str] = field(default_factory=list)

    def say(self, where: str, locked: object, wanted: object, source: str | None = None) -> None:
        self.lines.append(
            f"{where}: {self.lock_name} says {locked}, {source or self.manifest_name} says {wanted}: run `atompin lock`"
        )


def _rederive_pair(
    locked: LockedPair,
    pair: Pair,
    manifest: Manifest,
    out: _Disagreements,
    pair_tables: Callable[[Pair], dict[str, str]] | None,
    cached_kind: Callable[[str, str], RefKind | None] | None,
) -> None:
    from atompin.locking import pair_digest

    where = f"pair {pair.name}"
    if pair_tables is not None:
        digest = pair_digest(manifest, pair, pair_tables(pair))
        if locked.manifest_hash != digest:
            out.lines.append(
                f"{where}: {out.lock_name} was locked from another {out.manifest_name} entry for this pair (its "
                f"manifest-hash is {locked.manifest_hash or 'missing'}); run `atompin lock --pair {pair.name}`"
            )
    if set(locked.components) != set(pair.refs):
        out.say(f"{where}: components", ", ".join(sorted(locked.components)), ", ".join(sorted(pair.refs)))
    for name in sorted(locked.components.keys() & pair.refs.keys()):
        comp, spec = locked.components[name], manifest.components[name]
        if comp.repo != spec.repo:
            out.say(f"{where}: {name}.repo", repr(comp.repo), repr(spec.repo))
        if comp.ref != pair.refs[name]:
            out.say(f"{where}: {name}.ref", repr(comp.ref), repr(pair.refs[name]))
        out.lines += _ref_kind_problems(where, name, comp, out.lock_name, cached_kind)
    _rederive_verdicts(locked, {e.name: e.gate for e in manifest.edges(pair)}, out)


def _rederive_verdicts(locked: LockedPair, gates: dict[str, bool], out: _Disagreements) -> None:
    """Check edges and gates as the manifest says; verdicts and counts as the findings say."""
    from atompin.locking import locked_verdicts

    where = f"pair {locked.name}"
    locked_gates = {c.name: c.gate for c in locked.checks}
    if set(locked_gates) != set(gates):
        out.say(f"{where}: checks", ", ".join(sorted(locked_gates)) or "none", ", ".join(sorted(gates)) or "none")
    for edge in sorted(locked_gates.keys() & gates.keys()):
        if locked_gates[edge] != gates[edge]:
            out.say(f"{where}: {edge} gate", _toml(locked_gates[edge]), _toml(gates[edge]))
    for check in sorted({f.check for f in locked.findings} - set(locked_gates) - {"pair"}):
        out.say(f"{where}: findings", f"some belong to check {check!r}", "the pair has no such check")
    edge_verdicts, verdict = locked_verdicts(gates, locked.findings)
    source = f"a recomputation from its findings and {out.manifest_name}'s gates"
    for check_ in locked.checks:
        expected = edge_verdicts.get(check_.name)
        if expected is not None and check_.verdict is not expected:
            out.say(f"{where}: {check_.name} verdict", check_.verdict.value, expected.value, source)
        by_rule: dict[str, int] = {}
        for f in locked.findings:
            if f.check == check_.name:
                by_rule[f.rule.value] = by_rule.get(f.rule.value, 0) + 1
        if check_.findings_by_rule != by_rule:
            out.say(f"{where}: {check_.name} findings-by-rule", check_.findings_by_rule, by_rule, "its findings")
    if locked.verdict is not verdict and set(locked_gates) == set(gates):
        out.say(f"{where}: verdict", locked.verdict.value, verdict.value, source)


def _toml(value: bool) -> str:
    return "true" if value else "false"


def _ref_kind_problems(
    where: str,
    name: str,
    comp: LockedComponent,
    lock_name: str,
    cached_kind: Callable[[str, str], RefKind | None] | None,
) -> list[str]:
    """A ref kind the ref itself or the git cache contradicts."""
    out: list[str] = []
    if comp.ref_kind is RefKind.COMMIT and not (HEX.match(comp.ref) and comp.commit.startswith(comp.ref)):
        out.append(
            f"{where}: {name}: {lock_name} says ref {comp.ref!r} is commit {comp.commit[:12]}, but a commit ref "
            f"is a prefix of its commit id: run `atompin lock`"
        )
    kind = cached_kind(comp.repo, comp.ref) if cached_kind is not None else None
    if kind is not None and kind is not comp.ref_kind:
        out.append(
            f"{where}: {name}: {lock_name} says ref {comp.ref!r} is a {comp.ref_kind.value}, the git cache says it "
            f"is a {kind.value}: run `atompin lock`"
        )
    return out


def verify_remote(lock: Lock, git: GitCache, fetch_url: Callable[[str], str], report: VerifyReport) -> None:
    """Every tag still resolves to the commit the lock recorded (`moved-ref`)."""
    for pair in lock.pairs:
        for name, comp in pair.components.items():
            if comp.ref_kind is RefKind.COMMIT:
                continue
            refs = git.remote_refs(fetch_url(comp.repo))
            now = refs.get(f"refs/tags/{comp.ref}")
            if comp.ref_kind is RefKind.BRANCH:
                # A tag of that name wins when atompin resolves the ref: a lock that calls it a
                # branch hides the tag from this check.
                if now is not None:
                    report.failures.append(
                        f"{pair.name}: {name}: atompin.lock says ref {comp.ref!r} is a branch, {comp.repo} says it "
                        "is a tag: run `atompin lock`"
                    )
                elif f"refs/heads/{comp.ref}" not in refs:
                    report.failures.append(f"{pair.name}: {name} branch {comp.ref} no longer exists at {comp.repo}")
                continue
            if now is None:
                report.failures.append(f"moved-ref: {pair.name}: {name} tag {comp.ref} no longer exists at {comp.repo}")
            elif now != comp.commit:
                report.failures.append(
                    f"moved-ref: {pair.name}: {name} tag {comp.ref} now points at {now[:12]}, the lock recorded "
                    f"{comp.commit[:12]}; run `atompin lock` and review the diff"
                )


def pin_variables(pair: LockedPair, manifest: Manifest) -> dict[str, str]:
    """Build variable name -> value for every component of a locked pair (plus the verdict)."""
    out: dict[str, str] = {}
    for name, comp in sorted(pair.components.items()):
        spec = manifest.components.get(name)
        if spec is None:
            continue
        out[spec.variable(name, "repo")] = comp.repo
        out[spec.variable(name, "ref")] = comp.ref
        out[spec.variable(name, "commit")] = comp.commit
        out[spec.variable(name, "version")] = comp.version
    out["ATOMPIN_PAIR"] = pair.name
    out["ATOMPIN_PAIR_TAG"] = image_tag(pair.name)
    out["ATOMPIN_VERDICT"] = pair.verdict.value
    return out


def image_tag(name: str) -> str:
    """A pair name as a valid image tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}): "+" (build metadata
    in a version, not allowed in a tag) becomes "_" as Helm does; anything else outside the set "-"."""
    tag = re.sub(r"[^A-Za-z0-9_.-]", "-", name.replace("+", "_"))
    return re.sub(r"^[.-]", "_", tag)[:128] or "_"


def verify_bake(
    paths: list[Path],
    pair: LockedPair,
    manifest: Manifest,
    report: VerifyReport,
    environ: Mapping[str, str] | None = None,
) -> None:
    """The bake files, merged as `docker buildx bake -f A -f B` merges them (later files win, the
    environment over defaults), pin what the lock pins for `pair`. A pinned variable that is empty
    in the merged result fails only when a target reads its empty value."""
    from atompin import bakefile

    bake = bakefile.merge([bakefile.read(p) for p in paths], os.environ if environ is None else environ)
    label = " + ".join(str(p) for p in paths)
    expected = pin_variables(pair, manifest)
    checked, unused = 0, []
    for name, want in expected.items():
        found = bake.values.get(name)
        if found is None:
            continue
        checked += 1
        if found.value == want:
            continue
        where = "the environment" if found.from_environment else found.source
        if found.value is None:
            report.warnings.append(
                f"{where}: {name} is an expression atompin does not evaluate; check by hand that it is "
                f"{want!r} ({pair.name})"
            )
            continue
        use = bake.unguarded_use(name)
        if found.value == "" and use is None:
            unused.append(name)
            continue
        setting = (
            f"the environment sets {name}={found.value!r}, which bake uses over the files' defaults"
            if found.from_environment
            else f"{found.source}: {name} = {found.value!r}"
        )
        reads = f" and target {use.target} reads it ({use.attribute})" if found.value == "" and use else ""
        report.failures.append(f"{setting}{reads}, but the lock pins {want!r} for {pair.name}")
    if checked == 0:
        report.warnings.append(
            f"{label}: no variable carries a pin of {pair.name} (expected names such as {', '.join(list(expected)[:3])})"
        )
    else:
        empty = f"; empty and read by no target as it is: {', '.join(unused)}" if unused else ""
        report.passes.append(f"{label}: {checked} pinned variable(s) checked against {pair.name}{empty}")


def component_for(manifest: Manifest, name: str) -> str:
    """The manifest component an installed distribution (or package) name stands for."""
    from packaging.utils import canonicalize_name

    for component, spec in manifest.components.items():
        if canonicalize_name(component) == canonicalize_name(name) or spec.package == name:
            return component
    raise InputError(f"no component of pairs.toml is {name!r} (components: {', '.join(manifest.components)})")


def verify_installed_pin(pair: LockedPair, component: str, installed: Installed, report: VerifyReport) -> None:
    """The installed distribution is the version and commit the lock pins for the pair."""
    comp = pair.components.get(component)
    if comp is None:
        report.failures.append(f"{pair.name} does not pin {component}")
        return
    if comp.version and installed.version != comp.version:
        report.failures.append(
            f"installed {installed.name} is {installed.version}, but {pair.name} pins {comp.version} ({comp.ref})"
        )
    elif installed.commit and not commit_matches(installed.commit, comp.commit):
        report.failures.append(
            f"installed {installed.name} was built from commit {installed.commit}, but {pair.name} pins {comp.commit[:12]}"
        )
    elif not installed.commit:
        report.warnings.append(
            f"installed {installed.name} records no commit id; only its version {installed.version} was compared"
        )
        report.passes.append(f"installed {installed.name} {installed.version} matches {pair.name}")
    else:
        report.passes.append(
            f"installed {installed.name} {installed.version} ({installed.commit}) matches {pair.name} ({comp.commit[:12]})"
        )


def verify_installed(
    manifest: Manifest,
    pair: LockedPair,
    name: str,
    consumer: Path | None,
    site: list[str] | None,
    cache: AnalysisCache,
    report: VerifyReport,
) -> None:
    """The installed provider `name` is the pair's pin, and each consumer checks clean against it.

    The consumer is read from `consumer` (a source folder) or from its installed distribution.
    """
    from atompin.acceptance import accept
    from atompin.analysis.results import check_trees
    from atompin.sources.installed import load_installed
    from atompin.sources.tree import FolderTree, SourceTree

    component = component_for(manifest, name)
    dist = load_installed(name, site)
    verify_installed_pin(pair, component, dist, report)
    provider_spec = manifest.components[component]
    for edge in manifest.checks:
        if edge.provider != component or edge.consumer not in pair.components:
            continue
        consumer_spec = manifest.components[edge.consumer]
        tree: SourceTree = (
            FolderTree(consumer) if consumer is not None else load_installed(consumer_spec.package, site).tree
        )
        result = check_trees(
            tree,
            dist.tree,
            provider_spec.package,
            edge.consumer_package or consumer_spec.package,
            cache,
            provider_version=dist.version or None,
            platform=manifest.fleet.platform,
        )
        # What pairs.toml accepts on this edge fails no gate here either.
        findings = accept(result.findings, edge, dist.version)
        errors = [f for f in findings if f.severity is Severity.ERROR and not f.accepted]
        if errors and edge.gate:
            report.failures.append(f"{edge.name} against the installed {dist.name}: {len(errors)} error(s)")
            for f in errors:  # one row per finding
                sites = ", ".join(map(str, f.sites[:3])) + (f" (+{len(f.sites) - 3})" if len(f.sites) > 3 else "")
                report.failures.append(f"  {f.rule.value} {f.symbol} at {sites or '?'}")
        else:
            report.passes.append(
                f"{edge.name} against the installed {dist.name}: {len(errors)} error(s), {len(findings)} finding(s)"
            )
