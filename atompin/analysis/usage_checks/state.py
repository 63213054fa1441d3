"""The findings a check collects, and what it keeps of the baseline's patches."""

from __future__ import annotations

from dataclasses import dataclass, field

from atompin.analysis.conditions import LIVE, Judgement
from atompin.analysis.patch_readers import FunctionKey
from atompin.analysis.usage import PatchSite
from atompin.model import Alternative, Finding, Rule, Severity, Site


@dataclass
class Draft:
    """Findings of one rule and symbol, merged across sites before they are frozen."""

    rule: Rule
    severity: Severity
    symbol: str
    message: str
    sites: set[Site] = field(default_factory=set)
    alternatives: tuple[Alternative, ...] = ()


@dataclass
class BaselinePatches:
    """The consumer's patches as the baseline provider resolves them."""

    # (module, name) -> the patches that set a name on a provider module.
    installed: dict[tuple[str, str], list[PatchSite]] = field(default_factory=dict)
    # (owner symbol, name) -> the patches that replace a provider function with one of the
    # consumer's that never calls the original.
    without_original: dict[FunctionKey, list[PatchSite]] = field(default_factory=dict)


class Findings:
    """The findings so far, one per rule, symbol and severity: a symbol whose sites fail in
    different ways (one import raises, another is caught) is told apart; a site said twice
    keeps the worse verdict only."""

    def __init__(self) -> None:
        self._drafts: dict[tuple[str, str, str, int], Draft] = {}
        # What the conditions of the use being judged say (a fallback, an undecided version gate).
        self.judgement: Judgement = LIVE
        # (rule, symbol, site) of each error whose code raises at that site when it runs (an
        # unguarded import, a read of a patch target that is gone, a version assert): the
        # process stops there (`startup`).
        self.stops: set[tuple[str, str, Site]] = set()

    def add(
        self,
        rule: Rule,
        severity: Severity,
        symbol: str,
        sites: list[Site] | tuple[Site, ...],
        message: str,
        alternatives: tuple[Alternative, ...] = (),
        key: str = "",
        stops: list[Site] | tuple[Site, ...] = (),
    ) -> None:
        """`stops`: the sites among them where the code raises when it runs, if it stays an error."""
        severity, message = self.judgement.adjust(severity, message)
        if severity is Severity.ERROR:
            self.stops.update((rule.value, symbol, site) for site in stops)
        k = (rule.value, symbol, key, severity.rank)
        draft = self._drafts.get(k)
        if draft is None:
            draft = self._drafts[k] = Draft(rule, severity, symbol, message, alternatives=alternatives)
        draft.sites.update(sites)

    def freeze(self) -> list[Finding]:
        worst: dict[tuple[str, str, str, Site], int] = {}
        for (rule, symbol, key, rank), d in self._drafts.items():
            for site in d.sites:
                at = (rule, symbol, key, site)
                worst[at] = min(worst.get(at, rank), rank)
        out = []
        for (rule, symbol, key, rank), d in self._drafts.items():
            sites = tuple(sorted(s for s in d.sites if worst[(rule, symbol, key, s)] == rank))
            if sites:
                out.append(Finding(d.rule, d.severity, d.symbol, sites, d.message, d.alternatives))
        return sorted(out, key=Finding.sort_key)
