"""The contact surface: everything a consumer relies on beyond names, judged in one place.

A consumer also relies on how the provider calls its overrides (`method_overrides`),
on the members the provider calls on classes it hands over (`protocols`), on the shapes
of values it unpacks (`returns`), on provider methods it calls through `self`, `super()`
or annotated receivers (`method_calls`), on the members it reads through them (`members`),
and on provider code it copied (`shadows`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from enum import Enum

from atompin.analysis.baseline import Baseline
from atompin.analysis.conditions import Judgement
from atompin.analysis.hierarchy import Hierarchy
from atompin.analysis.holding import reaching
from atompin.analysis.inits import check_dataclass_fields
from atompin.analysis.members import check_members
from atompin.analysis.method_calls import check_method_calls
from atompin.analysis.method_overrides import check_method_overrides
from atompin.analysis.name_sites import NameSearch
from atompin.analysis.namespaces import check_namespaces
from atompin.analysis.protocols import check_protocols
from atompin.analysis.provider import ProviderIndex
from atompin.analysis.returns import check_returns
from atompin.analysis.shadows import check_shadows
from atompin.analysis.usage import Condition, ConsumerUsage
from atompin.model import Finding


class ContactPart(Enum):
    """The contact rules in two parts, for two processes to take one each (`engine.ContactRules`):
    protocol-drift, whose search for stand-ins is most of their time, and every other rule."""

    PROTOCOLS = "protocols"
    OTHERS = "others"


def searches_names(usage: ConsumerUsage) -> bool:
    """Do the rules search the provider's names for this consumer? Only the override and
    stand-in rules do, and only about the consumer's classes."""
    return bool(usage.contact.classes)


def check_contact(
    usage: ConsumerUsage,
    index: ProviderIndex,
    search: NameSearch,
    baseline: Baseline | None = None,
    judge: Callable[[Sequence[Condition]], Judgement] | None = None,
    passed_on: Callable[[Mapping[str, AbstractSet[str]]], set[str]] = set,
    makes: Callable[[str], bool] = lambda name: True,
    reads: Callable[[list[str], AbstractSet[str]], set[str]] = lambda words, classes: set(words),
    mentions: Callable[[str], bool] = lambda word: True,
    refers: Callable[[str], bool] = lambda name: True,
    naming: Callable[[str], AbstractSet[str] | None] = lambda word: None,
    part: ContactPart | None = None,
    importing: Callable[[str], AbstractSet[str] | None] = lambda module: None,
    copy_at: Callable[[str, int], ast.FunctionDef | ast.AsyncFunctionDef | None] = lambda path, line: None,
    may_make: Callable[[str, AbstractSet[str]], bool] = lambda cls, quiet: True,
) -> list[Finding]:
    """override-drift, protocol-drift, return-drift, shadow-drift, missing-member and the receiver
    calls of arity-drift.
    `judge` decides the branch conditions a consumer call sits under (version gates); `passed_on`
    says which of some members the consumer passes on what it keeps there (`protocols.passes_on`);
    `makes` whether the consumer calls a class of that name (by default, every one); `reads` which
    of some names the consumer reads itself (by default, all of them); `mentions` whether its text
    writes a word (by default, every one); `refers` whether its code names a class besides its
    definition (by default, every one); `naming` which of its files write a word, `importing`
    which import a consumer module (by default, unknown: None); `copy_at` the function a file
    defines at a line (by default, none); `may_make` whether it may make or hand on a class it names
    otherwise than to read some of its members (by default, every one). `part`: the rules of that part
    alone (by default, all of them)."""
    hierarchy = Hierarchy(usage, index, mentions, naming, importing)
    if part is ContactPart.PROTOCOLS:
        return check_protocols(hierarchy, usage.contact, search, baseline, passed_on)
    findings = check_method_overrides(
        hierarchy, search, baseline, makes, reaching(hierarchy, usage.contact, search), may_make
    )
    if part is None:
        findings += check_protocols(hierarchy, usage.contact, search, baseline, passed_on)
    findings += check_returns(usage, index, hierarchy, hierarchy.resolve, baseline, judge)
    findings += check_method_calls(hierarchy, usage.contact, baseline, judge, makes)
    findings += check_dataclass_fields(hierarchy, baseline, judge)
    findings += check_shadows(usage, index, hierarchy, hierarchy.resolve, baseline, search, refers, copy_at)
    findings += check_members(usage, hierarchy, search, baseline, judge, reads)
    findings += check_namespaces(usage, index, baseline)
    return findings
