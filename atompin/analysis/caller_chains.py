"""Provider code that runs only under methods the consumer's classes stand in for.

A provider call found by a method's name may be made in a function only the provider's own
worker runs. vLLM 0.29 calls `runner._dummy_run(..., randomize_inputs=True)` in
`_run_flashinfer_autotune_dummy_runs`, which only `flashinfer_autotune` calls, which only
`kernel_warmup` calls, which vLLM's GPU `Worker.compile_or_warm_up_model` calls, and its elastic-EP
executor, made only in that Worker's `__init__`. vllm-ascend's `NPUWorker`, handed over in the
GPU Worker's place, implements both methods itself: the call never runs beside its classes.

`beside_stand_ins` walks the callers up by name (every provider file that calls the name, parsed:
`ArgumentSources.callers`) until each is a method that a consumer class stands in for and
implements itself (`declared_roles.stand_in_for`), that every consumer subclass takes over
(`Hierarchy.taken_over_by`), or of a class made only beside a stand-in
(`makers.made_beside_stand_in`); the first two only for a class that nothing makes by its name,
nor a provider class deriving from it (`_made_by_name`). Anything else gives no answer:
module-level code, a function the provider never calls (who does is unknown), a name handed on
rather than called, one the consumer may call itself (it writes the method's name, or imports or
calls the function), more than a few levels or files. A call written by a bare name is of the
function only where the calling file binds that name to it (or does not bind it at its top
level); one of a method, by its name alone.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from atompin.analysis.argument_sources import ArgumentSources, Origins, Scope
from atompin.analysis.declared_roles import stand_in_for
from atompin.analysis.hierarchy import Hierarchy
from atompin.analysis.holding import argument_sources
from atompin.analysis.makers import made_beside
from atompin.analysis.name_sites import NameSearch, NameSite
from atompin.analysis.provider import ClassRef
from atompin.analysis.usage import Ref

# How many callers up a function is followed, and how many files may call one name.
MAX_DEPTH = 4
MAX_FILES = 24


@dataclass
class CallerWalk:
    """A walk up the provider's callers by name: what it reads them with, and what it walked."""

    hierarchy: Hierarchy
    search: NameSearch
    sources: ArgumentSources
    seen: set[tuple[str, str]] = field(default_factory=set)  # (module or "", name) walked

    def every_call(
        self, function: tuple[str, str], depth: int, holds: Callable[[str, ast.Call, list[Scope]], bool]
    ) -> bool:
        """Does `holds(path, call, scopes)` hold of every provider call of a function ((module,
        name); a method by its name alone when the module is "")? No when the provider calls it
        nowhere, or hands it on by name (who calls it is unknown), when the consumer may call it
        itself, or past `depth`; yes for one walked already (a recursion adds no caller). A call
        by a bare name is of the function only where the calling file binds that name to it."""
        if function in self.seen:
            return True
        self.seen.add(function)
        module, name = function
        if depth == 0 or _consumer_may_call(self.hierarchy, module, name):
            return False
        uses = self.sources.callers(name, MAX_FILES)
        if uses is None:
            return False
        called = False
        for path, call, scopes in uses:
            if call is None:
                return False
            if module and isinstance(call.func, ast.Name) and not self.sources.binds_to(path, name, module):
                continue  # the file's own name for something else
            if not holds(path, call, scopes):
                return False
            called = True
        return called  # one the provider never calls: who does is unknown


@dataclass
class _Walk(CallerWalk):
    roots: list[str] = field(default_factory=list)  # each excused caller, told


def beside_stand_ins(hierarchy: Hierarchy, search: NameSearch, site: NameSite) -> str:
    """Why the call at `site` never runs beside the consumer's classes: every chain of provider
    callers up from the function it is in ends in a method a consumer class stands in for ("" when
    one does not, or cannot be told). Asked once per function."""
    if not site.function or not hierarchy.stands_in_anywhere():
        return ""
    module = hierarchy.index.tree.module_name(site.path)[0]
    name = (site.method or site.function) if site.cls else site.function
    key = ("" if site.cls else module, name)
    memo: dict[tuple[str, str], str] = hierarchy.memo.setdefault("beside_stand_ins", {})  # key -> the roots told
    if key not in memo:
        walk = _Walk(hierarchy, search, argument_sources(hierarchy, search))
        excused = _callers_excused(walk, *key, MAX_DEPTH)
        memo[key] = "; ".join(dict.fromkeys(walk.roots)) if excused else ""
    if not memo[key]:
        return ""
    where = f"{site.cls}.{name}" if site.cls else name
    return f"{where} runs only under methods the consumer's classes take the place of: {memo[key]}"


def _callers_excused(walk: _Walk, module: str, name: str, depth: int) -> bool:
    """Is every provider call of `name` (a function of `module`; a method when `module` is "")
    made where a consumer class stands in, directly or through its own callers?"""
    module_of = walk.hierarchy.index.tree.module_name
    return walk.every_call(
        (module, name), depth, lambda path, _, scopes: _caller_excused(walk, module_of(path)[0], scopes, depth)
    )


def handed_down(hierarchy: Hierarchy, search: NameSearch, site: NameSite) -> Origins | None:
    """Where the receiver of the call at `site` comes from, when every way there is `self.x` of
    a provider class, handed down through the provider's own functions and constructors
    (`ArgumentSources.origins`) that the consumer neither calls nor derives from, nor does a
    provider class derive from a constructor's class; and the consumer stores no such x on objects
    from outside their classes. None otherwise. Asked once per site."""
    memo: dict[tuple[str, int, str], Origins | None] = hierarchy.memo.setdefault("handed_down", {})
    key = (site.path, site.line, site.name)
    if key not in memo:
        memo[key] = _handed_down(hierarchy, search, site)
    return memo[key]


def _handed_down(hierarchy: Hierarchy, search: NameSearch, site: NameSite) -> Origins | None:
    found = argument_sources(hierarchy, search).origins(site.path, site.line, site.name)
    if found is None or not found.places:
        return None
    module_of = hierarchy.index.tree.module_name
    for path, name, is_class in found.followed:
        module = module_of(path)[0]
        if _consumer_may_call(hierarchy, module, name):
            return None
        if is_class and (hierarchy.derived_from(ClassRef(module, name)) or _derived_in_provider(hierarchy, name)):
            return None
    attributes = {place.attribute for place in found.places}
    if any(store.name in attributes for store in hierarchy.usage.contact.outside_stores):
        return None
    return found


def _derived_in_provider(hierarchy: Hierarchy, name: str) -> bool:
    """Does a provider class header name a base called `name` (`_deriving`)?"""
    return bool(_deriving(hierarchy, name))


def _deriving(hierarchy: Hierarchy, name: str) -> set[str]:
    """The names of the provider classes whose header names a base called `name`, read from the
    text of the files writing it (one level)."""
    tree = hierarchy.index.tree
    files = tree.python_files(hierarchy.index.package)
    header = re.compile(rb"(?m)^[ \t]*class[ \t]+(\w+)[ \t]*\([^:]*\b" + re.escape(name.encode()) + rb"\b")
    return {
        match.group(1).decode()
        for _, text in tree.read_many(tree.files_containing(files, [name.encode()]))
        for match in header.finditer(text)
    }


def _consumer_may_call(hierarchy: Hierarchy, module: str, name: str) -> bool:
    """May the consumer call `module`'s function `name` itself (a method, when `module` is ""): it
    writes the method's name anywhere; it imports, reads or calls the function, or imports its
    module whole? vllm-ascend's own `kernel_warmup` is not vLLM's."""
    if not module:
        return hierarchy.consumer_mentions(name)
    usage = hierarchy.usage
    refs = [use.ref for group in usage.groups for alternative in group.alternatives for use in alternative]
    refs += [ref for call in usage.calls for ref in call.choices]
    refs += [ref for read in usage.attributes for ref in read.choices]
    if any(ref.module == module and not ref.path for ref in refs):
        return True
    return _reaches(hierarchy, refs, name, {f"{module}:{name}", module})


def _reaches(hierarchy: Hierarchy, refs: list[Ref], name: str, symbols: AbstractSet[str]) -> bool:
    """Does one of the consumer's `refs` (those whose last name is `name`) resolve to one of
    `symbols`, or to nothing known (then it may)?"""
    for ref in refs:
        if name in (*ref.path, ref.module.rpartition(".")[2]):
            res = hierarchy.resolve((ref,))
            if res is None or res.target is None or res.target.symbol in symbols:
                return True
    return False


def _caller_excused(walk: _Walk, module: str, scopes: list[Scope], depth: int) -> bool:
    """Is the def a call sits in (a method, or a function: what encloses a nested function) one
    that runs only where a consumer class stands in, directly or through its own callers?"""
    method = method_of(scopes)
    if method is not None:
        cls, name = method
        told = _stood_in(walk.hierarchy, walk.search, ClassRef(module, cls), name)
        if told:
            walk.roots.append(told)
            return True
        return _callers_excused(walk, "", name, depth - 1)
    if scopes and isinstance(scopes[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _callers_excused(walk, module, scopes[0].name, depth - 1)
    return False  # module-level code, or a class body


def method_of(scopes: list[Scope]) -> tuple[str, str] | None:
    """(class qualname, method) of the method of a module-level class enclosing these scopes
    (a function nested in a method counts as that method)."""
    if len(scopes) < 2 or not isinstance(scopes[0], ast.ClassDef):
        return None
    classes = []
    for scope in scopes:
        if isinstance(scope, ast.ClassDef):
            classes.append(scope.name)
            continue
        return ".".join(classes), scope.name
    return None


def _stood_in(hierarchy: Hierarchy, search: NameSearch, holder: ClassRef, method: str) -> str:
    memo: dict[tuple[ClassRef, str], str] = hierarchy.memo.setdefault("stood_in", {})
    if (holder, method) not in memo:
        memo[(holder, method)] = _stood_in_for(hierarchy, search, holder, method)
    return memo[(holder, method)]


def _stood_in_for(hierarchy: Hierarchy, search: NameSearch, holder: ClassRef, method: str) -> str:
    """How `holder.method` never runs where the consumer's classes are used ("" when it may). A
    class the consumer stands in for, or whose every consumer subclass takes the method over,
    counts only when no code makes it by its name: then its instances come from a path or a
    registry the consumer's own class takes the place of (vLLM's GPU `Worker`, named as the
    platform's worker class). vLLM's `Attention`, which every model makes, may run beside the
    consumer's layers, and so may what it holds (a backend the platform selects)."""
    if not _made_by_name(hierarchy, search, holder):
        stand_in = stand_in_for(hierarchy, search, holder, method)
        if stand_in is not None:
            return f"{holder.qualname}.{method}, which {stand_in.telling()}, implements itself"
        by = hierarchy.taken_over_by(holder, method)
        if by:
            return f"{holder.qualname}.{method}, which {by} overrides without calling it"
    beside = made_beside(hierarchy, search, holder)
    if beside is not None:
        return f"{holder.qualname}.{method}: {beside.telling()}"
    return ""


def _made_by_name(hierarchy: Hierarchy, search: NameSearch, holder: ClassRef) -> bool:
    """Does provider or consumer code call the class, or a provider class deriving from it (one
    level, read from class statements), by its name (`Attention(...)`)? From the provider files'
    text, and the consumer's calls of provider objects."""
    memo: dict[ClassRef, bool] = hierarchy.memo.setdefault("made_by_name", {})
    if holder not in memo:
        memo[holder] = _called_by_name(hierarchy, search, holder)
    return memo[holder]


def _called_by_name(hierarchy: Hierarchy, search: NameSearch, holder: ClassRef) -> bool:
    name = holder.qualname.rpartition(".")[2]
    tree = hierarchy.index.tree
    files = tree.python_files(hierarchy.index.package)
    for each in sorted({name} | _deriving(hierarchy, name)):
        # The identifiers find every word written before `(`, class and def headers too.
        call = re.compile(rb"(?<!class )(?<!def )\b" + re.escape(each.encode()) + rb"\s*\(")
        if any(call.search(text) for _, text in tree.read_many(search.files_calling([each], files))):
            return True
    # The consumer's calls of provider objects.
    return _reaches(hierarchy, [ref for call in hierarchy.usage.calls for ref in call.choices], name, {str(holder)})
