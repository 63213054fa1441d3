"""`atompin bump`: re-pin one component in `pairs.toml` (comments and layout kept),
re-lock the pairs that changed, and say what the bump changes.

Nothing is written until the whole plan is ready: a failure on the way leaves
`pairs.toml` and the lock as they were.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from atompin import lockfile
from atompin.errors import InputError
from atompin.files import write_atomically
from atompin.lockdiff import LockDiff, diff_locks
from atompin.lockfile import Lock
from atompin.locking import Locker
from atompin.manifest import Manifest, load_manifest, parse_manifest, set_ref
from atompin.refs import check_ref
from atompin.sources.version import normalize_version

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
    # Pairs whose name carries the component's old version: old name -> the name with the new
    # version. Applied with `rename=True`; offered otherwise.
    renames: dict[str, str] = field(default_factory=dict)
    renamed: bool = False

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
    rename: bool = False,
) -> BumpPlan:
    """Re-pin `component` to `ref` in every pair that pins it (or the named ones) and re-lock
    those pairs, in memory. `plan.changed` is empty when every pair already pins `ref`.
    With `rename`, a pair whose name carries the component's old version is renamed to carry
    the new one (`atom-0.1.5+vllm-0.31` -> `atom-0.1.5+vllm-0.33`)."""
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
    renames = pair_renames(manifest, component, ref, changed)
    if rename and renames:
        edited = rename_pairs(edited, renames, manifest_path)
        changed = [renames.get(name, name) for name in changed]
    new_manifest = parse_manifest(edited, manifest_path)
    previous = lockfile.read(target) if target.exists() else None
    with Locker.open(new_manifest, manifest_path, cache_dir, offline, progress) as locker:
        relocked = locker.lock(new_manifest.digest(), changed, previous)
    diff = diff_locks(previous, relocked)
    return BumpPlan(manifest_path, target, source, edited, changed, relocked, diff, renames, rename and bool(renames))


def renamed_pair(name: str, component: str, old_ref: str, new_ref: str) -> str | None:
    """`name` with the component's old version replaced by the new one, at the same precision
    (`atom-0.1.5+vllm-0.31`, vllm v0.31.0 -> v0.33.0: `atom-0.1.5+vllm-0.33`); None when the
    name does not carry the old version or the new ref is not a version."""
    old, new = normalize_version(old_ref), normalize_version(new_ref)
    if not old or not new:
        return None
    old_parts, new_parts = old.split("."), new.split(".")
    pattern = re.compile(rf"(?<![A-Za-z0-9]){re.escape(component)}-(v?)(\d+(?:\.\d+)*)(?![\d.]*\d)")
    for match in pattern.finditer(name):
        written = match.group(2).split(".")
        if written == old_parts[: len(written)] and len(written) <= len(new_parts):
            replacement = f"{component}-{match.group(1)}{'.'.join(new_parts[: len(written)])}"
            return name[: match.start()] + replacement + name[match.end() :] if replacement != match.group(0) else None
    return None


def pair_renames(manifest: Manifest, component: str, ref: str, changed: list[str]) -> dict[str, str]:
    """Old name -> new name for each re-pinned pair whose name carries the old version."""
    out: dict[str, str] = {}
    for name in changed:
        new_name = renamed_pair(name, component, manifest.pair(name).refs[component], ref)
        if new_name:
            out[name] = new_name
    return out


def rename_pairs(text: str, renames: dict[str, str], manifest_path: Path) -> str:
    """pairs.toml with the pairs renamed (comments and layout kept); InputError on a name clash."""
    import tomlkit

    doc = tomlkit.parse(text)
    names = {str(p.get("name", "")) for p in doc.get("pairs", [])}
    for old, new in renames.items():
        if new in names:
            raise InputError(f"{manifest_path}: cannot rename {old!r} to {new!r}: a pair of that name exists")
    for pair in doc.get("pairs", []):
        new_name = renames.get(str(pair.get("name", "")))
        if new_name:
            value = tomlkit.string(new_name)
            for attr in ("indent", "comment_ws", "comment", "trail"):
                setattr(value.trivia, attr, getattr(pair["name"].trivia, attr))
            pair["name"] = value
    return tomlkit.dumps(doc)
