"""Shared fixtures: tiny provider and consumer trees written into tmp_path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from atompin.analysis.cache import AnalysisCache
from atompin.analysis.engine import check_trees
from atompin.model import CheckResult, Finding
from atompin.sources.tree import FolderTree
from atompin.testing import write_files

CheckRunner = Callable[..., CheckResult]


@pytest.fixture
def run_check(tmp_path: Path) -> CheckRunner:
    """run_check(provider_files, consumer_files, package="pv") -> CheckResult."""
    counter = iter(range(1000))

    def run(
        provider: dict[str, str],
        consumer: dict[str, str],
        package: str = "pv",
        consumer_package: str | None = None,
        cache: AnalysisCache | None = None,
    ) -> CheckResult:
        n = next(counter)
        p = write_files(tmp_path / f"provider{n}", provider)
        c = write_files(tmp_path / f"consumer{n}", consumer)
        return check_trees(FolderTree(c), FolderTree(p), package, consumer_package, cache)

    return run


def only(result: CheckResult, rule: str | None = None) -> list[Finding]:
    """The findings of `rule` (all when None)."""
    return [f for f in result.findings if rule is None or f.rule.value == rule]


def brief(result: CheckResult) -> list[tuple[str, str, str, list[str]]]:
    """(rule, severity, symbol, sites) of each finding: what tests compare exactly."""
    return [(f.rule.value, f.severity.value, f.symbol, [str(s) for s in f.sites]) for f in result.findings]
