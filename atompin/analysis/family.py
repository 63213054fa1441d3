"""Where the provider can call a class's methods: the files of its family, read from text.

A provider call by a method's name reaches one class's method (`callsites`) only from
that class's family: `self.m()`, `cls.m()` or `super().m()` in the class, a subclass or
a base the class inherits the calling method from; `x.m()` on an `x` annotated with the
class or a subclass, or on a module-level instance of one; `C.m(self, ...)`. A file making
such a call either defines a base of the class or writes one of the names of the class,
its subclasses (by their `class Z(Y):` statements, to a fixpoint), or its module-level
instances and aliases (`x = Y(...)`, `Alias = Y`). The search for a special method's
calls (`__init__`, which a third of vLLM's files call) then parses only the files that
can matter. Read from the text, never parsed (`ClassGraph`, one pass over the
files): a name written in a comment counts too, which only costs a parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from atompin.sources.tree import SourceTree


@dataclass(frozen=True)
class ClassFamily:
    """The names and files through which the provider can call the methods of some classes."""

    names: frozenset[str]  # the classes, their subclasses, and module-level instances and aliases
    files: frozenset[str]  # the files defining the classes or a base of one
    _pattern: re.Pattern[bytes] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        words = b"|".join(re.escape(name.encode()) for name in sorted(self.names))
        object.__setattr__(self, "_pattern", re.compile(rb"(?<!\w)(?:" + words + rb")(?!\w)"))

    def holds(self, path: str, text: bytes) -> bool:
        """Can the file at `path` (its text) call a method of the family?"""
        return path in self.files or self._pattern.search(text) is not None


@dataclass
class ClassGraph:
    """The class statements and module-level bindings of a provider's files, by last name (a
    class statement defines a plain name; `mod.Base` in a base list is read as Base)."""

    subclasses: dict[str, set[str]] = field(default_factory=dict)  # a base -> the classes naming it
    bases: dict[str, set[str]] = field(default_factory=dict)  # a class -> its bases (every definition's)
    defined_in: dict[str, set[str]] = field(default_factory=dict)  # a class -> the files defining one
    bound: dict[str, set[str]] = field(default_factory=dict)  # Y -> the names `x = Y(...)`, `Alias = Y` bind

    @classmethod
    def read(cls, tree: SourceTree, files: list[str]) -> ClassGraph:
        """One pass over `files`' text."""
        graph = cls()
        for path, text in tree.read_many(files):
            text = b"\n" + text  # every statement is found after a newline
            for found in _CLASS_START.finditer(text):
                match = _CLASS.match(text, found.start() + 1)
                if match is not None:
                    graph._add_class(path, match.group(1).decode(), _names(match.group(2)))
            for match in _BINDING.finditer(text):
                value = match.group(2).rpartition(b".")[2].decode()
                graph.bound.setdefault(value, set()).add(match.group(1).decode())
        return graph

    def _add_class(self, path: str, name: str, bases: set[str]) -> None:
        self.defined_in.setdefault(name, set()).add(path)
        self.bases.setdefault(name, set()).update(bases)
        for base in bases:
            self.subclasses.setdefault(base, set()).add(name)

    def family(self, classes: frozenset[str]) -> ClassFamily:
        """The family of the classes named `classes`."""
        names = set(classes)
        todo = list(classes)
        while todo:  # subclasses, instances and aliases (an alias may be subclassed in turn)
            name = todo.pop()
            for more in (self.subclasses.get(name, ()), self.bound.get(name, ())):
                todo += [each for each in more if each not in names]
                names.update(more)
        ancestors = set(classes)
        todo = list(classes)
        while todo:
            name = todo.pop()
            todo += [base for base in self.bases.get(name, ()) if base not in ancestors]
            ancestors.update(self.bases.get(name, ()))
        files = {path for name in ancestors for path in self.defined_in.get(name, ())}
        return ClassFamily(frozenset(names), frozenset(files))


# Where a class statement may start (a literal to look for: far faster than `^` at every line).
_CLASS_START = re.compile(rb"\n[ \t]*class[ \t]")
# `class Name(bases):` (bases over several lines too; a type parameter list before them).
_CLASS = re.compile(rb"[ \t]*class[ \t]+(\w+)[ \t]*(?:\[[^\]]*\][ \t]*)?\(([^:]*?)\)[ \t]*(?:->[^:]*)?:")
# A module-level `name = Dotted.Name(` (an instance) or `name = Dotted.Name` (an alias).
_BINDING = re.compile(rb"\n(\w+)[ \t]*(?::[^=\n]*)?=[ \t]*([\w.]+)[ \t]*(?=\(|\n|\r)")
_SUBSCRIPT = re.compile(rb"\[[^\[\]]*\]")
_KEYWORD = re.compile(rb"\w+[ \t]*=[ \t]*[\w.]+")
_LAST_NAME = re.compile(rb"(?:\w+\.)*(\w+)")


def _names(bases: bytes) -> set[str]:
    """The classes a base list names, by their last names: `mod.Base, Generic[T], metaclass=M`
    gives Base and Generic (type arguments and keywords are no bases)."""
    while (plain := _SUBSCRIPT.sub(b"", bases)) != bases:  # inner brackets first: `Base[Dict[str, int]]`
        bases = plain
    bases = _KEYWORD.sub(b"", bases)
    return {match.group(1).decode() for match in _LAST_NAME.finditer(bases)}
