"""The provider the consumer was written against, as the drift rules ask about it.

The baseline is another provider index (the consumer's declared version, the previous
lock's commit, or `--baseline`). Drift findings compare a provider class or function
at the pin with the same symbol there and say what changed since ("`supports_pcp` is
new since 0.25.1"). Without a baseline the rules still run, more cautiously.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from atompin.analysis.conditions import Judgement, Reach, judge
from atompin.analysis.moduleinfo import ClassInfo, Member
from atompin.analysis.name_sites import NameSearch, NameSite
from atompin.analysis.provider import ClassRef, ProviderIndex, TargetKind
from atompin.analysis.signature import Signature
from atompin.analysis.usage import Condition


@dataclass
class Baseline:
    index: ProviderIndex
    label: str  # how messages name it: "0.25.1", "vllm@1a2b3c4d5e6f"
    version: str | None = None  # its version, for the consumer's version gates (None: not known)
    # The consumer's files that only branches false at the baseline's version import (a plugin's
    # `Reachability.blocked` there), worked out when first asked (`gated_off`).
    gated_off_of: Callable[[], frozenset[str]] = frozenset
    platform: str | None = None  # the one the code runs on, for its tests of the platform (None: any)
    # The provider's modules the consumer imports itself (`NameSearch.consumer_reaches`).
    consumer_reaches: frozenset[str] = frozenset()

    @cached_property
    def gated_off(self) -> frozenset[str]:
        """The consumer's files the baseline did not load (only false version gates import them):
        what they install or import was not there where the consumer works."""
        return self.gated_off_of()

    @property
    def since(self) -> str:
        return f"since {self.label}"

    def runs(self, when: Sequence[Condition]) -> bool:
        """Does code under these conditions run at the baseline (every one holds there for sure)?
        A version gate with no baseline version known does not."""
        return not when or self._judged(when).reach is Reach.LIVE

    def skips(self, when: Sequence[Condition]) -> bool:
        """Does code under these conditions surely not run at the baseline (a version gate false
        there: `else:` of `if vllm_version_is("0.24.0")` at 0.24.0)?"""
        return bool(when) and self._judged(when).reach is Reach.DEAD

    def kept_from(self, path: str, when: Sequence[Condition] = ()) -> bool:
        """Did the consumer's code in the file at `path`, under `when`, surely not run at the
        baseline: the file not loaded there (`gated_off`), or a version gate false there
        (`skips`)? Then that the consumer works at the baseline says nothing of it."""
        return path in self.gated_off or self.skips(when)

    def _judged(self, when: Sequence[Condition]) -> Judgement:
        index = self.index
        return judge(
            when,
            self.version,
            lambda r: index.resolve(r.module, r.path).status,
            takes=lambda r, n: index.takes(r.module, r.path, n),
            platform=self.platform,
        )

    def class_info(self, ref: ClassRef) -> ClassInfo | None:
        """The same class (module and qualname) at the baseline."""
        return self.index.class_info(ref)

    def members(self, ref: ClassRef) -> dict[str, Member] | None:
        """Every member of the class at the baseline through its MRO; None when the class is not there."""
        if self.class_info(ref) is None:
            return None
        out: dict[str, Member] = {}
        for node in self.index.mro(ref):
            info = self.index.class_info(node) if isinstance(node, ClassRef) else None
            if info is not None:
                for name, member in info.members.items():
                    out.setdefault(name, member)
        return out

    def method(self, ref: ClassRef, name: str) -> Member | None:
        """Member `name` of the class at the baseline (through its MRO)."""
        members = self.members(ref)
        return members.get(name) if members is not None else None

    def function(self, symbol: str) -> Signature | None:
        """The signature of a function or method symbol at the baseline."""
        res = self.index.resolve_symbol(symbol)
        if res.found and res.target is not None and res.target.kind is TargetKind.FUNCTION:
            return res.target.signature
        return None

    def reads(self, name: str) -> list[NameSite]:
        """Where the baseline's files read or call `x.name` (`NameSearch.find`)."""
        return self._search.find([name]).get(name, [])

    def file_sites(self, path: str, name: str) -> list[NameSite]:
        """The calls and reads of `name` in the file at `path`, at the baseline (none when it is not there)."""
        return self._search.file_sites(path, {name})

    def unwritten(self, names: Iterable[str]) -> set[str]:
        """Of `names`, those no file of the baseline writes as a word anywhere (`NameSearch.unwritten`)."""
        return self._search.unwritten(names)

    def find_text(self, names: Iterable[str]) -> dict[str, list[NameSite]]:
        """The calls and reads of each name in the baseline's text (`NameSearch.find_text`)."""
        return self._search.find_text(names)

    @cached_property
    def _search(self) -> NameSearch:
        """One search of the baseline's files, kept: it keeps the last files it parsed. It searches
        in place (the few names asked about do not pay for reading every file's identifiers),
        unless a run cached them all: a bump's baseline is the pin the last lock read, and taking
        its identifiers from the cache beats searching and reading a third of vLLM's files again."""
        search = NameSearch(self.index.tree, self.index.package, self.index.cache, platform=self.platform)
        search.consumer_reaches = self.consumer_reaches
        search.in_place = not search.identifiers_cached()
        search.keeps_last = False
        return search
