"""Where source trees come from, behind one small interface.

A `SourceTree` is a read-only set of files addressed by POSIX paths relative
to a root that holds package folders. It knows how to find a module's file the
way Python's path finder would, and gives each file a content id (the git blob
id) so that indexes can be cached by content whatever the tree's origin.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cache, cached_property
from pathlib import Path

# File endings of compiled extension modules: the module exists, its contents are unknown.
_COMPILED = (".so", ".pyd")

# Git as a plain searcher: no repository (a folder's own `.git` is never read) and no
# configuration of this machine (the pathspecs say how each is matched).
_GREP_ENV = {
    "GIT_DIR": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    # `git --literal-pathspecs` (as some editors run git) sets the first for the hooks it runs.
    "GIT_LITERAL_PATHSPECS": "0",
    "GIT_GLOB_PATHSPECS": "0",
    "GIT_NOGLOB_PATHSPECS": "0",
    "GIT_ICASE_PATHSPECS": "0",
    "LC_ALL": "C",  # bytes are bytes
}


class ModuleKind(str, Enum):
    PACKAGE = "package"  # a/b/__init__.py
    MODULE = "module"  # a/b.py
    NAMESPACE = "namespace"  # a/b/ with no __init__.py
    COMPILED = "compiled"  # a/b.cpython-312-x86_64-linux-gnu.so (maybe with a .pyi)


@dataclass(frozen=True)
class ModuleFile:
    module: str
    kind: ModuleKind
    path: str  # the file to read ("" for a namespace package or a compiled module without stub)

    @property
    def is_package(self) -> bool:
        return self.kind in (ModuleKind.PACKAGE, ModuleKind.NAMESPACE)


def blob_id(data: bytes) -> str:
    """The git blob id of `data`, so a folder and a git tree share cache entries."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class SourceTree(ABC):
    """A read-only tree of files; subclasses say how to list and read them."""

    label: str

    @abstractmethod
    def list_files(self) -> list[str]:
        """Every file path in the tree (POSIX, relative)."""

    @abstractmethod
    def read(self, path: str) -> bytes:
        """The bytes of one file."""

    def read_text(self, path: str) -> str:
        """A file's text: UTF-8 with a byte order mark dropped (as Python and editors read it, a
        Windows editor may save one), a byte that is not UTF-8 replaced."""
        return self.read(path).decode("utf-8-sig", "replace")

    def content_id(self, path: str) -> str:
        """A stable id of a file's content (the git blob id)."""
        return blob_id(self.read(path))

    def stamp(self, path: str) -> str:
        """A cheap id that changes whenever the file does (its content id, unless the tree
        has something cheaper): keys caches of results derived from many files at once."""
        return self.content_id(path)

    def read_many(self, paths: list[str]) -> Iterator[tuple[str, bytes]]:
        """(path, bytes) for each path, in order: for reading many files at once, which some
        trees (git) do much faster than one by one."""
        for path in paths:
            yield path, self.read(path)

    def files_containing(self, paths: list[str], words: Sequence[bytes]) -> list[str]:
        """The files among `paths` (in their order) whose bytes contain one of `words` (as is,
        not as a whole word): the few worth reading for a search of the many."""
        if len(words) > 4:  # one pass of an alternation beats a search per word
            pattern = re.compile(b"|".join(re.escape(word) for word in words))
            return [path for path, data in self.read_many(paths) if pattern.search(data)]
        return [path for path, data in self.read_many(paths) if any(word in data for word in words)]

    def files_matching(self, paths: list[str], patterns: Sequence[str]) -> list[str]:
        """The files among `paths` (in their order) with a line matching one of `patterns`: regular
        expressions read on bytes, in the syntax Python's and Perl's share (`^` and `$` are a line's
        ends; ASCII only)."""
        pattern = re.compile("|".join(f"(?:{each})" for each in patterns).encode(), re.MULTILINE)
        return [path for path, data in self.read_many(paths) if pattern.search(data)]

    @property
    def searches_in_place(self) -> bool:
        """Do `files_containing` and `files_matching` search the files where they are (in C, on
        every core), not read here? A search for a few names then costs far less than reading every
        file once."""
        return False

    def size(self, path: str) -> int:
        """A file's size in bytes (to judge how much work it is before reading it)."""
        return len(self.read(path))

    def sizes(self, paths: Sequence[str]) -> list[int]:
        """`size` of each path, in order (a tree that asks another program asks once)."""
        return [self.size(path) for path in paths]

    def stamps_id(self, paths: Iterable[str]) -> str:
        """One id for these files: it changes whenever one of them is added, removed or changed
        (each path and its stamp)."""
        stamps = "\0".join(f"{path}\0{self.stamp(path)}" for path in paths)
        return hashlib.sha256(stamps.encode()).hexdigest()

    def package_id(self, package: str) -> str:
        """`stamps_id` of a package's Python files, computed once per tree."""
        if package not in self._package_ids:
            self._package_ids[package] = self.stamps_id(self.python_files(package))
        return self._package_ids[package]

    @cached_property
    def _package_ids(self) -> dict[str, str]:
        return {}

    def identity(self) -> str:
        """One id for everything in the tree (a git tree says its commit instead)."""
        return self.stamps_id(sorted(self.files))

    @cached_property
    def files(self) -> frozenset[str]:
        return frozenset(self.list_files())

    @cached_property
    def dirs(self) -> frozenset[str]:
        out: set[str] = set()
        for path in self.files:
            parts = path.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                out.add("/".join(parts[:i]))
        return frozenset(out)

    @cached_property
    def _compiled(self) -> dict[str, str]:
        """ "a/b" -> "a/b.cpython-312-x86_64-linux-gnu.so" for compiled extension modules."""
        out: dict[str, str] = {}
        for path in self.files:
            if path.endswith(_COMPILED):
                head, _, tail = path.rpartition("/")
                stem = tail.split(".")[0]
                out[f"{head}/{stem}" if head else stem] = path
        return out

    @cached_property
    def package_root(self) -> str:
        """ "src/" for a tree in the src layout (packages in a `src` folder that is no package
        itself, `src/pkg/__init__.py`, as many projects keep them), "" otherwise: module names
        are read below it, and its files keep their paths."""
        if "src/__init__.py" in self.files:
            return ""
        # One pass over the paths (not `dirs`, which a provider tree seldom needs otherwise).
        return "src/" if any(p.startswith("src/") and p.endswith(".py") and p.count("/") >= 2 for p in self.files) else ""

    def find_module(self, module: str) -> ModuleFile | None:
        """Find a module as Python's path finder would: package, then compiled, then .py (at the
        top of the tree, then in its `src` folder)."""
        found = self._find_module(module, module.replace(".", "/"))
        if found is None and self.package_root:
            found = self._find_module(module, self.package_root + module.replace(".", "/"))
        return found

    def _find_module(self, module: str, base: str) -> ModuleFile | None:
        if f"{base}/__init__.py" in self.files:
            return ModuleFile(module, ModuleKind.PACKAGE, f"{base}/__init__.py")
        if base in self._compiled:
            stub = f"{base}.pyi" if f"{base}.pyi" in self.files else ""
            return ModuleFile(module, ModuleKind.COMPILED, stub)
        if f"{base}.py" in self.files:
            return ModuleFile(module, ModuleKind.MODULE, f"{base}.py")
        if base in self.dirs and self._has_python_below(base):
            return ModuleFile(module, ModuleKind.NAMESPACE, "")
        return None

    def _has_python_below(self, base: str) -> bool:
        prefix = base + "/"
        return any(p.startswith(prefix) and p.endswith((".py", *_COMPILED)) for p in self.files)

    def top_level_packages(self) -> list[str]:
        """Importable top-level package names (folders with Python files, in the `src` folder too), sorted."""
        root = self.package_root
        names = {
            p[len(root) :].split("/")[0] if root and p.startswith(root) else p.split("/")[0]
            for p in self.files
            if "/" in p and p.endswith(".py")
        }
        names.discard(root.rstrip("/"))
        return sorted(n for n in names if n.isidentifier() and n not in _NOT_PACKAGES)

    def python_files(self, package: str) -> list[str]:
        """Sorted .py files of a (dotted) package (found as `find_module` finds it)."""
        base = package.replace(".", "/")
        if self.package_root and base not in self.dirs and f"{base}.py" not in self.files:
            base = self.package_root + base
        prefix, single = base + "/", base + ".py"
        return sorted(p for p in self.files if (p.startswith(prefix) and p.endswith(".py")) or p == single)

    def module_name(self, path: str) -> tuple[str, bool]:
        """ "a/b/__init__.py" -> ("a.b", True); "a/b/c.py" -> ("a.b.c", False); in the src layout,
        "src/a/b.py" -> ("a.b", False)."""
        root = self.package_root
        return module_of_path(path[len(root) :] if root and path.startswith(root) else path)


def module_of_path(path: str) -> tuple[str, bool]:
    """The module a file path relative to its package root names: "a/b/__init__.py" -> ("a.b",
    True), "a/b/c.py" -> ("a.b.c", False)."""
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


_NOT_PACKAGES = {"tests", "test", "docs", "doc", "examples", "benchmarks", "build", "dist", "scripts"}


class FolderTree(SourceTree):
    """A local folder. Hidden folders and caches are skipped."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.label = str(root)
        # The file last hashed: a content id is usually followed by a read of the same file.
        self._last: tuple[str, bytes] = ("", b"")
        self._stamps: dict[str, str] = {}
        self._links: set[str] = set()  # the files listed that are symlinks (see `files_containing`)

    def list_files(self) -> list[str]:
        """Regular files only: FIFOs, sockets and devices are never opened (a FIFO named `x.py`
        would block a read forever), and a symlink counts only when it resolves to a regular
        file inside the tree (loops, dangling links and links out of the tree are skipped).
        Linked folders are not entered."""
        out: list[str] = []
        real_root = os.path.realpath(self.root)
        todo = [("", str(self.root))]
        while todo:
            prefix, folder = todo.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                path = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith(".") and entry.name not in ("__pycache__", "node_modules"):
                        todo.append((path + "/", entry.path))
                elif entry.is_file(follow_symlinks=False):
                    # The listing's own stat is the file's stamp: no second one per file later.
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:  # gone since the folder was read
                        continue
                    self._stamps[path] = stamp_of(st)
                    out.append(path)
                elif entry.is_symlink() and _regular_inside(entry.path, real_root):
                    self._links.add(path)
                    out.append(path)
        return out

    def read(self, path: str) -> bytes:
        if self._last[0] == path:
            return self._last[1]
        return _read_regular(os.path.join(self._root_text, path))

    @cached_property
    def _root_text(self) -> str:
        return str(self.root)

    def content_id(self, path: str) -> str:
        data = _read_regular(os.path.join(self._root_text, path))
        self._last = (path, data)
        return blob_id(data)

    def stamp(self, path: str) -> str:
        """Size and modification time: changes with the file, costs no read (taken once per run:
        several whole-package keys are built from the same stamps)."""
        found = self._stamps.get(path)
        if found is None:
            found = self._stamps[path] = size_and_time(os.path.join(self._resolved_root, path))
        return found

    def size(self, path: str) -> int:
        return int(self.stamp(path).partition(":")[0])

    @cached_property
    def _resolved_root(self) -> str:
        return str(self.root.resolve())

    @property
    def searches_in_place(self) -> bool:
        return _git_grep_perl() is not None

    def files_containing(self, paths: list[str], words: Sequence[bytes]) -> list[str]:
        """`git grep --no-index` searches the folder (in C, on every core) for more than four words,
        where this process would try an alternation at every byte; a few words it finds as fast
        (one `in` each), and few files it reads faster than a process starts; so also when git
        cannot answer."""
        if len(paths) < 64 or len(words) <= 4 or any(b"\n" in word or b"\0" in word for word in words):
            return super().files_containing(paths, words)
        args = ["-F", *(arg for word in words for arg in ("-e", os.fsdecode(word)))]
        found = self._grep(paths, args, lambda links: SourceTree.files_containing(self, links, words))
        return super().files_containing(paths, words) if found is None else found

    def files_matching(self, paths: list[str], patterns: Sequence[str]) -> list[str]:
        """As `files_containing`, with Perl's regular expressions (where git has them)."""
        found = None
        if _git_grep_perl() is not None and paths and patterns:
            args = ["-P", *(arg for each in patterns for arg in ("-e", each))]
            found = self._grep(paths, args, lambda links: SourceTree.files_matching(self, links, patterns))
        return super().files_matching(paths, patterns) if found is None else found

    def _grep(
        self, paths: list[str], args: list[str], search_here: Callable[[list[str]], list[str]]
    ) -> list[str] | None:
        """The files among `paths` that `git grep` with `args` finds (None when it fails: it cannot
        start, its arguments are too long, its pattern too big). Git walks the folders itself, and
        skips symlinks: the linked files among `paths` are searched here (`search_here`)."""
        git = _git()
        if git is None:
            return None
        self.files  # noqa: B018 -- the listing tells the links apart
        try:
            proc = subprocess.run(
                [git, "grep", "--no-index", "-l", "-z", "--no-color", "--no-textconv", *args, "--", *_pathspecs(paths)],
                cwd=self.root,
                capture_output=True,
                # No repository and no configuration of this machine: the folder is searched as it is.
                env={**os.environ, **_GREP_ENV},
            )
        except (OSError, ValueError):  # ValueError: a NUL in an argument
            return None
        if proc.returncode not in (0, 1):  # 1: no file matched
            return None
        found = {os.fsdecode(entry) for entry in proc.stdout.split(b"\0") if entry}
        links = [path for path in paths if path in self._links]
        found.update(search_here(links) if links else ())
        return [path for path in paths if path in found]


def _pathspecs(paths: list[str]) -> list[str]:
    """What `git grep` is to search for `paths`: each top folder's files with the same endings
    (`vllm/**/*.py`: not the compiled modules and data beside them), or a file by its name. Git
    walks each folder once; a list of every file would cost more than the search itself."""
    folders: set[tuple[str, str]] = set()  # (top folder, ending): thousands of paths, a few pairs
    files: set[str] = set()
    for path in paths:
        top, inside, _ = path.partition("/")
        stem, dot, ending = path.rpartition("/")[2].rpartition(".")
        if inside and dot and stem:
            folders.add((top, ending))
        else:
            files.add(path)
    specs = [f":(glob){_glob_literal(top)}/**/*.{_glob_literal(ending)}" for top, ending in folders]
    return sorted([*specs, *(f":(literal){path}" for path in files)])


def _glob_literal(text: str) -> str:
    """`text` matched as it is in a glob pathspec."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


@cache
def _git() -> str | None:
    """The git program that searches folders (`FolderTree.files_containing`); none: the files are
    read here instead."""
    return shutil.which("git")


@cache
def _git_grep_perl() -> str | None:
    """The git program, when its grep reads Perl's regular expressions (git built with PCRE): asked
    once, of no file."""
    git = _git()
    if git is None:
        return None
    try:
        proc = subprocess.run(
            [git, "grep", "--no-index", "-q", "-P", "-e", "(?<![A-Za-z])x", "--", ":(literal)atompin-none"],
            cwd=os.path.dirname(os.path.abspath(__file__)),
            capture_output=True,
            env={**os.environ, **_GREP_ENV},
        )
    except OSError:
        return None
    return git if proc.returncode == 1 else None  # 1: nothing matched (128: no Perl expressions)


def _regular_inside(path: str, real_root: str) -> bool:
    """A regular file, or a symlink to a regular file inside `real_root`."""
    try:
        if stat.S_ISREG(os.lstat(path).st_mode):
            return True
        if not os.path.islink(path):
            return False
        target = os.path.realpath(path)  # loops and dangling links resolve to something that fails below
        return os.path.commonpath([target, real_root]) == real_root and stat.S_ISREG(os.stat(target).st_mode)
    except (OSError, ValueError):
        return False


def _read_regular(path: str) -> bytes:
    """The bytes of a regular file, opened without blocking (a file swapped for a FIFO
    after listing reads as empty rather than hanging). Read with `os.read`: a file object
    per file cost a third of reading a provider's thousands of files."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            return b""
        chunks = []  # one, unless the file grew since its size was read
        while chunk := os.read(fd, status.st_size + (1 << 16)):
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


class MemoryTree(SourceTree):
    """Files held in memory (path -> text or bytes): trees for tests and examples, no disk."""

    def __init__(self, files: dict[str, str | bytes], label: str = "(memory)") -> None:
        self._files = {path: text.encode() if isinstance(text, str) else text for path, text in files.items()}
        self.label = label

    def list_files(self) -> list[str]:
        return list(self._files)

    def read(self, path: str) -> bytes:
        return self._files[path]


def size_and_time(path: str | os.PathLike[str]) -> str:
    """A file's stamp from its size and modification time: it changes with the file and costs
    no read."""
    return stamp_of(os.stat(path))


def stamp_of(st: os.stat_result) -> str:
    """The stamp `size_and_time` gives, from a stat already taken."""
    return f"{st.st_size}:{st.st_mtime_ns}"
