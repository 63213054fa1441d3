"""The consumer-side visitor: a small abstract interpreter over the consumer's AST.

It follows names bound to provider objects (imports, aliases, `getattr`,
`importlib.import_module`, loop variables over literal name lists, arguments
passed to the consumer's own helpers, across files) and records every import,
attribute chain and patch that reaches the provider package, with the guard
that decides what happens when the target is gone. Pure: source text in,
`ConsumerUsage` out; nothing is imported or executed.

`ConsumerScanner.scan` is the entry point. Each statement is read by its
`_visit_<class name>` method and each expression evaluated by its
`_eval_<class name>` method, to an abstract value (`values`); what a
try/except or an `if hasattr(...)` means is decided in `guards`.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, TypeGuard

from atompin.analysis import gates
from atompin.analysis.arity import CallShape
from atompin.analysis.dataclass_init import PLAIN_CLASS_DECORATORS, writes_init
from atompin.analysis.discovery import import_path_targets, lists_own_folder, walks_own_path
from atompin.analysis.flag_tests import Clauses, branch_clauses, excludes
from atompin.analysis.gates import (
    Gate,
    GateOp,
    ProviderVersion,
    SpecifierContains,
    VersionForm,
    VersionLiteral,
    VersionMethod,
    VersionSpecifier,
    version_slice,
)
from atompin.analysis.guards import (
    body_imports,
    catches_attribute_error,
    catches_import_error,
    catches_only_import_errors,
    catches_only_version_errors,
    catches_only_version_errors_or_absence,
    catches_type_error,
    describe_fallback,
    exits,
    feature_test,
    hasattr_tests,
    imports_only_the_package,
    imports_package,
    leaves,
    returns_instead,
    suppressing_try,
    type_error_handling,
)
from atompin.analysis.indexer import dataclass_fields
from atompin.analysis.keyword_tables import keyword_adds, keyword_variants, passed_on_unchanged
from atompin.analysis.limits import TOO_DEEP, parse_limited
from atompin.analysis.names import absolute_module, in_package, writes_as_string
from atompin.analysis.nullness import known_none
from atompin.analysis.output_buffers import output_names, unwritten_returns
from atompin.analysis.prose import ProseFinder, ProseReader
from atompin.analysis.relevant import names_the_provider
from atompin.analysis.signature import Signature, signature_of
from atompin.analysis.syntax import (
    FALSE_CONSTANT,
    annotated_type,
    breaks,
    class_body_names,
    does_nothing,
    dotted,
    element_type,
    expr_children,
    function_body,
    gives_value,
    init_hands_on,
    instance_assignments,
    is_type_checking,
    literal_strings,
    mapped_type,
    only_raises,
    sets_locals_only,
    shared_names,
    statements,
    target_names,
    walk_shallow,
)
from atompin.analysis.syntax import walk as every_node
from atompin.analysis.usage import (
    AttributeUse,
    CallUse,
    ClassBase,
    Condition,
    ConditionKind,
    ConsumerClass,
    ConsumerMethod,
    ConsumerUsage,
    ContactSurface,
    Guard,
    Handover,
    HandoverKind,
    ImportGroup,
    ImportKind,
    ImportUse,
    MemberUse,
    MethodCall,
    MethodRef,
    ModuleEdge,
    ModuleStop,
    OutsideStore,
    PatchSite,
    Read,
    ReadKind,
    Receiver,
    Ref,
    Registration,
    Replacement,
    ReplacementVariant,
    Requirement,
    Stored,
    SuperCall,
    Unpack,
    UnwrittenReturn,
    VersionAssert,
)
from atompin.analysis.values import (
    AttributeProbe,
    ConsumerValue,
    DataclassDecorator,
    DataclassReplace,
    DictMethod,
    ElementsOf,
    LambdaValue,
    MappingMethod,
    MemberChain,
    MethodValue,
    ModuleProbe,
    NameChoice,
    ParameterProbe,
    ProviderValue,
    ReceiverValue,
    Scope,
    SignatureOf,
    StringMethod,
    TypingCast,
    Value,
)
from atompin.lines import line_numbers
from atompin.model import Site

# A replacement's return leaving output buffers unwritten: its site, the buffers, and the line
# and side of each `if` it sits in.
_RawReturn = tuple[Site, tuple[str, ...], tuple[tuple[int, bool], ...]]
# Bounds that keep the interpreter finite on any input.
_MAX_UNROLL = 64  # elements of a literal loop that are unrolled
_MAX_DEPTH = 4  # nested helper calls followed with bound arguments
_MAX_RESCANS = 4000  # helper bodies re-read with bound arguments, in all
# Of them, those read again only for a receiver's members (`helper(self.config)`), instances or
# override parameters, counted apart: common in model code, they must not use up what provider
# objects handed to helpers need.
_MAX_MEMBER_RESCANS = 20000

# Modules whose functions read or parse versions: an alias of one is read as its name.
_ALIASED_READERS = frozenset({"importlib.metadata", "importlib_metadata", "packaging.version"})
# A dotted module name (maybe relative), and a Python file's name.
_DOTTED = re.compile(r"\.*[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
# A module path's literal start in an f-string ("pkg.models.") and its later literal parts
# (".", ":", "_impl", ".Cls").
_MODULE_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\.")
_MODULE_PATH_PART = re.compile(r"[A-Za-z0-9_.:]*")
_FILE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.py")
_TYPING = ("typing", "typing_extensions")


def _type_only_value(node: ast.Name | ast.Attribute, scope: Scope) -> Value:
    """`C` or `m.C` in an annotation, through names only `if TYPE_CHECKING:` imports bind."""
    parts = dotted(node).split(".")
    value = scope.lookup_type(parts[0])
    for part in parts[1:]:
        value = value.attr(part) if isinstance(value, ProviderValue) else None
    return value


def _signature_of(value: Value) -> SignatureOf | None:
    """`inspect.signature(f)` of a provider function, or of a method through an instance of a
    provider class (`self.engine.get_tokenizer`, `self.engine` annotated `EngineClient`)."""
    if isinstance(value, ProviderValue):
        return SignatureOf(value.choices)
    if isinstance(value, MethodValue) and value.ref.receiver is Receiver.INSTANCE and value.ref.choices:
        if not value.ref.via:
            return SignatureOf(tuple(choice.attr(value.ref.name) for choice in value.ref.choices))
    return None


def _helper_argument(value: Value) -> bool:
    """Is `value` an argument a helper is evaluated with (for the version gate or feature test it
    returns)? A literal, nothing known, a provider callable a signature test is about, or what
    `getattr(X, "n", None)` read (a class test of it is a test of whether X has n)."""
    if isinstance(value, ProviderValue) and value.none_default:
        return True
    return value is None or isinstance(value, (str, bool)) or _signature_of(value) is not None


def _present(guards: Iterable[tuple[tuple[Ref, ...], str]], site: Site) -> tuple[Condition, ...]:
    """What `hasattr(owner, name)` guards say of code under them: it runs only where each holds
    (dead where the provider lacks the name)."""
    return tuple(
        Condition(ConditionKind.ATTR_PRESENT, site, f"hasattr({owner[0].dotted}, {attr!r})", refs=owner, attr=attr)
        for owner, attr in sorted(guards, key=repr)
    )


def _parameters_probe(names: ast.expr, args: list[Value], kwargs: list[ast.keyword]) -> ParameterProbe | None:
    """`{"a", "b"}.issubset(inspect.signature(f).parameters)`: whether provider callable `f` takes
    every one of the names written; None for any other `issubset`."""
    if len(args) != 1 or kwargs or not isinstance(names, (ast.Set, ast.List, ast.Tuple)) or not names.elts:
        return None
    words = [e.value for e in names.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    params = args[0]
    if len(words) != len(names.elts) or not isinstance(params, SignatureOf) or not params.parameters:
        return None
    first, *more = dict.fromkeys(words)
    return ParameterProbe(params.choices, first, also=tuple(more))


def _class_test(name: str, node: ast.Call, value: Value) -> AttributeProbe | None:
    """`isinstance(getattr(X, "n", None), type)` or `callable(getattr(X, "n", None))`: true only
    where X has n (ModelOpt registers vLLM's `FusedMoE` only where it is still a class)."""
    if not (isinstance(value, ProviderValue) and value.none_default):
        return None
    if name == "isinstance" and not (len(node.args) == 2 and dotted(node.args[1]) == "type"):
        return None
    owned = _owner_and_name(value)
    return AttributeProbe(owned[0], (owned[1],), partial=True) if owned is not None else None


def _literal_flags(node: ast.Call, args: list[Value], kwargs: dict[str, Value]) -> tuple[list[Value], dict[str, Value]]:
    """A helper call's arguments with a literal `True` or `False` kept as it is (evaluated, it is
    nothing known): the flag decides which answer the helper gives (transformers-style
    `_is_package_available("vllm", return_version=True)` answers a pair only then)."""

    def kept(arg: ast.expr, value: Value) -> Value:
        return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, bool) else value

    flags = [kept(a, v) for a, v in zip(node.args, args)]  # one value per written argument
    flagged = {k.arg: kept(k.value, kwargs[k.arg]) for k in node.keywords if k.arg in kwargs}
    return flags, flagged


def _passed_through(name: str, callee: Value, args: list[Value]) -> int | None:
    """Which argument a call gives back as it is: `classmethod(f)`, `staticmethod(f)`, and
    `typing.cast(T, x)` (`processor = cast(Any, self)` still calls the methods of `self`)."""
    if name in ("classmethod", "staticmethod") and args:
        return 0
    typing_cast = isinstance(callee, TypingCast) or (
        callee is None and name.partition(".")[0] in _TYPING and name.endswith(".cast")
    )
    return 1 if typing_cast and len(args) == 2 else None


def _sets_own_members(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A loop over a class's own members that sets each on something: `for name, attr in
    cls.__dict__.items(): ... setattr(target, name, attr)` (or `vars(cls).items()`)."""
    for loop in every_node(function):
        if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Tuple) and len(loop.target.elts) == 2):
            continue
        items = loop.iter
        if not (isinstance(items, ast.Call) and isinstance(items.func, ast.Attribute) and items.func.attr == "items"):
            continue
        of = items.func.value
        own = (isinstance(of, ast.Attribute) and of.attr == "__dict__") or (
            isinstance(of, ast.Call) and dotted(of.func) == "vars"
        )
        name = loop.target.elts[0]
        if own and isinstance(name, ast.Name):
            for call in every_node(loop):
                if (
                    isinstance(call, ast.Call)
                    and dotted(call.func) == "setattr"
                    and len(call.args) == 3
                    and isinstance(call.args[1], ast.Name)
                    and call.args[1].id == name.id
                ):
                    return True
    return False


def _none_test_of_string(node: ast.expr, ctx: _Ctx) -> Gate | None:
    """`x is None` / `x is not None` where name x holds a string the scan knows: its truth, as a
    gate fixed at every version; None for anything else."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot))):
        return None
    left, right = node.left, node.comparators[0]
    if isinstance(left, ast.Constant) and left.value is None:
        left, right = right, left
    if not (isinstance(right, ast.Constant) and right.value is None and isinstance(left, ast.Name)):
        return None
    if left.id in ctx.scope.none_defaults:  # a helper's `min_version=None`, not passed
        return Gate(GateOp.FIXED, _text(node), compare=str(isinstance(node.ops[0], ast.Is)))
    if not isinstance(ctx.scope.lookup(left.id), str):
        return None
    return Gate(GateOp.FIXED, _text(node), compare=str(isinstance(node.ops[0], ast.IsNot)))


def _super_call(method: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call) -> SuperCall:
    """`super().m(...)` in `method`, with the arguments that are its parameters known not None there."""
    names = {k.name for k in known_none(method, [call.lineno]) if not k.none}
    if not names:
        return SuperCall(call.lineno)
    positions = tuple(i for i, a in enumerate(call.args) if isinstance(a, ast.Name) and a.id in names)
    keywords = tuple(k.arg for k in call.keywords if k.arg and isinstance(k.value, ast.Name) and k.value.id in names)
    return SuperCall(call.lineno, positions, keywords)


def _end_line(node: ast.stmt) -> int:
    return node.end_lineno if node.end_lineno is not None else node.lineno


def _names_module(value: object) -> TypeGuard[str]:
    """Is `value` a string that reads as an absolute dotted module name ("pkg.mod")?"""
    return isinstance(value, str) and "." in value and _DOTTED.fullmatch(value) is not None and value[0] != "."


# The first argument of `patch(` / `mock.patch(` / `monkeypatch.setattr(`: a test double's target.
_MOCK_TARGET = re.compile(rb"(?:\bpatch|\bsetattr)\s*\(\s*$")

# -- the interpreter's state ----------------------------------------------------


@dataclass(frozen=True)
class _File:
    """A consumer source file and the module it is."""

    path: str
    module: str
    is_package: bool


@dataclass(frozen=True)
class _Ctx:
    """Where a statement is read: its file, scope and function, and what guards it.

    Immutable: a try, an `if hasattr(...)`, a ladder alternative or an unrolled
    loop reads its block with a `replace`d copy, so a guard ends where its block
    does, however deeply they nest.
    """

    file: _File
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


def _evolve(ctx: _Ctx, **changes: object) -> _Ctx:
    """`dataclasses.replace` for the context, without its checks: made once per block and per
    expression read, where `replace` alone cost a tenth of a scan."""
    new = object.__new__(_Ctx)
    new.__dict__.update(ctx.__dict__)
    new.__dict__.update(changes)
    return new


@dataclass
class _Function:
    """A consumer function (or method) definition, with the scope it closes over."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    file: _File
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
    # closes over them: `orig = cls.method` of the class the call passed), as in `_Ctx.bound`.
    outer: tuple[tuple[str, str], ...] = ()

    @property
    def dotted(self) -> str:
        """The dotted name it is defined under ("plug.mod.f", "plug.mod.Cls.m")."""
        return f"{self.file.module}.{self.qualname}"

    def made_when(self) -> tuple[Condition, ...]:
        """What must hold for the definition to be made: `when`, and its `hasattr` guards."""
        return (*self.when, *_present(self.guards, Site(self.file.path, self.node.lineno)))

    @property
    def params(self) -> list[str]:
        a = self.node.args
        return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


@dataclass
class _Rescan:
    """A function body to read (again), with the values a call site binds to its parameters."""

    function: _Function
    binding: dict[str, Value]
    via: tuple[Site, ...]
    depth: int
    # Read for one call's values: what held at that call (the values reach the body only there).
    when: tuple[Condition, ...] = ()


# -- the scanner ---------------------------------------------------------------


# Loads a consumer module outside the scanned files: name -> (path, is_package, source).
ModuleLoader = Callable[[str], "tuple[str, bool, bytes] | None"]


# How many re-exports deep a consumer function is followed (a package re-exporting a
# subpackage's re-export is two).
_REEXPORT_DEPTH = 5


@dataclass
class ConsumerScanner:
    """Scan a consumer's files for what they use of `provider_package`.

    `consumer_packages` are the consumer's own top-level packages: calls into
    their helpers are followed, loading helper modules through `load_module`
    when they are outside the scanned files.
    """

    provider_package: str
    consumer_packages: tuple[str, ...] = ()
    load_module: ModuleLoader | None = None
    usage: ConsumerUsage = field(init=False)

    def __post_init__(self) -> None:
        self.usage = ConsumerUsage(self.provider_package)
        self._functions: dict[str, _Function] = {}
        self._modules: set[str] = set()
        self._queue: deque[_Rescan] = deque()
        self._seen_calls: set[
            tuple[int, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...], tuple[Condition, ...]]
        ] = set()
        self._rescans = 0
        self._member_rescans = 0
        # By function node: the `**` parameter it hands on unchanged, or None (`_forwarded_keywords`).
        self._kwargs_handed_on: dict[int, str | None] = {}
        self._reads: set[Read] = set()
        self._pending: list[tuple[ConsumerValue, ast.Call, list[Value], dict[str, Value], _Ctx]] | None = None
        # Module bodies parsed and not read yet: a version gate helper's module is read on first need.
        self._unread: dict[str, tuple[_File, ast.Module]] = {}
        self._helper_values: dict[tuple[str, str], Value] = {}
        self._trees: dict[str, ast.Module] = {}  # every consumer module parsed, by name
        self._registries: dict[str, bool] = {}
        self._version_helpers: dict[int, bool] = {}  # id of a function node -> could it compute a gate
        self._signature_readers: dict[int, bool] = {}  # id of a function node -> reads a signature's parameters
        # (class dotted name, attribute) -> the gate under which __init__ resets `self.attribute`.
        self._state_gates: dict[tuple[str, str], tuple[str, Gate]] = {}
        self._scopes: dict[str, Scope] = {}
        self._private_names: dict[str, dict[str, tuple[list[ast.Call], int]]] = {}  # see `_private_calls`
        self._named_elsewhere: dict[tuple[str, str], bool] = {}  # see `_version_params`
        # What held where each consumer function was called, by function and call site (`_called_when`).
        self._call_sites: dict[str, dict[str, tuple[Condition, ...]]] = {}
        # `Cls(...)` of what may be a consumer class, with where and under what it is made: judged
        # when the class turns out to derive from a provider class (`_finish_contact`).
        self._class_calls: list[tuple[str, ast.Call, _Ctx, tuple[Condition, ...]]] = []
        self._deferring = True  # plain reads of functions called once wait for their caller
        self._def_counts: dict[str, int] = {}  # see `_defined_times`
        # The test of each `if` on a version gate (or a module or parameter test), by its file and
        # line (None: two tests on one line; `_if_tests`), and the returns of replacements that leave
        # an output buffer unwritten, by replacement, with the `if`s each sits in (`_unwritten`).
        self._gate_at: dict[tuple[str, int], Condition | None] = {}
        self._unwritten_raw: dict[tuple[object, ...], list[_RawReturn]] = {}
        self._kept_paths: set[tuple[str, str]] = set()  # see `_path_kept_for_reads`
        self._aliases: dict[str, dict[str, str]] = {}  # by file: a version reader's alias -> its name
        self._import_paths: dict[str, dict[int, list[str]]] = {}  # by file: `import_path_targets`
        # Names an import of a package neither the consumer's nor the provider's binds, by file.
        self._other_packages: dict[str, set[str]] = {}
        # Calls of module-level consumer functions: (path, name) -> call site -> the try around it
        # that catches ImportError ("" when none does). See `_caught_calls`.
        self._own_calls: dict[tuple[str, str], dict[str, str]] = {}
        # Every definition of a consumer function's dotted name, in order (`_functions` keeps the first).
        self._definitions: dict[str, list[_Function]] = {}
        self._unscanned: list[bytes] = []  # the sources of the consumer's files not scanned
        self._feature_tests: set[int] = set()  # the tries of functions that only test an import
        self._naming_files: dict[str, bool] = {}  # see `_names_provider`
        self._quiet = False  # evaluating for the contact surface only: record nothing, not even reads
        self._finishing = False  # every body has been read: modules loaded now are read for their classes
        self._classes: dict[str, ConsumerClass] = {}
        # The simple names each file gives the consumer's classes: those it defines, and those it
        # imports from the consumer's modules (`_unshadowed`).
        self._class_names: dict[str, set[str]] = {}
        # Attributes of each consumer class annotated with (or assigned) a provider class.
        self._typed_attributes: dict[str, dict[str, tuple[Ref, ...]]] = {}
        # class -> attribute -> the consumer class every `self.attr = C(...)` of the class makes
        # (dotted as written: read once the scan knows its classes, `_receiver_attribute`).
        self._made_attributes: dict[str, dict[str, str]] = {}
        # class -> attribute -> the parameter not annotated ("method:x") every `self.attr = x` of
        # the class stores (`_receiver_attribute` types it as `Receiver.PARAM`).
        self._param_attributes: dict[str, dict[str, str]] = {}
        # (class, method) -> how the method hands on to the one it overrides, seen while reading its body.
        self._delegations: dict[tuple[str, str], set[ClassBase]] = {}
        self._patchers: dict[str, bool] = {}  # consumer classes that set a subclass's members on a target
        self._kept_originals: dict[str, dict[str, ProviderValue]] = {}  # class -> provider objects its body keeps
        self._sources: dict[str, bytes] = {}  # each parsed file's source, by path
        self._lines: dict[str, list[bytes]] = {}  # a file's lines, once a node's text is asked for
        # The visit and eval methods by class of node, unbound (a bound one would make a cycle that
        # keeps every syntax tree alive until the paused collector runs).
        self._visitors: dict[type, Callable[[ConsumerScanner, Any, _Ctx], _Ctx | None] | None] = {}
        self._evaluators: dict[type, Callable[[ConsumerScanner, Any, _Ctx], Value] | None] = {}
        # In order, once each (bodies are read again), with where they are read: whether the
        # function tests the name is read from its text for the uses kept (`_finish_contact`).
        self._member_uses: dict[MemberUse, tuple[str, str]] = {}
        # Attributes read for their object (`f(x.a)`), with the class whose `self` they are read on
        # ("" for any other receiver): see `passed_members`.
        self._value_reads: set[tuple[str, str]] = set()
        self._baseless: dict[str, ast.ClassDef] = {}  # classes without bases, by dotted name
        self._reaching: dict[str, bool] = {}  # see `_may_reach_provider`
        self._mixins_reaching: set[str] | None = None  # see `_mixed_in_reaching`
        self._recording: dict[str, bool] = {}  # see `_may_record`
        self._function_texts: dict[tuple[str, str], bytes] = {}  # see `_names_in_string`
        # Each consumer function installed as a patch: the version gates of each install (see `_installed_when`).
        self._installs: dict[str, list[tuple[Condition, ...]]] = {}
        # A consumer function installed in a provider object's place (`C.m = f`): what it was set
        # on, each time (`_bind_receivers` types its `self` with it when it is one class).
        self._installed_on: dict[str, set[tuple[Ref, ...]]] = {}
        self._registry_sites: set[Site] = set()  # string members of the consumer's own enums
        self._comments: dict[bytes, ProseReader] = {}  # see `_in_comment`
        # A ladder's alternative made of what follows a try (see `_visit_Try`), dropped when empty.
        # With what the try's handler said the ladder falls back to, and how many alternatives it had.
        self._ladder_rests: list[tuple[ImportGroup, list[ImportUse], tuple[str, bool, bool], int]] = []

    # -- entry point ------------------------------------------------------------

    def scan(
        self,
        files: Iterable[tuple[str, str, bool, bytes]],
        unscanned: Iterable[tuple[str, bytes]] = (),
        bodies_read: Callable[[ConsumerUsage], None] | None = None,
    ) -> ConsumerUsage:
        """`files`: (path, module name, is package, source). `unscanned`: (path, source) of the
        consumer's other files, not scanned: a class they name by dotted path is handed over all
        the same (its module is read when it is not scanned). `bodies_read` is handed the usage
        as soon as every body has been read, before what was handed over is resolved: its
        imports, patches and calls are then complete. Returns the usage found."""
        for path, source in unscanned:
            self._record_class_paths(path, source)
            self._unscanned.append(source)
        parsed: list[tuple[_File, ast.Module]] = []
        for path, module, is_package, source in files:
            self.usage.files += 1
            self._modules.add(module)
            tree = self._parse(path, source)
            if tree is not None:
                parsed.append((_File(path, module, is_package), tree))
                self._sources[path] = source
                self._record_class_paths(path, source)
        # Module bodies first (they define what functions see), then every function body,
        # then helper bodies again with the arguments call sites pass them.
        self._pending = []
        self._unread = {file.module: (file, tree) for file, tree in parsed}
        self._trees.update({file.module: tree for file, tree in parsed})
        for file, _ in parsed:
            self._read_module(file.module)
        pending, self._pending = self._pending, None
        for call in pending:
            self._call_helper(*call)
        deferred: list[_Rescan] = []
        while self._queue or deferred:
            if not self._queue:  # the callers read so far: what held at their calls is known
                ready = [job for job in deferred if not self._waits_for_caller(job.function)]
                self._queue.extend(ready or deferred)  # none ready: their callers are never read
                taken = {id(job) for job in ready}
                deferred = [job for job in deferred if ready and id(job) not in taken]
                self._deferring = bool(ready)
            job = self._queue.popleft()
            if self._deferring and not job.binding and self._waits_for_caller(job.function):
                deferred.append(job)
                continue
            if job.binding:  # every body is read once; re-reads with arguments are bounded
                if self._hands_provider(job.binding.values()):
                    self._rescans += 1
                    over = self._rescans > _MAX_RESCANS
                else:
                    self._member_rescans += 1
                    over = self._member_rescans > _MAX_MEMBER_RESCANS
                if over:  # counted, and said (`analysis-bound`): what it does with them is unknown
                    self.usage.unread_helpers += 1
                    if self.usage.first_unread_helper is None:
                        self.usage.first_unread_helper = Site(job.function.file.path, job.function.node.lineno)
                    continue
            self._within_limits(job.function.file.path, self._run_function, job)
        self._drop_empty_rests()
        if bodies_read is not None:
            bodies_read(self.usage)
        self._finish_contact()
        self._caught_calls()
        self._dedupe()
        cut_short = {path for path, _, _ in self.usage.unparseable}  # a body too deep to read
        self.usage.read_paths = sorted(file.path for file, _ in parsed if file.path not in cut_short)
        return self.usage

    def _drop_empty_rests(self) -> None:
        """A ladder's alternative made of what follows a try (`_visit_Try`) that imports nothing
        is no alternative: it would let the ladder pass at every provider."""
        for group, rest, handled, count in self._ladder_rests:
            if not rest:
                # Nor did a try in it add one: the handler's fallback is what runs where the imports fail.
                if len(group.alternatives) == count and not group.fallback:
                    group.fallback, group.leaves, group.exits = handled
                group.alternatives = [alt for alt in group.alternatives if alt is not rest]

    def _hands_provider(self, values: Iterable[Value]) -> bool:
        """Is one of these values a provider object (or a string naming a provider module)? What
        a helper is read again for, and loaded for when outside the scan."""
        return any(isinstance(v, ProviderValue) or (isinstance(v, str) and self._is_provider(v)) for v in values)

    def _caught_calls(self) -> None:
        """The module-level functions every call of which sits in a try that catches ImportError
        (`with suppress(ImportError): install()`), and whose name the consumer's files (scanned or
        not) write nowhere but at their definition and those calls (not imported elsewhere, not
        handed on as a callback): an import failing inside them is caught there."""
        for (path, name), calls in sorted(self._own_calls.items()):
            tries = sorted(set(calls.values()))
            if not tries or "" in tries:
                continue
            if self._times_written(name) == 1 + len(calls):
                self.usage.caught_calls[f"{path}:{name}"] = tries[0]

    def _times_written(self, name: str) -> int:
        """How many times the consumer's files (scanned or not) write `name` as a word, outside
        comments (a comment naming a function is no use of it)."""
        needle = name.encode()
        # The word pattern is read only where the plain bytes are (it is the slow part).
        holding = [source for source in (*self._sources.values(), *self._unscanned) if needle in source]
        word = re.compile(rb"\b" + re.escape(needle) + rb"\b")
        return sum(
            1 for source in holding for match in word.finditer(source) if not self._in_comment(source, match.start())
        )

    def _in_comment(self, source: bytes, at: int) -> bool:
        """Is byte `at` of one of the consumer's sources in a comment (each source read once)?"""
        reader = self._comments.get(source)
        if reader is None:
            reader = self._comments[source] = ProseReader(source)
        return reader.in_comment(at)

    def _within_limits(self, path: str, read: Callable[..., object], *args: object) -> None:
        """Read a body; hostile nesting that exhausts the recursion makes the file unknown, not a crash."""
        try:
            read(*args)
        except RecursionError:
            self.usage.unparseable.append((path, 0, TOO_DEEP))

    def _parse(self, path: str, source: bytes) -> ast.Module | None:
        try:
            return parse_limited(source)  # over a per-file limit: unparseable, like a syntax error
        except (SyntaxError, ValueError) as exc:
            self.usage.unparseable.append((path, getattr(exc, "lineno", 0) or 0, getattr(exc, "msg", str(exc))))
            return None

    def _read_module(self, module: str) -> None:
        """Read a parsed module's body now (once), as its first import would."""
        found = self._unread.pop(module, None)
        if found is None:
            return
        file, tree = found
        scope = self._module_scope(module)
        self._within_limits(file.path, self._block, tree.body, _Ctx(file, scope))

    def _function(self, dotted_name: str, load: bool = True) -> _Function | None:
        """A consumer function by dotted name, loading its module on first need (`load`: also a module
        outside the scanned packages), following re-exports: a package's `__init__` binding a
        function of one of its modules (vllm-rbln's `from vllm_rbln.patches import register_patch`)."""
        for _ in range(_REEXPORT_DEPTH):
            fn = self._defined_function(dotted_name, load)
            if fn is not None:
                return fn
            module, _, name = dotted_name.rpartition(".")
            scope = self._scopes.get(module)
            value = scope.names.get(name) if scope is not None else None
            if not isinstance(value, ConsumerValue) or value.dotted == dotted_name:
                return None
            dotted_name = value.dotted
        return None

    def _defined_function(self, dotted_name: str, load: bool) -> _Function | None:
        """A consumer function by the dotted name of the module defining it (see `_function`)."""
        if dotted_name not in self._functions and self._unread:
            parts = dotted_name.split(".")
            for i in range(1, len(parts)):
                self._read_module(".".join(parts[:i]))
        fn = self._functions.get(dotted_name)
        if fn is not None or self.load_module is None or not load:
            return fn
        module = dotted_name
        while "." in module:
            module = module.rpartition(".")[0]
            if module in self._modules:
                return None
            loaded = self.load_module(module) if self._is_consumer(module) else None
            if loaded is not None:
                self._modules.add(module)
                path, is_package, source = loaded
                tree = self._parse(path, source)
                if tree is not None:
                    self._sources[path] = source
                    self._trees[module] = tree
                    file = _File(path, module, is_package)
                    known = len(self._functions)
                    self._block(tree.body, _Ctx(file, self._module_scope(module), record=False))
                    if self._finishing:
                        self._drop_bodies(module, known)
                return self._functions.get(dotted_name)
        return None

    def _drop_bodies(self, module: str, known: int) -> None:
        """Free the syntax tree of a module loaded while the scan finishes (for a class handed
        over): its body has been read and no body is read again then, so only the definitions'
        signatures are kept (the `known` functions before it are others'). The peak memory is
        then the scan's trees and one such module, not all of them."""
        del self._trees[module]
        for fn in itertools.islice(self._functions.values(), known, None):
            fn.node.body = []

    def _dedupe(self) -> None:
        u = self.usage
        seen_groups: dict[tuple[object, ...], ImportGroup] = {}
        for g in u.groups:
            g.alternatives = [alt for alt in g.alternatives if alt]
            if not g.alternatives:
                continue
            key = (g.path, g.line, g.function, tuple(tuple((x.site, x.ref) for x in alt) for alt in g.alternatives))
            seen_groups.setdefault(key, g)
        u.groups = list(seen_groups.values())
        u.attributes = list(dict.fromkeys(u.attributes))
        u.requirements = list(dict.fromkeys(u.requirements))
        u.calls = list(dict.fromkeys(u.calls))
        patches: dict[tuple[Site, tuple[Ref, ...], str], PatchSite] = {}
        for p in u.patches:
            patches.setdefault((p.site, p.owner, p.attr), p)
        u.patches = list(patches.values())
        u.reads = sorted(self._reads, key=repr)

    # -- bindings and records ---------------------------------------------------

    def _is_provider(self, module: str) -> bool:
        return in_package(module, self.provider_package)

    def _is_consumer(self, module: str) -> bool:
        return any(in_package(module, c) for c in self.consumer_packages)

    def _site(self, ctx: _Ctx, node: ast.AST) -> Site:
        return Site(ctx.file.path, getattr(node, "lineno", 0))

    def _bind(self, ctx: _Ctx, name: str, value: Value) -> None:
        # In a ladder's handler the same name is bound again: keep both ways to it.
        old = ctx.scope.names.get(name)
        if ctx.in_handler and isinstance(old, ProviderValue) and isinstance(value, ProviderValue):
            value = ProviderValue(tuple(dict.fromkeys(old.choices + value.choices)), value.guard)
        ctx.scope.names[name] = value
        ctx.scope.imported.discard(name)
        ctx.scope.none_defaults.discard(name)

    def _record_import(self, ctx: _Ctx, use: ImportUse) -> None:
        if not ctx.record:
            return
        # Where a `hasattr(X, "n")` test holds (written, or kept in a flag): an import there does not
        # run where the provider lacks X.n (a patch there still installs nothing: the silent case).
        present = _present(ctx.hasattr_guards, use.site)
        if ctx.collector is not None:
            if ctx.ladder is not None and ctx.when[: len(ctx.ladder.when)] == ctx.ladder.when:
                use = replace(use, when=ctx.when[len(ctx.ladder.when) :])
            ctx.collector.append(replace(use, when=(*use.when, *present)) if present else use)
        else:
            # An import the try around it catches, with a name computed there (`for name in (...):
            # try: import_module(name) except ImportError: continue`): a ladder of one alternative.
            group = ImportGroup(
                ctx.file.path,
                use.site.line,
                ctx.function,
                ctx.import_handler is not None,
                [[use]],
                when=(*ctx.when, *present),
            )
            self.usage.groups.append(_caught_by(group, ctx.import_handler))

    def _record_read(self, owner: ProviderValue, attr: str, kind: ReadKind) -> None:
        if not self._quiet:
            self._reads.add(Read(owner.choices, attr, kind))

    def _patch_guard(self, ctx: _Ctx, owner: ProviderValue, attr: str) -> Guard:
        if owner.guard is not Guard.NONE:
            return owner.guard
        if (owner.choices, attr) in ctx.hasattr_guards:
            return Guard.HASATTR
        if ctx.try_guard:
            return Guard.TRY
        return Guard.NONE

    def _record_patch(
        self,
        ctx: _Ctx,
        node: ast.AST,
        owner: ProviderValue,
        attr: str,
        value_node: ast.expr | None,
        value: Value,
        declared: bool = False,
        literal: bool = False,
    ) -> None:
        """`literal`: the value is a literal whatever `value_node` is (an enum member added)."""
        if not ctx.record:
            return
        replacement: Signature | None = None
        variants: tuple[ReplacementVariant, ...] = ()
        constructor = False
        if isinstance(value, ConsumerValue):
            fn = self._function(value.dotted)  # its module is read first when it is not yet (or not scanned)
            wrapper = _binding_wrapper(value_node)
            replacement = _wrapped(signature_of(fn.node), wrapper) if fn else None
            # By the name it is defined under (a re-export followed), as its body is read by.
            defined = fn.dotted if fn is not None else value.dotted
            gates_here = tuple(c for c in ctx.when if c.kind is ConditionKind.GATE)
            self._installs.setdefault(defined, []).append(gates_here)
            if not wrapper:  # (a staticmethod's first parameter is no instance)
                self._installed_on.setdefault(defined, set()).add(owner.choices)
            if fn is not None:
                self._record_replacement(ctx, node, owner, attr, fn)
            # (a name bound to one function per release, `f = f_old` under a gate: by that name,
            # imported or of this module)
            named = f"{ctx.file.module}.{value_node.id}" if isinstance(value_node, ast.Name) else value.dotted
            made = self._definitions.get(named, []) or self._definitions.get(value.dotted, [])
            made = made if len(made) > 1 else self._definitions.get(defined, [])
            if len(made) > 1:  # one per release, say, each under its own version gate
                variants = tuple(
                    ReplacementVariant(_wrapped(signature_of(d.node), wrapper), d.made_when()) for d in made
                )
            if fn is None and (cls := self._consumer_class(value.dotted, load=True)) is not None:
                # A class in a class's place (`parallel_state.GroupCoordinator = MyCoordinator`):
                # the provider's constructions of the name run its own `__init__`.
                init = cls.method("__init__")
                replacement, constructor = (init.signature, True) if init is not None else (None, False)
        elif isinstance(value, LambdaValue):
            replacement = value.signature
        self.usage.patches.append(
            PatchSite(
                owner=owner.choices,
                attr=attr,
                site=self._site(ctx, node),
                guard=self._patch_guard(ctx, owner, attr),
                function=ctx.function,
                literal_value=literal or isinstance(value_node, ast.Constant),
                replacement=replacement,
                alternative_group=ctx.loop_group,
                via=ctx.via,
                when=self._when(ctx),
                # Another provider object stored under this name: the original kept aside.
                stash=isinstance(value, ProviderValue) and value.choices != owner.attr(attr).choices,
                declared=declared,
                variants=variants,
                on_copy=owner.copy,
                nested=ctx.nested,
                branch=ctx.branch,
                constructor=constructor,
            )
        )

    # -- statements -----------------------------------------------------------------

    def _block(self, body: list[ast.stmt], ctx: _Ctx) -> None:
        for stmt in body:
            ctx = self._stmt(stmt, ctx) or ctx

    def _stmt(self, node: ast.stmt, ctx: _Ctx) -> _Ctx | None:
        """Read one statement with its `_visit_<class name>` method; other statements are skipped.

        A returned context replaces `ctx` for the rest of the block: `if not hasattr(...): return`.
        """
        kind = node.__class__
        if kind not in self._visitors:  # looked up once per class of node: this runs for every statement
            self._visitors[kind] = getattr(type(self), f"_visit_{kind.__name__}", None)
        visit = self._visitors[kind]
        return visit(self, node, ctx) if visit is not None else None

    def _visit_Import(self, node: ast.Import, ctx: _Ctx) -> None:
        for alias in node.names:
            name = alias.name
            top = name.split(".")[0]
            if not self._is_provider(name):
                if self._is_consumer(name):
                    self._record_edge(ctx, name, node)
                    self._bind(ctx, alias.asname or top, ConsumerValue(name if alias.asname else top))
                else:
                    self._bind(ctx, alias.asname or top, None)
                    self._other_packages.setdefault(ctx.file.path, set()).add(alias.asname or top)
                continue
            self._record_import(ctx, ImportUse(Ref(name), self._site(ctx, node), ImportKind.IMPORT, ctx.via))
            self._bind(ctx, alias.asname or top, ProviderValue((Ref(name if alias.asname else top),)))

    def _visit_ImportFrom(self, node: ast.ImportFrom, ctx: _Ctx) -> None:
        module = absolute_module(ctx.file.module, ctx.file.is_package, node.level, node.module)
        provider = self._is_provider(module)
        consumer = self._is_consumer(module) or (node.level > 0)
        if consumer:
            self._record_edge(ctx, module, node)
        for alias in node.names:
            if alias.name == "*":
                if provider:
                    self._record_import(ctx, ImportUse(Ref(module), self._site(ctx, node), ImportKind.FROM, ctx.via))
                continue
            bound = alias.asname or alias.name
            if provider:
                ref = Ref(module, (alias.name,))
                self._record_import(ctx, ImportUse(ref, self._site(ctx, node), ImportKind.FROM, ctx.via))
                self._bind(ctx, bound, ProviderValue((ref,)))
                ctx.scope.imported.add(bound)
            elif consumer:
                self._record_edge(ctx, f"{module}.{alias.name}", node)
                self._bind(ctx, bound, self._reexported(f"{module}.{alias.name}"))
                self._class_names.setdefault(ctx.file.path, set()).add(bound)
            elif module in _TYPING and alias.name == "cast":
                self._bind(ctx, bound, TypingCast())
            elif module == "dataclasses" and alias.name == "dataclass":
                self._bind(ctx, bound, DataclassDecorator())
            elif module == "dataclasses" and alias.name == "replace":
                self._bind(ctx, bound, DataclassReplace())
            else:
                self._bind(ctx, bound, None)
                self._other_packages.setdefault(ctx.file.path, set()).add(bound)
                if alias.asname and module in _ALIASED_READERS:
                    # `from importlib.metadata import version as package_version`: read as `version`.
                    self._aliases.setdefault(ctx.file.path, {})[alias.asname] = alias.name

    def _visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef, ctx: _Ctx) -> None:
        for deco in node.decorator_list:
            self._eval(deco, ctx)
        qualname = f"{ctx.function}.{node.name}" if ctx.function else node.name
        fn = _Function(
            node,
            ctx.file,
            qualname,
            ctx.scope,
            muted=not ctx.record,
            when=self._when(ctx),  # in a ladder's try body, made only where the imports before it worked
            guards=ctx.hasattr_guards,
            outer=ctx.bound,
        )
        dotted_name = f"{ctx.file.module}.{qualname}"
        # The first definition wins: a later redefinition in a rescan must not shadow it.
        self._functions.setdefault(dotted_name, fn)
        made = self._definitions.setdefault(dotted_name, [])
        if all(other.node is not node for other in made):  # (a body read again defines it again)
            made.append(fn)
        self._bind(ctx, node.name, ConsumerValue(dotted_name))
        self._enqueue(fn, {}, ctx.via, ctx.depth)
        self._decorated(node, ConsumerValue(dotted_name), ctx)

    _visit_AsyncFunctionDef = _visit_FunctionDef

    def _gated_alias(self, name: str, value: ConsumerValue, ctx: _Ctx) -> None:
        """`name = f` at module level under a version gate: a definition of `name` where the gate
        holds (vllm-ascend binds `categorical_sample` to one function where
        `vllm_version_is("0.28.0")` and to another elsewhere, then patches vLLM with it)."""
        fn = self._functions.get(value.dotted)
        if fn is None:
            return
        when = tuple(dict.fromkeys((*fn.when, *self._when(ctx))))
        made = self._definitions.setdefault(f"{ctx.file.module}.{name}", [])
        if all(other.node is not fn.node or other.when != when for other in made):
            made.append(replace(fn, when=when, guards=fn.guards | ctx.hasattr_guards))

    def _visit_ClassDef(self, node: ast.ClassDef, ctx: _Ctx) -> None:
        for expr in [*node.bases, *node.decorator_list, *(k.value for k in node.keywords)]:
            self._eval(expr, ctx)
        qualname = f"{ctx.function}.{node.name}" if ctx.function else node.name
        body_scope = Scope(ctx.scope)
        # Methods see the enclosing scope, not the class body: give them a context whose
        # function name carries the class for readable qualnames.
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for deco in stmt.decorator_list:
                    self._eval(deco, ctx)
                owner = f"{ctx.file.module}.{qualname}"
                name = f"{qualname}.{stmt.name}"
                when = self._when(ctx)
                fn = _Function(stmt, ctx.file, name, ctx.scope, muted=not ctx.record, owner=owner, when=when)
                self._functions.setdefault(f"{ctx.file.module}.{qualname}.{stmt.name}", fn)
                self._enqueue(fn, {}, ctx.via, ctx.depth)
            else:
                self._stmt(stmt, _evolve(ctx, scope=body_scope, function=qualname))
        self._bind(ctx, node.name, ConsumerValue(f"{ctx.file.module}.{qualname}"))
        # Provider methods the class body keeps (`_orig_sleep = Worker.sleep`): a method calling one
        # on `self` calls the original (`_record_delegation`).
        kept = {name: value for name, value in body_scope.names.items() if isinstance(value, ProviderValue)}
        if kept:
            self._kept_originals[f"{ctx.file.module}.{qualname}"] = kept
        self._module_patch_members(node, qualname, body_scope, ctx)
        self._find_state_gates(node, qualname, ctx)
        self._decorated(node, ConsumerValue(f"{ctx.file.module}.{qualname}"), ctx)
        self._record_class(node, ctx, qualname)

    def _eval_stored(self, node: ast.expr, ctx: _Ctx) -> Value:
        """What a value assigned to a name evaluates to: in a function, a call's result is an
        instance of what it makes (`layer = Linear(...)`, `proposer = P(...) if spec else None`)."""
        if ctx.function and isinstance(node, ast.Call):
            return self._eval_Call(node, ctx, makes_instance=True)
        if ctx.function and isinstance(node, ast.IfExp):
            return self._eval_IfExp(node, ctx, makes_instance=True)
        return self._eval(node, ctx)

    def _visit_Assign(self, node: ast.Assign, ctx: _Ctx) -> None:
        self._record_unpack(node, ctx)
        if self._path_kept_for_reads(node, ctx):
            value = self._eval(node.value, _evolve(ctx, record=False))  # its reads name the module
        else:
            value = self._eval_stored(node.value, ctx)
        for target in node.targets:
            self._assign(target, value, node.value, ctx)

    def _visit_AnnAssign(self, node: ast.AnnAssign, ctx: _Ctx) -> None:
        if node.value is None:
            return
        value = self._eval_stored(node.value, ctx)
        if value is None and ctx.function and isinstance(node.target, ast.Name):
            # `runner: GPUModelRunner = make()`: a local annotated with a provider class holds one.
            choices = self._unshadowed(self._provider_type(node.annotation, ctx), ctx.file.path)
            value = ReceiverValue(Receiver.INSTANCE, choices=choices) if choices else None
        self._assign(node.target, value, node.value, ctx)

    def _visit_AugAssign(self, node: ast.AugAssign, ctx: _Ctx) -> None:
        value = self._eval(node.value, ctx)
        # `steps += [f, g]` on a name holding a literal list: the list with more (a loop over it is unrolled).
        if isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add) and isinstance(value, tuple):
            current = ctx.scope.names.get(node.target.id)
            if isinstance(current, tuple):
                self._bind(ctx, node.target.id, (*current, *value))

    def _visit_Expr(self, node: ast.Expr, ctx: _Ctx) -> None:
        grown = self._grown_list(node.value, ctx)
        if grown is None:
            self._eval(node.value, ctx)
        else:
            self._bind(ctx, *grown)

    def _grown_list(self, call: ast.expr, ctx: _Ctx) -> tuple[str, tuple[Value, ...]] | None:
        """`steps.append(f)` or `steps.extend([f, g])` on a name holding a literal list: the name,
        and the list with what is added (an `extend` by what is not known adds nothing known);
        None for any other statement. sglang collects its tuning steps so before a loop runs
        each in a try."""
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in ("append", "extend")
            and isinstance(call.func.value, ast.Name)
            and len(call.args) == 1
            and not call.keywords
        ):
            return None
        name = call.func.value.id
        current = ctx.scope.names.get(name)
        if not isinstance(current, tuple):
            return None
        added = self._eval(call.args[0], ctx)
        if call.func.attr == "append":
            return name, (*current, added)
        return name, (*current, *added) if isinstance(added, tuple) else current

    def _visit_Return(self, node: ast.Return | ast.Raise, ctx: _Ctx) -> None:
        # Only what is returned or raised is read; nothing is bound.
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                value = self._eval(child, ctx)
                if ctx.returns is not None and isinstance(node, ast.Return):
                    # `return True` / `return False`: what a helper testing the version answers.
                    ctx.returns.append((_with_flags(child, value), ctx.when))
        if isinstance(node, ast.Return):
            self._record_returned_class(node, ctx)

    _visit_Raise = _visit_Return

    def _assign(self, target: ast.expr, value: Value, value_node: ast.expr | None, ctx: _Ctx) -> None:
        if isinstance(target, ast.Name):
            if ctx.when and ctx.definition is None and not ctx.owner and isinstance(value, ConsumerValue):
                self._gated_alias(target.id, value, ctx)
            self._bind(ctx, target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = (
                value if isinstance(value, tuple) and len(value) == len(target.elts) else (None,) * len(target.elts)
            )
            for elt, v in zip(target.elts, values):
                self._assign(elt, v, None, ctx)
        elif isinstance(target, ast.Attribute):
            owner = self._eval(target.value, ctx)
            if isinstance(owner, ProviderValue):
                self._record_patch(ctx, target, owner, target.attr, value_node, value)
            elif isinstance(owner, ReceiverValue):
                self._record_attribute_handover(ctx, target, owner, value_node, value)
            if ctx.record and not self._quiet:
                self._record_member_store(owner, target, ctx)
            if ctx.record and not (
                isinstance(owner, ReceiverValue) and owner.receiver is Receiver.SELF and not owner.other
            ):
                self.usage.contact.member_stores.append(target.attr)  # set from outside its class
                self.usage.contact.outside_stores.append(
                    OutsideStore(target.attr, self._site(ctx, target), ctx.function)
                )
        elif isinstance(target, ast.Subscript):
            table = self._eval(target.value, ctx)
            key = self._eval(target.slice, ctx)
            if dotted(target.value) == "sys.modules" and isinstance(key, str):
                self._record_injection(ctx, key, target, value)
            elif isinstance(table, dict) and isinstance(key, str):  # `TABLE["name"] = Cls`: a loop over it sees it
                table[key] = value
        elif isinstance(target, ast.Starred):
            self._assign(target.value, None, None, ctx)

    def _visit_If(self, node: ast.If, ctx: _Ctx) -> _Ctx | None:
        """`if hasattr(X, "f"):` guards its body (`if not ...:` its else); `if TYPE_CHECKING:` never runs;
        a version gate conditions both branches (`gates`)."""
        top = ctx.definition is None and not ctx.owner and not ctx.nested  # a statement of the module body
        in_function = ctx.definition is not None and not ctx.nested  # a statement of a function's body
        ctx = _evolve(ctx, nested=True)
        if is_type_checking(node.test):
            self._type_only_imports(node.body, ctx)
            self._block(node.orelse, ctx)
            return None
        direct = self._direct_hasattr(node, ctx)
        # `if x.member:` or `if getattr(x, "member", None):` hands nothing on, as `is not None`
        # does not (see `passed_members`): not a read for the object.
        tested = _truth_tested(node.test) if direct is None else None
        read = (_self_owner(tested[0], ctx), tested[1]) if tested is not None else None
        unread = read if read is not None and read not in self._value_reads else None
        test = self._eval(node.test, ctx) if direct is None else None
        if unread is not None:
            self._value_reads.discard(unread)
        if isinstance(test, bool) and ctx.returns is not None:
            # A helper's flag bound to a literal (`if return_version:`): its branch alone runs.
            test = Gate(GateOp.FIXED, _text(node.test), compare=str(test))
        gate = self._gate_condition(node.test, test, ctx)
        if gate is not None:
            return self._gated_branches(node, gate, ctx, top, in_function)
        if isinstance(test, AttributeProbe):  # `uses_new_api = hasattr(X, "f")` ... `if uses_new_api:`
            return self._probed_branches(node, test, ctx)
        guard, negated = direct or self._hasattr_guard(node.test, ctx)
        if guard is None and (present := self._negated_hasattr_in_or(node.test, ctx)):
            # `if not hasattr(X, "n") or X.n: ... else: <old API>`: the `else` runs only where X has n.
            guarded = _evolve(ctx, hasattr_guards=ctx.hasattr_guards | present)
            self._branches([(node.body, ctx), (node.orelse, guarded)], ctx.scope)
            return guarded if not node.orelse and leaves(node.body) else None
        if guard is None:
            # `if self.cascade_attn_enabled and ...:`: the body runs only where the flags are on.
            flags = self._self_flags(node.test, ctx)
            body = _evolve(ctx, when=(*ctx.when, *flags)) if flags else ctx
            holds, fails = branch_clauses(node.test)
            body = _evolve(body, flags=(*ctx.flags, *holds)) if holds else body
            other = _evolve(ctx, flags=(*ctx.flags, *fails)) if fails else ctx
            narrowed = self._narrowed(node.test, ctx)
            if node.orelse:  # two alternatives: a call in one may be the other's compatibility form
                side = f"{ctx.file.path}:{node.lineno}#"
                body, orelse = _evolve(body, branch=side + "0"), _evolve(other, branch=side + "1")
                self._branches([(node.body, body), (node.orelse, orelse)], ctx.scope, mixed=True, narrowed=narrowed)
            else:
                self._branches([(node.body, body), (node.orelse, other)], ctx.scope, mixed=True, narrowed=narrowed)
            return None
        guarded = _evolve(ctx, hasattr_guards=ctx.hasattr_guards | {guard})
        # `if hasattr(X, "f"): ... else: <fallback>`: the fallback runs only when X.f is absent.
        absent = self._absent(node, guard[0], (guard[1],), ctx) if direct is not None else ctx
        return self._hasattr_branches(node, guarded, absent, negated)

    def _narrowed(self, test: ast.expr, ctx: _Ctx) -> tuple[str, Value] | None:
        """`isinstance(x, C)` of a local name and a provider class: x, and what it is where the test
        holds, an instance of C. Of `isinstance(x, (C, D))`, an instance of C, the first class named
        (a call that C cannot take fails where x is a C)."""
        if not (
            isinstance(test, ast.Call)
            and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance"
            and len(test.args) == 2
            and not test.keywords
            and isinstance(test.args[0], ast.Name)
        ):
            return None
        classes = test.args[1]
        first = classes.elts[0] if isinstance(classes, ast.Tuple) and classes.elts else classes
        named = self._pure(first, ctx)
        choices = self._unshadowed(named.choices, ctx.file.path) if isinstance(named, ProviderValue) else ()
        return (test.args[0].id, ReceiverValue(Receiver.INSTANCE, choices=choices)) if choices else None

    def _self_flags(self, test: ast.expr, ctx: _Ctx) -> tuple[Condition, ...]:
        """The conditions `self.x` puts on the body of an `if` in a method (the test, or an operand of
        an `and` test): the checks decide them where the provider keeps x false."""
        if not ctx.owner:
            return ()
        operands = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        return tuple(
            Condition(ConditionKind.FLAG, self._site(ctx, test), _text(op), attr=op.attr, owner=ctx.owner)
            for op in operands
            if isinstance(op, ast.Attribute) and isinstance(op.value, ast.Name) and op.value.id == "self"
        )

    def _probed_branches(self, node: ast.If, probe: AttributeProbe, ctx: _Ctx) -> _Ctx | None:
        """The branches of an `if` on a kept `hasattr` test, read as a written test's are: where it
        holds, the names are guarded; the other branch runs only where one of them is absent (a
        fallback for older providers), or, for a partial test (`hasattr(X, "n") and ...`), there and
        maybe elsewhere."""
        guarded = ctx
        if not probe.by_default:
            guarded = _evolve(ctx, hasattr_guards=ctx.hasattr_guards | {(probe.owner, n) for n in probe.names})
        absent = self._absent(node, probe.owner, probe.names, ctx, only=not probe.partial)
        return self._hasattr_branches(node, guarded, absent, not probe.present)

    def _hasattr_branches(self, node: ast.If, guarded: _Ctx, absent: _Ctx, negated: bool) -> _Ctx | None:
        """Read the branches of an `if` on a `hasattr` test (written, or kept in a name): where the
        test finds the names in `guarded`, the other branch in `absent`. A body that leaves puts the
        rest of the block on the other side, and its context is returned: `if not hasattr(X, "f"):
        return` guards the rest (a `raise` there is a requirement, not a guard), and after
        `if hasattr(X, "f"): return` the rest runs only where X.f is absent (a polyfill)."""
        if negated:
            self._branches([(node.body, absent), (node.orelse, guarded)], guarded.scope)
            if node.body and isinstance(node.body[-1], (ast.Return, ast.Continue, ast.Break)):
                return guarded
            return None
        self._branches([(node.body, guarded), (node.orelse, absent)], guarded.scope)
        return absent if not node.orelse and leaves(node.body) else None

    def _branches(
        self,
        branches: list[tuple[list[ast.stmt], _Ctx]],
        scope: Scope,
        mixed: bool = False,
        narrowed: tuple[str, Value] | None = None,
    ) -> None:
        """Read the alternative branches of an `if`. A name they bind to provider objects may hold any of
        them afterwards: it keeps every choice, in order (the first that resolves wins, as in a ladder).
        With `mixed` (an `if` on the consumer's own state), a name one branch binds to a provider object
        and another to something else keeps the provider's, marked `mixed`, with what holds of the
        consumer's flags in the branch that bound it and in those that bound something else.
        `narrowed`: a name the test narrows to an instance of a provider class, bound so in the first
        branch only (`_narrowed`)."""
        before = dict(scope.names)
        changed: list[dict[str, Value]] = []
        for i, (body, ctx) in enumerate(branches):
            start = dict(scope.names)
            if narrowed is not None and i == 0:
                scope.names[narrowed[0]] = narrowed[1]
            self._block(body, ctx)
            if narrowed is not None and i == 0 and scope.names.get(narrowed[0]) is narrowed[1]:
                if narrowed[0] in start:  # what the name held before the test, again past the branch
                    scope.names[narrowed[0]] = start[narrowed[0]]
                else:
                    del scope.names[narrowed[0]]
            changed.append({k: v for k, v in scope.names.items() if k not in start or start[k] is not v})
        for name in {k for c in changed for k in c}:
            values = [c[name] for c in changed if name in c]
            if any(name not in c for c in changed) and name in before:
                values.append(before[name])
            if len(values) > 1 and all(isinstance(v, ProviderValue) for v in values):
                choices = tuple(dict.fromkeys(r for v in values for r in v.choices))  # type: ignore[union-attr]
                either = any(v.mixed for v in values)  # type: ignore[union-attr]
                scope.names[name] = ProviderValue(choices, values[0].guard, mixed=either)  # type: ignore[union-attr]
            elif mixed and (provided := [v for v in values if isinstance(v, ProviderValue)]):
                # Another branch imports or defines something else under the name (not `f = None`,
                # a placeholder: where it is called, the provider's object is there).
                first = provided[0]
                # (A branch that ends with it bound so, by a nested `if`, brings that `if`'s others in `first`.)
                others = [
                    ctx.flags
                    for (body, ctx), c in zip(branches, changed)
                    if c.get(name) is not first and self._binds_otherwise(body, name, ctx)
                ]
                if others:
                    bound = [ctx.flags for (_, ctx), c in zip(branches, changed) if c.get(name) is first]
                    # A nested `if` that marked it already knows more of where it is bound so.
                    bound_when = first.bound_when if first.mixed else bound[0] if len(bound) == 1 else ()
                    other_when = (*first.other_when, *others) if first.mixed else tuple(others)
                    scope.names[name] = replace(first, mixed=True, bound_when=bound_when, other_when=other_when)

    def _binds_otherwise(self, body: list[ast.stmt], name: str, ctx: _Ctx) -> bool:
        """Does `body` import `name` from outside the provider, or define it (a function or class)?"""
        for stmt in statements(body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name == name:
                return True
            if isinstance(stmt, ast.ImportFrom):
                source = absolute_module(ctx.file.module, ctx.file.is_package, stmt.level, stmt.module) or ""
                if not self._is_provider(source) and any((a.asname or a.name) == name for a in stmt.names):
                    return True
            elif isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if (a.asname or a.name.partition(".")[0]) == name and not self._is_provider(a.name):
                        return True
        return False

    def _negated_hasattr_in_or(self, test: ast.expr, ctx: _Ctx) -> frozenset[tuple[tuple[Ref, ...], str]]:
        """The `not hasattr(owner, name)` operands of an `or` test, on provider objects: where the
        test fails, each owner has its name."""
        if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or)):
            return frozenset()
        return frozenset(
            tested
            for operand in test.values
            if isinstance(operand, ast.UnaryOp) and isinstance(operand.op, ast.Not)
            for call, negated in hasattr_tests(operand.operand)
            if not negated and (tested := self._hasattr_of(call, ctx)) is not None
        )

    def _hasattr_guard(self, test: ast.expr, ctx: _Ctx) -> tuple[tuple[tuple[Ref, ...], str] | None, bool]:
        """The first `hasattr(owner, name)` the test rests on whose owner is a provider object."""
        for call, negated in hasattr_tests(test):
            if (tested := self._hasattr_of(call, ctx)) is not None:
                return tested, negated
        return None, False

    def _hasattr_of(self, call: ast.Call, ctx: _Ctx) -> tuple[tuple[Ref, ...], str] | None:
        """(owner's choices, name) of `hasattr(owner, name)` on a provider object with a name known."""
        owner, name = self._eval(call.args[0], ctx), self._eval(call.args[1], ctx)
        return (owner.choices, name) if isinstance(owner, ProviderValue) and isinstance(name, str) else None

    def _visit_Try(self, node: ast.Try, ctx: _Ctx) -> _Ctx | None:
        """A try that catches ImportError around a provider import is a ladder; one catching AttributeError a guard.

        The ladder's alternatives are its body and each handler that imports the
        provider again (first importable wins); a handler that does not says what
        happens when every alternative fails. A body that returns what it imported, with a
        handler that lets the block go on, makes the rest of the block the next alternative
        (`try: from new import W; return W` / `except ImportError: pass`, then `from old import W`);
        handlers that all leave make the rest of the block run only where the body's imports worked.
        Returns the context for the rest of the block when the try changes what it runs under.
        """
        ctx = _evolve(ctx, nested=True)
        body_ctx = _evolve(ctx, try_guard=ctx.try_guard or catches_attribute_error(node.handlers))
        if catches_import_error(node.handlers):
            handler = next(h for h in node.handlers if catches_import_error([h]))
            body_ctx = _evolve(body_ctx, catching_import=f"{ctx.file.path}:{node.lineno}", import_handler=handler)
        caught = type_error_handling(node.handlers)
        rest_ctx: _Ctx | None = None
        if catches_import_error(node.handlers) and self._imports_provider(node.body, ctx):
            if ctx.in_handler and ctx.ladder is not None:
                group = ctx.ladder  # a ladder nested in a handler extends the outer one
            else:
                group = ImportGroup(ctx.file.path, node.lineno, ctx.function, True, when=ctx.when)
                group.feature_test = id(node) in self._feature_tests
                self.usage.groups.append(group)
            first: list[ImportUse] = []
            group.alternatives.append(first)
            start = dict(ctx.scope.names)
            ladder_ctx = _evolve(body_ctx, collector=first, ladder=group, in_handler=False)
            self._try_body(node.body, ladder_ctx, caught, returns=returns_instead(node.handlers))
            imported = {
                k: v for k, v in ctx.scope.names.items() if isinstance(v, ProviderValue) and start.get(k) is not v
            }
            versions = {
                k: v for k, v in ctx.scope.names.items() if isinstance(v, ProviderVersion) and start.get(k) is not v
            }
            for handler in node.handlers:
                handler_ctx = self._handler_ctx(node, handler, ctx)
                if self._imports_provider(handler.body, ctx):
                    alt: list[ImportUse] = []
                    group.alternatives.append(alt)
                    self._block(handler.body, _evolve(handler_ctx, collector=alt, ladder=group, in_handler=True))
                else:
                    if catches_import_error([handler]):
                        group.fallback = describe_fallback(handler.body)
                        group.leaves = leaves(handler.body)
                        group.exits = exits(handler.body)
                    self._block(handler.body, handler_ctx)
                    if catches_import_error([handler]):
                        self._keep_imported(handler.body, imported, group, ctx)
                        if imports_only_the_package(node.body, self.provider_package):
                            # `try: import vllm; V = parse(vllm.__version__)` / `except ImportError: V = None`:
                            # the handler runs only where the provider is not installed, never where checked.
                            ctx.scope.names.update(versions)
            body_refs = tuple(dict.fromkeys(u.ref for u in first))
            if len(group.alternatives) == 1 and body_refs and _left_by_handlers(node):
                # `try: from pv.x import A / except ImportError: return False`: the rest of the
                # block runs only where the body's imports worked (as the rest of the body does).
                after = Condition(ConditionKind.AFTER_IMPORTS, self._site(ctx, node), refs=body_refs)
                rest_ctx = _evolve(ctx, when=(*ctx.when, after))
            elif _returns_or_falls_through(node):
                # What follows runs only where the body's import failed: the ladder's next alternative.
                handled = (group.fallback, group.leaves, group.exits)
                group.fallback, group.leaves, group.exits = "", False, False
                rest: list[ImportUse] = []
                group.alternatives.append(rest)
                self._ladder_rests.append((group, rest, handled, len(group.alternatives)))
                handler_ctx = self._handler_ctx(node, node.handlers[0], ctx)
                rest_ctx = _evolve(handler_ctx, collector=rest, ladder=group, in_handler=True)
        else:
            rest_ctx = self._plain_try(node, ctx, body_ctx, caught)
        self._block(node.orelse, ctx)
        self._block(node.finalbody, ctx)
        return rest_ctx

    _visit_TryStar = _visit_Try  # 3.11+: `except*` has the same fields

    def _plain_try(self, node: ast.Try, ctx: _Ctx, body_ctx: _Ctx, caught: str) -> _Ctx | None:
        """A try that is no ladder of provider imports: its body, then its handlers. Returns the
        context for what follows when only a body that got to its end lets it run."""
        start = dict(ctx.scope.names)
        try_site = f"{ctx.file.path}:{node.lineno}" if caught else ""
        if catches_import_error(node.handlers) and body_ctx.collector is not None:
            # An import this try catches (a name computed in a loop) is its own, not an alternative of
            # the ladder around it: where it fails, the handler here takes over.
            body_ctx = _evolve(body_ctx, collector=None, when=self._when(body_ctx))
        ended = self._try_body(node.body, body_ctx, caught, try_site, returns_instead(node.handlers))
        body_bound = {k: v for k, v in ctx.scope.names.items() if k not in start or start[k] is not v}
        for handler in node.handlers:
            handler_ctx = self._handler_ctx(node, handler, ctx)
            if try_site and catches_type_error(handler):
                handler_ctx = _evolve(handler_ctx, type_error_fallback=try_site)
            self._block(handler.body, handler_ctx)
            # `try: HAS = find_spec("pkg.a.b") is not None` / `except ImportError: HAS = False` (find_spec
            # raises when a parent package is missing): False there too, so HAS stays the probe.
            for name in _falsy_literals(handler.body) if catches_import_error([handler]) else ():
                probe = body_bound.get(name)
                if isinstance(probe, ModuleProbe) and probe.present:
                    ctx.scope.names[name] = probe
            if catches_only_version_errors(handler):
                # `try: v = parse(vllm.__version__)` / `except InvalidVersion: v = parse("0.8.5")`: the
                # handler is for a build whose version does not parse; a release's does, so v is its.
                ctx.scope.names.update({k: v for k, v in body_bound.items() if isinstance(v, ProviderVersion)})
            if len(handler_ctx.when) > len(ctx.when) and _consumer_first(handler_ctx):
                # `try: from <own module> import X except ImportError: from <provider> import X`: the
                # consumer's own module is there, so its X is the one bound.
                ctx.scope.names.update({k: v for k, v in body_bound.items() if isinstance(v, ConsumerValue)})
        gated = any(c.kind is ConditionKind.GATE for c in ended.when[len(body_ctx.when) :])
        if len(ended.when) > len(body_ctx.when) and all(
            leaves(h.body) or (gated and catches_only_version_errors_or_absence(h)) for h in node.handlers
        ):
            # `try: if find_spec("pkg.mod") is None: return None` / `except ImportError: return
            # None`: what follows runs only where the body got to its end, under what it found; so
            # past `except (PackageNotFoundError, InvalidVersion): pass` around a version gate,
            # which the provider's release never raises.
            return _evolve(ctx, when=(*ctx.when, *ended.when[len(body_ctx.when) :]))
        return None

    def _keep_imported(
        self, handler: list[ast.stmt], imported: dict[str, ProviderValue], group: ImportGroup, ctx: _Ctx
    ) -> None:
        """A ladder's ImportError handler that defines a class or function of its own under a name
        the body imported from the provider (`except ImportError: class Platform: pass`, for running
        without it) leaves the provider's object bound: where the plugin runs the provider is
        installed, and a missing import is the ladder's finding. Subclasses then derive from it.
        The group keeps what was stood in for: where the import fails, a use of the name is the
        stand-in's (unsloth-zoo's `AbstractWorkerManager`, for vLLM releases without it)."""
        for stmt in handler:
            if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in imported:
                if isinstance(ctx.scope.names.get(stmt.name), ConsumerValue):
                    ctx.scope.names[stmt.name] = imported[stmt.name]
                    group.stand_ins = (*group.stand_ins, *imported[stmt.name].choices)

    def _try_body(
        self, body: list[ast.stmt], ctx: _Ctx, caught: str, try_site: str = "", returns: bool = False
    ) -> _Ctx:
        """A try body. A TypeError its last statement raises is caught by the handler and loses only that
        statement's work (degraded); one raised earlier skips the rest of the body as well, which
        loses more unless the rest only sets names from values (`sets_locals_only`), or the handler
        returns from a function that returns a value elsewhere (`returns`: `guards.returns_instead`;
        its callers read the answer it gives for failure: a procedure's callers would not know).
        Returns the context the body ends in (an early `return` in it adds what the rest runs under)."""
        answers = returns and ctx.definition is not None and gives_value(ctx.definition)
        quiet = 0 if answers else len(body)  # body[quiet:] only sets the function's own names
        shared = shared_names(ctx.definition) if caught and ctx.definition is not None else set()
        while caught and ctx.definition is not None and quiet > 0 and sets_locals_only(body[quiet - 1 : quiet], shared):
            quiet -= 1
        for i, stmt in enumerate(body):
            last = caught and i + 1 >= quiet
            inner = _evolve(ctx, type_error_handler=caught, type_error_try=try_site) if last else ctx
            ctx = self._stmt(stmt, inner) or ctx
        return ctx

    def _imports_provider(self, body: list[ast.stmt], ctx: _Ctx) -> bool:
        return imports_package(body, self.provider_package, ctx.file.module, ctx.file.is_package)

    def _visit_For(self, node: ast.For | ast.AsyncFor, ctx: _Ctx) -> None:
        """A loop over a literal tuple or dict is unrolled; when its body breaks, its patches are alternatives."""
        items = self._eval(node.iter, ctx)
        ctx = _evolve(ctx, nested=True)
        if isinstance(items, dict):
            items = tuple(items)
        if isinstance(items, tuple) and 0 < len(items) <= _MAX_UNROLL:
            breaking = breaks(node.body)
            group = f"{ctx.file.path}:{node.lineno}" if breaking else ctx.loop_group
            before = dict(ctx.scope.names) if breaking else {}
            picked: dict[str, list[Value]] = {}  # what each turn of a loop that breaks binds
            for item in items:
                self._assign(node.target, item, None, ctx)
                self._block(node.body, _evolve(ctx, loop_group=group))
                for name, value in ctx.scope.names.items() if breaking else ():
                    if name not in before or before[name] is not value:
                        picked.setdefault(name, []).append(value)
            if picked:
                self._bind_choices(node, picked, group, ctx)
        else:
            # Over a collection of provider instances (`for output in outputs`, `outputs: list[C]`): a C each turn.
            self._assign(node.target, _each(items, node.target), None, ctx)
            self._block(node.body, ctx)
        self._block(node.orelse, ctx)

    _visit_AsyncFor = _visit_For

    def _bind_choices(
        self, node: ast.For | ast.AsyncFor, picked: dict[str, list[Value]], group: str, ctx: _Ctx
    ) -> None:
        """After a loop that breaks, a name its turns set to different strings (not the loop's own
        variable) holds any one of them: the turn that broke is not known here."""
        own = set(target_names(node.target))
        for name, values in picked.items():
            names = tuple(dict.fromkeys(v for v in values if isinstance(v, str)))
            if name not in own and len(names) > 1 and len(names) == len(values):
                ctx.scope.names[name] = NameChoice(names, group)

    def _visit_Assert(self, node: ast.Assert, ctx: _Ctx) -> _Ctx | None:
        """`assert <version gate>`: the rest of the block runs only when it holds. At module level it is a
        tripwire: importing the module raises where it fails."""
        test = self._eval(node.test, ctx)
        self._eval(node.msg, ctx)
        gate = self._gate_condition(node.test, test, ctx)
        if gate is not None and not ctx.function and ctx.record:
            self.usage.version_asserts.append(VersionAssert(gate, ctx.file.module, ctx.when))
        return _evolve(ctx, when=(*ctx.when, gate)) if gate is not None else None

    def _visit_While(self, node: ast.While, ctx: _Ctx) -> None:
        self._eval(node.test, ctx)
        ctx = _evolve(ctx, nested=True)
        self._block(node.body, ctx)
        self._block(node.orelse, ctx)

    def _visit_With(self, node: ast.With | ast.AsyncWith, ctx: _Ctx) -> None:
        as_try = suppressing_try(node)
        if as_try is not None:  # `with suppress(ImportError):` is a try that catches it
            self._visit_Try(as_try, ctx)
            return
        for item in node.items:
            value = self._eval(item.context_expr, ctx)
            if item.optional_vars is not None:
                self._assign(item.optional_vars, value, item.context_expr, ctx)
        self._block(node.body, ctx)

    _visit_AsyncWith = _visit_With

    def _visit_Match(self, node: ast.Match, ctx: _Ctx) -> None:
        self._eval(node.subject, ctx)
        ctx = _evolve(ctx, nested=True)
        for case in node.cases:
            self._block(case.body, ctx)

    # -- expressions -----------------------------------------------------------------

    def _eval(self, node: ast.expr | None, ctx: _Ctx) -> Value:
        """What `node` evaluates to, by its `_eval_<class name>` method, recording provider uses on the way."""
        if node is None:
            return None
        kind = node.__class__
        if kind not in self._evaluators:  # looked up once per class of node: this runs for every expression
            self._evaluators[kind] = getattr(type(self), f"_eval_{kind.__name__}", None)
        evaluate = self._evaluators[kind]
        if evaluate is not None:
            return evaluate(self, node, ctx)
        # Any other expression is not followed, but its parts may use the provider.
        for child in expr_children(node):
            self._eval(child, ctx)
        return None

    def _eval_GeneratorExp(
        self, node: ast.GeneratorExp | ast.ListComp | ast.SetComp | ast.DictComp, ctx: _Ctx
    ) -> Value:
        """A comprehension: its parts are read as any expression's; a loop variable over a
        collection of provider instances (`ElementsOf`) is one of them (`o.x for o in outputs`)."""
        inner = ctx
        for loop in node.generators:
            items = self._eval(loop.iter, inner)
            if (each := _each(items, loop.target)) is not None:
                if inner is ctx:
                    inner = _evolve(ctx, scope=Scope(ctx.scope))  # its variables are its own
                self._assign(loop.target, each, None, inner)
            for test in loop.ifs:
                self._eval(test, inner)
        parts = (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)
        for part in parts:
            self._eval(part, inner)
        return None

    _eval_ListComp = _eval_SetComp = _eval_DictComp = _eval_GeneratorExp

    def _eval_Constant(self, node: ast.Constant, ctx: _Ctx) -> Value:
        if isinstance(node.value, str):
            self._string_edge(node.value, node, ctx)
            return node.value
        return None

    def _eval_JoinedStr(self, node: ast.JoinedStr, ctx: _Ctx) -> Value:
        """An f-string's parts are read as any expression's. One that spells a module path below
        a consumer package (`f"vllm_omni.model_executor.models.{folder}.{name}"`, handed to the
        provider's model registry) may name any module there that it can spell, each computed part
        taken for a name or part of one, as a computed import name's."""
        for child in node.values:
            self._eval(child, ctx)
        prefix = _literal_prefix(node)
        rest = [v.value for v in node.values[1:] if isinstance(v, ast.Constant)]
        if (
            ctx.record
            and _MODULE_PREFIX.fullmatch(prefix)
            and all(isinstance(part, str) and _MODULE_PATH_PART.fullmatch(part) for part in rest)
            and self._is_consumer(prefix.split(".")[0])
        ):
            # A dotted path may end with an attribute (`f"pkg.{name}.Worker"`); after a ":" it does not.
            kind = (
                "glob" if ":" in "".join(str(v.value) for v in node.values if isinstance(v, ast.Constant)) else "path"
            )
            self._record_edge(ctx, f"{kind}:{_module_glob(node)}", node)
        return None

    def _eval_Name(self, node: ast.Name, ctx: _Ctx) -> Value:
        value = ctx.scope.lookup(node.id)
        if (
            self._kept_paths
            and isinstance(value, str)
            and ctx.record
            and (ctx.file.module, node.id) in self._kept_paths
        ):
            self._string_edge(value, node, ctx)  # where it is read, under what holds there
        return value

    def _path_kept_for_reads(self, node: ast.Assign, ctx: _Ctx) -> bool:
        """Is this a module-level constant naming a consumer module (`MODEL_CLASS =
        "pkg.models.old:Model"`) that only its own module reads (no other file of the consumer
        writes its name)? Then the module is named where the constant is read, under what holds
        there (xinference registers its vendored NaviDC-OCR model by that constant only below vLLM
        0.23), not where it is bound. Recorded in `_kept_paths`."""
        if ctx.function or ctx.owner or ctx.nested or ctx.when:
            return False  # (bound under a branch: named there, under what holds there)
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            return False
        value = node.value
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str) and len(value.value) <= 300):
            return False
        head = value.value.partition(":")[0]
        if not (_DOTTED.fullmatch(head) and not head.startswith(".") and self._is_consumer(head)):
            return False
        name = node.targets[0].id.encode()
        own = self._sources.get(ctx.file.path, b"")
        others = (s for path, s in self._sources.items() if path != ctx.file.path)
        word = re.compile(rb"\b" + re.escape(name) + rb"\b")
        bound = len(re.findall(rb"(?m)^" + re.escape(name) + rb"\s*[:=]", own))
        if bound != 1 or len(word.findall(own)) < 2:
            return False  # bound more than once, or read nowhere here
        if any(name in s and word.search(s) for s in (*others, *self._unscanned)):
            return False  # named in another file (looked for as bytes first: most files lack it)
        self._kept_paths.add((ctx.file.module, node.targets[0].id))
        return True

    def _eval_Tuple(self, node: ast.Tuple | ast.List | ast.Set, ctx: _Ctx) -> Value:
        return tuple(self._eval(e, ctx) for e in node.elts)

    _eval_List = _eval_Set = _eval_Tuple

    def _eval_Dict(self, node: ast.Dict, ctx: _Ctx) -> Value:
        out: dict[str, Value] = {}
        for k, v in zip(node.keys, node.values):
            key = self._eval(k, ctx) if k is not None else None
            if (
                _names_module(key)
                and self._is_provider(key)
                and isinstance(v, ast.Constant)
                and isinstance(v.value, str)
            ):
                # `{"vllm.layers.sampler": "plug.sampler"}`: an import hook's map (vllm-kunlun's), which
                # serves the consumer module when the provider's is imported, and only then.
                self._string_edge(v.value, v, ctx, after=key)
                out[key] = v.value
                continue
            val = self._eval(v, ctx)
            if isinstance(key, str):
                out[key] = val
        return out

    def _eval_Subscript(self, node: ast.Subscript, ctx: _Ctx) -> Value:
        base = self._eval(node.value, ctx)
        index = node.slice
        self._eval(index, ctx)
        if isinstance(base, tuple) and isinstance(index, ast.Constant) and isinstance(index.value, int):
            try:
                return base[index.value]
            except IndexError:
                return None
        if isinstance(base, dict) and isinstance(index, ast.Constant) and isinstance(index.value, str):
            return base.get(index.value)
        if isinstance(base, ProviderVersion):
            return version_slice(base, index)
        if isinstance(base, ElementsOf) and base.view != "items" and not isinstance(index, ast.Slice):
            return ReceiverValue(Receiver.INSTANCE, choices=base.choices)  # `outputs[0]`, `layers[name]`
        return None

    def _eval_Lambda(self, node: ast.Lambda, ctx: _Ctx) -> Value:
        # Its parameters hide the names around it (`lambda self: self.x` is not the method's `self`).
        scope = Scope(ctx.scope)
        a = node.args
        for param in (*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p is not None)):
            scope.names[param.arg] = None
        self._eval(node.body, _evolve(ctx, scope=scope))
        return LambdaValue(signature_of(node))

    def _eval_NamedExpr(self, node: ast.NamedExpr, ctx: _Ctx) -> Value:
        # `if (config := make_config()) is not None:` binds as `config = make_config()` does.
        value = self._eval_stored(node.value, ctx)
        self._bind(ctx, node.target.id, value)
        return value

    def _eval_BoolOp(self, node: ast.BoolOp, ctx: _Ctx) -> Value:
        values = []
        inner = ctx
        for operand in node.values:
            value = self._eval(operand, inner)
            values.append(value)
            absent = self._getattr_default(operand, value) if isinstance(node.op, ast.Or) else None
            if isinstance(value, Gate) and value.is_version:
                # `vllm_version_is("0.29.0") and self.uses_xdrope_dim`: what follows runs only where
                # the gate holds (past an `or`, only where it fails).
                site = self._site(ctx, operand)
                expect = isinstance(node.op, ast.And)
                condition = Condition(ConditionKind.GATE, site, _text(operand), gate=value, expect=expect)
                inner = _evolve(inner, when=(*inner.when, condition))
            elif (
                isinstance(value, AttributeProbe)
                and not value.by_default
                and value.present == isinstance(node.op, ast.And)
            ):
                # `hasattr(X, "n") and X.n`, `not hasattr(X, "n") or X.n`: what follows runs only where X has n.
                tested = {(value.owner, name) for name in value.names}
                inner = _evolve(inner, hasattr_guards=inner.hasattr_guards | tested)
            elif absent is not None:
                # `getattr(X, "new", None) or getattr(X, "old")`: what follows runs only when X.new is absent.
                owner, attr = absent
                site = self._site(ctx, operand)
                condition = Condition(ConditionKind.ATTR_ABSENT, site, _text(operand), refs=owner, attr=attr)
                inner = _evolve(inner, when=(*inner.when, condition))
        if isinstance(node.op, ast.Or) and isinstance(values[-1], ProviderVersion):
            if not any(isinstance(v, (ProviderVersion, Gate)) for v in values[:-1]):
                return values[-1]  # `envs.VLLM_VERSION or vllm.__version__`: an override, unset as a rule
        if any(isinstance(v, Gate) and v.is_version for v in values):
            # Beside a version gate, a test of a string the scan knows for None is a known truth
            # (`want is not None and vllm.__version__ == want`, `want` a helper's constant).
            values = [_none_test_of_string(n, ctx) if v is None else v for v, n in zip(values, node.values)]
        if any(isinstance(v, Gate) for v in values):
            texts = [_text(v) for v in node.values]
            return gates.combine(isinstance(node.op, ast.And), values, texts, _text(node))
        provider = next((v for v in values if isinstance(v, ProviderValue)), None)
        probe = next((v for v in values if isinstance(v, AttributeProbe) and v.present), None)
        if isinstance(node.op, ast.And) and probe is not None and provider is None:
            # `ready and isinstance(getattr(X, "n", None), type)`: where it holds X has n; where
            # it fails, X may have n all the same.
            return replace(probe, partial=True)
        # `a or b` in a ladder-ish expression: keep a provider value if there is one.
        return provider

    @staticmethod
    def _getattr_default(node: ast.expr, value: Value) -> tuple[tuple[Ref, ...], str] | None:
        """For `getattr(X, "name", default)` of a provider object: (X's choices, "name")."""
        if not (
            isinstance(value, ProviderValue)
            and value.guard is Guard.GETATTR_DEFAULT
            and isinstance(node, ast.Call)
            and dotted(node.func) == "getattr"
        ):
            return None
        return _owner_and_name(value)

    def _eval_Attribute(self, node: ast.Attribute, ctx: _Ctx, outer: bool = True) -> Value:
        # Of a chain `a.b.c`, only the whole chain (`outer`) is a use; `a.b` is a read on the way.
        inner = node.value
        if outer and isinstance(node.ctx, ast.Load):
            self._value_reads.add((_self_owner(inner, ctx), node.attr))
        if isinstance(inner, ast.Attribute):
            base = self._eval_Attribute(inner, ctx, outer=False)
        elif isinstance(inner, ast.Call) and ctx.function:
            # `get_pp_group().is_last_rank`, `make_runner().start()`: what the call makes, as a local
            # assigned it would hold (`_eval_Call`).
            base = self._eval_Call(inner, ctx, makes_instance=True)
        else:
            base = self._eval(inner, ctx)
        if isinstance(base, ProviderValue):
            self._record_read(base, node.attr, ReadKind.PLAIN)
            value = base.attr(node.attr)
            if outer and isinstance(node.ctx, ast.Load) and ctx.record:
                guard = self._patch_guard(ctx, base, node.attr)
                site = self._site(ctx, node)
                self.usage.attributes.append(AttributeUse(value.choices, site, guard, self._when(ctx), ctx.function))
            return self._as_version(value) or value
        if isinstance(base, (ProviderVersion, VersionSpecifier, SignatureOf)):
            return _computed_attribute(base, node.attr)
        if isinstance(inner, ast.Name) and inner.id == "self" and isinstance(node.ctx, ast.Load):
            state = self._state_gate(node.attr, ctx)  # `self.use_v2` reset under a version gate in __init__
            if state is not None:
                return state
        if isinstance(base, ConsumerValue):
            return self._reexported(f"{base.dotted}.{node.attr}")
        if isinstance(base, dict) and node.attr in ("items", "keys", "values", "update"):
            return DictMethod(node.attr, base)
        if isinstance(base, ElementsOf) and base.view == "mapping" and node.attr in ("items", "values", "get"):
            return MappingMethod(node.attr, base)
        if isinstance(base, str) and node.attr in ("partition", "rpartition", "split", "rsplit"):
            return StringMethod(base, node.attr)
        ref = _member_ref(base, node.attr)
        if ref is None:
            return None
        if ctx.record and not self._quiet and isinstance(node.ctx, ast.Load) and self._may_record(ref.owner):
            self._record_member_use(ref, node, ctx)
        return self._receiver_attribute(base, node.attr) if isinstance(base, ReceiverValue) else MemberChain(ref)

    def _may_record(self, owner: str) -> bool:
        """Are reads through `self` of this class worth recording? Not for a class known to derive
        from no provider class nor from one of the consumer's own, unless it has no base at all
        (a mixin, maybe: `_may_reach_provider`); an annotated receiver: always."""
        known = self._recording.get(owner)
        if known is None:
            cls = self._classes.get(owner) if owner else None
            if cls is None:
                return True  # not read yet: asked again later
            known = self._recording[owner] = not cls.bases or any(base.provider or base.consumer for base in cls.bases)
        return known

    def _record_member_store(self, owner: Value, node: ast.Attribute, ctx: _Ctx) -> None:
        """`x.name = ...` through a receiver typed as a provider class's instance or through an
        attribute chain (`vllm_config.scheduler_config.name = ...`), for `missing-member`."""
        if isinstance(owner, ReceiverValue) and owner.receiver is not Receiver.INSTANCE:
            return  # on `self` or `cls`: the consumer's own object
        ref = _member_ref(owner, node.attr)
        if ref is not None and self._may_record(ref.owner):
            self._record_member_use(ref, node, ctx, stored=True)

    def _record_member_use(
        self, ref: MethodRef, node: ast.expr, ctx: _Ctx, stored: bool = False, defaulted: bool = False
    ) -> None:
        """`x.name` read (or called) through a receiver, for `missing-member`; also `getattr(x,
        "name")`, and with a default (`defaulted`)."""
        hands_on = (
            ref.receiver is Receiver.SUPER
            and not ref.via
            and bool(ctx.owner)
            and ctx.function.rpartition(".")[2] == ref.name
            and not ref.name.startswith("__")
        )
        # Under a try catching AttributeError, or a `hasattr(X, name)` test (written, or kept in a
        # flag): the test holds where it runs (a provider class lacking the name makes it dead).
        site = self._site(ctx, node)
        tests = [(owner, attr) for owner, attr in ctx.hasattr_guards if attr == ref.name]
        present = _present(tests, site)
        use = MemberUse(
            ref,
            site,
            (*self._when(ctx), *present),
            ctx.try_guard or bool(tests),
            hands_on,
            ctx.function,
            stored,
            defaulted,
        )
        self._member_uses.setdefault(use, (ctx.file.module, ctx.function))

    def _read_mixins(self) -> None:
        """What mixins without bases set on the instance is what the classes mixing them in hold."""
        mixins = {base.consumer for cls in self._classes.values() for base in cls.bases} & self._baseless.keys()
        for name in mixins:
            if name in self._classes:
                assigned, false_only = _assignments(self._baseless[name])
                self._classes[name] = replace(self._classes[name], assigned=assigned, false_only=false_only)

    def _finish_members(self, contact: ContactSurface) -> None:
        """The member uses in classes that can reach the provider, each marked guarded where its
        function tests the name; who sets names from outside; which hooks the consumer names."""
        contact.member_uses = [
            use
            if use.guarded or not self._names_in_string(use.site.path, *where, use.method.name)
            else replace(use, guarded=True)
            for use, where in self._member_uses.items()
            if self._may_reach_provider(use.method)
        ]
        contact.member_stores = sorted(set(contact.member_stores))
        contact.outside_stores = sorted(set(contact.outside_stores), key=repr)
        held = {
            (h.holder, h.member) for h in contact.handovers if h.kind in (HandoverKind.ATTRIBUTE, HandoverKind.STORED)
        }
        contact.passed_members = sorted(
            f"{holder}:{member}" for holder, member in held if self._passes_on(holder, member)
        )

    def _passes_on(self, holder: str, member: str) -> bool:
        """Is `member` read for its object on something not `self`, or on `self` in a method of a
        class an instance of `holder` may be: one of the consumer classes in the order of `holder`
        or of a class deriving from it (a mixin too)? (vllm-ascend's connectors each keep their own
        `connector_scheduler`.)"""
        if ("", member) in self._value_reads:
            return True
        owners = {owner for owner, attr in self._value_reads if attr == member and owner}
        if not owners:
            return False
        line = [name for name in self._classes if name == holder or holder in self._consumer_bases(name)]
        return any(owners & ({name} | self._consumer_bases(name)) for name in line)

    def _consumer_bases(self, name: str) -> set[str]:
        """The consumer classes `name` derives from, through the consumer's own bases."""
        return set(itertools.islice(self._consumer_line(name), 1, None))

    def _may_reach_provider(self, ref: MethodRef) -> bool:
        """Can a lookup through this receiver meet a provider class? An annotated one does; `self`
        only in a class with a provider base (through its own bases), or in a class without bases
        that such a class mixes in: the others are left out."""
        if ref.receiver is Receiver.INSTANCE:
            return True
        if ref.owner in self._baseless and ref.receiver is Receiver.SELF:
            return ref.owner in self._mixed_in_reaching()
        if ref.owner not in self._reaching:
            found, seen, todo = False, set(), [ref.owner]
            while todo and not found:
                cls = self._classes.get(todo.pop())
                if cls is None or cls.name in seen:
                    continue
                seen.add(cls.name)
                found = any(base.provider for base in cls.bases)
                todo += [base.consumer for base in cls.bases if base.consumer]
            self._reaching[ref.owner] = found
        return self._reaching[ref.owner]

    def _mixed_in_reaching(self) -> set[str]:
        """The classes without bases that a class with a provider base (through its own bases) mixes in."""
        if self._mixins_reaching is None:
            self._mixins_reaching = {
                base.consumer
                for cls in self._classes.values()
                for base in cls.bases
                if base.consumer in self._baseless and self._may_reach_provider(MethodRef(Receiver.SELF, "", cls.name))
            }
        return self._mixins_reaching

    def _names_in_string(self, path: str, module: str, function: str, name: str) -> bool:
        """Does the function write `name` as a string (`hasattr(x, "name")`, `getattr(x, "name",
        None)`)? Read from its text, once per function."""
        key = (path, function)
        if key not in self._function_texts:
            fn = self._functions.get(f"{module}.{function}") if function else None
            text = self._text(path, fn.node) if fn is not None else None
            self._function_texts[key] = text or b""
        text = self._function_texts[key]
        return writes_as_string(text, name)

    def _eval_arguments(self, node: ast.Call, ctx: _Ctx) -> tuple[list[Value], dict[str, Value]]:
        """A call's positional and keyword arguments (`**kw` read for its uses, not kept)."""
        args = [self._eval(a.value if isinstance(a, ast.Starred) else a, ctx) for a in node.args]
        kwargs = {k.arg: self._eval(k.value, ctx) for k in node.keywords if k.arg}
        for k in node.keywords:
            if not k.arg:
                self._eval(k.value, ctx)
        if any(v.__class__ is MemberChain for v in (*args, *kwargs.values())):
            args = [_unchained(v) for v in args]
            kwargs = {k: _unchained(v) for k, v in kwargs.items()}
        return args, kwargs

    def _eval_Call(self, node: ast.Call, ctx: _Ctx, makes_instance: bool = False) -> Value:
        """What a call evaluates to. `makes_instance` (`layer = Linear(...)` in a function): a call
        of a provider callable that yields nothing else known is an instance of what it makes, as
        an attribute assigned so is. The checks judge calls on it only where that is known: the
        class called, or the class a function's return annotation names (`Hierarchy.instance_class`)."""
        func = node.func
        name = dotted(func)
        # What an attribute chain holds is read further, or called (a method call through it, recorded
        # below); passed on, it is unknown.
        chain = self._eval(func, ctx)
        callee = _unchained(chain)
        args, kwargs = self._eval_arguments(node, ctx)
        callee, mixed = _through_flags(callee, ctx.flags)
        if isinstance(callee, ProviderValue) and ctx.record:
            self._record_call(
                callee.choices,
                node,
                None,
                ctx,
                literals=tuple(a if isinstance(a, str) else None for a in args[:4]),
                by_attribute=isinstance(func, ast.Attribute),
                imported=isinstance(func, ast.Name) and ctx.scope.is_imported(func.id),
                mixed=mixed,
            )
            self._record_registration(args, kwargs, node, ctx)
            self._record_call_handovers(callee, node, [*args, *kwargs.values()], ctx)
        self._record_delegation(node, callee, args, ctx)
        if isinstance(callee, MethodValue) or (callee is None and name == "super"):
            return self._receiver_call(node, callee, args, ctx, makes_instance, kwargs)
        if chain.__class__ is MemberChain and ctx.record:
            # `self.kv_cache_manager.get_computed_blocks(r)`: judged where the provider's classes say
            # what the attributes on the way hold (`members.chain_receiver`).
            self._record_method_call(chain.ref, node, ctx)
            return None
        if isinstance(callee, ReceiverValue) and callee.receiver is Receiver.INSTANCE and callee.choices:
            # `layer(x)` of an instance of a provider class calls its class's `__call__` (torch's
            # `nn.Module` hands it to `forward`: `Hierarchy.call_target`).
            return self._receiver_call(node, callee.method("__call__"), args, ctx)
        if isinstance(callee, (DictMethod, MappingMethod)):
            return callee.call(args, kwargs)
        if callee is None and name in ("getattr", "hasattr", "setattr", "all"):
            return self._builtin_attr_call(name, node, args, ctx)
        if callee is None and name in ("isinstance", "callable") and args:
            return _class_test(name, node, args[0])
        if callee is None and name.rpartition(".")[2] == "extend_enum" and len(args) >= 3:
            # aenum's `extend_enum(Enum, "NAME", value)` adds a member (a value, never a replacement).
            if isinstance(args[0], ProviderValue) and isinstance(args[1], str):
                self._record_patch(ctx, node, args[0], args[1], node.args[2], args[2], literal=True)
            return None
        if name.endswith("import_module") and args and isinstance(args[0], NameChoice):
            return self._import_choice(node, args[0], ctx)
        if name.endswith("import_module") and args and isinstance(args[0], str) and not args[0].startswith("."):
            module = args[0]
            if self._is_provider(module):
                self._record_import(ctx, ImportUse(Ref(module), self._site(ctx, node), ImportKind.IMPORTLIB, ctx.via))
                return ProviderValue((Ref(module),))
            return ConsumerValue(module) if self._is_consumer(module) else None
        if (kept := _passed_through(name, callee, args)) is not None:
            # `cast(T, x)`: an x of class T; `cast(T, super())` is still `super()` (a mixin's hand-on).
            kept_value = args[kept]
            on_super = isinstance(kept_value, ReceiverValue) and kept_value.receiver is Receiver.SUPER
            cast_to = self._cast_type(node.args[0], ctx) if kept == 1 and not on_super else None
            return cast_to or kept_value
        if isinstance(callee, ConsumerValue):
            return self._consumer_call(callee, node, args, kwargs, ctx, makes_instance)
        return self._eval_other_call(name, callee, node, args, ctx, makes_instance)

    def _record_launch(self, func: ast.Subscript, node: ast.Call, ctx: _Ctx) -> None:
        """`kernel[grid](...)` of a provider kernel: a Triton launch (vllm-ascend launches vLLM's
        `_compute_slot_mapping_kernel` with keywords only vLLM main's kernel takes)."""
        kernel = self._eval(func.value, _evolve(ctx, record=False))
        if isinstance(kernel, ProviderValue):
            imported = isinstance(func.value, ast.Name) and ctx.scope.is_imported(func.value.id)
            self._record_call(kernel.choices, node, None, ctx, launch=True, imported=imported)

    def _dataclass_replace(self, node: ast.Call, args: list[Value], ctx: _Ctx) -> Value:
        """`dataclasses.replace(obj, name=value)` of an instance of a provider class: its class is
        called with every field, recorded as a call passing the names given and `**` the rest
        (vllm-omni 0.28's `replace(spec, indexes_kv_by_block_stride=...)` of a `spec: AttentionSpec`,
        a field vLLM 0.30 removed). What it makes is another instance of that class."""
        obj = args[0] if len(node.args) == 1 else None
        if not (isinstance(obj, ReceiverValue) and obj.receiver is Receiver.INSTANCE and obj.choices):
            return None
        if ctx.record:
            shape = CallShape(0, tuple(k.arg for k in node.keywords if k.arg), starstar=True)
            self._record_call(obj.choices, node, shape, ctx, replaces=True)
        return obj

    def _record_call(
        self, choices: tuple[Ref, ...], node: ast.Call, shape: CallShape | None, ctx: _Ctx, **more: Any
    ) -> None:
        """A call of a provider object at `node` passing `shape` (None: what the call passes, one
        `CallUse` for each way of `_call_shapes`), with `more` of its fields, under the conditions
        that hold there and the try around it that catches TypeError."""
        when = self._when(ctx)
        site = self._site(ctx, node)
        hands_on = shape is None and ctx.via and any(k.arg is None and _handed_on(k.value, ctx) for k in node.keywords)
        handed = str(ctx.via[-1]) if hands_on else ""
        for passed, holds in [(shape, when)] if shape is not None else self._call_shapes(node, ctx, when):
            use = CallUse(
                choices,
                site,
                passed,
                when=holds,
                caught=ctx.type_error_handler,
                try_site=ctx.type_error_try,
                fallback_of=ctx.type_error_fallback,
                keywords_from=handed,
                **more,
            )
            self.usage.calls.append(use)

    def _namespace_copy(self, node: ast.Call, ctx: _Ctx) -> ProviderValue | None:
        """`SimpleNamespace(**module.__dict__)` (or `**vars(module)`) of a provider object: a copy
        holding what it holds, read as the object itself. Served as the module it copies
        (vllm-kunlun's `sys.modules["vllm.utils"] = _wrapped`), the names it lacks fail to import
        as they would from the module, and what is set on the copy is judged as set on the module
        (what imports from it later gets that), except that the module's own code never reads it."""
        if node.args or len(node.keywords) != 1 or node.keywords[0].arg is not None:
            return None
        spread = node.keywords[0].value
        if isinstance(spread, ast.Attribute) and spread.attr == "__dict__":
            copied = spread.value
        elif isinstance(spread, ast.Call) and dotted(spread.func) == "vars" and len(spread.args) == 1:
            copied = spread.args[0]
        else:
            return None
        value = self._eval(copied, ctx)
        return replace(value, copy=True) if isinstance(value, ProviderValue) else None

    def _consumer_call(
        self,
        callee: ConsumerValue,
        node: ast.Call,
        args: list[Value],
        kwargs: dict[str, Value],
        ctx: _Ctx,
        makes_instance: bool,
    ) -> Value:
        """A call of a consumer function or class: a helper followed, its version answer, or (with
        `makes_instance`, `runner = MyRunner(...)`) an instance typed like `self` in that class."""
        self._record_class_call(callee, node, ctx)
        if ctx.returns is None:
            self._call_helper(callee, node, args, kwargs, ctx)
        flags, flagged = _literal_flags(node, args, kwargs)
        value = self._helper_value(callee, flags, flagged, ctx)
        if value is None and makes_instance and (cls := self._consumer_class(callee.dotted)) is not None:
            return ReceiverValue(Receiver.SELF, cls.name, other=True)
        if value is None and makes_instance and (fn := self._function(callee.dotted, load=False)) is not None:
            return self._annotated_return(fn)
        return value

    def _annotated_return(self, fn: _Function) -> Value:
        """An instance of the provider class a consumer function's return annotation names, read
        where the function is defined (vllm-omni's `def _start_api_server_process_manager(...) ->
        APIServerProcessManager`); None otherwise. Only the scanned modules' functions are asked
        for (no module is loaded for it)."""
        if fn.node.returns is None:
            return None
        where = _Ctx(fn.file, Scope(fn.closure), fn.qualname, record=False)
        choices = self._unshadowed(self._provider_type(fn.node.returns, where), fn.file.path)
        return ReceiverValue(Receiver.INSTANCE, choices=choices) if choices else None

    def _record_class_call(self, callee: ConsumerValue, node: ast.Call, ctx: _Ctx) -> None:
        """`Cls(...)` of what may be a consumer class (one read already, or a name written as a
        class's): kept until the scan knows its classes, then judged against the `__init__` its
        order runs (`inits`)."""
        if ctx.record and (callee.dotted in self._classes or callee.dotted.rpartition(".")[2][:1].isupper()):
            self._class_calls.append((callee.dotted, node, ctx, self._when(ctx)))

    def _eval_other_call(
        self, name: str, callee: Value, node: ast.Call, args: list[Value], ctx: _Ctx, makes_instance: bool = False
    ) -> Value:
        """Calls that compute a version, a gate (a test of a provider callable's parameters too), a
        module name or a split dotted path; a copy of a provider module (`_namespace_copy`);
        registry patches; with `makes_instance`, a new instance of a provider class (`_eval_Call`);
        a Triton launch of a provider kernel (recorded)."""
        if callee is None and isinstance(node.func, ast.Subscript) and ctx.record:
            self._record_launch(node.func, node, ctx)
            return None
        if callee is None and name in ("type", "SimpleNamespace", "types.SimpleNamespace"):
            made = self._made_object(name, node, ctx)
            if made is not None:
                return made
        if isinstance(callee, DataclassReplace) or (
            callee is None and name == "dataclasses.replace" and ctx.scope.lookup("dataclasses") is None
        ):
            return self._dataclass_replace(node, args, ctx)
        if name.rpartition(".")[2] == "find_spec" and args and isinstance(args[0], str) and self._is_provider(args[0]):
            return ModuleProbe(Ref(args[0]))  # a feature test: `if find_spec("pkg.new") is not None:`
        if callee is None and isinstance(node.func, ast.Attribute) and node.func.attr == "issubset":
            probe = _parameters_probe(node.func.value, args, node.keywords)
            if probe is not None:
                return probe
        if callee is None and name in ("inspect.signature", "signature") and len(args) == 1:
            return _signature_of(args[0])  # `"x" in inspect.signature(f).parameters`: a feature test
        if callee is None or isinstance(callee, (VersionMethod, SpecifierContains)):
            name = self._aliases.get(ctx.file.path, {}).get(name, name)
            found = self._version_call(name, callee, node, args, ctx)
            if found is not None:
                return found
        if callee is None:
            self._dynamic_import_edge(name, node, args, ctx)
        if isinstance(node.func, ast.Call) and args:  # register_patch(target="pkg.m.C.f")(replacement)
            self._string_target_patch(node.func, args[0], ctx)
        if isinstance(callee, StringMethod):
            literal = [ast.literal_eval(a) if isinstance(a, ast.Constant) else None for a in node.args]
            return callee.call(tuple(literal))
        if (
            makes_instance
            and isinstance(callee, ProviderValue)
            and (choices := self._unshadowed(callee.choices, ctx.file.path))
        ):
            return ReceiverValue(Receiver.INSTANCE, choices=choices)
        return None

    def _all_hasattr(self, node: ast.expr, ctx: _Ctx) -> AttributeProbe | None:
        """`all(hasattr(X, n) for n in ("a", "b"))` of a provider object: a probe of every name."""
        if not (isinstance(node, ast.GeneratorExp) and len(node.generators) == 1):
            return None
        loop, test = node.generators[0], node.elt
        names = literal_strings(loop.iter)
        if (
            loop.ifs
            or not names
            or not isinstance(loop.target, ast.Name)
            or not (isinstance(test, ast.Call) and dotted(test.func) == "hasattr" and len(test.args) == 2)
            or not (isinstance(test.args[1], ast.Name) and test.args[1].id == loop.target.id)
        ):
            return None
        owner = self._eval(test.args[0], ctx)
        if not isinstance(owner, ProviderValue):
            return None
        for attr in names:
            self._record_read(owner, attr, ReadKind.HASATTR)
        return AttributeProbe(owner.choices, tuple(names))

    def _builtin_attr_call(self, name: str, node: ast.Call, args: list[Value], ctx: _Ctx) -> Value:
        if name == "getattr" and len(args) >= 2 and isinstance(args[1], str):
            self._value_reads.add((_self_owner(node.args[0], ctx), args[1]))
            ref = _member_ref(args[0], args[1]) if ctx.record and not self._quiet else None
            if ref is not None and not node.keywords and self._may_record(ref.owner) and not _falls_back(node):
                # Through a receiver: a read as `x.name` is, or with a default one that nothing raises for.
                self._record_member_use(ref, node, ctx, defaulted=len(node.args) > 2)
        if name == "setattr" and len(args) >= 2 and isinstance(args[1], (str, NameChoice)) and ctx.record:
            # Set by name, from wherever.
            names = [args[1]] if isinstance(args[1], str) else args[1].names
            self.usage.contact.member_stores.extend(names)
            site = self._site(ctx, node)
            self.usage.contact.outside_stores.extend(OutsideStore(name, site, ctx.function) for name in names)
        if name == "all":
            return self._all_hasattr(node.args[0], ctx) if len(node.args) == 1 and not node.keywords else None
        if len(args) >= 2 and isinstance(args[0], ProviderValue) and isinstance(args[1], NameChoice):
            return self._chosen_attr_call(name, node, args[0], args[1], args, ctx)
        if len(args) < 2 or not isinstance(args[0], ProviderValue) or not isinstance(args[1], str):
            return None
        owner, attr = args[0], args[1]
        if name == "hasattr":
            self._record_read(owner, attr, ReadKind.HASATTR)
            return AttributeProbe(owner.choices, (attr,))
        if name == "setattr" and len(args) >= 3:
            self._record_patch(ctx, node, owner, attr, node.args[2], args[2])
            return None
        if name == "getattr":
            return self._getattr(node, owner, (attr,), args, ctx)
        return None

    def _getattr(
        self, node: ast.Call, owner: ProviderValue, names: tuple[str, ...], args: list[Value], ctx: _Ctx
    ) -> ProviderValue:
        """`getattr(owner, name[, default])`, or with a name a loop picked among `names`: one read whose
        choices are the names (it resolves wherever one of them exists)."""
        has_default = len(args) >= 3 or any(k.arg == "default" for k in node.keywords)
        for attr in names:
            self._record_read(owner, attr, ReadKind.DEFAULT if has_default else ReadKind.PLAIN)
        value = ProviderValue(tuple(ref for attr in names for ref in owner.attr(attr).choices), owner.guard)
        # With a default, judged only against a baseline that had it (see checks).
        guard = Guard.GETATTR_DEFAULT if has_default else self._patch_guard(ctx, owner, names[0])
        if ctx.record:
            self.usage.attributes.append(
                AttributeUse(value.choices, self._site(ctx, node), guard, self._when(ctx), ctx.function)
            )
        if not has_default:
            return value
        default = node.args[2] if len(node.args) >= 3 else next(k.value for k in node.keywords if k.arg == "default")
        none_default = isinstance(default, ast.Constant) and default.value is None
        return ProviderValue(value.choices, Guard.GETATTR_DEFAULT, none_default=none_default)

    def _import_choice(self, node: ast.Call, choice: NameChoice, ctx: _Ctx) -> Value:
        """`import_module(name)` of a name a loop picked (`if find_spec(candidate): name = candidate;
        break`): a ladder whose alternatives are its names, when all of them are provider modules
        (one of the consumer's own, always there, or of another package, unknown: nothing)."""
        modules = [n for n in choice.names if not n.startswith(".") and self._is_provider(n)]
        if len(modules) != len(choice.names):
            return None  # one is the consumer's own or another package's: not a ladder of the provider
        if ctx.record:
            site = self._site(ctx, node)
            uses = [[ImportUse(Ref(m), site, ImportKind.IMPORTLIB, ctx.via)] for m in modules]
            group = ImportGroup(ctx.file.path, site.line, ctx.function, True, uses, when=ctx.when)
            self.usage.groups.append(_caught_by(group, ctx.import_handler))
        return ProviderValue(tuple(Ref(m) for m in modules))

    def _chosen_attr_call(
        self, name: str, node: ast.Call, owner: ProviderValue, choice: NameChoice, args: list[Value], ctx: _Ctx
    ) -> Value:
        """`getattr`/`setattr` with a name a loop picked (`NameChoice`): any one of its names. The
        patches are alternatives of one another (one installs wherever one of the names exists); a
        read is one use whose choices are the names (it resolves wherever one of them exists)."""
        if name == "setattr" and len(args) >= 3:
            inner = _evolve(ctx, loop_group=choice.group)
            for attr in choice.names:
                self._record_patch(inner, node, owner, attr, node.args[2], args[2])
            return None
        return self._getattr(node, owner, choice.names, args, ctx) if name == "getattr" else None

    # -- functions and helper calls --------------------------------------------------

    def _enqueue(
        self,
        fn: _Function,
        binding: dict[str, Value],
        via: tuple[Site, ...],
        depth: int,
        when: tuple[Condition, ...] = (),
    ) -> None:
        key = (id(fn.node), fn.outer, _bound_text(binding), when)
        if key in self._seen_calls or depth > _MAX_DEPTH or (fn.muted and not binding):
            return
        self._seen_calls.add(key)
        self._queue.append(_Rescan(fn, binding, via, depth, when))

    def _run_function(self, job: _Rescan) -> None:
        fn = job.function
        scope = Scope(fn.closure)
        versions = self._version_params(fn) if not job.binding else {}
        for name in fn.params:
            scope.names[name] = job.binding.get(name, versions.get(name))
        a = fn.node.args
        for extra in (a.vararg, a.kwarg):
            if extra is not None:
                scope.names[extra.arg] = job.binding.get(extra.arg)  # a `**` handed on: `_forwarded_keywords`
        self._bind_receivers(fn, scope)
        bound = (*fn.outer, *_bound_text(job.binding))
        ctx = _Ctx(
            fn.file,
            scope,
            function=fn.qualname,
            via=job.via,
            depth=job.depth,
            owner=fn.owner,
            when=(*fn.when, *job.when, *self._installed_when(fn), *self._called_when(fn)),
            bound=bound,
            definition=fn.node,
        )
        test = feature_test(fn.node)
        if test is not None:
            self._feature_tests.add(id(test))
        self._block(fn.node.body, ctx)

    def _installed_when(self, fn: _Function) -> tuple[Condition, ...]:
        """The version gates a module-level function runs under because it is only ever installed
        as a patch, once, under them, and named nowhere else (vllm-ascend 0.28 installs
        `_ascend_pool_bytes_per_block` only `if not vllm_version_is("0.28.0"):`). Installs at
        module level are all recorded before any function body is read."""
        installs = self._installs.get(fn.dotted, [])
        if "." in fn.qualname or len(installs) != 1 or not installs[0]:
            return ()
        return installs[0] if self._times_written(fn.node.name) == 2 else ()  # its definition and the install

    def _called_once(self, fn: _Function) -> bool:
        """Is `fn` a private module-level function whose name its file writes twice only (its
        definition and one call)? Read from the bytes: cheap enough to ask of every function."""
        name = fn.node.name
        if fn.owner or "." in fn.qualname or not name.startswith("_"):
            return False
        return self._sources.get(fn.file.path, b"").count(name.encode()) == 2

    def _waits_for_caller(self, fn: _Function) -> bool:
        """Is `fn` called once (`_called_once`) at a place not read yet? Its plain reading waits."""
        return self._called_once(fn) and fn.dotted not in self._call_sites

    def _called_when(self, fn: _Function) -> tuple[Condition, ...]:
        """What held at the one call of `fn` (`_called_once`, named in no other file): its body runs
        only there, also when read again with the values that call passes (vllm-ascend 0.28 calls
        its stride-aware KV planner only past `if vllm_version_is("0.28.0") or ...: return`)."""
        if not self._called_once(fn):
            return ()
        sites = self._call_sites.get(fn.dotted, {})
        when = next(iter(sites.values())) if len(sites) == 1 else ()
        return when if when and not self._named_in_other_files(fn) else ()

    def _version_params(self, fn: _Function) -> dict[str, Value]:
        """The parameters of a private module-level function that every call of it passes the
        provider's version (`_select(vllm.__version_tuple__, ...)`, all in its own module, the name
        used for nothing else): bound to that version in the function's own reading, so the gates it
        tests are decided there (a module it names for one release is not reached at another)."""
        name = fn.node.name
        if fn.owner or "." in fn.qualname or not name.startswith("_") or not fn.params:
            return {}
        calls, uses = self._private_calls(fn.file).get(name, ([], 0))
        if not calls or uses != len(calls):  # also passed, stored or rebound: not only called
            return {}
        # First without recording anything: most such functions are passed no version, and then
        # the other files' text need not be searched for the name.
        quiet, self._quiet = self._quiet, True
        try:
            if not self._versions_passed(fn, calls):
                return {}
        finally:
            self._quiet = quiet
        if self._named_in_other_files(fn):
            return {}  # imported by another module, whose calls are not looked at
        return self._versions_passed(fn, calls)

    def _named_in_other_files(self, fn: _Function) -> bool:
        """Does another file of the consumer (scanned or not) write the function's name (it may
        import it)?"""
        key = (fn.file.path, fn.node.name)
        if key not in self._named_elsewhere:  # asked once per function
            word = fn.node.name.encode()
            others = (source for path, source in self._sources.items() if path != fn.file.path)
            self._named_elsewhere[key] = any(word in source for source in (*others, *self._unscanned))
        return self._named_elsewhere[key]

    def _versions_passed(self, fn: _Function, calls: list[ast.Call]) -> dict[str, Value]:
        """The parameters of `fn` that every one of `calls` passes the same provider version."""
        module_ctx = _Ctx(fn.file, self._scopes[fn.file.module], record=False)
        a = fn.node.args
        positional = len(a.posonlyargs) + len(a.args)  # what a call's positional arguments can bind
        found: dict[str, Value] = {}
        for i, param in enumerate(fn.params):
            values = []
            for call in calls:
                by_position = i < positional and i < len(call.args)
                arg = call.args[i] if by_position else next((k.value for k in call.keywords if k.arg == param), None)
                # Only a plain attribute or name is evaluated here: a call could have effects.
                values.append(self._eval(arg, module_ctx) if isinstance(arg, (ast.Attribute, ast.Name)) else None)
            if all(isinstance(v, ProviderVersion) for v in values) and len(set(values)) == 1:
                found[param] = values[0]
        return found

    def _private_calls(self, file: _File) -> dict[str, tuple[list[ast.Call], int]]:
        """Each private name of a module that mentions a version -> the calls of it by that name,
        and how often the name occurs at all (one walk of the module, kept); empty for the others."""
        found = self._private_names.get(file.module)
        if found is None:
            found = {}
            tree = self._trees.get(file.module) if b"version" in self._sources.get(file.path, b"") else None
            for node in every_node(tree) if tree is not None else ():
                if isinstance(node, ast.Name) and node.id.startswith("_"):
                    calls, uses = found.get(node.id, ([], 0))
                    found[node.id] = (calls, uses + 1)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("_"):
                    found.setdefault(node.func.id, ([], 0))[0].append(node)
            self._private_names[file.module] = found
        return found

    def _call_helper(
        self, callee: ConsumerValue, node: ast.Call, args: list[Value], kwargs: dict[str, Value], ctx: _Ctx
    ) -> None:
        if self._pending is not None:  # module bodies are still being read
            self._pending.append((callee, node, args, kwargs, ctx))
            return
        self._call_sites.setdefault(callee.dotted, {})[f"{ctx.file.path}:{node.lineno}:{node.col_offset}"] = ctx.when
        defined = self._functions.get(callee.dotted)
        if defined is not None and "." not in defined.qualname:
            calls = self._own_calls.setdefault((defined.file.path, defined.qualname), {})
            calls[f"{ctx.file.path}:{node.lineno}:{node.col_offset}"] = ctx.catching_import
        values = (*args, *kwargs.values())
        provider = self._hands_provider(values)
        member = self._hands_member(values)
        forwarded = self._forwarded_keywords(callee, node, kwargs)
        if not (provider or member or forwarded):
            return
        # For a receiver's member only the scanned modules' helpers are read again: loading the
        # helper modules outside the scan for it cost a third of a plugin folder's scan.
        fn = self._function(callee.dotted, load=provider)
        if fn is None:
            return
        self._read_with(fn, node, args, kwargs, ctx, forwarded)

    def _hands_member(self, values: Iterable[Value]) -> bool:
        """Does a call hand a helper what its reads go through as through a receiver: a
        receiver's member (`helper(self.vllm_config)`), an instance of a provider class, or a
        parameter the provider hands an override (`Receiver.PARAM`, typed once the provider's
        classes are known)? Only arguments that can lead into the provider are worth reading a
        helper again; `_hands_provider` answers for provider objects and module names."""
        return any(
            (isinstance(v, MethodValue) and self._may_record(v.ref.owner))
            or (isinstance(v, ReceiverValue) and v.receiver in (Receiver.INSTANCE, Receiver.PARAM))
            for v in values
        )

    def _read_with(
        self,
        fn: _Function,
        node: ast.Call,
        args: list[Value],
        kwargs: dict[str, Value],
        ctx: _Ctx,
        forwarded: dict[str, dict[str, Value]] | None = None,
        method: bool = False,
    ) -> None:
        """Read `fn` again with what the call at `node` hands its parameters (a `method` called
        through its receiver: its first parameter is that receiver, bound as it always is)."""
        params = fn.params
        static = method and any(dotted(d) == "staticmethod" for d in fn.node.decorator_list)
        if (method and not static) or (
            isinstance(fn.node, ast.FunctionDef) and "." in fn.qualname and params and params[0] in ("self", "cls")
        ):
            params = params[1:]
        binding = dict(zip(params, args))
        binding.update({k: v for k, v in kwargs.items() if k in params})
        binding.update(forwarded or {})
        self._enqueue(fn, binding, (*ctx.via, self._site(ctx, node)), ctx.depth + 1, self._when(ctx))

    def _forwarded_keywords(
        self, callee: ConsumerValue, node: ast.Call, kwargs: dict[str, Value]
    ) -> dict[str, dict[str, Value]] | None:
        """For a call of a consumer helper that hands its `**` parameter on unchanged
        (`passed_on_unchanged`), that parameter bound to the keywords the call passes beyond the
        helper's named ones, as a dict: its own calls with `**` of it pass those. None when the call
        passes none, or a `**` of its own (then they are not known). Only the scanned modules'
        helpers."""
        if not node.keywords or any(k.arg is None for k in node.keywords):
            return None
        fn = self._function(callee.dotted, load=False)
        if fn is None:
            return None
        if id(fn.node) not in self._kwargs_handed_on:
            self._kwargs_handed_on[id(fn.node)] = passed_on_unchanged(fn.node)
        name = self._kwargs_handed_on[id(fn.node)]
        a = fn.node.args
        named = {p.arg for p in (*a.args, *a.kwonlyargs)}  # a positional-only name passed by keyword goes to `**`
        extra = {k: v for k, v in kwargs.items() if k not in named}
        return {name: extra} if name is not None and extra else None

    # -- conditions: version gates, hasattr's other branch, try handlers -------------------

    def _when(self, ctx: _Ctx) -> tuple[Condition, ...]:
        """The conditions of a use recorded now: its block's, and in a ladder's try body the imports before it."""
        if ctx.collector and ctx.ladder is not None:
            refs = tuple(dict.fromkeys(u.ref for u in ctx.collector))
            after = Condition(ConditionKind.AFTER_IMPORTS, Site(ctx.ladder.path, ctx.ladder.line), refs=refs)
            return (*ctx.when, after)
        return ctx.when

    def _direct_hasattr(self, node: ast.If, ctx: _Ctx) -> tuple[tuple[tuple[Ref, ...], str] | None, bool] | None:
        """For a test that is exactly `hasattr(X, "n")` or `not hasattr(X, "n")`: (guard, negated), the
        read recorded; None, with nothing evaluated, for any other test."""
        test, negated = node.test, False
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negated = test.operand, True
        if not (
            isinstance(test, ast.Call) and dotted(test.func) == "hasattr" and len(test.args) == 2 and not test.keywords
        ):
            return None
        owner, name = self._eval(test.args[0], ctx), self._eval(test.args[1], ctx)
        if not isinstance(owner, ProviderValue) or not isinstance(name, str):
            return None, negated
        # `if not hasattr(X, "n"):` is an idempotency or ordering check, not a guard around a use of X.n;
        # so is `if hasattr(X, "n"): return` with nothing else in its body.
        self._record_read(owner, name, ReadKind.ABSENT if negated or _only_leaves(node) else ReadKind.HASATTR)
        if negated and ctx.record and node.body and isinstance(node.body[-1], ast.Raise):
            # `if not hasattr(X, "n"): raise ...` requires X.n (unless the consumer adds it itself).
            use = AttributeUse(
                owner.attr(name).choices, self._site(ctx, test), Guard.REQUIRED, self._when(ctx), ctx.function
            )
            self.usage.attributes.append(use)
        return (owner.choices, name), negated

    def _absent(
        self, node: ast.If, owner: tuple[Ref, ...], names: tuple[str, ...], ctx: _Ctx, only: bool = True
    ) -> _Ctx:
        """`ctx` for the branch of `node` that runs only where the provider's owner lacks one of `names`;
        without `only` (`hasattr(X, "n") and ...`), wherever it lacks them, and maybe elsewhere too."""
        first, *more = names
        site, text = self._site(ctx, node), _text(node.test)
        kind = ConditionKind.ATTR_ABSENT if only else ConditionKind.ATTR_ABSENT_OR
        condition = Condition(kind, site, text, refs=owner, attr=first, also=tuple(more))
        return _evolve(ctx, when=(*ctx.when, condition))

    def _gate_condition(self, test: ast.expr, value: Value, ctx: _Ctx) -> Condition | None:
        """The condition a version gate puts on the branch it opens (recorded for --verbose and gate-flip),
        or a test of whether the provider has a module (`find_spec`)."""
        if isinstance(value, ConsumerValue):
            value = self._consumer_global(value.dotted)
        if isinstance(value, ModuleProbe):
            probe = Condition(
                ConditionKind.MODULE_FOUND, self._site(ctx, test), _text(test), refs=(value.ref,), expect=value.present
            )
            if ctx.record:
                self.usage.module_probes.append(probe)
            return probe
        if isinstance(value, ParameterProbe):
            site, text = self._site(ctx, test), _text(test)
            return Condition(
                ConditionKind.PARAM_TAKEN,
                site,
                text,
                refs=value.choices,
                attr=value.name,
                also=value.also,
                expect=value.present,
            )
        if not isinstance(value, Gate) or not value.is_version:
            return None
        text = _text(test)
        if isinstance(test, (ast.Name, ast.Attribute)) and value.text and value.text != text:
            text = value.text if value.text.startswith(text) else f"{text} (= {value.text})"
        condition = Condition(ConditionKind.GATE, self._site(ctx, test), text, gate=value)
        if ctx.record:
            self.usage.gates.append(condition)
        return condition

    def _gated_branches(
        self, node: ast.If, gate: Condition, ctx: _Ctx, top: bool = False, in_function: bool = False
    ) -> _Ctx | None:
        """The branches of an `if` on a gate (`top`: a statement of the module body; `in_function`:
        of a function's body)."""
        taken = _evolve(ctx, when=(*ctx.when, gate))
        other = _evolve(ctx, when=(*ctx.when, replace(gate, expect=not gate.expect)))
        place = (ctx.file.path, node.test.lineno)
        self._gate_at[place] = gate if self._gate_at.get(place, gate) == gate else None
        raises = ctx.record and bool(node.body) and isinstance(node.body[-1], ast.Raise) and not leaves(node.orelse)
        if top and raises:
            stop = ModuleStop(self._site(ctx, node.body[-1]), ctx.file.module, ctx.file.is_package, other.when)
            self.usage.module_stops.append(stop)
        if in_function and raises and gate.kind is ConditionKind.PARAM_TAKEN:
            holds = replace(gate, expect=not gate.expect)
            requirement = Requirement(self._site(ctx, node.body[-1]), ctx.file.module, ctx.function, holds)
            self.usage.requirements.append(requirement)
        self._branches([(node.body, taken), (node.orelse, other)], ctx.scope)
        # `if gate: FLAG = False` / `else: FLAG = True`: the flag is the gate (or its negation).
        if gate.gate is not None:
            for name, value in _flags_set(node).items():
                self._bind(ctx, name, gate.gate if value else gates.negate(gate.gate, f"not {gate.text}"))
        # `if gate: return` (or raise): the rest of the block runs only when the gate is false.
        if leaves(node.body) and not leaves(node.orelse):
            return other
        if leaves(node.orelse) and not leaves(node.body):
            return taken
        return None

    def _eval_IfExp(self, node: ast.IfExp, ctx: _Ctx, makes_instance: bool = False) -> Value:
        """Both sides read, each under the version gate its test is, if it is one. With
        `makes_instance` (`proposer = Proposer(...) if spec else None` in a function), outside a
        gate: what a call on one side makes when the other is None."""
        gate = self._gate_condition(node.test, self._eval(node.test, ctx), ctx)
        if gate is None:
            sides = [
                self._eval_Call(side, ctx, makes_instance=True)
                if makes_instance and isinstance(side, ast.Call)
                else self._eval(side, ctx)
                for side in (node.body, node.orelse)
            ]
            if not makes_instance:
                return None
            nones = [isinstance(s, ast.Constant) and s.value is None for s in (node.body, node.orelse)]
            return sides[0] if nones[1] else sides[1] if nones[0] else None
        self._eval(node.body, _evolve(ctx, when=(*ctx.when, gate)))
        self._eval(node.orelse, _evolve(ctx, when=(*ctx.when, replace(gate, expect=not gate.expect))))
        return None

    def _eval_Compare(self, node: ast.Compare, ctx: _Ctx) -> Value:
        sides = [node.left, *node.comparators]
        # `x.member is not None` hands nothing on (see `passed_members`): not a read for the object.
        tested = _none_tested(node)
        read = (_self_owner(tested.value, ctx), tested.attr) if tested is not None else None
        unread = read if read is not None and read not in self._value_reads else None
        values = [self._comparable(self._eval(n, ctx), n) for n in sides]
        if unread is not None:
            self._value_reads.discard(unread)
        probe = next((v for v in values if isinstance(v, ModuleProbe)), None)
        if probe is not None and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            if any(isinstance(n, ast.Constant) and n.value is None for n in sides):  # find_spec(...) is not None
                return probe if isinstance(node.ops[0], ast.IsNot) else probe.negated()
        held = next((v for v in values if isinstance(v, ProviderValue) and v.none_default), None)
        if held is not None and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            # `found = getattr(X, "n", None)` ... `if found is None:`: a test of whether X has n
            # (unless X.n is None itself), as `hasattr` is.
            owned = _owner_and_name(held)
            if owned is not None and any(isinstance(n, ast.Constant) and n.value is None for n in sides):
                return AttributeProbe(owned[0], (owned[1],), isinstance(node.ops[0], ast.IsNot), by_default=True)
        if (
            len(values) == 2
            and isinstance(values[1], SignatureOf)
            and values[1].parameters
            and isinstance(values[0], str)
        ):
            if isinstance(node.ops[0], (ast.In, ast.NotIn)):  # "x" in inspect.signature(f).parameters
                return ParameterProbe(values[1].choices, values[0], isinstance(node.ops[0], ast.In))
        if not any(isinstance(v, ProviderVersion) for v in values):
            return None
        if len(node.ops) != 1:
            return Gate(GateOp.OPAQUE, _text(node))
        if isinstance(node.ops[0], (ast.Is, ast.IsNot)) and any(
            isinstance(n, ast.Constant) and n.value is None for n in sides
        ):
            # `VLLM_VERSION is not None`: the provider's version is never None where it is installed.
            return Gate(GateOp.FIXED, _text(node), compare=str(isinstance(node.ops[0], ast.IsNot)))
        return gates.compare(type(node.ops[0]).__name__, values[0], values[1], _text(node))

    def _eval_UnaryOp(self, node: ast.UnaryOp, ctx: _Ctx) -> Value:
        value = self._eval(node.operand, ctx)
        if isinstance(node.op, ast.Not) and isinstance(value, (ModuleProbe, AttributeProbe, ParameterProbe)):
            return value.negated()
        if isinstance(node.op, ast.Not) and isinstance(value, bool):  # a helper's literal flag
            return not value
        return gates.negate(value, _text(node)) if isinstance(node.op, ast.Not) and isinstance(value, Gate) else None

    def _comparable(self, value: Value, node: ast.expr) -> object:
        """A compared value: the provider's version, a literal (tuples of ints included), or as evaluated."""
        version = self._as_version(value)
        if version is not None:
            return version
        if isinstance(node, (ast.Tuple, ast.Constant)):
            try:
                return ast.literal_eval(node)
            except ValueError:
                return value
        return value

    def _as_version(self, value: Value) -> ProviderVersion | None:
        if isinstance(value, ProviderVersion):
            return value
        if isinstance(value, ProviderValue):
            ref = value.choices[0]
            return gates.version_ref(ref.module, ref.path, self.provider_package)
        return None

    def _version_call(self, name: str, callee: Value, node: ast.Call, args: list[Value], ctx: _Ctx) -> Value:
        """`Version(...)`, `parse(...)`, `importlib.metadata.version("<provider>")`, `<version>.startswith(...)`."""
        if isinstance(callee, VersionMethod):
            if callee.attr == "startswith" and len(args) == 1:
                return gates.startswith(callee.version, args[0], _text(node))
            text = callee.version.form is VersionForm.TEXT
            if text and callee.attr in ("split", "partition") and args[:1] == ["+"] and not node.keywords:
                return ProviderVersion(VersionForm.SPLIT_AT_PLUS)  # vllm-ascend 0.28 cuts "+empty" by hand
            return ProviderVersion(VersionForm.OPAQUE)
        if isinstance(callee, SpecifierContains) and len(args) == 1:
            version = self._as_version(args[0])
            if version is None:
                return None
            pre = next((k.value for k in node.keywords if k.arg == "prereleases"), ast.Constant(None))
            if not (isinstance(pre, ast.Constant) and (pre.value is None or isinstance(pre.value, bool))):
                return Gate(GateOp.OPAQUE, _text(node))  # decided at run time
            return gates.contained(version, callee.specifier, _text(node), prereleases=pre.value)
        last = name.rpartition(".")[2]
        if last == "SpecifierSet" and len(args) == 1 and not node.keywords:
            return gates.specifier(args[0])
        if len(args) != 1 or node.keywords:
            return None
        arg = self._as_version(args[0]) or args[0]
        if last in ("Version", "parse", "parse_version", "LooseVersion"):
            if isinstance(arg, ProviderVersion):
                return replace(arg, form=VersionForm.VERSION if arg.form is VersionForm.TEXT else VersionForm.OPAQUE)
            if isinstance(arg, str):
                return VersionLiteral(arg)
        if last == "version" and isinstance(arg, str) and _distribution(arg) == _distribution(self.provider_package):
            return ProviderVersion(VersionForm.TEXT)
        return None

    def _helper_value(self, callee: ConsumerValue, args: list[Value], kwargs: dict[str, Value], ctx: _Ctx) -> Value:
        """What a consumer helper returns when that is a version gate: `vllm_version_is("0.31.0")`."""
        if ctx.depth > _MAX_DEPTH or not all(_helper_argument(v) for v in (*args, *kwargs.values())):
            return None
        key = (callee.dotted, repr((args, sorted(kwargs.items()))))
        if key in self._helper_values:
            return self._helper_values[key]
        self._helper_values[key] = None  # a recursive call evaluates to nothing
        # Helpers are looked for in the scanned packages only: a gate is evaluated from what is read anyway.
        fn = self._function(callee.dotted, load=False)
        value: Value = None
        # A module-level function defined once, unconditionally: a method answering a literal is a
        # default subclasses override, and a definition per release answers per release.
        made_when = [c for c in fn.when if c.kind is not ConditionKind.AFTER_IMPORTS] if fn is not None else []
        single = fn is not None and not made_when and len(self._definitions.get(fn.dotted, [])) == 1
        answer = _only_answer(fn.node) if fn is not None and single and "." not in fn.qualname else None
        if answer is not None:
            # vllm-ascend retires a workaround by making its release selector `return False`.
            value = Gate(GateOp.FIXED, compare=str(answer))
        elif fn is not None and (
            self._mentions_version(fn) or (single and (_only_returns(fn.node) or self._reads_a_signature(fn)))
        ):
            # (A helper doing nothing but return a test, `return not hasattr(m, "X")`, answers it; so
            # does one reading a signature, `return name in inspect.signature(f).parameters`.)
            scope = Scope(fn.closure)
            positional = [p.arg for p in (*fn.node.args.posonlyargs, *fn.node.args.args)]
            for param in fn.params:
                scope.names[param] = None
            scope.names.update(zip(positional, args))
            scope.names.update({k: v for k, v in kwargs.items() if k in fn.params})
            scope.none_defaults = _none_defaults(fn.node) - {*positional[: len(args)], *kwargs}
            returned: list[tuple[object, tuple[Condition, ...]]] = []
            body_ctx = _Ctx(fn.file, scope, fn.qualname, depth=ctx.depth + 1, record=False, returns=returned)
            self._block(fn.node.body, body_ctx)
            live = [(self._answer(r), when) for r, when in returned if not self._never(when)]
            dropped, returned = len(live) < len(returned), live
            returns = [r for r, _ in returned]
            if (
                returns
                and all(r == returns[0] for r in returns)
                and isinstance(returns[0], (Gate, ProviderVersion, AttributeProbe, ModuleProbe, ParameterProbe))
            ):
                value = returns[0]
            elif returns and all(r == returns[0] for r in returns) and _holds_answers(returns[0]):
                # `return package_exists, package_version`: the pair a caller unpacks.
                value = returns[0]
            elif returns and all(r == returns[0] for r in returns) and isinstance(returns[0], str):
                # The version a consumer was written for, kept in one place: `return VLLM_PATCH_VERSION`.
                value = returns[0]
            elif any(isinstance(r, Gate) for r in returns):
                value = Gate(GateOp.OPAQUE, f"{callee.dotted.rpartition('.')[2]}(...)")
            elif dropped and returns and all(r is False for r in returns):
                value = Gate(GateOp.FIXED, compare="False")  # its `return True`s never run
            else:
                value = _returned_gate(returned, fn.node)
        if isinstance(value, Gate):
            written = [*(repr(a) for a in args), *(f"{k}={v!r}" for k, v in kwargs.items())]
            call_text = f"{callee.dotted.rpartition('.')[2]}({', '.join(written)})"
            value = replace(value, text=call_text)
        self._helper_values[key] = value
        return value

    def _answer(self, value: object) -> object:
        """What a helper returns, as its answer: a test of whether the provider's own package is
        there (`find_spec("vllm") is not None`) is true wherever it is checked; in a tuple, the
        provider's version read as an attribute (`getattr(vllm, "__version__", "N/A")`) is its
        version, and any other object is nothing known (a helper hands on tests, not objects)."""
        if isinstance(value, ModuleProbe) and value.ref == Ref(self.provider_package):
            return value.present
        if isinstance(value, tuple):
            return tuple(self._answer_part(v) for v in value)
        return value

    def _answer_part(self, value: object) -> object:
        value = self._answer(value)
        if isinstance(value, ProviderValue):
            return self._as_version(value)
        return value if isinstance(value, (*_ANSWERS, str, bool)) else None

    def _never(self, when: tuple[Condition, ...]) -> bool:
        """Does one of these conditions fail wherever the helper is checked: a literal flag's
        other branch (or a test false at every version), or where the provider's own package is missing?"""
        for c in when:
            if c.kind is ConditionKind.GATE and c.gate is not None:
                if gates.evaluate(c.gate, None) is (not c.expect):
                    return True
            elif c.kind is ConditionKind.MODULE_FOUND and c.refs == (Ref(self.provider_package),) and not c.expect:
                return True
        return False

    def _reads_a_signature(self, fn: _Function) -> bool:
        """Does this helper read a signature's parameters (`inspect.signature(f).parameters`)? Its
        text is looked at first, and the answer kept: helpers are asked about at every call."""
        key = id(fn.node)
        if key not in self._signature_readers:
            text = self._text(fn.file.path, fn.node)
            self._signature_readers[key] = (text is None or b"parameters" in text) and any(
                isinstance(n, ast.Attribute) and n.attr == "parameters" for n in every_node(fn.node)
            )
        return self._signature_readers[key]

    def _mentions_version(self, fn: _Function) -> bool:
        key = id(fn.node)
        if key not in self._version_helpers:
            # Every name is in the function's text: without "version" there, none has it (cheaper
            # than walking the body, which is done only when the text says it may).
            text = self._text(fn.file.path, fn.node)
            maybe = text is None or not text.isascii() or _VERSION_WORD.search(text) is not None
            self._version_helpers[key] = maybe and _mentions_version(fn.node)
        return self._version_helpers[key]

    def _text(self, path: str, node: ast.AST) -> bytes | None:
        """The source lines a node spans, its decorators included; None when its file's source is
        not at hand."""
        source = self._sources.get(path)
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if source is None or first is None or last is None:
            return None
        first = min([first, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        if path not in self._lines:  # split as the parser counts lines (\n, \r\n or \r), like the indexer
            self._lines[path] = source.splitlines()
        return b"\n".join(self._lines[path][first - 1 : last])

    def _reexported(self, dotted_name: str) -> Value:
        """A name of a consumer module: the provider object when the module binds one there (a
        re-export, `from pv.core import Engine`), else the consumer's own name."""
        module = dotted_name.rpartition(".")[0]
        if module in self._scopes or module in self._unread:
            value = self._consumer_global(dotted_name)
            if isinstance(value, ProviderValue):
                return value
        return ConsumerValue(dotted_name)

    def _consumer_global(self, dotted_name: str) -> Value:
        """The value of a consumer module's global (a version flag imported from another module)."""
        module, _, name = dotted_name.rpartition(".")
        self._read_module(module)
        scope = self._scopes.get(module)
        return scope.names.get(name) if scope is not None else None

    def _find_state_gates(self, node: ast.ClassDef, qualname: str, ctx: _Ctx) -> None:
        """`self.a = ...; if self.a and <gate>: self.a = False` in `__init__`: after it, `self.a` holds only
        when the gate does not. Kept when nothing else in the class assigns `self.a`."""
        init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        if init is None:
            return
        for i, stmt in enumerate(init.body):
            attr = _reset_attribute(stmt)
            if attr is None or not isinstance(stmt, ast.If):
                continue
            test_ctx = _Ctx(ctx.file, Scope(ctx.scope), f"{qualname}.__init__", record=False)
            part = gates.state_part(self._eval(stmt.test, test_ctx), f"self.{attr}")
            if part is not None and _assigned_only_before(node, init, i, attr):
                self._state_gates[(f"{ctx.file.module}.{qualname}", attr)] = (f"{qualname}.__init__", part)

    def _state_gate(self, attr: str, ctx: _Ctx) -> Value:
        cls = ctx.function.rpartition(".")[0]
        found = self._state_gates.get((f"{ctx.file.module}.{cls}", attr)) if cls else None
        if found is None or found[0] == ctx.function:
            return None
        init, part = found
        text = f"self.{attr}"
        reset = Gate(GateOp.NOT, f"not ({part.text})", parts=(part,))
        return Gate(GateOp.ALL, f"{text} (reset in {init} when {part.text})", parts=(Gate(GateOp.RUNTIME, text), reset))

    def _handler_ctx(self, node: ast.Try, handler: ast.ExceptHandler, ctx: _Ctx) -> _Ctx:
        """An `except ImportError:` handler runs only when an import of its try body fails."""
        if not catches_only_import_errors(handler):
            return ctx
        imports = body_imports(node.body, ctx.file.module, ctx.file.is_package)
        if not imports:
            return ctx
        provider: list[Ref] = []
        present = True
        for module, name in imports:
            if self._is_provider(module):
                provider.append(Ref(module, (name,)) if name else Ref(module))
            else:
                present = present and self._consumer_module_exists(module)
        condition = Condition(
            ConditionKind.TRY_FAILED, self._site(ctx, node), refs=tuple(provider), others_present=present
        )
        return _evolve(ctx, when=(*ctx.when, condition))

    def _consumer_module_exists(self, module: str) -> bool:
        if module in self._modules or module in self._scopes:
            return True
        if not self._is_consumer(module) or self.load_module is None:
            return False
        return self.load_module(module) is not None

    # -- names the consumer gives the provider: sys.modules entries, registrations, module names --

    def _record_injection(self, ctx: _Ctx, name: str, node: ast.AST, value: Value = None) -> None:
        """`sys.modules[name] = value`: a provider module's name now serves `value` (a consumer
        module when it is one the consumer has; "*" when not known to be)."""
        if isinstance(value, ProviderValue) and any(choice.dotted == name for choice in value.choices):
            return  # the module itself (or a copy of it) under its own name: still the provider's
        if ctx.record and self._is_provider(name):
            self.usage.injected_modules.append((name, self._site(ctx, node)))
            module = value.dotted if isinstance(value, ConsumerValue) else ""
            self.usage.injected_values.append(module if module and self._consumer_module_exists(module) else "*")

    def _record_registration(self, args: list[Value], kwargs: dict[str, Value], node: ast.Call, ctx: _Ctx) -> None:
        """A provider call that hands over a consumer class with a name: `register_oot(Cls, name="X")`."""
        values = [*args, *kwargs.values()]
        names = [v for v in values if isinstance(v, str)]
        classes = [v for v in values if isinstance(v, ConsumerValue)]
        if names and classes:
            site = self._site(ctx, node)
            self.usage.registrations.append(Registration(names[0], classes[0].dotted, site, self._when(ctx)))

    def _record_edge(self, ctx: _Ctx, target: str, node: ast.AST, after: str = "") -> None:
        if ctx.record:
            site = self._site(ctx, node)
            self.usage.module_edges.append(ModuleEdge(ctx.file.module, target, site, ctx.when, after))

    def _in_own_listing(self, ctx: _Ctx) -> bool:
        """Is the statement read in a function listing its own package's folder (`lists_own_folder`)?"""
        tree = self._trees.get(ctx.file.module)
        return (
            bool(absolute_module(ctx.file.module, ctx.file.is_package, 1, None))
            and tree is not None
            and lists_own_folder(tree, ctx.function)
        )

    def _string_edge(self, text: str, node: ast.AST, ctx: _Ctx, after: str = "") -> None:
        """A string that names a consumer module ("pkg.mod", "pkg.mod:Cls", ".relative") or a Python file:
        something may import or run it by that name (with `after`, once provider module `after` is
        imported: `ModuleEdge.after`)."""
        if not ctx.record or not text or len(text) > 300:
            return
        if text.endswith(".py") and _FILE_NAME.fullmatch(text.rpartition("/")[2]):
            self._record_edge(ctx, "file:" + text.rpartition("/")[2], node)
            return
        head = text.partition(":")[0]
        if not _DOTTED.fullmatch(head):
            return
        if head.startswith("."):
            level = len(head) - len(head.lstrip("."))
            head = absolute_module(ctx.file.module, ctx.file.is_package, level, head[level:] or None)
        if head and self._is_consumer(head):
            self._record_edge(ctx, head, node, after)

    def _dynamic_import_edge(self, name: str, node: ast.Call, args: list[Value], ctx: _Ctx) -> None:
        """Imports by computed name: a literal prefix bounds what they reach; an unknown one may reach anything."""
        last = name.rpartition(".")[2]
        if name in ("sys.modules.setdefault", "sys.modules.__setitem__") and args and isinstance(args[0], str):
            self._record_injection(ctx, args[0], node, args[1] if len(args) > 1 else None)
            return
        if name == "sys.modules.update" and args and isinstance(args[0], dict):
            # `sys.modules.update({name: module})`, in a helper called with the name (vllm-mindspore's
            # `update_modules`): the call's dict holds the names as the helper ran with them.
            for key, each in args[0].items():
                self._record_injection(ctx, key, node, each)
            return
        if last in ("walk_packages", "iter_modules"):
            self._listing_edge(last, node, ctx)
            return
        if name in ("sys.path.insert", "sys.path.append") and node.args:
            self._import_path_edge(node, ctx)
            return
        if last not in ("import_module", "__import__", "run_module") or not node.args or isinstance(args[0], str):
            return
        self._computed_import_edge(node, ctx)

    def _listing_edge(self, last: str, node: ast.Call, ctx: _Ctx) -> None:
        """`pkgutil.iter_modules(path)` / `walk_packages(path)`, whose names are then imported: over a
        package's own `__path__`, the modules below it (right below, for iter_modules); over another
        package's (`torchvision.models.__path__`), none of the consumer's; else any module."""
        path = dotted(node.args[0]) if node.args else ""
        package = absolute_module(ctx.file.module, ctx.file.is_package, 1, None)
        tree = self._trees.get(ctx.file.module)
        if path == "__path__" and package:
            self._record_edge(ctx, f"glob:{package}.*" if last == "iter_modules" else f"prefix:{package}.", node)
        elif package and tree is not None and node.args and walks_own_path(tree, ctx.function, node.args[0]):
            self._record_edge(ctx, f"prefix:{package}.", node)
        elif not (path.endswith(".__path__") and path.split(".")[0] in self._other_packages.get(ctx.file.path, ())):
            self._record_edge(ctx, "*", node)

    def _import_path_edge(self, node: ast.Call, ctx: _Ctx) -> None:
        """`sys.path.insert(0, <a folder of the consumer's, from the file's own place>)`: a module
        there may now be imported by another name (xinference puts its `thirdparty` folder there
        and imports `confuciustts.cli.inference`); what this module imports by such a name, and all
        below it, is reached from here."""
        file = ctx.file
        tree = self._trees.get(file.module)
        if tree is not None and file.path not in self._import_paths:
            self._import_paths[file.path] = import_path_targets(tree, file.path, file.module, file.is_package)
        for target in self._import_paths.get(file.path, {}).get(node.lineno, []):
            if self._is_consumer(target.removeprefix("prefix:").split(".")[0]):
                self._record_edge(ctx, target, node)

    def _computed_import_edge(self, node: ast.Call, ctx: _Ctx) -> None:
        """`import_module(<computed name>)`: what its literal start and computed parts can spell."""
        arg = node.args[0]
        if not isinstance(arg, (ast.JoinedStr, ast.BinOp)) and not (
            isinstance(arg, ast.Call) and dotted(arg.func).endswith("format")
        ):
            return  # a name: its value is a literal elsewhere (an edge already) or comes from outside the plugin
        prefix = _literal_prefix(arg)
        if prefix.startswith("."):
            level = len(prefix) - len(prefix.lstrip("."))
            package = absolute_module(ctx.file.module, ctx.file.is_package, level, None)
            glob = _module_glob(arg)[level:]
            self._record_edge(ctx, f"glob:{package}.{glob}" if glob else f"prefix:{package}.", node)
        elif "." in prefix and not self._is_consumer(prefix.split(".")[0]):
            return  # under another package (`import_module(f"torchvision.models.{name}")`)
        elif not prefix and self._in_own_listing(ctx):
            # A name listed from the package's own folder (`walks_own_path`): a module below it.
            self._record_edge(ctx, f"prefix:{absolute_module(ctx.file.module, ctx.file.is_package, 1, None)}.", node)
        elif prefix and self._is_consumer(prefix.split(".")[0]):
            glob = _module_glob(arg)
            if glob and self.usage.module_edges:
                # The f-string's own edge (`_eval_JoinedStr`) let it end with an attribute; an
                # imported name does not.
                spelled = self.usage.module_edges[-1]
                if spelled.target == f"path:{glob}" and spelled.site == self._site(ctx, arg):
                    self.usage.module_edges.pop()
            self._record_edge(ctx, f"glob:{glob}" if glob else f"prefix:{prefix}", node)
        else:
            self._record_edge(ctx, "*", node)

    # -- patches named by a dotted path: `@register_patch(target="pkg.mod.Cls.meth")` -----------------

    def _decorated(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, value: Value, ctx: _Ctx) -> None:
        for deco in node.decorator_list:
            if isinstance(deco, ast.Call):
                self._string_target_patch(deco, value, ctx)
            if isinstance(node, ast.ClassDef) and isinstance(value, ConsumerValue) and ctx.record:
                self._registered_by_decorator(deco, value, ctx)

    def _registered_by_decorator(self, deco: ast.expr, cls: ConsumerValue, ctx: _Ctx) -> None:
        """`@Op.register_oot` or `@CustomOp.register_oot(name="Op")` on a consumer class: vLLM's
        out-of-tree registry, under the name given, else the name of the class it is called on."""
        call = deco if isinstance(deco, ast.Call) else None
        func = call.func if call is not None else deco
        if not (isinstance(func, ast.Attribute) and func.attr == "register_oot"):
            return
        owner = self._eval(func.value, _evolve(ctx, record=False))
        if not isinstance(owner, ProviderValue) or not owner.choices[0].path:
            return
        written = [*call.args, *(k.value for k in call.keywords)] if call is not None else []
        names = [a.value for a in written if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        name = names[0] if names else owner.choices[0].path[-1]
        self.usage.registrations.append(Registration(name, cls.dotted, self._site(ctx, deco), self._when(ctx)))

    def _string_target_patch(self, call: ast.Call, replacement: Value, ctx: _Ctx) -> None:
        """A consumer decorator (or registry call) given a literal dotted path into the provider, in a module
        that resolves such paths (`import_module` + `setattr`): a patch of that target with `replacement`."""
        callee = ctx.scope.lookup(call.func.id) if isinstance(call.func, ast.Name) else self._eval(call.func, ctx)
        if not isinstance(callee, ConsumerValue):
            return
        literals = [a.value for a in (*call.args, *(k.value for k in call.keywords)) if isinstance(a, ast.Constant)]
        targets = [t for t in literals if isinstance(t, str) and _DOTTED.fullmatch(t) and self._is_provider(t)]
        if len(targets) != 1 or targets[0].count(".") < 2 or not self._applies_dotted_paths(callee.dotted):
            return
        package, *path, attr = targets[0].split(".")
        owner = ProviderValue((Ref(package, tuple(path)),))
        self._record_patch(ctx, call, owner, attr, None, replacement, declared=True)

    def _applies_dotted_paths(self, dotted_name: str) -> bool:
        """Does the module defining this consumer function import modules by name and `setattr` on them?"""
        fn = self._function(dotted_name)
        module = fn.file.module if fn is not None else dotted_name.rpartition(".")[0]
        if module not in self._registries:
            tree = self._trees.get(module)
            calls = (
                {dotted(n.func).rpartition(".")[2] for n in every_node(tree) if isinstance(n, ast.Call)}
                if tree
                else set()
            )
            self._registries[module] = "setattr" in calls and bool(calls & {"import_module", "__import__"})
        return self._registries[module]

    # -- the contact surface: classes, receivers, unpacking, handovers ---------------------
    #
    # What the drift rules (`method_overrides`, `protocols`, `returns`, `shadows`,
    # `method_calls`) need beyond names. Nothing here changes what the rest of the
    # scanner records: it only adds to `usage.contact`.

    def _module_scope(self, module: str) -> Scope:
        """A module's top-level scope, kept so re-exported consumer classes can be followed."""
        return self._scopes.setdefault(module, Scope())

    def _pure(self, node: ast.expr | None, ctx: _Ctx) -> Value:
        """What a name or attribute chain evaluates to, without recording anything or following calls."""
        if isinstance(node, ast.Subscript):
            node = node.value
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return None
        self._quiet = True
        try:
            return self._eval(node, _evolve(ctx, record=False))
        finally:
            self._quiet = False

    def _made_object(self, name: str, node: ast.Call, ctx: _Ctx) -> Value:
        """A class `type(name, bases, ns)` makes (recorded: `_composed_class`; nothing known is
        returned), or a `SimpleNamespace` copying a provider module (`_namespace_copy`)."""
        if name != "type":
            return self._namespace_copy(node, ctx)
        if len(node.args) == 3 and isinstance(node.args[1], ast.Tuple):
            self._composed_class(node, node.args[1], ctx)
        return None

    def _composed_class(self, node: ast.Call, bases: ast.Tuple, ctx: _Ctx) -> None:
        """`type(name, (Mixin, base_cls), {...})` with a consumer class and a provider class (or a
        parameter annotated `type[C]`: vllm-omni's `omni_renderer_cls(base_cls: type[BaseRenderer])`):
        a class of the consumer's whose order puts the mixin's methods before the provider's, as
        `class K(Mixin, C)` would."""
        made = [self._composed_base(expr, ctx) for expr in bases.elts]
        if not any(b.consumer for b in made) or not any(b.provider for b in made):
            return
        # Named after its bases ("plug.render.OmniRenderer+BaseRenderer"): it has no name of its own here.
        name = f"{ctx.file.module}." + "+".join(b.text.rpartition(".")[2] or "?" for b in made)
        if name not in self._classes:
            self._classes[name] = ConsumerClass(
                name=name,
                path=ctx.file.path,
                line=node.lineno,
                bases=tuple(made),
                muted=not ctx.record,
                names_provider=self._names_provider(ctx.file.path),
            )

    def _composed_base(self, expr: ast.expr, ctx: _Ctx) -> ClassBase:
        """A base of `type(name, bases, ns)`, as `_class_base` reads one; a name of a parameter
        annotated `type[C]` (a provider class C or a subclass of it) is C."""
        base = self._class_base(expr, ctx)
        if base.provider or base.consumer or not isinstance(expr, ast.Name):
            return base
        fn = self._functions.get(f"{ctx.file.module}.{ctx.function}") if ctx.function else None
        a = fn.node.args if fn is not None else None
        param = next((p for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.arg == expr.id), None) if a else None
        annotation = param.annotation if param is not None else None
        if isinstance(annotation, ast.Subscript) and dotted(annotation.value) in ("type", "typing.Type", "Type"):
            choices = self._provider_type(annotation.slice, ctx)
            if choices:
                return ClassBase(provider=choices, text=dotted(annotation.slice))
        return base

    def _class_base(self, node: ast.expr, ctx: _Ctx) -> ClassBase:
        if isinstance(node, ast.Subscript) and (patched := self._patched_class(node, ctx)) is not None:
            return patched
        value = self._pure(node, ctx)
        text = dotted(node)
        if isinstance(value, ProviderValue):
            return ClassBase(provider=value.choices, text=text)
        if isinstance(value, ConsumerValue):
            return ClassBase(consumer=value.dotted, text=text)
        return ClassBase(text=text)

    def _patched_class(self, node: ast.Subscript, ctx: _Ctx) -> ClassBase | None:
        """`class P(Patch[Target])`, where the consumer's `Patch` sets every member of its subclass
        on the target (`setattr(target, name, value)` over `cls.__dict__`: arctic-inference's
        `ArcticPatch`): P's methods replace Target's for every instance, as a subclass's override
        would for its own. Target, a class, is then P's base; None for any other subscripted base
        (a module target's members are patches of it: `_module_patch_members`)."""
        target = self._patch_target(node, ctx)
        if target is None or all(not ref.path for ref in target.choices):
            return None
        return ClassBase(provider=target.choices, text=dotted(node.slice))

    def _patch_target(self, node: ast.Subscript, ctx: _Ctx) -> ProviderValue | None:
        """The provider object `Patch[Target]` names, when the consumer's `Patch` sets every
        member of its subclasses on it (`_sets_members`); None otherwise."""
        patch, target = self._pure(node.value, ctx), self._pure(node.slice, ctx)
        if isinstance(patch, ConsumerValue) and isinstance(target, ProviderValue) and self._sets_members(patch.dotted):
            return target
        return None

    def _module_patch_members(self, node: ast.ClassDef, qualname: str, body: Scope, ctx: _Ctx) -> None:
        """`class P(Patch[module])`: each function and value P's body defines is set on the provider
        module (`UlyssesParallelState(ArcticPatch[parallel_state])` replaces its
        `initialize_model_parallel` and adds `_SP = None`), a patch as `module.name = value` is."""
        for base in node.bases:
            target = self._patch_target(base, ctx) if isinstance(base, ast.Subscript) else None
            if target is None or not all(not ref.path for ref in target.choices):
                continue
            for stmt in node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    function = ConsumerValue(f"{ctx.file.module}.{qualname}.{stmt.name}")
                    self._record_patch(ctx, stmt, target, stmt.name, None, function)
                elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    for name in (n for t in targets for n in target_names(t) if not n.startswith("__")):
                        self._record_patch(ctx, stmt, target, name, stmt.value, body.names.get(name))

    def _sets_members(self, dotted_name: str) -> bool:
        """Does consumer class `dotted_name` have a method that sets each member of a class's own
        dictionary on another object (`for name, attr in cls.__dict__.items(): setattr(target, name,
        attr)`, or over `vars(cls)`)? Its module is read when it is not scanned."""
        if dotted_name not in self._patchers:
            cls = self._consumer_class(dotted_name, load=True)
            nodes = [fn.node for m in cls.methods if (fn := self._functions.get(f"{cls.name}.{m.name}"))] if cls else []
            self._patchers[dotted_name] = any(_sets_own_members(n) for n in nodes)
        return self._patchers[dotted_name]

    def _provider_type(
        self, annotation: ast.expr | None, ctx: _Ctx, elements: bool = False, mapped: bool = False
    ) -> tuple[Ref, ...]:
        """The provider class an annotation names: `C`, `"C"`, `C | None`, `Optional[C]`; () otherwise
        (`list[C]`, `type[C]`: not an instance of C). A name only an `if TYPE_CHECKING:` import
        binds counts (`vllm_config: "VllmConfig"`, imported for type checkers only). With
        `elements`: the class of a collection's elements (`list[C]`, `tuple[C, ...]`: `element_type`);
        with `mapped`, of a mapping's values (`dict[K, C]`: `mapped_type`)."""
        if elements or mapped:
            node = element_type(annotation) if elements else mapped_type(annotation)
        else:
            node = annotated_type(annotation)
        value = self._pure(node, ctx) if node is not None else None
        if value is None and node is not None:
            value = _type_only_value(node, ctx.scope)
        return value.choices if isinstance(value, ProviderValue) else ()

    def _type_only_imports(self, body: list[ast.stmt], ctx: _Ctx) -> None:
        """What the provider imports of an `if TYPE_CHECKING:` block bind, for annotations only
        (`Scope.type_only`): the block never runs, so nothing is recorded as imported."""
        for stmt in body:
            if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module and self._is_provider(stmt.module):
                for alias in stmt.names:
                    if alias.name != "*":
                        ref = Ref(stmt.module, (alias.name,))
                        ctx.scope.type_only[alias.asname or alias.name] = ProviderValue((ref,))
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if self._is_provider(alias.name):  # `import pkg.mod as m` binds m; `import pkg.mod`, pkg
                        module = alias.name if alias.asname else alias.name.split(".")[0]
                        ctx.scope.type_only[alias.asname or module] = ProviderValue((Ref(module),))

    def _record_class(self, node: ast.ClassDef, ctx: _Ctx, qualname: str) -> None:
        """A class's bases, methods and class attributes; attributes typed with a provider class."""
        name = f"{ctx.file.module}.{qualname}"
        if name in self._classes:
            return
        typed: dict[str, tuple[Ref, ...]] = {}
        methods: list[ConsumerMethod] = []
        attributes: list[str] = []
        assigned: dict[str, set[tuple[tuple[Ref, ...], str, str]]] = {}
        if not node.bases:
            self._baseless[name] = node
        self._record_registry(node, ctx)
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # A scanned method's delegation is seen while its body is read; a helper's is looked for here.
                methods.append(self._consumer_method(stmt, ctx, walk=not ctx.record))
                if ctx.record:
                    for attr, choices, made, param in self._self_assignments(stmt, ctx):
                        assigned.setdefault(attr, set()).add((choices, made, param))
                continue
            if isinstance(stmt, ast.Assign):
                targets = [n for t in stmt.targets for n in target_names(t)]
            elif isinstance(stmt, ast.AnnAssign):
                targets = target_names(stmt.target)
                for target in targets:
                    if choices := self._provider_type(stmt.annotation, ctx):
                        typed[target] = choices
            else:
                continue
            attributes += targets
            value = getattr(stmt, "value", None)
            handed = self._consumer_class_value(value, ctx)
            if handed and ctx.record:
                for target in targets:
                    site = self._site(ctx, stmt)
                    self.usage.contact.handovers.append(
                        Handover(HandoverKind.ATTRIBUTE, handed, site, holder=name, member=target)
                    )
        self._made_attributes[name], self._param_attributes[name] = _typed_by_assignments(assigned, typed)
        self._typed_attributes[name] = typed
        self._class_names.setdefault(ctx.file.path, set()).add(node.name)
        writes, fields = self._generated_init(node, ctx)
        # A class without bases is read when a class derives from it (`_finish_contact`): a mixin.
        on_instance, false_only = _assignments(node) if node.bases else ((), ())
        self._classes[name] = ConsumerClass(
            name=name,
            path=ctx.file.path,
            line=node.lineno,
            bases=tuple(self._class_base(b, ctx) for b in node.bases),
            methods=tuple(methods),
            attributes=tuple(dict.fromkeys(attributes)),
            assigned=on_instance,
            false_only=false_only,
            bound=tuple(sorted(class_body_names(node.body))),
            muted=not ctx.record,
            names_provider=self._names_provider(ctx.file.path),
            writes_init=writes,
            fields=fields,
            when=self._when(ctx) if fields is not None else (),
            init_hands_on=init_hands_on(node),
        )

    def _generated_init(self, node: ast.ClassDef, ctx: _Ctx) -> tuple[bool, tuple[str, ...] | None]:
        """(whether a call of the class may run no `__init__` written in a body, the fields of a
        standard-library dataclass): a metaclass, or a decorator that writes `__init__`; the
        fields only for `@dataclass` from `dataclasses` under decorators that keep its `__init__`."""
        if any(k.arg == "metaclass" for k in node.keywords):
            return True, None
        written = [(d, dotted(d.func if isinstance(d, ast.Call) else d)) for d in node.decorator_list]
        writers = [d for d, name in written if writes_init(name)]
        if not writers:
            return False, None
        if len(writers) > 1 or any(name.rpartition(".")[2] not in PLAIN_CLASS_DECORATORS for _, name in written):
            return True, None
        func = writers[0].func if isinstance(writers[0], ast.Call) else writers[0]
        stdlib = (isinstance(func, ast.Name) and isinstance(ctx.scope.lookup(func.id), DataclassDecorator)) or (
            dotted(func) == "dataclasses.dataclass" and ctx.scope.lookup("dataclasses") is None
        )
        return True, dataclass_fields(node, writers[0]) if stdlib else None

    def _record_registry(self, node: ast.ClassDef, ctx: _Ctx) -> None:
        """The string members of an enum of the consumer's: its own registry of dotted paths
        (vllm-omni's diffusion backends), which it resolves itself. A path kept there is no
        handover (`_resolved_handovers`)."""
        if any(_last_name(base) in _ENUM_BASES for base in node.bases):
            self._registry_sites.update(
                Site(ctx.file.path, stmt.lineno)
                for stmt in node.body
                if isinstance(stmt, ast.Assign)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            )

    def _names_provider(self, path: str) -> bool:
        """Does the scanned file `path` name the provider package (once per file)?"""
        if path not in self._naming_files:
            self._naming_files[path] = names_the_provider(self._sources.get(path, b""), self.provider_package)
        return self._naming_files[path]

    def _consumer_method(self, node: ast.FunctionDef | ast.AsyncFunctionDef, ctx: _Ctx, walk: bool) -> ConsumerMethod:
        """A method, and (with `walk`) whether it calls the method it overrides (`super().name(...)`
        or `Base.name(self, ...)`); its `super().name(...)` calls either way (`SuperCall`)."""
        calls_super = False
        delegates: list[ClassBase] = []
        raises, inert = only_raises(node), does_nothing(node)
        if not self._mentioned_again(ctx.file.path, node, node.name):
            return ConsumerMethod(
                node.name, node.lineno, signature_of(node), raises=raises, inert=inert, end_line=_end_line(node)
            )
        args = [*node.args.posonlyargs, *node.args.args]
        receiver = args[0].arg if args else ""
        supers: list[SuperCall] = []
        for call in every_node(node):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)) or call.func.attr != node.name:
                continue
            inner = call.func.value
            if isinstance(inner, ast.Call) and dotted(inner.func) in ("cast", "typing.cast") and len(inner.args) == 2:
                inner = inner.args[1]  # `cast(Base, super()).name(...)`
            if isinstance(inner, ast.Call) and dotted(inner.func) == "super":
                calls_super = walk  # a scanned method's is told while its body is read (`_delegated`)
                supers.append(_super_call(node, call))
            elif (
                walk
                and isinstance(inner, (ast.Name, ast.Attribute))
                and call.args
                and isinstance(call.args[0], ast.Name)
                and call.args[0].id == receiver
            ):
                delegates.append(self._class_base(inner, ctx))
        return ConsumerMethod(
            node.name,
            node.lineno,
            signature_of(node),
            calls_super,
            tuple(delegates),
            raises,
            inert,
            _end_line(node),
            tuple(supers),
        )

    def _mentioned_again(self, path: str, node: ast.FunctionDef | ast.AsyncFunctionDef, word: str) -> bool:
        """Does the text of a definition hold `word` more than once (its name, then a use)? Read
        before walking every node of it (True when the text is not at hand)."""
        text = self._text(path, node)
        return text is None or text.count(word.encode()) > 1

    def _self_assignments(
        self, method: ast.FunctionDef | ast.AsyncFunctionDef, ctx: _Ctx
    ) -> Iterator[tuple[str, tuple[Ref, ...], str, str]]:
        """Each `self.x = ...` / `self.x: T = ...` in a method: the provider class it makes or is
        annotated with, that annotates the parameter it stores (`self.x = x` of `x: T`), or that the
        return annotation of the consumer function it calls names, () for anything else; the
        consumer class or function (dotted) it calls, "" for anything else; and for `self.x = x` of
        a parameter not annotated, "method:x" (typed as the provider method it overrides says:
        `Receiver.PARAM`), "" otherwise."""
        args = [*method.args.posonlyargs, *method.args.args]
        if not args or any(dotted(d) == "staticmethod" for d in method.decorator_list):
            return
        receiver = args[0].arg
        annotated = {a.arg: a.annotation for a in (*args[1:], *method.args.kwonlyargs) if a.annotation}
        bare = {a.arg for a in (*args[1:], *method.args.kwonlyargs) if a.annotation is None}
        rebound: set[str] | None = None  # parameters the body assigns again: their annotation no longer holds
        targets: list[ast.expr]
        for stmt in statements(method.body):
            made = param = ""
            if isinstance(stmt, ast.AnnAssign):
                targets, choices = [stmt.target], self._provider_type(stmt.annotation, ctx)
            elif isinstance(stmt, ast.Assign):
                value = self._pure(stmt.value.func, ctx) if isinstance(stmt.value, ast.Call) else None
                targets = list(stmt.targets)
                choices = value.choices if isinstance(value, ProviderValue) and len(targets) == 1 else ()
                made = value.dotted if isinstance(value, ConsumerValue) and len(targets) == 1 else ""
                if made and made not in self._classes and (fn := self._function(made, load=False)) is not None:
                    # `self.manager = start(...)` of a function annotated `-> Manager`.
                    returned = self._annotated_return(fn)
                    choices = returned.choices if isinstance(returned, ReceiverValue) else ()
                if isinstance(stmt.value, ast.Name) and stmt.value.id in annotated.keys() | bare and len(targets) == 1:
                    if rebound is None:
                        rebound = {
                            n.id for n in every_node(method) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                        }
                    if stmt.value.id in annotated and stmt.value.id not in rebound:
                        choices = self._provider_type(annotated[stmt.value.id], ctx)
                    elif stmt.value.id not in rebound:
                        param = f"{method.name}:{stmt.value.id}"
            else:
                continue
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    if target.value.id == receiver:
                        yield target.attr, choices, made, param

    def _consumer_class_value(self, node: ast.expr | None, ctx: _Ctx) -> str:
        """The consumer class `node` is (`X`) or makes an instance of (`X(...)`); "" otherwise (a
        call of a consumer function makes what it returns: `_classes_returned`)."""
        if isinstance(node, ast.Call):
            node = node.func
        value = self._pure(node, ctx)
        return value.dotted if isinstance(value, ConsumerValue) and value.dotted not in self._functions else ""

    def _bind_receivers(self, fn: _Function, scope: Scope) -> None:
        """`self`/`cls` in a method, parameters annotated with a provider class, and a method's
        parameters not annotated (`Receiver.PARAM`)."""
        a = fn.node.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
        decorators = {dotted(d) for d in fn.node.decorator_list}
        ctx = _Ctx(fn.file, fn.closure, record=False)
        for i, param in enumerate(params):
            if scope.names.get(param.arg) is not None:
                continue
            if i == 0 and fn.owner and param in a.posonlyargs + a.args and "staticmethod" not in decorators:
                kind = Receiver.CLS if "classmethod" in decorators else Receiver.SELF
                scope.names[param.arg] = ReceiverValue(kind, fn.owner)
            elif i == 0 and param.arg == "self" and param.annotation is None and (on := self._installed_self(fn)):
                # A function installed as a method of one provider class (`C.m = f`): its `self`
                # is a C, as if annotated so.
                scope.names[param.arg] = ReceiverValue(Receiver.INSTANCE, choices=on)
            elif choices := self._unshadowed(self._provider_type(param.annotation, ctx), fn.file.path):
                scope.names[param.arg] = ReceiverValue(Receiver.INSTANCE, choices=choices)
            elif isinstance(param.annotation, (ast.Subscript, ast.Constant, ast.BinOp)) and (
                choices := self._unshadowed(self._provider_type(param.annotation, ctx, elements=True), fn.file.path)
            ):
                scope.names[param.arg] = ElementsOf(choices)  # `outputs: list[SchedulerOutput]`
            elif isinstance(param.annotation, (ast.Subscript, ast.Constant, ast.BinOp)) and (
                choices := self._unshadowed(self._provider_type(param.annotation, ctx, mapped=True), fn.file.path)
            ):
                scope.names[param.arg] = ElementsOf(choices, "mapping")  # `layers: dict[str, Attention]`
            elif own := self._consumer_type(param.annotation, ctx):
                scope.names[param.arg] = ReceiverValue(Receiver.SELF, own, other=True)
            elif param.annotation is None and fn.owner and i > 0 and "staticmethod" not in decorators:
                # What the provider hands a method overriding one of its own, as that method
                # annotates it (`param_types`): read once the provider's classes are known.
                scope.names[param.arg] = ReceiverValue(Receiver.PARAM, fn.owner, param=f"{fn.node.name}:{param.arg}")

    def _installed_self(self, fn: _Function) -> tuple[Ref, ...]:
        """The provider object a function defined outside a class body is installed on as a
        method, when it is installed on exactly one (() otherwise: nothing, or several, which its
        `self` may be any of)."""
        if fn.owner:
            return ()
        found = self._installed_on.get(fn.dotted, set())
        return next(iter(found)) if len(found) == 1 else ()

    def _cast_type(self, annotation: ast.expr, ctx: _Ctx) -> ReceiverValue | None:
        """What `typing.cast(T, x)` says x is when T is a class: an instance of a provider class
        (`cast(Attention, layer)`) or of the consumer's own (`cast(AsyncOmni, self._engine_client)`,
        whose methods are its own). None for `Any` and the like: x is what it was."""
        if choices := self._unshadowed(self._provider_type(annotation, ctx), ctx.file.path):
            return ReceiverValue(Receiver.INSTANCE, choices=choices)
        own = self._consumer_type(annotation, ctx)
        return ReceiverValue(Receiver.SELF, own, other=True) if own else None

    def _consumer_type(self, annotation: ast.expr | None, ctx: _Ctx) -> str:
        """The consumer class a parameter is annotated with (its instances are typed like `self`)."""
        if not isinstance(annotation, (ast.Name, ast.Attribute)):
            return ""
        value = self._pure(annotation, ctx)
        if not isinstance(value, ConsumerValue):
            return ""
        cls = self._consumer_class(value.dotted)
        return cls.name if cls is not None else ""

    def _receiver_attribute(self, base: ReceiverValue, name: str) -> Value:
        if base.receiver is Receiver.SELF:
            choices = self._typed_attribute(base.owner, name)
            if choices:
                return ReceiverValue(Receiver.INSTANCE, choices=choices)
            if own := self._made_attribute(base.owner, name):
                return ReceiverValue(Receiver.SELF, own, other=True)  # typed like `self` in that class
            if stored := self._param_attribute(base.owner, name):
                return ReceiverValue(Receiver.PARAM, stored[0], param=stored[1])
        return base.method(name)

    def _param_attribute(self, owner: str, name: str) -> tuple[str, str] | None:
        """The consumer class (`owner` or the first of its consumer bases storing attribute
        `name`) and the parameter not annotated ("method:x") its every `self.name = x` stores;
        None when that class stores anything else there, or none stores it."""
        for current in self._consumer_line(owner):
            if name in self._typed_attributes.get(current, {}) or name in self._made_attributes.get(current, {}):
                return None
            param = self._param_attributes.get(current, {}).get(name)
            if param:
                return current, param
        return None

    def _made_attribute(self, owner: str, name: str) -> str:
        """The consumer class of which every assignment of attribute `name` makes an instance
        (`self.input_batch = NPUInputBatch(...)`) in consumer class `owner`, or in the first of its
        consumer bases that assigns it, as `_typed_attribute` finds a provider class; "" when
        not known."""
        for current in self._consumer_line(owner):
            made = self._made_attributes.get(current, {})
            if name in made:
                cls = self._consumer_class(made[name]) if made[name] else None
                return cls.name if cls is not None else ""
        return ""

    def _unshadowed(self, choices: tuple[Ref, ...], path: str) -> tuple[Ref, ...]:
        """A provider class type, unless the file at `path` also defines a class of the same name
        or imports one from the consumer's modules (an import ladder that prefers the consumer's own
        class keeps only the provider's in the scope). A same-named class elsewhere in the consumer
        is another class (vllm-omni's own `AttentionSpec` beside vLLM's)."""
        names = {r.path[-1] for r in choices if r.path}
        if names & self._class_names.get(path, set()):
            return ()
        return choices

    def _typed_attribute(self, owner: str, name: str) -> tuple[Ref, ...]:
        """An attribute of a consumer class (or of its consumer bases) typed with a provider class
        (`_unshadowed` in the file of the class typing it)."""
        for current in self._consumer_line(owner):
            if name in self._typed_attributes.get(current, {}):
                cls = self._classes.get(current)
                return self._unshadowed(self._typed_attributes[current][name], cls.path if cls else "")
        return ()

    def _consumer_line(self, owner: str) -> Iterator[str]:
        """Consumer class `owner`, then the consumer classes it derives from, breadth first."""
        seen: set[str] = set()
        todo = [owner]
        while todo:
            current = todo.pop(0)
            if current in seen:
                continue
            seen.add(current)
            yield current
            cls = self._classes.get(current)
            if cls is not None:
                todo += [b.consumer for b in cls.bases if b.consumer]

    def _record_delegation(self, node: ast.Call, callee: Value, args: list[Value], ctx: _Ctx) -> None:
        """In method `m` of a consumer class: `super().m(...)` or `Base.m(self, ...)` hands on to the
        original; so does `self._orig_m(...)` where the class body keeps the original there
        (`_orig_m = Base.m`, as a patch class does)."""
        if not ctx.owner or not isinstance(node.func, ast.Attribute):
            return
        method = ctx.function.rpartition(".")[2]
        if node.func.attr != method:
            kept = self._kept_originals.get(ctx.owner, {}).get(node.func.attr)
            on_self = (isinstance(callee, MethodValue) and callee.ref.receiver in (Receiver.SELF, Receiver.CLS)) or (
                isinstance(node.func.value, ast.Name) and node.func.value.id == ctx.owner.rpartition(".")[2]
            )  # `self._orig_m(...)`, `cls._orig_m(...)`, `Patch._orig_m(...)` in a staticmethod
            if on_self and kept is not None and all(ref.path[-1:] == (method,) for ref in kept.choices):
                owners = tuple(Ref(ref.module, ref.path[:-1]) for ref in kept.choices)
                self._delegations.setdefault((ctx.owner, method), set()).add(ClassBase(provider=owners))
            return
        if isinstance(callee, MethodValue) and callee.ref.receiver is Receiver.SUPER:
            self._delegations.setdefault((ctx.owner, method), set()).add(ClassBase(text="super"))
        elif args and isinstance(args[0], ReceiverValue) and args[0].receiver is Receiver.SELF and not args[0].other:
            self._delegations.setdefault((ctx.owner, method), set()).add(self._class_base(node.func.value, ctx))

    def _receiver_call(
        self,
        node: ast.Call,
        callee: Value,
        args: list[Value],
        ctx: _Ctx,
        makes_instance: bool = False,
        kwargs: dict[str, Value] | None = None,
    ) -> Value:
        """`super()` (a receiver), or a method called through a receiver (recorded). With
        `makes_instance` (`runner = self.make_runner()`), what a method of the consumer class's own
        is annotated to return (`_annotated_return`)."""
        if not isinstance(callee, MethodValue):  # super(...)
            if not node.args and ctx.owner:
                return ReceiverValue(Receiver.SUPER, ctx.owner)
            if len(node.args) == 2 and isinstance(args[0], ConsumerValue):
                return ReceiverValue(Receiver.SUPER, args[0].dotted)
            return None
        if ctx.record:
            self._record_method_call(callee.ref, node, ctx)
        if ctx.record and ctx.returns is None and self._pending is None:
            # `self._prepare(scheduler_output)`: the class's own method is read again with what it
            # is handed, as a helper function is (`_call_helper`).
            values = (*args, *(kwargs or {}).values())
            if (self._hands_provider(values) or self._hands_member(values)) and (
                fn := self._own_method(callee.ref, instances=True)
            ) is not None:
                self._read_with(fn, node, args, kwargs or {}, ctx, method=True)
        value = self._own_method_value(callee.ref, args, ctx) if not node.keywords else None
        if value is None and makes_instance and (fn := self._own_method(callee.ref)) is not None:
            value = self._annotated_return(fn)
        return value

    def _own_method(self, ref: MethodRef, instances: bool = False) -> _Function | None:
        """The consumer's method `self.m` calls (with `instances`, also `x.m` of an instance the
        consumer made of its own class, `helper = Helper()`): defined in the class or a consumer
        class it derives from (in the scanned modules); None for another receiver, or one of the
        provider's."""
        if ref.receiver is not Receiver.SELF or (ref.other and not instances) or not ref.owner:
            return None
        for cls in self._consumer_line(ref.owner):
            fn = self._function(f"{cls}.{ref.name}", load=False)
            if fn is not None:
                return fn
        return None

    def _record_method_call(
        self, ref: MethodRef, node: ast.Call, ctx: _Ctx, when: tuple[Condition, ...] | None = None
    ) -> None:
        """A call through a receiver at `node` (`MethodCall`), under the conditions that hold there
        (`when`, for a call read again after the scan)."""
        site = self._site(ctx, node)
        for shape, holds in self._call_shapes(node, ctx, self._when(ctx) if when is None else when):
            self.usage.contact.method_calls.append(MethodCall(ref, site, shape, holds, ctx.branch))

    def _own_method_value(self, ref: MethodRef, args: list[Value], ctx: _Ctx) -> Value:
        """What `self.m(...)` returns when that is a version gate: m a method of the class's own,
        and no other `def m(` in the consumer's files (no subclass can override it), whose body
        computes one (xinference's `self._is_vllm_v1()`: true past vLLM 0.11.0, else an
        environment variable's answer)."""
        if ref.receiver is not Receiver.SELF or ref.other or not ref.owner:
            return None
        fn = self._function(f"{ref.owner}.{ref.name}", load=False)
        if fn is None or fn.node.args.vararg is not None or fn.node.args.kwarg is not None:
            return None
        if not self._mentions_version(fn) or self._defined_times(ref.name) != 1:  # (the cheap test first)
            return None
        return self._helper_value(ConsumerValue(fn.dotted), [None, *args], {}, ctx)  # (None for self)

    def _defined_times(self, name: str) -> int:
        """How many times the consumer's files write `def name(` (a method or a function; the files
        not scanned too): counted in their text, once per name."""
        if name not in self._def_counts:
            written = f"def {name}(".encode()
            sources = (*self._sources.values(), *self._unscanned)
            self._def_counts[name] = sum(source.count(written) for source in sources)
        return self._def_counts[name]

    def _call_shapes(
        self, node: ast.Call, ctx: _Ctx, when: tuple[Condition, ...]
    ) -> list[tuple[CallShape, tuple[Condition, ...]]]:
        """What a call passes, under the conditions it passes it (`when`, a call's own). A `**kw`
        whose keys are known counts as those keywords (`keyword_tables`); where a key is added
        under a test the call is not under (a version gate), one shape for each way the tests go,
        each under its own conditions too."""
        keywords = [k.arg for k in node.keywords if k.arg]
        starstar = False
        conditional: list[tuple[str, tuple[Condition, ...]]] = []
        for k in node.keywords:
            if k.arg is None:
                known = self._unpacked_keys(k.value, node, ctx)
                if known is None:
                    starstar = True
                else:
                    keywords += [key for key, held in known if not held]
                    conditional += [(key, held) for key, held in known if held]
        shape = CallShape(
            positional=sum(1 for a in node.args if not isinstance(a, ast.Starred)),
            keywords=tuple(dict.fromkeys(keywords)),
            star=any(isinstance(a, ast.Starred) for a in node.args),
            starstar=starstar,
        )
        if not conditional:
            return [(shape, when)]
        ways = keyword_variants(
            shape.keywords, conditional, lambda c: (replace(c, expect=True), c.expect), lambda c, v: replace(c, expect=v)
        )
        if ways is None:
            return [(replace(shape, starstar=True), when)]
        return [(replace(shape, keywords=keys), (*when, *holds)) for keys, holds in ways]

    def _unpacked_keys(
        self, value: ast.expr, call: ast.Call, ctx: _Ctx
    ) -> list[tuple[str, tuple[Condition, ...]]] | None:
        """The keys of `**{...}`, or of `**kw` where `kw` is a local dict the function fills only
        with keys written out (`keyword_adds`), each with what must hold, beyond what holds at the
        call, for it to be added (the version gates of the `if`s the call is not in); None when they
        are not known."""
        if isinstance(value, ast.Dict):
            keys = _dict_keys(value)
            return None if keys is None else [(key, ()) for key in keys]
        fn = self._functions.get(f"{ctx.file.module}.{ctx.function}") if ctx.function else None
        if not isinstance(value, ast.Name) or fn is None:
            return None
        if fn.node.args.kwarg is not None and fn.node.args.kwarg.arg == value.id:
            handed = _handed_on(value, ctx)  # the function's own `**`: what a caller passed, if known
            return None if handed is None else [(key, ()) for key in handed]
        adds = keyword_adds(fn.node, value.id, call)
        if adds is None:
            return None
        known: list[tuple[str, tuple[Condition, ...]]] = []
        for add in adds:
            # Each `if` apart from the call must be a test whose outcome is known where it runs.
            held = self._if_tests(ctx.file.path, ((i.test.lineno, side) for i, side in add.ifs))
            if held is None:
                return None
            known.append((add.key, held))
        return known

    def _if_tests(self, path: str, ifs: Iterable[tuple[int, bool]]) -> tuple[Condition, ...] | None:
        """What must hold for a statement inside these `if`s of file `path` (each by its test's line,
        and True for its body) to run: each test a version gate, or a module or parameter test,
        read where its `if` was (`_gated_branches`); None when one is any other test."""
        held = []
        for line, side in ifs:
            test = self._gate_at.get((path, line))
            if test is None:
                return None
            held.append(test if side else replace(test, expect=not test.expect))
        return tuple(held)

    def _record_unpack(self, node: ast.Assign, ctx: _Ctx) -> None:
        """`a, b = f(...)` where f is a provider object or a method through a receiver."""
        if not ctx.record or len(node.targets) != 1 or not isinstance(node.value, ast.Call):
            return
        target = node.targets[0]
        if not isinstance(target, (ast.Tuple, ast.List)):
            return
        func = node.value.func
        callee: Value
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and dotted(func.value.func) == "super":
            receiver = self._receiver_call(func.value, None, [self._pure(a, ctx) for a in func.value.args], ctx)
            callee = receiver.method(func.attr) if isinstance(receiver, ReceiverValue) else None
        else:
            callee = self._pure(func, ctx)
        count = len(target.elts)
        starred = any(isinstance(e, ast.Starred) for e in target.elts)
        site = self._site(ctx, node)
        if isinstance(callee, ProviderValue):
            self.usage.contact.unpacks.append(Unpack(site, count, starred, choices=callee.choices))
        elif isinstance(callee, (MethodValue, MemberChain)):
            self.usage.contact.unpacks.append(Unpack(site, count, starred, method=callee.ref))
        elif isinstance(callee, ReceiverValue) and callee.receiver is Receiver.INSTANCE and callee.choices:
            self.usage.contact.unpacks.append(Unpack(site, count, starred, method=callee.method("__call__").ref))

    def _record_call_handovers(self, callee: ProviderValue, node: ast.Call, values: list[Value], ctx: _Ctx) -> None:
        """Consumer objects passed to a provider call (a registration, perhaps); a class passed to
        `P.register(C)` is registered under P, which it then stands in for."""
        registering = [r for r in callee.choices if len(r.path) >= 2 and r.path[-1] == "register"]
        role = (
            Ref(registering[0].module, registering[0].path[:-1]).symbol
            if len(registering) == 1 and len(values) == 1
            else ""
        )
        for value in values:
            if isinstance(value, ConsumerValue):
                handover = Handover(HandoverKind.CALL, value.dotted, self._site(ctx, node), role=role)
                self.usage.contact.handovers.append(handover)

    def _record_attribute_handover(
        self, ctx: _Ctx, target: ast.Attribute, owner: ReceiverValue, value_node: ast.expr | None, value: Value
    ) -> None:
        """`self.backend = MyBackend` (or `= MyBackend()`) in a method of a consumer class."""
        if not ctx.record or owner.receiver is not Receiver.SELF:
            return
        handed = value.dotted if isinstance(value, ConsumerValue) else self._consumer_class_value(value_node, ctx)
        # `self.backend = _backend_for(n)`: each class the helper returns may be stored there.
        picked = [] if handed else self._classes_returned(value_node, ctx)
        for cls in [handed] if handed else picked:
            self.usage.contact.handovers.append(
                Handover(HandoverKind.STORED, cls, self._site(ctx, target), holder=owner.owner, member=target.attr)
            )
        if picked:
            self.usage.contact.stores += [Stored(owner.owner, target.attr, cls=cls) for cls in picked]
            return
        attribute = "" if handed else self._own_class_attribute(value_node, ctx)
        maker = self._pure(value_node.func, ctx) if isinstance(value_node, ast.Call) and not handed else None
        made = maker.choices if isinstance(maker, ProviderValue) else ()
        self.usage.contact.stores.append(Stored(owner.owner, target.attr, cls=handed, attribute=attribute, made=made))

    def _classes_returned(self, node: ast.expr | None, ctx: _Ctx) -> list[str]:
        """The consumer classes a call of a consumer function returns by name (`return MhaBackend`
        in a helper choosing one of two): what `self.x = helper(...)` may store."""
        callee = self._pure(node.func, ctx) if isinstance(node, ast.Call) else None
        fn = self._functions.get(callee.dotted) if isinstance(callee, ConsumerValue) else None
        if fn is None:
            return []
        body_ctx = _Ctx(fn.file, fn.closure, fn.qualname, record=False)
        returned = (self._pure(n.value, body_ctx) for n in statements(fn.node.body) if isinstance(n, ast.Return))
        return list(dict.fromkeys(v.dotted for v in returned if isinstance(v, ConsumerValue)))

    def _own_class_attribute(self, node: ast.expr | None, ctx: _Ctx) -> str:
        """`x` when `node` is `self.x` or `self.x(...)` in a method (a class attribute, perhaps:
        `self.model_runner_cls(...)`); "" otherwise."""
        if isinstance(node, ast.Call):
            node = node.func
        if not isinstance(node, ast.Attribute):
            return ""
        inner = self._pure(node.value, ctx)
        return node.attr if isinstance(inner, ReceiverValue) and inner.receiver is Receiver.SELF else ""

    def _record_returned_class(self, node: ast.Return, ctx: _Ctx) -> None:
        """`return MyBackend` in a method of a consumer class (it counts when the method overrides the provider's)."""
        if not ctx.record or not ctx.owner or node.value is None:
            return
        value = self._pure(node.value, ctx)
        if isinstance(value, ConsumerValue):
            member = ctx.function.rpartition(".")[2]
            self.usage.contact.handovers.append(
                Handover(HandoverKind.RETURNED, value.dotted, self._site(ctx, node), holder=ctx.owner, member=member)
            )

    def _record_class_paths(self, path: str, source: bytes) -> None:
        """String literals that name something of the consumer by dotted path ("plug.backend.MyBackend")."""
        for top in self.consumer_packages:
            if b'"' + top.encode() not in source and b"'" + top.encode() not in source:
                continue  # no string starts with it (every file is read here: the pattern is the slow part)
            pattern = rb"[\"'](" + re.escape(top.encode()) + rb"(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_][\w.]*)?)[\"']"
            prose = ProseFinder(source)
            named: list[tuple[str, int]] = []
            for match in re.finditer(pattern, source):
                if _MOCK_TARGET.search(source, max(0, match.start() - 64), match.start()):
                    continue  # what a test double replaces (`patch("plug.mod.Cls", fake)`), not a handover
                if prose.at(match.start()):
                    continue  # an example in a docstring or a comment (`e.g. "plug.mod.Cls"`)
                named.append((match.group(1).decode(), match.start()))
            lines = line_numbers(source, (offset for _, offset in named))
            for text, offset in named:
                self.usage.contact.handovers.append(Handover(HandoverKind.PATH, text, Site(path, lines[offset])))

    def _record_replacement(self, ctx: _Ctx, node: ast.AST, owner: ProviderValue, attr: str, fn: _Function) -> None:
        """A patch with one of the consumer's functions: does its body use the original?"""
        # Names are looked up where the function was defined and where the patch is made: a
        # wrapper defined in an installer sees the installer's `original = Cls.attr`, which a
        # first reading of that installer (before its arguments were known) did not bind.
        scopes = [_Ctx(fn.file, fn.closure, record=False), ctx]
        target = {r.attr(attr) for r in owner.choices}

        def is_original(ref: Ref) -> bool:
            path = ref.path[:-1] if ref.path[-1:] in (("__func__",), ("__wrapped__",)) else ref.path
            return ref in target or (bool(path) and path[-1] == attr)

        uses_original = False
        self_reads: dict[str, Site] = {}
        args = [*fn.node.args.posonlyargs, *fn.node.args.args]
        me = args[0].arg if args and args[0].arg == "self" else ""
        body = every_node(ast.Module(body=fn.node.body, type_ignores=[]))
        for child in body if me else ():
            if (
                isinstance(child, ast.Attribute)
                and isinstance(child.value, ast.Name)
                and child.value.id == me
                and isinstance(child.ctx, ast.Load)
            ):
                self_reads.setdefault(child.attr, Site(fn.file.path, child.lineno))
        for child in body:
            if isinstance(child, ast.Call) and dotted(child.func) == "getattr" and len(child.args) >= 2:
                name = child.args[1]
                uses_original = isinstance(name, ast.Constant) and name.value == attr
            elif isinstance(child, (ast.Name, ast.Attribute)) and isinstance(child.ctx, ast.Load):
                values = [self._pure(child, scope) for scope in scopes]
                uses_original = any(
                    isinstance(v, ProviderValue) and any(is_original(r) for r in v.choices) for v in values
                )
            if uses_original:
                break
        site = self._site(ctx, node)
        self.usage.contact.replacements.append(
            Replacement(
                owner.choices, attr, site, fn.dotted, fn.node.lineno, uses_original, tuple(sorted(self_reads.items()))
            )
        )
        outputs = output_names([a.arg for a in (*args, *fn.node.args.kwonlyargs)])
        if outputs and not uses_original:
            self._unwritten_raw[(owner.choices, attr, site, fn.dotted)] = [
                (Site(fn.file.path, ret.lineno), names, tuple((i.test.lineno, side) for i, side in ifs))
                for ret, ifs, names in unwritten_returns(fn.node, outputs)
            ]

    def _consumer_class(self, dotted_name: str, load: bool = False, depth: int = 0) -> ConsumerClass | None:
        """A consumer class by dotted name, following re-exports; with `load`, a helper module
        outside the scan that holds it is read (only for classes handed to the provider: reading
        every module the consumer's bases live in would cost more than it finds)."""
        cls = self._classes.get(dotted_name)
        if cls is not None or depth > 4:
            return cls
        if load:
            self._function(dotted_name)  # loads the module that holds it, when it is a helper
            cls = self._classes.get(dotted_name)
            if cls is not None:
                return cls
        module, _, name = dotted_name.rpartition(".")
        scope = self._scopes.get(module)
        value = scope.names.get(name) if scope is not None else None
        if isinstance(value, ConsumerValue) and value.dotted != dotted_name:
            return self._consumer_class(value.dotted, load, depth + 1)
        return None

    def _derives_from_provider(self, name: str, depth: int = 0) -> bool:
        """Does consumer class `name` have a provider class among its bases, or among those of
        the consumer classes it derives from (once `_finish_contact` resolved them)?"""
        cls = self._classes.get(name)
        if cls is None or depth > 20:
            return False
        return any(b.provider or (b.consumer and self._derives_from_provider(b.consumer, depth + 1)) for b in cls.bases)

    def _delegated(self, owner: str, method: ConsumerMethod) -> ConsumerMethod:
        seen = self._delegations.get((owner, method.name), set())
        explicit = tuple(sorted((b for b in seen if b.text != "super" or b.provider or b.consumer), key=repr))
        return replace(method, calls_super=any(b == ClassBase(text="super") for b in seen), delegates_to=explicit)

    def _resolved_handovers(self, handovers: list[Handover]) -> list[Handover]:
        """What was handed, by the dotted name of the class that defines it (re-exports followed).
        A class set as a class attribute or named by dotted path may live outside the scan (its
        module is read when the name looks like a class's); others are looked up among the
        classes already read. A path kept in the consumer's own enum is no handover."""
        out = []
        for handover in dict.fromkeys(handovers):
            if handover.kind is HandoverKind.PATH and handover.site in self._registry_sites:
                continue
            last = handover.target.replace(":", ".").rpartition(".")[2]
            load = (
                handover.kind in (HandoverKind.ATTRIBUTE, HandoverKind.STORED, HandoverKind.PATH) and last[:1].isupper()
            )
            found = self._consumer_class(handover.target.replace(":", "."), load=load)
            if found is not None:
                out.append(replace(handover, target=found.name))
        return list(dict.fromkeys(out))

    def _finish_contact(self) -> None:
        """Resolve what was handed over and the consumer bases of every class found (loading
        helper modules outside the scan), dedupe, and store."""
        contact = self.usage.contact
        self._finishing = True
        contact.handovers = self._resolved_handovers(contact.handovers)
        stores = []
        for stored in dict.fromkeys(contact.stores):
            if stored.holder not in self._classes:
                continue
            if stored.cls:
                found = self._consumer_class(stored.cls.replace(":", "."), load=False)
                stored = replace(stored, cls=found.name if found is not None else "")
            stores.append(stored)
        contact.stores = stores
        for name, known in list(self._classes.items()):
            if not known.muted:
                methods = tuple(self._delegated(name, m) for m in known.methods)
                self._classes[name] = replace(known, methods=methods)
        done: set[str] = set()
        todo = list(self._classes)
        while todo:
            name = todo.pop()
            cls = self._classes.get(name)
            if name in done or cls is None:
                continue
            done.add(name)
            bases = []
            for base in cls.bases:
                if base.consumer:
                    found = self._consumer_class(base.consumer)
                    if found is not None:
                        base = replace(base, consumer=found.name)
                        todo.append(found.name)
                bases.append(base)
            self._classes[name] = replace(cls, bases=tuple(bases))
        self._read_mixins()
        contact.classes = sorted(self._classes.values(), key=lambda c: c.name)
        for dotted_name, node, ctx, when in self._class_calls:
            cls = self._consumer_class(dotted_name)
            if cls is not None and self._derives_from_provider(cls.name):
                self._record_method_call(MethodRef(Receiver.CLASS, "__init__", cls.name), node, ctx, when)
        contact.method_calls = list(dict.fromkeys(contact.method_calls))
        self._finish_members(contact)
        contact.unpacks = list(dict.fromkeys(contact.unpacks))
        # A body read again with its arguments known may see the original the first reading did not.
        merged: dict[tuple[object, ...], Replacement] = {}
        for r in contact.replacements:
            key = (r.owner, r.attr, r.site, r.function)
            if key not in merged or r.calls_original:
                merged[key] = r
        contact.replacements = [self._unwritten(key, r) for key, r in merged.items()]

    def _unwritten(self, key: tuple[object, ...], replacement: Replacement) -> Replacement:
        """The replacement with its returns that leave an output buffer unwritten, each under the
        version gates of the `if`s it sits in (one in an `if` on anything else is left out)."""
        found = []
        for site, names, ifs in self._unwritten_raw.get(key, []) if not replacement.calls_original else []:
            when = self._if_tests(site.path, ifs)
            if when is not None:
                found.append(UnwrittenReturn(site, names, when))
        return replace(replacement, unwritten=tuple(found)) if found else replacement


# Attributes read on the way to a member through a receiver (`self.a.b.c`: two) that are followed.
_MAX_VIA = 3


def _member_ref(base: Value, attr: str) -> MethodRef | None:
    """What `base.attr` reaches through a receiver: a member of the receiver's class, or of what an
    attribute of it holds (`self.vllm_config.model_config`, at most `_MAX_VIA` attributes deep);
    None through anything else."""
    if isinstance(base, ReceiverValue):
        return MethodRef(base.receiver, attr, base.owner, base.choices, other=base.other, param=base.param)
    if isinstance(base, (MethodValue, MemberChain)) and len(base.ref.via) < _MAX_VIA:
        ref = base.ref
        return MethodRef(ref.receiver, attr, ref.owner, ref.choices, (*ref.via, ref.name), ref.other, ref.param)
    return None


# Looked for in a function's text before it is walked for a version helper's names.
_VERSION_WORD = re.compile(rb"version", re.IGNORECASE)

# "pkg.mod.Class" or "pkg.mod:Class": how plugins name classes they hand over by path.
_DOTTED_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+(:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*)?$")


def _caught_by(group: ImportGroup, handler: ast.ExceptHandler | None) -> ImportGroup:
    """`group`, with what the handler of the try around it does when its imports fail (none: the
    error propagates)."""
    if handler is not None:
        group.fallback = describe_fallback(handler.body)
        group.leaves, group.exits = leaves(handler.body), exits(handler.body)
    return group


def _computed_attribute(base: ProviderVersion | VersionSpecifier | SignatureOf, attr: str) -> Value:
    """An attribute of the provider's version (`Version(v).release >= (0, 29)`; any other is a
    method, `.startswith`), of a specifier set (`.contains`), or of a signature (`.parameters`)."""
    if isinstance(base, SignatureOf):
        return SignatureOf(base.choices, parameters=True) if attr == "parameters" else None
    if isinstance(base, VersionSpecifier):
        return SpecifierContains(base) if attr == "contains" else None
    if attr == "release" and base.form is VersionForm.VERSION:
        return ProviderVersion(VersionForm.TUPLE)
    if attr == "public" and base.form is VersionForm.VERSION:
        # vllm-ascend's `vllm_version_is` compares `Version(parsed.public)`: a "+empty" build is its release.
        return ProviderVersion(VersionForm.TEXT, public=True)
    return VersionMethod(base, attr)


def _with_flags(node: ast.expr, value: Value) -> object:
    """A returned value with its literal `True`/`False` kept (alone, or as an element of a tuple:
    `return True, version, ""`): what a helper testing the version answers."""
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Tuple) and isinstance(value, tuple) and len(value) == len(node.elts):
        return tuple(
            e.value if isinstance(e, ast.Constant) and isinstance(e.value, bool) else v
            for e, v in zip(node.elts, value)
        )
    return value


# Bases that make a class an enum: its members are the class's own values.
_ENUM_BASES = frozenset({"Enum", "StrEnum", "IntEnum"})


def _binding_wrapper(node: ast.expr | None) -> str:
    """The wrapper of an assigned `staticmethod(f)` / `classmethod(f)`, which the scan reads as
    `f`: it decides how the replacement binds ("" for any other value)."""
    if isinstance(node, ast.Call) and len(node.args) == 1:
        name = dotted(node.func).removeprefix("builtins.")
        if name in ("staticmethod", "classmethod"):
            return name
    return ""


def _wrapped(signature: Signature, wrapper: str) -> Signature:
    """`signature` as `wrapper` (see `_binding_wrapper`) makes it bind."""
    if not wrapper or wrapper in signature.decorators:
        return signature
    return replace(signature, decorators=(*signature.decorators, wrapper))


def _last_name(node: ast.expr) -> str:
    """The last name of a dotted expression (`enum.Enum` -> "Enum"; "" for anything else)."""
    return dotted(node).rpartition(".")[2]


def _typed_by_assignments(
    assigned: dict[str, set[tuple[tuple[Ref, ...], str, str]]], typed: dict[str, tuple[Ref, ...]]
) -> tuple[dict[str, str], dict[str, str]]:
    """From what each `self.x = ...` of a class makes (`_self_assignments`): the attributes every
    assignment gives the same provider class go into `typed` (unless its body annotates them);
    those every assignment makes the same consumer class of are returned, with that class
    (`self.drafter = A(...)` here and `= B(...)` there is neither: "", not known); and apart,
    those every assignment stores the same parameter not annotated in, with it ("method:x")."""
    made: dict[str, str] = {}
    params: dict[str, str] = {}
    for attr, kinds in assigned.items():
        choices, own, param = next(iter(kinds)) if len(kinds) == 1 else ((), "", "")
        if choices:
            typed.setdefault(attr, choices)
        elif param and attr not in typed:
            params[attr] = param
        elif attr not in typed:
            made[attr] = own
    return made, params


def _self_owner(receiver: ast.expr, ctx: _Ctx) -> str:
    """The consumer class whose instance `receiver` is when it is `self` in one of its methods; ""."""
    return ctx.owner if isinstance(receiver, ast.Name) and receiver.id == "self" else ""


def _truth_tested(node: ast.expr) -> tuple[ast.expr, str] | None:
    """The object and member an `if` tests for truth: `x.a`, `getattr(x, "a", default)`, or
    `not` of either; None for any other test."""
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node = node.operand
    if isinstance(node, ast.Attribute):
        return node.value, node.attr
    if (
        isinstance(node, ast.Call)
        and dotted(node.func) == "getattr"
        and len(node.args) in (2, 3)
        and not node.keywords
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[0], node.args[1].value
    return None


def _none_tested(node: ast.Compare) -> ast.Attribute | None:
    """The attribute `x.a is None` (or `is not None`) tests; None for any other comparison."""
    if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Is, ast.IsNot)):
        return None
    left, right = node.left, node.comparators[0]
    if isinstance(left, ast.Constant) and left.value is None:
        left, right = right, left
    if isinstance(left, ast.Attribute) and isinstance(right, ast.Constant) and right.value is None:
        return left
    return None


# What a helper's answer may hold: tests of the provider and its version.
_ANSWERS = (Gate, ProviderVersion, AttributeProbe, ModuleProbe, ParameterProbe)


def _holds_answers(value: object) -> TypeGuard[tuple[Value, ...]]:
    """Is `value` a tuple holding a test or the provider's version (and nothing else known)?"""
    return (
        isinstance(value, tuple)
        and any(isinstance(v, _ANSWERS) or isinstance(v, bool) for v in value)
        and all(v is None or isinstance(v, (*_ANSWERS, str, bool)) for v in value)
    )


def _owner_and_name(value: ProviderValue) -> tuple[tuple[Ref, ...], str] | None:
    """(X's choices, "n") of a provider value that is attribute n of X, whichever choice holds."""
    if not all(ref.path for ref in value.choices):
        return None
    names = {ref.path[-1] for ref in value.choices}
    if len(names) != 1:
        return None
    return tuple(Ref(ref.module, ref.path[:-1]) for ref in value.choices), names.pop()


def _left_by_handlers(node: ast.Try) -> bool:
    """Does every handler of this try that catches a failed import leave the block, while the
    body does not (what follows runs only where the body got through)?"""
    catching = [h for h in node.handlers if catches_import_error([h])]
    return bool(catching) and all(leaves(h.body) for h in catching) and not leaves(node.body)


def _returns_or_falls_through(node: ast.Try) -> bool:
    """Is this a try whose body ends by returning, with one handler, for ImportError, that lets
    the block go on (and nothing in `else` or `finally`)?"""
    return (
        bool(node.body)
        and isinstance(node.body[-1], ast.Return)
        and len(node.handlers) == 1
        and catches_import_error(node.handlers)
        and not leaves(node.handlers[0].body)
        and not node.orelse
        and not node.finalbody
    )


def _none_defaults(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameters of `function` whose default is the literal `None`."""
    a = function.args
    positional = [*a.posonlyargs, *a.args]
    pairs = [*zip(positional[len(positional) - len(a.defaults) :], a.defaults), *zip(a.kwonlyargs, a.kw_defaults)]
    return {p.arg for p, d in pairs if isinstance(d, ast.Constant) and d.value is None}


def _only_returns(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Is the function's body (after its docstring) one `return` of a value?"""
    body = function_body(function)
    return len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None


def _only_answer(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool | None:
    """The literal `True` or `False` a function's body does nothing but return (after its
    docstring); None for any other body."""
    body = function_body(function)
    if len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Constant):
        answer = body[0].value.value
        return answer if isinstance(answer, bool) else None
    return None


def _returned_gate(
    returned: list[tuple[object, tuple[Condition, ...]]], function: ast.FunctionDef | ast.AsyncFunctionDef
) -> Value:
    """What a helper answering `True` or `False` under version gates computes (`returned`: each value
    it returns, with the conditions it returns it under): `if Version(v) <= Version("0.28"): return
    True` then `return False` is that gate. It answers True only where one of its `return True`s
    runs, each under the gates recorded for it; where anything else decides too (a plain `if`
    around a return, a return in an exception handler), True needs that as well: the gate and a
    runtime condition (False where the gate is false, undecided where it holds). Answered as the
    first element of a tuple (`return True, version, ""`), the tuple holds it there (pace-vllm's
    supported-range check). Any other value returned (another helper's answer: vllm-ascend 0.28's
    `vllm_version_is` for CPU builds) may be true where its gates hold: a runtime condition there
    (xinference's `_is_vllm_v1`: True past 0.11.0, else an environment variable's answer).
    None when a `True` is returned under no gate, or it never answers `True` and something else."""
    if returned and all(isinstance(r, tuple) and r and isinstance(r[0], bool) for r, _ in returned):
        sizes = {len(r) for r, _ in returned if isinstance(r, tuple)}
        first = _returned_gate([(r[0], when) for r, when in returned if isinstance(r, tuple)], function)
        return (first, *(None,) * (sizes.pop() - 1)) if first is not None and len(sizes) == 1 else None
    answers = {r for r, _ in returned if isinstance(r, bool)}
    if True not in answers or (False not in answers and all(isinstance(r, bool) for r, _ in returned)):
        return None  # (a True and, beside it, a False or an answer decided at run time)
    if any(value is True and not _gate_parts(when) for value, when in returned):
        return _fall_through_gate(returned, function)
    paths: list[Gate] = []
    for value, when in returned:
        parts = _gate_parts(when)
        if value is False:
            continue
        if value is not True:  # another helper's answer, say: true or not, decided at run time
            parts.append(Gate(GateOp.RUNTIME, "its other answers"))
        elif not parts:
            return None  # True under no gate at all
        paths.append(_all_of(parts))
    gate = _any_of(paths)
    lines = {c.site.line for _, when in returned for c in when if c.kind is ConditionKind.GATE}
    if _returns_only_under(function, lines):
        return gate
    return Gate(GateOp.ALL, gate.text, parts=(gate, Gate(GateOp.RUNTIME, "its other tests")))


def _all_of(parts: list[Gate]) -> Gate:
    """Every one of `parts` (at least one), as one gate."""
    return parts[0] if len(parts) == 1 else Gate(GateOp.ALL, " and ".join(g.text for g in parts), parts=tuple(parts))


def _any_of(parts: list[Gate]) -> Gate:
    """One of `parts` (at least one), as one gate."""
    return parts[0] if len(parts) == 1 else Gate(GateOp.ANY, " or ".join(g.text for g in parts), parts=tuple(parts))


def _gate_parts(when: tuple[Condition, ...]) -> list[Gate]:
    """The version gates among `when`, each as it must hold."""
    return [
        c.gate if c.expect else gates.negate(c.gate, f"not {c.text}")
        for c in when
        if c.kind is ConditionKind.GATE and c.gate is not None
    ]


def _fall_through_gate(
    returned: list[tuple[object, tuple[Condition, ...]]], function: ast.FunctionDef | ast.AsyncFunctionDef
) -> Gate | None:
    """A helper answering `False` under version gates and `True` under none (at its end): trl's
    `is_vllm_available(min_version="0.28.0")` returns False where the version is older, and
    whether vLLM is there (it is, wherever it is checked) otherwise. True exactly where none of
    its `return False`s runs; where anything else decides a `return False` too (a plain `if`
    around it), it may run where its gates hold. None for any other mix of answers."""
    fired: list[Gate] = []
    for value, when in returned:
        parts = _gate_parts(when)
        if value is False and parts:
            fired.append(_all_of(parts))
        elif value is not True or parts:
            return None  # False under no gate, another answer, or True under a gate as well
    lines = {c.site.line for _, when in returned for c in when if c.kind is ConditionKind.GATE}
    if not _returns_only_under(function, lines):
        fired = [Gate(GateOp.ALL, g.text, parts=(g, Gate(GateOp.RUNTIME, "its other tests"))) for g in fired]
    some = _any_of(fired)
    return gates.negate(some, f"not ({some.text})")


def _returns_only_under(function: ast.FunctionDef | ast.AsyncFunctionDef, lines: set[int]) -> bool:
    """Is every `return`, `raise` and `assert` of `function` (not of functions in it) inside nothing
    but `if` statements whose tests are on `lines` (the version gates recorded)?"""

    def inside(body: list[ast.stmt], gated: bool) -> bool:
        for stmt in body:
            if isinstance(stmt, (ast.Return, ast.Raise, ast.Assert)):
                if not gated:
                    return False
            elif isinstance(stmt, ast.If):
                here = gated and stmt.test.lineno in lines
                if not (inside(stmt.body, here) and inside(stmt.orelse, here)):
                    return False
            elif isinstance(stmt, ast.Try) and all(
                all(isinstance(s, ast.Raise) for s in h.body) for h in stmt.handlers
            ):
                # Handlers that only raise (`except InvalidVersion: raise ValueError(...)`) answer nothing.
                if not all(inside(part, gated) for part in (stmt.body, stmt.orelse, stmt.finalbody)):
                    return False
            elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                # In a try, a loop, a `with`: not decided by the gates alone.
                if any(isinstance(n, (ast.Return, ast.Raise, ast.Assert)) for n in walk_shallow([stmt])):
                    return False
        return True

    return inside(function.body, True)


def _text(node: ast.AST) -> str:
    """Source as written, on one line, short enough for a message."""
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 120 else text[:117] + "..."


def _handed_on(value: ast.expr, ctx: _Ctx) -> dict[str, Value] | None:
    """What `value` holds when it is the function's own `**` parameter, bound to the keywords a
    caller passed (the function read again for that call: `_forwarded_keywords`); None otherwise."""
    kwarg = ctx.definition.args.kwarg if ctx.definition is not None else None
    if kwarg is None or not isinstance(value, ast.Name) or value.id != kwarg.arg:
        return None
    held = ctx.scope.lookup(value.id)
    return held if isinstance(held, dict) else None


def _falls_back(node: ast.Call) -> bool:
    """`getattr(x, "old", getattr(x, "new", d))` (or `x.new`): a default read from the same object,
    the consumer's own way of handling a rename."""
    if len(node.args) < 3:
        return False
    default, obj = node.args[2], ast.dump(node.args[0])
    if isinstance(default, ast.Call) and dotted(default.func) == "getattr" and default.args:
        return ast.dump(default.args[0]) == obj
    return isinstance(default, ast.Attribute) and ast.dump(default.value) == obj


def _each(items: Value, target: ast.expr) -> Value:
    """What a loop over `items` binds to `target` each turn: an instance of a provider class from
    a collection of them (`for o in outputs`), a key and an instance from a mapping's `.items()`
    (`for name, layer in layers.items()`); None when that is not known."""
    if not isinstance(items, ElementsOf) or items.view == "mapping":
        return None  # (a loop over a mapping binds its keys)
    each = ReceiverValue(Receiver.INSTANCE, choices=items.choices)
    if items.view == "items":
        pair = isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2
        return (None, each) if pair else None
    return each if isinstance(target, ast.Name) else None


def _bound_text(binding: dict[str, Value]) -> tuple[tuple[str, str], ...]:
    """The values a read of a function binds to its parameters, as sortable text (a key)."""
    return tuple(sorted((k, repr(v)) for k, v in binding.items()))


def _through_flags(callee: Value, flags: Clauses) -> tuple[Value, bool]:
    """A callee bound to the provider's object by one branch of a consumer test (`mixed`), as a
    call where `flags` hold gets it: None where they rule out that branch; the provider's object,
    and whether another object may be called instead (not where they rule out every other branch)."""
    if not isinstance(callee, ProviderValue) or not callee.mixed:
        return callee, False
    if excludes(flags, callee.bound_when):
        return None, False
    # (No other branch known, as after merging branches that all bound provider objects: it may be.)
    return callee, not callee.other_when or not all(excludes(flags, other) for other in callee.other_when)


def _unchained(value: Value) -> Value:
    return None if isinstance(value, MemberChain) else value


def _consumer_first(ctx: _Ctx) -> bool:
    """Is this the handler of a try that imports only the consumer's own modules, all present?"""
    last = ctx.when[-1] if ctx.when else None
    return last is not None and last.kind is ConditionKind.TRY_FAILED and not last.refs and last.others_present


def _flags_set(node: ast.If) -> dict[str, bool]:
    """Names the two branches of an `if` set to opposite bool literals, and nothing else (`if g:
    X = True` / `else: X = False`): name -> what the body sets."""

    def literals(body: list[ast.stmt]) -> dict[str, bool | None]:
        out: dict[str, bool | None] = {}
        for stmt in body:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, bool)
            ):
                name = stmt.targets[0].id
                if out.get(name, False) is not None:
                    out[name] = stmt.value.value
                continue
            for child in every_node(stmt):
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                    out[child.id] = None  # set some other way (or in a nested block): not a flag
        return out

    body, orelse = literals(node.body), literals(node.orelse)
    return {
        name: value
        for name, value in body.items()
        if value is not None and orelse.get(name) is not None and orelse[name] is not value
    }


def _only_leaves(node: ast.If) -> bool:
    """`if test: return` (or `return None`, `continue`, `break`) and nothing else, no else branch."""
    if node.orelse or len(node.body) != 1:
        return False
    stmt = node.body[0]
    if isinstance(stmt, ast.Return):
        return stmt.value is None or (isinstance(stmt.value, ast.Constant) and stmt.value.value is None)
    return isinstance(stmt, (ast.Continue, ast.Break))


def _falsy_literals(body: list[ast.stmt]) -> set[str]:
    """Names `body` sets to False or None at its top level (`X = False`)."""
    return {
        stmt.targets[0].id
        for stmt in body
        if isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.Constant)
        and stmt.value.value in (False, None)
    }


def _distribution(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _mentions_version(node: ast.AST) -> bool:
    """Could this function compute a version gate? (A cheap filter before it is evaluated.)"""
    for child in every_node(node):
        word = (
            child.id
            if isinstance(child, ast.Name)
            else child.attr
            if isinstance(child, ast.Attribute)
            else child.name
            if isinstance(child, ast.alias)
            else ""
        )
        if "version" in word.lower():
            return True
    return False


def _reset_attribute(stmt: ast.stmt) -> str | None:
    """`if ...: ...; self.a = False` (or None, 0): the attribute a branch resets, else None."""
    if not isinstance(stmt, ast.If) or stmt.orelse or not stmt.body:
        return None
    last = stmt.body[-1]
    if not (isinstance(last, ast.Assign) and len(last.targets) == 1 and isinstance(last.value, ast.Constant)):
        return None
    target = last.targets[0]
    if last.value.value not in (False, None, 0) or not _is_self_attr(target):
        return None
    assert isinstance(target, ast.Attribute)
    return target.attr


def _is_self_attr(node: ast.AST, attr: str | None = None) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and (attr is None or node.attr == attr)
    )


def _assigned_only_before(cls: ast.ClassDef, init: ast.FunctionDef, index: int, attr: str) -> bool:
    """Is `self.<attr>` assigned, in the whole class, only by top-level statements of `__init__` before
    `index` and by the reset that ends `init.body[index]`?"""
    allowed: set[int] = {id(s) for s in init.body[:index]}
    reset = init.body[index]
    assert isinstance(reset, ast.If)
    allowed.add(id(reset.body[-1]))
    for node in every_node(cls):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and dotted(node.func) in ("setattr", "delattr") and node.args:
            if isinstance(node.args[0], ast.Name) and node.args[0].id == "self":
                return False
        flat = [t for target in targets for t in every_node(target)]
        if any(_is_self_attr(t, attr) for t in flat) and id(node) not in allowed:
            return False
    return True


def _module_glob(node: ast.expr) -> str:
    """The module path a computed string spells, each computed part a `*` that stands for a name or
    part of one (f"pkg.{kind}.core" -> "pkg.*.core", "pkg." + x -> "pkg.*"), cut at a ":" (what
    follows names an attribute); "" when it is neither an f-string nor a sum of strings."""
    pieces: list[str]
    if isinstance(node, ast.JoinedStr):
        pieces = [str(v.value) if isinstance(v, ast.Constant) else "*" for v in node.values]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        pieces = _summed(node)
    else:
        return ""
    return "".join(pieces).partition(":")[0]


def _summed(node: ast.expr) -> list[str]:
    """The parts of a sum of strings: literals as written, anything else `*`."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _summed(node.left) + _summed(node.right)
    return [node.value] if isinstance(node, ast.Constant) and isinstance(node.value, str) else ["*"]


def _literal_prefix(node: ast.expr) -> str:
    """The literal text a computed string starts with: f"pkg.{x}" -> "pkg."; "pkg." + x -> "pkg."."""
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            return node.left.value
        return _literal_prefix(node.left)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        base = node.func.value
        if isinstance(base, ast.Constant) and isinstance(base.value, str):
            return base.value.partition("{")[0]
    return ""


def _assignments(node: ast.ClassDef) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a class's methods set on their instance (`ConsumerClass.assigned`), and which of those
    only ever to a false constant (`ConsumerClass.false_only`)."""
    makers = instance_assignments(node)
    false_only = () if "*" in makers else tuple(sorted(a for a, made in makers.items() if made == {FALSE_CONSTANT}))
    return tuple(sorted(makers)), false_only


def _dict_keys(node: ast.Dict) -> list[str] | None:
    """The keys of a dict literal when every one is a string constant (no `**other` inside)."""
    keys: list[str] = []
    for key in node.keys:
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        keys.append(key.value)
    return keys
