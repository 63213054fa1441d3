"""Find where vanished symbols went between two provider releases: a draft relocation table.

For every symbol that exists at the old release and not at the new one (the
consumer's symbols, or every definition), candidates at the new release are
ranked: the same name defined in another module, the same class under another
module, or a new name in the same module with the same parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from atompin.analysis.arity import describe_change, param_names
from atompin.analysis.cache import AnalysisCache
from atompin.analysis.checks import UsageChecker
from atompin.analysis.moduleinfo import BindingKind, MemberKind
from atompin.analysis.names import split_symbol
from atompin.analysis.provider import ProviderIndex, Target, TargetKind
from atompin.analysis.signature import Signature
from atompin.analysis.usage import ConsumerUsage
from atompin.model import Relocation
from atompin.sources.tree import SourceTree


@dataclass(frozen=True)
class Definition:
    """Something defined (not re-exported) at one place: a def, a class, or a method."""

    module: str
    qualname: str
    kind: str  # "def" | "class"
    signature: Signature | None = None

    @property
    def symbol(self) -> str:
        return f"{self.module}:{self.qualname}"

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


@dataclass
class Suggestion:
    old: str
    old_signature: Signature | None
    candidates: list[tuple[float, Definition, str]] = field(default_factory=list)  # score, where, why

    @property
    def best(self) -> tuple[float, Definition, str] | None:
        return self.candidates[0] if self.candidates else None


def definitions(
    index: ProviderIndex, progress: Callable[[str], None] | None = None, paths: list[str] | None = None
) -> dict[str, Definition]:
    """Every definition in the provider package (or in the files `paths`), by symbol (parses
    each module once, cached)."""
    out: dict[str, Definition] = {}
    paths = index.tree.python_files(index.package) if paths is None else paths
    for n, path in enumerate(paths):
        if progress and n % 200 == 0:
            progress(f"indexing {index.tree.label}: {n}/{len(paths)} files")
        module, _ = index.tree.module_name(path)
        info = index.module(module)
        if info is None or info.error:
            continue
        for name, binding in info.bindings.items():
            if binding.kind is BindingKind.DEF:
                out[f"{module}:{name}"] = Definition(module, name, "def", binding.signature)
            elif binding.kind is BindingKind.CLASS:
                out[f"{module}:{name}"] = Definition(module, name, "class")
        for qualname, cls in info.classes.items():
            for name, member in cls.members.items():
                if member.kind is MemberKind.DEF:
                    out[f"{module}:{qualname}.{name}"] = Definition(
                        module, f"{qualname}.{name}", "def", member.signature
                    )
    return out


def _module_similarity(a: str, b: str) -> float:
    pa, pb = a.split("."), b.split(".")
    common = 0
    for x, y in zip(pa, pb):
        if x != y:
            break
        common += 1
    return common / max(len(pa), len(pb))


def _same_params(a: Signature | None, b: Signature | None) -> bool:
    return a is not None and b is not None and param_names(a) == param_names(b)


def suggest(
    old: ProviderIndex,
    new: ProviderIndex,
    symbols: Iterable[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[Suggestion], list[str]]:
    """Suggestions for every vanished symbol, and the symbols that vanished without a candidate."""
    vanished, old_defs, new_defs = _definitions_read(old, new, symbols, progress)
    by_name: dict[str, list[Definition]] = {}
    by_module: dict[str, list[Definition]] = {}
    for d in new_defs.values():
        by_name.setdefault(d.qualname, []).append(d)
        by_module.setdefault(d.module, []).append(d)
    suggestions: list[Suggestion] = []
    removed: list[str] = []
    for symbol, target in vanished.items():
        module, qualname = split_symbol(symbol)
        # Judge the definition itself (a re-export's source) when the symbol was one.
        defined = old_defs.get(target.symbol) or old_defs.get(symbol)
        sig = defined.signature if defined else target.signature
        s = Suggestion(symbol, sig)
        for cand in by_name.get(qualname, []):
            if cand.symbol in old_defs and old.resolve_symbol(cand.symbol).found:
                continue  # it was there before too: not where this one went
            score = 2.0 + _module_similarity(module, cand.module)
            why = "same name in another module"
            if _same_params(sig, cand.signature):
                score += 1.0
            s.candidates.append((score, cand, why))
        if "." in qualname:  # a method: the same class moved elsewhere, or a renamed method beside it
            for moved in _moved_with_class(qualname, old, old_defs, new_defs, by_name):
                if moved not in [c[1] for c in s.candidates]:
                    s.candidates.append(
                        (2.0 + _module_similarity(module, moved.module), moved, "same class in another module")
                    )
        for cand in by_module.get(module, []):
            if cand.symbol in old_defs or cand.qualname.rpartition(".")[0] != qualname.rpartition(".")[0]:
                continue
            if _same_params(sig, cand.signature) and sig is not None and sig.params:
                s.candidates.append((1.5, cand, f"renamed to {cand.name} with the same parameters"))
        s.candidates.sort(key=lambda c: (-c[0], c[1].symbol))
        if s.candidates:
            suggestions.append(s)
        else:
            removed.append(symbol)
    return suggestions, removed


def _vanished(old: ProviderIndex, new: ProviderIndex, symbol: str) -> Target | None:
    """What `symbol` was at the old release (a definition, not a module), when it is missing at the
    new one; None otherwise."""
    before = old.resolve_symbol(symbol)
    if not before.found or before.target is None or before.target.kind is TargetKind.MODULE:
        return None
    return before.target if new.resolve_symbol(symbol).status.value == "missing" else None


def _definitions_read(
    old: ProviderIndex, new: ProviderIndex, symbols: Iterable[str] | None, progress: Callable[[str], None] | None
) -> tuple[dict[str, Target], dict[str, Definition], dict[str, Definition]]:
    """The vanished symbols among those asked (every definition of the old release when none
    are), in order, each with what it was; and the definitions read at each release: every one
    when no symbols are given."""
    if symbols is None:
        old_defs, new_defs = definitions(old, progress), definitions(new, progress)
        return _vanished_of(old, new, sorted(old_defs)), old_defs, new_defs
    vanished = _vanished_of(old, new, sorted(set(symbols)))
    return (vanished, *_definitions_asked(old, new, vanished, progress))


def _vanished_of(old: ProviderIndex, new: ProviderIndex, symbols: list[str]) -> dict[str, Target]:
    """Of `symbols`, in their order, those `_vanished`, with what each was."""
    return {symbol: target for symbol in symbols if (target := _vanished(old, new, symbol)) is not None}


def _definitions_asked(
    old: ProviderIndex, new: ProviderIndex, vanished: dict[str, Target], progress: Callable[[str], None] | None
) -> tuple[dict[str, Definition], dict[str, Definition]]:
    """The definitions `suggest` reads for `vanished` alone, as it would find them among every one:
    at the new release, those of the files that write the first name of a vanished symbol (where
    a def or class of that name can be) and of its own module; at the old release, those of the
    same modules and of the vanished symbols' definitions. A vLLM release has 3,000 files; a
    consumer's vanished symbols are written in a few hundred."""
    modules: set[str] = set()
    words: set[bytes] = set()
    for symbol, target in vanished.items():
        module, qualname = split_symbol(symbol)
        modules.update((module, split_symbol(target.symbol)[0]))
        words.add(qualname.split(".")[0].encode())
    new_files = new.tree.python_files(new.package)
    found = set(new.tree.files_containing(new_files, sorted(words))) if words else set()
    new_paths = [path for path in new_files if path in found or new.tree.module_name(path)[0] in modules]
    new_defs = definitions(new, progress, new_paths)
    modules.update(d.module for d in new_defs.values())
    old_paths = [path for path in old.tree.python_files(old.package) if old.tree.module_name(path)[0] in modules]
    return definitions(old, progress, old_paths), new_defs


def _moved_with_class(
    qualname: str,
    old: ProviderIndex,
    old_defs: dict[str, Definition],
    new_defs: dict[str, Definition],
    by_name: dict[str, list[Definition]],
) -> list[Definition]:
    """Method `qualname` (`Class.method`) of a class of that name that is new in another module."""
    cls_name, _, member = qualname.rpartition(".")
    found = []
    for cand in by_name.get(cls_name, []):
        if cand.symbol in old_defs and old.resolve_symbol(cand.symbol).found:
            continue  # that class stood there before too (vLLM 0.33's two runners): no move
        moved = new_defs.get(f"{cand.module}:{cls_name}.{member}")
        if moved is not None:
            found.append(moved)
    return found


def entry_note(s: Suggestion) -> str:
    best = s.best
    assert best is not None
    _, cand, why = best
    parts = [why]
    if s.old_signature is not None and cand.signature is not None:
        change = describe_change(s.old_signature, cand.signature)
        if not change.unchanged:
            parts.append(change.render())
    if len(s.candidates) > 1:
        parts.append("other candidates: " + ", ".join(c[1].symbol for c in s.candidates[1:4]))
    return "; ".join(parts)


def draft_entries(suggestions: list[Suggestion]) -> list[Relocation]:
    """Table entries from the best candidate of each suggestion, with its parameters and a note."""
    entries = []
    for s in suggestions:
        assert s.best is not None
        _, cand, _ = s.best
        params = tuple(param_names(cand.signature)) if cand.signature is not None else None
        entries.append(Relocation(old=s.old, new=cand.symbol, params=params, note=entry_note(s)))
    return entries


def draft_table(
    old_tree: SourceTree,
    new_tree: SourceTree,
    package: str,
    cache: AnalysisCache | None = None,
    usage: ConsumerUsage | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[Relocation], list[str]]:
    """A draft relocation table between two releases: entries for the symbols that moved
    (those `usage` reaches, or every definition), and the symbols gone without a candidate."""
    old_index, new_index = ProviderIndex(old_tree, package, cache), ProviderIndex(new_tree, package, cache)
    symbols = list(UsageChecker(usage, old_index).sites_by_symbol()) if usage is not None else None
    suggestions, removed = suggest(old_index, new_index, symbols, progress)
    return draft_entries(suggestions), removed
