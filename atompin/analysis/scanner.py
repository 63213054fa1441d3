"""The consumer-side visitor: a small abstract interpreter over the consumer's AST.

It follows names bound to provider objects (imports, aliases, `getattr`,
`importlib.import_module`, loop variables over literal name lists, arguments
passed to the consumer's own helpers, across files) and records every import,
attribute chain and patch that reaches the provider package, with the guard
that decides what happens when the target is gone. Pure: source text in,
`ConsumerUsage` out; nothing is imported or executed.

`ConsumerScanner.scan` is the entry point. This module holds the scanner's
state and its entry point, and how it binds names and records what it finds;
its parts are in `atompin.analysis.scanning`, one concern each:

- `statements`: each statement is read by its `_visit_<class name>` method;
- `expressions`: each expression is evaluated by its `_eval_<class name>`
  method, to an abstract value (`values`);
- `helpers`: the consumer's own functions read again with what calls hand them;
- `conditions`: what must hold for a block to run (version gates, `hasattr`,
  try handlers; what a try/except means is decided in `guards`);
- `given_names`: names the consumer hands the provider (`sys.modules`,
  registrations, dotted paths);
- `surface`: the contact surface the drift rules read (classes, receivers,
  unpacking, handovers);
- `state` and `common`: the context a block is read in, and small shared
  questions.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from atompin.analysis.gates import Gate
from atompin.analysis.guards import StringTests
from atompin.analysis.limits import TOO_DEEP, parse_limited
from atompin.analysis.names import in_package
from atompin.analysis.prose import ProseReader
from atompin.analysis.scanning.common import binding_wrapper, caught_by, wrapped
from atompin.analysis.scanning.conditions import ConditionReader
from atompin.analysis.scanning.expressions import ExpressionEvaluator
from atompin.analysis.scanning.given_names import GivenNames
from atompin.analysis.scanning.helpers import HelperCalls
from atompin.analysis.scanning.state import ConsumerFunction, Ctx, Rescan, SourceFile, present_conditions
from atompin.analysis.scanning.statements import StatementReader
from atompin.analysis.scanning.surface import SurfaceRecorder
from atompin.analysis.signature import Signature, signature_of
from atompin.analysis.usage import (
    ClassBase,
    Condition,
    ConditionKind,
    ConsumerClass,
    ConsumerUsage,
    Guard,
    ImportGroup,
    ImportUse,
    MemberUse,
    PatchSite,
    Read,
    ReadKind,
    Ref,
    ReplacementVariant,
)
from atompin.analysis.values import ConsumerValue, LambdaValue, ProviderValue, Scope, Value
from atompin.model import Site

# A replacement's return leaving output buffers unwritten: its site, the buffers, and the line
# and side of each `if` it sits in.
_RawReturn = tuple[Site, tuple[str, ...], tuple[tuple[int, bool], ...]]
# Bounds that keep the interpreter finite on any input (`state.MAX_DEPTH` and the statements'
# `_MAX_UNROLL` are the others): helper bodies re-read with bound arguments, in all...
_MAX_RESCANS = 4000
# ...and of them, those read again only for a receiver's members (`helper(self.config)`),
# instances or override parameters, counted apart: common in model code, they must not use up
# what provider objects handed to helpers need.
_MAX_MEMBER_RESCANS = 20000
# How many re-exports deep a consumer function is followed (a package re-exporting a
# subpackage's re-export is two).
_REEXPORT_DEPTH = 5

# Loads a consumer module outside the scanned files: name -> (path, is_package, source).
ModuleLoader = Callable[[str], "tuple[str, bool, bytes] | None"]


@dataclass
class ConsumerScanner(StatementReader, ExpressionEvaluator, HelperCalls, ConditionReader, GivenNames, SurfaceRecorder):
    """Scan a consumer's files for what they use of `provider_package`.

    `consumer_packages` are the consumer's own top-level packages: calls into
    their helpers are followed, loading helper modules through `load_module`
    when they are outside the scanned files.
    """

    provider_package: str
    consumer_packages: tuple[str, ...] = ()
    load_module: ModuleLoader | None = None
    usage: ConsumerUsage = field(init=False)

    def __post_init__(self) -> None:
        self.usage = ConsumerUsage(self.provider_package)
        self._functions: dict[str, ConsumerFunction] = {}
        self._modules: set[str] = set()
        self._queue: deque[Rescan] = deque()
        self._seen_calls: set[
            tuple[int, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...], tuple[Condition, ...]]
        ] = set()
        self._rescans = 0
        self._member_rescans = 0
        # By function node: the `**` parameter it hands on unchanged, or None (`_forwarded_keywords`).
        self._kwargs_handed_on: dict[int, str | None] = {}
        self._reads: set[Read] = set()
        self._pending: list[tuple[ConsumerValue, ast.Call, list[Value], dict[str, Value], Ctx]] | None = None
        # Module bodies parsed and not read yet: a version gate helper's module is read on first need.
        self._unread: dict[str, tuple[SourceFile, ast.Module]] = {}
        self._helper_values: dict[tuple[str, str], Value] = {}
        self._trees: dict[str, ast.Module] = {}  # every consumer module parsed, by name
        self._registries: dict[str, bool] = {}
        self._version_helpers: dict[int, bool] = {}  # id of a function node -> could it compute a gate
        self._signature_readers: dict[int, bool] = {}  # id of a function node -> reads a signature's parameters
        # (class dotted name, attribute) -> the gate under which __init__ resets `self.attribute`.
        self._state_gates: dict[tuple[str, str], tuple[str, Gate]] = {}
        self._scopes: dict[str, Scope] = {}
        self._private_names: dict[str, dict[str, tuple[list[ast.Call], int]]] = {}  # see `_private_calls`
        self._named_elsewhere: dict[tuple[str, str], bool] = {}  # see `_version_params`
        # What held where each consumer function was called, by function and call site (`_called_when`).
        self._call_sites: dict[str, dict[str, tuple[Condition, ...]]] = {}
        # `Cls(...)` of what may be a consumer class, with where and under what it is made: judged
        # when the class turns out to derive from a provider class (`_finish_contact`).
        self._class_calls: list[tuple[str, ast.Call, Ctx, tuple[Condition, ...]]] = []
        self._deferring = True  # plain reads of functions called once wait for their caller
        self._def_counts: dict[str, int] = {}  # see `_defined_times`
        # The test of each `if` on a version gate (or a module or parameter test), by its file and
        # line (None: two tests on one line; `_if_tests`), and the returns of replacements that leave
        # an output buffer unwritten, by replacement, with the `if`s each sits in (`_unwritten`).
        self._gate_at: dict[tuple[str, int], Condition | None] = {}
        self._unwritten_raw: dict[tuple[object, ...], list[_RawReturn]] = {}
        self._kept_paths: set[tuple[str, str]] = set()  # see `_path_kept_for_reads`
        self._aliases: dict[str, dict[str, str]] = {}  # by file: a version reader's alias -> its name
        self._import_paths: dict[str, dict[int, list[str]]] = {}  # by file: `import_path_targets`
        # Names an import of a package neither the consumer's nor the provider's binds, by file.
        self._other_packages: dict[str, set[str]] = {}
        # Calls of module-level consumer functions: (path, name) -> call site -> the try around it
        # that catches ImportError ("" when none does). See `_caught_calls`.
        self._own_calls: dict[tuple[str, str], dict[str, str]] = {}
        # Every definition of a consumer function's dotted name, in order (`_functions` keeps the first).
        self._definitions: dict[str, list[ConsumerFunction]] = {}
        self._unscanned: list[bytes] = []  # the sources of the consumer's files not scanned
        self._feature_tests: set[int] = set()  # the tries of functions that only test an import
        self._naming_files: dict[str, bool] = {}  # see `_names_provider`
        self._quiet = False  # evaluating for the contact surface only: record nothing, not even reads
        self._finishing = False  # every body has been read: modules loaded now are read for their classes
        self._classes: dict[str, ConsumerClass] = {}
        # The simple names each file gives the consumer's classes: those it defines, and those it
        # imports from the consumer's modules (`_unshadowed`).
        self._class_names: dict[str, set[str]] = {}
        # Attributes of each consumer class annotated with (or assigned) a provider class.
        self._typed_attributes: dict[str, dict[str, tuple[Ref, ...]]] = {}
        # class -> attribute -> the consumer class every `self.attr = C(...)` of the class makes
        # (dotted as written: read once the scan knows its classes, `_receiver_attribute`).
        self._made_attributes: dict[str, dict[str, str]] = {}
        # class -> attribute -> the parameter not annotated ("method:x") every `self.attr = x` of
        # the class stores (`_receiver_attribute` types it as `Receiver.PARAM`).
        self._param_attributes: dict[str, dict[str, str]] = {}
        # (class, method) -> how the method hands on to the one it overrides, seen while reading its body.
        self._delegations: dict[tuple[str, str], set[ClassBase]] = {}
        # (class, m) -> the class's other methods whose bodies call `super().m(...)` (a helper the
        # override of m may hand on through: `_delegated`).
        self._super_helpers: dict[tuple[str, str], set[str]] = {}
        self._string_tests: dict[tuple[str, str], StringTests] = {}  # (path, function) -> its strings, read once
        self._patchers: dict[str, bool] = {}  # consumer classes that set a subclass's members on a target
        self._kept_originals: dict[str, dict[str, ProviderValue]] = {}  # class -> provider objects its body keeps
        self._sources: dict[str, bytes] = {}  # each parsed file's source, by path
        self._lines: dict[str, list[bytes]] = {}  # a file's lines, once a node's text is asked for
        # The visit and eval methods by class of node, unbound (a bound one would make a cycle that
        # keeps every syntax tree alive until the paused collector runs).
        self._visitors: dict[type, Callable[[ConsumerScanner, Any, Ctx], Ctx | None] | None] = {}
        self._evaluators: dict[type, Callable[[ConsumerScanner, Any, Ctx], Value] | None] = {}
        # In order, once each (bodies are read again), with where they are read: whether the
        # function tests the name is read from its text for the uses kept (`_finish_contact`).
        self._member_uses: dict[MemberUse, tuple[str, str]] = {}
        # Attributes read for their object (`f(x.a)`), with the class whose `self` they are read on
        # ("" for any other receiver): see `passed_members`.
        self._value_reads: set[tuple[str, str]] = set()
        self._baseless: dict[str, ast.ClassDef] = {}  # classes without bases, by dotted name
        self._reaching: dict[str, bool] = {}  # see `_may_reach_provider`
        self._mixins_reaching: set[str] | None = None  # see `_mixed_in_reaching`
        self._recording: dict[str, bool] = {}  # see `_may_record`
        self._function_texts: dict[tuple[str, str], bytes] = {}  # see `_names_in_string`
        self._namespace_files: dict[str, bool] = {}  # does a file make a `Namespace(` (`_namespace_returned`)
        # Each consumer function installed as a patch: the version gates of each install (see `_installed_when`).
        self._installs: dict[str, list[tuple[Condition, ...]]] = {}
        # A consumer function installed in a provider object's place (`C.m = f`): what it was set
        # on, each time (`_bind_receivers` types its `self` with it when it is one class).
        self._installed_on: dict[str, set[tuple[Ref, ...]]] = {}
        self._registry_sites: set[Site] = set()  # string members of the consumer's own enums
        self._comments: dict[bytes, ProseReader] = {}  # see `_in_comment`
        # A ladder's alternative made of what follows a try (see `_visit_Try`), dropped when empty.
        # With what the try's handler said the ladder falls back to, and how many alternatives it had.
        self._ladder_rests: list[tuple[ImportGroup, list[ImportUse], tuple[str, bool, bool], int]] = []

    # -- entry point --------------------------------------------------------------------

    def scan(
        self,
        files: Iterable[tuple[str, str, bool, bytes]],
        unscanned: Iterable[tuple[str, bytes]] = (),
        bodies_read: Callable[[ConsumerUsage], None] | None = None,
    ) -> ConsumerUsage:
        """`files`: (path, module name, is package, source). `unscanned`: (path, source) of the
        consumer's other files, not scanned: a class they name by dotted path is handed over all
        the same (its module is read when it is not scanned). `bodies_read` is handed the usage
        as soon as every body has been read, before what was handed over is resolved: its
        imports, patches and calls are then complete. Returns the usage found."""
        for path, source in unscanned:
            self._record_class_paths(path, source)
            self._unscanned.append(source)
        parsed: list[tuple[SourceFile, ast.Module]] = []
        for path, module, is_package, source in files:
            self.usage.files += 1
            self._modules.add(module)
            tree = self._parse(path, source)
            if tree is not None:
                parsed.append((SourceFile(path, module, is_package), tree))
                self._sources[path] = source
                self._record_class_paths(path, source)
        # Module bodies first (they define what functions see), then every function body,
        # then helper bodies again with the arguments call sites pass them.
        self._pending = []
        self._unread = {file.module: (file, tree) for file, tree in parsed}
        self._trees.update({file.module: tree for file, tree in parsed})
        for file, _ in parsed:
            self._read_module(file.module)
        pending, self._pending = self._pending, None
        for call in pending:
            self._call_helper(*call)
        deferred: list[Rescan] = []
        while self._queue or deferred:
            if not self._queue:  # the callers read so far: what held at their calls is known
                ready = [job for job in deferred if not self._waits_for_caller(job.function)]
                self._queue.extend(ready or deferred)  # none ready: their callers are never read
                taken = {id(job) for job in ready}
                deferred = [job for job in deferred if ready and id(job) not in taken]
                self._deferring = bool(ready)
            job = self._queue.popleft()
            if self._deferring and not job.binding and self._waits_for_caller(job.function):
                deferred.append(job)
                continue
            if job.binding:  # every body is read once; re-reads with arguments are bounded
                if self._hands_provider(job.binding.values()):
                    self._rescans += 1
                    over = self._rescans > _MAX_RESCANS
                else:
                    self._member_rescans += 1
                    over = self._member_rescans > _MAX_MEMBER_RESCANS
                if over:  # counted, and said (`analysis-bound`): what it does with them is unknown
                    self.usage.unread_helpers += 1
                    if self.usage.first_unread_helper is None:
                        self.usage.first_unread_helper = Site(job.function.file.path, job.function.node.lineno)
                    continue
            self._within_limits(job.function.file.path, self._run_function, job)
        self._drop_empty_rests()
        if bodies_read is not None:
            bodies_read(self.usage)
        self._finish_contact()
        self._caught_calls()
        self._dedupe()
        cut_short = {path for path, _, _ in self.usage.unparseable}  # a body too deep to read
        self.usage.read_paths = sorted(file.path for file, _ in parsed if file.path not in cut_short)
        return self.usage

    def _drop_empty_rests(self) -> None:
        """A ladder's alternative made of what follows a try (`_visit_Try`) that imports nothing
        is no alternative: it would let the ladder pass at every provider."""
        for group, rest, handled, count in self._ladder_rests:
            if not rest:
                # Nor did a try in it add one: the handler's fallback is what runs where the imports fail.
                if len(group.alternatives) == count and not group.fallback:
                    group.fallback, group.leaves, group.exits = handled
                group.alternatives = [alt for alt in group.alternatives if alt is not rest]

    def _hands_provider(self, values: Iterable[Value]) -> bool:
        """Is one of these values a provider object (or a string naming a provider module)? What
        a helper is read again for, and loaded for when outside the scan."""
        return any(isinstance(v, ProviderValue) or (isinstance(v, str) and self._is_provider(v)) for v in values)

    def _caught_calls(self) -> None:
        """The module-level functions every call of which sits in a try that catches ImportError
        (`with suppress(ImportError): install()`), and whose name the consumer's files (scanned or
        not) write nowhere but at their definition and those calls (not imported elsewhere, not
        handed on as a callback): an import failing inside them is caught there."""
        for (path, name), calls in sorted(self._own_calls.items()):
            tries = sorted(set(calls.values()))
            if not tries or "" in tries:
                continue
            if self._times_written(name) == 1 + len(calls):
                self.usage.caught_calls[f"{path}:{name}"] = tries[0]

    def _times_written(self, name: str) -> int:
        """How many times the consumer's files (scanned or not) write `name` as a word, outside
        comments (a comment naming a function is no use of it)."""
        needle = name.encode()
        # The word pattern is read only where the plain bytes are (it is the slow part).
        holding = [source for source in (*self._sources.values(), *self._unscanned) if needle in source]
        word = re.compile(rb"\b" + re.escape(needle) + rb"\b")
        return sum(
            1 for source in holding for match in word.finditer(source) if not self._in_comment(source, match.start())
        )

    def _in_comment(self, source: bytes, at: int) -> bool:
        """Is byte `at` of one of the consumer's sources in a comment (each source read once)?"""
        reader = self._comments.get(source)
        if reader is None:
            reader = self._comments[source] = ProseReader(source)
        return reader.in_comment(at)

    def _within_limits(self, path: str, read: Callable[..., object], *args: object) -> None:
        """Read a body; hostile nesting that exhausts the recursion makes the file unknown, not a crash."""
        try:
            read(*args)
        except RecursionError:
            self.usage.unparseable.append((path, 0, TOO_DEEP))

    def _parse(self, path: str, source: bytes) -> ast.Module | None:
        try:
            return parse_limited(source)  # over a per-file limit: unparseable, like a syntax error
        except (SyntaxError, ValueError) as exc:
            self.usage.unparseable.append((path, getattr(exc, "lineno", 0) or 0, getattr(exc, "msg", str(exc))))
            return None

    def _read_module(self, module: str) -> None:
        """Read a parsed module's body now (once), as its first import would."""
        found = self._unread.pop(module, None)
        if found is None:
            return
        file, tree = found
        scope = self._module_scope(module)
        self._within_limits(file.path, self._block, tree.body, Ctx(file, scope))

    def _function(self, dotted_name: str, load: bool = True) -> ConsumerFunction | None:
        """A consumer function by dotted name, loading its module on first need (`load`: also a module
        outside the scanned packages), following re-exports: a package's `__init__` binding a
        function of one of its modules (vllm-rbln's `from vllm_rbln.patches import register_patch`)."""
        for _ in range(_REEXPORT_DEPTH):
            fn = self._defined_function(dotted_name, load)
            if fn is not None:
                return fn
            module, _, name = dotted_name.rpartition(".")
            scope = self._scopes.get(module)
            value = scope.names.get(name) if scope is not None else None
            if not isinstance(value, ConsumerValue) or value.dotted == dotted_name:
                return None
            dotted_name = value.dotted
        return None

    def _defined_function(self, dotted_name: str, load: bool) -> ConsumerFunction | None:
        """A consumer function by the dotted name of the module defining it (see `_function`)."""
        if dotted_name not in self._functions and self._unread:
            parts = dotted_name.split(".")
            for i in range(1, len(parts)):
                self._read_module(".".join(parts[:i]))
        fn = self._functions.get(dotted_name)
        if fn is not None or self.load_module is None or not load:
            return fn
        module = dotted_name
        while "." in module:
            module = module.rpartition(".")[0]
            if module in self._modules:
                return None
            loaded = self.load_module(module) if self._is_consumer(module) else None
            if loaded is not None:
                self._modules.add(module)
                path, is_package, source = loaded
                tree = self._parse(path, source)
                if tree is not None:
                    self._sources[path] = source
                    self._trees[module] = tree
                    file = SourceFile(path, module, is_package)
                    known = len(self._functions)
                    self._block(tree.body, Ctx(file, self._module_scope(module), record=False))
                    if self._finishing:
                        self._drop_bodies(module, known)
                return self._functions.get(dotted_name)
        return None

    def _drop_bodies(self, module: str, known: int) -> None:
        """Free the syntax tree of a module loaded while the scan finishes (for a class handed
        over): its body has been read and no body is read again then, so only the definitions'
        signatures are kept (the `known` functions before it are others'). The peak memory is
        then the scan's trees and one such module, not all of them."""
        del self._trees[module]
        for fn in itertools.islice(self._functions.values(), known, None):
            fn.node.body = []

    def _dedupe(self) -> None:
        u = self.usage
        seen_groups: dict[tuple[object, ...], ImportGroup] = {}
        for g in u.groups:
            g.alternatives = [alt for alt in g.alternatives if alt]
            if not g.alternatives:
                continue
            key = (g.path, g.line, g.function, tuple(tuple((x.site, x.ref) for x in alt) for alt in g.alternatives))
            seen_groups.setdefault(key, g)
        u.groups = list(seen_groups.values())
        u.attributes = list(dict.fromkeys(u.attributes))
        u.requirements = list(dict.fromkeys(u.requirements))
        u.calls = list(dict.fromkeys(u.calls))
        patches: dict[tuple[Site, tuple[Ref, ...], str], PatchSite] = {}
        for p in u.patches:
            patches.setdefault((p.site, p.owner, p.attr), p)
        u.patches = list(patches.values())
        u.reads = sorted(self._reads, key=repr)

    # -- bindings and records ---------------------------------------------------

    def _is_provider(self, module: str) -> bool:
        return in_package(module, self.provider_package)

    def _is_consumer(self, module: str) -> bool:
        return any(in_package(module, c) for c in self.consumer_packages)

    def _site(self, ctx: Ctx, node: ast.AST) -> Site:
        return Site(ctx.file.path, getattr(node, "lineno", 0))

    def _bind(self, ctx: Ctx, name: str, value: Value) -> None:
        # In a ladder's handler the same name is bound again: keep both ways to it.
        old = ctx.scope.names.get(name)
        if ctx.in_handler and isinstance(old, ProviderValue) and isinstance(value, ProviderValue):
            value = ProviderValue(tuple(dict.fromkeys(old.choices + value.choices)), value.guard)
        ctx.scope.names[name] = value
        ctx.scope.imported.discard(name)
        ctx.scope.none_defaults.discard(name)

    def _record_import(self, ctx: Ctx, use: ImportUse) -> None:
        if not ctx.record:
            return
        # Where a `hasattr(X, "n")` test holds (written, or kept in a flag): an import there does not
        # run where the provider lacks X.n (a patch there still installs nothing: the silent case).
        present = present_conditions(ctx.hasattr_guards, use.site)
        if ctx.collector is not None:
            if ctx.ladder is not None and ctx.when[: len(ctx.ladder.when)] == ctx.ladder.when:
                use = replace(use, when=ctx.when[len(ctx.ladder.when) :])
            ctx.collector.append(replace(use, when=(*use.when, *present)) if present else use)
        else:
            # An import the try around it catches, with a name computed there (`for name in (...):
            # try: import_module(name) except ImportError: continue`): a ladder of one alternative.
            group = ImportGroup(
                ctx.file.path,
                use.site.line,
                ctx.function,
                ctx.import_handler is not None,
                [[use]],
                when=(*ctx.when, *present),
            )
            self.usage.groups.append(caught_by(group, ctx.import_handler))

    def _record_read(self, owner: ProviderValue, attr: str, kind: ReadKind) -> None:
        if not self._quiet:
            self._reads.add(Read(owner.choices, attr, kind))

    def _patch_guard(self, ctx: Ctx, owner: ProviderValue, attr: str) -> Guard:
        if owner.guard is not Guard.NONE:
            return owner.guard
        if (owner.choices, attr) in ctx.hasattr_guards:
            return Guard.HASATTR
        if ctx.try_guard:
            return Guard.TRY
        return Guard.NONE

    def _record_patch(
        self,
        ctx: Ctx,
        node: ast.AST,
        owner: ProviderValue,
        attr: str,
        value_node: ast.expr | None,
        value: Value,
        declared: bool = False,
        literal: bool = False,
    ) -> None:
        """`literal`: the value is a literal whatever `value_node` is (an enum member added)."""
        if not ctx.record:
            return
        replacement: Signature | None = None
        variants: tuple[ReplacementVariant, ...] = ()
        constructor = False
        if isinstance(value, ConsumerValue):
            fn = self._function(value.dotted)  # its module is read first when it is not yet (or not scanned)
            wrapper = binding_wrapper(value_node)
            replacement = wrapped(signature_of(fn.node), wrapper) if fn else None
            # By the name it is defined under (a re-export followed), as its body is read by.
            defined = fn.dotted if fn is not None else value.dotted
            gates_here = tuple(c for c in ctx.when if c.kind is ConditionKind.GATE)
            self._installs.setdefault(defined, []).append(gates_here)
            if not wrapper:  # (a staticmethod's first parameter is no instance)
                self._installed_on.setdefault(defined, set()).add(owner.choices)
            if fn is not None:
                self._record_replacement(ctx, node, owner, attr, fn)
            # (a name bound to one function per release, `f = f_old` under a gate: by that name,
            # imported or of this module)
            named = f"{ctx.file.module}.{value_node.id}" if isinstance(value_node, ast.Name) else value.dotted
            made = self._definitions.get(named, []) or self._definitions.get(value.dotted, [])
            made = made if len(made) > 1 else self._definitions.get(defined, [])
            if len(made) > 1:  # one per release, say, each under its own version gate
                variants = tuple(
                    ReplacementVariant(wrapped(signature_of(d.node), wrapper), d.made_when()) for d in made
                )
            if fn is None and (cls := self._consumer_class(value.dotted, load=True)) is not None:
                # A class in a class's place (`parallel_state.GroupCoordinator = MyCoordinator`):
                # the provider's constructions of the name run its own `__init__`.
                init = cls.method("__init__")
                replacement, constructor = (init.signature, True) if init is not None else (None, False)
        elif isinstance(value, LambdaValue):
            replacement = value.signature
        self.usage.patches.append(
            PatchSite(
                owner=owner.choices,
                attr=attr,
                site=self._site(ctx, node),
                guard=self._patch_guard(ctx, owner, attr),
                function=ctx.function,
                literal_value=literal or isinstance(value_node, ast.Constant),
                replacement=replacement,
                alternative_group=ctx.loop_group,
                via=ctx.via,
                when=self._when(ctx),
                # Another provider object stored under this name: the original kept aside.
                stash=isinstance(value, ProviderValue) and value.choices != owner.attr(attr).choices,
                declared=declared,
                variants=variants,
                on_copy=owner.copy,
                nested=ctx.nested,
                branch=ctx.branch,
                constructor=constructor,
            )
        )
