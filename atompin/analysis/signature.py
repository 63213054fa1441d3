"""Function signatures as data, read from the AST (never from a live object)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from keyword import iskeyword

from atompin.analysis.output_buffers import filled_outputs, output_names
from atompin.analysis.syntax import dotted, statements


class ParamKind(str, Enum):
    POSITIONAL_ONLY = "positional-only"
    POSITIONAL_OR_KEYWORD = "positional-or-keyword"
    VAR_POSITIONAL = "var-positional"
    KEYWORD_ONLY = "keyword-only"
    VAR_KEYWORD = "var-keyword"


@dataclass(frozen=True)
class Param:
    name: str
    kind: ParamKind
    has_default: bool = False
    # The class its annotation names, as written (`annotation_class`); "" when none is named.
    annotation: str = ""

    def render(self) -> str:
        if self.kind is ParamKind.VAR_POSITIONAL:
            return f"*{self.name}"
        if self.kind is ParamKind.VAR_KEYWORD:
            return f"**{self.name}"
        return f"{self.name}=…" if self.has_default else self.name


@dataclass(frozen=True)
class Signature:
    """Parameters in order plus the decorators that change how it binds."""

    params: tuple[Param, ...]
    decorators: tuple[str, ...] = ()
    is_async: bool = False
    # How many values it returns when every `return` gives a literal tuple of that length, or
    # its annotation is `tuple[X, Y, ...]` of fixed length; None when that is not known.
    returns: int | None = None
    # The class its return annotation names, as written (`-> Engine`, `-> "Engine"`); "" when
    # there is none or it is not a plain name.
    returns_class: str = ""
    # The output parameters it writes its result into, giving no value (`output_buffers`).
    fills: tuple[str, ...] = ()

    @property
    def is_staticmethod(self) -> bool:
        return "staticmethod" in self.decorators

    @property
    def is_classmethod(self) -> bool:
        return "classmethod" in self.decorators

    @property
    def is_property(self) -> bool:
        return any(d in ("property", "cached_property") or d.endswith(".setter") for d in self.decorators)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def render(self) -> str:
        parts: list[str] = []
        seen_kw_marker = False
        for i, p in enumerate(self.params):
            if p.kind is ParamKind.KEYWORD_ONLY and not seen_kw_marker:
                if not any(q.kind is ParamKind.VAR_POSITIONAL for q in self.params):
                    parts.append("*")
                seen_kw_marker = True
            if p.kind is ParamKind.VAR_POSITIONAL:
                seen_kw_marker = True
            parts.append(p.render())
            nxt = self.params[i + 1] if i + 1 < len(self.params) else None
            if p.kind is ParamKind.POSITIONAL_ONLY and (nxt is None or nxt.kind is not ParamKind.POSITIONAL_ONLY):
                parts.append("/")
        return "(" + ", ".join(parts) + ")"


def decorator_name(node: ast.expr) -> str:
    """`@functools.cache(...)` -> "functools.cache"; unknown shapes -> ""."""
    return dotted(node.func if isinstance(node, ast.Call) else node)


def signature_of(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> Signature:
    """Read a signature from a `def` or `lambda` node."""
    a = node.args
    params: list[Param] = []
    positional = [*a.posonlyargs, *a.args]
    first_default = len(positional) - len(a.defaults)
    for i, arg in enumerate(positional):
        kind = ParamKind.POSITIONAL_ONLY if i < len(a.posonlyargs) else ParamKind.POSITIONAL_OR_KEYWORD
        params.append(Param(arg.arg, kind, i >= first_default, annotation_class(arg.annotation)))
    if a.vararg:
        params.append(Param(a.vararg.arg, ParamKind.VAR_POSITIONAL))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        params.append(Param(arg.arg, ParamKind.KEYWORD_ONLY, default is not None, annotation_class(arg.annotation)))
    if a.kwarg:
        params.append(Param(a.kwarg.arg, ParamKind.VAR_KEYWORD))
    if isinstance(node, ast.Lambda):
        body = node.body
        returns = len(body.elts) if isinstance(body, ast.Tuple) and not _starred(body) else None
        return Signature(tuple(params), returns=returns)
    decorators = tuple(d for d in (decorator_name(x) for x in node.decorator_list) if d)
    returns_class = _annotation_name(node.returns)
    outputs = output_names([p.name for p in params])
    return Signature(
        tuple(params),
        decorators,
        isinstance(node, ast.AsyncFunctionDef),
        tuple_returns(node),
        returns_class,
        filled_outputs(node, outputs) if outputs else (),
    )


def _annotation_name(node: ast.expr | None) -> str:
    """`Engine`, `mod.Engine` or `"Engine"` as written; "" for anything else. A string is not
    parsed: this runs for every function indexed, and only a dotted name is wanted."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _dotted_text(node.value.strip())
    return dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else ""


def _dotted_text(text: str) -> str:
    """`text` when it is a dotted name ("Engine", "mod.Engine"), else ""."""
    return text if all(p.isidentifier() and not iskeyword(p) for p in text.split(".")) else ""


def annotation_class(node: ast.expr | None) -> str:
    """The class a parameter's annotation names, as written, as `syntax.annotated_type` reads one
    (`C`, `mod.C`, `"C"`, each of those or None: `C | None`, `Optional[C]`, `"C | None"`) but for
    a string, read as text (`_annotation_name`: this runs for every parameter indexed); "" for
    anything else, and for a name not capitalised as a class is (`int`; a type variable `T` is
    kept: what it names is read where it is asked for)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [side for side in (node.left, node.right) if not (isinstance(side, ast.Constant) and side.value is None)]
        return annotation_class(sides[0]) if len(sides) == 1 else ""
    if isinstance(node, ast.Subscript) and dotted(node.value).rpartition(".")[2] == "Optional":
        return annotation_class(node.slice)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value.strip()
        if text.startswith("Optional[") and text.endswith("]"):
            text = text[len("Optional[") : -1]
        named = [part for part in (part.strip() for part in text.split("|")) if part != "None"]
        name = _dotted_text(named[0]) if len(named) == 1 else ""
    else:
        name = _annotation_name(node)
    return name if name.rpartition(".")[2][:1].isupper() else ""


def _starred(node: ast.Tuple) -> bool:
    return any(isinstance(e, ast.Starred) for e in node.elts)


def tuple_returns(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int | None:
    """The length of the tuple a function returns: every `return` a literal tuple of one length
    (a bare `return` excluded), else a fixed-length `-> tuple[...]` annotation."""
    lengths: set[int | None] = set()
    for stmt in _returns(node.body):
        value = stmt.value
        lengths.add(len(value.elts) if isinstance(value, ast.Tuple) and not _starred(value) else None)
        if None in lengths or len(lengths) > 1:
            break
    if len(lengths) == 1 and None not in lengths:
        return lengths.pop()
    return _annotated_tuple(node.returns)


# Statement types with nested blocks, and the fields that hold them.
_BLOCKS = {
    ast.If: ("body", "orelse"),
    ast.For: ("body", "orelse"),
    ast.AsyncFor: ("body", "orelse"),
    ast.While: ("body", "orelse"),
    ast.With: ("body",),
    ast.AsyncWith: ("body",),
    ast.Try: ("body", "orelse", "finalbody"),
}


def _returns(body: list[ast.stmt]) -> Iterator[ast.Return]:
    """The `return` statements of a body, not those of nested functions."""
    for stmt in body:
        kind = type(stmt)
        if kind is ast.Return:
            yield stmt  # type: ignore[misc]
        elif kind in _BLOCKS:
            for name in _BLOCKS[kind]:
                yield from _returns(getattr(stmt, name))
            for handler in getattr(stmt, "handlers", ()):
                yield from _returns(handler.body)
        elif kind.__name__ in ("TryStar", "Match"):
            for child in statements([stmt]):
                if isinstance(child, ast.Return):
                    yield child


def _annotated_tuple(annotation: ast.expr | None) -> int | None:
    """`tuple[A, B]` / `Tuple[A, B]` -> 2; `tuple[A, ...]`, unions and anything else -> None."""
    if not isinstance(annotation, ast.Subscript) or dotted(annotation.value).split(".")[-1] not in ("tuple", "Tuple"):
        return None
    inner = annotation.slice
    elts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
    if any(isinstance(e, ast.Constant) and e.value is Ellipsis for e in elts):
        return None
    if len(elts) == 1 and isinstance(elts[0], ast.Tuple) and not elts[0].elts:
        return 0  # tuple[()]
    return len(elts)
