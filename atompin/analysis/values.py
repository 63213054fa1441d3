"""The abstract values of the consumer scanner, and the scopes that bind names to them.

The scanner does not run the consumer's code; it evaluates each expression to
the little it needs to know: which provider object it is (`ProviderValue`),
which of the consumer's own functions or modules (`ConsumerValue`), the
signature of a lambda, or a literal string, tuple or dict it can unroll.
Anything else is None: not followed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeAlias

from atompin.analysis.flag_tests import Clauses
from atompin.analysis.gates import (
    Gate,
    ProviderVersion,
    SpecifierContains,
    VersionLiteral,
    VersionMethod,
    VersionSpecifier,
)
from atompin.analysis.platforms import PlatformTest
from atompin.analysis.signature import Signature
from atompin.analysis.usage import Guard, MethodRef, Receiver, Ref
from atompin.model import Site


@dataclass(frozen=True)
class ProviderValue:
    """A provider object, reached by one of `choices` (ladder alternatives, first wins)."""

    choices: tuple[Ref, ...]
    guard: Guard = Guard.NONE  # obtained through getattr(..., default)
    # `getattr(X, "n", None)`: None where X lacks n, so `is None` tests for that.
    none_default: bool = False
    # Bound so by one branch of an `if` on the consumer's own state and to another object by the
    # other (`if _use_aiter: from aiter import f` / `else: from vllm import f`): a call may get
    # the other one. What holds of the consumer's flags where it is bound so (`bound_when`) and
    # where the other objects are (`other_when`; `flag_tests`): a call where the flags rule one
    # side out gets the other.
    mixed: bool = False
    bound_when: Clauses = ()
    other_when: tuple[Clauses, ...] = ()
    # A copy of a module's names (`SimpleNamespace(**m.__dict__)`): what is set on it reaches
    # only what imports from the copy, not the module's own code.
    copy: bool = False

    def attr(self, name: str) -> ProviderValue:
        return ProviderValue(tuple(r.attr(name) for r in self.choices), self.guard, mixed=self.mixed)


@dataclass(frozen=True)
class ConsumerValue:
    """A consumer object by dotted name (a function or module of the consumer's own)."""

    dotted: str


@dataclass(frozen=True)
class LambdaValue:
    """A lambda, by its signature: what a patch that assigns it replaces a function with."""

    signature: Signature


@dataclass(frozen=True)
class DictMethod:
    """`table.items`, `table.keys`, `table.values` or `table.update` of a literal dict, before it
    is called.

    Kept so that `for name, fn in TABLE.items():` unrolls like a loop over a literal tuple, with
    what `TABLE.update(...)` (and `TABLE["key"] = value`) added before.
    """

    method: str  # "items", "keys", "values" or "update"
    table: dict[str, Value]

    def call(self, args: Sequence[Value] = (), kwargs: Mapping[str, Value] | None = None) -> Value:
        """What calling the method yields, as a literal tuple; `update` adds the literal dicts
        and keywords it is passed to the table (in place, as Python does) and yields None."""
        if self.method == "update":
            for arg in args:
                if isinstance(arg, dict):
                    self.table.update(arg)
            self.table.update(kwargs or {})
            return None
        if self.method == "items":
            return tuple(self.table.items())
        return tuple(self.table.keys() if self.method == "keys" else self.table.values())


@dataclass(frozen=True)
class StringMethod:
    """`text.rpartition` (or partition, rsplit, split) of a literal string, before it is called: how a dotted
    path in a loop over literal targets is split into a module and an attribute."""

    text: str
    method: str

    def call(self, args: tuple[object, ...]) -> tuple[str, ...] | None:
        sep = args[0] if args else None
        if not isinstance(sep, str) or not sep:
            return None
        if self.method in ("partition", "rpartition"):
            return getattr(self.text, self.method)(sep)  # type: ignore[no-any-return]
        if self.method in ("split", "rsplit"):
            limit = args[1] if len(args) > 1 and isinstance(args[1], int) else -1
            return tuple(getattr(self.text, self.method)(sep, limit))
        return None


@dataclass(frozen=True)
class ReceiverValue:
    """`self` or `cls` in a method of a consumer class, `super()` there, or an instance of a
    provider class (a parameter or attribute annotated with it): what its methods are called on."""

    receiver: Receiver
    owner: str = ""  # the consumer class, dotted
    choices: tuple[Ref, ...] = ()  # the provider class, for INSTANCE
    # SELF for an object typed as an instance of `owner` that is not the method's own `self` (an
    # annotated parameter, a cast, an instance the consumer makes): what is set on it is set from
    # outside its class.
    other: bool = False
    param: str = ""  # PARAM: "method:parameter" of class `owner` (`MethodRef.param`)

    def method(self, name: str) -> MethodValue:
        return MethodValue(MethodRef(self.receiver, name, self.owner, self.choices, other=self.other, param=self.param))


@dataclass(frozen=True)
class MethodValue:
    """A method reached through a receiver, before it is called."""

    ref: MethodRef


@dataclass(frozen=True)
class MemberChain:
    """What an attribute of a receiver's attribute holds (`self.vllm_config.model_config`): `ref`
    names it, its `via` the attributes on the way. Read further, or called (a method call the
    checks judge where the provider's classes say what each attribute on the way holds); passed
    on, it is unknown."""

    ref: MethodRef


@dataclass(frozen=True)
class ModuleProbe:
    """`importlib.util.find_spec("pkg.mod")`, or that `is not None`: true exactly when the provider
    has module `ref` (false when `present` is False: `... is None`, `not ...`). Decided at each
    provider, as a version gate is at each version."""

    ref: Ref
    present: bool = True

    def negated(self) -> ModuleProbe:
        return ModuleProbe(self.ref, not self.present)


@dataclass(frozen=True)
class SignatureOf:
    """`inspect.signature(f)` of a provider callable (its symbol's choices), or that signature's
    `.parameters` (`parameters`)."""

    choices: tuple[Ref, ...]
    parameters: bool = False


@dataclass(frozen=True)
class ParameterProbe:
    """`"name" in inspect.signature(f).parameters` of a provider callable: true exactly when it
    takes a parameter `name` (false when `present` is False: `not in`, `not ...`). Decided at each
    provider, as a version gate is at each version (vllm-tgis-adapter's `_has_argument(
    self.engine.get_tokenizer, "lora_request")` picks the call for vLLM before 0.11). With `also`
    (`{"a", "b"}.issubset(...parameters)`): true when it takes every one of the names."""

    choices: tuple[Ref, ...]
    name: str
    present: bool = True
    also: tuple[str, ...] = ()

    def negated(self) -> ParameterProbe:
        return ParameterProbe(self.choices, self.name, not self.present, self.also)


@dataclass(frozen=True)
class AttributeProbe:
    """`hasattr(X, "n")` of a provider object, or `all(hasattr(X, n) for n in ("a", "b"))`: true
    exactly when the provider's X has every one of `names` (false when `present` is False: `not ...`).
    Kept in a name (`uses_new_api = hasattr(...)`), it guards the branches of `if uses_new_api:`
    as the call written in the test would."""

    owner: tuple[Ref, ...]
    names: tuple[str, ...]
    present: bool = True
    # `getattr(X, "n", None) is None`: what it read is guarded by its default already, so only
    # the other branch (where X lacks n) is told apart.
    by_default: bool = False
    # `isinstance(getattr(X, "n", None), type)`, or the probe in an `and` of other tests: it holds
    # only where X has n, but may fail where X has it too, so the other branch is no fallback.
    partial: bool = False

    def negated(self) -> AttributeProbe:
        return replace(self, present=not self.present)


@dataclass(frozen=True)
class NameChoice:
    """One of several strings, whichever a loop that breaks picked (`for name in ("a", "b"): if
    hasattr(X, name): chosen = name; break`): attribute or module names that differ across the
    provider's releases, the loop at `group` ("path:line") taking the first one there. Used as a
    getattr/setattr name or an `import_module` name, it is any one of them."""

    names: tuple[str, ...]
    group: str


@dataclass(frozen=True)
class TypingCast:
    """`cast` imported from `typing`: `cast(T, x)` is `x` at run time (`processor = cast(Any, self)`
    still calls the methods of `self`)."""


@dataclass(frozen=True)
class ElementsOf:
    """A collection of instances of a provider class: a parameter annotated `list[C]`,
    `Sequence[C]`, `tuple[C, ...]` and the like. A `for` loop over it binds instances of C, and an
    item of it (`outputs[0]`) is one. `view`: for a mapping whose values are instances of C
    (`dict[str, C]`), "mapping" (a loop over it binds keys; an item, `.get(k)` and what
    `.values()` holds are instances) or "items" (`.items()`: a key and an instance each)."""

    choices: tuple[Ref, ...]
    view: str = ""


@dataclass(frozen=True)
class MappingMethod:
    """`values`, `items` or `get` of a mapping of provider instances (`ElementsOf` with a view),
    before it is called."""

    method: str
    of: ElementsOf

    def call(self, args: Sequence[Value] = (), kwargs: Mapping[str, Value] | None = None) -> Value:
        """What calling it yields: the instances (`values`), the pairs (`items`), one (`get`, its
        default aside)."""
        if self.method == "get":
            return ReceiverValue(Receiver.INSTANCE, choices=self.of.choices)
        return ElementsOf(self.of.choices, "items" if self.method == "items" else "")


@dataclass(frozen=True)
class DataclassDecorator:
    """`dataclass` imported from `dataclasses`: a class under it gets the `__init__` its fields
    make (`dataclass_init`)."""


@dataclass(frozen=True)
class DataclassReplace:
    """`replace` imported from `dataclasses`: `replace(obj, name=value)` makes another object of
    `obj`'s class, its `__init__` given every field (`ConsumerScanner._dataclass_replace`)."""


@dataclass(frozen=True)
class BuiltNamespace:
    """A namespace the consumer builds (`argparse.Namespace(**vars(x), k=v)`, a `SimpleNamespace`):
    the provider classes whose instance's attributes it copies, the names set besides, and where
    it is made (`usage.NamespaceArgument`)."""

    copies: tuple[Ref, ...]
    names: frozenset[str]
    site: Site

    def with_name(self, name: str) -> BuiltNamespace:
        return replace(self, names=self.names | {name})


# What an expression evaluates to; literal tuples and dicts hold values in turn.
Value: TypeAlias = (
    ProviderValue
    | ConsumerValue
    | LambdaValue
    | DictMethod
    | StringMethod
    | ReceiverValue
    | MethodValue
    | MemberChain
    | ModuleProbe
    | AttributeProbe
    | SignatureOf
    | ParameterProbe
    | NameChoice
    | TypingCast
    | DataclassDecorator
    | DataclassReplace
    | ElementsOf
    | MappingMethod
    | BuiltNamespace
    | str
    | bool  # a literal flag a helper is read with (`return_version=True`)
    | tuple["Value", ...]
    | dict[str, "Value"]
    | None
    # The provider's version and tests of it (see `gates`).
    | ProviderVersion
    | VersionLiteral
    | VersionMethod
    | VersionSpecifier
    | SpecifierContains
    | Gate
    | PlatformTest  # a test of the platform the code runs on (see `platforms`)
)


class Scope:
    """The names bound in one module, class or function body, over the scope it is nested in."""

    def __init__(self, parent: Scope | None = None) -> None:
        self.names: dict[str, Value] = {}
        self.parent = parent
        self.imported: set[str] = set()  # names last bound by an import statement (`from m import f`)
        # Names only an `if TYPE_CHECKING:` import binds: annotations name them, nothing else can.
        self.type_only: dict[str, Value] = {}
        # Parameters a helper is read without whose default is `None`: known None until bound again.
        self.none_defaults: set[str] = set()

    def is_imported(self, name: str) -> bool:
        """Is the innermost binding of `name` an import statement's?"""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return name in scope.imported
            scope = scope.parent
        return False

    def lookup_type(self, name: str) -> Value:
        """What `name` is in an annotation: what an `if TYPE_CHECKING:` import binds it to (what
        type checkers read, also where the `else:` binds a stand-in, `VllmConfig = None`), or its
        innermost binding."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.type_only:
                return scope.type_only[name]
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None

    def lookup(self, name: str) -> Value:
        """The innermost binding of `name`; None when it is bound to nothing we follow, or not at all."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None
