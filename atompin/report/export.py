"""`atompin export`: a locked pair as build inputs (bake override, env lines, GitHub outputs, JSON)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from atompin.lockfile import LockedPair


def bake(variables: dict[str, str]) -> str:
    """A docker buildx bake override: `docker buildx bake -f rocm-bake.hcl -f atompin.bake.json`."""
    return json.dumps({"variable": {k: {"default": v} for k, v in variables.items()}}, indent=2, sort_keys=True) + "\n"


def env(variables: dict[str, str]) -> str:
    """`NAME=value` lines (for --build-arg or an env file)."""
    return "".join(f"{k}={v}\n" for k, v in sorted(variables.items()))


def github(variables: dict[str, str]) -> str:
    """Lines for `$GITHUB_OUTPUT` (values here never hold newlines)."""
    return "".join(f"{k.lower()}={v}\n" for k, v in sorted(variables.items()))


def full_json(pair: LockedPair, variables: dict[str, str]) -> str:
    data: dict[str, Any] = {"pair": pair.model_dump(mode="json", by_alias=True), "variables": variables}
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


FORMATS = ("bake", "env", "github", "json")


def render(format: str, pair: LockedPair, variables: dict[str, str]) -> str:
    """A locked pair's pins in one of `FORMATS`."""
    if format == "json":
        return full_json(pair, variables)
    return {"bake": bake, "env": env, "github": github}[format](variables)


def export_pair(
    manifest_path: Path, lock_path: Path | None, pair: str | None, format: str, allow_stale: bool = False
) -> str:
    """`atompin export`: the pins of a locked pair (the named one, or the only one) in `format`.
    A stale lock is refused (StaleLockError, exit 1) unless `allow_stale`."""
    from atompin import lockfile
    from atompin.manifest import load_manifest
    from atompin.verify import pin_variables, require_current

    manifest, _ = load_manifest(manifest_path)
    path = lock_path or lockfile.default_path(manifest_path)
    lock = lockfile.read(path)
    if not allow_stale:
        require_current(lock, path, manifest, manifest_path)
    locked = lockfile.select_pair(lock, pair)
    return render(format, locked, pin_variables(locked, manifest))
