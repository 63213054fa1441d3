"""The `__init__` a call of a consumer class runs (`Cls(...)`), when the provider writes it: the
first class of the consumer class's order that defines `__init__` is a provider class, or the
class is a standard-library `@dataclass` whose generated `__init__` takes the fields of provider
dataclasses in its order (vllm-ascend's `AscendCommonAttentionMetadata(CommonAttentionMetadata)`,
called with a field vLLM 0.30 removed). Anything in the way that may make the instance otherwise
(a consumer `__init__` or `__new__`, a metaclass, another library's generated `__init__`, an
outside base, a patched `__init__`) leaves the call unjudged: `super().__init__(...)` in the
consumer's own `__init__` is judged as any call through `super()` is.
"""

from __future__ import annotations

from dataclasses import dataclass

from atompin.analysis.dataclass_init import FieldLayer, generated_init, outside_layer, writes_init
from atompin.analysis.hierarchy import PLAIN_BASES, ConsumerRef, Hierarchy, is_method
from atompin.analysis.provider import ClassRef
from atompin.analysis.signature import Signature


@dataclass(frozen=True)
class InitRun:
    """What a call of a consumer class runs: `owner`'s `__init__` (a provider class's own or the
    one its dataclass decorator writes), or with `dataclass` the `__init__` the decorator writes
    for that consumer dataclass from its order's fields (`owner`: the first provider dataclass
    contributing fields)."""

    owner: ClassRef
    signature: Signature
    dataclass: str = ""


def init_run(hierarchy: Hierarchy, name: str) -> InitRun | None:
    """The provider-written `__init__` a call of consumer class `name` runs; None when the
    consumer writes it, or it is not known for sure."""
    for node in hierarchy.mro(name):
        if isinstance(node, str):
            if node in PLAIN_BASES:
                continue
            return None  # an outside base may define __init__
        if isinstance(node, ConsumerRef):
            cls = hierarchy.consumer(node)
            if cls is None or "__init__" in cls.bound or "__new__" in cls.bound:
                return None
            if cls.writes_init:
                return _consumer_dataclass(hierarchy, cls.name) if cls.fields is not None else None
            continue
        if f"{node}.__init__" in hierarchy.patched or f"{node}.__new__" in hierarchy.patched:
            return None  # the consumer's replacement runs
        info = hierarchy.provider(node)
        if info is None or info.opaque or "__new__" in info.members:
            return None
        if any(writes_init(d) for d in info.decorators):
            generated = hierarchy.index.dataclass_init(node)
            return InitRun(node, generated) if generated is not None else None
        member = info.members.get("__init__")
        if member is None:
            continue
        if not is_method(member) or member.signature is None:
            return None
        return InitRun(node, member.signature)
    return None


def _consumer_dataclass(hierarchy: Hierarchy, name: str) -> InitRun | None:
    """The `__init__` `@dataclass` writes for consumer class `name` from the fields of every
    dataclass in its order, when a provider dataclass gives some of them (else the consumer
    writes all it takes: no contact)."""
    order = hierarchy.mro(name)
    index = hierarchy.index
    owner = next((n for n in order if isinstance(n, ClassRef) and index.field_layer(n).fields is not None), None)
    if owner is None:
        return None
    layers: list[FieldLayer] = []
    for node in reversed(order):
        if isinstance(node, str):
            layers.append(outside_layer(node))
        elif isinstance(node, ConsumerRef):
            cls = hierarchy.consumer(node)
            if cls is None or (cls.fields is None and cls.writes_init):
                return None
            layers.append(FieldLayer(cls.fields, frozenset(cls.bound)))
        else:
            layers.append(index.field_layer(node))
    signature = generated_init(layers)
    return InitRun(owner, signature, dataclass=name) if signature is not None else None
