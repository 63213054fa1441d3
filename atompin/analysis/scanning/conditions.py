"""Conditions: version gates, `hasattr`'s other branch, try handlers.

What must hold for a block to run (`Ctx.when`): a comparison of the provider's
version, a helper that computes one, a `hasattr` test or its negation, a
handler of a failed import. Findings under a condition the provider does not
meet are judged for that provider alone.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from typing import TYPE_CHECKING, TypeGuard

from atompin.analysis import gates
from atompin.analysis.gates import (
    Gate,
    GateOp,
    ProviderVersion,
    SpecifierContains,
    VersionForm,
    VersionLiteral,
    VersionMethod,
)
from atompin.analysis.guards import body_imports, catches_only_import_errors, leaves
from atompin.analysis.platforms import TORCH_VERSIONS, PlatformTest
from atompin.analysis.scanning.common import node_text, owner_and_name, self_owner, signature_of_value
from atompin.analysis.scanning.state import MAX_DEPTH, ConsumerFunction, Ctx, evolve
from atompin.analysis.syntax import dotted, function_body, walk_shallow
from atompin.analysis.syntax import walk as every_node
from atompin.analysis.usage import AttributeUse, Condition, ConditionKind, Guard, ModuleStop, ReadKind, Ref, Requirement
from atompin.analysis.values import (
    AttributeProbe,
    ConsumerValue,
    ModuleProbe,
    ParameterProbe,
    ProviderValue,
    Scope,
    SignatureOf,
    Value,
)
from atompin.model import Site

if TYPE_CHECKING:
    from atompin.analysis.scanner import ConsumerScanner


# Looked for in a function's text before it is walked for a version helper's names.
_VERSION_WORD = re.compile(rb"version", re.IGNORECASE)


# What a helper's answer may hold: tests of the provider and its version.
_ANSWERS = (Gate, ProviderVersion, AttributeProbe, ModuleProbe, ParameterProbe)


class ConditionReader:
    """What must hold for a block to run, read from tests, helpers and handlers."""

    def _when(self: ConsumerScanner, ctx: Ctx) -> tuple[Condition, ...]:
        """The conditions of a use recorded now: its block's, and in a ladder's try body the imports before it."""
        if ctx.collector and ctx.ladder is not None:
            refs = tuple(dict.fromkeys(u.ref for u in ctx.collector))
            after = Condition(ConditionKind.AFTER_IMPORTS, Site(ctx.ladder.path, ctx.ladder.line), refs=refs)
            return (*ctx.when, after)
        return ctx.when

    def _direct_hasattr(
        self: ConsumerScanner, node: ast.If, ctx: Ctx
    ) -> tuple[tuple[tuple[Ref, ...], str] | None, bool] | None:
        """For a test that is exactly `hasattr(X, "n")` or `not hasattr(X, "n")`: (guard, negated), the
        read recorded; None, with nothing evaluated, for any other test."""
        test, negated = node.test, False
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negated = test.operand, True
        if not (
            isinstance(test, ast.Call) and dotted(test.func) == "hasattr" and len(test.args) == 2 and not test.keywords
        ):
            return None
        owner, name = self._eval(test.args[0], ctx), self._eval(test.args[1], ctx)
        if not isinstance(owner, ProviderValue) or not isinstance(name, str):
            return None, negated
        # `if not hasattr(X, "n"):` is an idempotency or ordering check, not a guard around a use of X.n;
        # so is `if hasattr(X, "n"): return` with nothing else in its body.
        self._record_read(owner, name, ReadKind.ABSENT if negated or _only_leaves(node) else ReadKind.HASATTR)
        if negated and ctx.record and node.body and isinstance(node.body[-1], ast.Raise):
            # `if not hasattr(X, "n"): raise ...` requires X.n (unless the consumer adds it itself).
            use = AttributeUse(
                owner.attr(name).choices, self._site(ctx, test), Guard.REQUIRED, self._when(ctx), ctx.function
            )
            self.usage.attributes.append(use)
        return (owner.choices, name), negated

    def _absent(
        self: ConsumerScanner, node: ast.If, owner: tuple[Ref, ...], names: tuple[str, ...], ctx: Ctx, only: bool = True
    ) -> Ctx:
        """`ctx` for the branch of `node` that runs only where the provider's owner lacks one of `names`;
        without `only` (`hasattr(X, "n") and ...`), wherever it lacks them, and maybe elsewhere too."""
        first, *more = names
        site, text = self._site(ctx, node), node_text(node.test)
        kind = ConditionKind.ATTR_ABSENT if only else ConditionKind.ATTR_ABSENT_OR
        condition = Condition(kind, site, text, refs=owner, attr=first, also=tuple(more))
        return evolve(ctx, when=(*ctx.when, condition))

    def _gate_condition(self: ConsumerScanner, test: ast.expr, value: Value, ctx: Ctx) -> Condition | None:
        """The condition a version gate puts on the branch it opens (recorded for --verbose and gate-flip),
        or a test of whether the provider has a module (`find_spec`)."""
        if isinstance(value, ConsumerValue):
            value = self._consumer_global(value.dotted)
        if isinstance(value, ModuleProbe):
            probe = Condition(
                ConditionKind.MODULE_FOUND,
                self._site(ctx, test),
                node_text(test),
                refs=(value.ref,),
                expect=value.present,
            )
            if ctx.record:
                self.usage.module_probes.append(probe)
            return probe
        if isinstance(value, ParameterProbe):
            site, text = self._site(ctx, test), node_text(test)
            return Condition(
                ConditionKind.PARAM_TAKEN,
                site,
                text,
                refs=value.choices,
                attr=value.name,
                also=value.also,
                expect=value.present,
            )
        if isinstance(value, PlatformTest) and (value.holds or value.fails):
            holds, fails = tuple(sorted(value.holds)), tuple(sorted(value.fails))
            return Condition(ConditionKind.PLATFORM, self._site(ctx, test), node_text(test), holds=holds, fails=fails)
        if not isinstance(value, Gate) or not value.is_version:
            return None
        text = node_text(test)
        if isinstance(test, (ast.Name, ast.Attribute)) and value.text and value.text != text:
            text = value.text if value.text.startswith(text) else f"{text} (= {value.text})"
        condition = Condition(ConditionKind.GATE, self._site(ctx, test), text, gate=value)
        if ctx.record:
            self.usage.gates.append(condition)
        return condition

    def _gated_branches(
        self: ConsumerScanner, node: ast.If, gate: Condition, ctx: Ctx, top: bool = False, in_function: bool = False
    ) -> Ctx | None:
        """The branches of an `if` on a gate (`top`: a statement of the module body; `in_function`:
        of a function's body)."""
        taken = evolve(ctx, when=(*ctx.when, gate))
        other = evolve(ctx, when=(*ctx.when, replace(gate, expect=not gate.expect)))
        place = (ctx.file.path, node.test.lineno)
        self._gate_at[place] = gate if self._gate_at.get(place, gate) == gate else None
        raises = ctx.record and bool(node.body) and isinstance(node.body[-1], ast.Raise) and not leaves(node.orelse)
        if top and raises:
            stop = ModuleStop(self._site(ctx, node.body[-1]), ctx.file.module, ctx.file.is_package, other.when)
            self.usage.module_stops.append(stop)
        if in_function and raises and gate.kind is ConditionKind.GATE:
            self.usage.gated_raises.append((gate.site, self._site(ctx, node.body[-1])))
        if in_function and raises and gate.kind is ConditionKind.PARAM_TAKEN:
            holds = replace(gate, expect=not gate.expect)
            requirement = Requirement(self._site(ctx, node.body[-1]), ctx.file.module, ctx.function, holds)
            self.usage.requirements.append(requirement)
        self._branches([(node.body, taken), (node.orelse, other)], ctx.scope)
        # `if gate: FLAG = False` / `else: FLAG = True`: the flag is the gate (or its negation).
        if gate.gate is not None:
            for name, value in _flags_set(node).items():
                self._bind(ctx, name, gate.gate if value else gates.negate(gate.gate, f"not {gate.text}"))
        # `if gate: return` (or raise): the rest of the block runs only when the gate is false.
        if leaves(node.body) and not leaves(node.orelse):
            return other
        if leaves(node.orelse) and not leaves(node.body):
            return taken
        return None

    def _eval_IfExp(self: ConsumerScanner, node: ast.IfExp, ctx: Ctx, makes_instance: bool = False) -> Value:
        """Both sides read, each under the version gate its test is, if it is one. With
        `makes_instance` (`proposer = Proposer(...) if spec else None` in a function), outside a
        gate: what a call on one side makes when the other is None."""
        gate = self._gate_condition(node.test, self._eval(node.test, ctx), ctx)
        if gate is None:
            sides = [
                self._eval_Call(side, ctx, makes_instance=True)
                if makes_instance and isinstance(side, ast.Call)
                else self._eval(side, ctx)
                for side in (node.body, node.orelse)
            ]
            if not makes_instance:
                return None
            nones = [isinstance(s, ast.Constant) and s.value is None for s in (node.body, node.orelse)]
            return sides[0] if nones[1] else sides[1] if nones[0] else None
        self._eval(node.body, evolve(ctx, when=(*ctx.when, gate)))
        self._eval(node.orelse, evolve(ctx, when=(*ctx.when, replace(gate, expect=not gate.expect))))
        return None

    def _eval_Compare(self: ConsumerScanner, node: ast.Compare, ctx: Ctx) -> Value:
        if (platform := self._torch_build(node, ctx)) is not None:
            return platform
        sides = [node.left, *node.comparators]
        # `x.member is not None` hands nothing on (see `passed_members`): not a read for the object.
        tested = _none_tested(node)
        read = (self_owner(tested.value, ctx), tested.attr) if tested is not None else None
        unread = read if read is not None and read not in self._value_reads else None
        values = [self._comparable(self._eval(n, ctx), n) for n in sides]
        if unread is not None:
            self._value_reads.discard(unread)
        probe = next((v for v in values if isinstance(v, ModuleProbe)), None)
        if probe is not None and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            if any(isinstance(n, ast.Constant) and n.value is None for n in sides):  # find_spec(...) is not None
                return probe if isinstance(node.ops[0], ast.IsNot) else probe.negated()
        held = next((v for v in values if isinstance(v, ProviderValue) and v.none_default), None)
        if held is not None and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            # `found = getattr(X, "n", None)` ... `if found is None:`: a test of whether X has n
            # (unless X.n is None itself), as `hasattr` is.
            owned = owner_and_name(held)
            if owned is not None and any(isinstance(n, ast.Constant) and n.value is None for n in sides):
                return AttributeProbe(owned[0], (owned[1],), isinstance(node.ops[0], ast.IsNot), by_default=True)
        if (
            len(values) == 2
            and isinstance(values[1], SignatureOf)
            and values[1].parameters
            and isinstance(values[0], str)
        ):
            if isinstance(node.ops[0], (ast.In, ast.NotIn)):  # "x" in inspect.signature(f).parameters
                return ParameterProbe(values[1].choices, values[0], isinstance(node.ops[0], ast.In))
        if not any(isinstance(v, ProviderVersion) for v in values):
            return None
        if len(node.ops) != 1:
            return Gate(GateOp.OPAQUE, node_text(node))
        if isinstance(node.ops[0], (ast.Is, ast.IsNot)) and any(
            isinstance(n, ast.Constant) and n.value is None for n in sides
        ):
            # `VLLM_VERSION is not None`: the provider's version is never None where it is installed.
            return Gate(GateOp.FIXED, node_text(node), compare=str(isinstance(node.ops[0], ast.IsNot)))
        return gates.compare(type(node.ops[0]).__name__, values[0], values[1], node_text(node))

    def _torch_build(self: ConsumerScanner, node: ast.expr, ctx: Ctx) -> PlatformTest | None:
        """`torch.version.hip is not None` (`is None`; or `torch.version.hip` alone), torch imported
        in this file: a test of the platform (`platforms.TORCH_VERSIONS`); None for anything else."""
        tested, is_set = node, True
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            right = node.comparators[0]
            if not (isinstance(right, ast.Constant) and right.value is None):
                return None
            tested, is_set = node.left, isinstance(node.ops[0], ast.IsNot)
        if not (
            isinstance(tested, ast.Attribute)
            and tested.attr in TORCH_VERSIONS
            and dotted(tested.value) == "torch.version"
            and "torch" in self._other_packages.get(ctx.file.path, ())
        ):
            return None
        test = PlatformTest.exact(TORCH_VERSIONS[tested.attr], node_text(node))
        return test if is_set else test.negated(node_text(node))

    def _eval_UnaryOp(self: ConsumerScanner, node: ast.UnaryOp, ctx: Ctx) -> Value:
        value = self._eval(node.operand, ctx)
        if isinstance(node.op, ast.Not) and isinstance(value, (ModuleProbe, AttributeProbe, ParameterProbe)):
            return value.negated()
        if isinstance(node.op, ast.Not) and isinstance(value, PlatformTest):
            return value.negated(node_text(node))
        if isinstance(node.op, ast.Not) and isinstance(value, bool):  # a helper's literal flag
            return not value
        return (
            gates.negate(value, node_text(node)) if isinstance(node.op, ast.Not) and isinstance(value, Gate) else None
        )

    def _comparable(self: ConsumerScanner, value: Value, node: ast.expr) -> object:
        """A compared value: the provider's version, a literal (tuples of ints included), or as evaluated."""
        version = self._as_version(value)
        if version is not None:
            return version
        if isinstance(node, ast.Constant):
            return node.value  # what `ast.literal_eval` gives, without its closures (garbage for the collector)
        if isinstance(node, ast.Tuple):
            try:
                return ast.literal_eval(node)
            except ValueError:
                return value
        return value

    def _as_version(self: ConsumerScanner, value: Value) -> ProviderVersion | None:
        if isinstance(value, ProviderVersion):
            return value
        if isinstance(value, ProviderValue):
            ref = value.choices[0]
            return gates.version_ref(ref.module, ref.path, self.provider_package)
        return None

    def _version_call(
        self: ConsumerScanner, name: str, callee: Value, node: ast.Call, args: list[Value], ctx: Ctx
    ) -> Value:
        """`Version(...)`, `parse(...)`, `importlib.metadata.version("<provider>")`, `<version>.startswith(...)`."""
        if isinstance(callee, VersionMethod):
            if callee.attr == "startswith" and len(args) == 1:
                return gates.startswith(callee.version, args[0], node_text(node))
            text = callee.version.form is VersionForm.TEXT
            if text and callee.attr in ("split", "partition") and args[:1] == ["+"] and not node.keywords:
                return ProviderVersion(VersionForm.SPLIT_AT_PLUS)  # vllm-ascend 0.28 cuts "+empty" by hand
            return ProviderVersion(VersionForm.OPAQUE)
        if isinstance(callee, SpecifierContains) and len(args) == 1:
            version = self._as_version(args[0])
            if version is None:
                return None
            pre = next((k.value for k in node.keywords if k.arg == "prereleases"), ast.Constant(None))
            if not (isinstance(pre, ast.Constant) and (pre.value is None or isinstance(pre.value, bool))):
                return Gate(GateOp.OPAQUE, node_text(node))  # decided at run time
            return gates.contained(version, callee.specifier, node_text(node), prereleases=pre.value)
        last = name.rpartition(".")[2]
        if last == "SpecifierSet" and len(args) == 1 and not node.keywords:
            return gates.specifier(args[0])
        if len(args) != 1 or node.keywords:
            return None
        arg = self._as_version(args[0]) or args[0]
        if last in ("Version", "parse", "parse_version", "LooseVersion"):
            if isinstance(arg, ProviderVersion):
                return replace(arg, form=VersionForm.VERSION if arg.form is VersionForm.TEXT else VersionForm.OPAQUE)
            if isinstance(arg, str):
                return VersionLiteral(arg)
        if last == "version" and isinstance(arg, str) and _distribution(arg) == _distribution(self.provider_package):
            return ProviderVersion(VersionForm.TEXT)
        return None

    def _helper_value(
        self: ConsumerScanner, callee: ConsumerValue, args: list[Value], kwargs: dict[str, Value], ctx: Ctx
    ) -> Value:
        """What a consumer helper returns when that is a version gate: `vllm_version_is("0.31.0")`."""
        if ctx.depth > MAX_DEPTH or not all(_helper_argument(v) for v in (*args, *kwargs.values())):
            return None
        key = (callee.dotted, repr((args, sorted(kwargs.items()))))
        if key in self._helper_values:
            return self._helper_values[key]
        self._helper_values[key] = None  # a recursive call evaluates to nothing
        # Helpers are looked for in the scanned packages only: a gate is evaluated from what is read anyway.
        fn = self._function(callee.dotted, load=False)
        value: Value = None
        # A module-level function defined once, unconditionally: a method answering a literal is a
        # default subclasses override, and a definition per release answers per release.
        made_when = [c for c in fn.when if c.kind is not ConditionKind.AFTER_IMPORTS] if fn is not None else []
        single = fn is not None and not made_when and len(self._definitions.get(fn.dotted, [])) == 1
        answer = _only_answer(fn.node) if fn is not None and single and "." not in fn.qualname else None
        if answer is not None:
            # vllm-ascend retires a workaround by making its release selector `return False`.
            value = Gate(GateOp.FIXED, compare=str(answer))
        elif fn is not None and (
            self._mentions_version(fn) or (single and (_only_returns(fn.node) or self._reads_a_signature(fn)))
        ):
            # (A helper doing nothing but return a test, `return not hasattr(m, "X")`, answers it; so
            # does one reading a signature, `return name in inspect.signature(f).parameters`.)
            scope = Scope(fn.closure)
            positional = [p.arg for p in (*fn.node.args.posonlyargs, *fn.node.args.args)]
            for param in fn.params:
                scope.names[param] = None
            scope.names.update(zip(positional, args))
            scope.names.update({k: v for k, v in kwargs.items() if k in fn.params})
            scope.none_defaults = _none_defaults(fn.node) - {*positional[: len(args)], *kwargs}
            returned: list[tuple[object, tuple[Condition, ...]]] = []
            body_ctx = Ctx(fn.file, scope, fn.qualname, depth=ctx.depth + 1, record=False, returns=returned)
            self._block(fn.node.body, body_ctx)
            live = [(self._answer(r), when) for r, when in returned if not self._never(when)]
            dropped, returned = len(live) < len(returned), live
            returns = [r for r, _ in returned]
            if (
                returns
                and all(r == returns[0] for r in returns)
                and isinstance(
                    returns[0], (Gate, ProviderVersion, AttributeProbe, ModuleProbe, ParameterProbe, PlatformTest)
                )
            ):
                value = returns[0]
            elif returns and all(r == returns[0] for r in returns) and _holds_answers(returns[0]):
                # `return package_exists, package_version`: the pair a caller unpacks.
                value = returns[0]
            elif returns and all(r == returns[0] for r in returns) and isinstance(returns[0], str):
                # The version a consumer was written for, kept in one place: `return VLLM_PATCH_VERSION`.
                value = returns[0]
            elif any(isinstance(r, Gate) for r in returns):
                value = Gate(GateOp.OPAQUE, f"{callee.dotted.rpartition('.')[2]}(...)")
            elif dropped and returns and all(r is False for r in returns):
                value = Gate(GateOp.FIXED, compare="False")  # its `return True`s never run
            else:
                value = _returned_gate(returned, fn.node)
        if isinstance(value, (Gate, PlatformTest)):
            written = [*(repr(a) for a in args), *(f"{k}={v!r}" for k, v in kwargs.items())]
            call_text = f"{callee.dotted.rpartition('.')[2]}({', '.join(written)})"
            value = replace(value, text=call_text)
        self._helper_values[key] = value
        return value

    def _answer(self: ConsumerScanner, value: object) -> object:
        """What a helper returns, as its answer: a test of whether the provider's own package is
        there (`find_spec("vllm") is not None`) is true wherever it is checked; in a tuple, the
        provider's version read as an attribute (`getattr(vllm, "__version__", "N/A")`) is its
        version, and any other object is nothing known (a helper hands on tests, not objects)."""
        if isinstance(value, ModuleProbe) and value.ref == Ref(self.provider_package):
            return value.present
        if isinstance(value, tuple):
            return tuple(self._answer_part(v) for v in value)
        return value

    def _answer_part(self: ConsumerScanner, value: object) -> object:
        value = self._answer(value)
        if isinstance(value, ProviderValue):
            return self._as_version(value)
        return value if isinstance(value, (*_ANSWERS, str, bool)) else None

    def _never(self: ConsumerScanner, when: tuple[Condition, ...]) -> bool:
        """Does one of these conditions fail wherever the helper is checked: a literal flag's
        other branch (or a test false at every version), or where the provider's own package is missing?"""
        for c in when:
            if c.kind is ConditionKind.GATE and c.gate is not None:
                if gates.evaluate(c.gate, None) is (not c.expect):
                    return True
            elif c.kind is ConditionKind.MODULE_FOUND and c.refs == (Ref(self.provider_package),) and not c.expect:
                return True
        return False

    def _reads_a_signature(self: ConsumerScanner, fn: ConsumerFunction) -> bool:
        """Does this helper read a signature's parameters (`inspect.signature(f).parameters`)? Its
        text is looked at first, and the answer kept: helpers are asked about at every call."""
        key = id(fn.node)
        if key not in self._signature_readers:
            text = self._text(fn.file.path, fn.node)
            self._signature_readers[key] = (text is None or b"parameters" in text) and any(
                isinstance(n, ast.Attribute) and n.attr == "parameters" for n in every_node(fn.node)
            )
        return self._signature_readers[key]

    def _mentions_version(self: ConsumerScanner, fn: ConsumerFunction) -> bool:
        key = id(fn.node)
        if key not in self._version_helpers:
            # Every name is in the function's text: without "version" there, none has it (cheaper
            # than walking the body, which is done only when the text says it may).
            text = self._text(fn.file.path, fn.node)
            maybe = text is None or not text.isascii() or _VERSION_WORD.search(text) is not None
            self._version_helpers[key] = maybe and _mentions_version(fn.node)
        return self._version_helpers[key]

    def _text(self: ConsumerScanner, path: str, node: ast.AST) -> bytes | None:
        """The source lines a node spans, its decorators included; None when its file's source is
        not at hand."""
        source = self._sources.get(path)
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if source is None or first is None or last is None:
            return None
        first = min([first, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        if path not in self._lines:  # split as the parser counts lines (\n, \r\n or \r), like the indexer
            self._lines[path] = source.splitlines()
        return b"\n".join(self._lines[path][first - 1 : last])

    def _reexported(self: ConsumerScanner, dotted_name: str) -> Value:
        """A name of a consumer module: the provider object when the module binds one there (a
        re-export, `from pv.core import Engine`), else the consumer's own name."""
        module = dotted_name.rpartition(".")[0]
        if module in self._scopes or module in self._unread:
            value = self._consumer_global(dotted_name)
            if isinstance(value, ProviderValue):
                return value
        return ConsumerValue(dotted_name)

    def _consumer_global(self: ConsumerScanner, dotted_name: str) -> Value:
        """The value of a consumer module's global (a version flag imported from another module)."""
        module, _, name = dotted_name.rpartition(".")
        self._read_module(module)
        scope = self._scopes.get(module)
        return scope.names.get(name) if scope is not None else None

    def _find_state_gates(self: ConsumerScanner, node: ast.ClassDef, qualname: str, ctx: Ctx) -> None:
        """`self.a = ...; if self.a and <gate>: self.a = False` in `__init__`: after it, `self.a` holds only
        when the gate does not. Kept when nothing else in the class assigns `self.a`."""
        init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        if init is None:
            return
        for i, stmt in enumerate(init.body):
            attr = _reset_attribute(stmt)
            if attr is None or not isinstance(stmt, ast.If):
                continue
            test_ctx = Ctx(ctx.file, Scope(ctx.scope), f"{qualname}.__init__", record=False)
            part = gates.state_part(self._eval(stmt.test, test_ctx), f"self.{attr}")
            if part is not None and _assigned_only_before(node, init, i, attr):
                self._state_gates[(f"{ctx.file.module}.{qualname}", attr)] = (f"{qualname}.__init__", part)

    def _state_gate(self: ConsumerScanner, attr: str, ctx: Ctx) -> Value:
        cls = ctx.function.rpartition(".")[0]
        found = self._state_gates.get((f"{ctx.file.module}.{cls}", attr)) if cls else None
        if found is None or found[0] == ctx.function:
            return None
        init, part = found
        text = f"self.{attr}"
        reset = Gate(GateOp.NOT, f"not ({part.text})", parts=(part,))
        return Gate(GateOp.ALL, f"{text} (reset in {init} when {part.text})", parts=(Gate(GateOp.RUNTIME, text), reset))

    def _handler_ctx(self: ConsumerScanner, node: ast.Try, handler: ast.ExceptHandler, ctx: Ctx) -> Ctx:
        """An `except ImportError:` handler runs only when an import of its try body fails."""
        if not catches_only_import_errors(handler):
            return ctx
        imports = body_imports(node.body, ctx.file.module, ctx.file.is_package)
        if not imports:
            return ctx
        provider: list[Ref] = []
        present = True
        for module, name in imports:
            if self._is_provider(module):
                provider.append(Ref(module, (name,)) if name else Ref(module))
            else:
                present = present and self._consumer_module_exists(module)
        condition = Condition(
            ConditionKind.TRY_FAILED, self._site(ctx, node), refs=tuple(provider), others_present=present
        )
        return evolve(ctx, when=(*ctx.when, condition))

    def _consumer_module_exists(self: ConsumerScanner, module: str) -> bool:
        if module in self._modules or module in self._scopes:
            return True
        if not self._is_consumer(module) or self.load_module is None:
            return False
        return self.load_module(module) is not None


def _helper_argument(value: Value) -> bool:
    """Is `value` an argument a helper is evaluated with (for the version gate or feature test it
    returns)? A literal, nothing known, a test of the platform, a provider callable a signature
    test is about, or what `getattr(X, "n", None)` read (a class test of it is a test of whether X
    has n)."""
    if isinstance(value, ProviderValue) and value.none_default:
        return True
    return value is None or isinstance(value, (str, bool, PlatformTest)) or signature_of_value(value) is not None


def _none_tested(node: ast.Compare) -> ast.Attribute | None:
    """The attribute `x.a is None` (or `is not None`) tests; None for any other comparison."""
    if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Is, ast.IsNot)):
        return None
    left, right = node.left, node.comparators[0]
    if isinstance(left, ast.Constant) and left.value is None:
        left, right = right, left
    if isinstance(left, ast.Attribute) and isinstance(right, ast.Constant) and right.value is None:
        return left
    return None


def _holds_answers(value: object) -> TypeGuard[tuple[Value, ...]]:
    """Is `value` a tuple holding a test or the provider's version (and nothing else known)?"""
    return (
        isinstance(value, tuple)
        and any(isinstance(v, _ANSWERS) or isinstance(v, bool) for v in value)
        and all(v is None or isinstance(v, (*_ANSWERS, str, bool)) for v in value)
    )


def _none_defaults(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameters of `function` whose default is the literal `None`."""
    a = function.args
    positional = [*a.posonlyargs, *a.args]
    pairs = [*zip(positional[len(positional) - len(a.defaults) :], a.defaults), *zip(a.kwonlyargs, a.kw_defaults)]
    return {p.arg for p, d in pairs if isinstance(d, ast.Constant) and d.value is None}


def _only_returns(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Is the function's body (after its docstring) one `return` of a value?"""
    body = function_body(function)
    return len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None


def _only_answer(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool | None:
    """The literal `True` or `False` a function's body does nothing but return (after its
    docstring); None for any other body."""
    body = function_body(function)
    if len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Constant):
        answer = body[0].value.value
        return answer if isinstance(answer, bool) else None
    return None


def _returned_gate(
    returned: list[tuple[object, tuple[Condition, ...]]], function: ast.FunctionDef | ast.AsyncFunctionDef
) -> Value:
    """What a helper answering `True` or `False` under version gates computes (`returned`: each value
    it returns, with the conditions it returns it under): `if Version(v) <= Version("0.28"): return
    True` then `return False` is that gate. It answers True only where one of its `return True`s
    runs, each under the gates recorded for it; where anything else decides too (a plain `if`
    around a return, a return in an exception handler), True needs that as well: the gate and a
    runtime condition (False where the gate is false, undecided where it holds). Answered as the
    first element of a tuple (`return True, version, ""`), the tuple holds it there (pace-vllm's
    supported-range check). Any other value returned (another helper's answer: vllm-ascend 0.28's
    `vllm_version_is` for CPU builds) may be true where its gates hold: a runtime condition there
    (xinference's `_is_vllm_v1`: True past 0.11.0, else an environment variable's answer).
    None when a `True` is returned under no gate, or it never answers `True` and something else."""
    if returned and all(isinstance(r, tuple) and r and isinstance(r[0], bool) for r, _ in returned):
        sizes = {len(r) for r, _ in returned if isinstance(r, tuple)}
        first = _returned_gate([(r[0], when) for r, when in returned if isinstance(r, tuple)], function)
        return (first, *(None,) * (sizes.pop() - 1)) if first is not None and len(sizes) == 1 else None
    answers = {r for r, _ in returned if isinstance(r, bool)}
    if True not in answers or (False not in answers and all(isinstance(r, bool) for r, _ in returned)):
        return None  # (a True and, beside it, a False or an answer decided at run time)
    if any(value is True and not _gate_parts(when) for value, when in returned):
        return _fall_through_gate(returned, function)
    paths: list[Gate] = []
    for value, when in returned:
        parts = _gate_parts(when)
        if value is False:
            continue
        if value is not True:  # another helper's answer, say: true or not, decided at run time
            parts.append(Gate(GateOp.RUNTIME, "its other answers"))
        elif not parts:
            return None  # True under no gate at all
        paths.append(_all_of(parts))
    gate = _any_of(paths)
    lines = {c.site.line for _, when in returned for c in when if c.kind is ConditionKind.GATE}
    if _returns_only_under(function, lines):
        return gate
    return Gate(GateOp.ALL, gate.text, parts=(gate, Gate(GateOp.RUNTIME, "its other tests")))


def _all_of(parts: list[Gate]) -> Gate:
    """Every one of `parts` (at least one), as one gate."""
    return parts[0] if len(parts) == 1 else Gate(GateOp.ALL, " and ".join(g.text for g in parts), parts=tuple(parts))


def _any_of(parts: list[Gate]) -> Gate:
    """One of `parts` (at least one), as one gate."""
    return parts[0] if len(parts) == 1 else Gate(GateOp.ANY, " or ".join(g.text for g in parts), parts=tuple(parts))


def _gate_parts(when: tuple[Condition, ...]) -> list[Gate]:
    """The version gates among `when`, each as it must hold."""
    return [
        c.gate if c.expect else gates.negate(c.gate, f"not {c.text}")
        for c in when
        if c.kind is ConditionKind.GATE and c.gate is not None
    ]


def _fall_through_gate(
    returned: list[tuple[object, tuple[Condition, ...]]], function: ast.FunctionDef | ast.AsyncFunctionDef
) -> Gate | None:
    """A helper answering `False` under version gates and `True` under none (at its end): trl's
    `is_vllm_available(min_version="0.28.0")` returns False where the version is older, and
    whether vLLM is there (it is, wherever it is checked) otherwise. True exactly where none of
    its `return False`s runs; where anything else decides a `return False` too (a plain `if`
    around it), it may run where its gates hold. None for any other mix of answers."""
    fired: list[Gate] = []
    for value, when in returned:
        parts = _gate_parts(when)
        if value is False and parts:
            fired.append(_all_of(parts))
        elif value is not True or parts:
            return None  # False under no gate, another answer, or True under a gate as well
    lines = {c.site.line for _, when in returned for c in when if c.kind is ConditionKind.GATE}
    if not _returns_only_under(function, lines):
        fired = [Gate(GateOp.ALL, g.text, parts=(g, Gate(GateOp.RUNTIME, "its other tests"))) for g in fired]
    some = _any_of(fired)
    return gates.negate(some, f"not ({some.text})")


def _returns_only_under(function: ast.FunctionDef | ast.AsyncFunctionDef, lines: set[int]) -> bool:
    """Is every `return`, `raise` and `assert` of `function` (not of functions in it) inside nothing
    but `if` statements whose tests are on `lines` (the version gates recorded)?"""

    def inside(body: list[ast.stmt], gated: bool) -> bool:
        for stmt in body:
            if isinstance(stmt, (ast.Return, ast.Raise, ast.Assert)):
                if not gated:
                    return False
            elif isinstance(stmt, ast.If):
                here = gated and stmt.test.lineno in lines
                if not (inside(stmt.body, here) and inside(stmt.orelse, here)):
                    return False
            elif isinstance(stmt, ast.Try) and all(
                all(isinstance(s, ast.Raise) for s in h.body) for h in stmt.handlers
            ):
                # Handlers that only raise (`except InvalidVersion: raise ValueError(...)`) answer nothing.
                if not all(inside(part, gated) for part in (stmt.body, stmt.orelse, stmt.finalbody)):
                    return False
            elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                # In a try, a loop, a `with`: not decided by the gates alone.
                if any(isinstance(n, (ast.Return, ast.Raise, ast.Assert)) for n in walk_shallow([stmt])):
                    return False
        return True

    return inside(function.body, True)


def _flags_set(node: ast.If) -> dict[str, bool]:
    """Names the two branches of an `if` set to opposite bool literals, and nothing else (`if g:
    X = True` / `else: X = False`): name -> what the body sets."""

    def literals(body: list[ast.stmt]) -> dict[str, bool | None]:
        out: dict[str, bool | None] = {}
        for stmt in body:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, bool)
            ):
                name = stmt.targets[0].id
                if out.get(name, False) is not None:
                    out[name] = stmt.value.value
                continue
            for child in every_node(stmt):
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                    out[child.id] = None  # set some other way (or in a nested block): not a flag
        return out

    body, orelse = literals(node.body), literals(node.orelse)
    return {
        name: value
        for name, value in body.items()
        if value is not None and orelse.get(name) is not None and orelse[name] is not value
    }


def _only_leaves(node: ast.If) -> bool:
    """`if test: return` (or `return None`, `continue`, `break`) and nothing else, no else branch."""
    if node.orelse or len(node.body) != 1:
        return False
    stmt = node.body[0]
    if isinstance(stmt, ast.Return):
        return stmt.value is None or (isinstance(stmt.value, ast.Constant) and stmt.value.value is None)
    return isinstance(stmt, (ast.Continue, ast.Break))


def _distribution(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _mentions_version(node: ast.AST) -> bool:
    """Could this function compute a version gate? (A cheap filter before it is evaluated.)"""
    for child in every_node(node):
        word = (
            child.id
            if isinstance(child, ast.Name)
            else child.attr
            if isinstance(child, ast.Attribute)
            else child.name
            if isinstance(child, ast.alias)
            else ""
        )
        if "version" in word.lower():
            return True
    return False


def _reset_attribute(stmt: ast.stmt) -> str | None:
    """`if ...: ...; self.a = False` (or None, 0): the attribute a branch resets, else None."""
    if not isinstance(stmt, ast.If) or stmt.orelse or not stmt.body:
        return None
    last = stmt.body[-1]
    if not (isinstance(last, ast.Assign) and len(last.targets) == 1 and isinstance(last.value, ast.Constant)):
        return None
    target = last.targets[0]
    if last.value.value not in (False, None, 0) or not _is_self_attr(target):
        return None
    assert isinstance(target, ast.Attribute)
    return target.attr


def _is_self_attr(node: ast.AST, attr: str | None = None) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and (attr is None or node.attr == attr)
    )


def _assigned_only_before(cls: ast.ClassDef, init: ast.FunctionDef, index: int, attr: str) -> bool:
    """Is `self.<attr>` assigned, in the whole class, only by top-level statements of `__init__` before
    `index` and by the reset that ends `init.body[index]`?"""
    allowed: set[int] = {id(s) for s in init.body[:index]}
    reset = init.body[index]
    assert isinstance(reset, ast.If)
    allowed.add(id(reset.body[-1]))
    for node in every_node(cls):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and dotted(node.func) in ("setattr", "delattr") and node.args:
            if isinstance(node.args[0], ast.Name) and node.args[0].id == "self":
                return False
        flat = [t for target in targets for t in every_node(target)]
        if any(_is_self_attr(t, attr) for t in flat) and id(node) not in allowed:
            return False
    return True
