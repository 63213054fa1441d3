"""Hooks the provider stopped calling: override-drift (e) and protocol-drift.

A method of a consumer class that derives from a provider class, or that the consumer hands to
the provider, is a hook: the provider calls it by name (`self.model.get_num_mm_encoder_tokens(n)`).
When provider code read the name (`x.name`) at the baseline and no provider file reads it at the
pin, nor writes it as a string (`getattr(x, "name")`), nothing of the provider can call the
method any more: what it customised is silently gone (vLLM 0.33 no longer asks a multimodal
model for `get_num_mm_encoder_tokens`, which ATOM's wrapper answers). Warnings, and only:

- with a baseline;
- for classes whose every base is known (provider, consumer, `object`, `ABC`, `Protocol`...,
  or torch's `nn.Module`, whose own members are left out: torch calls them itself);
- for methods that do something (not `pass`, `return None` nor only a raise), the class's own
  or inherited from a consumer base or mixin (reported once, where defined), other than
  dunders (Python calls those) and non-ASCII names (the identifiers hold ASCII words), that
  the consumer does not read itself
  outside a method of that name (a wrapper's `self.inner.m(...)` inside its own `m` does not
  count; a read on `self` counts only in a class whose instances the method may run on: one
  of vllm-omni's processors calling its own `_call_hf_processor` keeps the other models'
  overrides of it no more called); the engine drops those another rule reported already.

Override-drift (d) says where the provider dropped the method from the class; this says where
the provider, whatever its classes define, no longer uses the name at all.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet

from atompin.analysis.baseline import Baseline
from atompin.analysis.hierarchy import PLAIN_BASES, ConsumerRef, Hierarchy, Node
from atompin.analysis.limits import parse_limited
from atompin.analysis.name_sites import NameSearch
from atompin.analysis.outside import TORCH_MODULE_BASES
from atompin.analysis.prose import ProseFinder
from atompin.analysis.provider import ClassRef
from atompin.analysis.usage import ConsumerClass, ConsumerMethod, ContactSurface
from atompin.lines import line_numbers
from atompin.model import Finding, Rule, Severity, Site
from atompin.sources.tree import SourceTree


def check_idle_hooks(
    hierarchy: Hierarchy,
    contact: ContactSurface,
    search: NameSearch,
    baseline: Baseline | None,
    consumer_reads: Callable[[list[str]], dict[str, set[str]]],
) -> list[Finding]:
    """Warnings for the hooks the provider read at the baseline and reads nowhere at the pin
    (see the module docstring). `consumer_reads(names)`: where the consumer reads each as `x.name`
    outside a method of that name, or writes it as a string (`reading_classes`: the dotted names
    of the classes reading it on `self`, "" for anywhere else). None without a baseline."""
    if baseline is None:
        return []
    handed = {h.target for h in contact.handovers}
    # (defining class, name) -> its method, and whether a class running it derives from the provider
    found: dict[tuple[str, str], tuple[ConsumerClass, ConsumerMethod, bool]] = {}
    for cls in hierarchy.classes.values():
        derived = hierarchy.has_provider_base(cls.name)
        if cls.muted or not (derived or cls.name in handed):
            continue
        order = hierarchy.mro(cls.name)
        outside = [n for n in order if isinstance(n, str) and n not in PLAIN_BASES]
        if any(n not in TORCH_MODULE_BASES for n in outside):
            continue  # an outside base may call anything
        served = frozenset().union(*(TORCH_MODULE_BASES[n] for n in outside))
        # Its own methods and those it inherits from consumer bases and mixins, each from the
        # first class of its order that defines the name (a provider class's shadows the rest).
        defined: set[str] = set()
        for node in order:
            owner = hierarchy.consumer(node) if isinstance(node, ConsumerRef) else None
            if owner is None:
                info = hierarchy.provider(node) if isinstance(node, ClassRef) else None
                defined.update(info.members if info is not None else ())
                continue
            for method in owner.methods:
                name = method.name
                # Names the identifiers read ASCII only: another name is never known unread.
                judged = not (method.inert or method.raises or name.startswith("__") or name in served)
                if judged and name not in defined and name.isascii():
                    was = found.get((owner.name, name), (owner, method, False))[2]
                    found[(owner.name, name)] = (owner, method, was or derived)
                defined.add(name)  # a name defined twice in a class body: the first definition
            defined.update(owner.attributes)
    hooks: dict[str, list[tuple[ConsumerClass, ConsumerMethod, bool]]] = {}  # name -> (class, method, derived)
    for (_, name), hook in sorted(found.items()):
        hooks.setdefault(name, []).append(hook)
    unread = sorted(search.unread(hooks))  # at the pin
    if not unread:
        return []
    base = baseline.index.tree
    # A baseline whose identifiers are cached (a bump's: the pin it moves away from) says which
    # files read the names; otherwise every file is searched.
    # A baseline file the same as the pin's reads none of the names (the pin reads them nowhere).
    pin = search.tree
    same = set(pin.python_files(search.package))
    changed = [p for p in base.python_files(search.package) if p not in same or base.stamp(p) != pin.stamp(p)]
    readers = NameSearch(base, search.package, search.cache).cached_readers(unread, changed)
    if readers is not None:  # only the names read, in only the files reading them
        unread = sorted(readers)
        changed = sorted({p for files in readers.values() for p in files})
    reads = _reads(base, changed, unread) if unread else {}
    before = {
        name: _witness(sites, [hierarchy.mro(cls.name) for cls, _, _ in hooks[name]]) for name, sites in reads.items()
    }
    # The consumer reading one itself keeps it called: on an object, or as a string, for every
    # class; on `self` (`cls`, `super()`), only for the classes whose instances that method may
    # run on. The pin writing one as a string keeps it called too.
    reading = consumer_reads(sorted(before)) if before else {}
    unkept = {
        name: [
            (cls, method, derived)
            for cls, method, derived in hooks[name]
            if not (reading.get(name) and _read_in_line(reading[name], hierarchy, cls.name))
        ]
        for name in before
        if "" not in reading.get(name, ())
    }
    left = search.unused(name for name, kept_out in unkept.items() if kept_out)
    out: list[Finding] = []
    for name in sorted(left):
        for cls, method, derived in unkept[name]:
            message = (
                f"the provider read `{name}` at {baseline.label} ({before[name]}) and nothing of it reads "
                f"`{name}` now, nor writes it as a string: it no longer calls this method, so what it "
                "customised is silently gone"
            )
            out.append(
                Finding(
                    Rule.OVERRIDE_DRIFT if derived else Rule.PROTOCOL_DRIFT,
                    Severity.WARNING,
                    f"{cls.symbol}.{name}",
                    (Site(cls.path, method.line),),
                    message,
                )
            )
    return out


def _read_in_line(where: set[str], hierarchy: Hierarchy, name: str) -> bool:
    """Is one of the classes reading a name on `self` (dotted names) one whose instances may run
    consumer class `name`'s methods? A class the scan read is matched by its dotted name; one it
    did not (a mixin outside the scan, known by its header's name) by its last name."""
    line = hierarchy.line_names({name})
    unread = {n.rpartition(".")[2] for n in line if n not in hierarchy.classes}
    return any(w in line or w.rpartition(".")[2] in unread for w in where)


def _reads(tree: SourceTree, paths: list[str], names: list[str]) -> dict[str, list[tuple[Site, bool]]]:
    """Where `tree` reads each of `names` as `x.name` (not an assignment to it): the first such
    line of each file, in file order, and whether that file defines the name; names it never
    reads are left out. One pattern for all names, in the files holding one of them."""
    # As written (`.name`): what the files are picked by, so a read counts whatever else the file holds.
    pattern = re.compile(rb"\.(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b(?![ \t]*=[^=])")
    found: dict[str, list[tuple[Site, bool]]] = {}
    for path, text in tree.read_many(tree.files_containing(paths, [b"." + n.encode() for n in names])):
        prose = ProseFinder(text)
        for match in pattern.finditer(text):
            if prose.at(match.start()):
                continue
            name = match.group(1)
            sites = found.setdefault(name.decode(), [])
            if not sites or sites[-1][0].path != path:
                defines = re.search(rb"def[ \t]+" + name + rb"\b", text) is not None
                sites.append((Site(path, line_numbers(text, [match.start()])[match.start()]), defines))
    return found


def _witness(sites: list[tuple[Site, bool]], orders: list[list[Node]]) -> Site:
    """The read to cite: one in the module of a provider class the hook's classes derive from
    (the base calling its own hook), else one in a file that does not define the name (not a
    provider class handing on to its parts), else the first."""
    modules = {node.module for order in orders for node in order if isinstance(node, ClassRef)}
    files = {f"{m.replace('.', '/')}{end}" for m in modules for end in (".py", "/__init__.py")}
    ranked = sorted(sites, key=lambda s: (s[0].path not in files, s[1]))  # stable: file order within a rank
    return ranked[0][0]


def reads_outside_own(text: bytes, names: Iterable[str], classes: AbstractSet[str] | None = None) -> set[str]:
    """Of `names`, those `text` reads as `x.name` outside a function of that name, or writes as
    a string: a consumer module calling one of its hooks itself (parsed only when the text
    holds one of the names). With `classes` (simple names), a read on `self`, `cls` or `super()`
    counts only in a class of those names."""
    return {
        name
        for name, where in reading_classes(text, names).items()
        if "" in where or (where if classes is None else {w.rpartition(".")[2] for w in where} & classes)
    }


def reading_classes(text: bytes, names: Iterable[str], module: str = "") -> dict[str, set[str]]:
    """Where `text` (module `module`'s) reads each of `names` as `x.name` outside a function of
    that name, or writes it as a string (names it never reads are left out): the dotted names
    (`module.Class`, `module.Outer.Inner`) of the classes whose methods read it on `self`, `cls` or
    `super()` (the class whose method binds `self`: a class defined inside a method reads the
    method's `self` as a closure), and "" for a read anywhere else (on another object, outside a
    class, a string but one standing alone, as a docstring does; and for every name when the text
    cannot be read)."""
    wanted = {name for name in names if name.encode() in text}
    if not wanted:
        return {}
    try:
        tree = parse_limited(text)
    except (SyntaxError, ValueError, RecursionError):
        return {name: {""} for name in wanted}  # unknown: as if read
    found: dict[str, set[str]] = {}
    prefix = f"{module}." if module else ""

    def visit(node: ast.AST, inside: str, qualname: str, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = (*child.args.posonlyargs, *child.args.args)[:1]
                binds = isinstance(node, ast.ClassDef) and any(a.arg in ("self", "cls") for a in first)
                visit(child, child.name, qualname, prefix + qualname if binds else owner)
                continue
            if isinstance(child, ast.ClassDef):
                visit(child, inside, f"{qualname}.{child.name}" if qualname else child.name, owner)
                continue
            if isinstance(child, ast.Expr) and isinstance(child.value, ast.Constant):
                continue  # a docstring (`"""is_hpu"""`), or any string standing alone: read by nobody
            if isinstance(child, ast.Attribute) and child.attr in wanted and child.attr != inside:
                value = child.value
                on_own = (isinstance(value, ast.Name) and value.id in ("self", "cls")) or (
                    isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"
                )
                if isinstance(child.ctx, ast.Load):
                    found.setdefault(child.attr, set()).add(owner if on_own else "")
            elif isinstance(child, ast.Constant) and isinstance(child.value, str) and child.value in wanted:
                found.setdefault(child.value, set()).add("")
            visit(child, inside, qualname, owner)

    try:
        visit(tree, "", "", "")
    except RecursionError:  # hostile nesting: unknown, as if read
        return {name: {""} for name in wanted}
    return found
