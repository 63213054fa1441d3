"""Which consumer files can matter to a check, found from their bytes before anything is parsed.

A file whose text never names the provider package can reach the provider only through
consumer modules that hand provider objects on: modules that bind them at module level (a
re-export, `from pv.core import Engine`, or a class built on one), or compute a provider version
that gates code (`vllm_version_is(...)`). A module that only imports the provider inside its
functions hands nothing on, so its importers need not be read. The set is grown to a fixpoint:

- a file that names the provider where code can (as a word: `vllm_config` does not name vllm;
  in a comment, a docstring or another triple-quoted string that is not an f-string it does not
  count, read exactly as the tokenizer reads them; nor as a later part of the consumer's own
  dotted module names, `atom.plugin.vllm` or `from .vllm import x`) or computes an import is in;
- a file that imports a module that hands provider objects on, or a name from it (import
  statements are read with a pattern, function-local ones too, relative ones resolved), is in;
  so is a file that imports a package above such a module and spells the path below it
  (`import pkg as p` then `p.sub.foo.X`);
- a file an included file names in a string literal (`"foo.py"`) is in.

A module hands provider objects on when, outside its functions, it imports the provider or
such a module or computes an import, or when a line names the provider (outside a comment)
together with a version. Which lines are outside functions is read from their
indentation; where that is unclear (a line inside a multi-line string) the line counts as
outside, so a mistake only reads more files.

Only these files are scanned up front. The others are read only when a helper call carries a
provider object into them, or when a string names one of their classes (a class handed over by
dotted path: the scanner loads them on demand). Their imports and the consumer modules their
strings name are still read from the bytes, so what the entry points reach is known across
them. A file outside the set that does not parse is not reported: it cannot use the provider.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from atompin.analysis.discovery import import_path_targets
from atompin.analysis.limits import parse_limited
from atompin.analysis.names import absolute_module
from atompin.analysis.prose import WORD_BYTES, ProseReader
from atompin.lines import line_numbers

_COMPUTED_IMPORT = re.compile(rb"import_module|__import__")
# A string literal holding a dotted name, and what follows a colon ("pkg.mod:Cls"): its dotted part.
_CONSUMER_STRING = re.compile(rb"""["']([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?::[^"'\\\n]*)?["']""")
_FILE_STRING = re.compile(rb"""["'](?:[^"'\n]*/)?([A-Za-z_]\w*)\.py["']""")
_FROM = re.compile(rb"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)", re.MULTILINE)
_IMPORT = re.compile(rb"^[ \t]*import[ \t]+([^\n#;]*)", re.MULTILINE)
_NAME = re.compile(rb"[A-Za-z_]\w*")
_DOTTED = re.compile(rb"[A-Za-z_][\w.]*")
_DEF = re.compile(rb"(?:async[ \t]+)?def[ \t]")
_WORD_BYTES = frozenset(bytes([b]) for b in WORD_BYTES)  # as one-byte slices of a text
_DOTTED_BYTES = _WORD_BYTES | {b"."}
_FROM_BEFORE = re.compile(rb"(?:^|[^\w.])from[ \t]+\Z")  # `from ` just before a relative module


@dataclass
class _Import:
    """One module an import statement names, where the statement starts, and the name it binds to a
    module, if any (`import a.b` binds `a` to module `a`; `from a import b as c` binds `c` to `a.b`)."""

    module: str
    offset: int  # where its statement starts
    bound: str = ""
    bound_module: str = ""
    symbol: str = ""  # for `from m import a`: "m:a" (a may be a module, or a name in m)
    relative: bool = False  # `from . import a`, `from .m import a`


@dataclass
class _File:
    path: str
    module: str
    is_package: bool
    source: bytes
    imports: list[_Import] = field(default_factory=list)
    outside: list[_Import] | None = None  # the imports outside its functions

    def in_function(self, offset: int) -> bool:
        """Is the line at byte `offset` inside a function body? Read from indentation, walking up
        to the lines that enclose it: a `def` there says yes; reaching the left margin says no."""
        source = self.source
        pos = source.rfind(b"\n", 0, offset) + 1
        end = source.find(b"\n", pos)
        text = source[pos : end if end >= 0 else len(source)]
        indent = len(text) - len(text.lstrip(b" \t"))
        while indent > 0 and pos > 0:
            end = pos - 1
            pos = source.rfind(b"\n", 0, end) + 1
            text = source[pos:end]
            stripped = text.lstrip(b" \t")
            if not stripped or stripped[:1] in (b"#", b")", b"]", b"}"):  # a blank, a comment, a bracket's close
                continue
            if len(text) - len(stripped) < indent:
                if _DEF.match(stripped):
                    return True
                indent = len(text) - len(stripped)
        return False

    def module_names(self) -> set[str]:
        return {i.module for i in self.imports}


def relevant_files(
    files: Iterable[tuple[str, str, bytes]], provider: str, consumer_tops: Iterable[str]
) -> tuple[set[str], dict[str, list[tuple[str, int]]]]:
    """The paths (of (path, module, source) triples) that can reach `provider` (as above), and
    for every other path what its imports and strings point at (read once, with the rest)."""
    by_path = {path: _File(path, module, path.endswith("/__init__.py"), source) for path, module, source in files}
    for f in by_path.values():
        f.imports = _imports(f)
    modules = {f.module for f in by_path.values()}
    included = {f.path for f in by_path.values() if names_the_provider_in_code(f.source, provider, modules)}
    handing_on = {f.module for f in by_path.values() if f.path in included and _hands_on_provider(f, provider)}
    by_basename: dict[bytes, list[str]] = {}
    for path in by_path:
        by_basename.setdefault(path.rpartition("/")[2].removesuffix(".py").encode(), []).append(path)
    named_from: set[str] = set()
    while True:
        changed = False
        # Packages above modules that hand provider objects on (a module added in this round is
        # seen the next round: the loop runs until a round changes nothing).
        above = {m.rsplit(".", n)[0] for m in handing_on for n in range(1, m.count(".") + 1)}
        for path in sorted(included - named_from):  # strings of each included file, read once
            named_from.add(path)
            for named in _files_named_in_strings(by_path[path].source, by_basename):
                changed |= named not in included
                included.add(named)
        for f in by_path.values():
            if f.path not in included and _imports_one_of(f, f.imports, handing_on, above):
                included.add(f.path)
                changed = True
            if f.path in included and f.module not in handing_on:
                if f.outside is None:
                    f.outside = [i for i in f.imports if not f.in_function(i.offset)]
                if _imports_one_of(f, f.outside, handing_on, above):
                    handing_on.add(f.module)
                    changed = True
        if not changed:
            heads = tuple(f"{top}." for top in consumer_tops)
            edges = {f.path: _edges(f, heads) for f in by_path.values() if f.path not in included}
            return included, edges


def names_the_provider(source: bytes, provider: str) -> bool:
    """Does a file name the provider as a word (`vllm_config` does not name vllm) outside its
    comments, or compute an import? (Plain substring tests go first: a pattern that starts with a
    look-behind is slow on a file without the word.)"""
    name = provider.encode()
    if name in source:
        prose = ProseReader(source)
        for match in re.finditer(rb"(?<![\w])" + re.escape(name) + rb"(?![\w])", source):
            if not prose.in_comment(match.start()):
                return True
    return (b"import_module" in source or b"__import__" in source) and _COMPUTED_IMPORT.search(source) is not None


def names_the_provider_in_code(source: bytes, provider: str, consumer_modules: AbstractSet[str]) -> bool:
    """`names_the_provider`, read exactly and only where the word can be the provider: not in a
    comment, a docstring or another triple-quoted string (an f-string's braces may hold code), nor
    as the last part of the dotted name of one of `consumer_modules` (`atom.plugin.vllm`: ATOM's
    model files name its vLLM plugin package, not vLLM) or of a relative import's module (`from
    .vllm import x`). What decides which files are read."""
    name = provider.encode()
    prose: ProseReader | None = None
    at = source.find(name)
    while at >= 0:  # plain searches: a pattern with a look-behind tried at every byte is slower
        end = at + len(name)
        if (
            source[at - 1 : at] not in _WORD_BYTES
            and source[end : end + 1] not in _WORD_BYTES
            and not _in_consumer_name(source, at, end, consumer_modules)
        ):
            prose = prose or ProseReader(source)
            if not prose.at(at):
                return True
        at = source.find(name, end)
    return (b"import_module" in source or b"__import__" in source) and _COMPUTED_IMPORT.search(source) is not None


def _in_consumer_name(source: bytes, offset: int, end: int, consumer_modules: AbstractSet[str]) -> bool:
    """Does the word from `offset` to `end` end the dotted name of a consumer module (`atom.plugin.vllm`;
    `atom.vllm` only when that is a module, not the provider bound in `atom/__init__.py`), or a
    relative import's module (`from ..vllm import x`: relative imports stay in the consumer)?"""
    if source[offset - 1 : offset] != b".":
        return False
    start = offset - 1
    while start > 0 and source[start - 1 : start] in _DOTTED_BYTES:
        start -= 1
    if start > 0 and source[start - 1] >= 0x80:
        return False  # a name written with other letters (`éatom.plugin.vllm`): an attribute of it
    chain = source[start:offset]
    if chain.startswith(b"."):  # a relative import's module, or an attribute of an expression (`f().vllm`)
        return _FROM_BEFORE.search(source[max(0, start - 32) : start]) is not None
    return (chain + source[offset:end]).decode() in consumer_modules


def _edges(f: _File, tops: tuple[str, ...]) -> list[tuple[str, int]]:
    """(target, 1-based line) for every module a file imports, every consumer module (or a name in
    one) it writes in a string ("pkg.mod.Cls", "pkg.mod:Cls"), and every file name it writes in
    a string ("file:foo.py"): the edges of a file that is not scanned, as the scanner records
    them for one it scans."""
    names = [(i.module, i.offset) for i in f.imports if i.module]
    if any(quote + top.encode() in f.source for top in tops for quote in (b'"', b"'")):
        for match in _CONSUMER_STRING.finditer(f.source):
            head = match.group(1).decode()
            if head.startswith(tops):
                names.append((head, match.start()))
    if b'.py"' in f.source or b".py'" in f.source:
        names += [(f"file:{m.group(1).decode()}.py", m.start()) for m in _FILE_STRING.finditer(f.source)]
    lines = line_numbers(f.source, (offset for _, offset in names))
    return [(name, lines[offset]) for name, offset in names] + _import_path_edges(f, tops)


def _import_path_edges(f: _File, tops: tuple[str, ...]) -> list[tuple[str, int]]:
    """A file putting a consumer folder on `sys.path` (`discovery.import_path_folders`) reaches what
    it imports by a name that folder serves, and all below it: (target, line). Only a file whose
    text names `sys.path` is parsed for it."""
    if b"sys.path" not in f.source:
        return []
    try:
        tree = parse_limited(f.source)
    except (SyntaxError, ValueError):
        return []
    targets = import_path_targets(tree, f.path, f.module, f.is_package)
    return [
        (target, line)
        for line, each in sorted(targets.items())
        for target in each
        if f"{target.removeprefix('prefix:')}.".startswith(tops)
    ]


def _hands_on_provider(f: _File, provider: str) -> bool:
    """Does a file that names the provider (or computes an import) bind provider objects outside
    its functions (an import of the provider, a computed import), or compute a provider version?"""
    for i in f.imports:
        if (i.module == provider or i.module.startswith(f"{provider}.")) and not f.in_function(i.offset):
            return True
    for match in _COMPUTED_IMPORT.finditer(f.source):
        if not f.in_function(match.start()):
            return True
    word = re.compile(rb"(?<![\w.])" + re.escape(provider.encode()) + rb"(?!\w)")
    prose = ProseReader(f.source)
    lowered = f.source.lower()  # "version" in any case (finding it in lowered bytes beats a pattern)
    at = lowered.find(b"version")
    while at >= 0:
        start = f.source.rfind(b"\n", 0, at) + 1
        end = f.source.find(b"\n", at)
        for match in word.finditer(f.source, start, end if end >= 0 else len(f.source)):
            if not prose.in_comment(match.start()):
                return True
        at = lowered.find(b"version", end) if end >= 0 else -1
    return False


def named_modules(path: str, module: str, is_package: bool, source: bytes) -> frozenset[str]:
    """Every module a file's import statements name, inside its functions too (`from m import a`
    names m and m.a), read from its bytes: the modules it may take names from."""
    return frozenset(i.module for i in _imports(_File(path, module, is_package, source)) if i.module)


def imported_modules(path: str, module: str, is_package: bool, source: bytes) -> frozenset[str]:
    """Every module a file's import statements outside its functions name (`from m import a` names
    m and m.a: a may be a module), read from its bytes: what importing it imports."""
    f = _File(path, module, is_package, source)
    imports = _imports(f)
    inside = {offset: f.in_function(offset) for offset in {i.offset for i in imports}}  # a statement names many
    return frozenset(i.module for i in imports if i.module and not inside[i.offset])


def _imports(f: _File) -> list[_Import]:
    """Every module a file's import statements name (and, for `from m import a`, m.a: a may be a module)."""
    out: list[_Import] = []
    for match in _statements(_FROM, f.source):
        dots, module, names = match.groups()
        offset = match.start()
        base = absolute_module(f.module, f.is_package, len(dots), module.decode() or None)
        out.append(_Import(base, offset, relative=bool(dots)))
        for part in names.strip(b"()").split(b","):  # `a as b, c`: the imported names are a and c
            words = part.split()
            if words and _NAME.fullmatch(words[0]):
                name = words[0].decode()
                bound = words[2].decode() if len(words) == 3 and words[1] == b"as" else name
                full = f"{base}.{name}" if base else name
                symbol = f"{base}:{name}" if base else ""
                out.append(_Import(full, offset, bound, full, symbol, relative=bool(dots)))
    for match in _statements(_IMPORT, f.source):
        offset = match.start()
        for part in match.group(1).split(b","):
            words = part.split()
            if words and _DOTTED.fullmatch(words[0]):
                name = words[0].decode()
                if len(words) == 3 and words[1] == b"as":
                    out.append(_Import(name, offset, words[2].decode(), name))
                else:
                    out.append(_Import(name, offset, name.split(".")[0], name.split(".")[0]))
    return out


def _statements(pattern: re.Pattern[bytes], source: bytes) -> Iterator[re.Match[bytes]]:
    """`pattern.finditer(source)` for a pattern of an import statement (anchored at a line's
    start, `import` on its first line), tried only at the lines that hold `import`: a pattern
    anchored with `^` is otherwise tried at every byte, which cost half of this module's time."""
    end = 0  # where the last match ended: as in finditer, matches do not overlap
    at = source.find(b"import")
    while at >= 0:
        start = source.rfind(b"\n", 0, at) + 1
        if start >= end:
            match = pattern.match(source, start)
            if match is not None:
                yield match
                end = match.end()
        line_end = source.find(b"\n", at)
        if line_end < 0:
            return
        at = source.find(b"import", line_end + 1)


def _imports_one_of(f: _File, imports: list[_Import], reached: set[str], above: set[str]) -> bool:
    """Do these imports (of file `f`) name a reached module (or a name from it), or bind a package
    above one (`above`: the packages above them) whose path below it the file spells (`import pkg
    as p` then `p.sub.foo.X`)?"""
    if any(i.module in reached for i in imports):
        return True
    for i in imports:
        if not i.bound or i.bound_module not in above:
            continue
        for module in reached:
            if module.startswith(f"{i.bound_module}."):
                spelled = f"{i.bound}.{module[len(i.bound_module) + 1 :]}".encode()
                if spelled in f.source and re.search(rb"(?<![\w.])" + re.escape(spelled) + rb"(?!\w)", f.source):
                    return True
    return False


def _files_named_in_strings(source: bytes, by_basename: dict[bytes, list[str]]) -> set[str]:
    """Consumer files a source names by file name in string literals ("tools/run_me.py")."""
    out: set[str] = set()
    if b'.py"' in source or b".py'" in source:  # without those bytes no match can count
        for match in _FILE_STRING.finditer(source):
            out.update(by_basename.get(match.group(1), []))
    return out


def provider_names(sources: Iterable[bytes], provider: str) -> set[str]:
    """What the import statements of these sources name of the provider: "pv.a:b" for
    `from pv.a import b`, "pv.a" for `import pv.a`. What a check will surely look up."""
    out: set[str] = set()
    for source in sources:
        if provider.encode() not in source:
            continue
        for i in _imports(_File("", "", False, source)):
            name = i.symbol.partition(":")[0] if i.symbol else i.module
            if not i.relative and (name == provider or name.startswith(f"{provider}.")):
                out.add(i.symbol or i.module)
    return out
