"""Where provider code uses a name (for the contact-surface rules): the calls, reads and definitions of a method name
anywhere in the provider package, found without parsing the whole package.

The drift rules ask questions such as "does any provider code call `.run(...)` with
`out=`?" or "does it ever call `.supports_pcp()` on something it was handed?". The
answer needs every file, but not every file's syntax tree: the source bytes are
searched for the name first (one pass per file collects the identifiers written after
`.` or `def`), and only the files that contain it are parsed. Each step is cached:
a file's identifiers and its sites of a name by the file's content id (so a bump
re-reads only the files it changed), and a whole query by a stamp of every file (so a
second run reads nothing). A folder whose identifiers were not all read while the consumer
was scanned is searched in place instead (git's grep), and only the files it finds are read.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import json
import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from atompin.analysis.arity import CallShape, keyword_dicts, shape_of, spreads_a_name
from atompin.analysis.cache import AnalysisCache
from atompin.analysis.import_gates import ImportGates
from atompin.analysis.limits import parse_limited
from atompin.analysis.names import quoted, word_pattern, writes_as_string
from atompin.analysis.platform_gates import PlatformGates
from atompin.analysis.prefetch import Shares, Task, Worker
from atompin.analysis.prose import ProseFinder
from atompin.analysis.syntax import (
    FALSE_CONSTANT,
    dotted,
    element_makers,
    instance_assignments,
    is_name,
    local_values,
    walk,
)
from atompin.lines import line_numbers
from atompin.sources.tree import SourceTree

# Bump when what is extracted changes meaning, so cached entries are ignored.
SITES_FORMAT = "atompin-sites-20"

# Functions whose result may be the object they were handed (`type(x)`, `getattr(x, "n")`, `cast(T, x)`):
# a receiver made by one is no object of their own making (`NameSite.source`).
_HANDING_ON = frozenset(dir(builtins)) | {"cast"}

# Fewer files than this to read: a second process would not pay.
_MIN_UNREAD = 200
# The identifiers are read in this many shares (each a few milliseconds on vLLM).
_SHARES = 64

# Syntax trees kept for the next query (a big module's tree is tens of megabytes).
_KEEP_TREES = 4

# A line that opens a class or a function, with its indentation.
_BLOCK = re.compile(rb"^([ \t]*)(?:async[ \t]+)?(class|def)[ \t]+([A-Za-z_]\w*)", re.MULTILINE)

# Identifiers written after `def` (a definition) or after a dot (a call or a read):
# what a file must contain for a name to be defined or used there.
_DEFS = re.compile(rb"def\s+([A-Za-z_]\w*)")
_ATTRIBUTES = re.compile(rb"\.\s*([A-Za-z_]\w*)")
# A word written just before an opening parenthesis (`f(`, `x.f (`, `def f(`): read in the
# reversed text, where the parenthesis comes first and the engine finds it as fast as the dot
# above (in the text as written, every word would have to be tried). Kept reversed.
_CALLED_REVERSED = re.compile(rb"\(\s*(\w+)")
IdentifierKind = Literal["defs", "attributes", "called"]

# What a line must match for a file to write one of the names (`{names}`) as each kind of
# identifier above, searched in place (`NameSearch.in_place`): every file the identifiers of that
# kind hold a name for matches, with a few more (a name only in a longer match, say). `\s` may
# span lines there: a `def` at a line's end may define a name on the next line, a name after a
# dot and a line break (`(x.\n    name)`) starts its line, a call's parenthesis on the next line
# (`name\n(`) follows a name that ends its line.
_NAMES_PER_SEARCH = 300
_SPACE = r"[ \t\r\f\x0b]"  # `\s` but the line break, as Python reads it on bytes
_WORD_ENDS = r"(?![A-Za-z0-9_])"
_KIND_PATTERNS: dict[IdentifierKind, tuple[str, ...]] = {
    "defs": (rf"def{_SPACE}+{{names}}{_WORD_ENDS}", rf"def{_SPACE}*$"),
    "attributes": (rf"\.{_SPACE}*{{names}}{_WORD_ENDS}", rf"^{_SPACE}*{{names}}{_WORD_ENDS}"),
    "called": (rf"(?<![A-Za-z0-9_]){{names}}{_SPACE}*(?:\(|$)",),
}


class Identifiers:
    """The names one file defines (`def`), those it writes after a dot, and the words it writes
    just before an opening parenthesis (every call by name or on an attribute), as bytes (most
    are never asked about, so they are never decoded). Kept as the cache keeps them, three
    space-separated lists, each split into a set on first need: most searches ask only about
    the names defined, which are few, and the lists take far less memory (5 MB for vLLM 0.33
    against 45 MB as sets)."""

    __slots__ = ("raw", "_sets")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw  # b"def1 def2\nattr1 attr2\n1dellac 2dellac" (the called words reversed)
        self._sets: list[AbstractSet[bytes] | None] = [None, None, None]

    @classmethod
    def read(cls, source: bytes) -> Identifiers:
        """A file's identifiers, from its text."""
        lists = [_KIND_WORDS[kind](source) for kind in ("defs", "attributes", "called")]
        return cls(b"\n".join(b" ".join(names) for names in lists))

    @classmethod
    def parse(cls, data: bytes | None) -> Identifiers | None:
        """A cached entry's identifiers; None when absent or damaged."""
        return cls(data) if data is not None and data.count(b"\n") == 2 else None

    def _set(self, i: int) -> AbstractSet[bytes]:
        found = self._sets[i]
        if found is None:
            found = self._sets[i] = frozenset(self._list(i).split())
        return found

    def _list(self, i: int) -> bytes:
        raw = self.raw  # only list i is copied out: the attribute list is most of the bytes
        start = raw.find(b"\n") + 1 if i else 0
        if i == 2:
            start = raw.find(b"\n", start) + 1
        end = raw.find(b"\n", start) if i < 2 else len(raw)
        return raw[start:end]

    @property
    def defs(self) -> AbstractSet[bytes]:
        return self._set(0)

    @property
    def attributes(self) -> AbstractSet[bytes]:
        return self._set(1)

    @property
    def called(self) -> AbstractSet[bytes]:
        """The words written just before `(`, reversed."""
        return self._set(2)

    def attribute_words(self) -> Iterable[bytes]:
        """The words written after a dot, not kept as a set (for one pass over every file)."""
        return self._sets[1] or self._list(1).split()

    def calls_any(self, reversed_names: AbstractSet[bytes]) -> bool:
        """Does the file write one of the names just before `(`? Every file that calls `f`
        (`f(...)`, `x.f (...)`) does. The names are given reversed, as the words are kept:
        turning the few names asked about costs less than turning every word of every file."""
        return not self.called.isdisjoint(reversed_names)


# The identifiers the last search of this process loaded, by cache key (path and stamp): the
# next search (a bisect's next step, the next pair of a lock) takes those of the files it shares.
# One package's worth: each search replaces them.
_LAST_LOADED: dict[str, Identifiers] = {}


def called_words(source: bytes) -> set[bytes]:
    """The words a text writes just before `(`, reversed (as `Identifiers` keeps them: see
    `calls_any`)."""
    return set(_CALLED_REVERSED.findall(source[::-1]))


# How each kind of identifier is read from a file's text: all three kept by `Identifiers`, or one
# by a search in place (`NameSearch.in_place`).
_KIND_WORDS: dict[IdentifierKind, Callable[[bytes], set[bytes]]] = {
    "defs": lambda source: set(_DEFS.findall(source)),
    "attributes": lambda source: set(_ATTRIBUTES.findall(source)),
    "called": called_words,
}


class SiteKind(str, Enum):
    CALL = "call"  # x.name(...)
    READ = "read"  # x.name, or getattr(x, "name") without a default
    DEF = "def"  # def name(...) in a class body


class SiteReceiver(str, Enum):
    SELF = "self"  # self.name / cls.name / self.__class__.name: the object's own class
    SUPER = "super"  # super().name
    OTHER = "other"  # anything else: an object the code was handed


@dataclass(frozen=True)
class NameSite:
    """One use of `name` in provider code."""

    name: str
    kind: SiteKind
    receiver: SiteReceiver
    path: str
    line: int
    cls: str = ""  # the enclosing class's qualname ("" outside classes)
    function: str = ""  # the enclosing function's name
    shape: CallShape | None = None  # for calls
    unpack: int | None = None  # the call's result unpacked into this many names
    # The enclosing function tests for the name (`hasattr(x, "name")`, `getattr(x, "name", default)`).
    guarded: bool = False
    # The receiver is what a method or function returns: `x.get_class().name(...)`, `make().name()`,
    # or a local bound once to `x.get_class()`: that method's name ("" for any other receiver, and
    # for a builtin or `cast`, which may hand on what they were given: `getattr(x, "runner")`).
    source: str = ""
    # The receiver is `self.x`, which the enclosing class sets only to what one callee returns
    # (`self.engine = Engine.from_args(...)`): that callee as written ("" otherwise).
    made_by: str = ""
    # The receiver is `self.x` (or a local bound once to it): x (`engine`).
    attribute: str = ""
    # The call runs only when an attribute of its receiver is true: it sits in the body of
    # `if R.flag:` (or of an `and` of tests holding it), R the receiver as written: "R.flag".
    flag: str = ""
    # The receiver is a name as written that no enclosing function binds (`NewData` in
    # `NewData.from_request(...)`, `output.NewData`): that name ("" for any other receiver).
    named: str = ""
    # The method of `cls` the site is in: `function`, or for a function nested in a method, that
    # method (what a subclass overrides, or a stand-in implements). "" outside classes.
    method: str = ""
    # A call made only where the callable takes a parameter of this name: it sits in the body of
    # `if "p" in inspect.signature(f).parameters:` (or of `sig.parameters`, `sig` bound to one):
    # vLLM 0.11.2 passes a platform's `get_attn_backend_cls` one more argument where it takes `use_v1`.
    taken: str = ""
    # The platforms it surely does not run on: it sits under a test of the platform in the
    # provider's code (`platform_gates`); sorted, empty when it may run on any.
    never: tuple[str, ...] = ()
    # The receiver is a local an `isinstance` test says is an instance of a class (or a subclass),
    # as written: the call sits in the body of `if isinstance(m, C):` (C).
    instance_of: str = ""
    # The receiver is a loop variable over `self.x` (`for m in self.x`, `for i, m in
    # enumerate(self.x)`, `for m in self.x.values()`, `for k, m in self.x.items()`), x a collection
    # whose elements (a mapping whose values) the class says are instances of a class, or of what
    # one callee makes (`syntax.element_makers`): that class or callee as written.
    element_of: str = ""

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


class NameSearch:
    """Sites of names in one provider package of a tree, searched lazily and cached. Which files
    can hold a name is told by every file's identifiers, read once (and cached), or, searching in
    place (`in_place`), by a search of the tree for the name and the identifiers of the files it
    finds; the answers are the same."""

    def __init__(
        self,
        tree: SourceTree,
        package: str,
        cache: AnalysisCache | None = None,
        in_place: bool = False,
        platform: str | None = None,
    ) -> None:
        """`in_place`: read the identifiers of only the files whose lines can write a name asked
        about, found by a search of the tree in place (`SourceTree.files_matching`), rather than
        every file's once (and cached: a bump reads few again). See `search_in_place_unless_read`.
        `platform`: the one the code runs on; a call or read the provider makes only on others
        (`NameSite.never`) is not found (None: any platform may run it)."""
        self.tree = tree
        self.package = package
        self.cache = cache or AnalysisCache()
        self.in_place = in_place
        self.platform = platform
        # What the consumer imports of the provider (every dotted prefix of the names it reaches):
        # a module it imports itself is imported on every platform (`ImportGates`).
        self.consumer_reaches: frozenset[str] = frozenset()
        self._imports: ImportGates | None = None
        # Whether the identifiers it loads become those the next search takes (`_LAST_LOADED`):
        # not a baseline's, which stays where it is while a bisect's pin moves on.
        self.keeps_last = True
        self._reading: Shares | None = None  # the shares of `reading_task`, see `stop_reading`
        self._holding: dict[tuple[IdentifierKind, frozenset[bytes]], frozenset[str]] = {}  # see `_loaded`
        self._words_read: dict[IdentifierKind, dict[str, AbstractSet[bytes]]] = {kind: {} for kind in _KIND_PATTERNS}
        self._identifiers: dict[str, Identifiers] = {}
        self._all_loaded = False
        self._trees: OrderedDict[str, tuple[ast.Module, PlatformGates] | None] = OrderedDict()
        self._looked_up: dict[str, bytes | None] | None = None
        self._memo: dict[tuple[object, ...], dict[str, list[NameSite]]] = {}
        self._read_words: set[bytes] | None = None  # every word written after a dot (`unread`)
        self.parsed = 0
        # Given each file's bytes as its identifiers are read: cache entries some other search
        # makes of them, written with the identifiers (the reach's provider strings).
        self.also_read: Callable[[str, bytes], list[tuple[str, bytes]]] | None = None

    def _files(self) -> list[str]:
        return self.tree.python_files(self.package)

    def fingerprint(self) -> str:
        """One id for the whole package: every file's path and stamp."""
        return self.tree.package_id(self.package)

    def find(
        self, names: Iterable[str], also: Iterable[str] = (), called: Iterable[str] = ()
    ) -> dict[str, list[NameSite]]:
        """Every call and read of each name (as `x.name`). With `also`, only files whose text
        also contains one of those strings are searched (e.g. a keyword `out=` a call must pass);
        names in `called` are looked for only in files that call them on something other than
        `self`, `cls` or `super()` (an object the code was handed)."""
        wanted = tuple(sorted(set(names)))
        calls = tuple(sorted(set(called) & set(wanted)))
        return self._query("uses", wanted, tuple(sorted(set(also))), 0, calls=calls)

    def find_taken(self, name: str) -> list[NameSite]:
        """Calls of `name` through a local bound to `getattr(x, "name", ...)` (`hook()`), in the
        files writing the name as a string; with every other site of the name in those files."""
        return [site for path in self.files_writing_as_string([name]) for site in self.file_sites(path, {name})]

    def find_text(self, names: Iterable[str]) -> dict[str, list[NameSite]]:
        """Calls and reads of each name on something other than `self`, `cls` or `super()`, found
        in the source text without parsing: cheap evidence, for findings that only warn. A file
        that also writes the name as a string (`hasattr(x, "name")`) marks its sites guarded."""
        wanted = tuple(sorted(set(names)))
        if not wanted:
            return {}
        key = "text-query:" + _digest([SITES_FORMAT, self.package, wanted, self.fingerprint()])
        cached = self.cache.get_raw(key)
        sites = _load_sites(cached) if cached is not None else None
        if sites is None:
            sites = []
            encoded = {name.encode() for name in wanted}
            holding = {
                path: _decoded(self._words("attributes", path) & encoded)
                for path in self._loaded("attributes", encoded)
            }
            # Read in one batch: a git tree reads many blobs at once far faster than one by one.
            for path, text in self.tree.read_many([path for path, found in holding.items() if found]):
                prose = ProseFinder(text)  # its triple quotes found once per file, when first asked
                sites += [site for name in sorted(holding[path]) for site in _text_sites(text, path, name, prose)]
            self.cache.put_raw(key, _dump_sites(sites))
        out: dict[str, list[NameSite]] = {name: [] for name in wanted}
        for site in sites:
            out[site.name].append(site)
        return out

    def unread(self, names: Iterable[str]) -> set[str]:
        """Of `names`, those no file of the package writes after a dot (`x.name`), from the
        identifiers (one set of every such word, built on the first question)."""
        left = set(names)
        if not left:
            return set()
        if self.in_place:
            encoded = {name.encode() for name in left}
            paths = self._loaded("attributes", encoded)
            read = {word for path in paths for word in self._words("attributes", path) & encoded}
            return {name for name in left if name.encode() not in read}
        if self._read_words is None:
            self._load_identifiers()
            self._read_words = set()
            for path in self._files():
                self._read_words.update(self._identifiers[path].attribute_words())
        return {name for name in left if name.encode() not in self._read_words}

    def identifiers_cached(self) -> bool:
        """Has a run cached every file's identifiers (a provider locked before: a bump's baseline)?
        One lookup."""
        return self.cache.get_raw(self._all_read_key()) is not None

    def cached_readers(self, names: Iterable[str], paths: list[str]) -> dict[str, list[str]] | None:
        """For each of `names`, the files among `paths` that write it after a dot (`x.name`), in
        their order, from cached identifiers only (a provider at an earlier pin: a bump's
        baseline); None when they are not all cached. Nothing is kept: the identifiers this process
        holds stay those of its own search (a bisect's next step takes them)."""
        if not self.identifiers_cached():
            return None
        wanted = {name.encode() for name in names}
        out: dict[str, list[str]] = {}
        for path in paths:
            found = Identifiers.parse(self.cache.get_raw(self._identifiers_key(path)))
            if found is None:
                return None
            for name in wanted.intersection(found.attribute_words()):
                out.setdefault(name.decode(), []).append(path)
        return out

    def unused(self, names: Iterable[str]) -> set[str]:
        """Of `names`, those no file of the package writes after a dot (`unread`) nor as a string
        (`"name"`, `'name'`): nothing of the provider names them. Only the names left are looked
        for in the text."""
        left = self.unread(names)
        return left - self.written_as_string(left)

    def unwritten(self, names: Iterable[str]) -> set[str]:
        """Of `names`, those no file of the package writes as a word anywhere (an import, a call,
        a string, a comment): nothing of the provider can name them. A search of every file: asked
        of the few names a rule is left with."""
        left = sorted(set(names))
        words = {name: word_pattern(name) for name in left}
        found: set[str] = set()
        paths = self.tree.files_containing(self._files(), [name.encode() for name in left]) if left else []
        for _, text in self.tree.read_many(paths):
            found.update(name for name, word in words.items() if word.search(text))
        return set(left) - found

    def written_as_string(self, names: Iterable[str]) -> set[str]:
        """Of `names`, those a file of the package writes as a string (`"name"`, `'name'`)."""
        return {name for found in self._strings(names).values() for name in found}

    def files_writing_as_string(self, names: Iterable[str]) -> list[str]:
        """The files of the package (in their order) that write one of `names` as a string."""
        return list(self._strings(names))

    def _strings(self, names: Iterable[str]) -> dict[str, set[str]]:
        """Each file writing one of `names` as a string, with those it writes."""
        left = sorted(set(names))
        shapes = [shape for name in left for shape in quoted(name)]
        out: dict[str, set[str]] = {}
        for path, text in self.tree.read_many(self.tree.files_containing(self._files(), shapes) if shapes else []):
            found = {name for name in left if writes_as_string(text, name)}
            if found:
                out[path] = found
        return out

    def files_reading(self, names: Iterable[str]) -> list[str]:
        """The files of the package (in their order) that write one of `names` after a dot
        (`x.name`, `self.name`), from the identifiers: every file reading one of them as an
        attribute is among them."""
        encoded = {name.encode() for name in names}
        return [path for path in self._loaded("attributes", encoded) if self._words("attributes", path) & encoded]

    def files_calling(self, names: Iterable[str], paths: list[str]) -> list[str]:
        """The files among `paths` (in their order) that write one of `names` just before `(`:
        every file that calls one of them, by name or on an attribute, is among them. Nothing is
        read but the identifiers."""
        encoded = {name.encode() for name in names}
        wanted = {name[::-1] for name in encoded}
        return [
            path
            for path in self._loaded("called", encoded, paths)
            if not self._words("called", path).isdisjoint(wanted)
        ]

    def load(self) -> None:
        """Every file's identifiers in memory now: a process forked after has them at no cost
        (and never reads this process's cache). Nothing searching in place (`in_place`)."""
        if not self.in_place:
            self._load_identifiers()

    def files_defining(self, requests: list[tuple[AbstractSet[str], int]], at_most: int = 0) -> list[list[str]]:
        """For each (names, at_least) request: the files that define (`def`) at least `at_least`
        of the names; none when more than `at_most` files do (0: no limit). Nothing is parsed, and
        nothing is read when no name is asked about."""
        wanted = [(sorted(names), at_least) for names, at_least in requests]
        if not any(names for names, _ in wanted):
            return [[] for _ in wanted]
        key = "defs-query:" + _digest([SITES_FORMAT, self.package, wanted, at_most, self.fingerprint()])
        cached = _json(self.cache.get_raw(key))
        if isinstance(cached, list) and all(isinstance(files, list) for files in cached):
            return cached
        asked = {name.encode() for names, _ in wanted for name in names}
        defined_in: dict[bytes, list[str]] = {}
        for path in self._loaded("defs", asked):
            for name in self._words("defs", path) & asked:
                defined_in.setdefault(name, []).append(path)
        answer = []
        for names, at_least in wanted:
            counts = Counter(path for name in names for path in defined_in.get(name.encode(), ()))
            files = sorted(path for path, n in counts.items() if n >= max(at_least, 1))
            answer.append(files if not at_most or len(files) <= at_most else [])
        self.cache.put_raw(key, json.dumps(answer).encode())
        return answer

    def _query(
        self,
        kind: str,
        wanted: tuple[str, ...],
        also: tuple[str, ...],
        at_least: int,
        at_most_files: int = 0,
        calls: tuple[str, ...] = (),
    ) -> dict[str, list[NameSite]]:
        if not wanted:
            return {}
        memo_key = (kind, wanted, also, at_least, at_most_files, calls)
        if memo_key in self._memo:
            return self._memo[memo_key]
        parts = [SITES_FORMAT, self.package, kind, wanted, also, at_least, at_most_files, calls, self.fingerprint()]
        key = "name-query:" + _digest(parts)
        cached = self.cache.get_raw(key)
        sites = _load_sites(cached) if cached is not None else None
        if sites is None:
            sites = self._search(kind, set(wanted), also, at_least, at_most_files, set(calls))
            self.cache.put_raw(key, _dump_sites(sites))
        out: dict[str, list[NameSite]] = {name: [] for name in wanted}
        for site in self._on_platform(sites):
            out[site.name].append(site)
        self._memo[memo_key] = out
        return out

    def _on_platform(self, sites: list[NameSite]) -> list[NameSite]:
        """The sites that may run on the platform (all of them when none is given): neither under
        a test of it that fails there, nor in a module nothing imports there."""
        platform = self.platform
        if platform is None:
            return sites
        return [s for s in sites if s.kind is SiteKind.DEF or self.runs_on(platform, s.never, s.path)]

    def runs_on(self, platform: str, never: tuple[str, ...], path: str) -> bool:
        """May code of the provider file at `path`, under tests of the platform that fail on
        `never` (`NameSite.never`, `RawCall.never`), run on `platform`: is it neither under such a
        test nor in a module nothing imports there (`ImportGates`)?"""
        return platform not in never and platform not in self._module_never(path)

    def _module_never(self, path: str) -> frozenset[str]:
        if self._imports is None:  # (what the consumer reaches is read when asked: set after its scan)
            self._imports = ImportGates(
                self.tree,
                lambda word: self.files_reading([word]),
                lambda module: module in self.consumer_reaches,
            )
        return self._imports.never(path)

    def _search(
        self, kind: str, names: set[str], also: tuple[str, ...], at_least: int, at_most_files: int, calls: set[str]
    ) -> list[NameSite]:
        matched: list[tuple[str, frozenset[str]]] = []
        encoded = {name.encode() for name in names}
        identifier_kind: IdentifierKind = "defs" if kind == "defs" else "attributes"
        for path in self._loaded(identifier_kind, encoded):
            found = _decoded(self._words(identifier_kind, path) & encoded)
            if found & calls:
                text = self.tree.read(path)
                found = frozenset(n for n in found if n not in calls or _called_on_others(text, n))
            if not found or len(found) < at_least:
                continue
            if also and not any(a.encode() in self.tree.read(path) for a in also):
                continue
            matched.append((path, found))
        if at_most_files and len(matched) > at_most_files:
            return []
        wanted = {SiteKind.DEF} if kind == "defs" else {SiteKind.CALL, SiteKind.READ}
        return [s for path, found in matched for s in self._file_sites(path, found) if s.kind in wanted]

    def class_methods(self, path: str) -> dict[str, set[str]]:
        """The methods each class of a file defines itself (qualname -> names), read from the text
        by indentation, without parsing: enough to rank candidate classes before indexing any."""
        key = "class-methods:" + _digest([SITES_FORMAT, path, self.tree.stamp(path)])
        cached = _json(self.cache.get_raw(key))
        if isinstance(cached, dict) and all(isinstance(names, list) for names in cached.values()):
            return {cls: set(names) for cls, names in cached.items()}
        out: dict[str, set[str]] = {}
        for _, blocks in open_blocks(self.tree.read(path)):
            *outer, (_, kind, name) = blocks
            if kind == "def" and outer and outer[-1][1] == "class":
                out[".".join(b[2] for b in outer)].add(name)
            if kind == "class":
                out.setdefault(".".join(b[2] for b in blocks), set())
        self.cache.put_raw(key, json.dumps({cls: sorted(names) for cls, names in out.items()}).encode())
        return out

    def _loaded(self, kind: IdentifierKind, names: AbstractSet[bytes], paths: list[str] | None = None) -> list[str]:
        """The files among `paths` (default: every file of the package) whose identifiers of `kind`
        may hold one of `names`, those identifiers at hand (`_words`): every file, or, searching in
        place, those with a line that can write one (`_KIND_PATTERNS`, searched once per question),
        whose identifiers of that kind alone are read."""
        files = self._files() if paths is None else paths
        if not self.in_place:
            self._load_identifiers()
            return files
        key = (kind, frozenset(names))
        if key not in self._holding:
            self._holding[key] = self._files_matching(kind, sorted(names))
        holding = self._holding[key]
        found = [path for path in files if path in holding]
        # Kept in memory, not cached: the next run searches in place again, and reads as few.
        words = self._words_read[kind]
        for path, source in self.tree.read_many([path for path in found if path not in words]):
            words[path] = _KIND_WORDS[kind](source)
        return found

    def _files_matching(self, kind: IdentifierKind, names: list[bytes]) -> frozenset[str]:
        """The package's files with a line that can write one of `names` as `kind`, a few hundred
        names a search (git's Perl expressions take patterns of some 30 kB at most); on a tree
        that cannot search with them in place (a git commit), those holding one of the names at
        all (`SourceTree.files_containing`: a git tree greps for them)."""
        if not self.tree.searches_in_place:
            return frozenset(self.tree.files_containing(self._files(), names))
        found: set[str] = set()
        for start in range(0, len(names), _NAMES_PER_SEARCH):
            alternatives = "|".join(re.escape(name.decode()) for name in names[start : start + _NAMES_PER_SEARCH])
            patterns = [each.format(names=f"(?:{alternatives})") for each in _KIND_PATTERNS[kind]]
            found.update(self.tree.files_matching(self._files(), patterns))
        return frozenset(found)

    def _words(self, kind: IdentifierKind, path: str) -> AbstractSet[bytes]:
        """A file's identifiers of `kind` (the called words reversed), once `_loaded`."""
        if self.in_place:
            return self._words_read[kind][path]
        identifiers = self._identifiers[path]
        if kind == "defs":
            return identifiers.defs
        return identifiers.attributes if kind == "attributes" else identifiers.called

    def _load_identifiers(self) -> None:
        """Every file's identifiers, in memory: those this process read are kept as they were read
        (a process forked later has them at no cost), those the last search of this process held
        are taken from it (a bisect's next step changes few files), cached ones are taken by stamp
        (or as sent by a second process), the others read in one batch."""
        if self._all_loaded:
            return
        missing: list[str] = []
        for path, cached in self._lookup().items():
            if path in self._identifiers:
                continue
            # A file a second process read since the lookup is in the cache now.
            found = Identifiers.parse(cached or self.cache.get_raw(self._identifiers_key(path)))
            if found is None:
                missing.append(path)
            else:
                self._identifiers[path] = found
        for key, entry in self._read_identifiers(missing):
            self.cache.put_raw(key, entry)
        self.cache.put_raw(self._all_read_key(), b"1")
        self._all_loaded = True
        if self.keeps_last:
            _LAST_LOADED.clear()
            _LAST_LOADED.update((self._identifiers_key(path), found) for path, found in self._identifiers.items())

    def _read_identifiers(self, paths: list[str]) -> list[tuple[str, bytes]]:
        """(cache key, entry) of each file's identifiers, read from its text (and kept here), and
        what `also_read` makes of it."""
        out = []
        also = self.also_read
        for path, source in self.tree.read_many(paths):
            found = self._identifiers[path] = Identifiers.read(source)
            out.append((self._identifiers_key(path), found.raw))
            if also is not None:
                out += also(path, source)
        return out

    def reading_task(self) -> Task | None:
        """Read the identifiers of every file not cached yet, share by share (`prefetch.Shares`):
        the task may run in several processes at once (a second one started now, this one once it
        is free), each reading the next share until none is left, and returns what it read. None
        when they are cached, too few are missing to pay for a process, or the files are searched
        in place (`in_place`)."""
        missing = [] if self.in_place else self._unread()
        if not missing:
            return None
        count = min(_SHARES, len(missing))
        parts = [missing[i::count] for i in range(count)]  # every count-th file: shares of a like size
        shares = self._reading = Shares(count)
        return lambda: [entry for share in shares for entry in self._read_identifiers(parts[share])]

    def stop_reading(self) -> None:
        """Leave unread the shares of `reading_task` no process has taken yet: a process reading
        them stops after its share."""
        if self._reading is not None:
            self._reading.take_rest()

    def search_in_place_unless_read(self) -> None:
        """From now on, search the files in place (`in_place`) where the tree does so (a folder,
        with git's grep) and the identifiers are not all at hand: a question then costs a search
        and the reading of the few files it finds, far less than reading every file. A process
        that read them while the consumer was scanned (a big consumer takes long enough) has them
        at hand."""
        if not self.in_place and self.tree.searches_in_place and not self.all_cached():
            self.in_place = True

    def all_cached(self) -> bool:
        """Are every file's identifiers at hand, in memory or in the cache (nothing to read)?
        Searching in place, nothing is read ahead."""
        if self._all_loaded or self.in_place:
            return True
        looked_up = self._lookup()
        for path, cached in looked_up.items():
            if cached is None:  # a second process may have read it since it was looked up
                cached = looked_up[path] = self.cache.get_raw(self._identifiers_key(path))
                if cached is None:
                    return False
        return True

    def _unread(self) -> list[str]:
        """The files whose identifiers are not cached; none when too few are to pay for a process."""
        if self.cache.get_raw(self._all_read_key()) is not None:
            return []  # every file's identifiers are cached: nothing to read
        missing = [path for path, cached in self._lookup().items() if cached is None]
        return missing if len(missing) >= _MIN_UNREAD else []

    def _lookup(self) -> dict[str, bytes | None]:
        """Every file's cached identifiers entry (None: not cached), looked up once; a file whose
        identifiers the last search of this process held takes them (and is left out)."""
        if self._looked_up is None:
            self._looked_up = {}
            for path in self._files():
                key = self._identifiers_key(path)
                held = _LAST_LOADED.get(key)
                if held is not None:
                    self._identifiers.setdefault(path, held)
                else:
                    self._looked_up[path] = self.cache.get_raw(key)
        return self._looked_up

    def collect(self, worker: Worker | None) -> None:
        """Take in the identifiers a second process read."""
        if worker is not None:
            worker.collect_into(self.cache)

    def _all_read_key(self) -> str:
        """Set once every file's identifiers are cached (one lookup instead of one per file)."""
        return f"identifiers-all:{SITES_FORMAT}:{self.package}:{self.fingerprint()}"

    def _identifiers_key(self, path: str) -> str:
        return f"identifiers:{SITES_FORMAT}:{path}:{self.tree.stamp(path)}"

    def _parse(self, path: str) -> tuple[ast.Module, PlatformGates] | None:
        """A file's syntax tree and its tests of the platform; the last few are kept, as queries
        often meet the same files."""
        if path in self._trees:
            self._trees.move_to_end(path)
            return self._trees[path]
        source = self.tree.read(path)
        try:
            parsed = parse_limited(source)
            tree: tuple[ast.Module, PlatformGates] | None = (parsed, PlatformGates.read(parsed, source))
        except (SyntaxError, ValueError):
            tree = None
        self.parsed += 1
        self._trees[path] = tree
        if len(self._trees) > _KEEP_TREES:
            self._trees.popitem(last=False)
        return tree

    def file_sites(self, path: str, names: AbstractSet[str]) -> list[NameSite]:
        """Every call and read of `names` in one file (cached by its content); none when it is not here."""
        return self._on_platform(self._file_sites(path, names)) if path in self.tree.files else []

    def _file_sites(self, path: str, names: AbstractSet[str]) -> list[NameSite]:
        content = self.tree.content_id(path)
        keys = {name: "name-sites:" + _digest([SITES_FORMAT, content, path, name]) for name in names}
        out: list[NameSite] = []
        missing: set[str] = set()
        for name, key in keys.items():
            cached = self.cache.get_raw(key)
            found = _load_sites(cached) if cached is not None else None
            if found is None:
                missing.add(name)
            else:
                out += found
        if missing:
            parsed = self._parse(path)
            try:
                extracted = sites_in(*parsed, path, missing) if parsed is not None else []
            except RecursionError:  # hostile nesting: this file's uses are unknown
                extracted = []
            for name in sorted(missing):
                mine = [s for s in extracted if s.name == name]
                self.cache.put_raw(keys[name], _dump_sites(mine))
                out += mine
        return out


def open_blocks(text: bytes) -> Iterator[tuple[int, tuple[tuple[int, str, str], ...]]]:
    """Each line of `text` opening a class or a function, told by indentation without parsing: its
    offset, and the blocks open there, outermost first and itself last, each (indentation,
    "class" | "def", name)."""
    stack: list[tuple[int, str, str]] = []
    for match in _BLOCK.finditer(text):
        indent = len(match.group(1).expandtabs())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match.group(2).decode(), match.group(3).decode()))
        yield match.start(), tuple(stack)


_OWN_RECEIVER = re.compile(rb"(?<![\w.])(?:self|cls|super\(\))\s*$")

# The start of an import statement's line up to a module path being written (`from a.b`,
# `import a.b`): a name after a dot there is a module's, not an attribute read.
_IMPORT_PATH = re.compile(rb"[ \t]*(?:from[ \t]+[\w.]*|import[ \t]+[\w., \t]*)")


def _text_sites(text: bytes, path: str, name: str, prose: ProseFinder) -> list[NameSite]:
    """`x.name(...)` and `x.name` on receivers other than self/cls/super(), from the text alone
    (not in a comment or a docstring, `prose`'s: "# AttentionBackend.name()" is no use)."""
    needle = b"." + name.encode()
    guarded = writes_as_string(text, name)
    found: list[tuple[SiteKind, int]] = []
    start = 0
    while (i := text.find(needle, start)) >= 0:
        start = i + 1
        end = i + len(needle)
        after = text[end : end + 64]
        if after[:1].isalnum() or after[:1] == b"_":
            continue  # a longer name
        rest = after.lstrip(b" \t")
        if rest.startswith(b"=") and not rest.startswith(b"=="):
            continue  # an assignment, not a use
        if _OWN_RECEIVER.search(text[max(0, i - 16) : i]):
            continue
        if _IMPORT_PATH.fullmatch(text, text.rfind(b"\n", 0, i) + 1, i):
            continue  # `from vllm.v1.engine.input_processor import ...`
        if prose.at(i):
            continue
        found.append((SiteKind.CALL if rest.startswith(b"(") else SiteKind.READ, i))
    lines = line_numbers(text, (i for _, i in found))
    return [NameSite(name, kind, SiteReceiver.OTHER, path, lines[i], guarded=guarded) for kind, i in found]


def _called_on_others(text: bytes, name: str) -> bool:
    """Does the source call `.name(` on something other than `self`, `cls` or `super()`?"""
    needle = b"." + name.encode()
    start = 0
    while (i := text.find(needle, start)) >= 0:
        start = i + 1
        rest = text[i + len(needle) : i + len(needle) + 64].lstrip(b" \t")
        if not rest.startswith(b"("):
            continue  # a longer name, or a read
        if _OWN_RECEIVER.search(text[max(0, i - 16) : i]):
            continue
        return True
    return False


def _decoded(names: AbstractSet[bytes]) -> frozenset[str]:
    return frozenset(name.decode() for name in names)


def _json(data: bytes | None) -> object:
    """A cached JSON value; None when absent or not JSON (a damaged cache entry is a miss)."""
    if data is None:
        return None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None


def _dump_sites(sites: list[NameSite]) -> bytes:
    """Sites as compact JSON rows (plain json: cheaper to load than a validated model)."""
    rows = [
        [
            s.name,
            s.kind.value,
            s.receiver.value,
            s.path,
            s.line,
            s.cls,
            s.function,
            [s.shape.positional, list(s.shape.keywords), s.shape.star, s.shape.starstar] if s.shape else None,
            s.unpack,
            s.guarded,
            s.source,
            s.made_by,
            s.attribute,
            s.flag,
            s.named,
            s.method,
            s.taken,
            list(s.never),
            s.instance_of,
            s.element_of,
        ]
        for s in sites
    ]
    return json.dumps(rows).encode()


def _load_sites(data: bytes) -> list[NameSite] | None:
    """Sites back from `_dump_sites`; None when the entry does not have that shape (stale or damaged)."""
    try:
        return [
            NameSite(
                name,
                SiteKind(kind),
                SiteReceiver(receiver),
                path,
                line,
                cls,
                function,
                CallShape(shape[0], tuple(shape[1]), shape[2], shape[3]) if shape else None,
                unpack,
                guarded,
                source,
                made_by,
                attribute,
                flag,
                named,
                method,
                taken,
                tuple(never),
                instance_of,
                element_of,
            )
            for (
                name,
                kind,
                receiver,
                path,
                line,
                cls,
                function,
                shape,
                unpack,
                guarded,
                source,
                made_by,
                attribute,
                flag,
                named,
                method,
                taken,
                never,
                instance_of,
                element_of,
            ) in json.loads(data)
        ]
    except (ValueError, TypeError, IndexError, UnicodeDecodeError):
        return None


def _digest(parts: object) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def sites_in(tree: ast.Module, gates: PlatformGates, path: str, names: AbstractSet[str]) -> list[NameSite]:
    """Every call, read and method definition of `names` in one file's syntax tree (`gates`: its
    tests of the platform)."""
    visitor = _SiteVisitor(path, names, gates)
    visitor.visit(tree)
    return visitor.sites


class _SiteVisitor(ast.NodeVisitor):
    def __init__(self, path: str, names: AbstractSet[str], gates: PlatformGates) -> None:
        self.path = path
        self.names = names
        self.gates = gates
        self.sites: list[NameSite] = []
        self.classes: list[str] = []
        self.class_nodes: list[ast.ClassDef] = []  # the enclosing classes, as `classes`
        self.makers: dict[int, dict[str, str]] = {}  # a class's `_attribute_makers`, read when asked for
        self.functions: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]] = []  # (def, its receiver)
        self.guarded: dict[int, frozenset[str]] = {}
        self.locals: dict[int, dict[str, ast.expr | None]] = {}  # a function's bindings (`syntax.local_values`)
        self.unpacked: dict[int, int] = {}
        self.called: set[int] = set()
        self.flags: list[str] = []  # the `R.flag` tests whose `if` body is being visited, innermost last
        self.taken: list[str] = []  # the parameters `"p" in sig.parameters` tests there ask about
        # The `isinstance(name, C)` tests whose `if` body is being visited (name, C, the `if`), and
        # the loops whose body is, innermost last: in the function being visited.
        self.tested: list[tuple[str, str, ast.If]] = []
        self.loops: list[ast.For | ast.AsyncFor] = []
        self.elements: dict[int, dict[str, str]] = {}  # a class's `element_makers`, read when asked for
        self.dicts: dict[int, dict[str, tuple[str, ...]]] = {}  # a function's `keyword_dicts`, read when asked for
        # Every enclosing function, class bodies between them included (`_named`).
        self.enclosing: list[ast.FunctionDef | ast.AsyncFunctionDef] = []

    def _site(self, node: ast.AST, name: str, kind: SiteKind, receiver: SiteReceiver, **extra: object) -> None:
        function, method, guarded = "", "", frozenset[str]()
        if self.functions:
            # A class body starts its own stack of functions (`visit_ClassDef`): the first is a method.
            method = self.functions[0][0].name if self.classes and kind is not SiteKind.DEF else ""
            node_def = self.functions[-1][0]
            function = node_def.name
            if id(node_def) not in self.guarded:
                self.guarded[id(node_def)] = _guarded_names(node_def, self.names)
            guarded = self.guarded[id(node_def)]
        self.sites.append(
            NameSite(
                name,
                kind,
                receiver,
                self.path,
                getattr(node, "lineno", 0),
                cls=".".join(self.classes),
                function=function,
                guarded=name in guarded,
                method=method,
                never=self.gates.never(node) if kind is not SiteKind.DEF else (),
                **extra,  # type: ignore[arg-type]
            )
        )

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in self.names:
                self.classes.append(node.name)
                self._site(stmt, stmt.name, SiteKind.DEF, SiteReceiver.SELF)
                self.classes.pop()
        self.classes.append(node.name)
        self.class_nodes.append(node)
        saved, self.functions = self.functions, []
        self.generic_visit(node)
        self.functions = saved
        self.class_nodes.pop()
        self.classes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = [*node.args.posonlyargs, *node.args.args]
        receiver = args[0].arg if args and self.classes and not self.functions else ""
        if self.functions and not receiver:
            receiver = self.functions[-1][1]  # a closure inside a method sees the method's self
        self.functions.append((node, receiver))
        self.enclosing.append(node)
        saved, self.flags = self.flags, []  # a function defined in an `if` body runs when called
        saved_taken, self.taken = self.taken, []
        saved_tested, saved_loops, self.tested, self.loops = self.tested, self.loops, [], []
        self.generic_visit(node)
        self.flags, self.taken = saved, saved_taken
        self.tested, self.loops = saved_tested, saved_loops
        self.enclosing.pop()
        self.functions.pop()

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        test = node.test
        tests = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        flags = [text for text in (dotted(t) for t in tests if isinstance(t, ast.Attribute)) if text]
        taken = [name for name in map(_parameter_tested, tests) if name]
        tested = [(name, cls, node) for name, cls in map(_instance_tested, tests) if name]
        self.flags += flags
        self.taken += taken
        self.tested += tested
        for stmt in node.body:
            self.visit(stmt)
        del self.flags[len(self.flags) - len(flags) :]
        del self.taken[len(self.taken) - len(taken) :]
        del self.tested[len(self.tested) - len(tested) :]
        for stmt in node.orelse:
            self.visit(stmt)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.target)
        self.visit(node.iter)
        self.loops.append(node)
        for stmt in node.body:
            self.visit(stmt)
        self.loops.pop()
        for stmt in node.orelse:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0], (ast.Tuple, ast.List)):
            target = node.targets[0]
            if isinstance(node.value, ast.Call) and not any(isinstance(e, ast.Starred) for e in target.elts):
                self.unpacked[id(node.value)] = len(target.elts)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in self.names:
            self.called.add(id(func))
            self._site(
                node,
                func.attr,
                SiteKind.CALL,
                self._receiver(func.value),
                shape=shape_of(node, self._keyword_dicts(node)),
                unpack=self.unpacked.get(id(node)),
                source=self._source(func.value),
                flag=self._flag(func.value),
                taken=self.taken[-1] if self.taken else "",
                named=self._named(func.value),
                **self._instance_of(func.value),
                **self._made_by(func.value),
            )
        elif dotted(func) == "getattr" and len(node.args) == 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and name.value in self.names:
                self._site(node, str(name.value), SiteKind.READ, self._receiver(node.args[0]))
        elif isinstance(func, ast.Name) and (taken := self._taken_method(func)) is not None:
            # `hook = getattr(module, "name", None)` then `hook()`: a call of the method on module
            # (vLLM 0.34's loader runs every module's `process_weights_after_loading` so).
            method, receiver = taken
            self._site(
                node,
                method,
                SiteKind.CALL,
                self._receiver(receiver),
                shape=shape_of(node, self._keyword_dicts(node)),
                unpack=self.unpacked.get(id(node)),
                **self._instance_of(receiver),
            )
        self.generic_visit(node)

    def _taken_method(self, func: ast.Name) -> tuple[str, ast.expr] | None:
        """(the name, the object) when the local `func` is bound once to `getattr(x, "name")` or
        `getattr(x, "name", default)`, name one of those searched."""
        value = self._value(func)
        if not (isinstance(value, ast.Call) and dotted(value.func) == "getattr" and len(value.args) in (2, 3)):
            return None
        name = value.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value in self.names:
            return name.value, value.args[0]
        return None

    def _keyword_dicts(self, call: ast.Call) -> dict[str, tuple[str, ...]]:
        """The enclosing function's `keyword_dicts`, where the call passes `**name`."""
        if not self.functions or not spreads_a_name(call):
            return {}
        function = self.functions[-1][0]
        if id(function) not in self.dicts:
            self.dicts[id(function)] = keyword_dicts(function)
        return self.dicts[id(function)]

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in self.names and id(node) not in self.called and isinstance(node.ctx, ast.Load):
            self._site(node, node.attr, SiteKind.READ, self._receiver(node.value))
        self.generic_visit(node)

    def _flag(self, receiver: ast.expr) -> str:
        """The innermost `R.flag` test around this call whose R is the call's receiver as written."""
        written = dotted(receiver) if isinstance(receiver, (ast.Name, ast.Attribute)) else ""
        return next((f for f in reversed(self.flags) if written and f.rpartition(".")[0] == written), "")

    def _named(self, receiver: ast.expr) -> str:
        """The receiver as written when it is a name, or a dotted path from one, that no enclosing
        function binds: a module-level name (`NewData`, `output.NewData`)."""
        written = dotted(receiver) if isinstance(receiver, (ast.Name, ast.Attribute)) else ""
        root = written.partition(".")[0]
        if not root or root in {"self", "cls"}:
            return ""
        own = self.functions[-1][1] if self.functions else ""
        if root == own:
            return ""
        for function in self.enclosing:  # a class body between does not hide an outer binding
            if id(function) not in self.locals:
                self.locals[id(function)] = local_values(function)
            if root in self.locals[id(function)]:
                return ""
        return written

    def _value(self, node: ast.expr) -> ast.expr:
        """What a local holds that the function binding it (this one, or one it is nested in)
        binds once (`b = x.get()`); else `node`."""
        if not isinstance(node, ast.Name):
            return node
        for function, _ in reversed(self.functions):
            if id(function) not in self.locals:
                self.locals[id(function)] = local_values(function)
            bindings = self.locals[id(function)]
            if node.id in bindings:
                return bindings[node.id] or node
        return node

    def _source(self, node: ast.expr) -> str:
        """The method or function whose result the receiver is: `x.m()`, `f()`, or a local bound
        once to one."""
        node = self._value(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return node.func.attr
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in _HANDING_ON:
            return node.func.id
        return ""

    def _made_by(self, node: ast.expr) -> dict[str, str]:
        """For a receiver `self.x` (or a local bound once to it) in a method: x, and the one callee
        whose result the class stores in x, if there is one (the `NameSite` fields)."""
        node = self._value(node)
        own = self.functions[-1][1] if self.functions else ""
        if own and self.class_nodes and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == own:
                cls = self.class_nodes[-1]
                if id(cls) not in self.makers:
                    self.makers[id(cls)] = _attribute_makers(cls)
                return {"made_by": self.makers[id(cls)].get(node.attr, ""), "attribute": node.attr}
        return {}

    def _instance_of(self, receiver: ast.expr) -> dict[str, str]:
        """`NameSite.instance_of` and `element_of` for a call on `receiver` (the fields set)."""
        if not isinstance(receiver, ast.Name):
            return {}
        name = receiver.id
        out = {}
        for tested, cls, test in reversed(self.tested):
            if tested == name:
                if not _binds(test.body, name):
                    out["instance_of"] = cls
                break
        own = self.functions[-1][1] if self.functions else ""
        for loop in reversed(self.loops):
            bound, over, part = _loop_binding(loop, name)
            if not bound:
                continue
            if own and self.class_nodes and isinstance(over, ast.Attribute) and is_name(over.value, own):
                if not _binds(loop.body, name):
                    holder = self.class_nodes[-1]
                    if id(holder) not in self.elements:
                        self.elements[id(holder)] = element_makers(holder)
                    if made := self.elements[id(holder)].get(f"{over.attr}.{part}" if part else over.attr, ""):
                        out["element_of"] = made
            break
        return out

    def _receiver(self, node: ast.expr) -> SiteReceiver:
        own = self.functions[-1][1] if self.functions else ""
        if isinstance(node, ast.Call) and dotted(node.func) == "super":
            return SiteReceiver.SUPER
        if isinstance(node, ast.Name) and node.id in {own, "self", "cls"} - {""}:
            return SiteReceiver.SELF
        if isinstance(node, ast.Attribute) and node.attr == "__class__" and isinstance(node.value, ast.Name):
            return SiteReceiver.SELF if node.value.id in {own, "self"} else SiteReceiver.OTHER
        if isinstance(node, ast.Call) and dotted(node.func) == "type" and len(node.args) == 1:
            arg = node.args[0]
            return SiteReceiver.SELF if isinstance(arg, ast.Name) and arg.id in {own, "self"} else SiteReceiver.OTHER
        return SiteReceiver.OTHER


def _attribute_makers(node: ast.ClassDef) -> dict[str, str]:
    """The attributes a class's methods set on their instance only to the result of one callee
    (`self.engine = Engine.from_args(...)`): attribute -> that callee as written. An attribute also
    set any other way in the class (another value, a tuple target, `+=`, `setattr`) is left out."""
    makers = instance_assignments(node)
    if "*" in makers:  # `setattr(self, name, ...)` with a name not written here: any attribute
        return {}
    return {
        attr: callees.pop()
        for attr, callees in makers.items()
        if len(callees) == 1 and not callees & {"*", FALSE_CONSTANT}
    }


def _guarded_names(node: ast.FunctionDef | ast.AsyncFunctionDef, names: AbstractSet[str]) -> frozenset[str]:
    """Names the function tests for with `hasattr(x, "n")` or reads with `getattr(x, "n", default)`."""
    out: set[str] = set()
    for call in walk(node):
        if not isinstance(call, ast.Call) or len(call.args) < 2:
            continue
        name = call.args[1]
        if not (isinstance(name, ast.Constant) and name.value in names):
            continue
        func = dotted(call.func)
        if func == "hasattr" or (func == "getattr" and (len(call.args) >= 3 or call.keywords)):
            out.add(str(name.value))
    return frozenset(out)


def _instance_tested(test: ast.expr) -> tuple[str, str]:
    """(name, C) for a test `isinstance(name, C)`, C one class as written; ("", "") otherwise."""
    match test:
        case ast.Call(func=ast.Name(id="isinstance"), args=[ast.Name(id=name), ast.Name() | ast.Attribute() as cls]):
            written = dotted(cls)
            return (name, written) if written and not test.keywords else ("", "")
    return "", ""


def _loop_binding(loop: ast.For | ast.AsyncFor, name: str) -> tuple[bool, ast.expr | None, str]:
    """Does the loop's target bind `name`, and to the elements of what: `for name in X` and `for
    i, name in enumerate(X)` give X, ""; `for name in X.values()` and `for k, name in X.items()`
    give X, "values()" (a mapping's values); any other target binding it, None."""
    target, over = loop.target, loop.iter
    if isinstance(target, ast.Name):
        if target.id != name:
            return False, None, ""
        match over:
            case ast.Call(func=ast.Attribute(value=mapping, attr="values"), args=[], keywords=[]):
                return True, mapping, "values()"
        return True, over, ""
    if not any(isinstance(t, ast.Name) and t.id == name for t in walk(target)):
        return False, None, ""
    match target, over:
        case ast.Tuple(elts=[ast.Name(), ast.Name(id=second)]), ast.Call(func=ast.Name(id="enumerate"), args=[inner]):
            if second == name and not over.keywords:
                return True, inner, ""
        case ast.Tuple(elts=[ast.Name(), ast.Name(id=second)]), ast.Call(
            func=ast.Attribute(value=mapping, attr="items"), args=[], keywords=[]
        ):
            if second == name:
                return True, mapping, "values()"
    return True, None, ""


def _binds(body: list[ast.stmt], name: str) -> bool:
    """Does a statement of `body` (nested ones too) bind `name`?"""
    return any(
        isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load)
        for stmt in body
        for node in walk(stmt)
    )


def _parameter_tested(test: ast.expr) -> str:
    """The parameter `"p" in X.parameters` tests for (X an `inspect.signature(...)`, or a name
    bound to one: a `parameters` mapping tested with a string is a signature's); "" otherwise."""
    match test:
        case ast.Compare(
            left=ast.Constant(value=str(name)), ops=[ast.In()], comparators=[ast.Attribute(attr="parameters")]
        ):
            return name
    return ""
