"""Consumer methods, functions and classes nothing calls or names: an error found only inside them is a warning.

A platform plugin written against older releases keeps methods the provider has stopped
calling, and their bodies name what the provider has since removed (vllm-kunlun's
`KunlunPlatform.is_hpu` returns `self._enum == PlatformEnum.HPU`; vLLM 0.11 has neither an
`is_hpu` nor `PlatformEnum.HPU`). Such a body never runs, so what it names cannot break the
plugin. A method counts as called by nobody when all of these hold:

- its class, or a consumer class deriving from it, is handed to the provider (a platform named
  by its dotted path, a registered model): the provider makes its objects, not the plugin's
  users, who may call a public method of a class of the plugin's own API;
- it is not special (`__init__`, `__call__`) and has no decorator but `classmethod`,
  `staticmethod` or a property's (a decorator may register it somewhere);
- no class of the order of its class, or of a consumer class deriving from it, is a provider
  class that defines the name, or a class from outside both (either may call it as its own);
- no provider file names it after a dot or as a string (`NameSearch.unused`);
- no consumer file reads it after a dot outside a function of that name, or writes it as a
  string (`ConsumerText.reads`).

A call by a name computed at run time (`getattr(self, f"is_{name}")`) is not seen: the finding
stays, as a warning that says why.

The same holds for a private function at a module's top level (`_name`, so no user of the plugin
calls it) that has no decorator, that no consumer file names anywhere else (in code or a one-line
string: a patch installing it or a callback passed on name it; an import names it only under
another name, `import _f as g`) but in patches installing it under a name the baseline had and
nothing reads any more, and that no provider code can reach (`provider_silence`):
vllm-mindspore keeps `_aclgraph_capture_dummy_run` beside the `GPUModelRunner` methods it
installs, and installs it nowhere; it installs `_get_num_input_tokens` only on vLLM's
`GPUModelRunner`, which dropped the method at 0.13. Which function holds a site is read from
the file's text: the nearest line above it that starts at the left margin in code must be its
`def`.

In a plugin, a class nothing names is never made but by a configuration naming it
(`UnnamedClasses`): vllm-omni's OmniVoice module keeps a multimodal processor it registers nowhere.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet

from atompin.analysis.demotion import demote_hidden
from atompin.analysis.hierarchy import PLAIN_BASES, ConsumerRef, Hierarchy
from atompin.analysis.names import word_pattern
from atompin.analysis.prose import ProseFinder
from atompin.analysis.provider import ClassRef
from atompin.analysis.usage import ConsumerClass, ConsumerMethod
from atompin.lines import line_starts
from atompin.model import Finding, Severity, Site
from atompin.sources.tree import SourceTree

# Decorators that change how a method binds or is read, not who may call it.
_PLAIN_DECORATORS = {"classmethod", "staticmethod", "property", "cached_property", "functools.cached_property"}


class UncalledMethods:
    """Which consumer methods nothing calls (see the module docstring), asked site by site."""

    def __init__(
        self,
        hierarchy: Hierarchy,
        provider_unused: Callable[[Iterable[str]], set[str]],
        consumer_reads: Callable[[list[str]], set[str]],
    ) -> None:
        """`provider_unused`: of some names, those no provider file names (`NameSearch.unused`);
        `consumer_reads`: of some names, those a consumer file reads (`ConsumerText.reads`)."""
        self.hierarchy = hierarchy
        self.provider_unused = provider_unused
        self.consumer_reads = consumer_reads
        self._by_path: dict[str, list[tuple[ConsumerClass, ConsumerMethod]]] = {}
        for cls in hierarchy.classes.values():
            if not cls.muted:
                for method in cls.methods:
                    self._by_path.setdefault(cls.path, []).append((cls, method))
        self._judged: dict[tuple[str, str], bool] = {}
        self._handed = {handover.target for handover in hierarchy.usage.contact.handovers}

    def enclosing(self, site: Site) -> tuple[ConsumerClass, ConsumerMethod] | None:
        """The consumer method whose definition holds `site` (the innermost, for a class in a method)."""
        holding = [
            (cls, method)
            for cls, method in self._by_path.get(site.path, [])
            if method.line <= site.line <= method.end_line
        ]
        return max(holding, key=lambda pair: pair[1].line) if holding else None

    def uncalled(self, cls: ConsumerClass, method: ConsumerMethod) -> bool:
        """Does nothing call `method` of `cls`?"""
        key = (cls.name, method.name)
        if key not in self._judged:
            self._judged[key] = self._judge(cls, method)
        return self._judged[key]

    def _judge(self, cls: ConsumerClass, method: ConsumerMethod) -> bool:
        name = method.name
        if name.startswith("__") and name.endswith("__"):
            return False
        if any(d not in _PLAIN_DECORATORS for d in method.signature.decorators):
            return False
        hierarchy = self.hierarchy
        line = hierarchy.line({cls.name})
        if self._handed.isdisjoint(each.name for each in line):
            return False
        for each in line:
            for node in hierarchy.mro(each.name):
                if isinstance(node, ConsumerRef):
                    continue
                if isinstance(node, str):
                    if node not in PLAIN_BASES:
                        return False  # a class from outside both may call it
                    continue
                info = hierarchy.provider(node) if isinstance(node, ClassRef) else None
                if info is None or name in info.members:
                    return False  # the provider class defines it (or is not known): it may call it
        return not self.consumer_reads([name]) and bool(self.provider_unused([name]))


def demote_uncalled(findings: list[Finding], methods: UncalledMethods) -> list[Finding]:
    """Errors whose every site is inside a consumer method nothing calls become warnings that say so."""

    def hider(site: Site) -> tuple[ConsumerClass, ConsumerMethod] | None:
        pair = methods.enclosing(site)
        return pair if pair is not None and methods.uncalled(*pair) else None

    def reason(first: tuple[ConsumerClass, ConsumerMethod]) -> str:
        cls, method = first
        return (
            f"in {cls.symbol}.{method.name}, which nothing calls: no provider class of its order defines "
            f"{method.name}, and neither the provider nor the plugin names it elsewhere"
        )

    return demote_hidden(findings, hider, reason)


_DEF = re.compile(rb"(?:async[ \t]+)?def[ \t]+(\w+)")
# What a line inside a body starts with (or a blank or comment line, or one closing the brackets
# of a statement above: the `):` ending a `def`'s parameters).
_INDENT = frozenset(b" \t\r\n#)]}")


class ConsumerFiles:
    """The consumer's files as the rules here read them: the files of sites, each read once, and
    whether any Python file of the tree names a word."""

    def __init__(self, tree: SourceTree) -> None:
        self.tree = tree
        self._files: dict[str, tuple[bytes, list[int], ProseFinder]] = {}
        self._python = [path for path in sorted(tree.files) if path.endswith(".py")]
        self._texts: dict[str, bytes] = {}  # the Python files holding a name looked for, read once
        self._looked_for: set[str] = set()

    def file(self, path: str) -> tuple[bytes, list[int], ProseFinder]:
        """A file's text, where its lines start, and where its comments and docstrings are."""
        if path not in self._files:
            text = self._texts.get(path)
            if text is None:
                text = self.tree.read(path)
            self._files[path] = (text, line_starts(text), ProseFinder(text))
        return self._files[path]

    def decorated(self, site: Site) -> bool:
        """Does a decorator stand right above the definition that starts at `site`?"""
        text, starts, prose = self.file(site.path)
        return 1 <= site.line < len(starts) and _decorated(text, starts, site.line - 1, prose)

    def look_for(self, names: Iterable[str]) -> None:
        """Read the Python files that hold any of `names` (asked together: one search of the tree,
        `git grep` where it searches in place)."""
        left = sorted(set(names) - self._looked_for)
        if left:
            self._looked_for.update(left)
            found = self.tree.files_containing(self._python, [n.encode() for n in left])
            self._texts.update(self.tree.read_many([path for path in found if path not in self._texts]))

    def names(
        self, name: str, keyword: str, besides: Callable[[str, bytes, list[int]], set[int]] | None = None
    ) -> bool:
        """Does a Python file write `name` in code or in a one-line string, but right after
        `keyword` (`def`, `class`: where it is defined)? Comments and docstrings aside, and the
        lines `besides` gives for a file (its path, text and line starts)."""
        self.look_for([name])
        word = word_pattern(name)
        definition = re.compile(rb"\b" + keyword.encode() + rb"[ \t]+$")
        needle = name.encode()
        for path in [path for path, text in self._texts.items() if needle in text]:
            text, starts, prose = self.file(path)
            skipped = besides(path, text, starts) if besides is not None else set()
            for match in word.finditer(text):
                line = bisect.bisect_right(starts, match.start())  # 1-based
                if definition.search(text, starts[line - 1], match.start()) or prose.at(match.start()):
                    continue
                if line not in skipped:
                    return True
        return False


class UncalledFunctions:
    """Which private top-level functions of the consumer nothing names (see the module
    docstring), asked site by site. `idle_installs`: patches installing under a name the
    baseline had and nothing reads any more (vllm-mindspore's `_get_num_input_tokens`, installed
    on vLLM's `GPUModelRunner` only): such a patch, and an import, do not name a function."""

    def __init__(
        self,
        files: ConsumerFiles,
        provider_silent: Callable[[str, str], bool],
        idle_installs: AbstractSet[Site] = frozenset(),
    ) -> None:
        """`provider_silent(path, name)`: can no provider code name what the consumer file at
        `path` defines as `name` (`provider_silence` makes it)?"""
        self.files = files
        self.provider_silent = provider_silent
        self._idle: dict[str, list[int]] = {}
        for site in idle_installs:
            self._idle.setdefault(site.path, []).append(site.line)
        self._judged: dict[str, bool] = {}
        self.installed_idle: dict[str, list[Site]] = {}  # name -> the idle installs of it passed over

    def enclosing(self, site: Site) -> str | None:
        """The private, undecorated top-level function whose body holds `site`, by name (in the
        site's file)."""
        text, starts, prose = self.files.file(site.path)
        if not 1 <= site.line < len(starts):
            return None
        for index in range(site.line - 1, -1, -1):
            start = starts[index]
            if start >= len(text) or text[start] in _INDENT or prose.at(start):
                continue
            found = _DEF.match(text, start)
            if index == site.line - 1 or found is None:
                return None  # the site starts a line itself, or sits under another statement
            name = found.group(1).decode()
            private = name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
            return name if private and not _decorated(text, starts, index, prose) else None
        return None

    def uncalled(self, path: str, name: str) -> bool:
        """Does nothing name the function `name`, defined in the file at `path`, but its own
        `def`, imports and idle installs?"""
        if name not in self._judged:
            passed: list[Site] = []

            def besides(path: str, text: bytes, starts: list[int]) -> set[int]:
                idle = {n for line in self._idle.get(path, []) for n in _statement(text, starts, line)}
                passed.extend(
                    Site(path, line) for line in self._idle.get(path, []) if _writes(text, starts, line, name)
                )
                return idle | _import_lines(text, starts, name)

            named = self.files.names(name, "def", besides)
            self._judged[name] = not named and self.provider_silent(path, name)
            if self._judged[name] and passed:
                self.installed_idle[name] = sorted(passed, key=lambda s: (s.path, s.line))
        return self._judged[name]


class UnnamedClasses:
    """Which consumer classes of a plugin nothing names, asked site by site: no consumer file
    writes the class's name but at its `class` line, no provider file writes it, it has no
    decorator, and no class of its order may register it as it is made (`__init_subclass__`, a
    metaclass). The plugin never makes one: only a configuration naming it could (vllm-omni's
    `OmniVoiceMultiModalProcessor`, which no module registers any more). Asked only of a plugin,
    whose users name no class of it but in a configuration: a library's users may use any."""

    def __init__(self, hierarchy: Hierarchy, files: ConsumerFiles, provider_silent: Callable[[str, str], bool]) -> None:
        """`provider_silent`: as `UncalledFunctions` takes it."""
        self.hierarchy = hierarchy
        self.files = files
        self.provider_silent = provider_silent
        self._by_path: dict[str, list[ConsumerClass]] = {}
        for cls in hierarchy.classes.values():
            if not cls.muted:
                self._by_path.setdefault(cls.path, []).append(cls)
        self._handed = {h.target for h in hierarchy.usage.contact.handovers}
        self._judged: dict[str, bool] = {}

    def enclosing(self, site: Site) -> ConsumerClass | None:
        """The innermost consumer class whose `class` line is `site`, or one of whose methods holds it."""
        holding = [
            cls
            for cls in self._by_path.get(site.path, [])
            if cls.line == site.line or any(m.line <= site.line <= m.end_line for m in cls.methods)
        ]
        return max(holding, key=lambda cls: cls.line) if holding else None

    def unnamed(self, cls: ConsumerClass) -> bool:
        if cls.name not in self._judged:
            self._judged[cls.name] = self._judge(cls)
        return self._judged[cls.name]

    def _judge(self, cls: ConsumerClass) -> bool:
        if cls.name in self._handed or cls.writes_init or self.files.decorated(Site(cls.path, cls.line)):
            return False
        for node in self.hierarchy.mro(cls.name):
            if isinstance(node, ConsumerRef):
                other = self.hierarchy.classes.get(node.name)
                if other is None or other.writes_init or other.method("__init_subclass__") is not None:
                    return False
            elif isinstance(node, ClassRef):
                info = self.hierarchy.provider(node)
                if info is None or "__init_subclass__" in info.members:
                    return False
            elif node not in PLAIN_BASES:
                return False  # a class from outside both: it may register what derives from it
        name = cls.name.rpartition(".")[2]
        return not self.files.names(name, "class") and self.provider_silent(cls.path, name)


_IMPORT = re.compile(rb"(?m)^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import\b|import[ \t])")
_OPEN, _CLOSE = frozenset(b"([{"), frozenset(b")]}")


def _statement(text: bytes, starts: list[int], line: int) -> range:
    """The lines (1-based) of the statement starting at `line`: on while a line ends with a
    backslash or leaves a bracket open (brackets in strings are not told apart: the statements
    asked about are imports and assignments)."""
    depth, last = 0, line
    while last < len(starts):
        body = text[starts[last - 1] : starts[last]].split(b"#", 1)[0].rstrip()
        depth += sum(1 for c in body if c in _OPEN) - sum(1 for c in body if c in _CLOSE)
        if depth <= 0 and not body.endswith(b"\\"):
            break
        last += 1
    return range(line, last + 1)


def _statement_text(text: bytes, starts: list[int], lines: range) -> bytes:
    """The text of the lines `lines` (1-based, as `_statement` gives them)."""
    return text[starts[lines.start - 1] : starts[min(lines.stop - 1, len(starts) - 1)]]


def _import_lines(text: bytes, starts: list[int], name: str) -> set[int]:
    """Every line of the file's import statements, but those binding `name` under another name
    (`import _f as g`: what calls `g` calls it)."""
    alias = re.compile(rb"(?<!\w)" + re.escape(name.encode()) + rb"\s+as\b")
    out: set[int] = set()
    for match in _IMPORT.finditer(text):
        lines = _statement(text, starts, bisect.bisect_right(starts, match.start()))
        if not alias.search(_statement_text(text, starts, lines)):
            out.update(lines)
    return out


def _writes(text: bytes, starts: list[int], line: int, name: str) -> bool:
    """Does the statement at `line` write `name` as a word?"""
    return word_pattern(name).search(_statement_text(text, starts, _statement(text, starts, line))) is not None


def provider_silence(
    served_paths: AbstractSet[str],
    injects_modules: bool,
    unwritten: Callable[[Iterable[str]], set[str]],
    written_as_string: Callable[[Iterable[str]], set[str]],
) -> Callable[[str, str], bool]:
    """Whether provider code can name what a consumer file defines (`provider_silent(path,
    name)`). It reaches a consumer function or class only through what the consumer hands it
    (which names it), by a string, or, where the consumer serves the file's module in a
    provider module's place (`served_paths`: an import hook's map; any module, where it puts
    modules of its own in `sys.modules`), by an import of its own: there any word of the
    provider's counts (`unwritten`); elsewhere a string (`written_as_string`). vLLM 0.13 defines
    its own `_get_num_input_tokens` in its second model runner, which does not name
    vllm-mindspore's."""

    def silent(path: str, name: str) -> bool:
        if injects_modules or path in served_paths:
            return bool(unwritten([name]))
        return not written_as_string([name])

    return silent


def _decorated(text: bytes, starts: list[int], index: int, prose: ProseFinder) -> bool:
    """Does a decorator stand on the lines right above line `index` (0-based)?"""
    for above in range(index - 1, -1, -1):
        start = starts[above]
        if text[start] in b"\r\n" or prose.at(start):
            continue  # a blank or comment line
        return text[start] == ord("@")
    return False


def asked_names(findings: list[Finding], functions: UncalledFunctions, classes: UnnamedClasses | None) -> set[str]:
    """The names the demotions of `functions` and `classes` may look for in the consumer's files:
    those of the functions and classes holding an error's sites (`ConsumerFiles.look_for` reads
    the files naming any of them in one search)."""
    sites = [site for f in findings if f.severity is Severity.ERROR for site in f.sites]
    out = {name for name in map(functions.enclosing, sites) if name is not None}
    if classes is not None:
        out |= {cls.name.rpartition(".")[2] for cls in map(classes.enclosing, sites) if cls is not None}
    return out


def demote_unnamed_classes(findings: list[Finding], classes: UnnamedClasses) -> list[Finding]:
    """Errors whose every site is in a consumer class nothing names become warnings that say so."""

    def hider(site: Site) -> ConsumerClass | None:
        cls = classes.enclosing(site)
        return cls if cls is not None and classes.unnamed(cls) else None

    def reason(cls: ConsumerClass) -> str:
        return (
            f"in {cls.symbol}, a class nothing names: the plugin writes its name nowhere but at its definition, "
            "and no provider code can reach it; only a configuration naming it could make one"
        )

    return demote_hidden(findings, hider, reason)


def demote_uncalled_functions(findings: list[Finding], functions: UncalledFunctions) -> list[Finding]:
    """Errors whose every site is inside a private top-level function nothing names become
    warnings that say so."""

    def hider(site: Site) -> str | None:
        name = functions.enclosing(site)
        return name if name is not None and functions.uncalled(site.path, name) else None

    def reason(name: str) -> str:
        idle = functions.installed_idle.get(name)
        if not idle:
            return (
                f"in {name}(), a private function nothing calls: the plugin names it nowhere but at its "
                "definition, and no provider code can reach it"
            )
        where = ", ".join(str(site) for site in idle[:3]) + (f" and {len(idle) - 3} more" if len(idle) > 3 else "")
        return (
            f"in {name}(), a private function nothing calls here: the plugin names it only where it imports it "
            f"and where it installs it under a name the provider no longer has ({where}), and no provider code "
            "can reach it otherwise"
        )

    return demote_hidden(findings, hider, reason)
