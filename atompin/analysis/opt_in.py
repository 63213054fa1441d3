"""Provider code that runs only when a setting new since the baseline is turned on.

vLLM 0.31 calls `backend.supports_device_cpu_query_lens_mismatch()` on every attention backend
of the target model, but only from `maybe_create_adaptive_verification_manager`, which returns
at once `if not enable_adaptive_verification:`; that setting is a field of `SpeculativeConfig`
that is `False` unless the user sets it, and 0.27.1 (ATOM's baseline) had no such word at all.
A stand-in for the backend written against 0.27.1 that lacks the method breaks only for a user
who turns on a feature that did not exist when it was written: a warning, not an error of the
bump.

`only_when_set` tells that of a provider site: the tests around it in its function (`if x.flag:`
around it, or `if not x.flag: return` before it, `x.flag is not None` alike), or else around
every provider call of that function, a few callers up (as `caller_chains` walks them), name a
setting that is
- off by default: every class-level field of that name in the provider is declared `= False` or
  `= None` (`flag: bool = False`, `field(default=None)`; one without a default must be given);
- new since the baseline: no file of the baseline writes the word at all;
- not the consumer's: no scanned consumer file writes the word (it could turn it on).
Anything else gives no answer: a test of anything but a name or an attribute, a function handed
on by name, one the consumer may call itself, too many levels or files.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from atompin.analysis.argument_sources import Scope
from atompin.analysis.baseline import Baseline
from atompin.analysis.caller_chains import MAX_DEPTH, CallerWalk, method_of
from atompin.analysis.guards import leaves
from atompin.analysis.hierarchy import Hierarchy
from atompin.analysis.holding import argument_sources
from atompin.analysis.name_sites import NameSearch, NameSite
from atompin.analysis.syntax import blocks_of

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# What a field's default must be for the setting to be off unless set.
_OFF = re.compile(rb"(?:False|None|(?:dataclasses\.)?[Ff]ield\(\s*default\s*=\s*(?:False|None))\b")


def settings_tested(test: ast.expr, truth: bool) -> list[tuple[str, int]]:
    """The settings (a name, or an attribute's last name) that must be set, true or not None,
    for `test` to come out `truth`, each with the test's line: `x.flag` and `x.flag is not None`
    true, `not x.flag` and `x.flag is None` false, every one of an `and` true, of an `or` false."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return settings_tested(test.operand, not truth)
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) == truth:
            return [found for value in test.values for found in settings_tested(value, truth)]
        return []
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
        right = test.comparators[0]
        if isinstance(right, ast.Constant) and right.value is None:
            return settings_tested(test.left, True) if isinstance(test.ops[0], ast.IsNot) == truth else []
        return []
    name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
    return [(name, test.lineno)] if name and truth else []


def settings_at(function: ast.FunctionDef | ast.AsyncFunctionDef, line: int) -> list[tuple[str, int]]:
    """The settings that must be set for the code on `line` of `function` to run: tested around
    it (`if x.flag:`, its `else` of `if not x.flag:`), or before it in a block it is in by an
    `if` whose branch leaves the block (`if not x.flag: return`) or an `assert`."""
    return _held(function.body, line, [])


def _held(stmts: list[ast.stmt], line: int, held: list[tuple[str, int]]) -> list[tuple[str, int]]:
    for stmt in stmts:
        if stmt.lineno > line:
            break
        if (stmt.end_lineno or stmt.lineno) < line:  # before it: does its block go on only under a test?
            if isinstance(stmt, ast.If) and leaves(stmt.body) and not leaves(stmt.orelse):
                held = held + settings_tested(stmt.test, False)
            elif isinstance(stmt, ast.If) and leaves(stmt.orelse) and not leaves(stmt.body):
                held = held + settings_tested(stmt.test, True)
            elif isinstance(stmt, ast.Assert):
                held = held + settings_tested(stmt.test, True)
            continue
        if isinstance(stmt, ast.If):
            if _within(stmt.body, line):
                return _held(stmt.body, line, held + settings_tested(stmt.test, True))
            if _within(stmt.orelse, line):
                return _held(stmt.orelse, line, held + settings_tested(stmt.test, False))
            return held
        for block in blocks_of(stmt):
            if _within(block, line):
                return _held(block, line, held)
        return held
    return held


def _within(stmts: list[ast.stmt], line: int) -> bool:
    return bool(stmts) and stmts[0].lineno <= line <= (stmts[-1].end_lineno or stmts[-1].lineno)


def enclosing_scopes(tree: ast.Module, line: int) -> list[Scope]:
    """The functions and classes around `line` of a module, outermost first."""
    scopes: list[Scope] = []
    body: list[ast.stmt] = tree.body
    while True:
        inner = next((s for s in body if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
        if inner is None:
            return scopes
        if isinstance(inner, (*_FUNCTIONS, ast.ClassDef)):
            scopes.append(inner)
        body = next((block for block in blocks_of(inner) if _within(block, line)), [])


@dataclass
class _Walk(CallerWalk):
    baseline: Baseline = field(kw_only=True)
    told: list[str] = field(default_factory=list)  # each setting found, as said


def only_when_set(hierarchy: Hierarchy, search: NameSearch, baseline: Baseline | None, site: NameSite) -> str:
    """Why the provider code at `site` runs only when a setting new since the baseline is turned
    on ("" when it may run otherwise, or that cannot be told)."""
    if baseline is None or not site.function:
        return ""
    sources = argument_sources(hierarchy, search)
    tree = sources.module(site.path)
    if tree is None:
        return ""
    walk = _Walk(hierarchy, search, sources, baseline=baseline)
    scopes = enclosing_scopes(tree, site.line)
    if not _call_gated(walk, site.path, site.line, scopes, MAX_DEPTH) or not walk.told:
        return ""  # (with none told, every caller was one already walked: a recursion)
    return "runs only when " + "; ".join(dict.fromkeys(walk.told))


def _call_gated(walk: _Walk, path: str, line: int, scopes: list[Scope], depth: int) -> bool:
    """Does the code on `line` (inside `scopes`) run only under a setting new since the baseline,
    tested in its function or around every call of that function?"""
    if not scopes or not isinstance(scopes[-1], _FUNCTIONS):
        return False  # module-level code, or a class body
    for name, at in settings_at(scopes[-1], line):
        told = _opt_in(walk, name)
        if told:
            walk.told.append(f"{told} ({path}:{at})")
            return True
    tree = walk.hierarchy.index.tree
    module = tree.module_name(path)[0]
    method = method_of(scopes)
    if method is not None:
        return _callers_gated(walk, "", method[1], depth - 1)
    if isinstance(scopes[0], _FUNCTIONS):
        return _callers_gated(walk, module, scopes[0].name, depth - 1)
    return False


def _callers_gated(walk: _Walk, module: str, name: str, depth: int) -> bool:
    """Is every provider call of `name` (a function of `module`; a method when `module` is "")
    made only under a setting new since the baseline (`CallerWalk.every_call`)?"""
    return walk.every_call(
        (module, name), depth, lambda path, call, scopes: _call_gated(walk, path, call.lineno, scopes, depth)
    )


def _opt_in(walk: _Walk, name: str) -> str:
    """How setting `name` is one the consumer never turns on ("" when it may be on)."""
    memo: dict[str, str] = walk.hierarchy.memo.setdefault("opt_in", {})
    if name not in memo:
        memo[name] = ""
        if not walk.hierarchy.consumer_mentions(name) and _off_by_default(walk.hierarchy, name):
            if walk.baseline.unwritten([name]):
                memo[name] = f"{name} is set, which is new {walk.baseline.since} and off by default"
    return memo[name]


def _off_by_default(hierarchy: Hierarchy, name: str) -> bool:
    """Is every class-level field `name` of the provider declared with a default of `False` or
    `None` (at least one such)? A field without a default must be given; an annotated line that
    ends with a comma is a parameter (`enable_x: bool,`), not a field."""
    tree = hierarchy.index.tree
    declared = rf"^[ \t]+{re.escape(name)}[ \t]*:"
    files = tree.files_matching(tree.python_files(hierarchy.index.package), [declared])
    pattern = re.compile(declared.encode() + rb"([^\n]*)$", re.MULTILINE)
    fields = [
        rest.split(b"#", 1)[0].strip()
        for path in files
        for rest in (m.group(1) for m in pattern.finditer(hierarchy.provider_text(path)))
    ]
    defaults = [each.partition(b"=")[2].strip() if b"=" in each else b"" for each in fields if not each.endswith(b",")]
    return bool(defaults) and all(_OFF.match(default) for default in defaults)
