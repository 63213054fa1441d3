"""`atompin bump`: re-pin one component in `pairs.toml` (comments and layout kept),
re-lock the pairs that changed, and say what the bump changes.

Nothing is written until the whole plan is ready: a failure on the way leaves
`pairs.toml` and the lock as they were.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from atompin import lockfile
from atompin.errors import InputError
from atompin.files import write_atomically
from atompin.lockdiff import LockDiff, diff_locks
from atompin.lockfile import Lock
from atompin.locking import Locker
from atompin.manifest import load_manifest, parse_manifest, set_ref
from atompin.refs import check_ref

Progress = Callable[[str], None]


@dataclass
class BumpPlan:
    manifest_path: Path
    lock_path: Path
    before: str  # pairs.toml as it is
    after: str  # pairs.toml with the new pins
    changed: list[str]  # the pairs whose pin moved
    lock: Lock | None  # the lock after the bump (None when nothing changes)
    diff: LockDiff | None

    def manifest_patch(self) -> str:
        """The edit to pairs.toml as a unified diff."""
        name = str(self.manifest_path)
        return "".join(difflib.unified_diff(self.before.splitlines(True), self.after.splitlines(True), name, name))

    def write(self) -> None:
        """Write pairs.toml and the lock (each atomically)."""
        assert self.lock is not None
        write_atomically(self.manifest_path, self.after)
        lockfile.write(self.lock_path, self.lock)


def plan_bump(
    manifest_path: Path,
    component: str,
    ref: str,
    *,
    pairs: list[str] | None = None,
    lock_path: Path | None = None,
    cache_dir: Path | None = None,
    offline: bool = False,
    progress: Progress | None = None,
) -> BumpPlan:
    """Re-pin `component` to `ref` in every pair that pins it (or the named ones) and re-lock
    those pairs, in memory. `plan.changed` is empty when every pair already pins `ref`."""
    manifest, source = load_manifest(manifest_path)
    target = lock_path or lockfile.default_path(manifest_path)
    if component not in manifest.components:
        raise InputError(f"{manifest_path}: no component {component!r} (components: {', '.join(manifest.components)})")
    problem = check_ref(ref)
    if problem:
        raise InputError(f"ref {ref!r} refused: {problem}")
    for name in pairs or []:
        manifest.pair(name)
    edited, changed = set_ref(source, component, ref, pairs)
    if not changed:
        return BumpPlan(manifest_path, target, source, source, [], None, None)
    new_manifest = parse_manifest(edited, manifest_path)
    previous = lockfile.read(target) if target.exists() else None
    with Locker.open(new_manifest, manifest_path, cache_dir, offline, progress) as locker:
        relocked = locker.lock(new_manifest.digest(), changed, previous)
    return BumpPlan(manifest_path, target, source, edited, changed, relocked, diff_locks(previous, relocked))
