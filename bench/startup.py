#!/usr/bin/env python3
"""Benchmark how long `atompin --version`, `atompin --help` and every `atompin COMMAND --help`
take end to end, against a bare interpreter start measured in the same run.

    python bench/startup.py [--repeat 7]

Each command runs as a fresh process (what a user or a CI step sees); the
figure is the best of --repeat runs. Shared machines are noisy, so the ratio to
`python -c pass` (same interpreter, same moment) is printed beside the seconds.
The target is 0.15 s per command on an idle machine.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from bytecode import compile_atompin

COMMANDS = [
    ["--version"],
    ["--help"],
    *[[name, "--help"] for name in ("check", "lock", "verify", "diff", "bump", "bisect", "export", "doctor", "demo")],
    ["relocations", "suggest", "--help"],
]
TARGET = 0.15


def best_of(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    compile_atompin()
    baseline = best_of([sys.executable, "-c", "pass"], args.repeat)
    print(f"baseline: python -c pass: {baseline:.3f}s")
    worst = 0.0
    for command in COMMANDS:
        seconds = best_of([sys.executable, "-m", "atompin", *command], args.repeat)
        worst = max(worst, seconds)
        verdict = "ok" if seconds <= TARGET else "over target"
        print(f"  atompin {' '.join(command):<28} {seconds:.3f}s = {seconds / baseline:5.1f}x baseline ({verdict})")
    print(f"slowest: {worst:.3f}s (target <= {TARGET}s on an idle machine)")


if __name__ == "__main__":
    main()
