"""The provider side of a cold check runs in a second process: same findings, less parsed here."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import git
import pytest

from atompin.analysis import prefetch
from atompin.analysis.cache import SqliteAnalysisCache
from atompin.analysis.prefetch import fork_worker, parallel_jobs
from atompin.analysis.results import check_trees
from atompin.model import Finding
from atompin.sources.git import GitTree
from atompin.sources.tree import FolderTree, MemoryTree, SourceTree
from atompin.testing import dedent_files, git_repo, write_files

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="second processes run on Linux only")

# Ten provider modules the consumer names, one reached only through a base class.
PROVIDER = {
    "pv/__init__.py": "",
    "pv/base.py": """
        class Base:
            def step(self, batch): ...
    """,
    **{
        f"pv/m{i}.py": f"""
            from pv.base import Base

            class Engine{i}(Base):
                def run(self, x): ...
        """
        for i in range(10)
    },
}
CONSUMER = {
    "plug/__init__.py": "",
    "plug/use.py": "\n".join(f"from pv.m{i} import Engine{i}" for i in range(10))
    + "\n\nEngine3.gone = 1\nEngine4.step(None, 1, 2)\nEngine5.missing_attr\n",
}


def _check(
    tmp_path: Path,
    jobs: str,
    monkeypatch: pytest.MonkeyPatch,
    consumer: dict[str, str] = CONSUMER,
    provider_files: dict[str, str] = PROVIDER,
    worth_indexing: int = 100,  # ten small modules are worth a process here
) -> tuple[list[tuple[str, str]], int]:
    """The findings (rule, symbol) and the cache's misses of a check with `jobs` processes, cached
    in tmp_path / cache-JOBS, run as a new process would (nothing held from an earlier check)."""
    from atompin.analysis import name_sites, provider

    name_sites._LAST_LOADED.clear()
    monkeypatch.setenv("ATOMPIN_JOBS", jobs)
    monkeypatch.setattr(provider, "_MIN_UNCACHED", worth_indexing)
    cache = SqliteAnalysisCache(tmp_path / f"cache-{jobs}")
    result = check_trees(
        MemoryTree(dedent_files(consumer), "consumer"),
        MemoryTree(dedent_files(provider_files), "provider"),
        "pv",
        "plug",
        cache,
    )
    return sorted((f.rule.value, f.symbol) for f in result.findings), cache.misses


def _identifiers_kept(tmp_path: Path, jobs: str) -> int:
    """How many files' identifiers the cache of `_check(tmp_path, jobs, ...)` holds."""
    import sqlite3

    with sqlite3.connect(tmp_path / f"cache-{jobs}" / "index.sqlite") as db:
        return int(db.execute("SELECT count(*) FROM modules WHERE key LIKE 'identifiers:%'").fetchone()[0])


def _wait_until(ready: Callable[[], bool], seconds: float = 30) -> None:
    """Wait until `ready()` (another process's step is done), at most `seconds`."""
    deadline = time.monotonic() + seconds
    while not ready() and time.monotonic() < deadline:
        time.sleep(0.01)


def _log_searches_there(
    monkeypatch: pytest.MonkeyPatch,
    log: Path,
    said: Callable[[Any], str],
    here_waits: Callable[[], bool] = lambda: False,
) -> Path:
    """Wrap the caller search's `_calls_in`: a second process writes the line `said(search)` to
    `log` before each share it searches; this process, while `here_waits()`, first waits until
    the second process took a share (told by a file beside `log`: other wrappers may write their
    own lines to `log` before that). Returns that file (remove it where the log starts again)."""
    from atompin.analysis import callsites

    real_calls_in = callsites.CallerSearch._calls_in
    pid = os.getpid()
    took = log.with_name(log.name + ".took")
    took.unlink(missing_ok=True)

    def calls_in(self: callsites.CallerSearch, names: list[str], paths: list[str], known: list[str]) -> object:
        if os.getpid() != pid:
            with log.open("a") as out:
                out.write(said(self) + "\n")
            took.touch()
        elif here_waits():
            _wait_until(took.exists)
        return real_calls_in(self, names, paths, known)

    monkeypatch.setattr(callsites.CallerSearch, "_calls_in", calls_in)
    return took


def _misses_left_to_the_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records, for each check, the cache's misses that `index_rest` did not make (a module
    neither process indexed ahead, looked up by the checks)."""
    from atompin.analysis.provider import ProviderIndex

    made_ahead = [0]
    real_rest = ProviderIndex.index_rest

    def index_rest(self: ProviderIndex) -> None:
        before = self.cache.misses  # type: ignore[attr-defined]
        real_rest(self)
        made_ahead[0] += self.cache.misses - before  # type: ignore[attr-defined]

    monkeypatch.setattr(ProviderIndex, "index_rest", index_rest)
    return made_ahead


def test_a_second_process_indexes_the_provider_and_the_findings_are_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made_here = _misses_left_to_the_checks(monkeypatch)
    one, misses_alone = _check(tmp_path, "1", monkeypatch)
    assert made_here == [0]  # alone, nothing is indexed ahead
    two, misses_shared = _check(tmp_path, "2", monkeypatch)
    assert one == two
    assert {symbol for _, symbol in one} >= {"pv.m5:Engine5.missing_attr", "pv.m4:Engine4.step"}
    # Alone, every module is looked up in the cache and missed; with a second process, the
    # modules named (and the base they pull in) arrive indexed, by that process or by this one
    # once its scan ended (the shares left): the checks miss none.
    assert misses_alone == 11
    assert misses_shared == made_here[0]


def test_once_its_scan_ended_this_process_indexes_the_shares_the_second_has_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider's modules are indexed in shares: a second process that is slow to index
    leaves the shares it has not begun to this one, once its scan ended. The findings are the
    same; this process indexes some of the modules, not all."""
    from atompin.analysis.provider import ProviderIndex

    made_here = _misses_left_to_the_checks(monkeypatch)
    one, misses_alone = _check(tmp_path, "1", monkeypatch)
    began = tmp_path / "began"
    pid = os.getpid()
    real_warm, rest = ProviderIndex.warm, ProviderIndex.index_rest

    def warm(self: ProviderIndex, symbols: object) -> None:
        if os.getpid() != pid and not began.exists():  # the second process, on its first share
            began.write_text("")
            time.sleep(0.5)
        real_warm(self, symbols)  # type: ignore[arg-type]

    def index_rest(self: ProviderIndex) -> None:
        _wait_until(began.exists)
        rest(self)

    monkeypatch.setattr(ProviderIndex, "warm", warm)
    monkeypatch.setattr(ProviderIndex, "index_rest", index_rest)
    two, misses_shared = _check(tmp_path, "2", monkeypatch)
    assert one == two and one
    assert 0 < made_here[0] == misses_shared < misses_alone


def test_after_a_cached_scan_both_processes_index_what_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bump: the scan is cached, the new provider's modules are not. What the scan names is
    indexed in shares that the second process and this one take from the start; the checks
    miss none of them, and the findings are those of one process."""
    from atompin.analysis import engine

    # Every module changed (none is cached), the base's method taking one argument more.
    bumped = {path: textwrap.dedent(source) + "# 0.2\n" for path, source in PROVIDER.items()}
    bumped["pv/base.py"] = "class Base:\n    def step(self, batch, flag): ...\n"
    cached_scans: list[int] = []
    real_used = engine.used_symbols
    monkeypatch.setattr(engine, "used_symbols", lambda usage: cached_scans.append(1) or real_used(usage))
    made_here = _misses_left_to_the_checks(monkeypatch)
    found: dict[str, list[tuple[str, str]]] = {}
    for jobs in ("1", "2"):
        _check(tmp_path, jobs, monkeypatch)
        made_here[0] = 0
        found[jobs], misses = _check(tmp_path, jobs, monkeypatch, provider_files=bumped)
        if jobs == "2":
            assert misses == made_here[0]  # what this process indexed ahead; the checks missed none
    assert cached_scans == [1, 1]  # the second check of each found its scan cached
    assert found["1"] == found["2"]
    symbols = {symbol for _, symbol in found["2"]}
    assert "pv.m4:Engine4.step" not in symbols  # the bumped base takes the call
    assert "pv.m5:Engine5.missing_attr" in symbols


def _count_forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many tasks each second process of the scan is given (identifiers read whatever their number)."""
    from atompin.analysis import engine, name_sites

    monkeypatch.setattr(name_sites, "_MIN_UNREAD", 0)
    forks: list[int] = []
    real_fork = prefetch.fork_worker
    monkeypatch.setattr(engine, "fork_worker", lambda *tasks: forks.append(len(tasks)) or real_fork(*tasks))
    return forks


def test_on_two_cores_a_long_consumer_scan_leaves_both_provider_tasks_to_one_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forks = _count_forks(monkeypatch)
    made_here = _misses_left_to_the_checks(monkeypatch)
    # The consumer is padded so that scanning it is more work than indexing the modules it names.
    padded = {**CONSUMER, "plug/padding.py": "import pv.m0\n" + "x = 1\n" * 2000}
    seen, misses, ahead = {}, {}, {}
    for jobs in ("1", "2", "3"):
        made_here[0] = 0
        seen[jobs], misses[jobs] = _check(tmp_path, jobs, monkeypatch, padded)
        ahead[jobs] = made_here[0]
    # One job: asked for apart, and nothing runs. Two cores: one child indexes and then reads the
    # identifiers while this process scans. Three: a child each.
    assert forks == [1, 1, 2, 1, 1]
    assert seen["1"] == seen["2"] == seen["3"] and seen["1"]
    # The modules arrived indexed: by the child, or by this process ahead of the checks where a
    # busy machine let its scan end first (the shares the child had not taken); the checks miss none.
    assert misses["1"] > 0 == ahead["1"]
    assert misses["2"] == ahead["2"] and misses["3"] == ahead["3"]


def test_on_two_cores_a_short_consumer_scan_leaves_both_provider_tasks_to_one_child_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forks = _count_forks(monkeypatch)
    seen, identifiers = {}, {}
    for jobs in ("2", "3"):
        seen[jobs], _ = _check(tmp_path, jobs, monkeypatch)
        identifiers[jobs] = _identifiers_kept(tmp_path, jobs)
    # Two cores: one child indexes, then reads the identifiers this process has not taken after
    # its (short) scan; three: a child each. Either way every file's identifiers are read and kept.
    assert forks == [2, 1, 1]
    assert seen["2"] == seen["3"] and seen["2"]
    assert identifiers["2"] == identifiers["3"] == len(PROVIDER)


def test_this_process_reads_the_shares_of_identifiers_no_child_has_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from atompin.analysis import engine, name_sites

    _count_forks(monkeypatch)
    # The second processes run, but never take a share (as if still busy when this one is done).
    monkeypatch.setattr(engine, "fork_worker", lambda *tasks: prefetch.fork_worker(lambda: []))
    read_here: list[int] = []
    real_read = name_sites.NameSearch._read_identifiers
    monkeypatch.setattr(
        name_sites.NameSearch,
        "_read_identifiers",
        lambda self, paths: read_here.append(len(paths)) or real_read(self, paths),
    )
    big = {**PROVIDER, **{f"pv/big{i}.py": f"def f{i}(): ...\n" for i in range(8)}}
    # A class of the consumer's own on a provider class: the rules search the provider's names.
    overriding = {
        **CONSUMER,
        "plug/mine.py": "from pv.m1 import Engine1\n\nclass Mine(Engine1):\n    def run(self, x): ...\n",
    }
    seen, _ = _check(tmp_path, "2", monkeypatch, overriding, big)
    # After its scan this process took every share, one at a time: each file read once, here.
    assert len([n for n in read_here if n]) > 1 and sum(read_here) == len(big)
    assert _identifiers_kept(tmp_path, "2") == len(big)
    alone, _ = _check(tmp_path, "1", monkeypatch, overriding, big)
    assert seen == alone and seen


def test_each_share_is_taken_by_one_process_only() -> None:
    shares = prefetch.Shares(10)
    taken = iter(shares)
    mine = [next(taken), next(taken)]
    worker = fork_worker(lambda: [(str(share), b"") for _, share in zip(range(3), shares)])
    assert worker is not None
    theirs = [int(key) for key, _ in worker.collect()]
    mine += list(shares)
    assert len(theirs) == 3 and sorted(mine + theirs) == list(range(10))
    assert list(shares) == []  # none left: nothing more is taken
    with pytest.raises(ValueError):
        prefetch.Shares(prefetch.Shares.MAX + 1)


def test_a_worker_sends_its_results_and_a_failing_one_sends_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATOMPIN_JOBS", "2")
    worker = fork_worker(lambda: [("pid", str(os.getpid()).encode()), ("big", b"x" * 3_000_000)])
    assert worker is not None
    results = dict(worker.collect())
    assert results["pid"] != str(os.getpid()).encode() and len(results["big"]) == 3_000_000

    def fail() -> list[tuple[str, bytes]]:
        raise RuntimeError("boom")

    failing = fork_worker(fail)
    assert failing is not None and failing.collect() == []
    # Several tasks: run in turn, their results in one list.
    both = fork_worker(lambda: [("a", b"1")], lambda: [("b", b"2")])
    assert both is not None and both.collect() == [("a", b"1"), ("b", b"2")]
    # Taken into a cache: every entry but the task's own answer, which is returned.
    from atompin.analysis.cache import AnalysisCache

    cache = AnalysisCache()
    answering = fork_worker(lambda: [(prefetch.ANSWER, b"42"), ("k", b"v")])
    assert answering is not None and answering.collect_into(cache) == b"42"
    assert (cache.get_raw("k"), cache.get_raw(prefetch.ANSWER)) == (b"v", None)


def test_no_second_process_with_one_job_or_other_working_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATOMPIN_JOBS", "1")
    assert parallel_jobs() == 1 and fork_worker(lambda: []) is None
    monkeypatch.setenv("ATOMPIN_JOBS", "2")
    import threading

    for daemon, forks in ((False, False), (True, True)):  # a status line's daemon thread is let be
        stop = threading.Event()
        other = threading.Thread(target=stop.wait, daemon=daemon)
        other.start()
        try:
            worker = fork_worker(lambda: [("ok", b"1")])
            assert (worker is not None) == forks
            assert worker is None or worker.collect() == [("ok", b"1")]
        finally:
            stop.set()
            other.join()


def test_a_forked_child_reads_git_objects_through_its_own_git_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOMPIN_JOBS", "2")
    path = git_repo(tmp_path / "repo", [("v1", {"pv/__init__.py": "", "pv/a.py": "A = 1\n", "pv/b.py": "B = 2\n"})])
    repo = git.Repo(path)
    tree = GitTree(repo, repo.head.commit.hexsha, "pv")
    assert tree.read("pv/a.py") == b"A = 1\n"  # the parent's persistent git process is started
    assert [tree.size(p) for p in ("pv/__init__.py", "pv/a.py")] == [0, 6]  # sizes asked of git
    assert FolderTree(path).size("pv/a.py") == 6

    parent = tree._reader

    def in_child() -> list[tuple[str, bytes]]:
        read = [(p, tree.read(p)) for p in ("pv/a.py",)]
        first = tree._reader
        read += [(p, tree.read(p)) for p in ("pv/b.py", "pv/a.py")]
        # One git process of the child's own, started once and kept (not one per file).
        own = first is not None and parent is not None and first[1] is not parent[1] and tree._reader is first
        return [*read, ("own", str(own).encode())]

    worker = fork_worker(in_child)
    assert worker is not None
    assert dict(worker.collect()) == {"pv/a.py": b"A = 1\n", "pv/b.py": b"B = 2\n", "own": b"True"}
    assert tree.read("pv/b.py") == b"B = 2\n"  # and the parent's is still in step


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("cached", [True, False])
def test_identifiers_read_by_a_second_process_give_the_same_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cached: bool, in_place: bool
) -> None:
    """The contact rules' name searches (an override that cannot take a new keyword the provider
    passes) find the same with the provider's identifiers read in a second process, with or
    without a cache; a folder searched in place leaves the shares not read when the scan ends,
    and finds the same whether it is then searched in place or not (the second process may have
    read them all by then)."""
    from test_baseline import CONSUMER as DRIFT_CONSUMER
    from test_baseline import PROVIDER_1, PROVIDER_2

    from atompin.analysis import engine, name_sites, provider
    from atompin.analysis.cache import AnalysisCache
    from atompin.sources.tree import FolderTree
    from atompin.testing import write_files

    consumer = FolderTree(write_files(tmp_path / "c", DRIFT_CONSUMER))
    old, new = (
        FolderTree(write_files(tmp_path / "old", PROVIDER_1)),
        FolderTree(write_files(tmp_path / "new", PROVIDER_2)),
    )
    monkeypatch.setattr(name_sites, "_MIN_UNREAD", 0)
    monkeypatch.setattr(provider, "_MIN_UNCACHED", 0)
    # Every file's identifiers read ahead (as for a git tree), or searched in place
    monkeypatch.setattr(FolderTree, "searches_in_place", in_place)
    stopped: list[bool] = []
    real_stop = name_sites.NameSearch.stop_reading
    monkeypatch.setattr(name_sites.NameSearch, "stop_reading", lambda self: stopped.append(True) or real_stop(self))
    asked: list[object] = []
    real_task = name_sites.NameSearch.reading_task
    monkeypatch.setattr(name_sites.NameSearch, "reading_task", lambda self: asked.append(real_task(self)) or asked[-1])
    forked: list[object] = []
    real_fork = prefetch.fork_worker
    monkeypatch.setattr(engine, "fork_worker", lambda *tasks: forked.extend(tasks) or real_fork(*tasks))
    seen = []
    for jobs in ("1", "3"):  # three cores: the identifiers have a child of their own
        name_sites._LAST_LOADED.clear()  # as a new process
        monkeypatch.setenv("ATOMPIN_JOBS", jobs)
        cache = SqliteAnalysisCache(tmp_path / f"cache-{jobs}") if cached else AnalysisCache()
        result = check_trees(
            consumer,
            new,
            "pv",
            None,
            cache,
            baseline=old,
            provider_version="2.0.0",
            baseline_version="1.0.0",
            baseline_label="1.0.0",
        )
        seen.append([(f.rule.value, f.severity.value, f.message) for f in result.findings])
    # A worker was asked to read them both times; only with more than one job does it run.
    # Handed to the child wrapped, to write what it reads to disk itself (`prefetch.written_there`).
    run = [task.__wrapped__ for task in forked if hasattr(task, "__wrapped__")]
    assert len(asked) == 2 and all(task is not None and task in run for task in asked)
    assert stopped == ([True, True] if in_place else [])
    assert seen[0] == seen[1]
    assert any(rule == "override-drift" and "out new since 1.0.0" in message for rule, _, message in seen[1])


def test_workers_are_stopped_and_reaped_when_the_scan_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    from atompin.analysis import engine, name_sites, provider
    from atompin.analysis.scanner import ConsumerScanner

    monkeypatch.setenv("ATOMPIN_JOBS", "3")  # a child for each of the two tasks
    monkeypatch.setattr(name_sites, "_MIN_UNREAD", 0)
    monkeypatch.setattr(provider, "_MIN_UNCACHED", 0)
    started: list[prefetch.Worker] = []
    real_fork = prefetch.fork_worker

    def fork(*tasks):  # type: ignore[no-untyped-def]
        worker = real_fork(*tasks)
        if worker is not None:
            started.append(worker)
        return worker

    monkeypatch.setattr(engine, "fork_worker", fork)

    def fail(self: ConsumerScanner, files: object, unscanned: object = (), bodies_read: object = None) -> object:
        raise RuntimeError("the scan broke")

    monkeypatch.setattr(ConsumerScanner, "scan", fail)
    with pytest.raises(RuntimeError, match="the scan broke"):
        check_trees(
            MemoryTree(dedent_files(CONSUMER), "consumer"), MemoryTree(dedent_files(PROVIDER), "provider"), "pv", "plug"
        )
    assert len(started) == 2
    for worker in started:  # reaped: the process is gone
        with pytest.raises(ChildProcessError):
            os.waitpid(worker.pid, os.WNOHANG)


def _drift_check_with_one_job_then_two(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: Callable[[str], None] = lambda jobs: None
) -> list[list[tuple[str, str, str]]]:
    """The findings (rule, severity, message) of test_baseline's drift consumer checked against its
    second provider, with the first as baseline: with `ATOMPIN_JOBS` 1, then 2, each with a cache
    of its own (`cache-1`, `cache-2`); `after(jobs)` is called after each check."""
    from test_baseline import CONSUMER as DRIFT_CONSUMER
    from test_baseline import PROVIDER_1, PROVIDER_2

    consumer = FolderTree(write_files(tmp_path / "c", DRIFT_CONSUMER))
    old, new = (
        FolderTree(write_files(tmp_path / "old", PROVIDER_1)),
        FolderTree(write_files(tmp_path / "new", PROVIDER_2)),
    )
    seen = []
    for jobs in ("1", "2"):
        monkeypatch.setenv("ATOMPIN_JOBS", jobs)
        with SqliteAnalysisCache(tmp_path / f"cache-{jobs}") as cache:
            result = check_trees(
                consumer, new, "pv", None, cache, baseline=old, provider_version="2.0.0", baseline_version="1.0.0"
            )
        seen.append([(f.rule.value, f.severity.value, f.message) for f in result.findings])
        after(jobs)
    return seen


@pytest.mark.parametrize("in_place", [False, True])
def test_the_contact_rules_in_a_second_process_find_the_same_and_fill_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_place: bool
) -> None:
    import sqlite3

    from atompin.analysis import engine

    monkeypatch.setattr(engine.ContactRules, "MIN_FILES", 0)
    monkeypatch.setattr(FolderTree, "searches_in_place", in_place)
    forked: list[object] = []
    real_fork = prefetch.fork_worker
    monkeypatch.setattr(engine, "fork_worker", lambda task: forked.append(task) or real_fork(task))
    # The identifiers are in memory before the rules' process is forked: it has them at no cost
    # (searching the files in place, none is read ahead).
    loaded_before: list[bool] = []
    real_start = engine.ContactRules.start

    def start(self: engine.ContactRules) -> None:
        real_start(self)
        loaded_before.append(self.search._all_loaded)

    monkeypatch.setattr(engine.ContactRules, "start", start)
    searches: list[int] = []

    def count_searches(jobs: str) -> None:
        with sqlite3.connect(tmp_path / f"cache-{jobs}" / "index.sqlite") as db:
            searches.append(db.execute("SELECT count(*) FROM modules WHERE key LIKE 'name-query:%'").fetchone()[0])

    seen = _drift_check_with_one_job_then_two(tmp_path, monkeypatch, count_searches)
    assert len(forked) == 2
    assert loaded_before == [not in_place, not in_place]
    assert seen[0] == seen[1]
    assert {rule for rule, _, _ in seen[1]} >= {"override-drift", "shadow-drift"}
    # What the second process searched is in the cache, as when the rules ran here.
    assert searches[1] == searches[0] > 0


@pytest.mark.parametrize("child_fails", [False, True])
def test_this_process_takes_the_part_of_the_contact_rules_the_second_has_not_begun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, child_fails: bool
) -> None:
    """The second process takes protocol-drift first; this one, done with its own checks, takes
    the other rules while it is busy; the findings are those of one process. A second process
    that fails leaves its part to this one."""
    from atompin.analysis import engine
    from atompin.analysis.contact import ContactPart

    monkeypatch.setattr(engine.ContactRules, "MIN_FILES", 0)
    parent = os.getpid()
    log = tmp_path / "parts.log"
    real_run = engine.ContactRules.run

    def run(self: engine.ContactRules, part: ContactPart | None = None) -> list[Finding]:
        if os.getpid() != parent:
            if child_fails:
                os._exit(3)
            time.sleep(0.5)  # the second process is still busy when this one asks
        with open(log, "a") as out:
            out.write(f"{'here' if os.getpid() == parent else 'there'} {part.value if part else 'all'}\n")
        return real_run(self, part)

    monkeypatch.setattr(engine.ContactRules, "run", run)
    real_findings = engine.ContactRules.findings

    def findings(self: engine.ContactRules) -> list[Finding]:
        time.sleep(0.2)  # the second process has begun by now
        return real_findings(self)

    monkeypatch.setattr(engine.ContactRules, "findings", findings)
    seen = _drift_check_with_one_job_then_two(tmp_path, monkeypatch)
    assert seen[0] == seen[1]
    assert {rule for rule, _, _ in seen[1]} >= {"override-drift", "shadow-drift"}
    ran = log.read_text().splitlines()
    if child_fails:
        assert ran == ["here all", "here others", "here protocols"]
    else:
        assert sorted(ran) == ["here all", "here others", "there protocols"]


def test_git_finds_the_files_containing_words_as_a_folder_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from atompin.sources import git as git_sources

    files = {f"pv/m{i:03}.py": f"def f{i}():\n    return g{i % 7}(x)\n" for i in range(120)}
    files["pv/with space [x].py"] = "y = g3(*)\n"  # a name git must not read as a pattern
    files["pv/dash.py"] = "-e = h(1)\n"
    path = git_repo(tmp_path / "repo", [("v1", files)])
    repo = git.Repo(path)
    tree, folder = GitTree(repo, repo.head.commit.hexsha, "pv"), FolderTree(path)
    paths = sorted(files)
    read_here: list[str] = []  # files git did not search, read one by one instead
    real = SourceTree.files_containing
    monkeypatch.setattr(SourceTree, "files_containing", lambda self, p, w: read_here.extend(p) or real(self, p, w))
    for words in ([b"g3("], [b"g3(", b"f11("], [b"-e"], [b"(*)"], [b"nowhere"]):
        expected = real(folder, paths, words)
        assert tree.files_containing(paths, words) == expected, words
    assert read_here == []
    assert tree.files_containing(paths, [b"g3("])[-1] == "pv/with space [x].py"
    # Files over the fetch filter's limit are read, not grepped; the answer is the same.
    monkeypatch.setattr(git_sources, "_BLOB_LIMIT", 32)
    monkeypatch.setattr(git_sources, "_PATHS_PER_COMMAND", 50)
    assert tree.files_containing(paths, [b"g3(", b"h(1)"]) == real(folder, paths, [b"g3(", b"h(1)"])
    assert read_here == [p for p in paths if len(files[p]) >= 32]


def test_a_folder_finds_the_files_containing_words_with_git_as_by_reading_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git grep` searches a folder as the folder would be read: files with spaces, brackets or a
    dash in their names, a folder named like a glob, a file at the top, a file git ignores, binary
    bytes, a folder that is a repository of its own, a file name that is not UTF-8, a FIFO (never
    opened); a symlinked file (git does not follow it) is read here."""
    files = {f"pv/m{i:03}.py": f"def f{i}():\n    return g{i % 7}(x)\n" for i in range(120)}
    files["pv/with space [x].py"] = "y = g3(*)\n"
    files["w[e]ird*/m.py"] = "g3(4)\n"
    files["top.py"] = "g3(5)\n"
    files["pv/native.so"] = "g3(6)\n"  # not asked about
    files["pv/-e.py"] = "-e = h(1)\n"
    files["pv/ignored.py"] = "g3(1)\n"
    files["pv/.gitignore"] = "ignored.py\n*.py\n"
    files["pv/nested/inner.py"] = "g3(2)\n"
    files["pv/.hidden/skipped.py"] = "g3(3)\n"  # a hidden folder: not listed, never asked about
    root = write_files(tmp_path / "p", files)
    (root / "pv" / "binary.py").write_bytes(b"\0\1g3(\0")
    (root / os.fsdecode(b"pv/caf\xe9.py")).write_bytes(b"h(1)\n")
    subprocess.run(["git", "init", "-q", str(root / "pv" / "nested")], check=True)
    (root / "pv" / "linked.py").symlink_to("m003.py")
    os.mkfifo(root / "pv" / "fifo.py")
    folder = FolderTree(root)
    paths = sorted(path for path in folder.files if path.endswith(".py"))
    assert "pv/linked.py" in paths and "pv/.hidden/skipped.py" not in paths
    read_here: list[str] = []  # files git did not search, read one by one instead
    real = SourceTree.files_containing
    monkeypatch.setattr(SourceTree, "files_containing", lambda self, p, w: read_here.extend(p) or real(self, p, w))
    absent = [b"absent-%d" % i for i in range(4)]  # more than four words: git searches them
    for asked in ([b"g3("], [b"g3(", b"f11("], [b"-e"], [b"(*)"], [b"h(1)"], [b"nowhere"]):
        words = asked + absent
        expected = real(folder, paths, words)
        assert folder.files_containing(paths, words) == expected, words
        assert folder.files_containing(paths[::2], words) == real(folder, paths[::2], words), words
    assert set(read_here) == {"pv/linked.py"}
    found = folder.files_containing(paths, [b"g3(", *absent])
    assert {"pv/with space [x].py", "pv/ignored.py", "pv/binary.py", "pv/nested/inner.py", "pv/linked.py"} <= set(found)
    assert {"w[e]ird*/m.py", "top.py"} <= set(found) and "pv/native.so" not in found
    assert os.fsdecode(b"pv/caf\xe9.py") in folder.files_containing(paths, [b"h(1)", *absent])
    read_here.clear()
    assert folder.files_containing(paths, [b"g3("]) == real(folder, paths, [b"g3("])
    assert read_here == paths  # a word or four: found here as fast


@pytest.mark.parametrize("child_fails", [False, True])
def test_the_provider_calls_of_a_narrower_replacement_are_searched_in_two_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, child_fails: bool
) -> None:
    """While the names are checked here, a second process searches the provider's files share by
    share for the calls a narrower replacement must take, and this one the shares left once it is
    free: the same error, citing the same call, and every file searched once. When the second
    process fails, the shares it took are searched here."""
    import test_real_calls

    from atompin.analysis import callsites, engine

    monkeypatch.setattr(callsites.CallerSearch, "MIN_FILES", 0)
    monkeypatch.setattr(engine.ContactRules, "MIN_FILES", 10**6)  # only the caller search forks
    consumer = test_real_calls.consumer(
        "import pv.ops\n\ndef conv(x, weight, bias=None, cache_indices=None):\n    return x\n\npv.ops.conv = conv\n"
    )
    provider = MemoryTree(dedent_files(test_real_calls.PROVIDER), "provider")
    files = provider.python_files("pv")
    log = tmp_path / "searched"
    real_calls_in = callsites.CallerSearch._calls_in
    pid = os.getpid()

    def calls_in(self: callsites.CallerSearch, names: list[str], paths: list[str], known: list[str]) -> object:
        here = os.getpid() == pid
        if here and os.environ["ATOMPIN_JOBS"] == "2":  # let the second process take a share first
            _wait_until(lambda: any(line.startswith("child") for line in log.read_text().splitlines()))
        with log.open("a") as out:
            out.write(f"{'here' if here else 'child'} {' '.join(names)} {' '.join(paths)}\n")
        if child_fails and not here:
            raise RuntimeError("the second process breaks after taking a share")
        return real_calls_in(self, names, paths, known)

    monkeypatch.setattr(callsites.CallerSearch, "_calls_in", calls_in)
    seen = {}
    searched: dict[str, list[tuple[str, str]]] = {}
    for jobs in ("1", "2"):
        monkeypatch.setenv("ATOMPIN_JOBS", jobs)
        log.write_text("")
        result = check_trees(
            MemoryTree(dedent_files(consumer), "consumer"),
            provider,
            "pv",
            "plug",
            SqliteAnalysisCache(tmp_path / f"cache-{jobs}"),
        )
        seen[jobs] = [(f.rule.value, f.severity.value, f.message) for f in result.findings]
        lines = [line.split(" ") for line in log.read_text().splitlines()]
        searched[jobs] = [(who, path) for who, names, *paths in lines if names == "conv" for path in paths if path]
    assert seen["1"] == seen["2"]
    assert any(
        rule == "arity-drift" and severity == "error" and "pv/mixer.py:5" in message
        for rule, severity, message in seen["2"]
    )
    assert searched["1"] == [("here", path) for path in files]
    by_child = [path for who, path in searched["2"] if who == "child"]
    here = [path for who, path in searched["2"] if who == "here"]
    assert by_child  # the second process took shares (it starts before this one is free)
    if child_fails:  # the share it took (then broke) is searched here too
        assert sorted(here) == sorted(files) and len(by_child) == 1
    else:  # every file once, by one process or the other
        assert sorted(here + by_child) == sorted(files)


def test_the_second_processes_of_the_checks_are_stopped_when_the_checks_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The contact rules' process and the caller search's are stopped and reaped."""
    import test_real_calls

    from atompin.analysis import callsites, engine

    monkeypatch.setenv("ATOMPIN_JOBS", "2")
    monkeypatch.setattr(engine.ContactRules, "MIN_FILES", 0)
    monkeypatch.setattr(callsites.CallerSearch, "MIN_FILES", 0)
    started: list[prefetch.Worker | None] = []
    real_fork = prefetch.fork_worker
    for module in (engine, callsites):
        monkeypatch.setattr(module, "fork_worker", lambda *tasks: started.append(real_fork(*tasks)) or started[-1])

    def fail(self: engine.UsageChecker) -> object:
        raise RuntimeError("a check broke")

    monkeypatch.setattr(engine.UsageChecker, "run", fail)
    consumer = test_real_calls.consumer("import pv.ops\n\ndef conv(x, weight):\n    return x\n\npv.ops.conv = conv\n")
    with pytest.raises(RuntimeError, match="a check broke"):
        check_trees(
            MemoryTree(dedent_files(consumer), "consumer"),
            MemoryTree(dedent_files(test_real_calls.PROVIDER), "provider"),
            "pv",
            "plug",
        )
    assert len(started) == 2 and None not in started
    for worker in started:
        assert worker is not None
        with pytest.raises(ChildProcessError):
            os.waitpid(worker.pid, os.WNOHANG)


def test_identifiers_read_here_are_kept_in_memory_and_the_rest_taken_from_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from atompin.analysis import name_sites
    from atompin.analysis.cache import AnalysisCache
    from atompin.analysis.name_sites import NameSearch

    monkeypatch.setattr(name_sites, "_MIN_UNREAD", 0)
    files = {"pv/__init__.py": "", **{f"pv/m{i}.py": f"def f{i}(x):\n    return x.run{i}()\n" for i in range(6)}}
    tree = MemoryTree(files, "provider")
    mine, theirs = sorted(files)[0::2], sorted(files)[1::2]
    cache = AnalysisCache()
    search = NameSearch(tree, "pv", cache)
    assert search.reading_task() is not None  # every file looked up in the cache: none is there yet
    for key, entry in NameSearch(tree, "pv", AnalysisCache())._read_identifiers(theirs):
        cache.put_raw(key, entry)  # what a second process read and sent
    search._read_identifiers(mine)  # the shares this process took
    asked: list[str] = []
    real_get = cache.get_raw
    monkeypatch.setattr(cache, "get_raw", lambda key: asked.append(key) or real_get(key))
    search._load_identifiers()
    # What was read here is not looked up again; the rest is taken from the cache, none is lost.
    assert sorted(key for key in asked if key.startswith("identifiers:")) == sorted(
        search._identifiers_key(path) for path in theirs
    )
    assert search.files_defining([({"f1", "f2", "f5"}, 1)]) == [["pv/m1.py", "pv/m2.py", "pv/m5.py"]]
    assert [site.path for site in search.find_text(["run4", "run5"])["run4"]] == ["pv/m4.py"]


def test_the_cache_is_written_while_the_contact_rules_process_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the run wrote so far (identifiers, indexes) goes to disk before this process waits for
    the contact rules' findings, not after them; the run's last write is then small."""
    import sqlite3

    from test_baseline import CONSUMER as DRIFT_CONSUMER
    from test_baseline import PROVIDER_1, PROVIDER_2

    from atompin.analysis import engine
    from atompin.sources.tree import FolderTree
    from atompin.testing import write_files

    monkeypatch.setenv("ATOMPIN_JOBS", "2")
    monkeypatch.setattr(engine.ContactRules, "MIN_FILES", 0)
    consumer = FolderTree(write_files(tmp_path / "c", DRIFT_CONSUMER))
    old, new = (
        FolderTree(write_files(tmp_path / "old", PROVIDER_1)),
        FolderTree(write_files(tmp_path / "new", PROVIDER_2)),
    )
    on_disk: list[int] = []
    real = engine.ContactRules.findings

    def findings(self: engine.ContactRules) -> list[Finding]:
        with sqlite3.connect(tmp_path / "cache" / "index.sqlite") as db:
            on_disk.append(db.execute("SELECT count(*) FROM modules").fetchone()[0])
        return real(self)

    monkeypatch.setattr(engine.ContactRules, "findings", findings)
    with SqliteAnalysisCache(tmp_path / "cache") as cache:
        result = check_trees(consumer, new, "pv", None, cache, baseline=old, provider_version="2.0.0")
    assert result.findings
    assert len(on_disk) == 1 and on_disk[0] > 0
    with sqlite3.connect(tmp_path / "cache" / "index.sqlite") as db:
        assert db.execute("SELECT count(*) FROM modules").fetchone()[0] > on_disk[0]  # the rest at the end


def _on_disk(folder: Path) -> dict[str, bytes]:
    """What the cache in `folder` holds on disk."""
    import sqlite3

    db = sqlite3.connect(folder / "index.sqlite")
    try:
        return {key: bytes(data) for key, data in db.execute("SELECT key, data FROM modules")}
    finally:
        db.close()


def _recording_writes(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The keys of each write any `SqliteAnalysisCache` of this process makes."""
    writes: list[list[str]] = []
    real = SqliteAnalysisCache._write

    def write(self: SqliteAnalysisCache, entries: list[tuple[str, bytes]]) -> None:
        entries = list(entries)
        writes.append([key for key, _ in entries])
        real(self, entries)

    monkeypatch.setattr(SqliteAnalysisCache, "_write", write)
    return writes


def test_a_child_told_so_writes_what_it_made_to_disk_and_the_parent_does_not_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOMPIN_JOBS", "2")
    cache = SqliteAnalysisCache(tmp_path / "cache")
    cache.put_raw("mine", b"0")  # pending here: the parent's to write, not the child's
    made = [("a", b"1"), (prefetch.ANSWER, b"42"), ("b", b"2")]
    worker = fork_worker(prefetch.written_there(lambda: made, cache, prefetch.Shares(1)))
    assert worker is not None
    writes = _recording_writes(monkeypatch)  # from now on, in this process only
    assert worker.collect_into(cache) == b"42"
    # On disk before the parent writes anything, and read from memory meanwhile.
    assert _on_disk(tmp_path / "cache") == {"a": b"1", "b": b"2"}
    assert (cache.get_raw("a"), cache.get_raw("b"), cache.get_raw("mine")) == (b"1", b"2", b"0")
    cache.flush()
    assert writes == [["mine"]]
    assert _on_disk(tmp_path / "cache") == {"a": b"1", "b": b"2", "mine": b"0"}
    assert cache.get_raw("a") == b"1"  # from disk now


def test_a_child_that_cannot_write_to_disk_sends_what_it_made_for_the_parent_to_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from atompin.analysis.cache import AnalysisCache

    monkeypatch.setenv("ATOMPIN_JOBS", "2")
    made = [("a", b"1"), ("b", b"2")]
    # A cache in memory keeps nothing on disk: the entries arrive as any child's.
    in_memory = AnalysisCache()
    worker = fork_worker(prefetch.written_there(lambda: made, in_memory, prefetch.Shares(1)))
    assert worker is not None and worker.collect_into(in_memory) is None
    assert (in_memory.get_raw("a"), in_memory.get_raw("b")) == (b"1", b"2")
    # Another run holds the database: the child soon gives up, and the parent writes them.
    monkeypatch.setattr(SqliteAnalysisCache, "WRITE_NOW_WAIT_MS", 10)
    cache = SqliteAnalysisCache(tmp_path / "cache")
    other = sqlite3.connect(tmp_path / "cache" / "index.sqlite", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    worker = fork_worker(prefetch.written_there(lambda: made, cache, prefetch.Shares(1)))
    assert worker is not None
    writes = _recording_writes(monkeypatch)
    worker.collect_into(cache)
    other.execute("ROLLBACK")
    other.close()
    assert _on_disk(tmp_path / "cache") == {}
    cache.flush()
    assert writes == [["a", "b"]] and _on_disk(tmp_path / "cache") == dict(made)


def test_a_child_that_ends_once_the_parent_waits_for_it_sends_what_it_made_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writing then would only make the parent wait longer: the parent writes them later, beside
    other work."""
    monkeypatch.setenv("ATOMPIN_JOBS", "2")
    cache = SqliteAnalysisCache(tmp_path / "cache")
    ahead = prefetch.Shares(2)
    first = fork_worker(prefetch.written_there(lambda: [("a", b"1")], cache, ahead))
    assert first is not None
    first.collect_into(cache)  # it ended first: it took a share and wrote
    ahead.take_rest()  # the parent is about to wait
    second = fork_worker(prefetch.written_there(lambda: [("b", b"2")], cache, ahead))
    assert second is not None
    second.collect_into(cache)
    assert _on_disk(tmp_path / "cache") == {"a": b"1"}
    writes = _recording_writes(monkeypatch)
    cache.flush()
    assert writes == [["b"]] and _on_disk(tmp_path / "cache") == {"a": b"1", "b": b"2"}


def _narrower_conv_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str, patch: bool = True
) -> list[tuple[str, str, str]]:
    """A check of a consumer replacing `pv.ops.conv` with a narrower function (or, without
    `patch`, only importing it), with `jobs` processes, cached in tmp_path / cache-JOBS: the
    findings (rule, severity, message)."""
    import test_real_calls

    monkeypatch.setenv("ATOMPIN_JOBS", jobs)
    source = "import pv.ops\n\ndef conv(x, weight, bias=None, cache_indices=None):\n    return x\n"
    consumer = test_real_calls.consumer(source + ("\npv.ops.conv = conv\n" if patch else "\nx = pv.ops.conv\n"))
    result = check_trees(
        MemoryTree(dedent_files(consumer), "consumer"),
        MemoryTree(dedent_files(test_real_calls.PROVIDER), "provider"),
        "pv",
        "plug",
        SqliteAnalysisCache(tmp_path / f"cache-{jobs}"),
    )
    return [(f.rule.value, f.severity.value, f.message) for f in result.findings]


def test_a_caller_search_started_ahead_is_called_off_when_the_provider_side_ends_after_the_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once every body is read, the patches are known: where the second process has indexed the
    provider module a replacement narrows, the search for its calls is started then, before what
    was handed over is resolved, in a process that waits until the provider side's child is
    done. That child ends after the scan here, so it sends what it read to this process, not to
    the cache: the search started ahead, not begun, is called off (it would tell the files by
    their text) and started again once the identifiers are here, which it then has in memory.
    The findings are those of a check in one process."""
    from atompin.analysis import callsites, name_sites
    from atompin.analysis.scanner import ConsumerScanner

    monkeypatch.setattr(callsites.CallerSearch, "MIN_FILES", 0)
    monkeypatch.setattr(name_sites, "_MIN_UNREAD", 0)  # a child reads the provider's identifiers
    events: list[str] = []
    real_start, real_finish = callsites.CallerSearch.start_search, ConsumerScanner._finish_contact

    def start_search(self: callsites.CallerSearch, names: set[str], ahead: object = None) -> None:
        events.append(f"search {' '.join(sorted(names))}{' ahead' if ahead is not None else ''}")
        real_start(self, names, ahead)  # type: ignore[arg-type]

    def finish_contact(self: ConsumerScanner) -> None:
        events.append("finish scan")
        real_finish(self)

    monkeypatch.setattr(callsites.CallerSearch, "start_search", start_search)
    monkeypatch.setattr(ConsumerScanner, "_finish_contact", finish_contact)
    log = tmp_path / "log"
    log.write_text("")
    real_read = name_sites.NameSearch._read_identifiers
    pid = os.getpid()
    child_first = [False]  # this process searches once the second one took a share
    took = _log_searches_there(
        monkeypatch,
        log,
        lambda search: f"search {time.monotonic()} {int(search.names.in_place)}",
        lambda: child_first[0],
    )

    def read_identifiers(self: name_sites.NameSearch, paths: list[str]) -> object:
        found = real_read(self, paths)
        if os.getpid() != pid:
            # A provider side that ends late: after this process's scan has ended (a busy machine
            # could otherwise slow the scan past any fixed delay here).
            _wait_until(lambda: not child_first[0] or "scanned" in log.read_text())
            with log.open("a") as out:
                out.write(f"read {time.monotonic()} -\n")
        return found

    real_call_off = callsites.CallerSearch.call_off_unstarted

    def call_off_unstarted(self: callsites.CallerSearch) -> None:
        if os.getpid() == pid:
            with log.open("a") as out:
                out.write(f"scanned {time.monotonic()} -\n")
        real_call_off(self)

    monkeypatch.setattr(name_sites.NameSearch, "_read_identifiers", read_identifiers)
    monkeypatch.setattr(callsites.CallerSearch, "call_off_unstarted", call_off_unstarted)
    # The module the replacement narrows is indexed already (the cache of an earlier check of a
    # consumer that only reads it): what the second process would have written by then.
    _narrower_conv_check(tmp_path, monkeypatch, "2", patch=False)
    import sqlite3

    with sqlite3.connect(tmp_path / "cache-2" / "index.sqlite") as db:  # the identifiers are read again
        db.execute("DELETE FROM modules WHERE key LIKE 'identifiers%'")
    events.clear()
    log.write_text("")
    took.unlink(missing_ok=True)
    child_first[0] = True
    found = _narrower_conv_check(tmp_path, monkeypatch, "2")
    child_first[0] = False
    assert events == ["search conv ahead", "finish scan", "search conv"]
    lines = [line.split(" ") for line in log.read_text().splitlines()]
    searched = [(float(at), by_text) for what, at, by_text in lines if what == "search"]
    read = [float(at) for what, at, _ in lines if what == "read"]
    assert searched and read and min(at for at, _ in searched) > max(read)  # once the identifiers are here
    assert {by_text for _, by_text in searched} == {"0"}  # from the identifiers, never by the text
    assert found == _narrower_conv_check(tmp_path, monkeypatch, "1")
    assert any(rule == "arity-drift" and severity == "error" and "pv/mixer.py:5" in m for rule, severity, m in found)


def test_nothing_is_searched_ahead_from_a_provider_not_indexed_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guess reads only what the cache holds: nothing indexed, no name to search ahead, and
    the search starts after the scan (the same findings)."""
    from atompin.analysis import callsites

    monkeypatch.setattr(callsites.CallerSearch, "MIN_FILES", 0)
    started: list[tuple[tuple[str, ...], bool]] = []
    real_start = callsites.CallerSearch.start_search

    def start_search(self: callsites.CallerSearch, names: set[str], ahead: object = None) -> None:
        started.append((tuple(sorted(names)), ahead is not None))
        real_start(self, names, ahead)  # type: ignore[arg-type]

    monkeypatch.setattr(callsites.CallerSearch, "start_search", start_search)
    found = _narrower_conv_check(tmp_path, monkeypatch, "2")
    assert started == [((), True), (("conv",), False)]
    assert found == _narrower_conv_check(tmp_path, monkeypatch, "1")


def test_a_caller_search_started_ahead_is_stopped_when_the_scan_then_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from atompin.analysis import callsites
    from atompin.analysis.scanner import ConsumerScanner

    monkeypatch.setattr(callsites.CallerSearch, "MIN_FILES", 0)
    _narrower_conv_check(tmp_path, monkeypatch, "2", patch=False)  # the module is indexed
    started: list[prefetch.Worker | None] = []
    real_fork = prefetch.fork_worker
    monkeypatch.setattr(callsites, "fork_worker", lambda *tasks: started.append(real_fork(*tasks)) or started[-1])

    def fail(self: ConsumerScanner) -> None:
        raise RuntimeError("resolving what was handed over broke")

    monkeypatch.setattr(ConsumerScanner, "_finish_contact", fail)
    with pytest.raises(RuntimeError, match="handed over broke"):
        _narrower_conv_check(tmp_path, monkeypatch, "2")
    [worker] = started
    assert worker is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(worker.pid, os.WNOHANG)


@pytest.mark.parametrize(
    ("names", "found"),
    [
        (["conv"], True),
        (["get_coordinator", "forward_native"], True),
        (["conv", "forward", "nowhere"], True),
        # The identifiers keep no word of non-ASCII letters: such a name's calls are found only in
        # files calling another name too, whichever way the files are told.
        (["convé"], False),
        (["conv", "convé"], True),
    ],
)
def test_the_files_told_by_their_text_give_the_calls_the_identifiers_give(names: list[str], found: bool) -> None:
    """Started ahead, the caller search cannot wait for the identifiers: it reads every file
    holding a name's bytes (in a comment, a definition, a longer word) and finds the same calls."""
    import test_real_calls

    from atompin.analysis.callsites import CallerSearch
    from atompin.analysis.name_sites import NameSearch
    from atompin.analysis.provider import ProviderIndex

    files = dedent_files(
        {
            **test_real_calls.PROVIDER,
            "pv/noise.py": """
                # conv(x) and forward_native(y) in a comment
                def get_coordinator_old(a):
                    return convert(a) + reconv (a)
                s = "conv(1)"
            """,
            "pv/spaced.py": "import pv.ops\n\ndef f(x):\n    return pv.ops.conv (x, 1,\n        bias=2)\n",
            "pv/accented.py": "def convé(x):\n    return x\n\ndef g(x):\n    return convé(x) + conv(x, 2)\n",
            "pv/accented_only.py": "from pv.accented import convé\n\ndef h(x):\n    return convé(x, 3)\n",
        }
    )
    tree = MemoryTree(files, "provider")
    paths = tree.python_files("pv")
    by_identifiers = CallerSearch(ProviderIndex(tree, "pv"))._calls_in(names, paths, [])
    by_text = CallerSearch(ProviderIndex(tree, "pv"), NameSearch(tree, "pv", in_place=True))._calls_in(names, paths, [])
    assert by_text == by_identifiers
    assert any(by_text.values()) is found


def test_the_scan_is_freed_while_the_contact_rules_process_ends_not_before_the_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Freeing a big scan's syntax trees takes tens of milliseconds: they are dropped where this
    process waits for the contact rules' process anyway, not on the way to the checks."""
    import weakref

    from atompin.analysis import engine
    from atompin.analysis.scanner import ConsumerScanner

    monkeypatch.setattr(engine.ContactRules, "MIN_FILES", 0)
    scanners: list[weakref.ref[ConsumerScanner]] = []
    alive: dict[str, bool] = {}
    real_scan, real_run, real_findings = ConsumerScanner.scan, engine.UsageChecker.run, engine.ContactRules.findings

    def scan(self: ConsumerScanner, *args: object) -> object:
        scanners.append(weakref.ref(self))
        return real_scan(self, *args)  # type: ignore[arg-type]

    def run(self: engine.UsageChecker) -> object:
        alive["checks"] = scanners[0]() is not None
        return real_run(self)

    def findings(self: engine.ContactRules) -> object:
        alive["contact"] = scanners[0]() is not None
        return real_findings(self)

    monkeypatch.setattr(ConsumerScanner, "scan", scan)
    monkeypatch.setattr(engine.UsageChecker, "run", run)
    monkeypatch.setattr(engine.ContactRules, "findings", findings)
    found = _narrower_conv_check(tmp_path, monkeypatch, "2")
    assert alive == {"checks": True, "contact": False}
    assert any(rule == "arity-drift" for rule, _, _ in found)


@pytest.mark.parametrize("identifiers_cached", [False, True])
def test_a_search_started_ahead_reads_the_identifiers_from_the_cache_when_all_are_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, identifiers_cached: bool
) -> None:
    """Once the provider side's children are done, what they read is on disk when they ended
    before the scan: the search started ahead takes the identifiers from there, else it tells the
    files by their text. The same calls either way."""
    import test_real_calls

    from atompin.analysis import name_sites
    from atompin.analysis.callsites import CallerSearch
    from atompin.analysis.name_sites import NameSearch
    from atompin.analysis.provider import ProviderIndex

    monkeypatch.setenv("ATOMPIN_JOBS", "2")
    monkeypatch.setattr(CallerSearch, "MIN_FILES", 0)
    tree = MemoryTree(dedent_files(test_real_calls.PROVIDER), "provider")
    cache = SqliteAnalysisCache(tmp_path / "cache")
    if identifiers_cached:
        NameSearch(tree, "pv", cache).load()
        cache.flush()
    name_sites._LAST_LOADED.clear()  # as in a new process: only the cache holds them
    log = tmp_path / "log"
    log.write_text("")
    # The second process takes a share first.
    _log_searches_there(monkeypatch, log, lambda search: str(int(search.names.in_place)), lambda: True)
    callers = CallerSearch(ProviderIndex(tree, "pv", cache), NameSearch(tree, "pv", cache))
    callers.start_search({"conv", "get_coordinator"}, ahead=[])
    callers.prime({"conv", "get_coordinator"})
    modes = set(log.read_text().split())
    assert modes == ({"0"} if identifiers_cached else {"1"})
    alone = CallerSearch(ProviderIndex(tree, "pv"))
    alone.prime({"conv", "get_coordinator"})
    assert callers._raw == alone._raw and callers._raw["conv"]


@pytest.mark.parametrize("begun", [False, True])
def test_a_search_started_ahead_is_called_off_only_before_it_begins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, begun: bool
) -> None:
    """`call_off_unstarted` stops a search still waiting for the children it was started behind
    (this process then searches every share itself, or starts it again), and leaves one that
    has begun: its second process's calls are taken in. The same calls either way."""
    import test_real_calls

    from atompin.analysis.callsites import CallerSearch
    from atompin.analysis.name_sites import NameSearch
    from atompin.analysis.provider import ProviderIndex

    monkeypatch.setenv("ATOMPIN_JOBS", "2")
    monkeypatch.setattr(CallerSearch, "MIN_FILES", 0)
    tree = MemoryTree(dedent_files(test_real_calls.PROVIDER), "provider")
    log = tmp_path / "log"
    log.write_text("")
    _log_searches_there(monkeypatch, log, lambda search: "child")
    # The provider side's child, still at work until told to end (a byte on its pipe).
    go_read, go_write = os.pipe()
    provider_side = fork_worker(lambda: [("done", os.read(go_read, 1))])
    assert provider_side is not None
    cache = SqliteAnalysisCache(tmp_path / "cache")
    callers = CallerSearch(ProviderIndex(tree, "pv", cache), NameSearch(tree, "pv", cache))
    callers.start_search({"conv", "get_coordinator"}, ahead=[provider_side])
    worker = callers._worker
    assert worker is not None
    if begun:
        os.write(go_write, b"x")
        _wait_until(lambda: bool(log.read_text()))
    callers.call_off_unstarted()
    os.write(go_write, b"x")
    provider_side.collect()
    if begun:
        assert callers._worker is worker  # under way: it goes on
    else:
        assert callers._worker is None
        with pytest.raises(ChildProcessError):  # stopped and reaped
            os.waitpid(worker.pid, os.WNOHANG)
    callers.prime({"conv", "get_coordinator"})
    assert bool(log.read_text()) is begun
    alone = CallerSearch(ProviderIndex(tree, "pv"))
    alone.prime({"conv", "get_coordinator"})
    assert callers._raw == alone._raw and callers._raw["conv"]
