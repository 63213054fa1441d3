"""A check whose inputs did not change is answered from the cache: same result, nothing read."""

from __future__ import annotations

from pathlib import Path

import pytest

from atompin.analysis import cache as cache_module
from atompin.analysis import engine, results
from atompin.analysis.cache import SqliteAnalysisCache
from atompin.analysis.results import check_trees
from atompin.sources.tree import FolderTree
from atompin.testing import write_files

PROVIDER = {
    "pv/__init__.py": "",
    "pv/core.py": """
        class Engine:
            def step(self, batch):
                return batch
    """,
}
CONSUMER = {
    "plug/__init__.py": "",
    "plug/patch.py": """
        from pv.core import Engine

        Engine.gone(1)
    """,
}


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    return write_files(tmp_path / "consumer", CONSUMER), write_files(tmp_path / "provider", PROVIDER)


def _run(trees: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], int]:
    """The findings' symbols, and how many files the check read or judgements it made."""
    work: list[str] = []
    real_read, real_run = FolderTree.read, engine.UsageChecker.run

    def read(self: FolderTree, path: str) -> bytes:
        work.append(path)
        return real_read(self, path)

    def run(self: engine.UsageChecker) -> object:
        work.append("judged")
        return real_run(self)

    monkeypatch.setattr(FolderTree, "read", read)
    monkeypatch.setattr(engine.UsageChecker, "run", run)
    with SqliteAnalysisCache(tmp_path / "cache") as cache:
        result = check_trees(FolderTree(trees[0]), FolderTree(trees[1]), "pv", "plug", cache)
    monkeypatch.setattr(FolderTree, "read", real_read)
    monkeypatch.setattr(engine.UsageChecker, "run", real_run)
    return sorted(f.symbol for f in result.findings), len(work)


def test_an_unchanged_check_reads_nothing_and_gives_the_same_result(
    trees: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, first_work = _run(trees, tmp_path, monkeypatch)
    again, again_work = _run(trees, tmp_path, monkeypatch)
    assert first == again == ["pv.core:Engine.gone"]
    assert first_work > 0 and again_work == 0


def test_a_changed_file_or_another_atompin_checks_again(
    trees: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(trees, tmp_path, monkeypatch)
    # The provider gains the method: the cached result must not be served.
    (trees[1] / "pv/core.py").write_text("class Engine:\n    @staticmethod\n    def gone(x):\n        return x\n")
    found, work = _run(trees, tmp_path, monkeypatch)
    assert found == [] and work > 0
    # Another build of atompin (a changed rule) does not trust what this one cached.
    monkeypatch.setattr(results, "code_digest", lambda: "another build")
    _, work = _run(trees, tmp_path, monkeypatch)
    assert work > 0


def test_the_code_digest_covers_atompin_s_own_sources() -> None:
    digest = cache_module.code_digest()
    assert len(digest) == 64 and digest == cache_module.code_digest()
