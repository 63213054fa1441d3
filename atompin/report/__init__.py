"""Renderers: findings, locks and lock diffs in, text out, in each output format.

The functions here pick the renderer for a format name; each format lives in
its own module (`text`, `json`, `markdown`, `sarif`, `export`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from atompin.lockdiff import LockDiff
    from atompin.lockfile import Lock
    from atompin.model import CheckResult

CHECK_FORMATS = ("text", "json", "markdown", "sarif")
DIFF_FORMATS = ("text", "markdown", "json")


def render_check(result: CheckResult, format: str, verbose: bool = False) -> str:
    """One check's result in one of `CHECK_FORMATS` (`verbose`: text also lists the version gates
    evaluated and shows each finding's detail)."""
    from atompin.report import json, markdown, sarif, text

    if format == "text":
        return text.render_check(result, verbose=verbose)
    return {
        "json": json.render_check,
        "markdown": markdown.render_check,
        "sarif": sarif.render_check,
    }[format](result)


def render_lock(lock: Lock, format: str, manifest_name: str = "pairs.toml", show_info: bool = False) -> str:
    """A lock's verdicts and findings in one of `CHECK_FORMATS` (the lock file itself is TOML either way).
    `manifest_name` is the manifest's path: SARIF anchors each pair's results on its line there."""
    from atompin.report import json, markdown, sarif, text

    if format == "json":
        return json.render_lock(lock)
    if format == "markdown":
        return markdown.render_lock(lock)
    if format == "sarif":
        return sarif.render_lock(lock, manifest_name)
    return text.render_lock(lock, show_info=show_info) + "\n"


def render_diff(diff: LockDiff, format: str) -> str:
    """A lock diff in one of `DIFF_FORMATS`."""
    from atompin.report import json, markdown, text

    return {"text": text.render_diff, "markdown": markdown.render_diff, "json": json.render_diff}[format](diff)
