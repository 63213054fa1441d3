"""Small questions about syntax trees and abstract values that more than one part of the scanner asks."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from atompin.analysis.guards import describe_fallback, exits, leaves
from atompin.analysis.scanning.state import Ctx
from atompin.analysis.signature import Signature
from atompin.analysis.syntax import FALSE_CONSTANT, dotted, instance_assignments
from atompin.analysis.usage import ELEMENT, ImportGroup, Receiver, Ref
from atompin.analysis.values import (
    ElementsOf,
    MemberChain,
    MethodValue,
    ProviderValue,
    ReceiverValue,
    SignatureOf,
    Value,
)

# A dotted module name (maybe relative).
DOTTED_NAME = re.compile(r"\.*[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
TYPING_MODULES = ("typing", "typing_extensions")


def signature_of_value(value: Value) -> SignatureOf | None:
    """`inspect.signature(f)` of a provider function, or of a method through an instance of a
    provider class (`self.engine.get_tokenizer`, `self.engine` annotated `EngineClient`)."""
    if isinstance(value, ProviderValue):
        return SignatureOf(value.choices)
    if isinstance(value, MethodValue) and value.ref.receiver is Receiver.INSTANCE and value.ref.choices:
        if not value.ref.via:
            return SignatureOf(tuple(choice.attr(value.ref.name) for choice in value.ref.choices))
    return None


def caught_by(group: ImportGroup, handler: ast.ExceptHandler | None) -> ImportGroup:
    """`group`, with what the handler of the try around it does when its imports fail (none: the
    error propagates)."""
    if handler is not None:
        group.fallback = describe_fallback(handler.body)
        group.leaves, group.exits = leaves(handler.body), exits(handler.body)
    return group


def binding_wrapper(node: ast.expr | None) -> str:
    """The wrapper of an assigned `staticmethod(f)` / `classmethod(f)`, which the scan reads as
    `f`: it decides how the replacement binds ("" for any other value)."""
    if isinstance(node, ast.Call) and len(node.args) == 1:
        name = dotted(node.func).removeprefix("builtins.")
        if name in ("staticmethod", "classmethod"):
            return name
    return ""


def wrapped(signature: Signature, wrapper: str) -> Signature:
    """`signature` as `wrapper` (see `binding_wrapper`) makes it bind."""
    if not wrapper or wrapper in signature.decorators:
        return signature
    return replace(signature, decorators=(*signature.decorators, wrapper))


def self_owner(receiver: ast.expr, ctx: Ctx) -> str:
    """The consumer class whose instance `receiver` is when it is `self` in one of its methods; ""."""
    return ctx.owner if isinstance(receiver, ast.Name) and receiver.id == "self" else ""


def owner_and_name(value: ProviderValue) -> tuple[tuple[Ref, ...], str] | None:
    """(X's choices, "n") of a provider value that is attribute n of X, whichever choice holds."""
    if not all(ref.path for ref in value.choices):
        return None
    names = {ref.path[-1] for ref in value.choices}
    if len(names) != 1:
        return None
    return tuple(Ref(ref.module, ref.path[:-1]) for ref in value.choices), names.pop()


def node_text(node: ast.AST) -> str:
    """Source as written, on one line, short enough for a message."""
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 120 else text[:117] + "..."


def handed_on(value: ast.expr, ctx: Ctx) -> dict[str, Value] | None:
    """What `value` holds when it is the function's own `**` parameter, bound to the keywords a
    caller passed (the function read again for that call: `_forwarded_keywords`); None otherwise."""
    kwarg = ctx.definition.args.kwarg if ctx.definition is not None else None
    if kwarg is None or not isinstance(value, ast.Name) or value.id != kwarg.arg:
        return None
    held = ctx.scope.lookup(value.id)
    return held if isinstance(held, dict) else None


# Attributes read on the way to a member through a receiver (`self.a.b.c`: two) that are followed
# (ai-dynamo reads `self.kv_cache_manager.coordinator.single_type_managers`' elements' members).
MAX_VIA = 4


def via_depth(via: tuple[str, ...]) -> int:
    """How many attributes a chain reads on the way (an element taken is none)."""
    return sum(step != ELEMENT for step in via)


def each_value(items: Value, target: ast.expr) -> Value:
    """What a loop over `items` binds to `target` each turn: an instance of a provider class from
    a collection of them (`for o in outputs`), a key and an instance from a mapping's `.items()`
    (`for name, layer in layers.items()`), an element of what an attribute chain holds (`for m in
    self.coordinator.managers`: judged where the provider's classes say what its elements are);
    None when that is not known."""
    if isinstance(items, (MemberChain, MethodValue)) and isinstance(target, ast.Name):
        ref = items.ref
        if via_depth(ref.via) >= MAX_VIA:
            return None
        return MemberChain(replace(ref, name=ELEMENT, via=(*ref.via, ref.name)))
    if not isinstance(items, ElementsOf) or items.view == "mapping":
        return None  # (a loop over a mapping binds its keys)
    each = ReceiverValue(Receiver.INSTANCE, choices=items.choices)
    if items.view == "items":
        pair = isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2
        return (None, each) if pair else None
    return each if isinstance(target, ast.Name) else None


def module_glob(node: ast.expr) -> str:
    """The module path a computed string spells, each computed part a `*` that stands for a name or
    part of one (f"pkg.{kind}.core" -> "pkg.*.core", "pkg." + x -> "pkg.*"), cut at a ":" (what
    follows names an attribute); "" when it is neither an f-string nor a sum of strings."""
    pieces: list[str]
    if isinstance(node, ast.JoinedStr):
        pieces = [str(v.value) if isinstance(v, ast.Constant) else "*" for v in node.values]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        pieces = summed(node)
    else:
        return ""
    return "".join(pieces).partition(":")[0]


def summed(node: ast.expr) -> list[str]:
    """The parts of a sum of strings: literals as written, anything else `*`."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return summed(node.left) + summed(node.right)
    return [node.value] if isinstance(node, ast.Constant) and isinstance(node.value, str) else ["*"]


def literal_prefix(node: ast.expr) -> str:
    """The literal text a computed string starts with: f"pkg.{x}" -> "pkg."; "pkg." + x -> "pkg."."""
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            return node.left.value
        return literal_prefix(node.left)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        base = node.func.value
        if isinstance(base, ast.Constant) and isinstance(base.value, str):
            return base.value.partition("{")[0]
    return ""


def class_assignments(node: ast.ClassDef) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a class's methods set on their instance (`ConsumerClass.assigned`), and which of those
    only ever to a false constant (`ConsumerClass.false_only`)."""
    makers = instance_assignments(node)
    false_only = () if "*" in makers else tuple(sorted(a for a, made in makers.items() if made == {FALSE_CONSTANT}))
    return tuple(sorted(makers)), false_only
