"""Consumer methods nothing calls: an error found only inside them is a warning.

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
file names: vllm-mindspore keeps `_aclgraph_capture_dummy_run` beside the `GPUModelRunner`
methods it installs, and installs it nowhere. Which function holds a site is read from the file's
text: the nearest line above it that starts at the left margin in code must be its `def`.
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


class UncalledFunctions:
    """Which private top-level functions of the consumer nothing names (see the module
    docstring), asked site by site. `provider_unused`: as `UncalledMethods` takes it."""

    def __init__(self, tree: SourceTree, provider_unused: Callable[[Iterable[str]], set[str]]) -> None:
        self.tree = tree
        self.provider_unused = provider_unused
        self._python = [path for path in sorted(tree.files) if path.endswith(".py")]
        self._judged: dict[str, bool] = {}
        self._files: dict[str, tuple[bytes, list[int], ProseFinder]] = {}  # the sites' files, read once

    def enclosing(self, site: Site) -> str | None:
        """The private, undecorated top-level function whose body holds `site`, by name."""
        if site.path not in self._files:
            text = self.tree.read(site.path)
            self._files[site.path] = (text, line_starts(text), ProseFinder(text))
        text, starts, prose = self._files[site.path]
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
            self._judged[name] = not self._named(name) and bool(self.provider_unused([name]))
        return self._judged[name]

    def _named(self, name: str) -> bool:
        word = re.compile(rb"(?<!\w)" + re.escape(name.encode()) + rb"(?!\w)")
        definition = re.compile(rb"\bdef[ \t]+$")
        for _, text in self.tree.read_many(self.tree.files_containing(self._python, [name.encode()])):
            prose = ProseFinder(text)
            for match in word.finditer(text):
                line_start = text.rfind(b"\n", 0, match.start()) + 1
                if not definition.search(text, line_start, match.start()) and not prose.at(match.start()):
                    return True
        return False


def _decorated(text: bytes, starts: list[int], index: int, prose: ProseFinder) -> bool:
    """Does a decorator stand on the lines right above line `index` (0-based)?"""
    for above in range(index - 1, -1, -1):
        start = starts[above]
        if text[start] in b"\r\n" or prose.at(start):
            continue  # a blank or comment line
        return text[start] == ord("@")
    return False


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
