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
string; an import, a patch installing it or a callback passed on all name it) and that no provider
file writes: vllm-mindspore keeps `_aclgraph_capture_dummy_run` beside the `GPUModelRunner`
methods it installs, and installs it nowhere. Which function holds a site is read from the file's
text: the nearest line above it that starts at the left margin in code must be its `def`.

In a plugin, a class nothing names is never made but by a configuration naming it
(`UnnamedClasses`): vllm-omni's OmniVoice module keeps a multimodal processor it registers nowhere.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace

from atompin.analysis.hierarchy import PLAIN_BASES, ConsumerRef, Hierarchy
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
    out: list[Finding] = []
    for f in findings:
        held = [methods.enclosing(site) for site in f.sites] if f.severity is Severity.ERROR else []
        pairs = [pair for pair in held if pair is not None]
        if pairs and len(pairs) == len(held) and all(methods.uncalled(*pair) for pair in pairs):
            cls, method = pairs[0]
            message = (
                f"{f.message} (in {cls.symbol}.{method.name}, which nothing calls: no provider class of its "
                f"order defines {method.name}, and neither the provider nor the plugin names it elsewhere)"
            )
            f = replace(f, severity=Severity.WARNING, message=message)
        out.append(f)
    return out


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
        self._texts: list[bytes] | None = None  # every Python file's, read once when first asked

    def file(self, path: str) -> tuple[bytes, list[int], ProseFinder]:
        """A file's text, where its lines start, and where its comments and docstrings are."""
        if path not in self._files:
            text = self.tree.read(path)
            self._files[path] = (text, line_starts(text), ProseFinder(text))
        return self._files[path]

    def decorated(self, site: Site) -> bool:
        """Does a decorator stand right above the definition that starts at `site`?"""
        text, starts, prose = self.file(site.path)
        return 1 <= site.line < len(starts) and _decorated(text, starts, site.line - 1, prose)

    def names(self, name: str, keyword: str) -> bool:
        """Does a Python file write `name` in code or in a one-line string, but right after
        `keyword` (`def`, `class`: where it is defined)? Comments and docstrings aside."""
        if self._texts is None:
            python = [path for path in sorted(self.tree.files) if path.endswith(".py")]
            self._texts = [text for _, text in self.tree.read_many(python)]
        word = re.compile(rb"(?<!\w)" + re.escape(name.encode()) + rb"(?!\w)")
        definition = re.compile(rb"\b" + keyword.encode() + rb"[ \t]+$")
        needle = name.encode()
        for text in (text for text in self._texts if needle in text):
            prose = ProseFinder(text)
            for match in word.finditer(text):
                line_start = text.rfind(b"\n", 0, match.start()) + 1
                if not definition.search(text, line_start, match.start()) and not prose.at(match.start()):
                    return True
        return False


class UncalledFunctions:
    """Which private top-level functions of the consumer nothing names (see the module
    docstring), asked site by site. `provider_unwritten`: as `UnnamedClasses` takes it (an
    import hook may serve the function's module in a provider module's place, and the provider
    import the function from there)."""

    def __init__(self, files: ConsumerFiles, provider_unwritten: Callable[[Iterable[str]], set[str]]) -> None:
        self.files = files
        self.provider_unwritten = provider_unwritten
        self._judged: dict[str, bool] = {}

    def enclosing(self, site: Site) -> str | None:
        """The private, undecorated top-level function whose body holds `site`, by name."""
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

    def uncalled(self, name: str) -> bool:
        """Does nothing name the function `name` but its own `def`?"""
        if name not in self._judged:
            self._judged[name] = not self.files.names(name, "def") and bool(self.provider_unwritten([name]))
        return self._judged[name]


class UnnamedClasses:
    """Which consumer classes of a plugin nothing names, asked site by site: no consumer file
    writes the class's name but at its `class` line, no provider file writes it, it has no
    decorator, and no class of its order may register it as it is made (`__init_subclass__`, a
    metaclass). The plugin never makes one: only a configuration naming it could (vllm-omni's
    `OmniVoiceMultiModalProcessor`, which no module registers any more). Asked only of a plugin,
    whose users name no class of it but in a configuration: a library's users may use any."""

    def __init__(
        self, hierarchy: Hierarchy, files: ConsumerFiles, provider_unwritten: Callable[[Iterable[str]], set[str]]
    ) -> None:
        """`provider_unwritten`: of some names, those no provider file writes as a word anywhere
        (`NameSearch.unwritten`: a class is named by an import too, or made by a bare call)."""
        self.hierarchy = hierarchy
        self.files = files
        self.provider_unwritten = provider_unwritten
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
        return not self.files.names(name, "class") and bool(self.provider_unwritten([name]))


def _decorated(text: bytes, starts: list[int], index: int, prose: ProseFinder) -> bool:
    """Does a decorator stand on the lines right above line `index` (0-based)?"""
    for above in range(index - 1, -1, -1):
        start = starts[above]
        if text[start] in b"\r\n" or prose.at(start):
            continue  # a blank or comment line
        return text[start] == ord("@")
    return False


def demote_unnamed_classes(findings: list[Finding], classes: UnnamedClasses) -> list[Finding]:
    """Errors whose every site is in a consumer class nothing names become warnings that say so."""
    out: list[Finding] = []
    for f in findings:
        held = [classes.enclosing(site) for site in f.sites] if f.severity is Severity.ERROR else []
        if held and all(cls is not None and classes.unnamed(cls) for cls in held):
            cls = held[0]
            assert cls is not None
            message = (
                f"{f.message} (in {cls.symbol}, a class nothing names: neither the plugin nor the provider writes "
                "its name anywhere but at its definition; only a configuration naming it could make one)"
            )
            f = replace(f, severity=Severity.WARNING, message=message)
        out.append(f)
    return out


def demote_uncalled_functions(findings: list[Finding], functions: UncalledFunctions) -> list[Finding]:
    """Errors whose every site is inside a private top-level function nothing names become
    warnings that say so."""
    out: list[Finding] = []
    for f in findings:
        names = [functions.enclosing(site) for site in f.sites] if f.severity is Severity.ERROR else []
        if names and all(n is not None and functions.uncalled(n) for n in names):
            message = (
                f"{f.message} (in {names[0]}(), a private function nothing calls: neither the plugin nor the "
                "provider names it anywhere but at its definition)"
            )
            f = replace(f, severity=Severity.WARNING, message=message)
        out.append(f)
    return out
