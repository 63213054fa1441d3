#!/usr/bin/env python3
"""Benchmark `atompin bisect`: steps taken, and each step's cost against a full parse, in one run.

    python bench/bisecting.py [--commits 1000] [--modules 2000]
    python bench/bisecting.py --provider REPO --good REF --bad REF --consumer REPO --consumer-ref REF \\
        --package vllm --consumer-package atom.plugin.vllm

Without --provider, a provider history is generated (in one `git fast-import`
run): a package of --modules modules, then commits that each edit --per-commit
modules chosen at random, and at a random place one commit that moves a
function the consumer imports to another module (the break bisect must find).
The consumer imports, calls and patches names from a share (--reach) of the
modules. The defaults follow real vLLM and ROCm ATOM: ATOM's plugin reaches 72
of vLLM 0.34's 3,604 modules (2%), and about 40% of vllm/*.py files change
between consecutive releases (as one edit per commit gives over 1,000 commits
of 2,000 modules). `--reach 0.1 --per-commit 2` is a harsher history.
With --provider, real repositories are used (e.g. a repository of real vLLM
releases from ../shared/tools/vllm-releases and a clone of ROCm ATOM).

Measured now, in this process, with an empty cache:

- baseline: read every .py file of the provider package at BAD from git and `ast.parse` it once;
- the bisect (atompin.bisecting.bisect, as the command runs it): the history fetch, then every
  step (a judgement of one commit, exactly as `atompin lock` judges a pin), each as a ratio to
  the baseline, with the modules it parsed and, as an upper bound, the package's .py files whose
  blobs differ from the nearest commit judged before it.

Targets: at most 1 + ceil(log2(n)) steps inside a range of n commits (11 for 1,000), and each step
after the first (GOOD, on a cold cache) at most 0.05x the baseline. Only ratios measured in the same
run mean anything on a shared machine.
"""

from __future__ import annotations

import argparse
import ast
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compile_atompin
from pairs_manifest import pair_manifest

FUNCTIONS = 8
METHODS = 6


def module_source(i: int, rev: int, moved: set[int], guests: dict[int, list[int]]) -> str:
    """Module `i` at revision `rev`; `moved`: modules whose first function left; `guests`: functions moved in."""
    lines = [f'"""Generated module {i}, revision {rev}."""', "", "import math", "", f"CONSTANT_{i} = {i + rev}", ""]
    for j in range(FUNCTIONS):
        if j == 0 and i in moved:
            continue
        lines += _function(f"func_{i}_{j}", i + j + rev)
    for owner in guests.get(i, []):
        lines += _function(f"func_{owner}_0", owner)
    lines += [f"class Class{i}:", f'    """A class of module {i}."""', ""]
    for j in range(METHODS):
        lines += [
            f"    def method_{j}(self, x, y=None, *, scale={j}):",
            "        total = x",
            "        for k in range(scale):",
            "            total = total + k * (y or 1)",
            "        return math.floor(total)",
            "",
        ]
    if rev:
        lines += _function(f"added_{i}_{rev}", rev)
    return "\n".join(lines) + "\n"


def _function(name: str, seed: int) -> list[str]:
    return [
        f"def {name}(a, b=1, *args, **kwargs):",
        f'    """Adds things up ({seed})."""',
        "    x = a + b",
        "    for k in range(b):",
        f"        x += k * {seed}",
        "        if x > 1000:",
        "            break",
        "    return [x, args, kwargs]",
        "",
        "",
    ]


def module_path(package: str, i: int) -> str:
    return f"{package}/sub{i // 50}/m{i}.py"


def generate(
    root: Path, commits: int, modules: int, seed: int, reach: float = 0.03, per_commit: int = 1
) -> tuple[str, str, int]:
    """Provider and consumer repositories under `root`; returns (provider, consumer, break position)."""
    from atompin.testing import git_history, git_repo

    rng = random.Random(seed)
    used = sorted(rng.sample(range(modules), max(2, int(modules * reach))))
    victim = used[len(used) // 2]
    host = next(i for i in range(modules) if i not in used)
    broken_at = rng.randrange(commits // 4, commits - 1)  # 1-based commit number of the move
    revs = [0] * modules
    initial: dict[str, str | None] = {"pv/__init__.py": ""}
    initial.update({f"pv/sub{s}/__init__.py": "" for s in range((modules + 49) // 50)})
    initial.update({module_path("pv", i): module_source(i, 0, set(), {}) for i in range(modules)})
    history: list[tuple[str, dict[str, str | None], str | None]] = [("initial", initial, "v1.0.0")]
    moved: set[int] = set()
    guests: dict[int, list[int]] = {}
    for n in range(2, commits + 1):
        if n == broken_at:
            moved.add(victim)
            guests[host] = [victim]
            touched = [victim, host]
            subject = f"move func_{victim}_0 to m{host}"
        else:
            touched = rng.sample(range(modules), per_commit)
            subject = "edit " + " and ".join(f"m{i}" for i in touched)
            for i in touched:
                revs[i] += 1
        changes: dict[str, str | None] = {
            module_path("pv", i): module_source(i, revs[i], moved, guests) for i in touched
        }
        history.append((subject, changes, "v2.0.0" if n == commits else None))
    git_history(root / "provider", history)

    body = ["import functools", ""]
    for k, i in enumerate(used):
        dotted = f"pv.sub{i // 50}.m{i}"
        body += [f"from {dotted} import Class{i}, func_{i}_0, func_{i}_1"]
        if k % 3 == 0:
            body += [f"Class{i}.method_0 = functools.wraps(Class{i}.method_0)(lambda self, x, y=None, *, scale=0: x)"]
        body += [f"VALUE_{i} = func_{i}_1(1, 2)", ""]
    git_repo(root / "consumer", [("v0.1.0", {"plug/__init__.py": "", "plug/use.py": "\n".join(body) + "\n"})])
    return str(root / "provider"), str(root / "consumer"), broken_at


def full_parse(repo_path: str, ref: str, package: str) -> tuple[float, int]:
    import git

    start = time.perf_counter()
    repo = git.Repo(repo_path)
    prefix = package.replace(".", "/") + "/"
    n = 0
    for line in repo.git.ls_tree("-r", ref).splitlines():
        meta, path = line.split("\t", 1)
        if path.startswith(prefix) and path.endswith(".py"):
            ast.parse(repo.odb.stream(bytes.fromhex(meta.split()[2])).read())
            n += 1
    return time.perf_counter() - start, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--modules", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument(
        "--reach", type=float, default=0.03, help="share of the modules the consumer imports (ATOM: 72 of 3,604)"
    )
    parser.add_argument(
        "--per-commit", type=int, default=1, help="modules each commit edits (1: ~40%% changed over 1,000 commits)"
    )
    parser.add_argument("--provider")
    parser.add_argument("--good")
    parser.add_argument("--bad")
    parser.add_argument("--consumer")
    parser.add_argument("--consumer-ref")
    parser.add_argument("--package", default="pv")
    parser.add_argument("--consumer-package", default="plug")
    args = parser.parse_args()
    compile_atompin()

    with tempfile.TemporaryDirectory(prefix="atompin-bench-bisect-") as tmp:
        root = Path(tmp)
        os.environ["ATOMPIN_CACHE_DIR"] = str(root / "cache")
        if args.provider:
            provider, consumer = (
                os.path.abspath(p) if os.path.exists(p) else p for p in (args.provider, args.consumer)
            )
            good, bad, consumer_ref, expected = args.good, args.bad, args.consumer_ref, None
        else:
            start = time.perf_counter()
            provider, consumer, expected = generate(
                root, args.commits, args.modules, args.seed, args.reach, args.per_commit
            )
            good, bad, consumer_ref = "v1.0.0", "v2.0.0", "v0.1.0"
            print(
                f"generated {args.commits} commits of a {args.modules}-module provider in {time.perf_counter() - start:.1f}s"
            )
        manifest = root / "pairs.toml"
        manifest.write_text(
            pair_manifest(consumer, provider, args.package, args.consumer_package, consumer_ref, good, gate=True)
        )
        base, files = full_parse(provider, bad, args.package)
        print(f"baseline: read and ast.parse {files} provider files at {bad}: {base:.3f}s")
        run(manifest, good, bad, base, expected, provider)


def run(manifest: Path, good: str, bad: str, base: float, expected: int | None, provider: str) -> None:
    import git

    from atompin import bisecting, resolving

    timings: list[tuple[str, float, int]] = []
    trial = resolving.Judge.trial

    def timed_trial(self: resolving.Judge, ref: str) -> resolving.Trial:
        start = time.perf_counter()
        result = trial(self, ref)
        timings.append((result.commit, time.perf_counter() - start, result.parsed))
        return result

    resolving.Judge.trial = timed_trial  # type: ignore[method-assign]
    marks: list[tuple[str, float]] = []
    start = time.perf_counter()
    result = bisecting.bisect(
        manifest, "provider", good, bad, progress=lambda m: marks.append((m, time.perf_counter()))
    )
    total = time.perf_counter() - start
    fetched = next((t for m, t in marks if "judging" in m), start) - start
    n = len(result.commits)
    in_range = len(result.steps)
    limit = 1 + math.ceil(math.log2(n)) if n > 1 else 1
    print(f"range: {n} first-parent commits from {good} to {bad}; history resolved and fetched in {fetched:.3f}s")
    print(
        f"steps: {in_range} inside the range (target <= {limit}: {'ok' if in_range <= limit else 'over'}), plus {good}"
    )
    repo = git.Repo(provider)
    position = {c: i for i, c in enumerate(result.commits)}
    judged: list[int] = []
    worst = 0.0
    for k, (commit, seconds, parsed) in enumerate(timings):
        pos = position.get(commit, -1)
        nearest = min(judged, key=lambda j: abs(j - pos)) if judged else None
        if nearest is None:
            bound = "cold cache"
        else:
            other = result.commits[nearest] if nearest >= 0 else result.good.commit
            changed = repo.git.diff("--name-only", other, commit, "--", "*.py").split()
            bound = f"{len(changed)} .py files changed since the nearest judged commit"
        judged.append(pos)
        ratio = seconds / base
        if k:
            worst = max(worst, ratio)
        label = good if k == 0 else f"{pos + 1}/{n}"
        print(f"  step {k + 1:>2} {label:>10} {commit[:12]}: {seconds:.3f}s = {ratio:.4f}x; parsed {parsed} ({bound})")
    print(f"each step after the first: at most {worst:.4f}x (target <= 0.05x: {'ok' if worst <= 0.05 else 'over'})")
    found = result.culprit
    if found is None:
        print("found: nothing (BAD is not worse than GOOD)")
    else:
        where = f"{found.position} of {n}"
        check = (
            ""
            if expected is None
            else f" (expected commit {expected - 1} of {n}: {'ok' if found.position == expected - 1 else 'WRONG'})"
        )
        print(f"found: {found.commit.commit[:12]} {found.commit.subject!r}, {where}{check}")
    print(f"bisect in total: {total:.3f}s = {total / base:.3f}x baseline")


if __name__ == "__main__":
    sys.exit(main())
