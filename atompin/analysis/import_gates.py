"""The provider's modules imported only on some platforms.

vLLM keeps some models' code per vendor (0.31's `vllm/models/deepseek_v32/nvidia/` and
`amd/`), and the model package's `__init__` imports one of them per platform (`if
current_platform.is_cuda(): from .nvidia.model import ...`). A call in `nvidia/model.py` runs
only where something imports that module: given the platform, the searches of the provider's
calls (`name_sites`, `callsites`) leave out a call in a module never imported there, as
`platform_gates` leaves out one under a test of the platform.

A module's importers are found by its name: the files that write its package's last name after
a dot (every absolute import of it, and every relative one from outside its folder, writes
`.nvidia`), and the files of its own folder. Each import there is under the tests of the
platform around it (`PlatformGates`), and in a module imported only on some platforms itself
(asked again, a few steps up). Unsure is "any platform": a module whose importers are not all
found (named by a string, a registry's dotted path, imported by the consumer itself, or in a
package that imports modules by computed names), one with more importers than are worth
reading, or one in no package whose `__init__` tests the platform (where vLLM writes such
choices) imports nothing away.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from atompin.analysis.limits import parse_limited
from atompin.analysis.names import absolute_module
from atompin.analysis.platform_gates import PLATFORM_MARKERS, PlatformGates
from atompin.analysis.platforms import PLATFORMS
from atompin.analysis.syntax import dotted, walk
from atompin.sources.tree import SourceTree

NOWHERE: frozenset[str] = frozenset()
_ALL = frozenset(PLATFORMS)

# Importers asked about, up from the module: vLLM's vendor folders import each other a step or two.
_MAX_DEPTH = 3
# More files than this naming a module's package: too common a name to read them all.
_MAX_FILES = 40

# `sys.modules.get("m")`, `"m" in sys.modules`: a string naming a module that imports nothing.
_LOOKUPS = frozenset({"sys.modules.get", "sys.modules.pop"})


class _File:
    """One provider file read for its imports: its syntax tree and tests of the platform."""

    def __init__(self, module: str, is_package: bool, tree: ast.Module | None, gates: PlatformGates) -> None:
        self.module = module
        self.is_package = is_package
        self.tree = tree
        self.gates = gates


class ImportGates:
    """Which platforms never import the module of a provider file (see the module docstring)."""

    def __init__(
        self,
        tree: SourceTree,
        package: str,
        files_naming: Callable[[str], list[str]],
        consumer_reaches: Callable[[str], bool] = lambda module: False,
    ) -> None:
        """`files_naming(word)`: the package's files writing `word` after a dot;
        `consumer_reaches(module)`: does the consumer import the module (or a name of it) itself?"""
        self.tree = tree
        self.package = package
        self.files_naming = files_naming
        self.consumer_reaches = consumer_reaches
        self._never: dict[str, frozenset[str]] = {}
        self._tests_platform: dict[str, bool] = {}
        self._dynamic: dict[str, bool] = {}  # see `_imports_by_name`
        self._files: dict[str, _File] = {}

    def never(self, path: str) -> frozenset[str]:
        """The platforms on which nothing imports the module at `path` (empty: any may)."""
        module, is_package = self.tree.module_name(path)
        return NOWHERE if is_package else self._module_never(module, 0, ())

    def _module_never(self, module: str, depth: int, asking: tuple[str, ...]) -> frozenset[str]:
        found = self._never.get(module)
        if found is not None:
            return found
        if depth > _MAX_DEPTH or module in asking or not self._in_platform_package(module):
            return NOWHERE  # not kept: asked from elsewhere, it may be known
        if self._imports_by_name(module):
            return NOWHERE
        importers = None if self.consumer_reaches(module) else self._importers(module)
        never = _ALL if importers else NOWHERE
        for importer, at_import in importers or ():
            above = (
                NOWHERE if importer.is_package else self._module_never(importer.module, depth + 1, (*asking, module))
            )
            never &= at_import | above
            if not never:
                break
        self._never[module] = never
        return never

    def _imports_by_name(self, module: str) -> bool:
        """Does a file of the package testing the platform above `module` import a module by a
        computed name (`importlib.import_module(f".{name}", __name__)`, a lazy `__getattr__`'s
        table, `__import__`)? Then what it imports is not told by its text."""
        package = self._platform_package(module)
        if package not in self._dynamic:
            paths = self.tree.python_files(package)
            self._dynamic[package] = bool(self.tree.files_containing(paths, [b"import_module", b"__import__"]))
        return self._dynamic[package]

    def _in_platform_package(self, module: str) -> bool:
        return bool(self._platform_package(module))

    def _platform_package(self, module: str) -> str:
        """The nearest package above `module` (below the provider's top) whose `__init__` tests the
        platform ("" when none does)."""
        parts = module.split(".")
        for i in range(len(parts) - 1, 1, -1):
            package = ".".join(parts[:i])
            if package not in self._tests_platform:
                found = self.tree.find_module(package)
                text = self.tree.read(found.path) if found is not None and found.is_package and found.path else b""
                self._tests_platform[package] = any(marker in text for marker in PLATFORM_MARKERS)
            if self._tests_platform[package]:
                return package
        return ""

    def _importers(self, module: str) -> list[tuple[_File, frozenset[str]]] | None:
        """Each import of `module` found, with the platforms it never runs on there; None when
        something may import it that cannot be read so (a string naming it, too many files)."""
        parent, _, last = module.rpartition(".")
        own = self.tree.find_module(module)
        if own is None or not own.path:
            return None
        folder = own.path.rpartition("/")[0] + "/"
        siblings = [p for p in self.tree.python_files(parent) if p.startswith(folder) and "/" not in p[len(folder) :]]
        # Each import of it writes its last name too (`.nvidia.model`, `from .nvidia import model`).
        naming = self.tree.files_containing(self.files_naming(parent.rpartition(".")[2]), [last.encode()])
        paths = sorted({*naming, *siblings} - {own.path})
        if len(paths) > _MAX_FILES:
            return None
        out: list[tuple[_File, frozenset[str]]] = []
        for path in paths:
            file = self._read(path)
            if file.tree is None:
                return None  # unreadable: what it imports is unknown
            for node in walk(file.tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and _imports(node, file, module):
                    out.append((file, frozenset(file.gates.never(node))))
                elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _names(node.value, module):
                    if not _looked_up(node, file.tree):
                        return None
        return out

    def _read(self, path: str) -> _File:
        file = self._files.get(path)
        if file is None:
            module, is_package = self.tree.module_name(path)
            source = self.tree.read(path)
            try:
                tree: ast.Module | None = parse_limited(source)
            except (SyntaxError, ValueError):
                tree = None
            gates = PlatformGates.read(tree, source) if tree is not None else PlatformGates([])
            file = self._files[path] = _File(module, is_package, tree, gates)
        return file


def _imports(node: ast.Import | ast.ImportFrom, file: _File, module: str) -> bool:
    """Does this statement of `file` import `module`?"""
    if isinstance(node, ast.Import):
        return any(alias.name == module or alias.name.startswith(module + ".") for alias in node.names)
    source = absolute_module(file.module, file.is_package, node.level, node.module)
    if source == module or source.startswith(module + "."):
        return True
    parent, _, last = module.rpartition(".")
    return source == parent and any(alias.name == last for alias in node.names)


def _names(text: str, module: str) -> bool:
    """Does a string name `module` (`"pkg.mod"`, `"pkg.mod:Cls"`, `"pkg.mod.Cls"`, `".mod"`)?"""
    last = module.rpartition(".")[2]
    return text in (module, "." + last) or text.startswith((module + ".", module + ":"))


def _looked_up(node: ast.Constant, tree: ast.Module) -> bool:
    """Is the string only a docstring, or a key looked up in `sys.modules` (which imports nothing)?"""
    for parent in walk(tree):
        if isinstance(parent, ast.Expr) and parent.value is node:
            return True  # a docstring, or a bare string statement
        if isinstance(parent, ast.Call) and dotted(parent.func) in _LOOKUPS and node in parent.args:
            return True
        if (
            isinstance(parent, ast.Compare)
            and parent.left is node
            and len(parent.ops) == 1
            and isinstance(parent.ops[0], (ast.In, ast.NotIn))
            and dotted(parent.comparators[0]) == "sys.modules"
        ):
            return True
    return False
