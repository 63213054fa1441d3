"""Version gates: consumer code that branches on the provider's version, read and evaluated statically.

Plugins that support several provider releases test the provider's version:
`if vllm_version_is("0.31.0"):`, `if Version(vllm.__version__) >= Version("0.31")`,
`assert __version_tuple__ < (0, 26)`, `A if gate else B`, a module flag set from
such a test. The scanner evaluates these expressions to the values here: the
provider's version (`ProviderVersion`) in the form the code holds it, a literal
version (`VersionLiteral`), and the test itself (`Gate`), a small formula whose
leaves compare the provider's version with a literal. `evaluate` decides a gate
at a known provider version (True, False, or None when it cannot be decided);
the scanner never needs the version, so a consumer scan stays valid for every
provider release.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from packaging.version import InvalidVersion, Version


class VersionForm(str, Enum):
    """How consumer code holds the provider's version."""

    TEXT = "text"  # vllm.__version__, importlib.metadata.version("vllm"): compared as a string
    VERSION = "version"  # Version(...) / parse(...) of it: compared as a PEP 440 version
    TUPLE = "tuple"  # vllm.__version_tuple__ (or a slice of it): compared as a tuple of ints
    OPAQUE = "opaque"  # derived from it in a way not followed (.split("."), int(...), ...)
    # `v.split("+")` / `v.partition("+")` of the text: its first part is the public version.
    SPLIT_AT_PLUS = "split-at-plus"


@dataclass(frozen=True)
class ProviderVersion:
    """The provider's version as a consumer expression holds it; `prefix` > 0: `tuple[:prefix]`;
    `public`: without its local segment (`Version(v).public`: "0.29.0" of "0.29.0+rocm")."""

    form: VersionForm
    prefix: int = 0
    public: bool = False


@dataclass(frozen=True)
class VersionMethod:
    """`<provider version>.startswith` (or any other attribute) before it is called."""

    version: ProviderVersion
    attr: str


@dataclass(frozen=True)
class VersionSpecifier:
    """A literal PEP 440 specifier set, `SpecifierSet(">=0.25.0,<=0.28.0")`: the releases a plugin
    says it supports, tested with `.contains(version)` or `version in ...`."""

    spec: str


@dataclass(frozen=True)
class SpecifierContains:
    """`<specifier set>.contains` before it is called."""

    specifier: VersionSpecifier


def specifier(text: object) -> VersionSpecifier | None:
    """`SpecifierSet(text)` of a literal that parses; None for anything else."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet  # only where a plugin writes one

    if not isinstance(text, str):
        return None
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        return None
    return VersionSpecifier(text)


# How a specifier-set test treats pre-releases: as the set says, let in, kept out; and back.
_IN = {None: "in", True: "in+pre", False: "in-pre"}
_PRERELEASES = {name: flag for flag, name in _IN.items()}


def contained(
    version: ProviderVersion, specifier: VersionSpecifier, text: str, prereleases: bool | None = None
) -> Gate:
    """`specifier.contains(version[, prereleases=...])` / `version in specifier`: a test of the whole
    set ("in"; "in+pre" / "in-pre" when pre-releases are let in / kept out)."""
    if version.form not in (VersionForm.TEXT, VersionForm.VERSION):
        return Gate(GateOp.OPAQUE, text)
    return Gate(GateOp.TEST, text, _IN[prereleases], specifier.spec, VersionForm.VERSION)


def version_slice(version: ProviderVersion, index: object) -> ProviderVersion:
    """`__version_tuple__[:2]` keeps comparing as a tuple; `v.split("+")[0]` is the public version
    text; any other subscript is not followed."""
    if version.form is VersionForm.SPLIT_AT_PLUS and isinstance(index, ast.Constant) and index.value == 0:
        return ProviderVersion(VersionForm.TEXT, public=True)
    if (
        version.form is VersionForm.TUPLE
        and isinstance(index, ast.Slice)
        and index.lower is None
        and index.step is None
        and isinstance(index.upper, ast.Constant)
        and isinstance(index.upper.value, int)
        and index.upper.value > 0
    ):
        return ProviderVersion(VersionForm.TUPLE, index.upper.value)
    return ProviderVersion(VersionForm.OPAQUE)


@dataclass(frozen=True)
class VersionLiteral:
    """`Version("0.31")` / `parse("0.31")`: a literal version, compared as PEP 440."""

    text: str


class GateOp(str, Enum):
    TEST = "test"  # the provider's version <compare> a literal
    NOT = "not"
    ALL = "all"  # and
    ANY = "any"  # or
    OPAQUE = "opaque"  # uses the provider's version in a way not evaluated: undecidable
    RUNTIME = "runtime"  # a condition that has nothing to do with the version (state, environment)
    FIXED = "fixed"  # the same at every version (a helper that only answers one literal): `compare` is its value


@dataclass(frozen=True)
class Gate:
    """A condition on the provider's version, as a formula. `text` is the source as written."""

    op: GateOp
    text: str = ""
    # TEST: "==", "!=", "<", "<=", ">", ">=", "startswith"; a specifier set: "in", "in+pre", "in-pre"
    compare: str = ""
    version: str = ""  # TEST: the literal ("0.31.0"; "0.26" for a tuple (0, 26))
    form: VersionForm = VersionForm.VERSION  # TEST: how the two sides compare
    prefix: int = 0  # TEST on a tuple: compare the first `prefix` parts (0: all)
    parts: tuple[Gate, ...] = ()
    public: bool = False  # TEST: the provider's version without its local segment

    @property
    def is_version(self) -> bool:
        """Does this formula depend on the provider's version at all?"""
        if self.op in (GateOp.TEST, GateOp.OPAQUE, GateOp.FIXED):
            return True
        return any(p.is_version for p in self.parts)

    @property
    def varies(self) -> bool:
        """Can its value differ from one provider version to another? Not when every version part
        is a helper answering one literal (`not tbo_enabled()` with `return False`), however negated
        or combined."""
        if self.op in (GateOp.TEST, GateOp.OPAQUE):
            return True
        return any(p.varies for p in self.parts)


# -- building gates from the values the scanner evaluates ---------------------------------

_COMPARE = {"Eq": "==", "NotEq": "!=", "Lt": "<", "LtE": "<=", "Gt": ">", "GtE": ">="}
_MIRROR = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def version_ref(module: str, path: Sequence[str], package: str) -> ProviderVersion | None:
    """`vllm.__version__`, `vllm.version.__version_tuple__`, `vllm._version.version` ... as a version."""
    parts = [*module.split("."), *path]
    module, name = ".".join(parts[:-1]), parts[-1]
    if module not in (package, f"{package}.version", f"{package}._version"):
        return None
    if name in ("__version__", "version") and not (name == "version" and module == package):
        return ProviderVersion(VersionForm.TEXT)
    if name in ("__version_tuple__", "version_tuple"):
        return ProviderVersion(VersionForm.TUPLE)
    return None


def compare(op_name: str, left: Any, right: Any, text: str) -> Gate | None:
    """A gate for `left <op> right` when one side is the provider's version; None when neither is."""
    left_version, right_version = isinstance(left, ProviderVersion), isinstance(right, ProviderVersion)
    if not (left_version or right_version):
        return None
    if left_version and right_version:
        return Gate(GateOp.OPAQUE, text)
    compare_op = _COMPARE.get(op_name)
    version, literal = (left, right) if left_version else (right, left)
    if compare_op is None:
        if op_name in ("In", "NotIn") and isinstance(literal, VersionSpecifier) and left_version:
            inside = contained(version, literal, text)
            return inside if op_name == "In" else Gate(GateOp.NOT, text, parts=(inside,))
        if op_name in ("In", "NotIn") and isinstance(literal, tuple):
            tests = [compare("Eq", version, item, text) for item in literal]
            if any(t is None or t.op is GateOp.OPAQUE for t in tests):
                return Gate(GateOp.OPAQUE, text)
            found = Gate(GateOp.ANY, text, parts=tuple(t for t in tests if t is not None))
            return found if op_name == "In" else Gate(GateOp.NOT, text, parts=(found,))
        return Gate(GateOp.OPAQUE, text)
    if not left_version:
        compare_op = _MIRROR[compare_op]
    return _test(version, compare_op, literal, text)


def _test(version: ProviderVersion, compare_op: str, literal: Any, text: str) -> Gate:
    if version.form is VersionForm.TEXT and isinstance(literal, str):
        return Gate(GateOp.TEST, text, compare_op, literal, VersionForm.TEXT, public=version.public)
    if version.form is VersionForm.VERSION and isinstance(literal, VersionLiteral) and _valid(literal.text):
        return Gate(GateOp.TEST, text, compare_op, literal.text, VersionForm.VERSION, public=version.public)
    if version.form is VersionForm.TUPLE and isinstance(literal, tuple) and all(isinstance(x, int) for x in literal):
        joined = ".".join(str(x) for x in literal)
        return Gate(GateOp.TEST, text, compare_op, joined, VersionForm.TUPLE, version.prefix)
    return Gate(GateOp.OPAQUE, text)


def startswith(version: ProviderVersion, prefix: Any, text: str) -> Gate:
    """`vllm.__version__.startswith("0.31")`."""
    if version.form is VersionForm.TEXT and isinstance(prefix, str):
        return Gate(GateOp.TEST, text, "startswith", prefix, VersionForm.TEXT)
    return Gate(GateOp.OPAQUE, text)


def negate(value: Any, text: str) -> Any:
    """`not gate`; anything else is not a gate (None)."""
    return Gate(GateOp.NOT, text, parts=(value,)) if isinstance(value, Gate) else None


def combine(is_and: bool, values: Sequence[Any], texts: Sequence[str], text: str) -> Gate | None:
    """`a and b` / `a or b` where at least one side is a gate; the other sides are runtime conditions."""
    if not any(isinstance(v, Gate) for v in values):
        return None
    parts = tuple(v if isinstance(v, Gate) else Gate(GateOp.RUNTIME, t) for v, t in zip(values, texts))
    return Gate(GateOp.ALL if is_and else GateOp.ANY, text, parts=parts)


def state_part(test: Any, state: str) -> Gate | None:
    """The version part of `if <state> and <gate>:` (or `if <gate>:`): what must hold for the branch to
    run besides `state` itself; None when the test rests on anything else."""
    if not isinstance(test, Gate) or not test.is_version:
        return None
    if test.op is not GateOp.ALL:
        return test
    rest = [p for p in test.parts if not (p.op is GateOp.RUNTIME and p.text == state)]
    if any(p.op is GateOp.RUNTIME for p in rest) or not rest:
        return None
    return rest[0] if len(rest) == 1 else Gate(GateOp.ALL, " and ".join(p.text for p in rest), parts=tuple(rest))


# -- evaluating a gate at a provider version ----------------------------------------------

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _valid(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def is_older(version: str | None, than: str | None) -> bool:
    """Is release `version` before release `than`, as packaging orders them? False when either
    is not known or does not parse."""
    if version is None or than is None:
        return False
    try:
        return Version(version) < Version(than)
    except InvalidVersion:
        return False


def _release_tuple(version: str) -> tuple[int, ...] | None:
    try:
        return Version(version).release
    except InvalidVersion:
        return None


def _leaf(gate: Gate, version: str) -> bool | None:
    if gate.public:
        version = version.partition("+")[0]
    if gate.form is VersionForm.TEXT:
        if gate.compare == "startswith":
            return version.startswith(gate.version)
        return _OPS[gate.compare](version, gate.version)
    if gate.form is VersionForm.VERSION:
        try:
            if gate.compare in _PRERELEASES:
                return _contains(gate.version, version, _PRERELEASES[gate.compare])
            return _OPS[gate.compare](Version(version), Version(gate.version))
        except InvalidVersion:
            return None
    mine = _release_tuple(version)
    if mine is None:
        return None
    theirs = tuple(int(x) for x in gate.version.split(".")) if gate.version else ()
    if gate.prefix:
        mine = mine[: gate.prefix]
    return _OPS[gate.compare](mine, theirs)


def _contains(spec: str, version: str, prereleases: bool | None) -> bool | None:
    """Is `version` in the specifier set `spec` (pre-releases let in, kept out, or as the set itself
    says: None)? None when either does not parse."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        return SpecifierSet(spec).contains(Version(version), prereleases=prereleases)
    except (InvalidSpecifier, InvalidVersion):
        return None


def evaluate(gate: Gate, version: str | None) -> bool | None:
    """The gate's value at provider `version` (None: it cannot be decided, or the version is unknown).

    Three-valued: `runtime and False` is False, `runtime or True` is True.
    """
    if gate.op is GateOp.TEST:
        return _leaf(gate, version) if version else None
    if gate.op is GateOp.FIXED:
        return gate.compare == "True"
    if gate.op in (GateOp.OPAQUE, GateOp.RUNTIME):
        return None
    values = [evaluate(p, version) for p in gate.parts]
    if gate.op is GateOp.NOT:
        return None if values[0] is None else not values[0]
    if gate.op is GateOp.ALL:
        return False if False in values else (None if None in values else True)
    return True if True in values else (None if None in values else False)


def undecided_by_version(gate: Gate, version: str | None) -> bool:
    """Is the gate undecided because of its version part (a form not evaluated, or no version known),
    rather than only because of runtime state? Only then is it a gate that could not be evaluated."""
    if evaluate(gate, version) is not None:
        return False
    if gate.op is GateOp.TEST:
        return True
    if gate.op is GateOp.OPAQUE:
        return True
    if gate.op is GateOp.RUNTIME:
        return False
    return any(undecided_by_version(p, version) for p in gate.parts)


def describe(value: bool | None) -> str:
    return {True: "true", False: "false", None: "undecided"}[value]
