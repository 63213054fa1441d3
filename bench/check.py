#!/usr/bin/env python3
"""Benchmark `atompin check` against a full parse of the provider, in one run.

    python bench/check.py PROVIDER_ROOT CONSUMER_ROOT --package vllm --consumer-package atom.plugin.vllm

Prints, measured now on this machine (shared machines are noisy, so only
ratios mean anything): the time to read and `ast.parse` every .py file of the
provider package once (the baseline), `atompin check` cold (empty cache) and
warm (second run on the same cache) as ratios to the baseline, the CPU each
took (with the second processes it forks: on a shared machine it moves less
than the wall time), and the peak RSS of each phase. Each phase runs in its
own process, best of --repeat.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compile_atompin


def _phase(args: argparse.Namespace) -> dict[str, float]:
    start = time.perf_counter()
    before = os.times()
    extra: dict[str, float] = {}
    if args.phase == "baseline":
        import ast

        root = Path(args.provider) / args.package.replace(".", "/")
        n = 0
        for path in sorted(root.rglob("*.py")):
            ast.parse(path.read_bytes())
            n += 1
        extra["files"] = n
    else:
        from atompin.analysis.cache import SqliteAnalysisCache
        from atompin.analysis.results import check_trees
        from atompin.sources.tree import FolderTree

        cache = SqliteAnalysisCache(Path(args.cache_dir))
        result = check_trees(
            FolderTree(args.consumer), FolderTree(args.provider), args.package, args.consumer_package, cache
        )
        extra["findings"] = len(result.findings)
        extra["import_sites"] = result.summary.import_sites
        extra["cache_hits"] = cache.hits
        extra["cache_misses"] = cache.misses
    seconds = time.perf_counter() - start
    after = os.times()
    # CPU of this process and of the second processes it waited for: less moved by a busy machine
    # than the wall time (work does not grow when it waits for a core).
    cpu = sum(after[:4]) - sum(before[:4])
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # The second processes (forked: most of their pages are the main process's, shared) apart.
    child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"seconds": seconds, "cpu": cpu, "rss_mb": rss_mb, "child_mb": child_mb, **extra}


def _run(args: argparse.Namespace, phase: str, cache_dir: str) -> dict[str, float]:
    cmd = [
        sys.executable,
        __file__,
        args.provider,
        args.consumer,
        "--package",
        args.package,
        "--phase",
        phase,
        "--cache-dir",
        cache_dir,
    ]
    if args.consumer_package:
        cmd += ["--consumer-package", args.consumer_package]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("provider", help="folder holding the provider package (e.g. a vLLM release)")
    parser.add_argument("consumer", help="folder holding the consumer package (e.g. an ATOM checkout)")
    parser.add_argument("--package", required=True)
    parser.add_argument("--consumer-package")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(_phase(args)))
        return
    compile_atompin()

    best: dict[str, dict[str, float]] = {}
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="atompin-bench-") as cache_dir:
            runs = {
                "baseline": _run(args, "baseline", cache_dir),
                "cold": _run(args, "cold", cache_dir),
                "warm": _run(args, "warm", cache_dir),
            }
        for name, run in runs.items():
            if name not in best or run["seconds"] < best[name]["seconds"]:
                best[name] = run
    base = best["baseline"]["seconds"]
    print(
        f"baseline: ast.parse of {int(best['baseline']['files'])} provider files: {base:.3f}s "
        f"(peak RSS {best['baseline']['rss_mb']:.0f} MB)"
    )
    # A whole consumer package, or one folder of it (a dotted --consumer-package).
    part = bool(args.consumer_package and "." in args.consumer_package)
    # The wall time cannot be below the CPU spread evenly over every core this run may use: a
    # target under that floor needs less work, not more processes.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    for name, target in (("cold", 0.10 if part else 0.25), ("warm", 0.03)):
        run = best[name]
        ratio = run["seconds"] / base
        verdict = "ok" if ratio <= target else "over target"
        memory = "ok" if run["rss_mb"] <= 150 else "over target"
        print(
            f"{name:>8}: {run['seconds']:.3f}s = {ratio:.3f}x baseline (target <= {target}x, {verdict}); "
            f"CPU {run['cpu']:.2f}s = {run['cpu'] / best['baseline']['cpu']:.3f}x the baseline's "
            f"(on {cores} cores, at least {run['cpu'] / cores / base:.3f}x baseline in wall time); "
            f"peak RSS {run['rss_mb']:.0f} MB (target <= 150, {memory}; second processes up to "
            f"{run['child_mb']:.0f} MB, shared pages included); cache {int(run['cache_hits'])} hits, "
            f"{int(run['cache_misses'])} misses; {int(run['findings'])} findings"
        )


if __name__ == "__main__":
    main()
