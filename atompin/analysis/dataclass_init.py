"""The `__init__` a standard-library `@dataclass` writes, from the fields of the classes in its
order. One concept, read for a provider dataclass (`ProviderIndex.dataclass_init`) and for a
consumer dataclass deriving from provider ones (`inits`): the decorator collects the fields of
every dataclass in the order, the bases' first (a field declared again keeps its first place),
and makes the keyword-only ones keyword-only parameters after the others.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from atompin.analysis.signature import Param, ParamKind, Signature

# Bases outside the provider that declare no dataclass fields.
FIELDLESS_BASES = frozenset({"object", "ABC", "Generic", "Protocol"})
# Class decorators that leave a dataclass's generated __init__ as it is.
PLAIN_CLASS_DECORATORS = frozenset({"dataclass", "final", "total_ordering", "runtime_checkable"})
# Class decorators that write the class's __init__: its signature is not in the source.
GENERATED_INIT = frozenset({"dataclass", "define", "frozen", "mutable", "s", "attrs", "dataclass_transform"})


def writes_init(decorator: str) -> bool:
    """Is this class decorator (dotted, as written) one that writes `__init__`?"""
    return decorator.rpartition(".")[2] in GENERATED_INIT


@dataclass(frozen=True)
class FieldLayer:
    """One class of the order as the decorator sees it. `fields`: a standard-library dataclass's
    own fields in `ClassInfo.fields`' encoding ("name", "name=" with a default, "*name"
    keyword-only, "!name" no parameter); None for any other class. `members`: the names such a
    class binds (a plain class's attribute is the default of a field written without one).
    `unknown`: what it declares cannot be read (an outside base that may declare fields, bases
    the index cannot follow, another library's generated `__init__`)."""

    fields: tuple[str, ...] | None = None
    members: frozenset[str] = frozenset()
    unknown: bool = False


def outside_layer(name: str) -> FieldLayer:
    """An outside base by name: it declares no field only when it is one of the plain ones."""
    return FieldLayer(unknown=name.rpartition(".")[2] not in FIELDLESS_BASES)


def generated_init(layers: Iterable[FieldLayer]) -> Signature | None:
    """The generated `__init__` for an order given base first (the MRO reversed, `object` first,
    the dataclass itself last); None when a layer is unknown."""
    fields: dict[str, str] = {}
    elsewhere: set[str] = set()  # names some class of the order binds otherwise than as a bare field
    for layer in layers:
        if layer.unknown:
            return None
        if layer.fields is None:
            elsewhere |= layer.members
            continue
        for field in layer.fields:
            fields[field.strip("!*=")] = field
            if field.endswith("="):
                elsewhere.add(field.strip("!*="))
    params = [Param("self", ParamKind.POSITIONAL_OR_KEYWORD)]
    for keyword_only in (False, True):
        params += [
            Param(
                name,
                ParamKind.KEYWORD_ONLY if keyword_only else ParamKind.POSITIONAL_OR_KEYWORD,
                f.endswith("=") or name in elsewhere,
            )
            for name, f in fields.items()
            if not f.startswith("!") and f.startswith("*") is keyword_only
        ]
    return Signature(tuple(params))
