"""Which consumer files can matter to a check, found from their bytes before anything is parsed.

A file whose text never names the provider package can reach the provider only through
consumer modules that do: by importing them (or a name they re-export), by naming them in a
string (a dotted path handed on, a file run with `exec`), or by computing a module name at run
time (`import_module`, `__import__`). So the set is grown to a fixpoint from the files that
name the provider:

- a file that names the provider, computes an import, or names one of the consumer's own
  modules in a string (a class handed over by dotted path: the provider may be the one to
  load it) is in;
- a file that imports an included module, or a name from it (import statements are read with
  a pattern, function-local ones too, relative ones resolved), is in; so is a file that imports
  a package above an included module and mentions that module's name (`import pkg as p` then
  `p.sub.foo.X`);
- a module an included file names in a string literal (`"pkg.sub.foo.Cls"`, `"foo.py"`) is in.

Only these files are scanned up front. The others are read only when a helper call carries a
provider object into them (the scanner loads them on demand), and a file outside the set that
does not parse is not reported: it cannot use the provider.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from atompin.analysis.names import absolute_module

_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_COMPUTED_IMPORT = re.compile(rb"import_module|__import__")
_STRING = re.compile(rb"""["']([A-Za-z_][\w.]*)["']""")
_FILE_STRING = re.compile(rb"""["'](?:[^"'\n]*/)?([A-Za-z_]\w*)\.py["']""")
_FROM = re.compile(rb"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)", re.MULTILINE)
_IMPORT = re.compile(rb"^[ \t]*import[ \t]+([^\n#;]*)", re.MULTILINE)


@dataclass
class _File:
    path: str
    module: str
    is_package: bool
    source: bytes
    imports: set[str] = field(default_factory=set)
    words: frozenset[bytes] | None = None

    def mentions(self, word: bytes) -> bool:
        if self.words is None:
            self.words = frozenset(_WORD.findall(self.source))
        return word in self.words


def files_that_can_matter(
    files: Iterable[tuple[str, str, bytes]], provider: str, consumer_tops: Iterable[str]
) -> set[str]:
    """The paths (of (path, module, source) triples) that can reach `provider`, as above."""
    by_path = {
        path: _File(path, module, path.endswith("/__init__.py"), source) for path, module, source in files
    }
    modules = {f.module: f.path for f in by_path.values()}
    for f in by_path.values():
        f.imports = _imports(f)
    needle = provider.encode()
    tops = tuple(f"{top}." for top in consumer_tops)
    own_path = re.compile(rb"""["'](?:""" + b"|".join(re.escape(t.encode()) for t in tops) + rb")") if tops else None
    included = {
        f.path
        for f in by_path.values()
        if needle in f.source or _COMPUTED_IMPORT.search(f.source) or (own_path and own_path.search(f.source))
    }
    by_basename: dict[bytes, list[str]] = {}
    for path in by_path:
        by_basename.setdefault(path.rpartition("/")[2].removesuffix(".py").encode(), []).append(path)
    todo = sorted(included)
    while todo:
        named: set[str] = set()
        for path in todo:
            named |= _named_in_strings(by_path[path].source, modules, tops, by_basename)
        reached = {by_path[path].module for path in included}
        todo = []
        for f in by_path.values():
            if f.path not in included and (f.path in named or _imports_one_of(f, reached)):
                included.add(f.path)
                todo.append(f.path)
    return included


def _imports(f: _File) -> set[str]:
    """Every module a file's import statements name (and, for `from m import a`, m.a: a may be a module)."""
    out: set[str] = set()
    for match in _FROM.finditer(f.source):
        dots, module, names = match.groups()
        base = absolute_module(f.module, f.is_package, len(dots), module.decode() or None)
        out.add(base)
        for part in names.strip(b"()").split(b","):  # `a as b, c`: the imported names are a and c
            name = part.split()[0] if part.split() else b""
            if re.fullmatch(rb"[A-Za-z_]\w*", name):
                out.add(f"{base}.{name.decode()}" if base else name.decode())
    for match in _IMPORT.finditer(f.source):
        for part in match.group(1).split(b","):
            name = part.strip().split()[0] if part.strip() else b""
            if name and re.fullmatch(rb"[A-Za-z_][\w.]*", name):
                out.add(name.decode())
    return out


def _imports_one_of(f: _File, reached: set[str]) -> bool:
    """Does the file import a reached module (or a name from it), or a package above one whose
    name it also mentions?"""
    if f.imports & reached:
        return True
    for module in reached:
        parent, _, last = module.rpartition(".")
        while parent:
            if parent in f.imports and f.mentions(last.encode()):
                return True
            parent, _, _ = parent.rpartition(".")
    return False


def _named_in_strings(
    source: bytes, modules: dict[str, str], tops: tuple[str, ...], by_basename: dict[bytes, list[str]]
) -> set[str]:
    """Consumer files a source names in string literals: dotted module paths (or a class or function
    inside one) and file names."""
    out: set[str] = set()
    for match in _STRING.finditer(source):
        text = match.group(1).decode()
        if not text.startswith(tops):
            continue
        while text:  # "pkg.mod.Cls.meth" names pkg.mod; every existing prefix module is included
            if text in modules:
                out.add(modules[text])
            text = text.rpartition(".")[0]
    for match in _FILE_STRING.finditer(source):
        out.update(by_basename.get(match.group(1), []))
    return out
