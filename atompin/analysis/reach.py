"""Which consumer modules the plugin's entry points reach: what only unreached modules use cannot
break the plugin as installed, so errors found there are warnings.

Roots are the consumer's declared entry points (every group: the provider's plugin groups and any
console script), read from its packaging metadata, and its `__main__` modules; once a module is
found unreached from those, also the consumer modules the provider names in its own strings (its
loader may import them: vLLM's platform resolver names tpu-inference's platform). From there, edges
are imports of consumer modules (module level or inside functions: either may run), literal
`importlib.import_module` names, and any string that names a consumer module or file (a dotted path
handed to the provider, a `worker_cls`, a file run with `exec`). A computed import name reaches
every module under its literal prefix, or every module when it has none; so does an f-string that
spells a module path under a consumer package; each computed part is taken for a name or part of
one (`f"pkg.{kind}.core"` reaches `pkg.llm.core`, not `pkg.llm.old.core`). An edge under a branch
that cannot run at this provider (a false version gate) does not count. A consumer module an import
hook serves in place of a provider module (`{"vllm.layers.sampler": "plug.sampler"}`, vllm-kunlun's
`builtins.__import__` hook) is reached only once that provider module is imported: when the
provider has it (it may import it itself), or when a reached consumer module imports it.

Applied only where it can be sound: the consumer must register entry points in a group of the
provider (it is a plugin of it), and the scanned packages must be whole top-level packages (no
unscanned module of the consumer could import them). What a user names in a configuration (a
module path on a command line) is not visible: findings there are warnings, not dropped.
"""

from __future__ import annotations

import ast
import configparser
import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from atompin.analysis.cache import AnalysisCache, dump_json, load_json
from atompin.analysis.conditions import Judgement, Reach
from atompin.analysis.demotion import demote_hidden
from atompin.analysis.limits import parse_limited
from atompin.analysis.syntax import walk
from atompin.analysis.toml_data import read_toml
from atompin.analysis.usage import Condition, ConsumerUsage
from atompin.model import Finding, Site
from atompin.sources.tree import SourceTree


def named_entry_points(tree: SourceTree) -> dict[str, list[tuple[str, str]]]:
    """group -> [(name, "module:attr"), ...] declared by the tree's packaging metadata (wheel or
    egg metadata, `pyproject.toml`, `setup.cfg`, a literal `entry_points=` in `setup.py`): a
    console script's name is the command (`vllm-omni`)."""
    groups: dict[str, list[tuple[str, str]]] = {}

    def add(group: str, items: Iterable[tuple[str, str]]) -> None:
        groups.setdefault(group, []).extend((k.strip(), v.strip()) for k, v in items if v.strip())

    for path in sorted(tree.files):
        name = path.rpartition("/")[2]
        if (
            name == "entry_points.txt"
            and path.count("/") == 1
            and path.split("/")[0].endswith((".dist-info", ".egg-info"))
        ):
            parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
            parser.optionxform = str  # type: ignore[assignment,method-assign]
            try:
                parser.read_string(tree.read_text(path))
            except configparser.Error:
                continue
            for section in parser.sections():
                add(section, parser[section].items())
    if "pyproject.toml" in tree.files:
        _pyproject(tree.read_text("pyproject.toml"), add)
    if "setup.cfg" in tree.files:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(tree.read_text("setup.cfg"))
        except configparser.Error:
            parser = configparser.ConfigParser()
        if parser.has_section("options.entry_points"):
            for group, text in parser["options.entry_points"].items():
                add(group, (line.partition("=")[::2] for line in text.splitlines() if "=" in line))
    if "setup.py" in tree.files:
        _setup_py(tree.read("setup.py"), add)
    return groups


def _pyproject(text: str, add: Callable[[str, Iterable[tuple[str, str]]], None]) -> None:
    data = read_toml(text)
    if data is None:
        return
    project = data.get("project", {})
    if not isinstance(project, dict):
        return
    for group, table in (project.get("entry-points", {}) or {}).items():
        if isinstance(table, dict):
            add(group, ((str(k), str(v)) for k, v in table.items()))
    for key in ("scripts", "gui-scripts"):
        table = project.get(key, {}) or {}
        if isinstance(table, dict):
            add(f"console_{key}", ((str(k), str(v)) for k, v in table.items()))


def _setup_py(source: bytes, add: Callable[[str, Iterable[tuple[str, str]]], None]) -> None:
    try:
        tree = parse_limited(source)
    except (SyntaxError, ValueError):
        return
    for node in walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "entry_points":
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            if isinstance(value, dict):
                for group, items in value.items():
                    lines = [items] if isinstance(items, str) else list(items)
                    add(str(group), (str(line).partition("=")[::2] for line in lines if "=" in str(line)))


def _spelled_by(glob: list[str], parts: list[str], attribute: bool = False) -> bool:
    """May a computed module name (its parts, `*` for each computed part: a "glob:" edge target)
    name the module of these parts? For a dotted path that may end with an `attribute` (a "path:"
    edge target), a name of one of the module's attributes too."""
    lengths = (len(glob), len(glob) - 1) if attribute else (len(glob),)
    return len(parts) in lengths and all(map(fnmatchcase, parts, glob))


def is_test_module(module: str) -> bool:
    """Is `module` one a test runner collects (`test_x`, `x_test`, `conftest`), or in a package
    named `test` or `tests` below the top one? A library ships some (xinference's
    `xavier/test/test_legacy_cache_salt.py`); nothing of it imports them, nor does a user."""
    parts = module.split(".")
    last = parts[-1]
    return (
        last.startswith("test_")
        or last.endswith("_test")
        or last == "conftest"
        or bool({"test", "tests"} & set(parts[1:]))
    )


@dataclass(frozen=True)
class Unreached:
    """A consumer module the entry points do not reach, and why (for the message)."""

    module: str
    why: str


def _branch(when: tuple[Condition, ...], site: object) -> str:
    """The branch an edge at `site` sits in, as its test reads: "`test` at site", or where the edge
    runs when the test is false (past an early return), "`test` being false at site"."""
    last = next((c for c in reversed(when) if c.text), None)
    if last is None:
        return f"`a branch` at {site}"
    return f"`{last.text}`{'' if last.expect else ' being false'} at {site}"


class Reachability:
    """The consumer modules reached from the roots over live edges."""

    def __init__(
        self,
        usage: ConsumerUsage,
        modules: dict[str, str],
        roots: list[str],
        groups: list[str],
        judge: Callable[[tuple[Condition, ...]], Judgement],
        provider_has: Callable[[str], bool] = lambda module: True,
        more_roots: Callable[[], list[str]] | None = None,
    ) -> None:
        """`modules`: scanned module name -> path. `provider_has` says whether the provider has a
        module of that name (an import hook's edge needs it imported: `ModuleEdge.after`).
        `more_roots`: further roots, asked for only once a module is found unreached from `roots`
        (a search of the provider: `provider_strings`)."""
        self.modules = modules
        self.groups = groups
        self._more_roots = more_roots
        by_file: dict[str, list[str]] = {}
        for module, path in modules.items():
            by_file.setdefault(path.rpartition("/")[2], []).append(module)
        self._live: dict[str, set[str]] = {}
        self._dead: dict[str, dict[str, str]] = {}  # source -> target -> the branch that cannot run
        # Provider module -> the edges an import hook makes when it is imported (`ModuleEdge.after`).
        self._hooked: dict[str, list[tuple[str, str, Site]]] = {}
        for edge in usage.module_edges:
            judgement = judge(edge.when)
            for target in self._targets(edge.target, by_file):
                if judgement.reach not in (Reach.LIVE, Reach.UNDECIDED):
                    self._dead.setdefault(edge.source, {}).setdefault(target, _branch(edge.when, edge.site))
                elif edge.after and not provider_has(edge.after):
                    self._hooked.setdefault(edge.after, []).append((edge.source, target, edge.site))
                else:
                    self._live.setdefault(edge.source, set()).add(target)
        by_path = {path: module for module, path in modules.items()}
        self._imports: dict[str, set[str]] = {}  # consumer module -> the provider modules it imports
        for group in usage.groups:
            if group.path in by_path:
                names = {u.ref.module for each in group.alternatives for u in each}
                names |= {f"{u.ref.module}.{u.ref.path[0]}" for each in group.alternatives for u in each if u.ref.path}
                self._imports.setdefault(by_path[group.path], set()).update(names)
        self.library = not groups
        self._tests: list[str] = []  # a library's test modules (`is_test_module`): no roots
        self._tested: dict[str, list[str]] | None = None  # what only they reach (`_only_tested`)
        if self.library:
            unimported = self._unimported()
            roots = [m for m in unimported if not is_test_module(m)]
            self._tests = [m for m in unimported if is_test_module(m)]
        self._settle(roots)

    def _unimported(self) -> list[str]:
        """A library's roots: every module no other consumer module imports or names (nor one
        below it: importing a module imports its packages), whatever the branch; any of them
        may be imported from outside. What they reach over live edges is used; what only
        branches that cannot run here import is not (`blocked`)."""
        targets = {t for edges in (self._live, self._dead) for source in edges for t in edges[source] if t != source}
        targets |= {target for edges in self._hooked.values() for _, target, _ in edges}
        imported = {".".join(t.split(".")[:i]) for t in targets for i in range(1, t.count(".") + 2)}
        return sorted(m for m in self.modules if m not in imported)

    def _settle(self, roots: list[str]) -> None:
        """What `roots` reach over the edges (`reached`), and why the rest is not (`hooked_only`,
        `blocked`)."""
        live, dead, hooked, modules = self._live, self._dead, self._hooked, self.modules
        self.roots = roots
        self.reached = self._closure(roots, live, hooked, self._imports)
        # Modules an import hook would serve in place of a provider module nobody imports here.
        self.hooked_only = {
            target: f"in place of {after} (its map at {site})"
            for after, edges in sorted(hooked.items())
            for source, target, site in edges
            if source in self.reached and target not in self.reached
        }
        # Modules the entry points would reach but for branches that cannot run at this provider.
        self.blocked: dict[str, str] = {}
        todo = deque(
            (target, why)
            for source in sorted(self.reached)
            for target, why in sorted(dead.get(source, {}).items())
            if target not in self.reached
        )
        while todo:
            module, why = todo.popleft()
            if module in self.reached or module in self.blocked:
                continue
            self.blocked[module] = why
            parts = module.split(".")
            todo.extend((".".join(parts[:i]), why) for i in range(1, len(parts)) if ".".join(parts[:i]) in modules)
            todo.extend((m, why) for m in sorted(live.get(module, ())))
            todo.extend((m, why) for m in sorted(dead.get(module, {})))

    def _only_tested(self) -> dict[str, list[str]]:
        """A library's modules that only its test modules reach (not the roots), with those tests."""
        if self._tested is None:
            self._tested = {}
            for test in self._tests:
                for module in self._closure([test], self._live, self._hooked, self._imports) - self.reached:
                    if not is_test_module(module):
                        self._tested.setdefault(module, []).append(test)
        return self._tested

    def _targets(self, target: str, by_file: dict[str, list[str]]) -> set[str]:
        if target == "*":
            return set(self.modules)
        if target.startswith("file:"):
            return set(by_file.get(target[5:], []))
        if target.startswith("prefix:"):
            prefix = target[7:]
            return {m for m in self.modules if m.startswith(prefix)}
        if target.startswith(("glob:", "path:")):
            kind, _, glob = target.partition(":")
            return {m for m in self.modules if _spelled_by(glob.split("."), m.split("."), kind == "path")}
        parts = target.split(".")
        for i in range(len(parts), 0, -1):
            name = ".".join(parts[:i])
            if name in self.modules:
                return {name}
        return set()

    def _closure(
        self,
        roots: list[str],
        live: dict[str, set[str]],
        hooked: dict[str, list[tuple[str, str, Site]]],
        imports: dict[str, set[str]],
    ) -> set[str]:
        """The modules the roots reach over live edges, and over an import hook's edges once a
        reached module imports the provider module the hook stands in for (or one below it)."""
        reached: set[str] = set()
        imported: set[str] = set()
        todo = deque(m for root in roots for m in self._targets(root, {}))
        while todo:
            while todo:
                module = todo.popleft()
                if module in reached:
                    continue
                reached.add(module)
                imported |= imports.get(module, set())
                parts = module.split(".")
                todo.extend(".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in self.modules)
                todo.extend(live.get(module, ()))
            todo.extend(
                target
                for after, edges in hooked.items()
                if any(name == after or name.startswith(after + ".") for name in imported)
                for source, target, _ in edges
                if source in reached and target not in reached
            )
        return reached

    def unreached(self, module: str) -> Unreached | None:
        if module in self.reached or module not in self.modules:
            return None
        if self._more_roots is not None:
            more, self._more_roots = self._more_roots(), None
            if more:
                self._settle([*self.roots, *more])
                return self.unreached(module)
        if module in self.blocked:
            return Unreached(module, f"imported only under {self.blocked[module]}, which cannot run at this provider")
        if self.library:
            if is_test_module(module):
                return Unreached(module, "a test module of the package: its test runner imports it, nothing else does")
            tests = self._only_tested().get(module)
            if tests:
                listed = ", ".join(tests[:3]) + (f" and {len(tests) - 3} more" if len(tests) > 3 else "")
                return Unreached(module, f"imported only by the package's test modules ({listed})")
            return None  # imported where it can run, or only in a cycle no other module enters
        if module in self.hooked_only:
            return Unreached(
                module,
                f"served only by an import hook {self.hooked_only[module]}, a module this provider does not have "
                "and that no module the plugin's entry points reach imports",
            )
        return Unreached(
            module,
            f"not reached from the plugin's entry points ({', '.join(self.groups)}); it runs only if "
            "something outside the plugin imports it by name (a module path given in a configuration)",
        )


@dataclass(frozen=True)
class ReachRoots:
    """Where reachability starts, read from the consumer tree alone (`reach_roots`): the scanned
    top packages, the provider's plugin groups the consumer registers in, and the root modules."""

    tops: list[str]
    groups: list[str]  # none: a library (see `Reachability`)
    roots: list[str]
    modules: dict[str, str]  # scanned module name -> path


def reach_roots(
    tree: SourceTree,
    packages: list[str],
    provider: str,
    declared: dict[str, list[tuple[str, str]]] | None = None,
) -> ReachRoots | None:
    """The roots of the scanned packages' reachability; None where it would not be sound (see the
    module docstring): a package that is not whole (an unscanned module of its package could
    import it), or a consumer registering no entry point in a group of the provider's.
    `declared`: the tree's entry points, where they were read already (`named_entry_points`)."""
    if any("." in p for p in packages):
        return None
    named = declared if declared is not None else named_entry_points(tree)
    groups = {group: [value for _, value in items] for group, items in named.items()}
    plugin_groups = sorted(g for g in groups if g.startswith(f"{provider}."))
    modules = {tree.module_name(path)[0]: path for p in packages for path in tree.python_files(p)}
    roots = [value.partition(":")[0].strip() for values in groups.values() for value in values]
    roots = [r for r in roots if r.split(".")[0] in packages]
    if not plugin_groups or not roots:
        # A library, or a plugin without entry points: any module may be imported from outside,
        # save one the consumer imports only where it cannot run (`Reachability`, `library`).
        return ReachRoots(sorted(set(packages)), [], [], modules)
    roots += [m for m in modules if m.rpartition(".")[2] == "__main__"]
    return ReachRoots(sorted(set(packages)), plugin_groups, roots, modules)


def reachability(
    start: ReachRoots,
    usage: ConsumerUsage,
    judge: Callable[[tuple[Condition, ...]], Judgement],
    provider_has: Callable[[str], bool] = lambda module: True,
    provider_strings: Callable[[list[str]], list[str]] = lambda tops: [],
) -> Reachability:
    """The reachability of the scanned packages from `start`'s roots. `provider_has`: see
    `Reachability`. `provider_strings`: the dotted names under the top packages that the provider
    writes as strings (its own loader may import those modules by name: `provider_strings`), asked
    only when a module is unreached."""
    return Reachability(
        usage,
        start.modules,
        start.roots,
        start.groups,
        judge,
        provider_has,
        lambda: provider_strings(start.tops),
    )


# Bump when what a cached search of the provider's strings holds changes meaning.
STRINGS_FORMAT = "atompin-provider-strings-1"


@dataclass
class _StringsSearched:
    """What the last search of a package for strings under some top names searched: each file's
    stamp then (path -> stamp), and the names each file that wrote any wrote."""

    stamps: dict[str, str]
    found: dict[str, list[str]]


def provider_strings(tree: SourceTree, package: str, tops: list[str], cache: AnalysisCache | None = None) -> list[str]:
    """The dotted names under the consumer's top packages `tops` that the provider's files write as
    string literals: modules and classes the provider itself may import by name (vLLM's platform
    resolver returns "tpu_inference.platforms.tpu_platform.TpuPlatform", a plugin that declares only
    a `vllm.general_plugins` entry point). With a `cache`, only the files whose stamp changed since
    the last search of this package are searched (a bump changes a few hundred of vLLM's files),
    and not those whose names another read of their bytes recorded (`strings_reader`)."""
    if not tops:
        return []
    paths = tree.python_files(package)
    stamps = {path: tree.stamp(path) for path in paths}
    key = f"{STRINGS_FORMAT}:{package}:{','.join(tops)}"
    cached = cache.get_raw(key) if cache is not None else None
    earlier = load_json(_StringsSearched, cached) if cached is not None else None
    if earlier is None:
        earlier = _StringsSearched({}, {})
    fresh = [path for path in paths if earlier.stamps.get(path) != stamps[path]]
    found = {path: names for path, names in earlier.found.items() if earlier.stamps.get(path) == stamps.get(path)}
    unsearched = fresh
    # What a read recorded is looked for only when it recorded the first: a folder searched in
    # place reads no file, and thousands of lookups that find nothing cost more than its search.
    if cache is not None and fresh and cache.get_raw(_file_key(tops, fresh[0], stamps[fresh[0]])) is not None:
        unsearched = []
        for path in fresh:
            recorded = cache.get_raw(_file_key(tops, path, stamps[path]))
            if recorded is None:
                unsearched.append(path)
            elif recorded:
                found[path] = recorded.decode().split()
    found.update(_strings_in(tree, unsearched, tops) if unsearched else {})
    if cache is not None and fresh:
        cache.put_raw(key, dump_json(_StringsSearched, _StringsSearched(stamps, found)))
    return sorted({name for names in found.values() for name in names})


def strings_reader(tree: SourceTree, tops: list[str]) -> Callable[[str, bytes], list[tuple[str, bytes]]]:
    """For a reader of every provider file's bytes (the name search's identifiers): the cache
    entry recording the names under `tops` one file writes as strings, which `provider_strings`
    then takes instead of searching that file again (a commit's search reads every blob: a fifth
    of a second on vLLM, at the end of a lock)."""
    words = [f"{top}.".encode() for top in tops]
    literal = _literal(tops)

    def entries(path: str, data: bytes) -> list[tuple[str, bytes]]:
        names = _written_names(data, literal) if any(word in data for word in words) else []
        return [(_file_key(tops, path, tree.stamp(path)), " ".join(names).encode())]

    return entries


def _file_key(tops: list[str], path: str, stamp: str) -> str:
    return f"{STRINGS_FORMAT}-file:{','.join(tops)}:{path}:{stamp}"


def _literal(tops: list[str]) -> re.Pattern[bytes]:
    """A string literal holding a dotted name under `tops`: the name is its group 1."""
    names = b"|".join(re.escape(top.encode()) for top in tops)
    return re.compile(rb"[\"']((?:" + names + rb")\.[\w.:]+)[\"']")


def _written_names(data: bytes, literal: re.Pattern[bytes]) -> list[str]:
    """The dotted names `data` writes as string literals (`_literal`)."""
    return sorted({m.group(1).decode() for m in literal.finditer(data)})


def _strings_in(tree: SourceTree, paths: list[str], tops: list[str]) -> dict[str, list[str]]:
    """path -> the dotted names under `tops` its text writes as strings, for the files that do."""
    names = "|".join(re.escape(top) for top in tops)
    if tree.searches_in_place:  # a folder: `git grep -P` in place
        files = tree.files_matching(paths, [f"[\"'](?:{names})\\."])
    else:  # a commit: `git grep -F` there (a pattern would read every blob here)
        files = tree.files_containing(paths, [quote + f"{top}.".encode() for top in tops for quote in (b'"', b"'")])
    out: dict[str, list[str]] = {}
    literal = _literal(tops)
    for path, data in tree.read_many(files):
        written = _written_names(data, literal)
        if written:
            out[path] = written
    return out


def demote_unreached(findings: list[Finding], reach: Reachability, module_of: Callable[[str], str]) -> list[Finding]:
    """Errors whose every site is in a module the entry points do not reach become warnings that say so."""

    return demote_hidden(
        findings, lambda site: reach.unreached(module_of(site.path)), lambda first: f"in {first.module}, {first.why}"
    )
