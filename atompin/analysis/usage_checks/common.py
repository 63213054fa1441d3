"""Small questions more than one kind of check asks."""

from __future__ import annotations

from atompin.analysis.usage import ImportUse, PatchSite


def at_baseline_too(how: str = "") -> str:
    """Said of a failure the baseline shares: not drift (the consumer works against the provider it
    was written for, so the code does not run there, or it shipped broken), a warning."""
    return (
        f"it fails at the baseline too{f' ({how})' if how else ''}: not a change since (code that does not run "
        "there, or that was broken there already)"
    )


def via_of(item: ImportUse | PatchSite) -> str:
    return f" (reached through the helper call at {', '.join(map(str, item.via))})" if item.via else ""
