"""Names the consumer puts into the provider's namespace itself: checks consult them before calling a
name missing or a call a misfit.

- additions: attributes the consumer assigns that the provider never had (a marker, a helper
  method its own wrappers call, the original kept under a new name). Reads and `hasattr` checks of
  them anywhere in the consumer are of the consumer's own objects;
- modules it registers in `sys.modules` under provider names: importing them gets the consumer's module;
- replacements: provider callables it patched with a function of known signature: calls bind to them;
- registrations: consumer classes it hands the provider under a name (an out-of-tree class registry).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from atompin.analysis.provider import ProviderIndex, Resolution, Target, TargetKind
from atompin.analysis.usage import (
    Condition,
    ConditionKind,
    ConsumerUsage,
    Guard,
    PatchSite,
    ReadKind,
    Ref,
    Registration,
    effective_guard,
)
from atompin.model import Site, Status

# (the resolved owner's symbol, attribute name): a key that does not depend on the import path used.
Key = tuple[str, str]


def is_addition(patch: PatchSite, reads: set[ReadKind]) -> bool:
    """Is a patch of an attribute the provider does not have the consumer's own addition?

    Yes for a literal (a marker), another provider object kept under a new name (the original
    stashed), one installed only where the provider lacks the name (a polyfill), and when nothing
    suggests a replacement: no read of the original, no guard around it.
    A `hasattr` that only checks for the name's absence (idempotency, ordering) is no such read.
    """
    if patch.declared:
        return False  # named as a target to replace
    if patch.literal_value or patch.stash or installed_when_absent(patch) is not None:
        return True
    originals = reads & {ReadKind.PLAIN, ReadKind.DEFAULT}
    return not originals and effective_guard(patch, reads) in (Guard.NONE, Guard.TRY)


def installed_when_absent(patch: PatchSite) -> Condition | None:
    """The condition that installs `patch` where the provider lacks the attribute it sets: only
    there (`if not hasattr(X, "f"): X.f = mine`, or after `if hasattr(X, "f"): return`), or there
    and where another test fails (`ATTR_ABSENT_OR`: the `else` of `if hasattr(X, "f") and ...:`,
    vllm-ascend's backport of a class vLLM added)."""
    for condition in patch.when:
        if (
            condition.kind in (ConditionKind.ATTR_ABSENT, ConditionKind.ATTR_ABSENT_OR)
            and condition.attr == patch.attr
            and not condition.also
            and set(condition.refs) & set(patch.owner)
        ):
            return condition
    return None


@dataclass
class ConsumerOwn:
    additions: dict[Key, Site] = field(default_factory=dict)
    modules: dict[str, Site] = field(default_factory=dict)
    replacements: dict[Key, list[PatchSite]] = field(default_factory=dict)
    registrations: dict[str, list[Registration]] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        usage: ConsumerUsage,
        index: ProviderIndex,
        resolve: Callable[[Ref], Resolution],
        reads: dict[tuple[tuple[Ref, ...], str], set[ReadKind]],
    ) -> ConsumerOwn:
        own = cls()
        for name, site in usage.injected_modules:
            own.modules.setdefault(name, site)
        for registration in usage.registrations:
            own.registrations.setdefault(registration.name, []).append(registration)
        for patch in usage.patches:
            owner = next((r for r in map(resolve, patch.owner) if r.found and r.target is not None), None)
            if owner is None or owner.target is None:
                continue
            key = (owner.target.symbol, patch.attr)
            res = index.getattr(owner.target, patch.attr)
            if res.status is Status.MISSING and is_addition(patch, reads.get((patch.owner, patch.attr), set())):
                own.additions.setdefault(key, patch.site)
            elif patch.replacement is not None and (res.found or _constructor(owner.target, patch.attr)):
                own.replacements.setdefault(key, []).append(patch)
        return own

    def owns(self, ref: Ref, resolve: Callable[[Ref], Resolution]) -> Site | None:
        """Where the consumer itself makes `ref` (or a name on the way to it) exist; None when it does not."""
        parts = [*ref.module.split("."), *ref.path]
        for i in range(1, len(parts) + 1):
            site = self.modules.get(".".join(parts[:i]))
            if site is not None:
                return site
        module_parts = ref.module.split(".")
        for i in range(1, len(module_parts)):  # `prov.configs.newcfg` where newcfg was added to prov.configs
            site = self.additions.get((".".join(module_parts[:i]), module_parts[i]))
            if site is not None:
                return site
        for i, name in enumerate(ref.path):
            prefix = resolve(Ref(ref.module, ref.path[:i]))
            if not prefix.found or prefix.target is None:
                return None
            site = self.additions.get((prefix.target.symbol, name))
            if site is not None:
                return site
        return None

    def registered_as(self, name: str) -> list[Registration]:
        return self.registrations.get(name, [])


def _constructor(target: Target, attr: str) -> bool:
    """Is `attr` the `__init__` of a provider class? Replaced, it is what a call of the class runs,
    whether the provider wrote its own or a decorator writes it (a dataclass's is not a member)."""
    return attr == "__init__" and target.kind is TargetKind.CLASS
