"""What a consumer uses of a provider, as plain data (filled by `scanner`).

A `Ref` names a provider object by the module the consumer reached it through
and an attribute path from there. Where a try/except ladder offers several
ways to the same name, a value carries every choice, first importable wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from atompin.analysis.arity import CallShape, binds_receiver
from atompin.analysis.gates import Gate
from atompin.analysis.names import join_symbol
from atompin.analysis.signature import Signature
from atompin.model import Site
from atompin.sources.tree import module_of_path


@dataclass(frozen=True)
class Ref:
    module: str
    path: tuple[str, ...] = ()

    def attr(self, name: str) -> Ref:
        return Ref(self.module, (*self.path, name))

    @property
    def symbol(self) -> str:
        return join_symbol(self.module, self.path)

    @property
    def dotted(self) -> str:
        """`Ref("m.sub", ("f",))` -> "m.sub.f": what an import statement names, module or not."""
        return ".".join((self.module, *self.path))


class ImportKind(str, Enum):
    FROM = "from"  # from m import a
    IMPORT = "import"  # import m / import m as a
    IMPORTLIB = "importlib"  # importlib.import_module("m")


@dataclass(frozen=True)
class ImportUse:
    """One imported name at one place (`from m import a, b` is two)."""

    ref: Ref
    site: Site
    kind: ImportKind
    via: tuple[Site, ...] = ()  # call sites that passed the module name to a helper
    # In a ladder's try body: the conditions of the branch it is in there (`if <gate>: from a import X`
    # / `else: from b import X`), beyond the ladder's own. An import that cannot run is no alternative.
    when: tuple[Condition, ...] = ()


class Guard(str, Enum):
    """How a patch or reference survives its target being gone."""

    NONE = "unguarded"  # start-up raises
    GETATTR_DEFAULT = "getattr-default"  # getattr(x, "n", None): silently skipped
    HASATTR = "hasattr"  # if hasattr(x, "n"): silently skipped
    TRY = "try"  # try/except around it: silently skipped
    REQUIRED = "required"  # `if not hasattr(x, "n"): raise ...`: the check raises when it is gone


class ConditionKind(str, Enum):
    """Why a branch may not run at a given provider (see `Condition`)."""

    GATE = "gate"  # a version gate: the branch runs when `gate` is `expect`
    ATTR_ABSENT = "attr-absent"  # hasattr's other branch: runs only when the provider lacks `refs[*].attr`
    # The other branch of `hasattr(X, "n") and ...`: runs wherever the provider lacks `refs[*].attr`,
    # and wherever the rest of the test fails too.
    ATTR_ABSENT_OR = "attr-absent-or"
    # hasattr's branch, for the replacement defined there (a `ReplacementVariant`): it is made only
    # where the provider has `refs[*].attr` (the uses in that branch are guarded instead).
    ATTR_PRESENT = "attr-present"
    TRY_FAILED = "try-failed"  # an `except ImportError` handler: runs only when an import of its try fails
    AFTER_IMPORTS = "after-imports"  # in a try body after imports: runs only when they succeeded
    MODULE_FOUND = "module-found"  # a find_spec test: runs when the provider has module `refs[0]` is `expect`
    # `"x" in inspect.signature(f).parameters`: runs when provider callable `refs[*]` takes a parameter
    # named `attr` is `expect`.
    PARAM_TAKEN = "param-taken"
    FLAG = "flag"  # `if self.attr:` in a method of consumer class `owner`: runs only when the flag is true
    # A test of the platform (`current_platform.is_rocm()`, `torch.version.hip is not None`): the
    # branch never runs on the platforms where the test surely has the other value (`holds`, `fails`).
    PLATFORM = "platform"


@dataclass(frozen=True)
class Condition:
    """Something that must hold for the branch a use sits in to run; a use's conditions are and-ed.

    The scanner records them as written; the checks decide them at a provider
    (its version for gates, its names for the others).
    """

    kind: ConditionKind
    site: Site  # the `if`, `assert` or `try` statement
    text: str = ""  # the test as written
    gate: Gate | None = None  # GATE
    expect: bool = True  # GATE, MODULE_FOUND: the branch runs when the test has this value
    # ATTR_ABSENT(_OR) / ATTR_PRESENT: the owner's choices; TRY_FAILED / AFTER_IMPORTS: the imports.
    refs: tuple[Ref, ...] = ()
    attr: str = ""  # ATTR_ABSENT(_OR) / ATTR_PRESENT / FLAG
    # ATTR_ABSENT: more names; the branch runs when any of them is absent. PARAM_TAKEN: more
    # parameters; the test holds when the callable takes every one.
    also: tuple[str, ...] = ()
    # TRY_FAILED: every import of the try body that is not the provider's is the consumer's own, present.
    others_present: bool = False
    owner: str = ""  # FLAG: the consumer class (dotted) whose instance `self` is
    # PLATFORM: the platforms where the test surely holds, and where it surely fails.
    holds: tuple[str, ...] = ()
    fails: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModuleStop:
    """A module-level `if <test>: raise ...` whose test is a version gate or a test of the
    provider's names (sglang's `if "dtype" not in inspect.signature(f).parameters: raise
    ImportError(...)`): past it the module runs only under `rest`, the test failing. Where the
    checks decide `rest` false, importing the module raises: nothing after the raise runs, nor,
    for a package's `__init__`, any module under the package."""

    site: Site  # the raise
    module: str
    is_package: bool
    rest: tuple[Condition, ...]


@dataclass(frozen=True)
class Requirement:
    """A consumer function that raises its own error unless provider callables take some
    parameters: `if not {"config", "device"}.issubset(inspect.signature(f).parameters): raise ...`
    (or `if "device" not in ...: raise ...`) among its statements. verl 0.9.1's
    `require_vllm_delta_support` refuses its delta backend so before vLLM's `WeightTransferEngine`
    takes the arguments its subclass passes. Past the raise the function runs only under `holds`
    (the test failing); where the checks decide `holds` false, the module's own calls of the
    callables tested are refused first (`requirements`)."""

    site: Site  # the raise
    module: str
    function: str  # the requiring function's qualified name
    holds: Condition  # a PARAM_TAKEN condition: the callables tested take the parameters


@dataclass
class ImportGroup:
    """A single import statement's name, or every alternative of one ladder."""

    path: str
    line: int
    function: str  # enclosing function's qualified name ("" at module level)
    ladder: bool
    alternatives: list[list[ImportUse]] = field(default_factory=list)
    # What happens when no alternative imports: "" means the error propagates.
    fallback: str = ""
    # The handler leaves (returns, exits, ends the loop's turn): what follows the ladder runs only
    # when an alternative imported, so a later use of what it binds fails only with the ladder.
    leaves: bool = False
    exits: bool = False  # the handler ends the program (`sys.exit(1)`)
    # The try is all of a function that only tests whether the import works (`guards.feature_test`).
    feature_test: bool = False
    when: tuple[Condition, ...] = ()
    # What the ImportError handler defines a class or function of its own in place of (`except
    # ImportError: class Base: ...`): where the import fails, the name is that stand-in.
    stand_ins: tuple[Ref, ...] = ()


@dataclass(frozen=True)
class AttributeUse:
    """A read of an attribute chain rooted at a provider name, e.g. `c.d.E`."""

    choices: tuple[Ref, ...]
    site: Site
    guard: Guard
    when: tuple[Condition, ...] = ()
    function: str = ""  # the enclosing function's qualname ("" at module level)


@dataclass(frozen=True)
class ReplacementVariant:
    """One definition of a replacement's name, with what must hold for it to be made (vllm-ascend
    defines `get_kv_cache_coordinator` once per vLLM release, under `if vllm_version_is(...)`)."""

    signature: Signature
    when: tuple[Condition, ...] = ()


@dataclass(frozen=True)
class PatchSite:
    """An assignment that replaces (or adds) an attribute of a provider module or class."""

    owner: tuple[Ref, ...]  # ladder choices for the patched object
    attr: str
    site: Site
    guard: Guard
    function: str
    # The assigned value is a literal (a marker flag, a None): never a replacement.
    literal_value: bool = False
    replacement: Signature | None = None
    # Patch sites of one `for name in (...): ... break` loop: any one of them is enough.
    alternative_group: str = ""
    via: tuple[Site, ...] = ()
    when: tuple[Condition, ...] = ()
    # The assigned value is another provider object (`C._orig_f = C.f`): the name keeps it.
    stash: bool = False
    # Named as a target to replace by a literal dotted path (`@register_patch(target="pkg.mod.C.f")`).
    declared: bool = False
    # The replacement's name is defined more than once (under different conditions): every
    # definition, in order; the checks take the first that runs at the provider checked.
    variants: tuple[ReplacementVariant, ...] = ()
    # Inside an `if`, a try, a loop or a `match`: it may not run.
    nested: bool = False
    # Which side of a plain `if`/`else` it is on ("path:line#0" the body, "#1" the else; "" elsewhere).
    branch: str = ""
    # Set on a copy of a provider module served in its place (`ProviderValue.copy`): the module's
    # own code never reads what it sets.
    on_copy: bool = False
    # The value is one of the consumer's classes, and `replacement` its own `__init__`.
    constructor: bool = False
    # Not an assignment: the class is registered out of tree under the patched class's name, and
    # the provider's `__new__` hands it out wherever that class is built (`Registration`).
    registered: bool = False

    def key(self) -> tuple[tuple[Ref, ...], str]:
        return self.owner, self.attr


@dataclass(frozen=True)
class CallUse:
    """A call of a provider object: `f(a, b, key=c)` passes 2 positional and `key`."""

    choices: tuple[Ref, ...]
    site: Site
    shape: CallShape
    # Positional arguments that evaluate to string literals (None elsewhere).
    literals: tuple[str | None, ...] = ()
    when: tuple[Condition, ...] = ()
    # What the handler of a try around the call does when it raises TypeError ("": not caught).
    caught: str = ""
    # That try ("path:line"), and for a call in a handler that catches TypeError the try it falls
    # back from: a call there is the form for another release when the try's own call fits.
    try_site: str = ""
    fallback_of: str = ""
    # The callee is an attribute looked up at the call (`C.f(...)`), not a name bound earlier: a
    # consumer patch of it is what runs.
    by_attribute: bool = False
    # The callee is a name an import statement binds (`from m import f` then `f(...)`): it holds
    # m.f as it was when the import ran, the consumer's own patch of m.f included if that ran first.
    imported: bool = False
    # The callee is a name bound to the provider's object by one branch of an `if` on the
    # consumer's own state and to another object by the other (`ProviderValue.mixed`).
    mixed: bool = False
    # A Triton launch, `kernel[grid](...)`: the arguments bind to the kernel's parameters.
    launch: bool = False
    # The call ("path:line") of the consumer function making this one whose keywords this one
    # passes on through that function's `**` parameter: the keywords named are that call's.
    keywords_from: str = ""
    # `dataclasses.replace(obj, ...)` of an object typed with the class: it may be an instance of a
    # subclass, whose own fields the call may name.
    replaces: bool = False


class ReadKind(str, Enum):
    PLAIN = "read"  # X.f or getattr(X, "f")
    DEFAULT = "default"  # getattr(X, "f", default)
    HASATTR = "hasattr"
    ABSENT = "absent"  # if not hasattr(X, "f"): an idempotency or ordering check


@dataclass(frozen=True)
class Read:
    """`owner.attr` was read somewhere in the consumer, in this way."""

    owner: tuple[Ref, ...]
    attr: str
    kind: ReadKind


@dataclass(frozen=True)
class VersionAssert:
    """A module-level `assert <version gate>` (a tripwire such as `assert __version_tuple__ < (0, 26)`)."""

    gate: Condition
    module: str
    when: tuple[Condition, ...] = ()


@dataclass(frozen=True)
class ModuleEdge:
    """Consumer module `source` may import `target` (a module, or with a trailing "." every module under it)."""

    source: str
    target: str
    site: Site
    when: tuple[Condition, ...] = ()
    # Only once provider module `after` is imported: an import hook's map names the consumer module
    # it serves in that one's place (`{"vllm.layers.sampler": "plug.sampler"}`).
    after: str = ""


@dataclass(frozen=True)
class Registration:
    """A call into the provider hands it a consumer class under a name (`register_oot(cls, name="X")`)."""

    name: str
    consumer_class: str
    site: Site
    when: tuple[Condition, ...] = ()


@dataclass
class ConsumerUsage:
    """Everything the scanner found in the consumer, for one provider package."""

    provider_package: str
    files: int = 0
    groups: list[ImportGroup] = field(default_factory=list)
    attributes: list[AttributeUse] = field(default_factory=list)
    patches: list[PatchSite] = field(default_factory=list)
    calls: list[CallUse] = field(default_factory=list)
    # How each (owner, attr) was read anywhere in the consumer.
    reads: list[Read] = field(default_factory=list)
    unparseable: list[tuple[str, int, str]] = field(default_factory=list)
    # Helper bodies not read again with the objects handed to them, past the bounds that keep the
    # scan finite (`scanner._MAX_RESCANS`): how many, and where the first such helper is defined.
    unread_helpers: int = 0
    first_unread_helper: Site | None = None
    # Consumer modules read outside the scanned packages (helpers), with their content ids.
    helper_modules: dict[str, str] = field(default_factory=dict)
    # The files whose every body the scan read (the rest are searched as text where it matters).
    read_paths: list[str] = field(default_factory=list)
    # Version gates met (kind GATE), for --verbose and `gate-flip`.
    gates: list[Condition] = field(default_factory=list)
    version_asserts: list[VersionAssert] = field(default_factory=list)
    # Tests of whether the provider has a module (`find_spec("pkg.mod") is None`, kind MODULE_FOUND).
    module_probes: list[Condition] = field(default_factory=list)
    # Module-level raises under a version gate or a test of the provider's names.
    module_stops: list[ModuleStop] = field(default_factory=list)
    # In a function, `if <version gate>: raise ...` (the consumer refusing a provider version):
    # the test's site and the raise's.
    gated_raises: list[tuple[Site, Site]] = field(default_factory=list)
    # Functions that raise unless provider callables take some parameters.
    requirements: list[Requirement] = field(default_factory=list)
    # Provider module names the consumer registers in sys.modules itself.
    injected_modules: list[tuple[str, Site]] = field(default_factory=list)
    # What it puts there: the consumer modules by dotted name, "*" for a value not known to be one
    # (a namespace of its own, a dict's value): provider code importing from there reaches them.
    injected_values: list[str] = field(default_factory=list)
    registrations: list[Registration] = field(default_factory=list)
    # Module-level consumer functions called only inside a try (or `with suppress(...)`) that
    # catches ImportError, and named nowhere else: "path:function" -> that try ("path:line").
    caught_calls: dict[str, str] = field(default_factory=dict)
    # Imports between consumer modules, and names of consumer modules in string literals.
    module_edges: list[ModuleEdge] = field(default_factory=list)
    # The consumer's classes and the calls, unpackings and handovers around them.
    contact: ContactSurface = field(default_factory=lambda: ContactSurface())
    # "src/" when the consumer's packages sit in a `src` folder (`SourceTree.package_root`).
    package_root: str = ""

    def module_of(self, path: str) -> str:
        """The consumer module a scanned file's path names."""
        return self.located(path)[0]

    def located(self, path: str) -> tuple[str, bool]:
        """The consumer module a scanned file's path names, and whether it is a package's `__init__`."""
        root = self.package_root
        return module_of_path(path[len(root) :] if root and path.startswith(root) else path)

    def read_kinds(self) -> dict[tuple[tuple[Ref, ...], str], set[ReadKind]]:
        out: dict[tuple[tuple[Ref, ...], str], set[ReadKind]] = {}
        for r in self.reads:
            out.setdefault((r.owner, r.attr), set()).add(r.kind)
        return out


def effective_guard(patch: PatchSite, reads: set[ReadKind]) -> Guard:
    """What decides a patch's fate when its target is gone: the patch's own guard, else
    how the consumer read the original (`getattr(..., default)` or `hasattr`) elsewhere."""
    if patch.guard is not Guard.NONE:
        return patch.guard
    if ReadKind.DEFAULT in reads:
        return Guard.GETATTR_DEFAULT
    if ReadKind.HASATTR in reads:
        return Guard.HASATTR
    return Guard.NONE


# -- the contact surface: classes, receivers, unpacking, handovers ---------------------------


@dataclass(frozen=True)
class ClassBase:
    """One base of a consumer class, as written: a provider class (by its ladder choices),
    one of the consumer's own classes (by dotted name), or neither (external or unknown)."""

    provider: tuple[Ref, ...] = ()
    consumer: str = ""
    text: str = ""  # the base expression as written ("nn.Module", "Base")
    # `Patch[Target]` (`ScanSurface._patched_class`): the class's members are set on the provider
    # class itself, whose own instances then run them.
    in_place: bool = False


@dataclass(frozen=True)
class SuperCall:
    """A `super().name(...)` call in an override, with the arguments it passes that are known not
    to be None there: parameters of the override tested `is not None` around it (`nullness`)."""

    line: int
    positions: tuple[int, ...] = ()  # of its positional arguments
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConsumerMethod:
    """A method defined in a consumer class body."""

    name: str
    line: int
    signature: Signature
    # Calls the method it overrides: `super().name(...)`, `super(C, self).name(...)`.
    calls_super: bool = False
    # Bases called explicitly as `Base.name(self, ...)`, as written.
    delegates_to: tuple[ClassBase, ...] = ()
    # Its body only raises (`raise NotImplementedError`): any call fails, whatever it passes.
    raises: bool = False
    # Its body does nothing (`pass`, `...`, `return None`): no call of it changes anything.
    inert: bool = False
    end_line: int = 0  # the last line of its definition
    # Its `super().name(...)` calls, when it was read for them (see `calls_super`).
    super_calls: tuple[SuperCall, ...] = ()


@dataclass(frozen=True)
class ConsumerClass:
    """A class defined in the consumer: its bases in order, its methods and class attributes."""

    name: str  # dotted: "plug.backend.MyBackend"
    path: str
    line: int
    bases: tuple[ClassBase, ...] = ()
    methods: tuple[ConsumerMethod, ...] = ()
    attributes: tuple[str, ...] = ()  # assigned or annotated in the class body
    # Set on the instance by its methods (`self.x = ...`, closures included; "*": any, by `setattr`).
    assigned: tuple[str, ...] = ()
    # Those of them its methods set only to a false constant (`self.rocm_aiter_moe_enabled = False`).
    false_only: tuple[str, ...] = ()
    # Every name its body binds, under an `if`, `try`, `with` or loop too (a method defined per
    # release), by an import or a nested class: members it may have.
    bound: tuple[str, ...] = ()
    # Read from a helper module outside the scanned packages: its facts serve the
    # classes that inherit from it, but nothing is reported at its own sites.
    muted: bool = False
    # Its module names the provider package (`relevant.names_the_provider`).
    names_provider: bool = False
    # A class decorator may write its `__init__` (a dataclass, attrs), or a metaclass may make
    # its instances: a call of it may run no `__init__` written in a body.
    writes_init: bool = False
    # As a standard-library `@dataclass` (under no other decorator than those that keep its
    # `__init__`): its own fields in `ClassInfo.fields`' encoding; None for any other class.
    fields: tuple[str, ...] | None = None
    # For such a dataclass: the conditions its definition runs under (version gates, handlers).
    when: tuple[Condition, ...] = ()
    # Its `__init__` first hands every argument on, unchanged, to the next class's
    # (`def __init__(self, *args, **kwargs): super().__init__(*args, **kwargs)`, then its own setup),
    # but the keywords it takes out first (`init_pops`: `kwargs.pop("name")`).
    init_hands_on: bool = False
    init_pops: tuple[str, ...] = ()

    @property
    def symbol(self) -> str:
        module, _, qualname = self.name.rpartition(".")
        return f"{module}:{qualname}" if module else self.name

    def method(self, name: str) -> ConsumerMethod | None:
        return next((m for m in self.methods if m.name == name), None)


class Receiver(str, Enum):
    SELF = "self"  # self.m(...) in a method of a consumer class
    CLS = "cls"  # cls.m(...) in a classmethod
    SUPER = "super"  # super().m(...)
    INSTANCE = "instance"  # x.m(...) where x is annotated as (or assigned) a provider class instance
    # x.m(...) where x is a parameter, not annotated, of a consumer method: typed as the provider
    # method it overrides annotates it (`MethodRef.param`), once the provider's classes are known.
    PARAM = "param"
    CLASS = "class"  # Cls(...) of a consumer class: the `__init__` its order runs (`inits`)


@dataclass(frozen=True)
class MethodRef:
    """A method reached through a receiver: `owner` is the consumer class (self, cls, super()),
    `choices` the provider class (an annotated instance)."""

    receiver: Receiver
    name: str
    owner: str = ""
    choices: tuple[Ref, ...] = ()
    # The attributes read on the way (`self.vllm_config.compute_hash`: ("vllm_config",)); only a
    # member use has them, its type found through the provider's annotations. `ELEMENT` after an
    # attribute: an element of the collection it holds (`for m in self.managers: m.cap`).
    via: tuple[str, ...] = ()
    # SELF through an object typed as an instance of `owner` other than the method's own `self`
    # (`ReceiverValue.other`): looked up the same way, said otherwise.
    other: bool = False
    # PARAM: "method:parameter", the method of class `owner` whose parameter the receiver is.
    param: str = ""


# In `MethodRef.via`: an element of the collection the attribute before it holds.
ELEMENT = "[]"


@dataclass(frozen=True)
class MethodCall:
    method: MethodRef
    site: Site
    shape: CallShape
    # The conditions of the branch the call is in (version gates, try handlers).
    when: tuple[Condition, ...] = ()
    # The side of a plain if/else it is on ("path:line#0" or "#1"; "" elsewhere).
    branch: str = ""

    def binds(self, sig: Signature) -> bool:
        """Does this call supply the first parameter of method `sig` (`binds_receiver`: through
        `cls`, a classmethod's; through anything else, all but a staticmethod's)?"""
        return binds_receiver(sig, self.method.receiver is not Receiver.CLS)


@dataclass(frozen=True)
class MemberUse:
    """`x.name` read, called or set through a receiver (`self`, `cls`, `super()`, a parameter or
    attribute annotated with a provider class): the member must exist when it runs."""

    method: MethodRef
    site: Site
    # What must hold for the read to run (version gates, try handlers).
    when: tuple[Condition, ...] = ()
    # Inside a try that catches AttributeError, or in a function that names the member in a
    # string (`hasattr(x, "name")`, `getattr(x, "name", None)`): its absence is handled.
    guarded: bool = False
    # `super().m` inside the consumer's own method `m`: an override handing on to the original.
    hands_on: bool = False
    function: str = ""  # the enclosing function's qualname ("Cls.m"; "" at module level)
    # `x.name = ...`: set, not read (a name gone from the class takes the value as a new attribute).
    stored: bool = False
    # `getattr(x, "name", default)`: nothing raises where it is gone; the default is what it gives.
    defaulted: bool = False
    # Guarded by `if hasattr(x, "name"):` in a chain of `elif hasattr(x, "other"):` whose last
    # `else` raises (`syntax.hasattr_ladder`): the other names tested. Where all are gone, it raises.
    alternatives: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Unpack:
    """`a, b = f(...)`: a provider call's result unpacked into `count` names (at least
    `count - 1` when `starred`). The callee is a provider object or a method through a receiver."""

    site: Site
    count: int
    starred: bool = False
    choices: tuple[Ref, ...] = ()
    method: MethodRef | None = None
    # The consumer's own method called, whose every `return` gives the callee's result
    # ("module:Class.m"); "" when the callee is called directly.
    through: str = ""


class HandoverKind(str, Enum):
    PATH = "path"  # a string literal naming the class by its dotted path
    CALL = "call"  # passed to a provider call (a registration)
    ATTRIBUTE = "attribute"  # a class attribute of a class with a provider base
    STORED = "stored"  # stored on `self` in a method of a class with a provider base
    RETURNED = "returned"  # returned by an override of a provider method


@dataclass(frozen=True)
class Handover:
    """Evidence that the consumer hands a class (or an instance of it) to the provider.

    `target` is the dotted name of the class handed, or for PATH the literal text. For
    ATTRIBUTE, STORED and RETURNED, `holder` is the consumer class and `member` the attribute
    or method name: it counts when the holder derives from a provider class (RETURNED: when
    the method overrides a provider method).
    """

    kind: HandoverKind
    target: str
    site: Site
    holder: str = ""
    member: str = ""
    # CALL as `P.register(C)`, P a provider class (an ABC taking C as a virtual subclass): P's
    # symbol. C is then one of P's objects that inherits none of P's members.
    role: str = ""


@dataclass(frozen=True)
class OutsideStore:
    """A member the consumer sets from outside a class (`ContactSurface.member_stores`): its name,
    where, and the enclosing function's qualname."""

    name: str
    site: Site
    function: str = ""


@dataclass(frozen=True)
class Stored:
    """`self.member = ...` in a method of a consumer class (`holder`): what it stores there, when
    the scan can tell. `cls`: a consumer class or an instance of it (`= Runner(...)`); `attribute`:
    what a class attribute of the instance holds, or makes when called (`= self.runner_cls(...)`);
    `made`: an instance of a provider class; none of them: something else."""

    holder: str
    member: str
    cls: str = ""
    attribute: str = ""
    # The provider class it makes (`= ProviderClass(...)`): a wrapper keeps what it delegates to.
    made: tuple[Ref, ...] = ()


@dataclass(frozen=True)
class Replacement:
    """A patch whose value is one of the consumer's functions: does it call the original?"""

    owner: tuple[Ref, ...]
    attr: str
    site: Site
    function: str  # dotted name of the replacement
    line: int
    calls_original: bool
    # Members it reads on its `self` (the instance it is installed on): name and site, e.g. a
    # helper the consumer installs beside it (`self._allocate_kv_cache_tensors(...)`).
    self_reads: tuple[tuple[str, Site], ...] = ()
    # Its returns of a value that leave output parameters unwritten (`output_buffers`).
    unwritten: tuple[UnwrittenReturn, ...] = ()
    # It takes arguments and reads none of them: it does the original's work in no way, whatever
    # the original does (ai-dynamo's `kernel_warmup(*_args, **_kwargs)` that only logs a skip).
    discards: bool = False
    # It uses the original only in early exits (`if cond: return original(...)`) and does the
    # work itself otherwise: where the first condition is, its text, and how many such exits
    # there are (`syntax.delegating_exits`).
    delegates_when: tuple[Site, str, int] | None = None
    path: str = ""  # the file defining it (`line` is its `def`'s)


@dataclass(frozen=True)
class UnwrittenReturn:
    """A `return <value>` of a replacement before which nothing writes (or reads, or hands on) the
    output parameters `outputs`, under the version gates of the `if`s it sits in."""

    site: Site
    outputs: tuple[str, ...]
    when: tuple[Condition, ...] = ()


@dataclass(frozen=True)
class NamespaceArgument:
    """A namespace the consumer builds (`argparse.Namespace(**vars(engine_args), k=v)`) passed to a
    provider function, which reads its attributes: it has those of the instances of `copies` it
    copies, and `names`. ai-dynamo hands vLLM's `run_headless(args)` such a namespace of its engine
    arguments; vLLM 0.34 reads `args.headless_client_handshake_address`, which only vLLM's own
    command line sets."""

    callee: tuple[Ref, ...]
    site: Site  # the call
    position: int  # the argument's position (-1: passed by `keyword`)
    keyword: str
    copies: tuple[Ref, ...]
    names: tuple[str, ...]
    built: Site  # where the namespace is made


@dataclass
class ContactSurface:
    """What the drift rules need about the consumer beyond names."""

    classes: list[ConsumerClass] = field(default_factory=list)
    method_calls: list[MethodCall] = field(default_factory=list)
    # Members read or called through receivers (`missing-member`).
    member_uses: list[MemberUse] = field(default_factory=list)
    # Attribute names the consumer sets from outside a class (`x.name = ...` on anything but
    # `self`, `setattr(x, "name", ...)`): it may put such a member on a provider object itself.
    member_stores: list[str] = field(default_factory=list)
    # Where each of those is set (a name set in several places is there once per place).
    outside_stores: list[OutsideStore] = field(default_factory=list)
    unpacks: list[Unpack] = field(default_factory=list)
    handovers: list[Handover] = field(default_factory=list)
    replacements: list[Replacement] = field(default_factory=list)
    # Every `self.x = ...` of the consumer's classes (who keeps what where).
    stores: list[Stored] = field(default_factory=list)
    # Of the members classes are kept in (handovers `ATTRIBUTE`, `STORED`), as "holder:member",
    # those read somewhere for the object itself (`f(x.member)`, `return x.member`, `getattr(x,
    # "member")`; on `self`, in a method of the holder's line), not only for its attributes or to
    # test it for None: what the consumer passes on (in the files read; `protocols.passes_on` for the rest).
    passed_members: list[str] = field(default_factory=list)
    namespaces: list[NamespaceArgument] = field(default_factory=list)
