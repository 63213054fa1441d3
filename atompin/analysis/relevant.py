"""Which consumer files can matter to a check, found from their bytes before anything is parsed.

A file whose text never names the provider package can reach the provider only through
consumer modules that do: by importing them (or a name they re-export), by naming them in a
string (a dotted path handed on, a file run with `exec`), or by computing a module name at run
time (`import_module`, `__import__`). So the set is grown to a fixpoint from the files that
name the provider:

- a file that names the provider, computes an import, or names one of the consumer's own modules
  in a string (a class handed over by dotted path: the provider may be the one to load it) is in;
- a file that mentions the last part of an included module's name (`foo` of `pkg.sub.foo`:
  `from .foo import x`, `from pkg.sub import foo`, `import pkg.sub.foo as f` all contain it)
  is in;
- a module an included file names in a string literal (`"pkg.sub.foo.Cls"`, `"foo.py"`) is in;
- a file below an included package `__init__` that imports relatively (`from .. import x` names
  no module word) is in.

Only these files are scanned up front. The others are read only when a helper call carries a
provider object into them (the scanner loads them on demand), and a file outside the set that
does not parse is not reported: it cannot use the provider. The fixpoint errs on the side of
including: a common word such as `utils` pulls in every file that uses it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_COMPUTED_IMPORT = re.compile(rb"import_module|__import__")
_STRING = re.compile(rb"""["']([A-Za-z_][\w.]*)["']""")
_FILE_STRING = re.compile(rb"""["'](?:[^"'\n]*/)?([A-Za-z_]\w*)\.py["']""")


def files_that_can_matter(files: Iterable[tuple[str, str, bytes]], provider: str, consumer_tops: Iterable[str]) -> set[str]:
    """The paths (of (path, module, source) triples) that can reach `provider`, as above."""
    modules: dict[str, str] = {}  # module -> path
    words: dict[str, frozenset[bytes]] = {}
    sources: dict[str, bytes] = {}
    last_part: dict[str, bytes] = {}
    for path, module, source in files:
        modules[module] = path
        sources[path] = source
        last_part[path] = (module.rpartition(".")[2] or module).encode()
    needle = provider.encode()
    tops = tuple(f"{top}." for top in consumer_tops)
    own_path = re.compile(rb"""["'](?:""" + b"|".join(re.escape(t.encode()) for t in tops) + rb")") if tops else None
    included = {
        path
        for path, source in sources.items()
        if needle in source or _COMPUTED_IMPORT.search(source) or (own_path is not None and own_path.search(source))
    }
    by_basename: dict[bytes, list[str]] = {}
    for path in sources:
        by_basename.setdefault(path.rpartition("/")[2].removesuffix(".py").encode(), []).append(path)
    todo = list(included)
    while todo:
        wanted = {last_part[path] for path in todo}
        packages = tuple(path.removesuffix("__init__.py") for path in todo if path.endswith("/__init__.py"))
        named: set[str] = set()
        for path in todo:
            named |= _named_in_strings(sources[path], modules, tops, by_basename)
        todo = []
        for path, source in sources.items():
            if path in included:
                continue
            relative = bool(packages) and path.startswith(packages) and b"from ." in source
            if path in named or relative or not wanted.isdisjoint(words.get(path) or _words(path, source, words)):
                included.add(path)
                todo.append(path)
    return included


def _words(path: str, source: bytes, cache: dict[str, frozenset[bytes]]) -> frozenset[bytes]:
    cache[path] = frozenset(_WORD.findall(source))
    return cache[path]


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
