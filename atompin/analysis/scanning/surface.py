"""The contact surface: classes, receivers, unpacking, handovers.

What the drift rules (`method_overrides`, `protocols`, `returns`, `shadows`,
`method_calls`) need beyond names: the consumer's classes and what they derive
from, the receivers whose members are read (`self.config.x`), values unpacked
from provider calls, classes handed to the provider, and replacements of its
functions. Nothing here changes what the rest of the scanner records: it only
adds to `usage.contact`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import TYPE_CHECKING

from atompin.analysis.arity import CallShape
from atompin.analysis.dataclass_init import PLAIN_CLASS_DECORATORS, writes_init
from atompin.analysis.indexer import dataclass_fields
from atompin.analysis.keyword_tables import keyword_adds, keyword_variants
from atompin.analysis.nullness import known_none
from atompin.analysis.output_buffers import output_names, unwritten_returns
from atompin.analysis.prose import ProseFinder
from atompin.analysis.relevant import names_the_provider
from atompin.analysis.scanning.common import class_assignments, handed_on
from atompin.analysis.scanning.state import ConsumerFunction, Ctx, evolve
from atompin.analysis.signature import signature_of
from atompin.analysis.syntax import (
    annotated_type,
    class_body_names,
    delegating_exits,
    does_nothing,
    dotted,
    element_type,
    init_hands_on,
    local_values,
    mapped_type,
    only_raises,
    parameter_names,
    statements,
    target_names,
    walk_shallow,
)
from atompin.analysis.syntax import walk as every_node
from atompin.analysis.usage import (
    ClassBase,
    Condition,
    ConsumerClass,
    ConsumerMethod,
    Handover,
    HandoverKind,
    MethodCall,
    MethodRef,
    Receiver,
    Ref,
    Replacement,
    Stored,
    SuperCall,
    Unpack,
    UnwrittenReturn,
)
from atompin.analysis.values import (
    ConsumerValue,
    DataclassDecorator,
    ElementsOf,
    MemberChain,
    MethodValue,
    ProviderValue,
    ReceiverValue,
    Scope,
    Value,
)
from atompin.lines import line_numbers
from atompin.model import Site

if TYPE_CHECKING:
    from atompin.analysis.scanner import ConsumerScanner


# The first argument of `patch(` / `mock.patch(` / `monkeypatch.setattr(`: a test double's target.
_MOCK_TARGET = re.compile(rb"(?:\bpatch|\bsetattr)\s*\(\s*$")


# Bases that make a class an enum: its members are the class's own values.
_ENUM_BASES = frozenset({"Enum", "StrEnum", "IntEnum"})


class SurfaceRecorder:
    """What the drift rules need beyond names (`usage.contact`)."""

    # Set here, made in `ConsumerScanner.__post_init__` (declared so the type is that one).
    _quiet: bool
    _finishing: bool

    #

    def _module_scope(self: ConsumerScanner, module: str) -> Scope:
        """A module's top-level scope, kept so re-exported consumer classes can be followed."""
        return self._scopes.setdefault(module, Scope())

    def _pure(self: ConsumerScanner, node: ast.expr | None, ctx: Ctx) -> Value:
        """What a name or attribute chain evaluates to, without recording anything or following calls."""
        if isinstance(node, ast.Subscript):
            node = node.value
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return None
        self._quiet = True
        try:
            return self._eval(node, evolve(ctx, record=False))
        finally:
            self._quiet = False

    def _made_object(self: ConsumerScanner, name: str, node: ast.Call, ctx: Ctx) -> Value:
        """A class `type(name, bases, ns)` makes (recorded: `_composed_class`; nothing known is
        returned), or a namespace: a copy of a provider module, or one the consumer builds (`_namespace`)."""
        if name != "type":
            return self._namespace(node, ctx)
        if len(node.args) == 3 and isinstance(node.args[1], ast.Tuple):
            self._composed_class(node, node.args[1], ctx)
        return None

    def _composed_class(self: ConsumerScanner, node: ast.Call, bases: ast.Tuple, ctx: Ctx) -> None:
        """`type(name, (Mixin, base_cls), {...})` with a consumer class and a provider class (or a
        parameter annotated `type[C]`: vllm-omni's `omni_renderer_cls(base_cls: type[BaseRenderer])`):
        a class of the consumer's whose order puts the mixin's methods before the provider's, as
        `class K(Mixin, C)` would."""
        made = [self._composed_base(expr, ctx) for expr in bases.elts]
        if not any(b.consumer for b in made) or not any(b.provider for b in made):
            return
        # Named after its bases ("plug.render.OmniRenderer+BaseRenderer"): it has no name of its own here.
        name = f"{ctx.file.module}." + "+".join(b.text.rpartition(".")[2] or "?" for b in made)
        if name not in self._classes:
            self._classes[name] = ConsumerClass(
                name=name,
                path=ctx.file.path,
                line=node.lineno,
                bases=tuple(made),
                muted=not ctx.record,
                names_provider=self._names_provider(ctx.file.path),
            )

    def _composed_base(self: ConsumerScanner, expr: ast.expr, ctx: Ctx) -> ClassBase:
        """A base of `type(name, bases, ns)`, as `_class_base` reads one; a name of a parameter
        annotated `type[C]` (a provider class C or a subclass of it) is C."""
        base = self._class_base(expr, ctx)
        if base.provider or base.consumer or not isinstance(expr, ast.Name):
            return base
        fn = self._functions.get(f"{ctx.file.module}.{ctx.function}") if ctx.function else None
        a = fn.node.args if fn is not None else None
        param = next((p for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.arg == expr.id), None) if a else None
        annotation = param.annotation if param is not None else None
        if isinstance(annotation, ast.Subscript) and dotted(annotation.value) in ("type", "typing.Type", "Type"):
            choices = self._provider_type(annotation.slice, ctx)
            if choices:
                return ClassBase(provider=choices, text=dotted(annotation.slice))
        return base

    def _class_base(self: ConsumerScanner, node: ast.expr, ctx: Ctx) -> ClassBase:
        if isinstance(node, ast.Subscript) and (patched := self._patched_class(node, ctx)) is not None:
            return patched
        value = self._pure(node, ctx)
        text = dotted(node)
        if isinstance(value, ProviderValue):
            return ClassBase(provider=value.choices, text=text)
        if isinstance(value, ConsumerValue):
            return ClassBase(consumer=value.dotted, text=text)
        return ClassBase(text=text)

    def _patched_class(self: ConsumerScanner, node: ast.Subscript, ctx: Ctx) -> ClassBase | None:
        """`class P(Patch[Target])`, where the consumer's `Patch` sets every member of its subclass
        on the target (`setattr(target, name, value)` over `cls.__dict__`: arctic-inference's
        `ArcticPatch`): P's methods replace Target's for every instance, as a subclass's override
        would for its own. Target, a class, is then P's base; None for any other subscripted base
        (a module target's members are patches of it: `_module_patch_members`)."""
        target = self._patch_target(node, ctx)
        if target is None or all(not ref.path for ref in target.choices):
            return None
        return ClassBase(provider=target.choices, text=dotted(node.slice), in_place=True)

    def _patch_target(self: ConsumerScanner, node: ast.Subscript, ctx: Ctx) -> ProviderValue | None:
        """The provider object `Patch[Target]` names, when the consumer's `Patch` sets every
        member of its subclasses on it (`_sets_members`); None otherwise."""
        patch, target = self._pure(node.value, ctx), self._pure(node.slice, ctx)
        if isinstance(patch, ConsumerValue) and isinstance(target, ProviderValue) and self._sets_members(patch.dotted):
            return target
        return None

    def _module_patch_members(self: ConsumerScanner, node: ast.ClassDef, qualname: str, body: Scope, ctx: Ctx) -> None:
        """`class P(Patch[module])`: each function and value P's body defines is set on the provider
        module (`UlyssesParallelState(ArcticPatch[parallel_state])` replaces its
        `initialize_model_parallel` and adds `_SP = None`), a patch as `module.name = value` is."""
        for base in node.bases:
            target = self._patch_target(base, ctx) if isinstance(base, ast.Subscript) else None
            if target is None or not all(not ref.path for ref in target.choices):
                continue
            for stmt in node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    function = ConsumerValue(f"{ctx.file.module}.{qualname}.{stmt.name}")
                    self._record_patch(ctx, stmt, target, stmt.name, None, function)
                elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    for name in (n for t in targets for n in target_names(t) if not n.startswith("__")):
                        self._record_patch(ctx, stmt, target, name, stmt.value, body.names.get(name))

    def _sets_members(self: ConsumerScanner, dotted_name: str) -> bool:
        """Does consumer class `dotted_name` have a method that sets each member of a class's own
        dictionary on another object (`for name, attr in cls.__dict__.items(): setattr(target, name,
        attr)`, or over `vars(cls)`)? Its module is read when it is not scanned."""
        if dotted_name not in self._patchers:
            cls = self._consumer_class(dotted_name, load=True)
            nodes = [fn.node for m in cls.methods if (fn := self._functions.get(f"{cls.name}.{m.name}"))] if cls else []
            self._patchers[dotted_name] = any(_sets_own_members(n) for n in nodes)
        return self._patchers[dotted_name]

    def _provider_type(
        self: ConsumerScanner, annotation: ast.expr | None, ctx: Ctx, elements: bool = False, mapped: bool = False
    ) -> tuple[Ref, ...]:
        """The provider class an annotation names: `C`, `"C"`, `C | None`, `Optional[C]`; () otherwise
        (`list[C]`, `type[C]`: not an instance of C). A name only an `if TYPE_CHECKING:` import
        binds counts (`vllm_config: "VllmConfig"`, imported for type checkers only). With
        `elements`: the class of a collection's elements (`list[C]`, `tuple[C, ...]`: `element_type`);
        with `mapped`, of a mapping's values (`dict[K, C]`: `mapped_type`)."""
        if elements or mapped:
            node = element_type(annotation) if elements else mapped_type(annotation)
        else:
            node = annotated_type(annotation)
        value = self._pure(node, ctx) if node is not None else None
        if value is None and node is not None:
            value = _type_only_value(node, ctx.scope)
        return value.choices if isinstance(value, ProviderValue) else ()

    def _type_only_imports(self: ConsumerScanner, body: list[ast.stmt], ctx: Ctx) -> None:
        """What the provider imports of an `if TYPE_CHECKING:` block bind, for annotations only
        (`Scope.type_only`): the block never runs, so nothing is recorded as imported."""
        for stmt in body:
            if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module and self._is_provider(stmt.module):
                for alias in stmt.names:
                    if alias.name != "*":
                        ref = Ref(stmt.module, (alias.name,))
                        ctx.scope.type_only[alias.asname or alias.name] = ProviderValue((ref,))
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if self._is_provider(alias.name):  # `import pkg.mod as m` binds m; `import pkg.mod`, pkg
                        module = alias.name if alias.asname else alias.name.split(".")[0]
                        ctx.scope.type_only[alias.asname or module] = ProviderValue((Ref(module),))

    def _record_class(
        self: ConsumerScanner, node: ast.ClassDef, ctx: Ctx, qualname: str, replaced: AbstractSet[ast.stmt]
    ) -> None:
        """A class's bases, methods and class attributes; attributes typed with a provider class.
        `replaced`: the body's `def`s a later one of their name replaces (`syntax.redefined`)."""
        name = f"{ctx.file.module}.{qualname}"
        if name in self._classes:
            return
        typed: dict[str, tuple[Ref, ...]] = {}
        methods: list[ConsumerMethod] = []
        attributes: list[str] = []
        assigned: dict[str, set[tuple[tuple[Ref, ...], str, str]]] = {}
        if not node.bases:
            self._baseless[name] = node
        self._record_registry(node, ctx)
        # The consumer class each name bound so far in the body holds (or makes): "" for any other
        # value. A name read in the body is the body's own binding before any global
        # (`hf_to_vllm_mapper = hf_to_atom_mapper`, as ATOM's Qwen3.5 models keep one mapper twice).
        held: dict[str, str] = {}
        for stmt in (s for s in node.body if s not in replaced):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                held[stmt.name] = ""
                # A scanned method's delegation is seen while its body is read; a helper's is looked for here.
                methods.append(self._consumer_method(stmt, ctx, walk=not ctx.record))
                if ctx.record:
                    for attr, choices, made, param in self._self_assignments(stmt, ctx):
                        assigned.setdefault(attr, set()).add((choices, made, param))
                continue
            if isinstance(stmt, ast.Assign):
                targets = [n for t in stmt.targets for n in target_names(t)]
            elif isinstance(stmt, ast.AnnAssign):
                targets = target_names(stmt.target)
                for target in targets:
                    if choices := self._provider_type(stmt.annotation, ctx):
                        typed[target] = choices
            else:
                continue
            attributes += targets
            value = getattr(stmt, "value", None)
            if isinstance(value, ast.Name) and value.id in held:
                handed = held[value.id]
            else:
                handed = self._consumer_class_value(value, ctx)
            if value is not None:  # (`x: T` alone binds nothing)
                held.update(dict.fromkeys(targets, handed))
            if handed and ctx.record:
                for target in targets:
                    site = self._site(ctx, stmt)
                    self.usage.contact.handovers.append(
                        Handover(HandoverKind.ATTRIBUTE, handed, site, holder=name, member=target)
                    )
        self._made_attributes[name], self._param_attributes[name] = _typed_by_assignments(assigned, typed)
        self._typed_attributes[name] = typed
        self._class_names.setdefault(ctx.file.path, set()).add(node.name)
        writes, fields = self._generated_init(node, ctx)
        # A class without bases is read when a class derives from it (`_finish_contact`): a mixin.
        on_instance, false_only = class_assignments(node) if node.bases else ((), ())
        hands_on = init_hands_on(node)
        self._classes[name] = ConsumerClass(
            name=name,
            path=ctx.file.path,
            line=node.lineno,
            bases=tuple(self._class_base(b, ctx) for b in node.bases),
            methods=tuple(methods),
            attributes=tuple(dict.fromkeys(attributes)),
            assigned=on_instance,
            false_only=false_only,
            bound=tuple(sorted(class_body_names(node.body))),
            muted=not ctx.record,
            names_provider=self._names_provider(ctx.file.path),
            writes_init=writes,
            fields=fields,
            when=self._when(ctx) if fields is not None else (),
            init_hands_on=hands_on is not None,
            init_pops=hands_on or (),
        )

    def _generated_init(self: ConsumerScanner, node: ast.ClassDef, ctx: Ctx) -> tuple[bool, tuple[str, ...] | None]:
        """(whether a call of the class may run no `__init__` written in a body, the fields of a
        standard-library dataclass): a metaclass, or a decorator that writes `__init__`; the
        fields only for `@dataclass` from `dataclasses` under decorators that keep its `__init__`."""
        if any(k.arg == "metaclass" for k in node.keywords):
            return True, None
        written = [(d, dotted(d.func if isinstance(d, ast.Call) else d)) for d in node.decorator_list]
        writers = [d for d, name in written if writes_init(name)]
        if not writers:
            return False, None
        if len(writers) > 1 or any(name.rpartition(".")[2] not in PLAIN_CLASS_DECORATORS for _, name in written):
            return True, None
        func = writers[0].func if isinstance(writers[0], ast.Call) else writers[0]
        stdlib = (isinstance(func, ast.Name) and isinstance(ctx.scope.lookup(func.id), DataclassDecorator)) or (
            dotted(func) == "dataclasses.dataclass" and ctx.scope.lookup("dataclasses") is None
        )
        return True, dataclass_fields(node, writers[0]) if stdlib else None

    def _record_registry(self: ConsumerScanner, node: ast.ClassDef, ctx: Ctx) -> None:
        """The string members of an enum of the consumer's: its own registry of dotted paths
        (vllm-omni's diffusion backends), which it resolves itself. A path kept there is no
        handover (`_resolved_handovers`)."""
        if any(_last_name(base) in _ENUM_BASES for base in node.bases):
            self._registry_sites.update(
                Site(ctx.file.path, stmt.lineno)
                for stmt in node.body
                if isinstance(stmt, ast.Assign)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            )

    def _names_provider(self: ConsumerScanner, path: str) -> bool:
        """Does the scanned file `path` name the provider package (once per file)?"""
        if path not in self._naming_files:
            self._naming_files[path] = names_the_provider(self._sources.get(path, b""), self.provider_package)
        return self._naming_files[path]

    def _consumer_method(
        self: ConsumerScanner, node: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Ctx, walk: bool
    ) -> ConsumerMethod:
        """A method, and (with `walk`) whether it calls the method it overrides (`super().name(...)`
        or `Base.name(self, ...)`); its `super().name(...)` calls either way (`SuperCall`)."""
        calls_super = False
        delegates: list[ClassBase] = []
        raises, inert = only_raises(node), does_nothing(node)
        if not self._mentioned_again(ctx.file.path, node, node.name):
            return ConsumerMethod(
                node.name, node.lineno, signature_of(node), raises=raises, inert=inert, end_line=_end_line(node)
            )
        args = [*node.args.posonlyargs, *node.args.args]
        receiver = args[0].arg if args else ""
        supers: list[SuperCall] = []
        for call in every_node(node):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)) or call.func.attr != node.name:
                continue
            inner = call.func.value
            if isinstance(inner, ast.Call) and dotted(inner.func) in ("cast", "typing.cast") and len(inner.args) == 2:
                inner = inner.args[1]  # `cast(Base, super()).name(...)`
            if isinstance(inner, ast.Call) and dotted(inner.func) == "super":
                calls_super = walk  # a scanned method's is told while its body is read (`_delegated`)
                supers.append(_super_call(node, call))
            elif (
                walk
                and isinstance(inner, (ast.Name, ast.Attribute))
                and call.args
                and isinstance(call.args[0], ast.Name)
                and call.args[0].id == receiver
            ):
                delegates.append(self._class_base(inner, ctx))
        return ConsumerMethod(
            node.name,
            node.lineno,
            signature_of(node),
            calls_super,
            tuple(delegates),
            raises,
            inert,
            _end_line(node),
            tuple(supers),
        )

    def _mentioned_again(
        self: ConsumerScanner, path: str, node: ast.FunctionDef | ast.AsyncFunctionDef, word: str
    ) -> bool:
        """Does the text of a definition hold `word` more than once (its name, then a use)? Read
        before walking every node of it (True when the text is not at hand)."""
        text = self._text(path, node)
        return text is None or text.count(word.encode()) > 1

    def _self_assignments(
        self: ConsumerScanner, method: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Ctx
    ) -> Iterator[tuple[str, tuple[Ref, ...], str, str]]:
        """Each `self.x = ...` / `self.x: T = ...` in a method: the provider class it makes or is
        annotated with, that annotates the parameter it stores (`self.x = x` of `x: T`), or that the
        return annotation of the consumer function it calls names, () for anything else; the
        consumer class or function (dotted) it calls, "" for anything else; and for `self.x = x` of
        a parameter not annotated, "method:x" (typed as the provider method it overrides says:
        `Receiver.PARAM`), "" otherwise."""
        args = [*method.args.posonlyargs, *method.args.args]
        if not args or any(dotted(d) == "staticmethod" for d in method.decorator_list):
            return
        receiver = args[0].arg
        annotated = {a.arg: a.annotation for a in (*args[1:], *method.args.kwonlyargs) if a.annotation}
        bare = {a.arg for a in (*args[1:], *method.args.kwonlyargs) if a.annotation is None}
        rebound: set[str] | None = None  # parameters the body assigns again: their annotation no longer holds
        once: dict[str, ast.expr | None] | None = None  # its bindings (`syntax.local_values`)
        targets: list[ast.expr]
        for stmt in statements(method.body):
            made = param = ""
            if isinstance(stmt, ast.AnnAssign):
                targets, choices = [stmt.target], self._provider_type(stmt.annotation, ctx)
            elif isinstance(stmt, ast.Assign):
                source = stmt.value
                if isinstance(source, ast.Name) and source.id not in annotated.keys() | bare:
                    # `engine = AsyncLLM.from_vllm_config(...)`, then `self.engine = engine` (verl's server).
                    once = local_values(method) if once is None else once
                    source = once.get(source.id) or source
                value = self._pure(source.func, ctx) if isinstance(source, ast.Call) else None
                targets = list(stmt.targets)
                choices = value.choices if isinstance(value, ProviderValue) and len(targets) == 1 else ()
                made = value.dotted if isinstance(value, ConsumerValue) and len(targets) == 1 else ""
                if made and made not in self._classes and (fn := self._function(made, load=False)) is not None:
                    # `self.manager = start(...)` of a function annotated `-> Manager`.
                    returned = self._annotated_return(fn)
                    choices = returned.choices if isinstance(returned, ReceiverValue) else ()
                if isinstance(stmt.value, ast.Name) and stmt.value.id in annotated.keys() | bare and len(targets) == 1:
                    if rebound is None:
                        rebound = {
                            n.id for n in every_node(method) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                        }
                    if stmt.value.id in annotated and stmt.value.id not in rebound:
                        choices = self._provider_type(annotated[stmt.value.id], ctx)
                    elif stmt.value.id not in rebound:
                        param = f"{method.name}:{stmt.value.id}"
            else:
                continue
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    if target.value.id == receiver:
                        yield target.attr, choices, made, param

    def _consumer_class_value(self: ConsumerScanner, node: ast.expr | None, ctx: Ctx) -> str:
        """The consumer class `node` is (`X`) or makes an instance of (`X(...)`); "" otherwise (a
        call of a consumer function makes what it returns: `_classes_returned`)."""
        if isinstance(node, ast.Call):
            node = node.func
        value = self._pure(node, ctx)
        return value.dotted if isinstance(value, ConsumerValue) and value.dotted not in self._functions else ""

    def _bind_receivers(self: ConsumerScanner, fn: ConsumerFunction, scope: Scope) -> None:
        """`self`/`cls` in a method, parameters annotated with a provider class, and a method's
        parameters not annotated (`Receiver.PARAM`)."""
        a = fn.node.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
        decorators = {dotted(d) for d in fn.node.decorator_list}
        ctx = Ctx(fn.file, fn.closure, record=False)
        for i, param in enumerate(params):
            if scope.names.get(param.arg) is not None:
                continue
            if i == 0 and fn.owner and param in a.posonlyargs + a.args and "staticmethod" not in decorators:
                kind = Receiver.CLS if "classmethod" in decorators else Receiver.SELF
                scope.names[param.arg] = ReceiverValue(kind, fn.owner)
            elif i == 0 and param.arg == "self" and param.annotation is None and (on := self._installed_self(fn)):
                # A function installed as a method of one provider class (`C.m = f`): its `self`
                # is a C, as if annotated so.
                scope.names[param.arg] = ReceiverValue(Receiver.INSTANCE, choices=on)
            elif choices := self._unshadowed(self._provider_type(param.annotation, ctx), fn.file.path):
                scope.names[param.arg] = ReceiverValue(Receiver.INSTANCE, choices=choices)
            elif isinstance(param.annotation, (ast.Subscript, ast.Constant, ast.BinOp)) and (
                choices := self._unshadowed(self._provider_type(param.annotation, ctx, elements=True), fn.file.path)
            ):
                scope.names[param.arg] = ElementsOf(choices)  # `outputs: list[SchedulerOutput]`
            elif isinstance(param.annotation, (ast.Subscript, ast.Constant, ast.BinOp)) and (
                choices := self._unshadowed(self._provider_type(param.annotation, ctx, mapped=True), fn.file.path)
            ):
                scope.names[param.arg] = ElementsOf(choices, "mapping")  # `layers: dict[str, Attention]`
            elif own := self._consumer_type(param.annotation, ctx):
                scope.names[param.arg] = ReceiverValue(Receiver.SELF, own, other=True)
            elif param.annotation is None and fn.owner and i > 0 and "staticmethod" not in decorators:
                # What the provider hands a method overriding one of its own, as that method
                # annotates it (`param_types`): read once the provider's classes are known.
                scope.names[param.arg] = ReceiverValue(Receiver.PARAM, fn.owner, param=f"{fn.node.name}:{param.arg}")

    def _installed_self(self: ConsumerScanner, fn: ConsumerFunction) -> tuple[Ref, ...]:
        """The provider object a function defined outside a class body is installed on as a
        method, when it is installed on exactly one (() otherwise: nothing, or several, which its
        `self` may be any of)."""
        if fn.owner:
            return ()
        found = self._installed_on.get(fn.dotted, set())
        return next(iter(found)) if len(found) == 1 else ()

    def _cast_type(self: ConsumerScanner, annotation: ast.expr, ctx: Ctx) -> ReceiverValue | None:
        """What `typing.cast(T, x)` says x is when T is a class: an instance of a provider class
        (`cast(Attention, layer)`) or of the consumer's own (`cast(AsyncOmni, self._engine_client)`,
        whose methods are its own). None for `Any` and the like: x is what it was."""
        if choices := self._unshadowed(self._provider_type(annotation, ctx), ctx.file.path):
            return ReceiverValue(Receiver.INSTANCE, choices=choices)
        own = self._consumer_type(annotation, ctx)
        return ReceiverValue(Receiver.SELF, own, other=True) if own else None

    def _consumer_type(self: ConsumerScanner, annotation: ast.expr | None, ctx: Ctx) -> str:
        """The consumer class a parameter is annotated with (its instances are typed like `self`)."""
        if not isinstance(annotation, (ast.Name, ast.Attribute)):
            return ""
        value = self._pure(annotation, ctx)
        if not isinstance(value, ConsumerValue):
            return ""
        cls = self._consumer_class(value.dotted)
        return cls.name if cls is not None else ""

    def _receiver_attribute(self: ConsumerScanner, base: ReceiverValue, name: str) -> Value:
        if base.receiver is Receiver.SELF:
            choices = self._typed_attribute(base.owner, name)
            if choices:
                return ReceiverValue(Receiver.INSTANCE, choices=choices)
            if own := self._made_attribute(base.owner, name):
                return ReceiverValue(Receiver.SELF, own, other=True)  # typed like `self` in that class
            if stored := self._param_attribute(base.owner, name):
                return ReceiverValue(Receiver.PARAM, stored[0], param=stored[1])
        return base.method(name)

    def _param_attribute(self: ConsumerScanner, owner: str, name: str) -> tuple[str, str] | None:
        """The consumer class (`owner` or the first of its consumer bases storing attribute
        `name`) and the parameter not annotated ("method:x") its every `self.name = x` stores;
        None when that class stores anything else there, or none stores it."""
        for current in self._consumer_line(owner):
            if name in self._typed_attributes.get(current, {}) or name in self._made_attributes.get(current, {}):
                return None
            param = self._param_attributes.get(current, {}).get(name)
            if param:
                return current, param
        return None

    def _made_attribute(self: ConsumerScanner, owner: str, name: str) -> str:
        """The consumer class of which every assignment of attribute `name` makes an instance
        (`self.input_batch = NPUInputBatch(...)`) in consumer class `owner`, or in the first of its
        consumer bases that assigns it, as `_typed_attribute` finds a provider class; "" when
        not known."""
        for current in self._consumer_line(owner):
            made = self._made_attributes.get(current, {})
            if name in made:
                cls = self._consumer_class(made[name]) if made[name] else None
                return cls.name if cls is not None else ""
        return ""

    def _unshadowed(self: ConsumerScanner, choices: tuple[Ref, ...], path: str) -> tuple[Ref, ...]:
        """A provider class type, unless the file at `path` also defines a class of the same name
        or imports one from the consumer's modules (an import ladder that prefers the consumer's own
        class keeps only the provider's in the scope). A same-named class elsewhere in the consumer
        is another class (vllm-omni's own `AttentionSpec` beside vLLM's)."""
        names = {r.path[-1] for r in choices if r.path}
        if names & self._class_names.get(path, set()):
            return ()
        return choices

    def _typed_attribute(self: ConsumerScanner, owner: str, name: str) -> tuple[Ref, ...]:
        """An attribute of a consumer class (or of its consumer bases) typed with a provider class
        (`_unshadowed` in the file of the class typing it)."""
        for current in self._consumer_line(owner):
            if name in self._typed_attributes.get(current, {}):
                cls = self._classes.get(current)
                return self._unshadowed(self._typed_attributes[current][name], cls.path if cls else "")
        return ()

    def _consumer_line(self: ConsumerScanner, owner: str) -> Iterator[str]:
        """Consumer class `owner`, then the consumer classes it derives from, breadth first."""
        seen: set[str] = set()
        todo = [owner]
        while todo:
            current = todo.pop(0)
            if current in seen:
                continue
            seen.add(current)
            yield current
            cls = self._classes.get(current)
            if cls is not None:
                todo += [b.consumer for b in cls.bases if b.consumer]

    def _record_delegation(self: ConsumerScanner, node: ast.Call, callee: Value, args: list[Value], ctx: Ctx) -> None:
        """In method `m` of a consumer class: `super().m(...)` or `Base.m(self, ...)` hands on to the
        original; so does `self._orig_m(...)` where the class body keeps the original there
        (`_orig_m = Base.m`, as a patch class does)."""
        if not ctx.owner or not isinstance(node.func, ast.Attribute):
            return
        method = ctx.function.rpartition(".")[2]
        if node.func.attr != method and isinstance(callee, MethodValue) and callee.ref.receiver is Receiver.SUPER:
            self._super_helpers.setdefault((ctx.owner, node.func.attr), set()).add(method)
            return
        if node.func.attr != method:
            kept = self._kept_originals.get(ctx.owner, {}).get(node.func.attr)
            on_self = (isinstance(callee, MethodValue) and callee.ref.receiver in (Receiver.SELF, Receiver.CLS)) or (
                isinstance(node.func.value, ast.Name) and node.func.value.id == ctx.owner.rpartition(".")[2]
            )  # `self._orig_m(...)`, `cls._orig_m(...)`, `Patch._orig_m(...)` in a staticmethod
            if on_self and kept is not None and all(ref.path[-1:] == (method,) for ref in kept.choices):
                owners = tuple(Ref(ref.module, ref.path[:-1]) for ref in kept.choices)
                self._delegations.setdefault((ctx.owner, method), set()).add(ClassBase(provider=owners))
            return
        if isinstance(callee, MethodValue) and callee.ref.receiver is Receiver.SUPER:
            self._delegations.setdefault((ctx.owner, method), set()).add(ClassBase(text="super"))
        elif args and isinstance(args[0], ReceiverValue) and args[0].receiver is Receiver.SELF and not args[0].other:
            self._delegations.setdefault((ctx.owner, method), set()).add(self._class_base(node.func.value, ctx))

    def _receiver_call(
        self: ConsumerScanner,
        node: ast.Call,
        callee: Value,
        args: list[Value],
        ctx: Ctx,
        makes_instance: bool = False,
        kwargs: dict[str, Value] | None = None,
    ) -> Value:
        """`super()` (a receiver), or a method called through a receiver (recorded). With
        `makes_instance` (`runner = self.make_runner()`), what a method of the consumer class's own
        is annotated to return (`_annotated_return`)."""
        if not isinstance(callee, MethodValue):  # super(...)
            if not node.args and ctx.owner:
                return ReceiverValue(Receiver.SUPER, ctx.owner)
            if len(node.args) == 2 and isinstance(args[0], ConsumerValue):
                return ReceiverValue(Receiver.SUPER, args[0].dotted)
            return None
        if ctx.record:
            self._record_method_call(callee.ref, node, ctx)
        if ctx.record and ctx.returns is None and self._pending is None:
            # `self._prepare(scheduler_output)`: the class's own method is read again with what it
            # is handed, as a helper function is (`_call_helper`).
            values = (*args, *(kwargs or {}).values())
            if (self._hands_provider(values) or self._hands_member(values)) and (
                fn := self._own_method(callee.ref, instances=True)
            ) is not None:
                self._read_with(fn, node, args, kwargs or {}, ctx, method=True)
        value = self._own_method_value(callee.ref, args, ctx) if not node.keywords else None
        if value is None and makes_instance and (fn := self._own_method(callee.ref)) is not None:
            value = self._annotated_return(fn)
        return value

    def _own_method(self: ConsumerScanner, ref: MethodRef, instances: bool = False) -> ConsumerFunction | None:
        """The consumer's method `self.m` calls (with `instances`, also `x.m` of an instance the
        consumer made of its own class, `helper = Helper()`): defined in the class or a consumer
        class it derives from (in the scanned modules); None for another receiver, or one of the
        provider's."""
        if ref.receiver is not Receiver.SELF or (ref.other and not instances) or not ref.owner:
            return None
        for cls in self._consumer_line(ref.owner):
            fn = self._function(f"{cls}.{ref.name}", load=False)
            if fn is not None:
                return fn
        return None

    def _record_method_call(
        self: ConsumerScanner, ref: MethodRef, node: ast.Call, ctx: Ctx, when: tuple[Condition, ...] | None = None
    ) -> None:
        """A call through a receiver at `node` (`MethodCall`), under the conditions that hold there
        (`when`, for a call read again after the scan)."""
        site = self._site(ctx, node)
        for shape, holds in self._call_shapes(node, ctx, self._when(ctx) if when is None else when):
            self.usage.contact.method_calls.append(MethodCall(ref, site, shape, holds, ctx.branch))

    def _own_method_value(self: ConsumerScanner, ref: MethodRef, args: list[Value], ctx: Ctx) -> Value:
        """What `self.m(...)` returns when that is a version gate: m a method of the class's own,
        and no other `def m(` in the consumer's files (no subclass can override it), whose body
        computes one (xinference's `self._is_vllm_v1()`: true past vLLM 0.11.0, else an
        environment variable's answer)."""
        if ref.receiver is not Receiver.SELF or ref.other or not ref.owner:
            return None
        fn = self._function(f"{ref.owner}.{ref.name}", load=False)
        if fn is None or fn.node.args.vararg is not None or fn.node.args.kwarg is not None:
            return None
        if not self._mentions_version(fn) or self._defined_times(ref.name) != 1:  # (the cheap test first)
            return None
        return self._helper_value(ConsumerValue(fn.dotted), [None, *args], {}, ctx)  # (None for self)

    def _defined_times(self: ConsumerScanner, name: str) -> int:
        """How many times the consumer's files write `def name(` (a method or a function; the files
        not scanned too): counted in their text, once per name."""
        if name not in self._def_counts:
            written = f"def {name}(".encode()
            sources = (*self._sources.values(), *self._unscanned)
            self._def_counts[name] = sum(source.count(written) for source in sources)
        return self._def_counts[name]

    def _call_shapes(
        self: ConsumerScanner, node: ast.Call, ctx: Ctx, when: tuple[Condition, ...]
    ) -> list[tuple[CallShape, tuple[Condition, ...]]]:
        """What a call passes, under the conditions it passes it (`when`, a call's own). A `**kw`
        whose keys are known counts as those keywords (`keyword_tables`); where a key is added
        under a test the call is not under (a version gate), one shape for each way the tests go,
        each under its own conditions too."""
        keywords = [k.arg for k in node.keywords if k.arg]
        starstar = False
        conditional: list[tuple[str, tuple[Condition, ...]]] = []
        for k in node.keywords:
            if k.arg is None:
                known = self._unpacked_keys(k.value, node, ctx)
                if known is None:
                    starstar = True
                else:
                    keywords += [key for key, held in known if not held]
                    conditional += [(key, held) for key, held in known if held]
        shape = CallShape(
            positional=sum(1 for a in node.args if not isinstance(a, ast.Starred)),
            keywords=tuple(dict.fromkeys(keywords)),
            star=any(isinstance(a, ast.Starred) for a in node.args),
            starstar=starstar,
        )
        if not conditional:
            return [(shape, when)]
        ways = keyword_variants(
            shape.keywords,
            conditional,
            lambda c: (replace(c, expect=True), c.expect),
            lambda c, v: replace(c, expect=v),
        )
        if ways is None:
            return [(replace(shape, starstar=True), when)]
        return [(replace(shape, keywords=keys), (*when, *holds)) for keys, holds in ways]

    def _unpacked_keys(
        self: ConsumerScanner, value: ast.expr, call: ast.Call, ctx: Ctx
    ) -> list[tuple[str, tuple[Condition, ...]]] | None:
        """The keys of `**{...}`, or of `**kw` where `kw` is a local dict the function fills only
        with keys written out (`keyword_adds`), each with what must hold, beyond what holds at the
        call, for it to be added (the version gates of the `if`s the call is not in); None when they
        are not known."""
        if isinstance(value, ast.Dict):
            keys = _dict_keys(value)
            return None if keys is None else [(key, ()) for key in keys]
        fn = self._functions.get(f"{ctx.file.module}.{ctx.function}") if ctx.function else None
        if not isinstance(value, ast.Name) or fn is None:
            return None
        if fn.node.args.kwarg is not None and fn.node.args.kwarg.arg == value.id:
            handed = handed_on(value, ctx)  # the function's own `**`: what a caller passed, if known
            return None if handed is None else [(key, ()) for key in handed]
        adds = keyword_adds(fn.node, value.id, call)
        if adds is None:
            return None
        known: list[tuple[str, tuple[Condition, ...]]] = []
        for add in adds:
            # Each `if` apart from the call must be a test whose outcome is known where it runs.
            held = self._if_tests(ctx.file.path, ((i.test.lineno, side) for i, side in add.ifs))
            if held is None:
                return None
            known.append((add.key, held))
        return known

    def _if_tests(self: ConsumerScanner, path: str, ifs: Iterable[tuple[int, bool]]) -> tuple[Condition, ...] | None:
        """What must hold for a statement inside these `if`s of file `path` (each by its test's line,
        and True for its body) to run: each test a version gate, or a module or parameter test,
        read where its `if` was (`_gated_branches`); None when one is any other test."""
        held = []
        for line, side in ifs:
            test = self._gate_at.get((path, line))
            if test is None:
                return None
            held.append(test if side else replace(test, expect=not test.expect))
        return tuple(held)

    def _record_unpack(self: ConsumerScanner, node: ast.Assign, ctx: Ctx) -> None:
        """`a, b = f(...)` where f is a provider object or a method through a receiver, or the
        class's own method passing one's result through (`_passed_through`)."""
        if not ctx.record or len(node.targets) != 1 or not isinstance(node.value, ast.Call):
            return
        target = node.targets[0]
        if not isinstance(target, (ast.Tuple, ast.List)):
            return
        callee = self._callee(node.value.func, ctx)
        through = ""
        if isinstance(callee, MethodValue) and (passed := self._passed_through(callee, ctx)) is not None:
            callee, through = passed
        count = len(target.elts)
        starred = any(isinstance(e, ast.Starred) for e in target.elts)
        site = self._site(ctx, node)
        if isinstance(callee, ProviderValue):
            self.usage.contact.unpacks.append(Unpack(site, count, starred, choices=callee.choices, through=through))
        elif isinstance(callee, (MethodValue, MemberChain)):
            self.usage.contact.unpacks.append(Unpack(site, count, starred, method=callee.ref, through=through))
        elif isinstance(callee, ReceiverValue) and callee.receiver is Receiver.INSTANCE and callee.choices:
            self.usage.contact.unpacks.append(Unpack(site, count, starred, method=callee.method("__call__").ref))

    def _callee(self: ConsumerScanner, func: ast.expr, ctx: Ctx) -> Value:
        """What a call of `func` calls: `super().m` is the base's method."""
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and dotted(func.value.func) == "super":
            receiver = self._receiver_call(func.value, None, [self._pure(a, ctx) for a in func.value.args], ctx)
            return receiver.method(func.attr) if isinstance(receiver, ReceiverValue) else None
        return self._pure(func, ctx)

    def _passed_through(self: ConsumerScanner, callee: MethodValue, ctx: Ctx) -> tuple[Value, str] | None:
        """What `self.m(...)` gives, in a method of the class defining m, when m returns at every
        `return` the result of one call of a provider method or function: its base's
        (`super().m(...)`), or an original the class body keeps (`_orig_m = Base.m`, then
        `self._orig_m(...)`). arctic-inference wraps vLLM's `_bookkeeping_sync` so, and unpacks
        its own wrapper's result. With m's symbol ("module:Class.m"); None for any other method."""
        ref = callee.ref
        fn = self._functions.get(f"{ref.owner}.{ref.name}")
        if ref.receiver is not Receiver.SELF or not ctx.owner or ref.owner != ctx.owner or fn is None:
            return None
        nodes = list(walk_shallow(fn.node.body))
        exits = [n for n in nodes if isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom))]
        kept = self._kept_originals.get(ref.owner, {})
        # A name either function binds itself is not what the other's code means by it.
        local = {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)} | set(fn.params)
        passed: list[Value] = []
        for node in exits:
            if not isinstance(node, ast.Return) or not isinstance(node.value, ast.Call):
                return None
            func = node.value.func
            value: Value
            root = func
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(func, ast.Attribute) and isinstance(root, ast.Name) and root.id == "self":
                value = kept.get(func.attr) if func.value is root else None
            elif isinstance(root, ast.Name) and (root.id in local or root.id in ctx.scope.names):
                return None
            else:
                value = self._callee(func, ctx)  # `super().m`, or a module-level name's
            if isinstance(value, MethodValue) and value.ref.receiver is not Receiver.SUPER:
                return None  # another method of the class's own, perhaps
            passed.append(value)
        if not passed or any(v != passed[0] for v in passed) or not isinstance(passed[0], (ProviderValue, MethodValue)):
            return None
        return passed[0], f"{fn.file.module}:{fn.qualname}"

    def _record_call_handovers(
        self: ConsumerScanner, callee: ProviderValue, node: ast.Call, values: list[Value], ctx: Ctx
    ) -> None:
        """Consumer objects passed to a provider call (a registration, perhaps); a class passed to
        `P.register(C)` is registered under P, which it then stands in for."""
        registering = [r for r in callee.choices if len(r.path) >= 2 and r.path[-1] == "register"]
        role = (
            Ref(registering[0].module, registering[0].path[:-1]).symbol
            if len(registering) == 1 and len(values) == 1
            else ""
        )
        for value in values:
            if isinstance(value, ConsumerValue):
                handover = Handover(HandoverKind.CALL, value.dotted, self._site(ctx, node), role=role)
                self.usage.contact.handovers.append(handover)

    def _record_attribute_handover(
        self: ConsumerScanner,
        ctx: Ctx,
        target: ast.Attribute,
        owner: ReceiverValue,
        value_node: ast.expr | None,
        value: Value,
    ) -> None:
        """`self.backend = MyBackend` (or `= MyBackend()`) in a method of a consumer class."""
        if not ctx.record or owner.receiver is not Receiver.SELF:
            return
        handed = value.dotted if isinstance(value, ConsumerValue) else self._consumer_class_value(value_node, ctx)
        # `self.backend = _backend_for(n)`: each class the helper returns may be stored there.
        picked = [] if handed else self._classes_returned(value_node, ctx)
        for cls in [handed] if handed else picked:
            self.usage.contact.handovers.append(
                Handover(HandoverKind.STORED, cls, self._site(ctx, target), holder=owner.owner, member=target.attr)
            )
        if picked:
            self.usage.contact.stores += [Stored(owner.owner, target.attr, cls=cls) for cls in picked]
            return
        attribute = "" if handed else self._own_class_attribute(value_node, ctx)
        maker = self._pure(value_node.func, ctx) if isinstance(value_node, ast.Call) and not handed else None
        made = maker.choices if isinstance(maker, ProviderValue) else ()
        self.usage.contact.stores.append(Stored(owner.owner, target.attr, cls=handed, attribute=attribute, made=made))

    def _classes_returned(self: ConsumerScanner, node: ast.expr | None, ctx: Ctx) -> list[str]:
        """The consumer classes a call of a consumer function returns by name (`return MhaBackend`
        in a helper choosing one of two): what `self.x = helper(...)` may store."""
        callee = self._pure(node.func, ctx) if isinstance(node, ast.Call) else None
        fn = self._functions.get(callee.dotted) if isinstance(callee, ConsumerValue) else None
        if fn is None:
            return []
        body_ctx = Ctx(fn.file, fn.closure, fn.qualname, record=False)
        returned = (self._pure(n.value, body_ctx) for n in statements(fn.node.body) if isinstance(n, ast.Return))
        return list(dict.fromkeys(v.dotted for v in returned if isinstance(v, ConsumerValue)))

    def _own_class_attribute(self: ConsumerScanner, node: ast.expr | None, ctx: Ctx) -> str:
        """`x` when `node` is `self.x` or `self.x(...)` in a method (a class attribute, perhaps:
        `self.model_runner_cls(...)`); "" otherwise."""
        if isinstance(node, ast.Call):
            node = node.func
        if not isinstance(node, ast.Attribute):
            return ""
        inner = self._pure(node.value, ctx)
        return node.attr if isinstance(inner, ReceiverValue) and inner.receiver is Receiver.SELF else ""

    def _record_returned_class(self: ConsumerScanner, node: ast.Return, ctx: Ctx) -> None:
        """`return MyBackend` in a method of a consumer class (it counts when the method overrides the provider's)."""
        if not ctx.record or not ctx.owner or node.value is None:
            return
        value = self._pure(node.value, ctx)
        if isinstance(value, ConsumerValue):
            member = ctx.function.rpartition(".")[2]
            self.usage.contact.handovers.append(
                Handover(HandoverKind.RETURNED, value.dotted, self._site(ctx, node), holder=ctx.owner, member=member)
            )

    def _record_class_paths(self: ConsumerScanner, path: str, source: bytes) -> None:
        """String literals that name something of the consumer by dotted path ("plug.backend.MyBackend")."""
        for top in self.consumer_packages:
            if b'"' + top.encode() not in source and b"'" + top.encode() not in source:
                continue  # no string starts with it (every file is read here: the pattern is the slow part)
            pattern = rb"[\"'](" + re.escape(top.encode()) + rb"(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_][\w.]*)?)[\"']"
            prose = ProseFinder(source)
            named: list[tuple[str, int]] = []
            for match in re.finditer(pattern, source):
                if _MOCK_TARGET.search(source, max(0, match.start() - 64), match.start()):
                    continue  # what a test double replaces (`patch("plug.mod.Cls", fake)`), not a handover
                if prose.at(match.start()):
                    continue  # an example in a docstring or a comment (`e.g. "plug.mod.Cls"`)
                named.append((match.group(1).decode(), match.start()))
            lines = line_numbers(source, (offset for _, offset in named))
            for text, offset in named:
                self.usage.contact.handovers.append(Handover(HandoverKind.PATH, text, Site(path, lines[offset])))

    def _record_replacement(
        self: ConsumerScanner, ctx: Ctx, node: ast.AST, owner: ProviderValue, attr: str, fn: ConsumerFunction
    ) -> None:
        """A patch with one of the consumer's functions: does its body use the original?"""
        # Names are looked up where the function was defined and where the patch is made: a
        # wrapper defined in an installer sees the installer's `original = Cls.attr`, which a
        # first reading of that installer (before its arguments were known) did not bind.
        scopes = [Ctx(fn.file, fn.closure, record=False), ctx]
        target = {r.attr(attr) for r in owner.choices}

        def is_original(ref: Ref) -> bool:
            path = ref.path[:-1] if ref.path[-1:] in (("__func__",), ("__wrapped__",)) else ref.path
            return ref in target or (bool(path) and path[-1] == attr)

        uses: set[ast.AST] = set()
        self_reads: dict[str, Site] = {}
        args = [*fn.node.args.posonlyargs, *fn.node.args.args]
        me = args[0].arg if args and args[0].arg == "self" else ""
        body = every_node(ast.Module(body=fn.node.body, type_ignores=[]))
        for child in body if me else ():
            if (
                isinstance(child, ast.Attribute)
                and isinstance(child.value, ast.Name)
                and child.value.id == me
                and isinstance(child.ctx, ast.Load)
            ):
                self_reads.setdefault(child.attr, Site(fn.file.path, child.lineno))
        for child in body:
            if isinstance(child, ast.Call) and dotted(child.func) == "getattr" and len(child.args) >= 2:
                name = child.args[1]
                if isinstance(name, ast.Constant) and name.value == attr:
                    uses.add(child)
            elif isinstance(child, (ast.Name, ast.Attribute)) and isinstance(child.ctx, ast.Load):
                values = [self._pure(child, scope) for scope in scopes]
                if any(isinstance(v, ProviderValue) and any(is_original(r) for r in v.choices) for v in values):
                    uses.add(child)
        uses_original = bool(uses)
        exits = delegating_exits(fn.node, uses) if uses else []
        delegates_when = (
            (Site(fn.file.path, exits[0].lineno), ast.unparse(exits[0].test), len(exits)) if exits else None
        )
        site = self._site(ctx, node)
        params = set(parameter_names(fn.node.args))
        read = {n.id for n in body if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        self.usage.contact.replacements.append(
            Replacement(
                owner.choices,
                attr,
                site,
                fn.dotted,
                fn.node.lineno,
                uses_original,
                tuple(sorted(self_reads.items())),
                discards=bool(params) and params.isdisjoint(read),
                delegates_when=delegates_when,
                path=fn.file.path,
            )
        )
        outputs = output_names([a.arg for a in (*args, *fn.node.args.kwonlyargs)])
        if outputs and not uses_original:
            self._unwritten_raw[(owner.choices, attr, site, fn.dotted)] = [
                (Site(fn.file.path, ret.lineno), names, tuple((i.test.lineno, side) for i, side in ifs))
                for ret, ifs, names in unwritten_returns(fn.node, outputs)
            ]

    def _consumer_class(
        self: ConsumerScanner, dotted_name: str, load: bool = False, depth: int = 0
    ) -> ConsumerClass | None:
        """A consumer class by dotted name, following re-exports; with `load`, a helper module
        outside the scan that holds it is read (only for classes handed to the provider: reading
        every module the consumer's bases live in would cost more than it finds)."""
        cls = self._classes.get(dotted_name)
        if cls is not None or depth > 4:
            return cls
        if load:
            self._function(dotted_name)  # loads the module that holds it, when it is a helper
            cls = self._classes.get(dotted_name)
            if cls is not None:
                return cls
        module, _, name = dotted_name.rpartition(".")
        scope = self._scopes.get(module)
        value = scope.names.get(name) if scope is not None else None
        if isinstance(value, ConsumerValue) and value.dotted != dotted_name:
            return self._consumer_class(value.dotted, load, depth + 1)
        return None

    def _derives_from_provider(self: ConsumerScanner, name: str, depth: int = 0) -> bool:
        """Does consumer class `name` have a provider class among its bases, or among those of
        the consumer classes it derives from (once `_finish_contact` resolved them)?"""
        cls = self._classes.get(name)
        if cls is None or depth > 20:
            return False
        return any(b.provider or (b.consumer and self._derives_from_provider(b.consumer, depth + 1)) for b in cls.bases)

    def _delegated(self: ConsumerScanner, owner: str, method: ConsumerMethod) -> ConsumerMethod:
        seen = self._delegations.get((owner, method.name), set())
        explicit = tuple(sorted((b for b in seen if b.text != "super" or b.provider or b.consumer), key=repr))
        calls_super = any(b == ClassBase(text="super") for b in seen) or self._super_through_helper(owner, method.name)
        return replace(method, calls_super=calls_super, delegates_to=explicit)

    def _super_through_helper(self: ConsumerScanner, owner: str, name: str) -> bool:
        """Does method `name` of consumer class `owner` call, on its instance, another method of
        the class whose body calls `super().name(...)`? It hands on through it: ai-dynamo's
        scheduler's `update_from_output` returns `self._update_from_output(...)`, which calls
        `super().update_from_output(...)`."""
        helpers = self._super_helpers.get((owner, name))
        fn = self._functions.get(f"{owner}.{name}") if helpers else None
        if fn is None or not fn.params:
            return False
        me = fn.params[0]
        return any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == me
            and n.func.attr in helpers  # type: ignore[operator]
            for n in walk_shallow(fn.node.body)
        )

    def _resolved_handovers(self: ConsumerScanner, handovers: list[Handover]) -> list[Handover]:
        """What was handed, by the dotted name of the class that defines it (re-exports followed).
        A class set as a class attribute or named by dotted path may live outside the scan (its
        module is read when the name looks like a class's); others are looked up among the
        classes already read. A path kept in the consumer's own enum is no handover."""
        out = []
        for handover in dict.fromkeys(handovers):
            if handover.kind is HandoverKind.PATH and handover.site in self._registry_sites:
                continue
            last = handover.target.replace(":", ".").rpartition(".")[2]
            load = (
                handover.kind in (HandoverKind.ATTRIBUTE, HandoverKind.STORED, HandoverKind.PATH) and last[:1].isupper()
            )
            found = self._consumer_class(handover.target.replace(":", "."), load=load)
            if found is not None:
                out.append(replace(handover, target=found.name))
        return list(dict.fromkeys(out))

    def _every_handover_resolved(self: ConsumerScanner) -> list[Handover]:
        """Every handover resolved (`_resolved_handovers`), also those found while resolving:
        reading a handed class's module reads its decorators (`_install_in_class`)."""
        contact = self.usage.contact
        resolved: list[Handover] = []
        while contact.handovers:
            found, contact.handovers = contact.handovers, []
            resolved.extend(self._resolved_handovers(found))
        return list(dict.fromkeys(resolved))

    def _finish_contact(self: ConsumerScanner) -> None:
        """Resolve what was handed over and the consumer bases of every class found (loading
        helper modules outside the scan), dedupe, and store."""
        contact = self.usage.contact
        self._finishing = True
        contact.handovers = self._every_handover_resolved()
        stores = []
        for stored in dict.fromkeys(contact.stores):
            if stored.holder not in self._classes:
                continue
            if stored.cls:
                found = self._consumer_class(stored.cls.replace(":", "."), load=False)
                stored = replace(stored, cls=found.name if found is not None else "")
            stores.append(stored)
        contact.stores = stores
        for name, known in list(self._classes.items()):
            if not known.muted:
                methods = tuple(self._delegated(name, m) for m in known.methods)
                self._classes[name] = replace(known, methods=methods)
        done: set[str] = set()
        todo = list(self._classes)
        while todo:
            name = todo.pop()
            cls = self._classes.get(name)
            if name in done or cls is None:
                continue
            done.add(name)
            bases = []
            for base in cls.bases:
                if base.consumer:
                    found = self._consumer_class(base.consumer)
                    if found is not None:
                        base = replace(base, consumer=found.name)
                        todo.append(found.name)
                bases.append(base)
            self._classes[name] = replace(cls, bases=tuple(bases))
        self._read_mixins()
        contact.classes = sorted(self._classes.values(), key=lambda c: c.name)
        for dotted_name, node, ctx, when in self._class_calls:
            cls = self._consumer_class(dotted_name)
            if cls is not None and self._derives_from_provider(cls.name):
                self._record_method_call(MethodRef(Receiver.CLASS, "__init__", cls.name), node, ctx, when)
        contact.method_calls = list(dict.fromkeys(contact.method_calls))
        self._finish_members(contact)
        contact.unpacks = list(dict.fromkeys(contact.unpacks))
        # A body read again with its arguments known may see the original the first reading did not.
        merged: dict[tuple[object, ...], Replacement] = {}
        for r in contact.replacements:
            key = (r.owner, r.attr, r.site, r.function)
            if key not in merged or r.calls_original:
                merged[key] = r
        contact.replacements = [self._unwritten(key, r) for key, r in merged.items()]

    def _unwritten(self: ConsumerScanner, key: tuple[object, ...], replacement: Replacement) -> Replacement:
        """The replacement with its returns that leave an output buffer unwritten, each under the
        version gates of the `if`s it sits in (one in an `if` on anything else is left out)."""
        found = []
        for site, names, ifs in self._unwritten_raw.get(key, []) if not replacement.calls_original else []:
            when = self._if_tests(site.path, ifs)
            if when is not None:
                found.append(UnwrittenReturn(site, names, when))
        return replace(replacement, unwritten=tuple(found)) if found else replacement


def _type_only_value(node: ast.Name | ast.Attribute, scope: Scope) -> Value:
    """`C` or `m.C` in an annotation, through names only `if TYPE_CHECKING:` imports bind."""
    parts = dotted(node).split(".")
    value = scope.lookup_type(parts[0])
    for part in parts[1:]:
        value = value.attr(part) if isinstance(value, ProviderValue) else None
    return value


def _sets_own_members(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A loop over a class's own members that sets each on something: `for name, attr in
    cls.__dict__.items(): ... setattr(target, name, attr)` (or `vars(cls).items()`)."""
    for loop in every_node(function):
        if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Tuple) and len(loop.target.elts) == 2):
            continue
        items = loop.iter
        if not (isinstance(items, ast.Call) and isinstance(items.func, ast.Attribute) and items.func.attr == "items"):
            continue
        of = items.func.value
        own = (isinstance(of, ast.Attribute) and of.attr == "__dict__") or (
            isinstance(of, ast.Call) and dotted(of.func) == "vars"
        )
        name = loop.target.elts[0]
        if own and isinstance(name, ast.Name):
            for call in every_node(loop):
                if (
                    isinstance(call, ast.Call)
                    and dotted(call.func) == "setattr"
                    and len(call.args) == 3
                    and isinstance(call.args[1], ast.Name)
                    and call.args[1].id == name.id
                ):
                    return True
    return False


def _super_call(method: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call) -> SuperCall:
    """`super().m(...)` in `method`, with the arguments that are its parameters known not None there."""
    names = {k.name for k in known_none(method, [call.lineno]) if not k.none}
    if not names:
        return SuperCall(call.lineno)
    positions = tuple(i for i, a in enumerate(call.args) if isinstance(a, ast.Name) and a.id in names)
    keywords = tuple(k.arg for k in call.keywords if k.arg and isinstance(k.value, ast.Name) and k.value.id in names)
    return SuperCall(call.lineno, positions, keywords)


def _end_line(node: ast.stmt) -> int:
    return node.end_lineno if node.end_lineno is not None else node.lineno


def _last_name(node: ast.expr) -> str:
    """The last name of a dotted expression (`enum.Enum` -> "Enum"; "" for anything else)."""
    return dotted(node).rpartition(".")[2]


def _typed_by_assignments(
    assigned: dict[str, set[tuple[tuple[Ref, ...], str, str]]], typed: dict[str, tuple[Ref, ...]]
) -> tuple[dict[str, str], dict[str, str]]:
    """From what each `self.x = ...` of a class makes (`_self_assignments`): the attributes every
    assignment gives the same provider class go into `typed` (unless its body annotates them);
    those every assignment makes the same consumer class of are returned, with that class
    (`self.drafter = A(...)` here and `= B(...)` there is neither: "", not known); and apart,
    those every assignment stores the same parameter not annotated in, with it ("method:x")."""
    made: dict[str, str] = {}
    params: dict[str, str] = {}
    for attr, kinds in assigned.items():
        choices, own, param = next(iter(kinds)) if len(kinds) == 1 else ((), "", "")
        if choices:
            typed.setdefault(attr, choices)
        elif param and attr not in typed:
            params[attr] = param
        elif attr not in typed:
            made[attr] = own
    return made, params


def _dict_keys(node: ast.Dict) -> list[str] | None:
    """The keys of a dict literal when every one is a string constant (no `**other` inside)."""
    keys: list[str] = []
    for key in node.keys:
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        keys.append(key.value)
    return keys
