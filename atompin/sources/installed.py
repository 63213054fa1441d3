"""Installed distributions as source trees: found through `importlib.metadata`
(which reads `.dist-info` metadata), never imported.

This is how the image build checks against the vLLM actually installed: the
distribution's recorded files are read from disk like any other tree, and its
version and commit are read from its metadata and its `_version.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.utils import canonicalize_name

from atompin.errors import InputError
from atompin.sources.tree import SourceTree, size_and_time
from atompin.sources.version import normalize_version

_COMMIT = re.compile(
    r"""^(?:__commit_id__|commit_id)\s*(?::[^=\n]*)?=\s*(?:(?:__commit_id__|commit_id)\s*=\s*)?['"]([^'"]+)['"]""", re.M
)


@dataclass(frozen=True)
class Installed:
    name: str
    version: str
    commit: str  # short commit id from the version file ("" when none)
    tree: InstalledTree
    entry_points: tuple[metadata.EntryPoint, ...]


class InstalledTree(SourceTree):
    """The files a distribution recorded, relative to the folder it was installed into."""

    def __init__(self, root: Path, files: list[str], label: str) -> None:
        self.root = root
        self._listed = files
        self.label = label

    def list_files(self) -> list[str]:
        return [f for f in self._listed if (self.root / f).is_file()]

    def read(self, path: str) -> bytes:
        return (self.root / path).read_bytes()

    def stamp(self, path: str) -> str:
        """Size and modification time, like a folder's: an identity of the whole distribution must
        not read its compiled libraries."""
        return size_and_time(self.root / path)


def _distributions(paths: list[str] | None) -> list[metadata.Distribution]:
    return list(metadata.distributions(path=paths) if paths else metadata.distributions())


def find_distribution(name: str, paths: list[str] | None = None) -> metadata.Distribution:
    """The installed distribution called `name` (or providing top-level package `name`)."""
    wanted = canonicalize_name(name)
    dists = _distributions(paths)
    for dist in dists:
        if canonicalize_name(dist.metadata["Name"] or "") == wanted:
            return dist
    for dist in dists:
        if name in _top_level(dist):
            return dist
    where = ", ".join(paths) if paths else "sys.path"
    raise InputError(f"no installed distribution {name!r} found in {where}; install it or pass --site PATH")


def _top_level(dist: metadata.Distribution) -> set[str]:
    text = dist.read_text("top_level.txt")
    if text:
        return {line.strip() for line in text.splitlines() if line.strip()}
    return {
        str(f).split("/")[0].removesuffix(".py") for f in (dist.files or []) if "/" in str(f) or str(f).endswith(".py")
    }


def load_installed(name: str, paths: list[str] | None = None) -> Installed:
    """Everything atompin needs of an installed distribution, read statically."""
    dist = find_distribution(name, paths)
    root = Path(str(dist.locate_file("")))
    files = [str(f).replace("\\", "/") for f in (dist.files or []) if not str(f).startswith("..")]
    dist_name = dist.metadata["Name"] or name
    if not files:  # no RECORD (an editable or odd install): fall back to the package folders
        for top in _top_level(dist) or {name}:
            base = root / top
            files += [p.relative_to(root).as_posix() for p in base.rglob("*.py")] if base.is_dir() else []
    tree = InstalledTree(root, files, f"{dist_name} {dist.version} (installed)")
    commit = ""
    for path in files:
        if path.endswith("/_version.py") and path.count("/") == 1:
            match = _COMMIT.search(tree.read_text(path))
            if match:
                commit = match.group(1)
            break
    return Installed(
        name=dist_name,
        version=normalize_version(dist.version) or dist.version,
        commit=commit,
        tree=tree,
        entry_points=tuple(dist.entry_points),
    )


def commit_matches(short: str, full: str) -> bool:
    """vLLM records "g6e448d0ea": a short id (the git-describe "g" dropped) that prefixes the full commit."""
    short = short.removeprefix("g").lower()
    return len(short) >= 7 and full.lower().startswith(short)
