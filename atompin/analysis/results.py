"""A check's whole result, cached under its inputs: the analysis core's front door.

A re-run with nothing changed (the same trees, options and atompin) reads the result back
without importing the analysis core, let alone running it: that is most of a warm check's
time. On a miss, `engine.analyse_trees` runs every part.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from atompin.analysis.cache import AnalysisCache, code_digest, dump_json, load_json
from atompin.model import CheckResult, Relocation
from atompin.sources.tree import SourceTree


@dataclass(frozen=True)
class CheckOptions:
    """What a check is asked besides its trees (`check_trees` says what each means): part of its
    result's key, and what `engine.analyse_trees` runs with."""

    package: str | None = None
    consumer_package: str | None = None
    relocations: tuple[tuple[str, Relocation], ...] = ()
    provider_version: str | None = None
    baseline_version: str | None = None
    baseline_label: str = ""
    platform: str | None = None  # the one the code runs on (`platforms.PLATFORMS`), for its tests of it


def check_trees(
    consumer: SourceTree,
    provider: SourceTree,
    package: str | None = None,
    consumer_package: str | None = None,
    cache: AnalysisCache | None = None,
    relocations: Sequence[tuple[str, Relocation]] = (),
    baseline: SourceTree | None = None,
    provider_version: str | None = None,
    baseline_version: str | None = None,
    baseline_label: str = "",
    platform: str | None = None,
) -> CheckResult:
    """Check everything `consumer` uses of the provider package in `provider`.

    `relocations` are the applicable table entries (table path, entry);
    `baseline` is the provider the consumer was written against: relocation entries
    without expected parameters are compared with it, patch targets that vanished since
    are errors, and the drift rules say what changed since it (`baseline_label` names it
    in messages, default its tree's label). `provider_version` (and `baseline_version`)
    decide the consumer's version gates; without one, what is under a gate is at most a
    warning. `platform` is the one the code runs on: what only runs on others (under
    `current_platform.is_cuda()`, say) is not reported (without one, any may run).
    """
    # One cache for every part (in memory only, without one): what second processes send is found there.
    cache = cache if cache is not None else AnalysisCache()
    options = CheckOptions(
        package, consumer_package, tuple(relocations), provider_version, baseline_version, baseline_label, platform
    )
    key = result_key(consumer, provider, baseline, options)
    if (cached := cache.get_raw(key)) is not None:
        found = load_json(CheckResult, cached)
        if found is not None:
            return found
    # The analysis core (about 0.1 s of imports) is loaded only when there is analysis to do.
    from atompin.analysis.engine import analyse_trees

    result = analyse_trees(consumer, provider, baseline, options, cache)
    cache.put_raw(key, dump_json(CheckResult, result))
    cache.flush()
    return result


def result_key(consumer: SourceTree, provider: SourceTree, baseline: SourceTree | None, options: CheckOptions) -> str:
    """The cache key of a check's whole result: what every input is, and which atompin judged."""
    trees = [(t.label, t.identity()) if t is not None else None for t in (consumer, provider, baseline)]
    text = json.dumps([code_digest(), trees, repr(options)])
    return "check-result:" + hashlib.sha256(text.encode()).hexdigest()
