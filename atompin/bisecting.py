"""`atompin bisect`: the first commit between two refs of a component at which a
finding that fails a gate appears, found by binary search with the lock's judgement.

The range is the first-parent line from BAD back to what GOOD reaches (as `git
bisect --first-parent` walks it). GOOD is judged first (the baseline), then
BAD (nothing to search when it is not worse), then the middle of what is left,
so a range of n commits takes at most 1 + ceil(log2(n)) steps after GOOD. A
commit is worse when an error on a gated edge appears that GOOD did not have
(warnings pass, as they do in `bump --latest`). Nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from atompin.analysis.definitions import definition_changed
from atompin.errors import InputError, SourceError
from atompin.lockfile import LockedFinding
from atompin.locking import Locker
from atompin.manifest import load_manifest
from atompin.model import RefKind, Rule, Severity
from atompin.refs import check_ref
from atompin.resolving import Judge, Trial, affected_pairs, open_locker
from atompin.sources.git import CommitInfo, ResolvedRef

Progress = Callable[[str], None]


@dataclass(frozen=True)
class HeldBy:
    """A file the culprit changed that holds a finding's symbol, and how."""

    path: str
    how: str  # "defines" (the symbol's definition changed), "module" (the file is the module), "names" (a changed line names it)


@dataclass(frozen=True)
class AppearedFinding:
    """A finding the culprit brought, and the files it changed that hold its symbol."""

    pair: str
    finding: LockedFinding
    gated: bool  # an error on a gated edge: it fails the gate
    files: tuple[HeldBy, ...]  # definitions first


@dataclass(frozen=True)
class Culprit:
    commit: CommitInfo
    position: int  # 1-based, on the first-parent line from GOOD to BAD
    before: Trial  # the judgement just before it (GOOD, or the commit before it)
    after: Trial
    appeared: tuple[AppearedFinding, ...]
    changed: tuple[str, ...]  # every file the commit changed against its first parent


@dataclass
class Bisection:
    component: str
    repo: str
    good: Trial
    bad: Trial | None = None
    commits: list[str] = field(default_factory=list)  # the range, oldest first (BAD last)
    steps: list[tuple[int, Trial]] = field(default_factory=list)  # (1-based position, trial), in order
    culprit: Culprit | None = None  # None: BAD is not worse than GOOD


def is_worse(trial: Trial, baseline: Trial) -> bool:
    """An error on a gated edge appeared that `baseline` did not have."""
    return bool(trial.gated_keys() - baseline.gated_keys())


def bisect(
    manifest_path: Path,
    component: str,
    good: str,
    bad: str,
    *,
    pairs: list[str] | None = None,
    cache_dir: Path | None = None,
    offline: bool = False,
    progress: Progress | None = None,
) -> Bisection:
    """Binary-search the first-parent commits after `good` up to `bad` for the first one at
    which the affected pairs get a new finding that fails a gate."""
    say = progress or (lambda _m: None)
    manifest, _ = load_manifest(manifest_path)
    affected = affected_pairs(manifest, manifest_path, component, pairs)
    for ref in (good, bad):
        if problem := check_ref(ref):
            raise InputError(f"ref {ref!r} refused: {problem}")
    package = manifest.components[component].package
    with open_locker(manifest, manifest_path, cache_dir, offline, progress) as locker:
        judge = Judge(locker, component, affected)
        good_ref, bad_ref = judge.resolve(good), judge.resolve(bad)
        commits = locker.git.first_parent_commits(good_ref, bad_ref)
        if not commits:
            raise InputError(
                f"{bad} has no commit that {good} lacks: give the older ref first (bisect COMPONENT GOOD BAD)"
            )
        say(f"bisect {component}: {len(commits)} commits from {good} to {bad}; judging {good}")
        result = Bisection(component, bad_ref.url, judge.trial(good), commits=commits)
        say(f"bisect {component}: judging {bad}")
        result.bad = judge.trial(bad)
        result.steps.append((len(commits), result.bad))
        if not is_worse(result.bad, result.good):
            return result
        known: dict[int, Trial] = {-1: result.good, len(commits) - 1: result.bad}
        lo, hi = -1, len(commits) - 1  # lo is not worse, hi is
        while hi - lo > 1:
            mid = (lo + hi) // 2
            say(f"bisect {component}: step {len(result.steps) + 1}, {hi - lo - 1} commits left: {commits[mid][:12]}")
            known[mid] = judge.trial(commits[mid])
            result.steps.append((mid + 1, known[mid]))
            if is_worse(known[mid], result.good):
                hi = mid
            else:
                lo = mid
        result.culprit = _culprit(locker, bad_ref.url, package, commits[hi], hi + 1, known[lo], known[hi])
    return result


# Findings about the pin itself (they change with every pin), not about what a commit changed.
_PIN_RULES = {Rule.DECLARED_TARGET_SKEW, Rule.BRANCH_REF, Rule.MOVED_REF, Rule.BASELINE_UNAVAILABLE}
_HOW_ORDER = ("defines", "module", "names")


def _culprit(
    locker: Locker, url: str, package: str, commit: str, position: int, before: Trial, after: Trial
) -> Culprit:
    changed = locker.git.changed_files(url, commit)
    prefix = package.replace(".", "/") + "/"
    lines = locker.git.changed_lines(url, commit, prefix)
    sources = _Sources(locker, url, commit)
    gated = after.gated_keys()
    # With the severity: a symbol's new error beside its old warning is brought by the commit.
    old = {(p.name, f.check, f.rule.value, f.symbol, f.severity) for p in before.pairs for f in p.findings}
    appeared: list[AppearedFinding] = []
    for pair in after.pairs:
        for f in pair.findings:
            key = (pair.name, f.check, f.rule.value, f.symbol)
            if (*key, f.severity) in old or f.severity is Severity.INFO or f.rule in _PIN_RULES:
                continue
            held = [
                HeldBy(path, how)
                for path in changed
                if path.startswith(prefix) and path.endswith((".py", ".pyi"))
                if (how := holds(f.symbol, path, lines, sources))
            ]
            held.sort(key=lambda h: (_HOW_ORDER.index(h.how), h.path))
            appeared.append(AppearedFinding(pair.name, f, key in gated, tuple(held)))
    appeared.sort(key=lambda a: (not a.gated, a.finding.severity.rank, a.pair, a.finding.rule.value, a.finding.symbol))
    info = locker.git.commit_info(url, commit)
    return Culprit(info, position, before, after, tuple(appeared), tuple(changed))


class _Sources:
    """A changed file's text before and after the commit (None where it does not exist)."""

    def __init__(self, locker: Locker, url: str, commit: str) -> None:
        parent = locker.git.first_parent(url, commit)
        self.after = locker.git.tree(ResolvedRef(url, commit, commit, RefKind.COMMIT))
        self.before = locker.git.tree(ResolvedRef(url, parent, parent, RefKind.COMMIT)) if parent else None
        self._read: dict[tuple[bool, str], bytes | None] = {}

    def read(self, path: str, after: bool) -> bytes | None:
        tree = self.after if after else self.before
        key = (after, path)
        if key not in self._read:
            try:
                self._read[key] = tree.read(path) if tree is not None and path in tree.files else None
            except SourceError:
                self._read[key] = None  # a blob the filter left out: the changed lines must do
        return self._read[key]


def holds(symbol: str, path: str, lines: dict[str, list[str]], sources: _Sources) -> str:
    """How a changed file holds `symbol` ("" when it does not): "defines" when the commit changed
    its definition there (a def, class or assignment added, removed or rewritten), "module" when
    the file is the symbol's module (a module symbol), "names" when a changed line names it (a
    caller, an import, a re-export)."""
    module, _, qualname = symbol.partition(":")
    if not qualname:
        base = module.replace(".", "/")
        mine = path in (f"{base}.py", f"{base}.pyi", f"{base}/__init__.py") or path.startswith(f"{base}/")
        return "module" if mine else ""
    if definition_changed(sources.read(path, False), sources.read(path, True), qualname):
        return "defines"
    name = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(qualname.rsplit('.', 1)[-1])}(?![A-Za-z0-9_])")
    return "names" if any(name.search(line) for line in lines.get(path, [])) else ""
