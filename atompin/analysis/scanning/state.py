"""The interpreter's state: the file being read, the context of a block, and functions to read.

A `Ctx` is immutable: a try, an `if hasattr(...)`, a ladder alternative or an
unrolled loop reads its block with an `evolve`d copy, so a guard ends where its
block does, however deeply they nest. What the scan has learnt so far lives on
`ConsumerScanner` itself (its `__post_init__` says what each part holds).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from atompin.analysis.flag_tests import Clauses
from atompin.analysis.usage import Condition, ConditionKind, ImportGroup, ImportUse, Ref
from atompin.analysis.values import Scope, Value
from atompin.model import Site

MAX_DEPTH = 4  # nested helper calls followed with bound arguments


def present_conditions(guards: Iterable[tuple[tuple[Ref, ...], str]], site: Site) -> tuple[Condition, ...]:
    """What `hasattr(owner, name)` guards say of code under them: it runs only where each holds
    (dead where the provider lacks the name)."""
    return tuple(
        Condition(ConditionKind.ATTR_PRESENT, site, f"hasattr({owner[0].dotted}, {attr!r})", refs=owner, attr=attr)
        for owner, attr in sorted(guards, key=repr)
    )


@dataclass(frozen=True)
class SourceFile:
    """A consumer source file and the module it is."""

    path: str
    module: str
    is_package: bool


@dataclass(frozen=True)
class Ctx:
    """Where a statement is read: its file, scope and function, and what guards it.

    Immutable: a try, an `if hasattr(...)`, a ladder alternative or an unrolled
    loop reads its block with a `replace`d copy, so a guard ends where its block
    does, however deeply they nest.
    """

    file: SourceFile
    scope: Scope
    function: str = ""
    try_guard: bool = False
    hasattr_guards: frozenset[tuple[tuple[Ref, ...], str]] = frozenset()
    collector: list[ImportUse] | None = None  # the ladder alternative being filled
    ladder: ImportGroup | None = None
    in_handler: bool = False
    loop_group: str = ""
    via: tuple[Site, ...] = ()
    depth: int = 0
    # False while reading a helper module only for its definitions.
    record: bool = True
    # What must hold for this block to run (version gates, hasattr's other branch, try handlers).
    when: tuple[Condition, ...] = ()
    # What the handler of an enclosing try does with a TypeError ("": not caught), and that try.
    type_error_handler: str = ""
    type_error_try: str = ""
    # In a handler that catches TypeError: the try ("path:line") it falls back from.
    type_error_fallback: str = ""
    # While a helper's return value is evaluated (a version gate helper): each value it returns,
    # with the conditions that return sits under.
    returns: list[tuple[object, tuple[Condition, ...]]] | None = None
    # Which side of a plain `if`/`else` this is ("path:line#0" the body, "#1" the else; "" elsewhere).
    branch: str = ""
    # The consumer class whose method this is (dotted; "" elsewhere): what `super()` means.
    owner: str = ""
    # In the body of a try that catches ImportError: that try ("path:line"; "" elsewhere), and the
    # first of its handlers that does.
    catching_import: str = ""
    import_handler: ast.ExceptHandler | None = None
    # In a function read again for a call (and in what it defines): the values bound, as text.
    bound: tuple[tuple[str, str], ...] = ()
    # Inside an `if`, a try, a loop or a `match`: what the block does may not happen.
    nested: bool = False
    # The definition whose body this is (None at module level): its `global` names are not its own.
    definition: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    # What holds of the consumer's own flags here (`if _use_aiter:` and the like: `flag_tests`).
    flags: Clauses = ()


def evolve(ctx: Ctx, **changes: object) -> Ctx:
    """`dataclasses.replace` for the context, without its checks: made once per block and per
    expression read, where `replace` alone cost a tenth of a scan."""
    new = object.__new__(Ctx)
    new.__dict__.update(ctx.__dict__)
    new.__dict__.update(changes)
    return new


@dataclass
class ConsumerFunction:
    """A consumer function (or method) definition, with the scope it closes over."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    file: SourceFile
    qualname: str
    closure: Scope
    muted: bool = False  # defined in a helper module outside the scanned package
    owner: str = ""  # the consumer class (dotted) when this is a method defined in its body
    # What must hold for the definition to run (a version gate's branch, an ImportError
    # handler): the body runs only where it did.
    when: tuple[Condition, ...] = ()
    # The `hasattr` tests whose branch it is defined in (it is made only where they hold).
    guards: frozenset[tuple[tuple[Ref, ...], str]] = frozenset()
    # Defined in a function read again for a call: the values that read bound (a nested wrapper
    # closes over them: `orig = cls.method` of the class the call passed), as in `Ctx.bound`.
    outer: tuple[tuple[str, str], ...] = ()

    @property
    def dotted(self) -> str:
        """The dotted name it is defined under ("plug.mod.f", "plug.mod.Cls.m")."""
        return f"{self.file.module}.{self.qualname}"

    def made_when(self) -> tuple[Condition, ...]:
        """What must hold for the definition to be made: `when`, and its `hasattr` guards."""
        return (*self.when, *present_conditions(self.guards, Site(self.file.path, self.node.lineno)))

    @property
    def params(self) -> list[str]:
        a = self.node.args
        return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


@dataclass
class Rescan:
    """A function body to read (again), with the values a call site binds to its parameters."""

    function: ConsumerFunction
    binding: dict[str, Value]
    via: tuple[Site, ...]
    depth: int
    # Read for one call's values: what held at that call (the values reach the body only there).
    when: tuple[Condition, ...] = ()
