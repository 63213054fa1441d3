"""Parameters of consumer methods typed by the provider method each one overrides.

A plugin's override often leaves its parameters unannotated (`def execute_model(self,
scheduler_output, intermediate_tensors=None)` in a subclass of vLLM's runner): the provider calls it
as its own method, so what it hands in is what that method's signature annotates
(`scheduler_output: "SchedulerOutput"`), as a type checker infers for such an override. The
scanner records what is read and called through such a parameter with `Receiver.PARAM` (the class,
the method and the parameter: it does not know the provider's classes); once they are known, each
use becomes one through an instance of the provider class the overridden method annotates the
parameter of the same name with, judged as through a parameter the consumer annotated itself. The
others are dropped: nothing says what the parameter holds (no provider method of that name comes
next in the class's order, an outside base may come first, the parameter is renamed or not
annotated there, or annotated with what is not a provider class: a type variable, `Any`, torch's
`Tensor`).
"""

from __future__ import annotations

from dataclasses import replace

from atompin.analysis.hierarchy import Definition, Hierarchy, is_method
from atompin.analysis.provider import ClassRef
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
    named = next((p.annotation for p in member.signature.params if p.name == param), "")
    if not named:
        return ()
    cls = hierarchy.named_class(overridden.node.module, named)
    return (Ref(cls.module, tuple(cls.qualname.split("."))),) if cls is not None else ()
