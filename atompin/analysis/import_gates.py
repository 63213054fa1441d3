"""The provider's modules imported only on some platforms.

vLLM keeps some models' code per vendor (0.31's `vllm/models/deepseek_v32/nvidia/` and
`amd/`), and the model package's `__init__` imports one of them per platform (`if
current_platform.is_cuda(): from .nvidia.model import ...`). A call in `nvidia/model.py` runs
only where something imports that module: given the platform, the searches of the provider's
calls (`name_sites`, `callsites`) leave out a call in a module never imported there, as
`platform_gates` leaves out one under a test of the platform.

Read only for the parts of a package its `__init__` imports only on some platforms (the vendor
folders). A module's ways in are found by its name: the files that write its own name and,
outside its folder, its folder's name after a dot (every absolute import of it, every relative
one from outside its folder, every string naming it writes `.nvidia` and `model`; outside the
choosing package, only files writing that package's name are read). Each import of it, and
each string naming it (a registry's dotted path; not a docstring), counts where it is written:
under the tests of the platform around it (`PlatformGates`), in a module imported only on some
platforms itself (asked again, a few steps up). Unsure is "any platform": a module the consumer
imports itself, one in a package that imports modules by computed names, one with no way in
found or more files to read than are worth it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from atompin.analysis.limits import parse_limited
from atompin.analysis.names import absolute_module
from atompin.analysis.platform_gates import PLATFORM_MARKERS, PlatformGates
from atompin.analysis.platforms import PLATFORMS
from atompin.analysis.syntax import blocks_of, walk
from atompin.sources.tree import SourceTree

NOWHERE: frozenset[str] = frozenset()
_ALL = frozenset(PLATFORMS)

# Importers asked about, up from the module: vLLM's vendor folders import each other a step or two.
_MAX_DEPTH = 3
# More files than this that may import a module: too common a name to read them all.
_MAX_FILES = 40


class _File:
    """One provider file read for its ways into other modules: its import statements (its
    statements walked once) and its tests of the platform. `broken`: it does not parse."""

    def __init__(self, module: str, is_package: bool, source: bytes) -> None:
        self.module = module
        self.is_package = is_package
        self.source = source
        self.imports: list[ast.Import | ast.ImportFrom] = []
        self.gates = PlatformGates([])
        self.tree: ast.Module | None = None
        try:
            self.tree = parse_limited(source)
        except (SyntaxError, ValueError):
            return
        self.gates = PlatformGates.read(self.tree, source)
        todo: list[ast.stmt] = list(self.tree.body)
        while todo:  # statements only: an import is one (expressions are most of the nodes)
            stmt = todo.pop()
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.imports.append(stmt)
            else:
                todo.extend(child for block in blocks_of(stmt) for child in block)

    @property
    def broken(self) -> bool:
        return self.tree is None

    def ways_in(self, module: str) -> list[ast.AST]:
        """Its imports of `module`, and its strings naming it (a registry's dotted path, an
        `importlib.import_module` argument; docstrings aside): held where the string runs, it
        may be imported from anywhere."""
        found: list[ast.AST] = [node for node in self.imports if _imports(node, self, module)]
        last = module.rpartition(".")[2]
        needles = (module.encode(), f'".{last}"'.encode(), f"'.{last}'".encode())
        if self.tree is not None and any(needle in self.source for needle in needles):
            docstrings: set[int] = set()
            for node in walk(self.tree):  # breadth first: a statement comes before its value
                if isinstance(node, ast.Expr):
                    docstrings.add(id(node.value))
                elif (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and id(node) not in docstrings
                    and _names(node.value, module)
                ):
                    found.append(node)
        return found


class ImportGates:
    """Which platforms never import the module of a provider file (see the module docstring)."""

    def __init__(
        self,
        tree: SourceTree,
        files_naming: Callable[[str], list[str]],
        consumer_reaches: Callable[[str], bool] = lambda module: False,
    ) -> None:
        """`files_naming(word)`: the package's files writing `word` after a dot (the name search's
        identifiers: cached, so a bump asks git for little); `consumer_reaches(module)`: does the
        consumer import the module (or a name of it) itself?"""
        self.tree = tree
        self.files_naming = files_naming
        self.consumer_reaches = consumer_reaches
        self._naming: dict[str, frozenset[str]] = {}  # see `_naming_word`
        self._never: dict[str, frozenset[str]] = {}
        self._chosen: dict[str, frozenset[str]] = {}  # see `_chooses`
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
        if depth > _MAX_DEPTH or module in asking or not self._platform_package(module):
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

    def _platform_package(self, module: str) -> str:
        """The nearest package above `module` (below the provider's top) whose `__init__` imports
        the part of it `module` is in only on some platforms ("" when none does): where vLLM
        chooses a vendor's folder (`vllm.models.kimi_k3` for `vllm.models.kimi_k3.nvidia.kda`,
        not for `vllm.models.kimi_k3.common.ops`)."""
        parts = module.split(".")
        for i in range(len(parts) - 1, 1, -1):
            package = ".".join(parts[:i])
            if package not in self._chosen:
                self._chosen[package] = self._chooses(package)
            if parts[i] in self._chosen[package]:
                return package
        return ""

    def _chooses(self, package: str) -> frozenset[str]:
        """The parts of the package (its modules and subpackages, by name) its `__init__` imports
        only on some platforms (not on none: `if TYPE_CHECKING:` alone chooses nothing)."""
        found = self.tree.find_module(package)
        if found is None or not found.is_package or not found.path:
            return NOWHERE
        if not any(marker in self.tree.read(found.path) for marker in PLATFORM_MARKERS):
            return NOWHERE
        file = self._read(found.path)
        chosen: set[str] = set()
        for node in file.imports:
            if 0 < len(file.gates.never(node)) < len(_ALL):
                chosen |= _parts_imported(node, file, package)
        return frozenset(chosen)

    def _importers(self, module: str) -> list[tuple[_File, frozenset[str]]] | None:
        """Each import of `module` found, with the platforms it never runs on there; None when
        something may import it that cannot be read so (a string naming it, too many files)."""
        parent, _, last = module.rpartition(".")
        parent_last = parent.rpartition(".")[2]
        own = self.tree.find_module(module)
        if own is None or not own.path:
            return None
        # Each import of it writes its own name (or `import *` of its folder) and, from outside its
        # folder, the folder's name after a dot (`.nvidia.model`, `from .nvidia import model`; within
        # it, `from .model`, `from ..model`); one from outside the package choosing the folder writes
        # that package's name too (`vllm.models.kimi_k3.nvidia.model`, `from ..kimi_k3.nvidia`).
        folder = own.path.rpartition("/")[0] + "/"
        within = [p for p in self.tree.python_files(parent) if p.startswith(folder)]
        package = self._platform_package(module)
        inside = self.tree.find_module(package)
        prefix = inside.path.rpartition("/")[0] + "/" if inside is not None else ""
        outside = self._naming_word(package.rpartition(".")[2])
        paths = [p for p in self._naming_word(parent_last) if p.startswith(prefix) or p in outside]
        naming = self.tree.files_containing(sorted({*paths, *within}), [last.encode(), b"import *"])
        paths = sorted(set(naming) - {own.path})
        if len(paths) > _MAX_FILES:
            return None
        out: list[tuple[_File, frozenset[str]]] = []
        for path in paths:
            file = self._read(path)
            if file.broken:
                return None  # what it imports is unknown
            out += [(file, frozenset(file.gates.never(node))) for node in file.ways_in(module)]
        return out

    def _naming_word(self, word: str) -> frozenset[str]:
        """`files_naming(word)`, asked once a word (the modules of a folder share theirs)."""
        if word not in self._naming:
            self._naming[word] = frozenset(self.files_naming(word))
        return self._naming[word]

    def _read(self, path: str) -> _File:
        file = self._files.get(path)
        if file is None:
            module, is_package = self.tree.module_name(path)
            file = self._files[path] = _File(module, is_package, self.tree.read(path))
        return file


def _imports(node: ast.Import | ast.ImportFrom, file: _File, module: str) -> bool:
    """Does this statement of `file` import `module`?"""
    if isinstance(node, ast.Import):
        return any(alias.name == module or alias.name.startswith(module + ".") for alias in node.names)
    source = absolute_module(file.module, file.is_package, node.level, node.module)
    if source == module or source.startswith(module + "."):
        return True
    parent, _, last = module.rpartition(".")
    # `from pkg import *` imports the submodules the package's `__all__` names: taken as one.
    return source == parent and any(alias.name in (last, "*") for alias in node.names)


def _parts_imported(node: ast.Import | ast.ImportFrom, file: _File, package: str) -> set[str]:
    """The names of `package`'s parts (modules, subpackages) this statement of its `__init__` imports."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        source = absolute_module(file.module, file.is_package, node.level, node.module)
        targets = [f"{source}.{alias.name}" if source == package else source for alias in node.names]
    return {t[len(package) + 1 :].split(".")[0] for t in targets if t.startswith(package + ".")}


def _names(text: str, module: str) -> bool:
    """Does a string name `module` (`"pkg.mod"`, `"pkg.mod:Cls"`, `"pkg.mod.Cls"`, `".mod"`)?"""
    last = module.rpartition(".")[2]
    return text in (module, "." + last) or text.startswith((module + ".", module + ":"))
