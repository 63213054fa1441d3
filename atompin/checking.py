"""Source trees from what the user named (folders, git refs, installed distributions)
handed to the analysis core: the flows behind `atompin check` and
`atompin relocations suggest`.

Everything here opens trees and caches, then calls one analysis function; the
CLI only parses options and prints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from atompin.analysis.cache import AnalysisCache, SqliteAnalysisCache, default_cache_dir
from atompin.analysis.packages import consumer_packages, provider_package
from atompin.analysis.platforms import platform_error
from atompin.analysis.results import check_trees
from atompin.errors import InputError
from atompin.model import CheckResult, Relocation
from atompin.sources.tree import FolderTree, SourceTree

if TYPE_CHECKING:
    from atompin.sources.installed import Installed

Progress = Callable[[str], None]


def open_cache(cache_dir: Path | None, no_cache: bool = False) -> AnalysisCache:
    """The on-disk analysis cache (`--cache-dir`, else the default), or a no-op one with `--no-cache`."""
    return AnalysisCache() if no_cache else SqliteAnalysisCache(cache_dir or default_cache_dir())


def folder(path: Path | str, role: str) -> FolderTree:
    """A source folder; InputError naming the role when it is not there."""
    if not Path(path).is_dir():
        raise InputError(f"{path}: {role} folder does not exist; pass the folder that holds the package folder")
    return FolderTree(path)


@dataclass
class CheckOutcome:
    result: CheckResult
    # With --installed --pair: what differs between the installed provider and the locked pin.
    pin_problems: list[str]


def run_check(
    consumer: str,
    provider: Path | None,
    *,
    package: str | None = None,
    consumer_package: str | None = None,
    installed: str | None = None,
    consumer_installed: bool = False,
    site: list[str] | None = None,
    pair: str | None = None,
    manifest: Path = Path("pairs.toml"),
    lock_path: Path | None = None,
    relocations: Path | None = None,
    baseline: Path | None = None,
    provider_version: str | None = None,
    cache: AnalysisCache | None = None,
    platform: str | None = None,
) -> CheckOutcome:
    """`atompin check`: the consumer (a folder or an installed distribution) against the
    provider (a folder, or with `installed` the installed distribution)."""
    from atompin.sources.version import version_from_tree

    if (provider is None) == (installed is None):
        raise InputError("give either PROVIDER (a source folder) or --installed NAME, not both or neither")
    if platform is not None and (problem := platform_error(platform)) is not None:
        raise InputError(f"--platform: {problem}")
    consumer_tree: SourceTree
    if consumer_installed:
        from atompin.sources.installed import load_installed

        consumer_tree = load_installed(consumer, site).tree
    else:
        consumer_tree = folder(consumer, "consumer")
    pin_problems: list[str] = []
    provider_tree: SourceTree
    installed_version = ""
    if installed is not None:
        from atompin.sources.installed import load_installed

        dist = load_installed(installed, site)
        provider_tree = dist.tree
        installed_version = dist.version
        package = package or (installed if dist.tree.find_module(installed) else None)
        if pair is not None:
            pin_problems = installed_pin_problems(manifest, lock_path, pair, installed, dist)
    else:
        assert provider is not None
        provider_tree = folder(provider, "provider")
    for label, path in (("baseline", baseline), ("relocations", relocations)):
        if path is not None and not path.exists():
            raise InputError(f"{path}: {label} does not exist")
    entries: list[tuple[str, Relocation]] = []
    package = provider_package(provider_tree, package)
    # The provider's version (for tables and version gates): given, installed, or its version file.
    version = provider_version or installed_version or version_from_tree(provider_tree, package)
    if relocations is not None:
        from atompin.relocations import entries_from  # pydantic and tomlkit: only for tables

        entries = entries_from(relocations, package, version)
    baseline_tree = FolderTree(baseline) if baseline else None
    label = ""
    if baseline_tree is not None:
        package = provider_package(provider_tree, package)
        label = version_from_tree(baseline_tree, package) or str(baseline)
    result = check_trees(
        consumer_tree,
        provider_tree,
        package,
        consumer_package,
        cache,
        entries,
        baseline_tree,
        provider_version=version or None,
        baseline_version=(version_from_tree(baseline_tree, package) or None) if baseline_tree else None,
        baseline_label=label,
        platform=platform,
    )
    return CheckOutcome(result, pin_problems)


def installed_pin_problems(manifest: Path, lock_path: Path | None, pair: str, name: str, dist: Installed) -> list[str]:
    """Does the installed distribution `name` match the pin of `pair` in the lock?"""
    from atompin import lockfile
    from atompin.manifest import load_manifest
    from atompin.verify import VerifyReport, component_for, verify_installed_pin

    spec, _ = load_manifest(manifest)
    report = VerifyReport()
    locked = lockfile.select_pair(lockfile.read(lock_path or lockfile.default_path(manifest)), pair)
    verify_installed_pin(locked, component_for(spec, name), dist, report)
    return report.failures


# -- relocations suggest ----------------------------------------------------------------


@dataclass
class DraftTable:
    package: str
    version: str  # of the new release, for the table's `applies`
    entries: list[Relocation]
    removed: list[str]  # gone at the new release, no candidate


def suggest_relocations(
    source: str,
    old: str,
    new: str,
    *,
    consumer: Path | None = None,
    consumer_package: str | None = None,
    package: str | None = None,
    cache_dir: Path | None = None,
    offline: bool = False,
    progress: Progress | None = None,
) -> DraftTable:
    """`atompin relocations suggest`: OLD and NEW are source folders, or refs of the git
    repository SOURCE; the draft covers the consumer's symbols, or every definition."""
    from atompin.analysis.engine import scan_consumer
    from atompin.analysis.suggest import draft_table
    from atompin.sources.version import normalize_version, version_from_tree

    root = cache_dir or default_cache_dir()
    with SqliteAnalysisCache(root) as cache:
        old_tree, new_tree = _release_trees(source, old, new, root, offline, progress)
        package = provider_package(new_tree, package)
        usage = None
        if consumer is not None:
            tree = folder(consumer, "consumer")
            usage = scan_consumer(tree, consumer_packages(tree, consumer_package, package), package, cache)
        entries, removed = draft_table(old_tree, new_tree, package, cache, usage, progress)
    version = normalize_version(new) or version_from_tree(new_tree, package) or new
    return DraftTable(package, version, entries, removed)


def _release_trees(
    source: str, old: str, new: str, root: Path, offline: bool, progress: Progress | None
) -> tuple[SourceTree, SourceTree]:
    if Path(old).is_dir() and Path(new).is_dir():
        return FolderTree(old), FolderTree(new)
    from atompin.sources.git import GitCache

    git_cache = GitCache(root, offline=offline, progress=progress)
    url = source if not Path(source).exists() else str(Path(source).resolve())
    return git_cache.tree(git_cache.resolve(url, old)), git_cache.tree(git_cache.resolve(url, new))
