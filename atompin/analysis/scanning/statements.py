"""Statements: how the scanner reads each kind of statement.

`_block` reads a body statement by statement; each statement is read by the
`_visit_<class name>` method of its node class. Imports bind provider objects,
assignments move values between names, and `if`, `try`, `for`, `with` and
`match` read their blocks under what must hold for them to run (version gates,
`hasattr` tests, import ladders: see `conditions`).
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import TYPE_CHECKING

from atompin.analysis.flag_tests import branch_clauses
from atompin.analysis.gates import Gate, GateOp, ProviderVersion
from atompin.analysis.guards import (
    catches_attribute_error,
    catches_import_error,
    catches_only_version_errors,
    catches_only_version_errors_or_absence,
    catches_type_error,
    describe_fallback,
    exits,
    hasattr_tests,
    imports_only_the_package,
    imports_package,
    leaves,
    returns_instead,
    suppressing_try,
    type_error_handling,
)
from atompin.analysis.names import absolute_module
from atompin.analysis.scanning.common import TYPING_MODULES, each_value, node_text, self_owner
from atompin.analysis.scanning.state import MAX_DEPTH, ConsumerFunction, Ctx, evolve
from atompin.analysis.syntax import (
    breaks,
    dotted,
    gives_value,
    is_type_checking,
    redefined,
    sets_locals_only,
    shared_names,
    statements,
    target_names,
)
from atompin.analysis.usage import (
    Condition,
    ConditionKind,
    Handover,
    HandoverKind,
    ImportGroup,
    ImportKind,
    ImportUse,
    OutsideStore,
    Receiver,
    Ref,
    VersionAssert,
)
from atompin.analysis.values import (
    AttributeProbe,
    BuiltNamespace,
    ConsumerValue,
    DataclassDecorator,
    DataclassReplace,
    ModuleProbe,
    NameChoice,
    ProviderValue,
    ReceiverValue,
    Scope,
    TypingCast,
    Value,
)

if TYPE_CHECKING:
    from atompin.analysis.scanner import ConsumerScanner
# Bounds that keep the interpreter finite on any input.
_MAX_UNROLL = 64  # elements of a literal loop that are unrolled

# Modules whose functions read or parse versions: an alias of one is read as its name.
_ALIASED_READERS = frozenset({"importlib.metadata", "importlib_metadata", "packaging.version"})


class StatementReader:
    """The statement half of `ConsumerScanner`: a `_visit_<class name>` method per statement."""

    def _block(self: ConsumerScanner, body: list[ast.stmt], ctx: Ctx) -> None:
        for stmt in body:
            ctx = self._stmt(stmt, ctx) or ctx

    def _stmt(self: ConsumerScanner, node: ast.stmt, ctx: Ctx) -> Ctx | None:
        """Read one statement with its `_visit_<class name>` method; other statements are skipped.

        A returned context replaces `ctx` for the rest of the block: `if not hasattr(...): return`.
        """
        kind = node.__class__
        if kind not in self._visitors:  # looked up once per class of node: this runs for every statement
            self._visitors[kind] = getattr(type(self), f"_visit_{kind.__name__}", None)
        visit = self._visitors[kind]
        return visit(self, node, ctx) if visit is not None else None

    def _visit_Import(self: ConsumerScanner, node: ast.Import, ctx: Ctx) -> None:
        for alias in node.names:
            name = alias.name
            top = name.split(".")[0]
            if not self._is_provider(name):
                if self._is_consumer(name):
                    self._record_edge(ctx, name, node)
                    self._bind(ctx, alias.asname or top, ConsumerValue(name if alias.asname else top))
                else:
                    self._bind(ctx, alias.asname or top, None)
                    self._other_packages.setdefault(ctx.file.path, set()).add(alias.asname or top)
                continue
            self._record_import(ctx, ImportUse(Ref(name), self._site(ctx, node), ImportKind.IMPORT, ctx.via))
            self._bind(ctx, alias.asname or top, ProviderValue((Ref(name if alias.asname else top),)))

    def _visit_ImportFrom(self: ConsumerScanner, node: ast.ImportFrom, ctx: Ctx) -> None:
        module = absolute_module(ctx.file.module, ctx.file.is_package, node.level, node.module)
        provider = self._is_provider(module)
        consumer = self._is_consumer(module) or (node.level > 0)
        if consumer:
            self._record_edge(ctx, module, node)
        for alias in node.names:
            if alias.name == "*":
                if provider:
                    self._record_import(ctx, ImportUse(Ref(module), self._site(ctx, node), ImportKind.FROM, ctx.via))
                continue
            bound = alias.asname or alias.name
            if provider:
                ref = Ref(module, (alias.name,))
                self._record_import(ctx, ImportUse(ref, self._site(ctx, node), ImportKind.FROM, ctx.via))
                self._bind(ctx, bound, ProviderValue((ref,)))
                ctx.scope.imported.add(bound)
            elif consumer:
                self._record_edge(ctx, f"{module}.{alias.name}", node)
                self._bind(ctx, bound, self._reexported(f"{module}.{alias.name}"))
                self._class_names.setdefault(ctx.file.path, set()).add(bound)
            elif module in TYPING_MODULES and alias.name == "cast":
                self._bind(ctx, bound, TypingCast())
            elif module == "dataclasses" and alias.name == "dataclass":
                self._bind(ctx, bound, DataclassDecorator())
            elif module == "dataclasses" and alias.name == "replace":
                self._bind(ctx, bound, DataclassReplace())
            else:
                self._bind(ctx, bound, None)
                self._other_packages.setdefault(ctx.file.path, set()).add(bound)
                if alias.asname and module in _ALIASED_READERS:
                    # `from importlib.metadata import version as package_version`: read as `version`.
                    self._aliases.setdefault(ctx.file.path, {})[alias.asname] = alias.name

    def _visit_FunctionDef(self: ConsumerScanner, node: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Ctx) -> None:
        for deco in node.decorator_list:
            self._eval(deco, ctx)
        qualname = f"{ctx.function}.{node.name}" if ctx.function else node.name
        fn = ConsumerFunction(
            node,
            ctx.file,
            qualname,
            ctx.scope,
            muted=not ctx.record,
            when=self._when(ctx),  # in a ladder's try body, made only where the imports before it worked
            guards=ctx.hasattr_guards,
            outer=ctx.bound,
        )
        dotted_name = f"{ctx.file.module}.{qualname}"
        # The first definition wins: a later redefinition in a rescan must not shadow it.
        self._functions.setdefault(dotted_name, fn)
        made = self._definitions.setdefault(dotted_name, [])
        if all(other.node is not node for other in made):  # (a body read again defines it again)
            made.append(fn)
        self._bind(ctx, node.name, ConsumerValue(dotted_name))
        self._enqueue(fn, {}, ctx.via, ctx.depth)
        self._decorated(node, ConsumerValue(dotted_name), ctx)

    _visit_AsyncFunctionDef = _visit_FunctionDef

    def _gated_alias(self: ConsumerScanner, name: str, value: ConsumerValue, ctx: Ctx) -> None:
        """`name = f` at module level under a version gate: a definition of `name` where the gate
        holds (vllm-ascend binds `categorical_sample` to one function where
        `vllm_version_is("0.28.0")` and to another elsewhere, then patches vLLM with it)."""
        fn = self._functions.get(value.dotted)
        if fn is None:
            return
        when = tuple(dict.fromkeys((*fn.when, *self._when(ctx))))
        made = self._definitions.setdefault(f"{ctx.file.module}.{name}", [])
        if all(other.node is not fn.node or other.when != when for other in made):
            made.append(replace(fn, when=when, guards=fn.guards | ctx.hasattr_guards))

    def _visit_ClassDef(self: ConsumerScanner, node: ast.ClassDef, ctx: Ctx) -> None:
        for expr in [*node.bases, *node.decorator_list, *(k.value for k in node.keywords)]:
            self._eval(expr, ctx)
        qualname = f"{ctx.function}.{node.name}" if ctx.function else node.name
        body_scope = Scope(ctx.scope)
        replaced = redefined(node.body)
        # Methods see the enclosing scope, not the class body: give them a context whose
        # function name carries the class for readable qualnames.
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for deco in stmt.decorator_list:
                    self._eval(deco, ctx)
                if stmt in replaced:
                    continue  # never a method of the class: a later def of its name replaces it
                owner = f"{ctx.file.module}.{qualname}"
                name = f"{qualname}.{stmt.name}"
                when = self._when(ctx)
                fn = ConsumerFunction(stmt, ctx.file, name, ctx.scope, muted=not ctx.record, owner=owner, when=when)
                self._functions.setdefault(f"{ctx.file.module}.{qualname}.{stmt.name}", fn)
                self._enqueue(fn, {}, ctx.via, ctx.depth)
            else:
                self._stmt(stmt, evolve(ctx, scope=body_scope, function=qualname))
        self._bind(ctx, node.name, ConsumerValue(f"{ctx.file.module}.{qualname}"))
        # Provider methods the class body keeps (`_orig_sleep = Worker.sleep`): a method calling one
        # on `self` calls the original (`_record_delegation`).
        kept = {name: value for name, value in body_scope.names.items() if isinstance(value, ProviderValue)}
        if kept:
            self._kept_originals[f"{ctx.file.module}.{qualname}"] = kept
        self._module_patch_members(node, qualname, body_scope, ctx)
        self._find_state_gates(node, qualname, ctx)
        self._decorated(node, ConsumerValue(f"{ctx.file.module}.{qualname}"), ctx)
        self._record_class(node, ctx, qualname, replaced)
        self._class_decorators(node, ConsumerValue(f"{ctx.file.module}.{qualname}"), ctx)

    def _eval_stored(self: ConsumerScanner, node: ast.expr, ctx: Ctx) -> Value:
        """What a value assigned to a name evaluates to: in a function, a call's result is an
        instance of what it makes (`layer = Linear(...)`, `proposer = P(...) if spec else None`)."""
        if ctx.function and isinstance(node, ast.Call):
            return self._eval_Call(node, ctx, makes_instance=True)
        if ctx.function and isinstance(node, ast.IfExp):
            return self._eval_IfExp(node, ctx, makes_instance=True)
        return self._eval(node, ctx)

    def _visit_Assign(self: ConsumerScanner, node: ast.Assign, ctx: Ctx) -> None:
        self._record_unpack(node, ctx)
        if self._path_kept_for_reads(node, ctx):
            value = self._eval(node.value, evolve(ctx, record=False))  # its reads name the module
        else:
            value = self._eval_stored(node.value, ctx)
        for target in node.targets:
            self._assign(target, value, node.value, ctx)

    def _visit_AnnAssign(self: ConsumerScanner, node: ast.AnnAssign, ctx: Ctx) -> None:
        if node.value is None:
            return
        value = self._eval_stored(node.value, ctx)
        if value is None and ctx.function and isinstance(node.target, ast.Name):
            # `runner: GPUModelRunner = make()`: a local annotated with a provider class holds one.
            choices = self._unshadowed(self._provider_type(node.annotation, ctx), ctx.file.path)
            value = ReceiverValue(Receiver.INSTANCE, choices=choices) if choices else None
        self._assign(node.target, value, node.value, ctx)

    def _visit_AugAssign(self: ConsumerScanner, node: ast.AugAssign, ctx: Ctx) -> None:
        value = self._eval(node.value, ctx)
        # `steps += [f, g]` on a name holding a literal list: the list with more (a loop over it is unrolled).
        if isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add) and isinstance(value, tuple):
            current = ctx.scope.names.get(node.target.id)
            if isinstance(current, tuple):
                self._bind(ctx, node.target.id, (*current, *value))

    def _visit_Expr(self: ConsumerScanner, node: ast.Expr, ctx: Ctx) -> None:
        grown = self._grown_list(node.value, ctx)
        if grown is None:
            self._eval(node.value, ctx)
        else:
            self._bind(ctx, *grown)

    def _grown_list(self: ConsumerScanner, call: ast.expr, ctx: Ctx) -> tuple[str, tuple[Value, ...]] | None:
        """`steps.append(f)` or `steps.extend([f, g])` on a name holding a literal list: the name,
        and the list with what is added (an `extend` by what is not known adds nothing known);
        None for any other statement. sglang collects its tuning steps so before a loop runs
        each in a try."""
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in ("append", "extend")
            and isinstance(call.func.value, ast.Name)
            and len(call.args) == 1
            and not call.keywords
        ):
            return None
        name = call.func.value.id
        current = ctx.scope.names.get(name)
        if not isinstance(current, tuple):
            return None
        added = self._eval(call.args[0], ctx)
        if call.func.attr == "append":
            return name, (*current, added)
        return name, (*current, *added) if isinstance(added, tuple) else current

    def _visit_Return(self: ConsumerScanner, node: ast.Return | ast.Raise, ctx: Ctx) -> None:
        # Only what is returned or raised is read; nothing is bound.
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                value = self._eval(child, ctx)
                if ctx.returns is not None and isinstance(node, ast.Return):
                    # `return True` / `return False`: what a helper testing the version answers.
                    ctx.returns.append((_with_flags(child, value), ctx.when))
        if isinstance(node, ast.Return):
            self._record_returned_class(node, ctx)

    _visit_Raise = _visit_Return

    def _assign(self: ConsumerScanner, target: ast.expr, value: Value, value_node: ast.expr | None, ctx: Ctx) -> None:
        if isinstance(target, ast.Name):
            if ctx.when and ctx.definition is None and not ctx.owner and isinstance(value, ConsumerValue):
                self._gated_alias(target.id, value, ctx)
            self._bind(ctx, target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = (
                value if isinstance(value, tuple) and len(value) == len(target.elts) else (None,) * len(target.elts)
            )
            for elt, v in zip(target.elts, values):
                self._assign(elt, v, None, ctx)
        elif isinstance(target, ast.Attribute):
            owner = self._eval(target.value, ctx)
            self._set_on(owner, target, value, value_node, ctx)
            if ctx.record and not self._quiet:
                self._record_member_store(owner, target, ctx)
            if ctx.record and not (
                isinstance(owner, ReceiverValue) and owner.receiver is Receiver.SELF and not owner.other
            ):
                self.usage.contact.member_stores.append(target.attr)  # set from outside its class
                self.usage.contact.outside_stores.append(
                    OutsideStore(target.attr, self._site(ctx, target), ctx.function)
                )
        elif isinstance(target, ast.Subscript):
            table = self._eval(target.value, ctx)
            key = self._eval(target.slice, ctx)
            if dotted(target.value) == "sys.modules" and isinstance(key, str):
                self._record_injection(ctx, key, target, value)
            elif isinstance(table, dict) and isinstance(key, str):  # `TABLE["name"] = Cls`: a loop over it sees it
                table[key] = value
        elif isinstance(target, ast.Starred):
            self._assign(target.value, None, None, ctx)

    def _set_on(
        self: ConsumerScanner, owner: Value, target: ast.Attribute, value: Value, value_node: ast.expr | None, ctx: Ctx
    ) -> None:
        """`owner.x = value`: a patch of a provider object, a handover to a receiver, a method set on
        a consumer class, or a name a namespace the consumer builds holds now."""
        if isinstance(owner, ProviderValue):
            self._record_patch(ctx, target, owner, target.attr, value_node, value)
        elif isinstance(owner, ReceiverValue):
            self._record_attribute_handover(ctx, target, owner, value_node, value)
        elif isinstance(owner, ConsumerValue) and isinstance(value, ConsumerValue):
            self._install_in_class(owner, target, value, ctx)
        elif isinstance(owner, BuiltNamespace) and isinstance(target.value, ast.Name):
            self._bind(ctx, target.value.id, owner.with_name(target.attr))

    def _install_in_class(
        self: ConsumerScanner, cls: ConsumerValue, target: ast.Attribute, value: ConsumerValue, ctx: Ctx
    ) -> None:
        """`cls.m = f`, `cls` one of the consumer's classes and `f` a module-level function of its
        own: `f` is a method of `cls` now, and a class it returns by name one that method returns
        (ROCm ATOM's indexer-cache decorator sets `cls.get_attn_backend` to a function returning
        its sparse-MLA indexer backend). Its body is read with `self` a `cls`, recording nothing."""
        fn = self._functions.get(value.dotted)
        params = fn.node.args.posonlyargs + fn.node.args.args if fn is not None else []
        if fn is None or fn.owner or not params or cls.dotted not in self._classes or ctx.depth > MAX_DEPTH:
            return
        returned: list[tuple[object, tuple[Condition, ...]]] = []
        self._read_alone(fn, {params[0].arg: ReceiverValue(Receiver.SELF, cls.dotted)}, ctx, returned)
        site = self._site(ctx, target)
        for dotted_name in dict.fromkeys(v.dotted for v, _ in returned if isinstance(v, ConsumerValue)):
            handover = Handover(HandoverKind.RETURNED, dotted_name, site, holder=cls.dotted, member=target.attr)
            self.usage.contact.handovers.append(handover)

    def _visit_If(self: ConsumerScanner, node: ast.If, ctx: Ctx) -> Ctx | None:
        """`if hasattr(X, "f"):` guards its body (`if not ...:` its else); `if TYPE_CHECKING:` never runs;
        a version gate conditions both branches (`gates`)."""
        top = ctx.definition is None and not ctx.owner and not ctx.nested  # a statement of the module body
        in_function = ctx.definition is not None and not ctx.nested  # a statement of a function's body
        ctx = evolve(ctx, nested=True)
        if is_type_checking(node.test):
            self._type_only_imports(node.body, ctx)
            self._block(node.orelse, ctx)
            return None
        direct = self._direct_hasattr(node, ctx)
        # `if x.member:` or `if getattr(x, "member", None):` hands nothing on, as `is not None`
        # does not (see `passed_members`): not a read for the object.
        tested = _truth_tested(node.test) if direct is None else None
        read = (self_owner(tested[0], ctx), tested[1]) if tested is not None else None
        unread = read if read is not None and read not in self._value_reads else None
        test = self._eval(node.test, ctx) if direct is None else None
        if unread is not None:
            self._value_reads.discard(unread)
        if isinstance(test, bool) and ctx.returns is not None:
            # A helper's flag bound to a literal (`if return_version:`): its branch alone runs.
            test = Gate(GateOp.FIXED, node_text(node.test), compare=str(test))
        gate = self._gate_condition(node.test, test, ctx)
        if gate is not None:
            return self._gated_branches(node, gate, ctx, top, in_function)
        if isinstance(test, AttributeProbe):  # `uses_new_api = hasattr(X, "f")` ... `if uses_new_api:`
            return self._probed_branches(node, test, ctx)
        guard, negated = direct or self._hasattr_guard(node.test, ctx)
        if guard is None and (present := self._negated_hasattr_in_or(node.test, ctx)):
            # `if not hasattr(X, "n") or X.n: ... else: <old API>`: the `else` runs only where X has n.
            guarded = evolve(ctx, hasattr_guards=ctx.hasattr_guards | present)
            self._branches([(node.body, ctx), (node.orelse, guarded)], ctx.scope)
            return guarded if not node.orelse and leaves(node.body) else None
        if guard is None:
            # `if self.cascade_attn_enabled and ...:`: the body runs only where the flags are on.
            flags = self._self_flags(node.test, ctx)
            body = evolve(ctx, when=(*ctx.when, *flags)) if flags else ctx
            holds, fails = branch_clauses(node.test)
            body = evolve(body, flags=(*ctx.flags, *holds)) if holds else body
            other = evolve(ctx, flags=(*ctx.flags, *fails)) if fails else ctx
            narrowed = self._narrowed(node.test, ctx)
            if node.orelse:  # two alternatives: a call in one may be the other's compatibility form
                side = f"{ctx.file.path}:{node.lineno}#"
                body, orelse = evolve(body, branch=side + "0"), evolve(other, branch=side + "1")
                self._branches([(node.body, body), (node.orelse, orelse)], ctx.scope, mixed=True, narrowed=narrowed)
            else:
                self._branches([(node.body, body), (node.orelse, other)], ctx.scope, mixed=True, narrowed=narrowed)
            return None
        guarded = evolve(ctx, hasattr_guards=ctx.hasattr_guards | {guard})
        # `if hasattr(X, "f"): ... else: <fallback>`: the fallback runs only when X.f is absent.
        absent = self._absent(node, guard[0], (guard[1],), ctx) if direct is not None else ctx
        return self._hasattr_branches(node, guarded, absent, negated)

    def _narrowed(self: ConsumerScanner, test: ast.expr, ctx: Ctx) -> tuple[str, Value] | None:
        """`isinstance(x, C)` of a local name and a provider class: x, and what it is where the test
        holds, an instance of C. Of `isinstance(x, (C, D))`, an instance of C, the first class named
        (a call that C cannot take fails where x is a C)."""
        if not (
            isinstance(test, ast.Call)
            and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance"
            and len(test.args) == 2
            and not test.keywords
            and isinstance(test.args[0], ast.Name)
        ):
            return None
        classes = test.args[1]
        first = classes.elts[0] if isinstance(classes, ast.Tuple) and classes.elts else classes
        named = self._pure(first, ctx)
        choices = self._unshadowed(named.choices, ctx.file.path) if isinstance(named, ProviderValue) else ()
        return (test.args[0].id, ReceiverValue(Receiver.INSTANCE, choices=choices)) if choices else None

    def _self_flags(self: ConsumerScanner, test: ast.expr, ctx: Ctx) -> tuple[Condition, ...]:
        """The conditions `self.x` puts on the body of an `if` in a method (the test, or an operand of
        an `and` test): the checks decide them where the provider keeps x false."""
        if not ctx.owner:
            return ()
        operands = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        return tuple(
            Condition(ConditionKind.FLAG, self._site(ctx, test), node_text(op), attr=op.attr, owner=ctx.owner)
            for op in operands
            if isinstance(op, ast.Attribute) and isinstance(op.value, ast.Name) and op.value.id == "self"
        )

    def _probed_branches(self: ConsumerScanner, node: ast.If, probe: AttributeProbe, ctx: Ctx) -> Ctx | None:
        """The branches of an `if` on a kept `hasattr` test, read as a written test's are: where it
        holds, the names are guarded; the other branch runs only where one of them is absent (a
        fallback for older providers), or, for a partial test (`hasattr(X, "n") and ...`), there and
        maybe elsewhere."""
        guarded = ctx
        if not probe.by_default:
            guarded = evolve(ctx, hasattr_guards=ctx.hasattr_guards | {(probe.owner, n) for n in probe.names})
        absent = self._absent(node, probe.owner, probe.names, ctx, only=not probe.partial)
        return self._hasattr_branches(node, guarded, absent, not probe.present)

    def _hasattr_branches(self: ConsumerScanner, node: ast.If, guarded: Ctx, absent: Ctx, negated: bool) -> Ctx | None:
        """Read the branches of an `if` on a `hasattr` test (written, or kept in a name): where the
        test finds the names in `guarded`, the other branch in `absent`. A body that leaves puts the
        rest of the block on the other side, and its context is returned: `if not hasattr(X, "f"):
        return` guards the rest (a `raise` there is a requirement, not a guard), and after
        `if hasattr(X, "f"): return` the rest runs only where X.f is absent (a polyfill)."""
        if negated:
            self._branches([(node.body, absent), (node.orelse, guarded)], guarded.scope)
            if node.body and isinstance(node.body[-1], (ast.Return, ast.Continue, ast.Break)):
                return guarded
            return None
        self._branches([(node.body, guarded), (node.orelse, absent)], guarded.scope)
        return absent if not node.orelse and leaves(node.body) else None

    def _branches(
        self: ConsumerScanner,
        branches: list[tuple[list[ast.stmt], Ctx]],
        scope: Scope,
        mixed: bool = False,
        narrowed: tuple[str, Value] | None = None,
    ) -> None:
        """Read the alternative branches of an `if`. A name they bind to provider objects may hold any of
        them afterwards: it keeps every choice, in order (the first that resolves wins, as in a ladder).
        With `mixed` (an `if` on the consumer's own state), a name one branch binds to a provider object
        and another to something else keeps the provider's, marked `mixed`, with what holds of the
        consumer's flags in the branch that bound it and in those that bound something else.
        `narrowed`: a name the test narrows to an instance of a provider class, bound so in the first
        branch only (`_narrowed`)."""
        before = dict(scope.names)
        changed: list[dict[str, Value]] = []
        for i, (body, ctx) in enumerate(branches):
            start = dict(scope.names)
            if narrowed is not None and i == 0:
                scope.names[narrowed[0]] = narrowed[1]
            self._block(body, ctx)
            if narrowed is not None and i == 0 and scope.names.get(narrowed[0]) is narrowed[1]:
                if narrowed[0] in start:  # what the name held before the test, again past the branch
                    scope.names[narrowed[0]] = start[narrowed[0]]
                else:
                    del scope.names[narrowed[0]]
            changed.append({k: v for k, v in scope.names.items() if k not in start or start[k] is not v})
        for name in {k for c in changed for k in c}:
            values = [c[name] for c in changed if name in c]
            if any(name not in c for c in changed) and name in before:
                values.append(before[name])
            if len(values) > 1 and all(isinstance(v, ProviderValue) for v in values):
                choices = tuple(dict.fromkeys(r for v in values for r in v.choices))  # type: ignore[union-attr]
                either = any(v.mixed for v in values)  # type: ignore[union-attr]
                scope.names[name] = ProviderValue(choices, values[0].guard, mixed=either)  # type: ignore[union-attr]
            elif mixed and (provided := [v for v in values if isinstance(v, ProviderValue)]):
                # Another branch imports or defines something else under the name (not `f = None`,
                # a placeholder: where it is called, the provider's object is there).
                first = provided[0]
                # (A branch that ends with it bound so, by a nested `if`, brings that `if`'s others in `first`.)
                others = [
                    ctx.flags
                    for (body, ctx), c in zip(branches, changed)
                    if c.get(name) is not first and self._binds_otherwise(body, name, ctx)
                ]
                if others:
                    bound = [ctx.flags for (_, ctx), c in zip(branches, changed) if c.get(name) is first]
                    # A nested `if` that marked it already knows more of where it is bound so.
                    bound_when = first.bound_when if first.mixed else bound[0] if len(bound) == 1 else ()
                    other_when = (*first.other_when, *others) if first.mixed else tuple(others)
                    scope.names[name] = replace(first, mixed=True, bound_when=bound_when, other_when=other_when)

    def _binds_otherwise(self: ConsumerScanner, body: list[ast.stmt], name: str, ctx: Ctx) -> bool:
        """Does `body` import `name` from outside the provider, or define it (a function or class)?"""
        for stmt in statements(body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name == name:
                return True
            if isinstance(stmt, ast.ImportFrom):
                source = absolute_module(ctx.file.module, ctx.file.is_package, stmt.level, stmt.module) or ""
                if not self._is_provider(source) and any((a.asname or a.name) == name for a in stmt.names):
                    return True
            elif isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if (a.asname or a.name.partition(".")[0]) == name and not self._is_provider(a.name):
                        return True
        return False

    def _negated_hasattr_in_or(
        self: ConsumerScanner, test: ast.expr, ctx: Ctx
    ) -> frozenset[tuple[tuple[Ref, ...], str]]:
        """The `not hasattr(owner, name)` operands of an `or` test, on provider objects: where the
        test fails, each owner has its name."""
        if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or)):
            return frozenset()
        return frozenset(
            tested
            for operand in test.values
            if isinstance(operand, ast.UnaryOp) and isinstance(operand.op, ast.Not)
            for call, negated in hasattr_tests(operand.operand)
            if not negated and (tested := self._hasattr_of(call, ctx)) is not None
        )

    def _hasattr_guard(
        self: ConsumerScanner, test: ast.expr, ctx: Ctx
    ) -> tuple[tuple[tuple[Ref, ...], str] | None, bool]:
        """The first `hasattr(owner, name)` the test rests on whose owner is a provider object."""
        for call, negated in hasattr_tests(test):
            if (tested := self._hasattr_of(call, ctx)) is not None:
                return tested, negated
        return None, False

    def _hasattr_of(self: ConsumerScanner, call: ast.Call, ctx: Ctx) -> tuple[tuple[Ref, ...], str] | None:
        """(owner's choices, name) of `hasattr(owner, name)` on a provider object with a name known."""
        owner, name = self._eval(call.args[0], ctx), self._eval(call.args[1], ctx)
        return (owner.choices, name) if isinstance(owner, ProviderValue) and isinstance(name, str) else None

    def _visit_Try(self: ConsumerScanner, node: ast.Try, ctx: Ctx) -> Ctx | None:
        """A try that catches ImportError around a provider import is a ladder; one catching AttributeError a guard.

        The ladder's alternatives are its body and each handler that imports the
        provider again (first importable wins); a handler that does not says what
        happens when every alternative fails. A body that returns what it imported, with a
        handler that lets the block go on, makes the rest of the block the next alternative
        (`try: from new import W; return W` / `except ImportError: pass`, then `from old import W`);
        handlers that all leave make the rest of the block run only where the body's imports worked.
        Returns the context for the rest of the block when the try changes what it runs under.
        """
        ctx = evolve(ctx, nested=True)
        body_ctx = evolve(ctx, try_guard=ctx.try_guard or catches_attribute_error(node.handlers))
        if catches_import_error(node.handlers):
            handler = next(h for h in node.handlers if catches_import_error([h]))
            body_ctx = evolve(body_ctx, catching_import=f"{ctx.file.path}:{node.lineno}", import_handler=handler)
        caught = type_error_handling(node.handlers)
        rest_ctx: Ctx | None = None
        if catches_import_error(node.handlers) and self._imports_provider(node.body, ctx):
            if ctx.in_handler and ctx.ladder is not None:
                group = ctx.ladder  # a ladder nested in a handler extends the outer one
            else:
                group = ImportGroup(ctx.file.path, node.lineno, ctx.function, True, when=ctx.when)
                group.feature_test = id(node) in self._feature_tests
                self.usage.groups.append(group)
            first: list[ImportUse] = []
            group.alternatives.append(first)
            start = dict(ctx.scope.names)
            ladder_ctx = evolve(body_ctx, collector=first, ladder=group, in_handler=False)
            self._try_body(node.body, ladder_ctx, caught, returns=returns_instead(node.handlers))
            imported = {
                k: v for k, v in ctx.scope.names.items() if isinstance(v, ProviderValue) and start.get(k) is not v
            }
            versions = {
                k: v for k, v in ctx.scope.names.items() if isinstance(v, ProviderVersion) and start.get(k) is not v
            }
            for handler in node.handlers:
                handler_ctx = self._handler_ctx(node, handler, ctx)
                if self._imports_provider(handler.body, ctx):
                    alt: list[ImportUse] = []
                    group.alternatives.append(alt)
                    self._block(handler.body, evolve(handler_ctx, collector=alt, ladder=group, in_handler=True))
                else:
                    if catches_import_error([handler]):
                        group.fallback = describe_fallback(handler.body)
                        group.leaves = leaves(handler.body)
                        group.exits = exits(handler.body)
                    self._block(handler.body, handler_ctx)
                    if catches_import_error([handler]):
                        self._keep_imported(handler.body, imported, group, ctx)
                        if imports_only_the_package(node.body, self.provider_package):
                            # `try: import vllm; V = parse(vllm.__version__)` / `except ImportError: V = None`:
                            # the handler runs only where the provider is not installed, never where checked.
                            ctx.scope.names.update(versions)
            body_refs = tuple(dict.fromkeys(u.ref for u in first))
            if len(group.alternatives) == 1 and body_refs and _left_by_handlers(node):
                # `try: from pv.x import A / except ImportError: return False`: the rest of the
                # block runs only where the body's imports worked (as the rest of the body does).
                after = Condition(ConditionKind.AFTER_IMPORTS, self._site(ctx, node), refs=body_refs)
                rest_ctx = evolve(ctx, when=(*ctx.when, after))
            elif _returns_or_falls_through(node):
                # What follows runs only where the body's import failed: the ladder's next alternative.
                handled = (group.fallback, group.leaves, group.exits)
                group.fallback, group.leaves, group.exits = "", False, False
                rest: list[ImportUse] = []
                group.alternatives.append(rest)
                self._ladder_rests.append((group, rest, handled, len(group.alternatives)))
                handler_ctx = self._handler_ctx(node, node.handlers[0], ctx)
                rest_ctx = evolve(handler_ctx, collector=rest, ladder=group, in_handler=True)
        else:
            rest_ctx = self._plain_try(node, ctx, body_ctx, caught)
        self._block(node.orelse, ctx)
        self._block(node.finalbody, ctx)
        return rest_ctx

    _visit_TryStar = _visit_Try  # 3.11+: `except*` has the same fields

    def _plain_try(self: ConsumerScanner, node: ast.Try, ctx: Ctx, body_ctx: Ctx, caught: str) -> Ctx | None:
        """A try that is no ladder of provider imports: its body, then its handlers. Returns the
        context for what follows when only a body that got to its end lets it run."""
        start = dict(ctx.scope.names)
        try_site = f"{ctx.file.path}:{node.lineno}" if caught else ""
        if catches_import_error(node.handlers) and body_ctx.collector is not None:
            # An import this try catches (a name computed in a loop) is its own, not an alternative of
            # the ladder around it: where it fails, the handler here takes over.
            body_ctx = evolve(body_ctx, collector=None, when=self._when(body_ctx))
        ended = self._try_body(node.body, body_ctx, caught, try_site, returns_instead(node.handlers))
        body_bound = {k: v for k, v in ctx.scope.names.items() if k not in start or start[k] is not v}
        for handler in node.handlers:
            handler_ctx = self._handler_ctx(node, handler, ctx)
            if try_site and catches_type_error(handler):
                handler_ctx = evolve(handler_ctx, type_error_fallback=try_site)
            self._block(handler.body, handler_ctx)
            # `try: HAS = find_spec("pkg.a.b") is not None` / `except ImportError: HAS = False` (find_spec
            # raises when a parent package is missing): False there too, so HAS stays the probe.
            for name in _falsy_literals(handler.body) if catches_import_error([handler]) else ():
                probe = body_bound.get(name)
                if isinstance(probe, ModuleProbe) and probe.present:
                    ctx.scope.names[name] = probe
            if catches_only_version_errors(handler):
                # `try: v = parse(vllm.__version__)` / `except InvalidVersion: v = parse("0.8.5")`: the
                # handler is for a build whose version does not parse; a release's does, so v is its.
                ctx.scope.names.update({k: v for k, v in body_bound.items() if isinstance(v, ProviderVersion)})
            if len(handler_ctx.when) > len(ctx.when) and _consumer_first(handler_ctx):
                # `try: from <own module> import X except ImportError: from <provider> import X`: the
                # consumer's own module is there, so its X is the one bound.
                ctx.scope.names.update({k: v for k, v in body_bound.items() if isinstance(v, ConsumerValue)})
        gated = any(c.kind is ConditionKind.GATE for c in ended.when[len(body_ctx.when) :])
        if len(ended.when) > len(body_ctx.when) and all(
            leaves(h.body) or (gated and catches_only_version_errors_or_absence(h)) for h in node.handlers
        ):
            # `try: if find_spec("pkg.mod") is None: return None` / `except ImportError: return
            # None`: what follows runs only where the body got to its end, under what it found; so
            # past `except (PackageNotFoundError, InvalidVersion): pass` around a version gate,
            # which the provider's release never raises.
            return evolve(ctx, when=(*ctx.when, *ended.when[len(body_ctx.when) :]))
        return None

    def _keep_imported(
        self: ConsumerScanner, handler: list[ast.stmt], imported: dict[str, ProviderValue], group: ImportGroup, ctx: Ctx
    ) -> None:
        """A ladder's ImportError handler that defines a class or function of its own under a name
        the body imported from the provider (`except ImportError: class Platform: pass`, for running
        without it) leaves the provider's object bound: where the plugin runs the provider is
        installed, and a missing import is the ladder's finding. Subclasses then derive from it.
        The group keeps what was stood in for: where the import fails, a use of the name is the
        stand-in's (unsloth-zoo's `AbstractWorkerManager`, for vLLM releases without it)."""
        for stmt in handler:
            if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in imported:
                if isinstance(ctx.scope.names.get(stmt.name), ConsumerValue):
                    ctx.scope.names[stmt.name] = imported[stmt.name]
                    group.stand_ins = (*group.stand_ins, *imported[stmt.name].choices)

    def _try_body(
        self: ConsumerScanner, body: list[ast.stmt], ctx: Ctx, caught: str, try_site: str = "", returns: bool = False
    ) -> Ctx:
        """A try body. A TypeError its last statement raises is caught by the handler and loses only that
        statement's work (degraded); one raised earlier skips the rest of the body as well, which
        loses more unless the rest only sets names from values (`sets_locals_only`), or the handler
        returns from a function that returns a value elsewhere (`returns`: `guards.returns_instead`;
        its callers read the answer it gives for failure: a procedure's callers would not know).
        Returns the context the body ends in (an early `return` in it adds what the rest runs under)."""
        answers = returns and ctx.definition is not None and gives_value(ctx.definition)
        quiet = 0 if answers else len(body)  # body[quiet:] only sets the function's own names
        shared = shared_names(ctx.definition) if caught and ctx.definition is not None else set()
        while caught and ctx.definition is not None and quiet > 0 and sets_locals_only(body[quiet - 1 : quiet], shared):
            quiet -= 1
        for i, stmt in enumerate(body):
            last = caught and i + 1 >= quiet
            inner = evolve(ctx, type_error_handler=caught, type_error_try=try_site) if last else ctx
            ctx = self._stmt(stmt, inner) or ctx
        return ctx

    def _imports_provider(self: ConsumerScanner, body: list[ast.stmt], ctx: Ctx) -> bool:
        return imports_package(body, self.provider_package, ctx.file.module, ctx.file.is_package)

    def _visit_For(self: ConsumerScanner, node: ast.For | ast.AsyncFor, ctx: Ctx) -> None:
        """A loop over a literal tuple or dict is unrolled; when its body breaks, its patches are alternatives."""
        items = self._eval(node.iter, ctx)
        ctx = evolve(ctx, nested=True)
        if isinstance(items, dict):
            items = tuple(items)
        if isinstance(items, tuple) and 0 < len(items) <= _MAX_UNROLL:
            breaking = breaks(node.body)
            group = f"{ctx.file.path}:{node.lineno}" if breaking else ctx.loop_group
            before = dict(ctx.scope.names) if breaking else {}
            picked: dict[str, list[Value]] = {}  # what each turn of a loop that breaks binds
            for item in items:
                self._assign(node.target, item, None, ctx)
                self._block(node.body, evolve(ctx, loop_group=group))
                for name, value in ctx.scope.names.items() if breaking else ():
                    if name not in before or before[name] is not value:
                        picked.setdefault(name, []).append(value)
            if picked:
                self._bind_choices(node, picked, group, ctx)
        else:
            # Over a collection of provider instances (`for output in outputs`, `outputs: list[C]`): a C each turn.
            self._assign(node.target, each_value(items, node.target), None, ctx)
            self._block(node.body, ctx)
        self._block(node.orelse, ctx)

    _visit_AsyncFor = _visit_For

    def _bind_choices(
        self: ConsumerScanner, node: ast.For | ast.AsyncFor, picked: dict[str, list[Value]], group: str, ctx: Ctx
    ) -> None:
        """After a loop that breaks, a name its turns set to different strings (not the loop's own
        variable) holds any one of them: the turn that broke is not known here."""
        own = set(target_names(node.target))
        for name, values in picked.items():
            names = tuple(dict.fromkeys(v for v in values if isinstance(v, str)))
            if name not in own and len(names) > 1 and len(names) == len(values):
                ctx.scope.names[name] = NameChoice(names, group)

    def _visit_Assert(self: ConsumerScanner, node: ast.Assert, ctx: Ctx) -> Ctx | None:
        """`assert <version gate>`: the rest of the block runs only when it holds. At module level it is a
        tripwire: importing the module raises where it fails."""
        test = self._eval(node.test, ctx)
        self._eval(node.msg, ctx)
        gate = self._gate_condition(node.test, test, ctx)
        if gate is not None and not ctx.function and ctx.record:
            self.usage.version_asserts.append(VersionAssert(gate, ctx.file.module, ctx.when))
        return evolve(ctx, when=(*ctx.when, gate)) if gate is not None else None

    def _visit_While(self: ConsumerScanner, node: ast.While, ctx: Ctx) -> None:
        self._eval(node.test, ctx)
        ctx = evolve(ctx, nested=True)
        self._block(node.body, ctx)
        self._block(node.orelse, ctx)

    def _visit_With(self: ConsumerScanner, node: ast.With | ast.AsyncWith, ctx: Ctx) -> None:
        as_try = suppressing_try(node)
        if as_try is not None:  # `with suppress(ImportError):` is a try that catches it
            self._visit_Try(as_try, ctx)
            return
        for item in node.items:
            value = self._eval(item.context_expr, ctx)
            if item.optional_vars is not None:
                self._assign(item.optional_vars, value, item.context_expr, ctx)
        self._block(node.body, ctx)

    _visit_AsyncWith = _visit_With

    def _visit_Match(self: ConsumerScanner, node: ast.Match, ctx: Ctx) -> None:
        self._eval(node.subject, ctx)
        ctx = evolve(ctx, nested=True)
        for case in node.cases:
            self._block(case.body, ctx)


def _with_flags(node: ast.expr, value: Value) -> object:
    """A returned value with its literal `True`/`False` kept (alone, or as an element of a tuple:
    `return True, version, ""`): what a helper testing the version answers."""
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Tuple) and isinstance(value, tuple) and len(value) == len(node.elts):
        return tuple(
            e.value if isinstance(e, ast.Constant) and isinstance(e.value, bool) else v
            for e, v in zip(node.elts, value)
        )
    return value


def _truth_tested(node: ast.expr) -> tuple[ast.expr, str] | None:
    """The object and member an `if` tests for truth: `x.a`, `getattr(x, "a", default)`, or
    `not` of either; None for any other test."""
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node = node.operand
    if isinstance(node, ast.Attribute):
        return node.value, node.attr
    if (
        isinstance(node, ast.Call)
        and dotted(node.func) == "getattr"
        and len(node.args) in (2, 3)
        and not node.keywords
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[0], node.args[1].value
    return None


def _left_by_handlers(node: ast.Try) -> bool:
    """Does every handler of this try that catches a failed import leave the block, while the
    body does not (what follows runs only where the body got through)?"""
    catching = [h for h in node.handlers if catches_import_error([h])]
    return bool(catching) and all(leaves(h.body) for h in catching) and not leaves(node.body)


def _returns_or_falls_through(node: ast.Try) -> bool:
    """Is this a try whose body ends by returning, with one handler, for ImportError, that lets
    the block go on (and nothing in `else` or `finally`)?"""
    return (
        bool(node.body)
        and isinstance(node.body[-1], ast.Return)
        and len(node.handlers) == 1
        and catches_import_error(node.handlers)
        and not leaves(node.handlers[0].body)
        and not node.orelse
        and not node.finalbody
    )


def _consumer_first(ctx: Ctx) -> bool:
    """Is this the handler of a try that imports only the consumer's own modules, all present?"""
    last = ctx.when[-1] if ctx.when else None
    return last is not None and last.kind is ConditionKind.TRY_FAILED and not last.refs and last.others_present


def _falsy_literals(body: list[ast.stmt]) -> set[str]:
    """Names `body` sets to False or None at its top level (`X = False`)."""
    return {
        stmt.targets[0].id
        for stmt in body
        if isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.Constant)
        and stmt.value.value in (False, None)
    }
