"""What changed between two locks: pins, verdicts, findings and counts, per pair.

Findings are matched by (check, rule, symbol, severity), so a finding whose line moved is
neither "appeared" nor "resolved": reviewers see what really changed (a symbol's new error
beside its old warning appears).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from atompin.lockfile import Lock, LockedComponent, LockedFinding, LockedPair
from atompin.model import COUNT_FIELDS, Verdict

# (repo, old commit, new commit) -> commits between them, or None when unknown
Distance = Callable[[str, str, str], "int | None"]


@dataclass
class ComponentChange:
    name: str
    old: LockedComponent | None
    new: LockedComponent | None
    distance: int | None = None

    def describe(self) -> str:
        if self.old is None or self.new is None:
            comp = self.new or self.old
            assert comp is not None
            return f"{self.name} {'added' if self.old is None else 'removed'}: {comp.ref} ({comp.commit[:12]})"
        apart = f", {self.distance} commits apart" if self.distance is not None else ""
        versions = (
            f" [{self.old.version or '?'} -> {self.new.version or '?'}]" if self.old.version != self.new.version else ""
        )
        return f"{self.name}: {self.old.ref} ({self.old.commit[:12]}) -> {self.new.ref} ({self.new.commit[:12]}){versions}{apart}"


@dataclass
class PairDiff:
    name: str
    status: str  # added | removed | changed | unchanged
    old_verdict: Verdict | None = None  # None: the pair is new
    new_verdict: Verdict | None = None  # None: the pair was removed
    components: list[ComponentChange] = field(default_factory=list)
    appeared: list[LockedFinding] = field(default_factory=list)
    resolved: list[LockedFinding] = field(default_factory=list)
    counts: list[tuple[str, str, int, int]] = field(default_factory=list)  # check, count, old, new
    worse_gates: list[str] = field(default_factory=list)

    @property
    def worse(self) -> bool:
        return bool(self.worse_gates)


@dataclass
class LockDiff:
    pairs: list[PairDiff]

    @property
    def worse(self) -> bool:
        """A gated verdict got worse (or a new pair fails its gate)."""
        return any(p.worse for p in self.pairs)

    @property
    def changed(self) -> list[PairDiff]:
        return [p for p in self.pairs if p.status != "unchanged"]


def _key(f: LockedFinding) -> tuple[str, str, str, str]:
    # With the severity: a symbol failing anew beside an old warning of it is an error appeared.
    return (f.check, f.rule.value, f.symbol, f.severity.value)


def diff_pair(old: LockedPair | None, new: LockedPair | None, distance: Distance | None = None) -> PairDiff:
    name = (new or old).name  # type: ignore[union-attr]
    if old is None or new is None:
        pair = new or old
        assert pair is not None
        d = PairDiff(
            name, "added" if old is None else "removed", old.verdict if old else None, new.verdict if new else None
        )
        if new is not None:
            d.appeared = list(new.findings)
            d.worse_gates = [c.name for c in new.gated_failures()]
        return d
    d = PairDiff(name, "unchanged", old.verdict, new.verdict)
    for comp in sorted(set(old.components) | set(new.components)):
        a, b = old.components.get(comp), new.components.get(comp)
        if a == b:
            continue
        change = ComponentChange(comp, a, b)
        if a is not None and b is not None and distance is not None and a.commit != b.commit:
            change.distance = distance(b.repo, a.commit, b.commit)
        d.components.append(change)
    old_keys, new_keys = {_key(f) for f in old.findings}, {_key(f) for f in new.findings}
    d.appeared = [f for f in new.findings if _key(f) not in old_keys]
    d.resolved = [f for f in old.findings if _key(f) not in new_keys]
    old_checks = {c.name: c for c in old.checks}
    for check in new.checks:
        before = old_checks.get(check.name)
        if before is None:
            if check.gate and check.verdict is Verdict.FAIL:
                d.worse_gates.append(check.name)
            continue
        for count in COUNT_FIELDS:
            a_count, b_count = getattr(before, count), getattr(check, count)
            if a_count != b_count:
                d.counts.append((check.name, count, a_count, b_count))
        if check.gate and check.verdict.rank > before.verdict.rank:
            d.worse_gates.append(check.name)
    if d.components or d.appeared or d.resolved or d.counts or old.verdict != new.verdict:
        d.status = "changed"
    return d


def diff_locks(old: Lock | None, new: Lock | None, distance: Distance | None = None) -> LockDiff:
    """Compare two locks (None stands for "no lock")."""
    old_pairs = {p.name: p for p in (old.pairs if old else [])}
    new_pairs = {p.name: p for p in (new.pairs if new else [])}
    names = sorted(set(old_pairs) | set(new_pairs))
    return LockDiff([diff_pair(old_pairs.get(n), new_pairs.get(n), distance) for n in names])


def diff_files(
    old: Path | None, new: Path, base: str = "HEAD", manifest_dir: Path | None = None, cache_dir: Path | None = None
) -> LockDiff:
    """`atompin diff`: the lock `old` (default: `new` as committed at git revision `base`)
    against the lock `new`, with commit distances where the git cache has the history."""
    from atompin import lockfile
    from atompin.analysis.cache import default_cache_dir
    from atompin.sources.git import GitCache, file_at_revision

    new_lock = lockfile.read(new)
    if old is not None:
        old_lock: Lock | None = lockfile.read(old)
    else:
        committed = file_at_revision(base, new)
        old_lock = lockfile.loads(*committed) if committed is not None else None
    git_cache = GitCache(cache_dir or default_cache_dir(), offline=True)
    base_dir = manifest_dir or Path.cwd()

    def distance(repo: str, a: str, b: str) -> int | None:
        local = base_dir / repo
        return git_cache.commits_between(str(local.resolve()) if local.exists() else repo, a, b)

    return diff_locks(old_lock, new_lock, distance)
