"""Where the provider's own code runs only on some platforms: its tests of the platform.

vLLM writes `if current_platform.is_cuda():` around what only CUDA runs, `if not
current_platform.is_rocm(): return` before what only ROCm runs, and `if
current_platform.device_type == "tpu":` for TPU. A call the provider makes only
there cannot reach a consumer running on another platform: given the platform
(`atompin check --platform`), the searches of the provider's calls and reads
(`name_sites`, `callsites`) leave such a site out, at the pin and at the baseline
alike. Read from the syntax alone, by the name vLLM gives its platform everywhere
(`current_platform`, or `x.current_platform`) and torch's build (`torch.version.hip`).
What follows `assert current_platform.is_cuda()` runs only where it holds too.

Pure: a syntax tree in, the spans of its code each test rules out platforms for.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterator
from dataclasses import dataclass

from atompin.analysis.guards import leaves
from atompin.analysis.platforms import PLATFORM_METHODS, PLATFORMS, TORCH_VERSIONS, UNKNOWN, PlatformTest, combined
from atompin.analysis.syntax import blocks_of, is_type_checking
from atompin.lines import line_numbers

# `current_platform.device_type == "..."`: the platforms of vLLM's own that name their device so
# (ROCm's is "cuda" too). A platform out of tree names its own and may take any of these.
_DEVICE_TYPES: dict[str, frozenset[str]] = {
    "cuda": frozenset({"cuda", "rocm"}),
    "cpu": frozenset({"cpu"}),
    "tpu": frozenset({"tpu"}),
    "xpu": frozenset({"xpu"}),
}
_IN_TREE = frozenset(PLATFORMS) - {"oot"}

# What a line must hold to test the platform (or to be a branch that never runs, `if
# TYPE_CHECKING:`): only the statements around such lines are walked.
PLATFORM_MARKERS = (b"current_platform", b"torch.version")
MARKERS = (*PLATFORM_MARKERS, b"TYPE_CHECKING")

# A test that holds on no platform: what it guards never runs.
NEVER = PlatformTest(frozenset(), frozenset(PLATFORMS), "")

Position = tuple[int, int]  # (line, column), as the syntax tree gives a node's start


def _is_platform(node: ast.expr) -> bool:
    """`current_platform`, or `<anything>.current_platform`."""
    if isinstance(node, ast.Name):
        return node.id == "current_platform"
    return isinstance(node, ast.Attribute) and node.attr == "current_platform"


def _device_type(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "device_type" and _is_platform(node.value)


def _torch_version(node: ast.expr) -> frozenset[str] | None:
    """`torch.version.hip` / `torch.version.cuda`: the platforms whose torch build sets it."""
    if (
        isinstance(node, ast.Attribute)
        and node.attr in TORCH_VERSIONS
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "version"
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "torch"
    ):
        return TORCH_VERSIONS[node.attr]
    return None


def _strings(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _device_test(names: list[str]) -> PlatformTest:
    """`device_type` equal to one of `names`: it holds on the in-tree platforms named so, and
    fails on the others in tree (one out of tree may name its device anything)."""
    holds = frozenset().union(*(_DEVICE_TYPES.get(n, frozenset()) for n in names))
    return PlatformTest(holds, _IN_TREE - holds, "")


def _compare(node: ast.Compare) -> PlatformTest:
    if len(node.ops) != 1:
        return UNKNOWN
    op, left, right = node.ops[0], node.left, node.comparators[0]
    if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
        built = _torch_version(left)
        if built is None:
            return UNKNOWN
        test = PlatformTest.exact(built, "")
        return test if isinstance(op, ast.IsNot) else test.negated("")
    if _device_type(right) and isinstance(op, (ast.Eq, ast.NotEq)):
        left, right = right, left
    if not _device_type(left):
        return UNKNOWN
    names = _strings(right)
    if names is None or (isinstance(op, (ast.Eq, ast.NotEq)) and len(names) != 1):
        return UNKNOWN
    if isinstance(op, (ast.Eq, ast.In)):
        return _device_test(names)
    if isinstance(op, (ast.NotEq, ast.NotIn)):
        return _device_test(names).negated("")
    return UNKNOWN


def platform_test(test: ast.expr) -> PlatformTest:
    """What a test in the provider's code says of the platform (`UNKNOWN`: nothing): vLLM's
    `current_platform.is_rocm()` and the like, `current_platform.device_type == "tpu"` (or `!=`,
    `in`), torch's `torch.version.hip` (`is not None`, `is None`), under `not`, `and`, `or`;
    `TYPE_CHECKING` holds on none (`NEVER`)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return platform_test(test.operand).negated("")
    if isinstance(test, ast.BoolOp):
        return combined(isinstance(test.op, ast.And), [platform_test(v) for v in test.values], "")
    if isinstance(test, ast.Call) and not test.args and not test.keywords:
        func = test.func
        if isinstance(func, ast.Attribute) and func.attr in PLATFORM_METHODS and _is_platform(func.value):
            return PlatformTest.exact(PLATFORM_METHODS[func.attr], "")
        return UNKNOWN
    if isinstance(test, ast.Compare):
        return _compare(test)
    if is_type_checking(test):
        return NEVER  # what only a type checker reads runs nowhere
    built = _torch_version(test)
    return PlatformTest.exact(built, "") if built is not None else UNKNOWN


@dataclass(frozen=True)
class _Span:
    start: Position
    end: Position
    never: frozenset[str]


class PlatformGates:
    """The spans of one file's code that surely do not run on some platforms (`never`)."""

    def __init__(self, spans: list[_Span]) -> None:
        self._spans = spans

    @classmethod
    def read(cls, tree: ast.Module, source: bytes) -> PlatformGates:
        """The gates of a module's syntax tree, parsed from `source`. Only the statements whose
        lines write `current_platform` or `torch.version` are walked into (a tenth of vLLM's files
        test the platform at all, and a few of their functions)."""
        spans: list[_Span] = []
        offsets = [at for marker in MARKERS for at in _offsets(source, marker)]
        if offsets:
            lines = sorted(set(line_numbers(source, offsets).values()))
            _block(tree.body, frozenset(), spans, lines)
        return cls(spans)

    def never(self, node: ast.AST) -> tuple[str, ...]:
        """The platforms `node` surely does not run on, sorted (empty: it may run on any)."""
        if not self._spans:
            return ()
        at = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        found: set[str] = set()
        for span in self._spans:
            if span.start <= at <= span.end:
                found |= span.never
        return tuple(sorted(found))


def _offsets(source: bytes, needle: bytes) -> Iterator[int]:
    """Where `needle` starts in `source` (a search for the bytes: a pattern of two is far slower)."""
    at = source.find(needle)
    while at >= 0:
        yield at
        at = source.find(needle, at + 1)


def _span(stmts: list[ast.stmt], never: frozenset[str], out: list[_Span], marked: list[int]) -> None:
    """`stmts` run only where `never` does not hold: record it, and read them."""
    if not stmts:
        return
    if never:
        first, last = stmts[0], stmts[-1]
        end = (last.end_lineno or last.lineno, last.end_col_offset or 0)
        out.append(_Span((first.lineno, first.col_offset), end, never))
    _block(stmts, never, out, marked)


def _holds_marked(stmt: ast.stmt, marked: list[int]) -> bool:
    """Is one of the `marked` lines (sorted) among `stmt`'s?"""
    i = bisect.bisect_left(marked, stmt.lineno)
    return i < len(marked) and marked[i] <= (stmt.end_lineno or stmt.lineno)


def _block(stmts: list[ast.stmt], never: frozenset[str], out: list[_Span], marked: list[int]) -> None:
    """Read a block under `never`: an `if` testing the platform narrows its branches, and when one
    branch leaves the block (`return`, `raise`, ...), the statements after it too, as an `assert`
    of such a test does. A statement without a `marked` line holds no such test (what encloses it
    is recorded already)."""
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Assert) and _holds_marked(stmt, marked):
            fails = platform_test(stmt.test).fails
            if fails - never:
                _span(stmts[i + 1 :], never | fails, out, marked)
                return
            continue
        if not isinstance(stmt, _COMPOUND) or not _holds_marked(stmt, marked):
            continue
        if isinstance(stmt, ast.If):
            test = platform_test(stmt.test)
            if test.holds or test.fails:
                _span(stmt.body, never | test.fails, out, marked)
                _span(stmt.orelse, never | test.holds, out, marked)
                rest = never
                if leaves(stmt.body):
                    rest |= test.holds
                if leaves(stmt.orelse):
                    rest |= test.fails
                if rest != never:
                    _span(stmts[i + 1 :], rest, out, marked)
                    return
                continue
        for child in blocks_of(stmt):
            _block(child, never, out, marked)


# The statements that hold statements.
_COMPOUND = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.Match,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)
