"""Questions about the text of the consumer's scanned files, answered by byte searches.

Some rules ask whether the consumer itself writes a name: a word anywhere (a hook it may call),
a read `x.word` outside a function of that name (the idle-hook rule), an object passed on from a
member a class is kept in (protocol-drift), a call of a class (override-drift); shadow-drift
reads a copy of a provider function itself (`function_at`). A search of every file is a `git
grep` in a lock, so the answers that a bump asks again of the same consumer are cached by the
files' stamps.
"""

from __future__ import annotations

import ast
import enum
import functools
import re
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet

from atompin.analysis.cache import AnalysisCache, code_digest, dump_json, load_json
from atompin.analysis.idle_hooks import reading_classes, reads_outside_own
from atompin.analysis.limits import parse_limited
from atompin.analysis.names import absolute_module, quoted, word_pattern
from atompin.analysis.prose import ProseFinder
from atompin.analysis.protocols import passes_on
from atompin.analysis.relevant import named_modules
from atompin.analysis.syntax import walk
from atompin.sources.tree import SourceTree

# Bump when what an answer means changes (a cached answer is also keyed by atompin's code).
TEXT_FORMAT = "atompin-consumer-text-4"


class ConsumerText:
    """The scanned files (`paths`) of the consumer `tree`. `cache` is where answers are kept (a
    second process running the contact rules sets its own). `passed_members` ("holder:member") are
    the members the scan itself saw read for their object (`f(x.member)`) in the files it read
    through (`read_paths`): asked about those, nothing is searched, and those files never are."""

    def __init__(
        self,
        tree: SourceTree,
        paths: list[str],
        cache: AnalysisCache,
        passed_members: AbstractSet[str] = frozenset(),
        read_paths: AbstractSet[str] = frozenset(),
    ) -> None:
        self.tree, self.paths, self.cache = tree, paths, cache
        self.passed_members = frozenset(passed_members)
        self.read_paths = frozenset(read_paths)
        self._naming: dict[str, frozenset[str]] = {}
        self._importing: dict[str, frozenset[str]] = {}
        self._trees: dict[str, ast.Module | None] = {}

    @functools.cached_property
    def stamps_id(self) -> str:
        """The files' `stamps_id`, taken when first asked."""
        return self.tree.stamps_id(self.paths)

    def mentions(self, word: str) -> bool:
        """Does a file's text hold `word`? A re-lock after a bump asks the same words of the same
        consumer (each a `git grep` of every file)."""
        key = f"consumer-mentions:{self.stamps_id}:{word}"
        cached = self.cache.get_raw(key)
        if cached in (b"0", b"1"):
            return cached == b"1"
        found = bool(self.tree.files_containing(self.paths, [word.encode()]))
        self.cache.put_raw(key, b"1" if found else b"0")
        return found

    def naming(self, word: str) -> frozenset[str]:
        """The files whose text writes `word` as a whole word (a class's name, a module's last
        name, an attribute's)."""
        if word not in self._naming:
            pattern = word_pattern(word)
            found = self.tree.read_many(self.tree.files_containing(self.paths, [word.encode()]))
            self._naming[word] = frozenset(path for path, text in found if pattern.search(text))
        return self._naming[word]

    def importing(self, module: str, located: Callable[[str], tuple[str, bool]]) -> frozenset[str]:
        """The files whose import statements (in functions too) name consumer module `module` or a
        name from it; `located(path)`: a file's module, and whether it is a package's `__init__`
        (to read its relative imports). Found among the files writing its last name."""
        if module not in self._importing:
            self._importing[module] = frozenset(
                path
                for path, text in self.tree.read_many(sorted(self.naming(module.rpartition(".")[2])))
                if module in named_modules(path, *located(path), text)
            )
        return self._importing[module]

    def function_at(self, path: str, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The function a scanned file defines at `line` (its `def`'s), parsed when asked (a rule
        reads a few copies of provider code); None when there is none."""
        tree = self._tree(path)
        for node in walk(tree) if tree is not None else ():
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == line:
                return node
        return None

    def may_make(self, cls: str, quiet: AbstractSet[str], located: Callable[[str], tuple[str, bool]]) -> bool:
        """May the consumer make or hand on its class `cls` (dotted)? Not when its code names it, but
        only to read `quiet` of it (its static methods and class attributes: no instance made), in
        its module and in modules importing it from there; its `class` statement undecorated. A
        class never named besides its definition may be loaded by a path not read here (an entry
        point, a configuration file); a string naming it, an import of its module by another name,
        or a file that does not parse may hand it on. arctic-inference keeps a copy of vLLM's
        `FlashAttentionBackend` whose module only calls its static method; the backend it installs
        is another class. Asked of a few classes a rule would fail; not cached."""
        module, _, name = cls.rpartition(".")
        if not name.isidentifier():
            return True  # a class `type(...)` composes ("mod.Mixin+Base"): made where it is composed
        read_quietly = False
        for path in sorted(self.naming(name)):
            here, is_package = located(path)
            tree = self._tree(path)
            if tree is None:
                return True
            local, whole = (name, False) if here == module else _binding(tree, here, is_package, module, name)
            # A string naming the class alone is read where the name is bound; elsewhere, with its module.
            path_names = (name,) if local or whole else (f"{module}.{name}", f"{module}:{name}")
            use = _use(tree, name, local, whole, path_names, quiet)
            if use is _Use.MADE:
                return True
            read_quietly = read_quietly or use is _Use.QUIET
        return not read_quietly

    def _tree(self, path: str) -> ast.Module | None:
        """A scanned file's syntax tree, parsed once (None when it does not parse)."""
        if path not in self._trees:
            try:
                self._trees[path] = parse_limited(self.tree.read(path))
            except (OSError, KeyError, SyntaxError, ValueError):
                self._trees[path] = None
        return self._trees[path]

    def texts(self, words: list[str]) -> list[bytes]:
        """The texts of the files that write one of `words` after a dot or as a string."""
        return [text for _, text in self._files_writing(words)]

    def _files_writing(self, words: list[str]) -> list[tuple[str, bytes]]:
        shapes = [shape for word in words for shape in (b"." + word.encode(), *quoted(word))]
        return list(self.tree.read_many(self.tree.files_containing(self.paths, shapes))) if shapes else []

    def reads(self, words: list[str], classes: AbstractSet[str] | None = None) -> set[str]:
        """The words a file reads as `x.word` outside a function named `word`, or writes as a string
        (the rules ask about few words: not cached). With `classes` (simple names), a read on
        `self` counts only in a class of those names."""
        return {found for text in self.texts(words) for found in reads_outside_own(text, words, classes)}

    def reading_classes(self, words: list[str]) -> dict[str, set[str]]:
        """Where the files read each word (`idle_hooks.reading_classes`), every file's answers merged."""
        out: dict[str, set[str]] = {}
        for path, text in self._files_writing(words):
            for word, where in reading_classes(text, words, self.tree.module_name(path)[0]).items():
                out.setdefault(word, set()).update(where)
        return out

    def makes(self, name: str) -> bool:
        """Does a file call the class `name` (`Name(...)`, `mod.Name(...)`), besides its own
        `class Name(...)` line? (Asked of the few classes it decides; not cached.)"""
        needle = re.escape(name.encode())
        call, definition = re.compile(rb"(?<!\w)" + needle + rb"\s*\("), re.compile(rb"\bclass\s+" + needle + rb"\s*\(")
        texts = self.tree.read_many(self.tree.files_containing(self.paths, [name.encode()]))
        return any(len(call.findall(text)) > len(definition.findall(text)) for _, text in texts)

    def refers_to(self, name: str) -> bool:
        """Does a file write the class `name` in code, besides its own `class name` line (a call,
        an alias `cls = Name if ... else Other`, a patch `mod.Base = Name`)? Not in a comment
        or a string. (Asked of the few classes a rule decides; not cached.)"""
        word = word_pattern(name)
        definition = re.compile(rb"\bclass\s+$")
        for _, text in self.tree.read_many(self.tree.files_containing(self.paths, [name.encode()])):
            prose = ProseFinder(text)
            for match in word.finditer(text):
                line_start = text.rfind(b"\n", 0, match.start()) + 1
                if not definition.search(text, line_start, match.start()) and prose.in_code(match.start()):
                    return True
        return False

    def passes_on(self, kept: Mapping[str, AbstractSet[str]]) -> set[str]:
        """Of the members in `kept` (each with the classes holding objects there), those from which
        a file passes on what is kept (asked by the contact rules, once, about the members whose
        objects are handed over only by being kept there): what the scan saw, else one search of
        the files it did not read (`protocols.passes_on`; a read on `self` counts only in a file
        that names one of the holders: a method of their line), cached."""
        seen = {m for m, holders in kept.items() if any(f"{h}:{m}" in self.passed_members for h in holders)}
        rest = {m: sorted(kept[m]) for m in sorted(set(kept) - seen)}
        if not rest:
            return seen
        asked = ",".join(f"{m}@{'+'.join(holders)}" for m, holders in rest.items())
        key = f"consumer-passes-on:{TEXT_FORMAT}:{code_digest()}:{self.stamps_id}:{asked}"
        cached = self.cache.get_raw(key)
        found_before = load_json(list[str], cached) if cached is not None else None  # None: damaged too
        if found_before is not None:
            return seen | (set(found_before) & set(rest))
        files = self._files_writing(sorted(rest))
        found = {
            m for m, holders in rest.items() if any(self._passed_in(path, text, m, holders) for path, text in files)
        }
        self.cache.put_raw(key, dump_json(list[str], sorted(found)))
        return seen | found

    def _passed_in(self, path: str, text: bytes, member: str, holders: list[str]) -> bool:
        """Does this file pass on what `holders` keep in `member`? In a file the scan read through,
        only a string naming it can (`vars(self)["m"]`, an attrgetter): the scan saw the rest."""
        if path in self.read_paths:
            return _string_other_than_attr_name(text, member)
        return passes_on(text, member, _names_any(text, holders))


def _names_any(text: bytes, classes: list[str]) -> bool:
    """Does `text` write the (last) name of one of these dotted class names as a word?"""
    return any(re.search(rb"\b" + re.escape(c.rpartition(".")[2].encode()) + rb"\b", text) for c in classes)


# The name argument of `getattr(x, "name"`, `hasattr(...`, `setattr(...`: the first argument
# written without parentheses or commas in it (`self.model`), the string right after.
_ATTR_NAME_ARGUMENT = re.compile(rb"\b(?:get|has|set)attr\(\s*[\w.]+\s*,\s*\Z")


def _string_other_than_attr_name(text: bytes, name: str) -> bool:
    """Does `text` write `name` as a string literal other than as the name argument of `getattr`,
    `hasattr` or `setattr` on a plain object? The scan reads those calls as `x.name` itself (and
    what they hand on); another string (`vars(self)["name"]`, an attrgetter) it does not."""
    for shape in quoted(name):
        start = text.find(shape)
        while start != -1:
            line_start = text.rfind(b"\n", 0, start) + 1
            if not _ATTR_NAME_ARGUMENT.search(text, line_start, start):
                return True
            start = text.find(shape, start + 1)
    return False


def _binding(tree: ast.Module, here: str, is_package: bool, module: str, name: str) -> tuple[str, bool]:
    """How a file (module `here`) may reach `name` of consumer module `module`: the local name a
    `from module import name [as local]` binds ("" if none), and whether it imports the module
    itself (`import module`, `from package import module`: then any `x.name` may be it)."""
    local, whole = "", False
    for node in walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = absolute_module(here, is_package, node.level, node.module)
            for alias in node.names:
                if base == module and alias.name == name:
                    local = alias.asname or name
                elif f"{base}.{alias.name}" == module:
                    whole = True
        elif isinstance(node, ast.Import) and any(alias.name == module for alias in node.names):
            whole = True
    return local, whole


class _Use(enum.Enum):
    """How a file uses a consumer class (`_use`)."""

    NONE = "none"
    QUIET = "quiet"  # only to read its static methods and class attributes
    MADE = "made"  # otherwise: it may make an instance or hand the class on


def _use(
    tree: ast.Module, name: str, local: str, whole: bool, path_names: tuple[str, ...], quiet: AbstractSet[str]
) -> _Use:
    """How a file uses class `name`, bound to `local` there (or reached as `x.name` when `whole`):
    MADE for a decorated `class` statement of it, a load of the name other than to read `quiet` of
    it, a string writing one of `path_names` (docstrings aside); QUIET for reads of `quiet` alone."""
    docstrings = {
        id(node.body[0].value)
        for node in walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    parents = {id(child): node for node in walk(tree) for child in ast.iter_child_nodes(node)}
    found = _Use.NONE
    for node in walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == local and node.decorator_list:
            return _Use.MADE  # a decorator may register it
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if any(word_pattern(p).search(node.value.encode()) for p in path_names):
                return _Use.MADE
            continue
        if isinstance(node, ast.Name) and local and node.id == local and isinstance(node.ctx, ast.Load):
            pass
        elif not (whole and isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(id(node))
        if not (isinstance(parent, ast.Attribute) and parent.value is node and parent.attr in quiet):
            return _Use.MADE
        found = _Use.QUIET
    return found
