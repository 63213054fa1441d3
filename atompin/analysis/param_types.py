"""Parameters of consumer methods typed by the provider method each one overrides.

A plugin's override often leaves its parameters unannotated (`def execute_model(self,
scheduler_output, intermediate_tensors=None)` in a subclass of vLLM's runner): the provider calls it
as its own method, so what it hands in is what that method's signature annotates
(`scheduler_output: "SchedulerOutput"`), as a type checker infers for such an override. The
scanner records what is read and called through such a parameter with `Receiver.PARAM` (the class,
the method and the parameter: it does not know the provider's classes); once they are known, each
use becomes one through an instance of the provider class the overridden method annotates the
parameter of the same name with (or, for a renamed one, the parameter in its position), judged as
through a parameter the consumer annotated itself. The others are dropped: nothing says what the
parameter holds (no provider method of that name comes next in the class's order, an outside base
may come first, the parameter is not there or not annotated there, or annotated with what is not a
provider class: a type variable, `Any`, torch's `Tensor`).
"""

from __future__ import annotations

from dataclasses import replace

from atompin.analysis.hierarchy import Definition, Hierarchy, is_method
from atompin.analysis.provider import ClassRef
from atompin.analysis.signature import ParamKind, Signature
from atompin.analysis.usage import ConsumerUsage, MethodRef, Receiver, Ref


def typed_params(usage: ConsumerUsage, hierarchy: Hierarchy) -> ConsumerUsage:
    """`usage` with every use through a method's unannotated parameter (`Receiver.PARAM`) made
    one through an instance of the class the overridden provider method annotates it with, or
    dropped when there is none."""
    contact = usage.contact
    refs = [*(u.method for u in contact.member_uses), *(c.method for c in contact.method_calls)]
    refs += [u.method for u in contact.unpacks if u.method is not None]
    if not any(ref.receiver is Receiver.PARAM for ref in refs):
        return usage
    types: dict[tuple[str, str], tuple[Ref, ...]] = {}

    def typed(ref: MethodRef) -> MethodRef | None:
        if ref.receiver is not Receiver.PARAM:
            return ref
        key = (ref.owner, ref.param)
        if key not in types:
            method, _, param = ref.param.partition(":")
            types[key] = param_type(hierarchy, ref.owner, method, param)
        choices = types[key]
        return MethodRef(Receiver.INSTANCE, ref.name, choices=choices, via=ref.via) if choices else None

    member_uses = [replace(u, method=m) for u in contact.member_uses if (m := typed(u.method)) is not None]
    method_calls = [replace(c, method=m) for c in contact.method_calls if (m := typed(c.method)) is not None]
    unpacks = []
    for unpack in contact.unpacks:
        ref = typed(unpack.method) if unpack.method is not None else None
        if unpack.method is None or ref is not None:
            unpacks.append(unpack if ref is None else replace(unpack, method=ref))
    new = replace(contact, member_uses=member_uses, method_calls=method_calls, unpacks=unpacks)
    return replace(usage, contact=new)


def param_type(hierarchy: Hierarchy, owner: str, method: str, param: str) -> tuple[Ref, ...]:
    """The provider class (as ladder choices) that the provider method consumer class `owner`'s
    `method` overrides annotates its parameter `param` with; () when there is none."""
    overridden = hierarchy.lookup(owner, method, after=0)
    while isinstance(overridden, Definition) and not isinstance(overridden.node, ClassRef):
        overridden = hierarchy.lookup(owner, method, after=overridden.index)  # a consumer base's: on
    if not isinstance(overridden, Definition) or not isinstance(overridden.node, ClassRef):
        return ()  # none, or an outside base comes first (it may define it)
    member = overridden.member
    if member is None or not is_method(member) or member.signature is None:
        return ()
    named = _annotation_of(member.signature, param, _own_signature(hierarchy, owner, method))
    if not named:
        return ()
    cls = hierarchy.named_class(overridden.node.module, named)
    return (Ref(cls.module, tuple(cls.qualname.split("."))),) if cls is not None else ()


_POSITIONAL = (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)


def _own_signature(hierarchy: Hierarchy, owner: str, method: str) -> Signature | None:
    """The signature of consumer class `owner`'s own `method` (None when it defines none)."""
    own = hierarchy.lookup(owner, method)
    return own.method.signature if isinstance(own, Definition) and own.method is not None else None


def _annotation_of(base: Signature, param: str, own: Signature | None) -> str:
    """The class the overridden method's signature `base` annotates the override's `param` with:
    its parameter of that name, or else the one in the same position when the override renamed
    it (`def execute_model(self, sched_output)`: the provider passes it positionally, as a type
    checker matches an override's parameters); "" when neither is annotated with a class."""
    by_name = next((p for p in base.params if p.name == param), None)
    if by_name is not None:
        return by_name.annotation
    if own is None:
        return ""
    names = [p.name for p in own.params]
    at = names.index(param) if param in names else -1
    if at < 0 or own.params[at].kind not in _POSITIONAL or at >= len(base.params):
        return ""
    there = base.params[at]
    # Not when the override has that parameter elsewhere: the two orders disagree.
    if there.kind not in _POSITIONAL or there.name in names:
        return ""
    return there.annotation
