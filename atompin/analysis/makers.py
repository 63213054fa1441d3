"""Which provider class makes what a provider class keeps in one of its attributes.

A provider call on `self.x` (a `NameSite` with `made_by`) reaches whatever the class stored in
x. When the class stores there only what one provider class's constructor makes
(`self.processor = OutputProcessor(...)`), that is exactly an instance of that class; when
only what one of its factories makes (`Engine.from_args(...)`, or the class its return
annotation names), or a class handed in as a parameter annotated `type[Engine]` makes, that
class or a subclass. A call on a provider class named as written (`NewData.from_request(...)`)
runs that class's own method. The override and protocol rules use this to leave out calls that
cannot reach the consumer's class.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from atompin.analysis.hierarchy import Hierarchy, provider_class
from atompin.analysis.name_sites import NameSite
from atompin.analysis.names import split_symbol
from atompin.analysis.provider import ClassRef, TargetKind
from atompin.analysis.usage import Ref
from atompin.model import Status


@dataclass(frozen=True)
class Maker:
    """The provider class whose constructor (`exact`) or factory makes what `holder` keeps in an attribute."""

    holder: ClassRef  # the provider class that stores the value (the site's class)
    cls: ClassRef
    exact: bool


def stored_maker(hierarchy: Hierarchy, site: NameSite) -> Maker | None:
    """The maker of the value the call at `site` is made on (see the module docstring). None when
    there is no such maker, or the consumer may put something else there: it patches the name the
    callee goes by, or replaces one of the holder's methods."""
    if not site.made_by or not site.cls:
        return None
    of_class = site.made_by.startswith("type[") and site.made_by.endswith("]")
    parts = tuple((site.made_by[5:-1] if of_class else site.made_by).split("."))
    if hierarchy.patched_names & set(parts):
        return None
    module, _ = hierarchy.index.tree.module_name(site.path)
    holder = ClassRef(module, site.cls)
    if any(patched.startswith(f"{holder}.") for patched in hierarchy.patched):
        return None  # a replaced method of the holder may store something else in x
    made = provider_class(hierarchy.resolve, (Ref(module, parts),))
    if made is not None:
        return Maker(holder, made, exact=not of_class)  # a class handed in may be a subclass
    if of_class:
        return None
    factory_of = provider_class(hierarchy.resolve, (Ref(module, parts[:-1]),)) if len(parts) > 1 else None
    if factory_of is None:
        return None
    product = _annotated_product(hierarchy, Ref(module, parts), factory_of)
    return Maker(holder, product, exact=False) if product is not None else None


def _annotated_product(hierarchy: Hierarchy, factory: Ref, of: ClassRef) -> ClassRef | None:
    """The class a factory of class `of` makes: the one its return annotation names (a factory
    class's `create_connector(...) -> KVConnectorBase`), else `of` itself (`-> Self`, or none
    written). None when the annotation names something that is not a provider class (a type
    variable): then what it makes is unknown."""
    res = hierarchy.resolve((factory,))
    target = res.target if res is not None else None
    named = target.signature.returns_class if target is not None and target.signature is not None else ""
    if target is None or not named or named.rpartition(".")[2] == "Self":
        return of
    written_in = split_symbol(target.symbol)[0]  # the annotation is read where the factory is defined
    return provider_class(hierarchy.resolve, (Ref(written_in, tuple(named.split("."))),))


def on_named_class(hierarchy: Hierarchy, site: NameSite) -> bool:
    """Is the call's receiver a provider class named as written (`NewRequestData.from_request(...)`
    in vLLM's scheduler), a name the consumer replaces nowhere and the provider rebinds nowhere?
    Then the call runs that class's own method, never a consumer subclass's or stand-in's."""
    last = site.named.rpartition(".")[2]
    # Replaced by the consumer: patched, or set on any object (vllm-omni sets `module.Request =
    # OmniRequest` on every vLLM module it finds in `sys.modules`).
    if not site.named or last in hierarchy.patched_names or last in hierarchy.member_stores:
        return False
    module, _ = hierarchy.index.tree.module_name(site.path)
    found = hierarchy.index.resolve(module, tuple(site.named.split(".")))
    if found.status is not Status.FOUND or found.target is None or found.target.kind is not TargetKind.CLASS:
        return False
    # A provider function may rebind the module's name (`global NewData; NewData = cls`).
    root = re.escape(site.named.partition(".")[0].encode())
    return re.search(rb"\bglobal\b[^\n]*\b" + root + rb"\b", hierarchy.provider_text(site.path)) is None
