"""Model-class overrides: the architectures a plugin re-registers in the provider's registry.

Found through the consumer's calls of the provider's `register_model(arch, "module:Class")`
(directly, or in a loop over a dict literal, which the scanner unrolls). Each
override must name a class that exists where its path points (the consumer's own
tree, or the provider's for an architecture registered as an alias of a provider
class), and an architecture the provider's registry knows: otherwise the
replacement is silently inactive, or fails when the model loads. A class of a
third package is not read: nothing here can tell whether it exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from atompin.analysis.provider import ProviderIndex, Resolution, TargetKind
from atompin.analysis.usage import ConsumerUsage
from atompin.model import Finding, Rule, Severity, Site

REGISTER_CALLS = ("register_model",)


@dataclass(frozen=True)
class Override:
    arch: str
    wrapper: str  # "module:Class" ("" when not a literal)
    site: Site
    registry_module: str


def find_overrides(usage: ConsumerUsage, index: ProviderIndex) -> list[Override]:
    """Every literal `register_model(arch, "module:Class")` call into the provider."""
    out: dict[tuple[str, str], Override] = {}
    for call in usage.calls:
        ref = call.choices[0]
        if not ref.path or ref.path[-1] not in REGISTER_CALLS or not call.literals or call.literals[0] is None:
            continue
        res = index.resolve(ref.module, ref.path)
        target = res.target
        if not res.found or target is None or target.kind is not TargetKind.FUNCTION:
            continue
        registry = target.owner.module if target.owner is not None else target.symbol.partition(":")[0]
        wrapper = call.literals[1] if len(call.literals) > 1 and call.literals[1] else ""
        out.setdefault((call.literals[0], wrapper), Override(call.literals[0], wrapper, call.site, registry))
    return sorted(out.values(), key=lambda o: (o.arch, o.wrapper))


def _wrapper_missing(
    o: Override,
    index: ProviderIndex,
    in_consumer: Callable[[str], Resolution],
    consumer_has: Callable[[str], bool],
    baseline: ProviderIndex | None = None,
) -> list[Finding]:
    """An error when the class an override names by path is not where the path points: in the
    provider (an alias of one of its own classes) or in the consumer; nothing for a third package.
    A warning when that was so at the baseline too: the consumer has no such module whatever the
    provider (vllm-kunlun registers `vllm_kunlun.models.glm`, which it does not ship), or the
    baseline lacked the provider's class as well."""
    module = o.wrapper.partition(":")[0]
    top = module.split(".")[0]
    if top == index.package:
        res, where = index.resolve_symbol(o.wrapper), "provider"
    elif consumer_has(top):
        res, where = in_consumer(o.wrapper), "consumer"
    else:
        return []
    if res.status.value != "missing":
        return []
    message = (
        f"the override of {o.arch} names {o.wrapper}, which does not resolve in the {where} ({res.reason}): "
        "loading the model fails"
    )
    if baseline is not None:
        if where == "consumer" and not consumer_has(module):
            how = f"the consumer has no module {module}, whatever the provider"
        elif where == "provider" and baseline.resolve_symbol(o.wrapper).status.value == "missing":
            how = "the baseline lacks it too"
        else:
            how = ""
        if how:
            message = f"{message}; it fails at the baseline too ({how}): not a change since"
            return [Finding(Rule.MODEL_OVERRIDE, Severity.WARNING, o.wrapper, (o.site,), message)]
    return [Finding(Rule.MODEL_OVERRIDE, Severity.ERROR, o.wrapper, (o.site,), message)]


def known_architectures(index: ProviderIndex, module: str) -> set[str]:
    """Keys of the registry module's model tables (dict literals whose name says MODELS)."""
    info = index.module(module)
    if info is None:
        return set()
    tables = {name: keys for name, keys in info.dict_keys.items() if "MODELS" in name.upper()} or info.dict_keys
    return {key for keys in tables.values() for key in keys}


def check_overrides(
    usage: ConsumerUsage,
    index: ProviderIndex,
    in_consumer: Callable[[str], Resolution],
    baseline: ProviderIndex | None = None,
    consumer_has: Callable[[str], bool] = lambda top: True,
) -> tuple[list[Finding], int]:
    """Findings for the overrides, and how many provider architectures they replace.

    `in_consumer` resolves a "module:Class" in the consumer's own tree; `consumer_has` says
    whether the consumer has a module (a top-level package, or one below it) of that name.
    """
    findings: list[Finding] = []
    replaced = 0
    for o in find_overrides(usage, index):
        if o.wrapper:
            module, _, cls = o.wrapper.partition(":")
            if not module or not cls or module.startswith("."):
                findings.append(
                    Finding(
                        Rule.MODEL_OVERRIDE,
                        Severity.ERROR,
                        o.arch,
                        (o.site,),
                        f"the override of {o.arch} names {o.wrapper!r}, not module:Class",
                    )
                )
            else:
                findings += _wrapper_missing(o, index, in_consumer, consumer_has, baseline)
        known = known_architectures(index, o.registry_module)
        if not known:
            continue
        before = known_architectures(baseline, o.registry_module) if baseline is not None else set()
        if o.arch in known:
            replaced += 1
            if not before or o.arch in before:
                continue
            severity, message = (
                Severity.INFO,
                f"{o.registry_module} has {o.arch} of its own since the consumer's declared version: "
                "the override, an addition there, now replaces the provider's implementation",
            )
        elif o.arch in before:
            severity, message = (
                Severity.WARNING,
                f"{o.registry_module} knew {o.arch} at the consumer's declared version and no longer "
                "does: the override registers a name nothing requests; the replacement is "
                "silently inactive",
            )
        else:
            why = (
                "an addition" if baseline is not None else "an addition, or a name that vanished (no baseline to tell)"
            )
            severity, message = Severity.INFO, f"{o.arch} is not in {o.registry_module}'s tables: {why}"
        findings.append(Finding(Rule.MODEL_OVERRIDE, severity, o.arch, (o.site,), message))
    return findings, replaced
