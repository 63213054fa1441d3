"""A component's version, read from a version file in its tree (never by importing it)."""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

from atompin.sources.tree import SourceTree

_VERSION_ASSIGN = re.compile(r"""^(?:(?:__version__|version)\s*(?::[^=\n]*)?=\s*)+['"]([^'"]+)['"]""", re.M)


def normalize_version(text: str) -> str:
    """ "v0.33.0" -> "0.33.0"; "0.33.0+rocm" kept; not a version -> ""."""
    candidate = text.rsplit("/", 1)[-1]
    candidate = candidate[1:] if candidate[:1] in "vV" else candidate
    try:
        return str(Version(candidate))
    except InvalidVersion:
        return ""


def version_from_tree(tree: SourceTree, package: str) -> str:
    """`__version__ = "..."` from `<pkg>/_version.py`, `version.py` or `__init__.py` ("" when none)."""
    base = package.replace(".", "/")
    for path in (f"{base}/_version.py", f"{base}/version.py", f"{base}/__init__.py"):
        if path in tree.files:
            match = _VERSION_ASSIGN.search(tree.read_text(path))
            if match and normalize_version(match.group(1)):
                return normalize_version(match.group(1))
    return ""
