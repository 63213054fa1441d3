"""Function signatures as data, read from the AST (never from a live object)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from enum import Enum

from atompin.analysis.syntax import dotted


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
        params.append(Param(arg.arg, kind, i >= first_default))
    if a.vararg:
        params.append(Param(a.vararg.arg, ParamKind.VAR_POSITIONAL))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        params.append(Param(arg.arg, ParamKind.KEYWORD_ONLY, default is not None))
    if a.kwarg:
        params.append(Param(a.kwarg.arg, ParamKind.VAR_KEYWORD))
    if isinstance(node, ast.Lambda):
        return Signature(tuple(params))
    decorators = tuple(d for d in (decorator_name(x) for x in node.decorator_list) if d)
    return Signature(tuple(params), decorators, isinstance(node, ast.AsyncFunctionDef))
