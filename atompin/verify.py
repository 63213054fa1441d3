"""`atompin verify`: is the lock current, passing, and do build files agree with it?

Offline by default: the lock parses, its manifest hash matches, every gated
verdict passes. With a git cache, tags are re-resolved (`moved-ref`). Bake
files (HCL or JSON) are compared variable by variable.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from atompin.analysis.cache import AnalysisCache
from atompin.errors import InputError
from atompin.lockfile import Lock, LockedPair
from atompin.manifest import Manifest
from atompin.model import RefKind, Severity
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
) -> VerifyReport:
    """`atompin verify`: every check the options ask for, in one report."""
    from atompin import lockfile
    from atompin.locking import Locker
    from atompin.manifest import load_manifest
    from atompin.relocations import digests

    report = VerifyReport()
    manifest, _ = load_manifest(manifest_path)
    with Locker.open(manifest, manifest_path, cache_dir, False, progress) as locker:
        locked = lockfile.read(lock_path or lockfile.default_path(manifest_path))
        verify_lock(locked, manifest, report, digests(locker.tables))
        if remote:
            verify_remote(locked, locker.git, locker.fetch_url, report)
        for path in bake or []:
            verify_bake(path, lockfile.select_pair(locked, pair), manifest, report)
        if installed is not None:
            chosen = lockfile.select_pair(locked, pair)
            verify_installed(manifest, chosen, installed, consumer, site, locker.cache, report)
    return report


def verify_lock(lock: Lock, manifest: Manifest, report: VerifyReport, tables: dict[str, str] | None = None) -> None:
    """The lock matches the manifest (and relocation tables) and every gated verdict passes."""
    if lock.manifest_hash != manifest.digest():
        report.failures.append("stale: pairs.toml changed since the lock was written; run `atompin lock`")
        return
    if tables is not None and tables != lock.relocation_tables:
        changed = sorted(set(tables.items()) ^ set(lock.relocation_tables.items()))
        names = ", ".join(sorted({path for path, _ in changed}))
        report.failures.append(
            f"stale: relocation tables changed since the lock was written ({names}); run `atompin lock`"
        )
        return
    missing = [p.name for p in manifest.pairs if lock.pair(p.name) is None]
    if missing:
        report.failures.append(f"stale: pairs not in the lock: {', '.join(missing)}; run `atompin lock`")
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


def verify_remote(lock: Lock, git: GitCache, fetch_url: Callable[[str], str], report: VerifyReport) -> None:
    """Every tag still resolves to the commit the lock recorded (`moved-ref`)."""
    for pair in lock.pairs:
        for name, comp in pair.components.items():
            if comp.ref_kind is not RefKind.TAG:
                continue
            refs = git.remote_refs(fetch_url(comp.repo))
            now = refs.get(f"refs/tags/{comp.ref}")
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
    out["ATOMPIN_VERDICT"] = pair.verdict.value
    return out


def read_bake_variables(path: Path) -> dict[str, str]:
    """`variable "NAME" { default = "..." }` defaults from a bake file (HCL or JSON)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the bake file ({exc.strerror})") from None
    if path.suffix == ".json" or text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        variables = data.get("variable", {}) if isinstance(data, dict) else {}
        return {k: str(v.get("default", "")) for k, v in variables.items() if isinstance(v, dict) and "default" in v}
    import hcl2

    try:
        data = hcl2.loads(text)
    except Exception as exc:  # the HCL parser raises several types; all mean "not HCL"
        line = getattr(exc, "line", None) or getattr(getattr(exc, "token", None), "line", None) or 1
        raise InputError(f"{path}:{line}: not a valid bake file (HCL); fix its syntax") from None
    out: dict[str, str] = {}
    for block in data.get("variable", []):
        for raw_name, body in block.items():
            if isinstance(body, dict) and "default" in body:
                out[_unquote(raw_name)] = _unquote(str(body["default"]))
    return out


def _unquote(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def verify_bake(path: Path, pair: LockedPair, manifest: Manifest, report: VerifyReport) -> None:
    expected = pin_variables(pair, manifest)
    found = read_bake_variables(path)
    checked = 0
    for name, value in found.items():
        if name not in expected or name.startswith("ATOMPIN_"):
            continue
        checked += 1
        if value != expected[name]:
            report.failures.append(f"{path}: {name} = {value!r}, but the lock pins {expected[name]!r} for {pair.name}")
        if name in os.environ and os.environ[name] != expected[name]:
            report.warnings.append(
                f"{path}: the environment sets {name}={os.environ[name]!r}, which overrides the file's default in bake"
            )
    if checked == 0:
        report.warnings.append(
            f"{path}: no variable carries a pin of {pair.name} (expected names such as {', '.join(list(expected)[:3])})"
        )
    else:
        report.passes.append(f"{path}: {checked} pinned variable(s) checked against {pair.name}")


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
    from atompin.analysis.engine import check_trees
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
        )
        # What pairs.toml accepts on this edge fails no gate here either.
        findings = accept(result.findings, edge, dist.version)
        errors = [f for f in findings if f.severity is Severity.ERROR and not f.accepted]
        if errors and edge.gate:
            names = "; ".join(f"{f.rule.value} {f.symbol} at {', '.join(map(str, f.sites[:2]))}" for f in errors)
            report.failures.append(f"{edge.name} against the installed {dist.name}: {len(errors)} error(s): {names}")
        else:
            report.passes.append(
                f"{edge.name} against the installed {dist.name}: {len(errors)} error(s), {len(findings)} finding(s)"
            )
