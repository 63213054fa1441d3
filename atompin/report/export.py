"""`atompin export`: a locked pair as build inputs (bake override, env lines, GitHub outputs, JSON)."""

from __future__ import annotations

import json
from typing import Any

from atompin.lock import LockedPair


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
    data: dict[str, Any] = {"pair": pair.model_dump(by_alias=True), "variables": variables}
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
