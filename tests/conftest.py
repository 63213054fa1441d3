"""Shared fixtures: tiny provider and consumer trees (in memory), and the demo's git
repositories, built once per test run and copied into each test's folder."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from atompin.analysis.cache import AnalysisCache
from atompin.analysis.results import check_trees
from atompin.demo import write_demo_repos
from atompin.model import CheckResult, Finding
from atompin.sources.tree import MemoryTree
from atompin.testing import dedent_files

CheckRunner = Callable[..., CheckResult]


@pytest.fixture(autouse=True)
def _fresh_process_memory() -> None:
    """Each test starts as a new process would: without the identifiers an earlier test's name
    search left in this process's memory (`name_sites._LAST_LOADED`)."""
    from atompin.analysis import name_sites

    name_sites._LAST_LOADED.clear()


@pytest.fixture
def run_check() -> CheckRunner:
    """run_check(provider_files, consumer_files, package="pv", version=None, baseline=None) -> CheckResult."""

    def run(
        provider: dict[str, str],
        consumer: dict[str, str],
        package: str = "pv",
        consumer_package: str | None = None,
        cache: AnalysisCache | None = None,
        version: str | None = None,
        baseline: dict[str, str] | None = None,
        baseline_version: str | None = None,
    ) -> CheckResult:
        p = MemoryTree(dedent_files(provider), "provider")
        c = MemoryTree(dedent_files(consumer), "consumer")
        b = MemoryTree(dedent_files(baseline), "baseline") if baseline is not None else None
        return check_trees(
            c, p, package, consumer_package, cache, (), b, provider_version=version, baseline_version=baseline_version
        )

    return run


@pytest.fixture(scope="session")
def demo_repos_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's repositories and pairs.toml, built once per test run."""
    return write_demo_repos(tmp_path_factory.mktemp("demo") / "proj").parent


@pytest.fixture
def demo_project(demo_repos_once: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the demo project (its pairs.toml path), with a cache of its own."""
    monkeypatch.setenv("ATOMPIN_CACHE_DIR", str(tmp_path / "cache"))
    root = shutil.copytree(demo_repos_once, tmp_path / "proj")
    return Path(root) / "pairs.toml"


def only(result: CheckResult, rule: str | None = None) -> list[Finding]:
    """The findings of `rule` (all when None)."""
    return [f for f in result.findings if rule is None or f.rule.value == rule]


def brief(result: CheckResult) -> list[tuple[str, str, str, list[str]]]:
    """(rule, severity, symbol, sites) of each finding: what tests compare exactly."""
    return [(f.rule.value, f.severity.value, f.symbol, [str(s) for s in f.sites]) for f in result.findings]
