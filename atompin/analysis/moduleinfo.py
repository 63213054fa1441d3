"""What one provider module defines, as plain data (filled by `indexer`).

A `ModuleInfo` is the cacheable unit of the provider index: it depends only on
the file's content, its module name and whether it is a package `__init__`, so
it is stored on disk keyed by those.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from atompin.analysis.arity import CallShape
from atompin.analysis.signature import Signature


class BindingKind(str, Enum):
    DEF = "def"  # a function defined here
    CLASS = "class"  # a class defined here (details in ModuleInfo.classes)
    IMPORT = "import"  # `from m import n` -> target "m:n"
    MODULE = "module"  # `import a.b` (binds "a" -> target "a") or `import a.b as c` -> "a.b"
    VALUE = "value"  # any other assignment; `alias`/`instance_of` say more when they can


@dataclass
class Binding:
    """One top-level name of a module."""

    kind: BindingKind
    line: int
    target: str = ""
    # `X = Y` or `X = m.Y`: the dotted expression on the right, looked up in this module.
    alias: str = ""
    # `X = Cls(...)`: the dotted expression of the class called.
    instance_of: str = ""
    signature: Signature | None = None
    # A def's body, hashed without positions and docstring: changes when its code does.
    digest: str = ""


class MemberKind(str, Enum):
    DEF = "def"
    CLASS = "class"
    VALUE = "value"  # assigned or annotated in the class body
    INSTANCE = "instance"  # assigned as self.x in a method


@dataclass
class Member:
    kind: MemberKind
    line: int
    signature: Signature | None = None
    digest: str = ""  # as Binding.digest
    # A value bound once, at the top of the class body, to a constant (`supports_x = False`) and
    # never set on the instance by the class's methods: whether it is true; None for any other.
    truth: bool | None = None
    # The class its annotation names, as written in the class's module ("VllmConfig", "c.Config";
    # `X | None` and `Optional[X]` as X): `x: VllmConfig` in the class body, `self.x: T = ...`, or
    # `self.x = p` where the method's parameter `p` is so annotated. "" when unknown.
    annotation: str = ""


@dataclass
class SelfCall:
    """A call a method makes on its own instance or class: what a subclass's override must take."""

    name: str  # the method called; "__init__" for a rebuild
    receiver: str  # "self" (self.m / cls.m), "super" (super().m), "rebuild" (self.__class__(...), type(self)(...), cls(...))
    method: str  # the method the call is in
    line: int
    shape: CallShape
    # Parameters of `method` that are None wherever the call runs (`nullness.known_none`).
    none_params: tuple[str, ...] = ()


@dataclass
class ClassInfo:
    qualname: str
    line: int
    # Base class expressions as written (subscripts stripped), looked up in the module.
    bases: tuple[str, ...] = ()
    members: dict[str, Member] = field(default_factory=dict)
    # A class-level __getattr__ serves any name: members are then unknown, not missing.
    has_getattr: bool = False
    # Its members are not all written where they are read from: a base written as an expression
    # (`namedtuple(...)`, `A if c else B`).
    opaque: bool = False
    # Its methods set attributes by computed names (`setattr(self, k, v)`, `self.__dict__.update(...)`):
    # any name the provider writes as a string or passes as a keyword may be one.
    sets_computed: bool = False
    # Decorator names (a @dataclass writes its own __init__).
    decorators: tuple[str, ...] = ()
    # A standard-library `@dataclass`'s own fields, in order: "name", "name=" (has a default),
    # "*name" (keyword-only), "!name" (a ClassVar or `init=False`: no parameter, but it takes an
    # inherited field's place). None when it is no such dataclass or its fields cannot be read for
    # sure (`indexer.dataclass_fields`).
    fields: tuple[str, ...] | None = None
    # A `typing.NamedTuple` class: `fields` are its own ("name", "name="), the parameters of the
    # `__new__` it gets (`indexer.namedtuple_fields`).
    namedtuple: bool = False
    self_calls: list[SelfCall] = field(default_factory=list)


@dataclass
class ModuleInfo:
    name: str
    is_package: bool
    bindings: dict[str, Binding] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    # None when there is no __all__ or it is not a literal we can evaluate.
    all_names: tuple[str, ...] | None = None
    star_imports: tuple[str, ...] = ()
    # Line of a module-level __getattr__ (0: none). It can serve any name.
    getattr_line: int = 0
    # Literal lazy-export table used by __getattr__: name -> "module" or "module:attr".
    lazy_exports: dict[str, str] = field(default_factory=dict)
    # The module-level dict literals whose keys alone __getattr__ serves (`lazy_tables.served_names`),
    # each bound once, with string keys only, and never changed in this module; their keys are in
    # `dict_keys`. Empty: it may serve any name.
    getattr_tables: tuple[str, ...] = ()
    # The names __getattr__ serves by literal tests (`if name == "current_platform":`), beside those
    # tables; `getattr_tables` and `getattr_names` both empty: it may serve any name.
    getattr_names: tuple[str, ...] = ()
    # Submodules served by an import finder the package puts on sys.meta_path: name -> module.
    module_aliases: dict[str, str] = field(default_factory=dict)
    # Module-level dict literals: their string keys (registries such as vLLM's model tables).
    dict_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Module-level literal collections of strings (tuples, lists, sets, frozenset(...)).
    str_collections: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Names an `if TYPE_CHECKING:` block at the top level imports, for annotations only (they are
    # never bound at run time): name -> "module:attr", or "module" for `import pkg.mod as m`.
    type_only: dict[str, str] = field(default_factory=dict)
    # Non-empty when the file does not parse: everything behind it is unknown.
    error: str = ""
