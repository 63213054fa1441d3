"""The role a class returned to the provider plays, as the provider's own method declares it.

A consumer class the provider gets from a consumer method (`Hierarchy.returned_to_provider`:
ATOM's attention backend's `get_impl_cls`) need not derive from the provider class it stands
in for: ATOM's MLA layer class is returned as the backend's implementation class and derives
from vLLM's layer, not from its `MLACommonBaseImpl`. The provider says what it expects there:
its method of that name is annotated `-> type[AttentionImplBase]`. A class of that role that
implements one of holder's methods itself stands in for holder as `Hierarchy.standing_in`
says of a class sharing a provider base with it; `stand_in_for` asks for either kind.

Read from the provider files' text, without parsing: only the few files whose annotation names
a class of holder's order are indexed, to resolve that name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from atompin.analysis.hierarchy import Hierarchy
from atompin.analysis.name_sites import NameSearch
from atompin.analysis.provider import ClassRef, TargetKind
from atompin.analysis.usage import ConsumerClass, Handover
from atompin.model import Status

# More provider files than this defining the method's name: no declared role is looked for.
_MAX_DEFINING = 64


@dataclass(frozen=True)
class DeclaredStandIn:
    """A consumer class returned to the provider by `handover`'s method, where the provider's
    method of that name returns `type[role]`, a class of the holder's order."""

    cls: ConsumerClass
    handover: Handover
    role: ClassRef

    def telling(self, hierarchy: Hierarchy) -> str:
        """ "returned by B.get_impl_cls (the provider's get_impl_cls returns a type[R])"."""
        holder = hierarchy.classes[self.handover.holder].symbol
        member = self.handover.member
        return f"returned by {holder}.{member} (the provider's {member} returns a type[{self.role.qualname}])"


@dataclass(frozen=True)
class StandingIn:
    """A consumer class that stands in for a provider class, implementing one of its methods
    itself (`stand_in_for`), and how it reaches the provider in that place."""

    cls: ConsumerClass
    how: str  # "handed to the provider in that class's place"

    def telling(self) -> str:
        return f"{self.cls.symbol}, {self.how}"


def stand_in_for(hierarchy: Hierarchy, search: NameSearch, holder: ClassRef, method: str) -> StandingIn | None:
    """A consumer class handed to the provider in provider class `holder`'s place that implements
    `method` itself: one sharing a provider base with holder (`Hierarchy.standing_in`), or one
    returned in a role the provider declares (`declared_stand_in`). Where one stands in, holder's
    `method` runs only on instances the consumer does not make."""
    shared = hierarchy.standing_in(holder, method)
    if shared is not None:
        return StandingIn(shared, "handed to the provider in that class's place")
    declared = declared_stand_in(hierarchy, search, holder, method)
    if declared is not None:
        return StandingIn(declared.cls, f"{declared.telling(hierarchy)}, handed to the provider in that role")
    return None


def declared_stand_in(
    hierarchy: Hierarchy, search: NameSearch, holder: ClassRef, method: str
) -> DeclaredStandIn | None:
    """A consumer class returned to the provider that implements `method` itself, does not derive
    from provider class `holder`, and is returned in a role of holder's order: the provider's
    method of the returning method's name is annotated `-> type[R]`, R holder or one of its bases.
    Where it stands in, holder's `method` runs only on instances the consumer does not make."""
    memo: dict[tuple[ClassRef, str], DeclaredStandIn | None] = hierarchy.memo.setdefault("declared_stand_in", {})
    key = (holder, method)
    if key not in memo:
        memo[key] = None
        order = [node for node in hierarchy.index.mro(holder) if isinstance(node, ClassRef)]
        for handover in hierarchy.returned_to_provider():
            cls = hierarchy.classes.get(handover.target)
            if cls is None or cls.muted or cls.method(method) is None or holder in hierarchy.mro(cls.name):
                continue
            role = declared_role(hierarchy, search, handover.member, order)
            if role is not None:
                memo[key] = DeclaredStandIn(cls, handover, role)
                break
    return memo[key]


def declared_role(hierarchy: Hierarchy, search: NameSearch, name: str, order: list[ClassRef]) -> ClassRef | None:
    """The first class of `order` (a provider class's, nearest first) that a provider method
    `name` is annotated to return as `-> type[R]` (`type["R"]`, `Type[R]`, `type[R[Any]]`), each
    annotation resolved where it is written; None when no such method names one."""
    memo: dict[tuple[str, tuple[ClassRef, ...]], ClassRef | None] = hierarchy.memo.setdefault("declared_role", {})
    key = (name, tuple(order))
    if key not in memo:
        index = hierarchy.index
        [paths] = search.files_defining([({name}, 1)], _MAX_DEFINING)
        annotated = _annotated_type(name)
        last_names = {ref.qualname.rpartition(".")[2] for ref in order}
        found: set[ClassRef] = set()
        for path in paths:
            module, _ = index.tree.module_name(path)
            for written in dict.fromkeys(m.group(1).decode() for m in annotated.finditer(index.tree.read(path))):
                if written.rpartition(".")[2] not in last_names:
                    continue  # not a class of the order by its name: its module is not indexed for it
                res = index.resolve(module, written.split("."))
                if res.status is Status.FOUND and res.target is not None and res.target.kind is TargetKind.CLASS:
                    assert res.target.cls is not None
                    found.add(res.target.cls)
        memo[key] = next((ref for ref in order if ref in found), None)
    return memo[key]


def _annotated_type(name: str) -> re.Pattern[bytes]:
    """`def name(...) -> type[R]`, R as group 1: parameters may hold one level of parentheses
    (`x=f()`), the annotation may be a string (`-> "type[R]"`, `-> type["R"]`)."""
    return re.compile(
        rb"\bdef\s+"
        + re.escape(name.encode())
        + rb"\s*\((?:[^()]|\([^()]*\))*\)\s*->\s*[\"']?\s*(?:typing\.)?(?:type|Type)\[\s*[\"']?([A-Za-z_][\w.]*)"
    )
