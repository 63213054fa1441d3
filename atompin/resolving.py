"""Resolving: searching a component's history with the lock's own judgement.

A `Judge` pins one component of the affected pairs at a candidate ref and locks
those pairs exactly as `atompin lock` would (the same `Locker`: one engine), so
a `Trial` says what the lock would say at that pin. `find_latest` (`atompin
bump COMPONENT --latest`) tries candidates from the newest and pins the first
that passes; `bisecting` binary-searches a range with the same judge.

Each trial after the first parses only the provider modules whose blobs changed
(the index cache is keyed by blob id). Nothing is written until the search
ends: a search interrupted anywhere leaves pairs.toml and the lock as they were.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from packaging.version import Version

from atompin import lockfile
from atompin.analysis.cache import AnalysisCache, SqliteAnalysisCache, default_cache_dir
from atompin.analysis.moduleinfo import ModuleInfo
from atompin.bumping import BumpPlan
from atompin.errors import InputError
from atompin.lockdiff import diff_locks
from atompin.lockfile import LockedFinding, LockedPair
from atompin.locking import Locker, ResolvedComponent
from atompin.manifest import Manifest, Pair, load_manifest, parse_manifest, set_ref
from atompin.model import RefKind, Severity, Verdict
from atompin.refs import check_ref, short_ref
from atompin.sources.git import GitCache, ResolvedRef
from atompin.sources.version import normalize_version

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Candidate:
    """A ref the component could be pinned at: a tag, or a full commit id on a branch."""

    ref: str
    commit: str
    version: str = ""  # from the tag name ("" for a commit)


@dataclass(frozen=True)
class Trial:
    """The affected pairs locked with the component at one ref, as `atompin lock` would lock them."""

    ref: str
    commit: str
    version: str
    pairs: tuple[LockedPair, ...]
    parsed: int  # provider and consumer modules parsed for it (the rest came from the cache)

    @property
    def passes(self) -> bool:
        """Every gated verdict passes (`pass` or `warn`)."""
        return not any(p.gated_failures() for p in self.pairs)

    @property
    def verdict(self) -> Verdict:
        return Verdict.worst(p.verdict for p in self.pairs)

    def gated_errors(self) -> list[tuple[str, LockedFinding]]:
        """(pair, finding) for every error on a gated edge: the findings that fail a gate."""
        out: list[tuple[str, LockedFinding]] = []
        for pair in self.pairs:
            gates = {c.name for c in pair.checks if c.gate}
            out += [(pair.name, f) for f in pair.findings if f.check in gates and f.severity is Severity.ERROR]
        return out

    def gated_keys(self) -> set[tuple[str, str, str, str]]:
        """What identifies each gated error across trials: (pair, check, rule, symbol)."""
        return {(name, f.check, f.rule.value, f.symbol) for name, f in self.gated_errors()}

    def warnings(self) -> int:
        return sum(f.severity is Severity.WARNING for p in self.pairs for f in p.findings)


class DecodedCache(AnalysisCache):
    """The analysis cache, keeping every module index it decodes in memory: a search meets
    the same blobs at commit after commit, and decoding them again would be most of a step."""

    def __init__(self, stored: AnalysisCache) -> None:
        self.stored = stored
        self._decoded: dict[str, ModuleInfo] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> ModuleInfo | None:
        info = self._decoded.get(key) or self.stored.get(key)
        if info is None:
            self.misses += 1
            return None
        self.hits += 1
        self._decoded[key] = info
        return info

    def put(self, key: str, info: ModuleInfo) -> None:
        self._decoded[key] = info
        self.stored.put(key, info)

    def get_raw(self, key: str) -> bytes | None:
        return self.stored.get_raw(key)

    def put_raw(self, key: str, data: bytes) -> None:
        self.stored.put_raw(key, data)

    def flush(self) -> None:
        self.stored.flush()

    def close(self) -> None:
        self.stored.close()


def open_locker(
    manifest: Manifest, manifest_path: Path, cache_dir: Path | None, offline: bool, progress: Progress | None
) -> Locker:
    """A `Locker` as `Locker.open` makes one, over a cache that keeps decoded indexes for the search."""
    root = cache_dir or default_cache_dir()
    git_cache = GitCache(root, offline=offline, progress=progress)
    cache = DecodedCache(SqliteAnalysisCache(root))
    return Locker(manifest, manifest_path.resolve().parent, git_cache, cache, progress, manifest_path=manifest_path)


class Judge:
    """Locks the affected pairs with `component` re-pinned, one candidate ref at a time."""

    def __init__(self, locker: Locker, component: str, pairs: list[Pair]) -> None:
        self.locker = locker
        self.component = component
        self.pairs = pairs

    def resolve(self, ref: str) -> ResolvedRef:
        """The component's ref resolved through the git cache (fetched when online)."""
        return self.locker.resolve_component(self.component, ref).resolved

    def trial(self, ref: str) -> Trial:
        cache = self.locker.cache
        misses = cache.misses
        locked = tuple(self.locker.lock_pair(repinned(p, self.component, ref)) for p in self.pairs)
        cache.flush()
        # A search visits each ref once: keep no tree of it in memory.
        self.locker.forget(self.component, ref)
        comp = locked[0].components[self.component]
        return Trial(ref, comp.commit, comp.version, locked, cache.misses - misses)


def repinned(pair: Pair, component: str, ref: str) -> Pair:
    """`pair` with `component` pinned at `ref`."""
    return Pair.model_validate({**pair.model_dump(by_alias=True, exclude_none=True), component: ref})


def affected_pairs(manifest: Manifest, manifest_path: Path, component: str, only: list[str] | None) -> list[Pair]:
    """The pairs that pin `component` (only the named ones, when named); InputError when none does."""
    if component not in manifest.components:
        raise InputError(f"{manifest_path}: no component {component!r} (components: {', '.join(manifest.components)})")
    for name in only or []:
        if component not in manifest.pair(name).refs:
            raise InputError(f"{manifest_path}: pair {name!r} does not pin {component!r}")
    pairs = [p for p in manifest.pairs if component in p.refs and (not only or p.name in only)]
    if not pairs:
        raise InputError(f"{manifest_path}: no pair pins {component!r}; add it to a [[pairs]] table")
    return pairs


# -- bump --latest --------------------------------------------------------------------


@dataclass
class LatestSearch:
    """`bump --latest`: the candidates newer than the current pins, what was tried, and the pin."""

    component: str
    source: str  # where the candidates came from, for people
    current: dict[str, str]  # affected pair -> its current ref
    candidates: list[Candidate]  # newest first
    floor_ref: str = ""  # the newest current pin: every candidate is newer than it
    trials: list[Trial] = field(default_factory=list)  # in the order tried
    # Where a pin's tree says no version (a commit of aiter's main), tags cannot be told newer
    # by version: the search stops at the first candidate committed no later than that pin.
    # That candidate (None: none was), and the pin whose commit it is compared with.
    older: Candidate | None = None
    older_than: str = ""
    plan: BumpPlan | None = None  # the pin of the first that passed (None: none did, or nothing to change)
    # When none passed: the newest current pin, judged the same way (is the oldest candidate worse?).
    pin_trial: Trial | None = None

    @property
    def chosen(self) -> Trial | None:
        """The newest candidate that passes (the last one tried), if any did."""
        return self.trials[-1] if self.trials and self.trials[-1].passes else None

    def bisect_refs(self) -> tuple[str, str] | None:
        """When nothing passed: the newest current pin and the oldest candidate, for `atompin bisect`;
        None when that candidate has no gated error the pin lacks (the pin fails the same way:
        nothing broke between them, and a bisect would find nothing)."""
        if self.chosen is not None or not self.trials or not self.floor_ref:
            return None
        if self.pin_trial is not None and not self.trials[-1].gated_keys() - self.pin_trial.gated_keys():
            return None
        return self.floor_ref, self.trials[-1].ref


def find_latest(
    manifest_path: Path,
    component: str,
    *,
    match: str | None = None,
    pre: bool = False,
    branch: str | None = None,
    pairs: list[str] | None = None,
    lock_path: Path | None = None,
    cache_dir: Path | None = None,
    offline: bool = False,
    progress: Progress | None = None,
) -> LatestSearch:
    """Find the newest candidate ref of `component` at which every affected pair's gated
    verdicts pass, and plan its pin (pairs.toml edit + re-lock) in memory.

    Candidates are the tags that parse as versions (matching `match`, a glob, when
    given; pre-releases only with `pre`) newer than the current pins, ordered by
    version; or, with `branch`, the branch's first-parent commits after the current pins.
    """
    say = progress or (lambda _m: None)
    manifest, source = load_manifest(manifest_path)
    affected = affected_pairs(manifest, manifest_path, component, pairs)
    if branch is not None:
        if match is not None or pre:
            raise InputError("--match and --pre choose among tags; --branch takes a branch's commits instead")
        if problem := check_ref(branch):
            raise InputError(f"branch {branch!r} refused: {problem}")
    target = lock_path or lockfile.default_path(manifest_path)
    previous = lockfile.read(target) if target.exists() else None
    with open_locker(manifest, manifest_path, cache_dir, offline, progress) as locker:
        judge = Judge(locker, component, affected)
        current = {p.name: p.refs[component] for p in affected}
        pins = {ref: locker.resolve_component(component, ref) for ref in sorted(set(current.values()))}
        since, since_ref = None, ""
        if branch is None:
            what = f"tags matching {match!r}" if match else "release tags"
            floor = _newest(pins)
            tags = locker.git.tags(locker.fetch_url(manifest.components[component].repo))
            candidates = tag_candidates(tags, match, pre, {ref: pin.version for ref, pin in pins.items()})
            newer = f" newer than {floor}" if floor else ""
            # A pin whose tree says no version: candidates are told older by their commits' dates.
            unversioned = [(_committed(locker.git, pin.resolved), ref) for ref, pin in pins.items() if not pin.version]
            if unversioned:
                since, since_ref = max(unversioned)
                newer = f" committed after {short_ref(since_ref)}"
            search = LatestSearch(
                component, f"{what}{' (pre-releases included)' if pre else ''}{newer}", current, candidates, floor
            )
        else:
            tip = judge.resolve(branch)
            if tip.kind is not RefKind.BRANCH:
                raise InputError(f"{tip.url}: {branch!r} is a {tip.kind.value}, not a branch; --branch takes a branch")
            ranges = {ref: locker.git.first_parent_commits(pin.resolved, tip) for ref, pin in pins.items()}
            floor, commits = min(ranges.items(), key=lambda item: len(item[1]))
            candidates = [Candidate(c, c) for c in reversed(commits)]
            search = LatestSearch(component, f"commits of branch {branch!r} after {floor}", current, candidates, floor)
        for i, candidate in enumerate(search.candidates, 1):
            say(f"trying {component} {short_ref(candidate.ref)} ({i} of {len(search.candidates)})")
            if since is not None and _committed(locker.git, judge.resolve(candidate.ref)) <= since:
                search.older, search.older_than = candidate, since_ref
                break
            trial = judge.trial(candidate.ref)
            search.trials.append(trial)
            if trial.passes:
                search.plan = _pin(locker, manifest_path, source, component, trial.ref, pairs, target, previous)
                break
        if search.chosen is None and search.trials and search.floor_ref:
            say(f"judging the current pin {component} {short_ref(search.floor_ref)}, for comparison")
            search.pin_trial = judge.trial(search.floor_ref)
    return search


def tag_candidates(tags: dict[str, str], match: str | None, pre: bool, pins: dict[str, str]) -> list[Candidate]:
    """The tags worth trying, newest first: those that parse as versions (and match the glob),
    no pre-release unless `pre`, newer than the oldest pin and not older than the newest
    (`pins`: current ref -> its version; "" when unknown). A tag in a folder (`archive/2.4`, as
    aiter keeps old branches) is no release unless the glob names it (`--match 'release/*'`)."""
    versions = [Version(v) for v in pins.values() if v]
    low, high = (min(versions), max(versions)) if versions else (None, None)
    found: list[tuple[Version, str, str]] = []
    for tag, commit in tags.items():
        text = normalize_version(tag)
        if not text or (match is not None and not fnmatch.fnmatchcase(tag, match)) or (match is None and "/" in tag):
            continue
        version = Version(text)
        if version.is_prerelease and not pre:
            continue
        if low is not None and high is not None and (version <= low or version < high):
            continue
        found.append((version, tag, commit))
    found.sort(reverse=True)
    return [Candidate(tag, commit, str(version)) for version, tag, commit in found]


def _committed(git: GitCache, resolved: ResolvedRef) -> datetime:
    """When a cached commit was committed (its committer date)."""
    return datetime.fromisoformat(git.commit_info(resolved.url, resolved.commit).date)


def _newest(pins: dict[str, ResolvedComponent]) -> str:
    """The current ref with the highest version (the only ref, or "" when several have none)."""
    known = [(Version(pin.version), ref) for ref, pin in pins.items() if pin.version]
    if known:
        return max(known)[1]
    return next(iter(pins)) if len(pins) == 1 else ""


def _pin(
    locker: Locker,
    manifest_path: Path,
    source: str,
    component: str,
    ref: str,
    only: list[str] | None,
    target: Path,
    previous: lockfile.Lock | None,
) -> BumpPlan | None:
    """The bump to `ref` as `atompin bump` plans it: pairs.toml edited (comments kept), the
    changed pairs re-locked over the search's caches. None when every pair already pins `ref`."""
    edited, changed = set_ref(source, component, ref, only)
    if not changed:
        return None
    new_manifest = parse_manifest(edited, manifest_path)
    relocker = Locker(
        new_manifest, locker.manifest_dir, locker.git, locker.cache, locker.progress, manifest_path=manifest_path
    )
    relocked = relocker.lock(new_manifest.digest(), changed, previous)
    return BumpPlan(manifest_path, target, source, edited, changed, relocked, diff_locks(previous, relocked))
