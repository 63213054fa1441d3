#!/usr/bin/env python3
"""Where the time of one cold `atompin check` goes: a timeline of its phases, per process.

    python bench/timeline.py PROVIDER_ROOT CONSUMER_ROOT --package vllm --consumer-package atom.plugin.vllm

Runs one check with an empty cache, with the phases below timed wherever they
run: in this process or in the second processes it forks (they inherit the
timing, and each appends its lines to one file, so they interleave in time).
Prints one row per phase and process, in the order they started: the first
start, the last end, the time spent in it and how many times it ran; then the
wall time and the CPU of every process. The figures the
README's performance section gives ("the scan takes about 0.35 s beside the
indexing child's 0.45 s") are read from it. Timing adds a little to each
phase; for ratios to the baseline use `bench/check.py`.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# (module, class or "" for a function of the module, function, label). A phase that returns
# a task (a function a second process runs) has the task timed too, as "<label>: task".
PHASES = [
    ("atompin.analysis.engine", "", "analyse_trees", "the whole check"),
    ("atompin.analysis.engine", "", "scan_consumer", "consumer scan (reading and choosing included)"),
    ("atompin.analysis.relevant", "", "relevant_files", "choosing the files to scan"),
    ("atompin.analysis.scanner", "ConsumerScanner", "scan", "scanning the chosen files"),
    ("atompin.analysis.provider", "ProviderIndex", "indexing_task", "indexing what the consumer names"),
    ("atompin.analysis.name_sites", "NameSearch", "reading_task", "reading the provider's identifiers"),
    ("atompin.analysis.provider", "ProviderIndex", "collect", "waiting for the index"),
    ("atompin.analysis.name_sites", "NameSearch", "collect", "waiting for the identifiers"),
    ("atompin.analysis.engine", "ContactRules", "run", "contact rules"),
    ("atompin.analysis.engine", "ContactRules", "findings", "waiting for the contact rules"),
    ("atompin.analysis.checks", "UsageChecker", "run", "checks of names, patches and calls"),
    ("atompin.analysis.callsites", "CallerSearch", "start_search", "starting the caller search"),
    ("atompin.analysis.callsites", "CallerSearch", "prime", "provider's calls (waiting included)"),
    ("atompin.analysis.callsites", "CallerSearch", "_calls_in", "provider's calls: files parsed"),
    ("atompin.analysis.engine", "", "check_overrides", "override checks"),
    ("atompin.analysis.engine", "", "reachability", "reachability"),
    ("atompin.sources.tree", "FolderTree", "files_matching", "search in place (git grep -P)"),
    ("atompin.sources.tree", "FolderTree", "files_containing", "word search in a folder"),
]


def _timed(log: int, origin: float, label: str, function: Callable[..., Any], tasks: bool) -> Callable[..., Any]:
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = function(*args, **kwargs)
        end = time.perf_counter()
        os.write(log, f"{os.getpid()}\t{start - origin:.3f}\t{end - origin:.3f}\t{label}\n".encode())
        if tasks and callable(result):
            return _timed(log, origin, f"{label}: task", result, False)
        return result

    return timed


def _install(log: int, origin: float) -> None:
    """Wrap every phase; a phase atompin no longer has is named, not skipped."""
    for module_name, owner_name, name, label in PHASES:
        owner = importlib.import_module(module_name)
        if owner_name:
            owner = getattr(owner, owner_name)
        function = getattr(owner, name, None)
        if function is None:
            sys.exit(f"bench/timeline.py: {module_name}:{owner_name or ''}.{name} is gone; update PHASES")
        setattr(owner, name, _timed(log, origin, label, function, name.endswith("_task")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("provider")
    parser.add_argument("consumer")
    parser.add_argument("--package", default=None)
    parser.add_argument("--consumer-package", default=None)
    args = parser.parse_args()

    origin = time.perf_counter()
    before = os.times()
    from atompin.analysis.cache import SqliteAnalysisCache
    from atompin.analysis.results import check_trees
    from atompin.sources.tree import FolderTree

    with tempfile.TemporaryDirectory() as folder:
        log_path = Path(folder) / "timeline.log"
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        _install(log, origin)  # imports the analysis, which a check imports anyway
        imported = time.perf_counter() - origin
        cache = SqliteAnalysisCache(Path(folder) / "cache")
        result = check_trees(
            FolderTree(args.consumer), FolderTree(args.provider), args.package, args.consumer_package, cache
        )
        wall = time.perf_counter() - origin
        after = os.times()
        os.close(log)
        rows = [line.split("\t") for line in log_path.read_text().splitlines()]

    names = {str(os.getpid()): "main"}
    phases: dict[tuple[str, str], list[float]] = {}  # (process, phase) -> first start, last end, time, runs
    for pid, start, end, label in sorted(rows, key=lambda row: (float(row[1]), -float(row[2]))):
        process = names.setdefault(pid, f"child {len(names)}")
        first, last, spent, runs = phases.get((process, label), [float(start), 0.0, 0.0, 0])
        phases[(process, label)] = [first, max(last, float(end)), spent + float(end) - float(start), runs + 1]
    print(f"{'process':<8} {'start':>6} {'end':>6} {'time':>6} {'runs':>5}  phase")
    print(f"{'main':<8} {0:6.3f} {imported:6.3f} {imported:6.3f} {1:5}  imports")
    for (process, label), (first, last, spent, runs) in phases.items():
        print(f"{process:<8} {first:6.3f} {last:6.3f} {spent:6.3f} {runs:5}  {label}")
    cpu_here = after.user + after.system - before.user - before.system
    cpu_children = after.children_user + after.children_system - before.children_user - before.children_system
    print(
        f"wall {wall:.3f}s; CPU {cpu_here:.2f}s here and {cpu_children:.2f}s in second processes"
        f" (git included); findings: {len(result.findings)}"
    )


if __name__ == "__main__":
    main()
