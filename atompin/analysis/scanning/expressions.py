"""Expressions: how the scanner evaluates each kind of expression to an abstract value.

`_eval` dispatches to the `_eval_<class name>` method of the node's class; the
values are those of `atompin.analysis.values` (a provider object, a consumer
function, a receiver's member, a version...). Evaluating records what it reads
of the provider: attribute chains, calls and their shapes, members read
through receivers the consumer holds.
"""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeGuard

from atompin.analysis import gates
from atompin.analysis.arity import CallShape
from atompin.analysis.flag_tests import Clauses, excludes
from atompin.analysis.gates import (
    Gate,
    GateOp,
    ProviderVersion,
    SpecifierContains,
    VersionForm,
    VersionMethod,
    VersionSpecifier,
    version_slice,
)
from atompin.analysis.guards import StringTests
from atompin.analysis.names import writes_as_string
from atompin.analysis.platforms import PLATFORM_METHODS, TORCH_VERSIONS, UNKNOWN, PlatformTest, combined
from atompin.analysis.scanning.common import (
    DOTTED_NAME,
    MAX_VIA,
    TYPING_MODULES,
    caught_by,
    class_assignments,
    each_value,
    handed_on,
    literal_prefix,
    module_glob,
    node_text,
    owner_and_name,
    self_owner,
    signature_of_value,
    via_depth,
)
from atompin.analysis.scanning.state import MAX_DEPTH, ConsumerFunction, Ctx, evolve, present_conditions
from atompin.analysis.signature import signature_of
from atompin.analysis.syntax import dotted, expr_children, hasattr_ladder, literal_strings, parameter_names
from atompin.analysis.usage import (
    AttributeUse,
    CallUse,
    Condition,
    ConditionKind,
    ContactSurface,
    Guard,
    HandoverKind,
    ImportGroup,
    ImportKind,
    ImportUse,
    MemberUse,
    MethodRef,
    NamespaceArgument,
    OutsideStore,
    ReadKind,
    Receiver,
    Ref,
)
from atompin.analysis.values import (
    AttributeProbe,
    BuiltNamespace,
    ConsumerValue,
    DataclassReplace,
    DictMethod,
    ElementsOf,
    LambdaValue,
    MappingMethod,
    MemberChain,
    MethodValue,
    ModuleProbe,
    NameChoice,
    ParameterProbe,
    ProviderValue,
    ReceiverValue,
    Scope,
    SignatureOf,
    StringMethod,
    TypingCast,
    Value,
)

if TYPE_CHECKING:
    from atompin.analysis.scanner import ConsumerScanner
# A module path's literal start in an f-string ("pkg.models.") and its later literal parts
# (".", ":", "_impl", ".Cls").
_MODULE_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\.")
_MODULE_PATH_PART = re.compile(r"[A-Za-z0-9_.:]*")
# Calls that make a namespace of the keywords given (`_namespace`).
_NAMESPACE_CALLS = frozenset({"argparse.Namespace", "Namespace", "SimpleNamespace", "types.SimpleNamespace"})


class ExpressionEvaluator:
    """The expression half of `ConsumerScanner`: an `_eval_<class name>` method per expression."""

    # Set here, made in `ConsumerScanner.__post_init__` (declared so the type is that one).
    _mixins_reaching: set[str] | None

    def _eval(self: ConsumerScanner, node: ast.expr | None, ctx: Ctx) -> Value:
        """What `node` evaluates to, by its `_eval_<class name>` method, recording provider uses on the way."""
        if node is None:
            return None
        kind = node.__class__
        if kind not in self._evaluators:  # looked up once per class of node: this runs for every expression
            self._evaluators[kind] = getattr(type(self), f"_eval_{kind.__name__}", None)
        evaluate = self._evaluators[kind]
        if evaluate is not None:
            return evaluate(self, node, ctx)
        # Any other expression is not followed, but its parts may use the provider.
        for child in expr_children(node):
            self._eval(child, ctx)
        return None

    def _eval_GeneratorExp(
        self: ConsumerScanner, node: ast.GeneratorExp | ast.ListComp | ast.SetComp | ast.DictComp, ctx: Ctx
    ) -> Value:
        """A comprehension: its parts are read as any expression's; a loop variable over a
        collection of provider instances (`ElementsOf`) is one of them (`o.x for o in outputs`)."""
        inner = ctx
        for loop in node.generators:
            items = self._eval(loop.iter, inner)
            if (each := each_value(items, loop.target)) is not None:
                if inner is ctx:
                    inner = evolve(ctx, scope=Scope(ctx.scope))  # its variables are its own
                self._assign(loop.target, each, None, inner)
            for test in loop.ifs:
                self._eval(test, inner)
        parts = (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)
        for part in parts:
            self._eval(part, inner)
        return None

    _eval_ListComp = _eval_SetComp = _eval_DictComp = _eval_GeneratorExp

    def _eval_Constant(self: ConsumerScanner, node: ast.Constant, ctx: Ctx) -> Value:
        if isinstance(node.value, str):
            self._string_edge(node.value, node, ctx)
            return node.value
        return None

    def _eval_JoinedStr(self: ConsumerScanner, node: ast.JoinedStr, ctx: Ctx) -> Value:
        """An f-string's parts are read as any expression's. One that spells a module path below
        a consumer package (`f"vllm_omni.model_executor.models.{folder}.{name}"`, handed to the
        provider's model registry) may name any module there that it can spell, each computed part
        taken for a name or part of one, as a computed import name's."""
        for child in node.values:
            self._eval(child, ctx)
        prefix = literal_prefix(node)
        rest = [v.value for v in node.values[1:] if isinstance(v, ast.Constant)]
        if (
            ctx.record
            and _MODULE_PREFIX.fullmatch(prefix)
            and all(isinstance(part, str) and _MODULE_PATH_PART.fullmatch(part) for part in rest)
            and self._is_consumer(prefix.split(".")[0])
        ):
            # A dotted path may end with an attribute (`f"pkg.{name}.Worker"`); after a ":" it does not.
            kind = (
                "glob" if ":" in "".join(str(v.value) for v in node.values if isinstance(v, ast.Constant)) else "path"
            )
            self._record_edge(ctx, f"{kind}:{module_glob(node)}", node)
        return None

    def _eval_Name(self: ConsumerScanner, node: ast.Name, ctx: Ctx) -> Value:
        value = ctx.scope.lookup(node.id)
        if (
            self._kept_paths
            and isinstance(value, str)
            and ctx.record
            and (ctx.file.module, node.id) in self._kept_paths
        ):
            self._string_edge(value, node, ctx)  # where it is read, under what holds there
        return value

    def _path_kept_for_reads(self: ConsumerScanner, node: ast.Assign, ctx: Ctx) -> bool:
        """Is this a module-level constant naming a consumer module (`MODEL_CLASS =
        "pkg.models.old:Model"`) that only its own module reads (no other file of the consumer
        writes its name)? Then the module is named where the constant is read, under what holds
        there (xinference registers its vendored NaviDC-OCR model by that constant only below vLLM
        0.23), not where it is bound. Recorded in `_kept_paths`."""
        if ctx.function or ctx.owner or ctx.nested or ctx.when:
            return False  # (bound under a branch: named there, under what holds there)
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            return False
        value = node.value
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str) and len(value.value) <= 300):
            return False
        head = value.value.partition(":")[0]
        if not (DOTTED_NAME.fullmatch(head) and not head.startswith(".") and self._is_consumer(head)):
            return False
        name = node.targets[0].id.encode()
        own = self._sources.get(ctx.file.path, b"")
        others = (s for path, s in self._sources.items() if path != ctx.file.path)
        word = re.compile(rb"\b" + re.escape(name) + rb"\b")
        bound = len(re.findall(rb"(?m)^" + re.escape(name) + rb"\s*[:=]", own))
        if bound != 1 or len(word.findall(own)) < 2:
            return False  # bound more than once, or read nowhere here
        if any(name in s and word.search(s) for s in (*others, *self._unscanned)):
            return False  # named in another file (looked for as bytes first: most files lack it)
        self._kept_paths.add((ctx.file.module, node.targets[0].id))
        return True

    def _eval_Tuple(self: ConsumerScanner, node: ast.Tuple | ast.List | ast.Set, ctx: Ctx) -> Value:
        return tuple(self._eval(e, ctx) for e in node.elts)

    _eval_List = _eval_Set = _eval_Tuple

    def _eval_Dict(self: ConsumerScanner, node: ast.Dict, ctx: Ctx) -> Value:
        out: dict[str, Value] = {}
        for k, v in zip(node.keys, node.values):
            key = self._eval(k, ctx) if k is not None else None
            if (
                _names_module(key)
                and self._is_provider(key)
                and isinstance(v, ast.Constant)
                and isinstance(v.value, str)
            ):
                # `{"vllm.layers.sampler": "plug.sampler"}`: an import hook's map (vllm-kunlun's), which
                # serves the consumer module when the provider's is imported, and only then.
                self._string_edge(v.value, v, ctx, after=key)
                out[key] = v.value
                continue
            val = self._eval(v, ctx)
            if isinstance(key, str):
                out[key] = val
        return out

    def _eval_Subscript(self: ConsumerScanner, node: ast.Subscript, ctx: Ctx) -> Value:
        base = self._eval(node.value, ctx)
        index = node.slice
        self._eval(index, ctx)
        if isinstance(base, tuple) and isinstance(index, ast.Constant) and isinstance(index.value, int):
            try:
                return base[index.value]
            except IndexError:
                return None
        if isinstance(base, dict) and isinstance(index, ast.Constant) and isinstance(index.value, str):
            return base.get(index.value)
        if isinstance(base, ProviderVersion):
            return version_slice(base, index)
        if isinstance(base, ElementsOf) and base.view != "items" and not isinstance(index, ast.Slice):
            return ReceiverValue(Receiver.INSTANCE, choices=base.choices)  # `outputs[0]`, `layers[name]`
        return None

    def _eval_Lambda(self: ConsumerScanner, node: ast.Lambda, ctx: Ctx) -> Value:
        # Its parameters hide the names around it (`lambda self: self.x` is not the method's `self`).
        scope = Scope(ctx.scope)
        for name in parameter_names(node.args):
            scope.names[name] = None
        self._eval(node.body, evolve(ctx, scope=scope))
        return LambdaValue(signature_of(node))

    def _eval_NamedExpr(self: ConsumerScanner, node: ast.NamedExpr, ctx: Ctx) -> Value:
        # `if (config := make_config()) is not None:` binds as `config = make_config()` does.
        value = self._eval_stored(node.value, ctx)
        self._bind(ctx, node.target.id, value)
        return value

    def _eval_BoolOp(self: ConsumerScanner, node: ast.BoolOp, ctx: Ctx) -> Value:
        values = []
        inner = ctx
        for operand in node.values:
            value = self._eval(operand, inner)
            values.append(value)
            absent = self._getattr_default(operand, value) if isinstance(node.op, ast.Or) else None
            if isinstance(value, Gate) and value.is_version:
                # `vllm_version_is("0.29.0") and self.uses_xdrope_dim`: what follows runs only where
                # the gate holds (past an `or`, only where it fails).
                site = self._site(ctx, operand)
                expect = isinstance(node.op, ast.And)
                condition = Condition(ConditionKind.GATE, site, node_text(operand), gate=value, expect=expect)
                inner = evolve(inner, when=(*inner.when, condition))
            elif (
                isinstance(value, AttributeProbe)
                and not value.by_default
                and value.present == isinstance(node.op, ast.And)
            ):
                # `hasattr(X, "n") and X.n`, `not hasattr(X, "n") or X.n`: what follows runs only where X has n.
                tested = {(value.owner, name) for name in value.names}
                inner = evolve(inner, hasattr_guards=inner.hasattr_guards | tested)
            elif absent is not None:
                # `getattr(X, "new", None) or getattr(X, "old")`: what follows runs only when X.new is absent.
                owner, attr = absent
                site = self._site(ctx, operand)
                condition = Condition(ConditionKind.ATTR_ABSENT, site, node_text(operand), refs=owner, attr=attr)
                inner = evolve(inner, when=(*inner.when, condition))
        if isinstance(node.op, ast.Or) and isinstance(values[-1], ProviderVersion):
            if not any(isinstance(v, (ProviderVersion, Gate)) for v in values[:-1]):
                return values[-1]  # `envs.VLLM_VERSION or vllm.__version__`: an override, unset as a rule
        if any(isinstance(v, Gate) and v.is_version for v in values):
            # Beside a version gate, a test of a string the scan knows for None is a known truth
            # (`want is not None and vllm.__version__ == want`, `want` a helper's constant).
            values = [_none_test_of_string(n, ctx) if v is None else v for v, n in zip(values, node.values)]
        if any(isinstance(v, PlatformTest) for v in values) and all(
            v is None or isinstance(v, PlatformTest) for v in values
        ):
            # `is_rocm() or is_cuda()`; beside a test of anything else at run time, what the platform
            # decides. (Beside a version gate, a probe or an object, the expression is theirs.)
            tests = [v if isinstance(v, PlatformTest) else UNKNOWN for v in values]
            return combined(isinstance(node.op, ast.And), tests, node_text(node))
        if any(isinstance(v, Gate) for v in values):
            texts = [node_text(v) for v in node.values]
            return gates.combine(isinstance(node.op, ast.And), values, texts, node_text(node))
        provider = next((v for v in values if isinstance(v, ProviderValue)), None)
        probe = next((v for v in values if isinstance(v, AttributeProbe) and v.present), None)
        if isinstance(node.op, ast.And) and probe is not None and provider is None:
            # `ready and isinstance(getattr(X, "n", None), type)`: where it holds X has n; where
            # it fails, X may have n all the same.
            return replace(probe, partial=True)
        # `a or b` in a ladder-ish expression: keep a provider value if there is one.
        return provider

    @staticmethod
    def _getattr_default(node: ast.expr, value: Value) -> tuple[tuple[Ref, ...], str] | None:
        """For `getattr(X, "name", default)` of a provider object: (X's choices, "name")."""
        if not (
            isinstance(value, ProviderValue)
            and value.guard is Guard.GETATTR_DEFAULT
            and isinstance(node, ast.Call)
            and dotted(node.func) == "getattr"
        ):
            return None
        return owner_and_name(value)

    def _eval_Attribute(self: ConsumerScanner, node: ast.Attribute, ctx: Ctx, outer: bool = True) -> Value:
        # Of a chain `a.b.c`, only the whole chain (`outer`) is a use; `a.b` is a read on the way.
        inner = node.value
        if outer and isinstance(node.ctx, ast.Load):
            self._value_reads.add((self_owner(inner, ctx), node.attr))
        if node.attr in TORCH_VERSIONS and (test := self._torch_build(node, ctx)) is not None:
            return test  # `torch.version.hip`
        base = self._attribute_base(inner, ctx)
        if isinstance(base, ProviderValue):
            self._record_read(base, node.attr, ReadKind.PLAIN)
            value = base.attr(node.attr)
            if outer and isinstance(node.ctx, ast.Load) and ctx.record:
                guard = self._patch_guard(ctx, base, node.attr)
                site = self._site(ctx, node)
                self.usage.attributes.append(AttributeUse(value.choices, site, guard, self._when(ctx), ctx.function))
            return self._as_version(value) or value
        if isinstance(base, (ProviderVersion, VersionSpecifier, SignatureOf)):
            return _computed_attribute(base, node.attr)
        if isinstance(inner, ast.Name) and inner.id == "self" and isinstance(node.ctx, ast.Load):
            state = self._state_gate(node.attr, ctx)  # `self.use_v2` reset under a version gate in __init__
            if state is not None:
                return state
        if isinstance(base, ConsumerValue):
            return self._reexported(f"{base.dotted}.{node.attr}")
        if isinstance(base, dict) and node.attr in ("items", "keys", "values", "update"):
            return DictMethod(node.attr, base)
        if isinstance(base, ElementsOf) and base.view == "mapping" and node.attr in ("items", "values", "get"):
            return MappingMethod(node.attr, base)
        if isinstance(base, str) and node.attr in ("partition", "rpartition", "split", "rsplit"):
            return StringMethod(base, node.attr)
        ref = _member_ref(base, node.attr)
        if ref is None:
            return None
        if ctx.record and not self._quiet and isinstance(node.ctx, ast.Load) and self._may_record(ref.owner):
            self._record_member_use(ref, node, ctx)
        return self._receiver_attribute(base, node.attr) if isinstance(base, ReceiverValue) else MemberChain(ref)

    def _attribute_base(self: ConsumerScanner, inner: ast.expr, ctx: Ctx) -> Value:
        """What the object of an attribute read (`inner` of `inner.name`) evaluates to."""
        if isinstance(inner, ast.Attribute):
            return self._eval_Attribute(inner, ctx, outer=False)
        if isinstance(inner, ast.Call) and ctx.function:
            # `get_pp_group().is_last_rank`, `make_runner().start()`: what the call makes, as a local
            # assigned it would hold (`_eval_Call`).
            return self._eval_Call(inner, ctx, makes_instance=True)
        return self._eval(inner, ctx)

    def _may_record(self: ConsumerScanner, owner: str) -> bool:
        """Are reads through `self` of this class worth recording? Not for a class known to derive
        from no provider class nor from one of the consumer's own, unless it has no base at all
        (a mixin, maybe: `_may_reach_provider`); an annotated receiver: always."""
        known = self._recording.get(owner)
        if known is None:
            cls = self._classes.get(owner) if owner else None
            if cls is None:
                return True  # not read yet: asked again later
            known = self._recording[owner] = not cls.bases or any(base.provider or base.consumer for base in cls.bases)
        return known

    def _record_member_store(self: ConsumerScanner, owner: Value, node: ast.Attribute, ctx: Ctx) -> None:
        """`x.name = ...` through a receiver typed as a provider class's instance or through an
        attribute chain (`vllm_config.scheduler_config.name = ...`), for `missing-member`."""
        if isinstance(owner, ReceiverValue) and owner.receiver is not Receiver.INSTANCE:
            return  # on `self` or `cls`: the consumer's own object
        ref = _member_ref(owner, node.attr)
        if ref is not None and self._may_record(ref.owner):
            self._record_member_use(ref, node, ctx, stored=True)

    def _record_member_use(
        self: ConsumerScanner, ref: MethodRef, node: ast.expr, ctx: Ctx, stored: bool = False, defaulted: bool = False
    ) -> None:
        """`x.name` read (or called) through a receiver, for `missing-member`; also `getattr(x,
        "name")`, and with a default (`defaulted`)."""
        hands_on = (
            ref.receiver is Receiver.SUPER
            and not ref.via
            and bool(ctx.owner)
            and ctx.function.rpartition(".")[2] == ref.name
            and not ref.name.startswith("__")
        )
        # Under a try catching AttributeError, or a `hasattr(X, name)` test (written, or kept in a
        # flag): the test holds where it runs (a provider class lacking the name makes it dead).
        site = self._site(ctx, node)
        tests = [(owner, attr) for owner, attr in ctx.hasattr_guards if attr == ref.name]
        present = present_conditions(tests, site)
        use = MemberUse(
            ref,
            site,
            (*self._when(ctx), *present),
            ctx.try_guard or bool(tests),
            hands_on,
            ctx.function,
            stored,
            defaulted,
        )
        self._member_uses.setdefault(use, (ctx.file.module, ctx.function))

    def _read_mixins(self: ConsumerScanner) -> None:
        """What mixins without bases set on the instance is what the classes mixing them in hold."""
        mixins = {base.consumer for cls in self._classes.values() for base in cls.bases} & self._baseless.keys()
        for name in mixins:
            if name in self._classes:
                assigned, false_only = class_assignments(self._baseless[name])
                self._classes[name] = replace(self._classes[name], assigned=assigned, false_only=false_only)

    def _finish_members(self: ConsumerScanner, contact: ContactSurface) -> None:
        """The member uses in classes that can reach the provider, each marked guarded where its
        function tests the name; who sets names from outside; which hooks the consumer names."""
        contact.member_uses = [
            self._in_ladder(use, *where)
            if use.guarded or self._names_in_string(use.site.path, *where, use.method.name, use.site.line)
            else use
            for use, where in self._member_uses.items()
            if self._may_reach_provider(use.method)
        ]
        contact.member_stores = sorted(set(contact.member_stores))
        contact.outside_stores = sorted(set(contact.outside_stores), key=repr)
        held = {
            (h.holder, h.member) for h in contact.handovers if h.kind in (HandoverKind.ATTRIBUTE, HandoverKind.STORED)
        }
        contact.passed_members = sorted(
            f"{holder}:{member}" for holder, member in held if self._passes_on(holder, member)
        )

    def _in_ladder(self: ConsumerScanner, use: MemberUse, module: str, function: str) -> MemberUse:
        """A use whose absence is handled (`guarded`), with the other names of the `hasattr` chain
        it sits in when that chain's last `else` raises (`syntax.hasattr_ladder`)."""
        fn = self._functions.get(f"{module}.{function}") if function else None
        if fn is None or not fn.node.body:
            return replace(use, guarded=True)
        text = self._function_texts.get((use.site.path, function))
        text = (self._text(use.site.path, fn.node) or b"") if text is None else text
        if b"hasattr(" not in text or b"raise" not in text:
            return replace(use, guarded=True)  # (most: the function's text, read already, holds no such chain)
        return replace(use, guarded=True, alternatives=hasattr_ladder(fn.node, use.site.line, use.method.name))

    def _passes_on(self: ConsumerScanner, holder: str, member: str) -> bool:
        """Is `member` read for its object on something not `self`, or on `self` in a method of a
        class an instance of `holder` may be: one of the consumer classes in the order of `holder`
        or of a class deriving from it (a mixin too)? (vllm-ascend's connectors each keep their own
        `connector_scheduler`.)"""
        if ("", member) in self._value_reads:
            return True
        owners = {owner for owner, attr in self._value_reads if attr == member and owner}
        if not owners:
            return False
        line = [name for name in self._classes if name == holder or holder in self._consumer_bases(name)]
        return any(owners & ({name} | self._consumer_bases(name)) for name in line)

    def _consumer_bases(self: ConsumerScanner, name: str) -> set[str]:
        """The consumer classes `name` derives from, through the consumer's own bases."""
        return set(itertools.islice(self._consumer_line(name), 1, None))

    def _may_reach_provider(self: ConsumerScanner, ref: MethodRef) -> bool:
        """Can a lookup through this receiver meet a provider class? An annotated one does; `self`
        only in a class with a provider base (through its own bases), or in a class without bases
        that such a class mixes in: the others are left out."""
        if ref.receiver is Receiver.INSTANCE:
            return True
        if ref.owner in self._baseless and ref.receiver is Receiver.SELF:
            return ref.owner in self._mixed_in_reaching()
        if ref.owner not in self._reaching:
            found, seen, todo = False, set(), [ref.owner]
            while todo and not found:
                cls = self._classes.get(todo.pop())
                if cls is None or cls.name in seen:
                    continue
                seen.add(cls.name)
                found = any(base.provider for base in cls.bases)
                todo += [base.consumer for base in cls.bases if base.consumer]
            self._reaching[ref.owner] = found
        return self._reaching[ref.owner]

    def _mixed_in_reaching(self: ConsumerScanner) -> set[str]:
        """The classes without bases that a class with a provider base (through its own bases) mixes in."""
        if self._mixins_reaching is None:
            self._mixins_reaching = {
                base.consumer
                for cls in self._classes.values()
                for base in cls.bases
                if base.consumer in self._baseless and self._may_reach_provider(MethodRef(Receiver.SELF, "", cls.name))
            }
        return self._mixins_reaching

    def _names_in_string(self: ConsumerScanner, path: str, module: str, function: str, name: str, line: int) -> bool:
        """Does the function write `name` as a string (`hasattr(x, "name")`, `getattr(x, "name",
        None)`)? Read from its text, once per function. Where it writes it only in a `getattr`
        with a default, which goes on with the default where the name is gone, only a read under a
        test of it counts (`guards.StringTests.default_only`): tpu-inference's `update_states` takes
        `resumed_req_ids` with a default, then reads `req_data.resumed_req_ids` as it is."""
        key = (path, function)
        fn = self._functions.get(f"{module}.{function}") if function else None
        if key not in self._function_texts:
            text = self._text(path, fn.node) if fn is not None else None
            self._function_texts[key] = text or b""
        if not writes_as_string(self._function_texts[key], name):
            return False
        if fn is None or not fn.node.body:
            return True
        if key not in self._string_tests:
            self._string_tests[key] = StringTests(fn.node)
        spans = self._string_tests[key].default_only(name)
        return spans is None or any(first <= line <= last for first, last in spans)

    def _eval_arguments(
        self: ConsumerScanner, node: ast.Call, ctx: Ctx, chains: bool = False
    ) -> tuple[list[Value], dict[str, Value]]:
        """A call's positional and keyword arguments (`**kw` read for its uses, not kept). An
        attribute chain passed on is unknown, but to `getattr` (`chains`): read further."""
        args = [self._eval(a.value if isinstance(a, ast.Starred) else a, ctx) for a in node.args]
        kwargs = {k.arg: self._eval(k.value, ctx) for k in node.keywords if k.arg}
        for k in node.keywords:
            if not k.arg:
                self._eval(k.value, ctx)
        if not chains and any(v.__class__ is MemberChain for v in (*args, *kwargs.values())):
            args = [_unchained(v) for v in args]
            kwargs = {k: _unchained(v) for k, v in kwargs.items()}
        return args, kwargs

    def _eval_Call(self: ConsumerScanner, node: ast.Call, ctx: Ctx, makes_instance: bool = False) -> Value:
        """What a call evaluates to. `makes_instance` (`layer = Linear(...)` in a function): a call
        of a provider callable that yields nothing else known is an instance of what it makes, as
        an attribute assigned so is. The checks judge calls on it only where that is known: the
        class called, or the class a function's return annotation names (`Hierarchy.instance_class`)."""
        func = node.func
        name = dotted(func)
        # What an attribute chain holds is read further, or called (a method call through it, recorded
        # below); passed on, it is unknown.
        chain = self._eval(func, ctx)
        callee = _unchained(chain)
        args, kwargs = self._eval_arguments(node, ctx, chains=callee is None and name in ("getattr", "hasattr"))
        callee, mixed = _through_flags(callee, ctx.flags)
        if isinstance(callee, ProviderValue) and ctx.record:
            self._record_call(
                callee.choices,
                node,
                None,
                ctx,
                literals=tuple(a if isinstance(a, str) else None for a in args[:4]),
                by_attribute=isinstance(func, ast.Attribute),
                imported=isinstance(func, ast.Name) and ctx.scope.is_imported(func.id),
                mixed=mixed,
            )
            self._record_registration(args, kwargs, node, ctx)
            self._record_call_handovers(callee, node, [*args, *kwargs.values()], ctx)
            self._record_namespaces(callee, node, args, kwargs, ctx)
        self._record_delegation(node, callee, args, ctx)
        if isinstance(callee, MethodValue) or (callee is None and name == "super"):
            return self._receiver_call(node, callee, args, ctx, makes_instance, kwargs)
        if chain.__class__ is MemberChain and ctx.record:
            # `self.kv_cache_manager.get_computed_blocks(r)`: judged where the provider's classes say
            # what the attributes on the way hold (`members.chain_receiver`).
            self._record_method_call(chain.ref, node, ctx)
            return None
        if isinstance(callee, ReceiverValue) and callee.receiver is Receiver.INSTANCE and callee.choices:
            # `layer(x)` of an instance of a provider class calls its class's `__call__` (torch's
            # `nn.Module` hands it to `forward`: `Hierarchy.call_target`).
            return self._receiver_call(node, callee.method("__call__"), args, ctx)
        if isinstance(callee, (DictMethod, MappingMethod)):
            return callee.call(args, kwargs)
        if callee is None and name in ("getattr", "hasattr", "setattr", "all"):
            return self._builtin_attr_call(name, node, args, ctx)
        if callee is None and name in ("isinstance", "callable") and args:
            return _class_test(name, node, args[0])
        if callee is None and name.rpartition(".")[2] == "extend_enum" and len(args) >= 3:
            # aenum's `extend_enum(Enum, "NAME", value)` adds a member (a value, never a replacement).
            if isinstance(args[0], ProviderValue) and isinstance(args[1], str):
                self._record_patch(ctx, node, args[0], args[1], node.args[2], args[2], literal=True)
            return None
        if name.endswith("import_module") and args and isinstance(args[0], NameChoice):
            return self._import_choice(node, args[0], ctx)
        if name.endswith("import_module") and args and isinstance(args[0], str) and not args[0].startswith("."):
            module = args[0]
            if self._is_provider(module):
                self._record_import(ctx, ImportUse(Ref(module), self._site(ctx, node), ImportKind.IMPORTLIB, ctx.via))
                return ProviderValue((Ref(module),))
            return ConsumerValue(module) if self._is_consumer(module) else None
        if (kept := _passed_through(name, callee, args)) is not None:
            # `cast(T, x)`: an x of class T; `cast(T, super())` is still `super()` (a mixin's hand-on).
            kept_value = args[kept]
            on_super = isinstance(kept_value, ReceiverValue) and kept_value.receiver is Receiver.SUPER
            cast_to = self._cast_type(node.args[0], ctx) if kept == 1 and not on_super else None
            return cast_to or kept_value
        if isinstance(callee, ConsumerValue):
            return self._consumer_call(callee, node, args, kwargs, ctx, makes_instance)
        return self._eval_other_call(name, callee, node, args, ctx, makes_instance)

    def _record_launch(self: ConsumerScanner, func: ast.Subscript, node: ast.Call, ctx: Ctx) -> None:
        """`kernel[grid](...)` of a provider kernel: a Triton launch (vllm-ascend launches vLLM's
        `_compute_slot_mapping_kernel` with keywords only vLLM main's kernel takes)."""
        kernel = self._eval(func.value, evolve(ctx, record=False))
        if isinstance(kernel, ProviderValue):
            imported = isinstance(func.value, ast.Name) and ctx.scope.is_imported(func.value.id)
            self._record_call(kernel.choices, node, None, ctx, launch=True, imported=imported)

    def _dataclass_replace(self: ConsumerScanner, node: ast.Call, args: list[Value], ctx: Ctx) -> Value:
        """`dataclasses.replace(obj, name=value)` of an instance of a provider class: its class is
        called with every field, recorded as a call passing the names given and `**` the rest
        (vllm-omni 0.28's `replace(spec, indexes_kv_by_block_stride=...)` of a `spec: AttentionSpec`,
        a field vLLM 0.30 removed). What it makes is another instance of that class."""
        obj = args[0] if len(node.args) == 1 else None
        if not (isinstance(obj, ReceiverValue) and obj.receiver is Receiver.INSTANCE and obj.choices):
            return None
        if ctx.record:
            shape = CallShape(0, tuple(k.arg for k in node.keywords if k.arg), starstar=True)
            self._record_call(obj.choices, node, shape, ctx, replaces=True)
        return obj

    def _record_call(
        self: ConsumerScanner, choices: tuple[Ref, ...], node: ast.Call, shape: CallShape | None, ctx: Ctx, **more: Any
    ) -> None:
        """A call of a provider object at `node` passing `shape` (None: what the call passes, one
        `CallUse` for each way of `_call_shapes`), with `more` of its fields, under the conditions
        that hold there and the try around it that catches TypeError."""
        when = self._when(ctx)
        site = self._site(ctx, node)
        hands_on = shape is None and ctx.via and any(k.arg is None and handed_on(k.value, ctx) for k in node.keywords)
        handed = str(ctx.via[-1]) if hands_on else ""
        for passed, holds in [(shape, when)] if shape is not None else self._call_shapes(node, ctx, when):
            use = CallUse(
                choices,
                site,
                passed,
                when=holds,
                caught=ctx.type_error_handler,
                try_site=ctx.type_error_try,
                fallback_of=ctx.type_error_fallback,
                keywords_from=handed,
                **more,
            )
            self.usage.calls.append(use)

    def _namespace(self: ConsumerScanner, node: ast.Call, ctx: Ctx) -> ProviderValue | BuiltNamespace | None:
        """What a `SimpleNamespace(...)` (or an `argparse.Namespace(...)`) makes, each object it
        spreads (`**vars(x)`, `**x.__dict__`) read once:
        - of a provider module alone, a copy holding what it holds, read as the module itself.
          Served as the module it copies (vllm-kunlun's `sys.modules["vllm.utils"] = wrapped`),
          the names it lacks fail to import as they would from the module, and what is set on the
          copy is judged as set on the module (what imports from it later gets that), except that
          the module's own code never reads it;
        - of instances of provider classes and keywords, a namespace holding their attributes and
          those names (`BuiltNamespace`: ai-dynamo's `argparse.Namespace(**vars(engine_args))`).
        None when it takes positional arguments or spreads anything else."""
        if node.args:
            return None
        spread: list[Value] = []
        names: set[str] = set()
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg is not None:
                names.add(keyword.arg)
            elif isinstance(value, ast.Call) and dotted(value.func) == "vars" and len(value.args) == 1:
                spread.append(self._eval(value.args[0], ctx))
            elif isinstance(value, ast.Attribute) and value.attr == "__dict__":
                spread.append(self._eval(value.value, ctx))
            else:
                return None
        module = spread[0] if len(node.keywords) == 1 and spread else None
        if isinstance(module, ProviderValue):
            return replace(module, copy=True)
        copies: list[Ref] = []
        for copied in spread:
            if not (isinstance(copied, ReceiverValue) and copied.receiver is Receiver.INSTANCE and copied.choices):
                return None
            copies.extend(copied.choices)
        return BuiltNamespace(tuple(dict.fromkeys(copies)), frozenset(names), self._site(ctx, node))

    def _namespace_returned(
        self: ConsumerScanner, fn: ConsumerFunction, args: list[Value], kwargs: dict[str, Value], ctx: Ctx
    ) -> BuiltNamespace | None:
        """The namespace a consumer function builds and returns (`_namespace`), read with the
        arguments of the call (recording nothing): ai-dynamo's `build_headless_namespace(config)`.
        Only a function whose text makes a `Namespace(` is read; the one namespace every return gives."""
        path = fn.file.path
        if path not in self._namespace_files:  # asked of every consumer call: each file searched once
            self._namespace_files[path] = b"Namespace(" in self._sources.get(path, b"")
        if ctx.depth > MAX_DEPTH or not self._namespace_files[path]:
            return None
        text = self._text(fn.file.path, fn.node)
        if text is None or b"Namespace(" not in text:
            return None
        positional = [p.arg for p in (*fn.node.args.posonlyargs, *fn.node.args.args)]
        bound = {**dict(zip(positional, args)), **{k: v for k, v in kwargs.items() if k in fn.params}}
        returned: list[tuple[object, tuple[Condition, ...]]] = []
        self._read_alone(fn, bound, ctx, returned)
        built = [value for value, _ in returned]
        if not built or not all(isinstance(value, BuiltNamespace) and value == built[0] for value in built):
            return None
        return built[0] if isinstance(built[0], BuiltNamespace) else None

    def _record_namespaces(
        self: ConsumerScanner,
        callee: ProviderValue,
        node: ast.Call,
        args: list[Value],
        kwargs: dict[str, Value],
        ctx: Ctx,
    ) -> None:
        """Namespaces the consumer builds, passed to a provider call (`NamespaceArgument`)."""
        passed = [(i, "", v) for i, v in enumerate(args)] + [(-1, k, v) for k, v in kwargs.items()]
        site = self._site(ctx, node)
        for position, keyword, value in passed:
            if isinstance(value, BuiltNamespace):
                names = tuple(sorted(value.names))
                use = NamespaceArgument(callee.choices, site, position, keyword, value.copies, names, value.site)
                self.usage.contact.namespaces.append(use)

    def _consumer_call(
        self: ConsumerScanner,
        callee: ConsumerValue,
        node: ast.Call,
        args: list[Value],
        kwargs: dict[str, Value],
        ctx: Ctx,
        makes_instance: bool,
    ) -> Value:
        """A call of a consumer function or class: a helper followed, its version answer, or (with
        `makes_instance`, `runner = MyRunner(...)`) an instance typed like `self` in that class."""
        self._record_class_call(callee, node, ctx)
        if ctx.returns is None:
            self._call_helper(callee, node, args, kwargs, ctx)
        flags, flagged = _literal_flags(node, args, kwargs)
        value = self._helper_value(callee, flags, flagged, ctx)
        if value is None and (fn := self._functions.get(callee.dotted)) is not None:
            value = self._namespace_returned(fn, args, kwargs, ctx)  # (a function read already: none loaded)
        if value is None and makes_instance and (cls := self._consumer_class(callee.dotted)) is not None:
            return ReceiverValue(Receiver.SELF, cls.name, other=True)
        if value is None and makes_instance and (fn := self._function(callee.dotted, load=False)) is not None:
            return self._annotated_return(fn)
        return value

    def _annotated_return(self: ConsumerScanner, fn: ConsumerFunction) -> Value:
        """An instance of the provider class a consumer function's return annotation names, read
        where the function is defined (vllm-omni's `def _start_api_server_process_manager(...) ->
        APIServerProcessManager`); None otherwise. Only the scanned modules' functions are asked
        for (no module is loaded for it)."""
        if fn.node.returns is None:
            return None
        where = Ctx(fn.file, Scope(fn.closure), fn.qualname, record=False)
        choices = self._unshadowed(self._provider_type(fn.node.returns, where), fn.file.path)
        return ReceiverValue(Receiver.INSTANCE, choices=choices) if choices else None

    def _record_class_call(self: ConsumerScanner, callee: ConsumerValue, node: ast.Call, ctx: Ctx) -> None:
        """`Cls(...)` of what may be a consumer class (one read already, or a name written as a
        class's): kept until the scan knows its classes, then judged against the `__init__` its
        order runs (`inits`)."""
        if ctx.record and (callee.dotted in self._classes or callee.dotted.rpartition(".")[2][:1].isupper()):
            self._class_calls.append((callee.dotted, node, ctx, self._when(ctx)))

    def _eval_other_call(
        self: ConsumerScanner,
        name: str,
        callee: Value,
        node: ast.Call,
        args: list[Value],
        ctx: Ctx,
        makes_instance: bool = False,
    ) -> Value:
        """Calls that compute a version, a gate (a test of a provider callable's parameters too), a
        module name or a split dotted path; a copy of a provider module (`_namespace`);
        registry patches; with `makes_instance`, a new instance of a provider class (`_eval_Call`);
        a Triton launch of a provider kernel (recorded)."""
        if callee is None and isinstance(node.func, ast.Subscript) and ctx.record:
            self._record_launch(node.func, node, ctx)
            return None
        if callee is None and (name == "type" or name in _NAMESPACE_CALLS):
            made = self._made_object(name, node, ctx)
            if made is not None:
                return made
        if isinstance(callee, DataclassReplace) or (
            callee is None and name == "dataclasses.replace" and ctx.scope.lookup("dataclasses") is None
        ):
            return self._dataclass_replace(node, args, ctx)
        if name.rpartition(".")[2] == "find_spec" and args and isinstance(args[0], str) and self._is_provider(args[0]):
            return ModuleProbe(Ref(args[0]))  # a feature test: `if find_spec("pkg.new") is not None:`
        if callee is None and isinstance(node.func, ast.Attribute) and node.func.attr == "issubset":
            probe = _parameters_probe(node.func.value, args, node.keywords)
            if probe is not None:
                return probe
        if callee is None and name in ("inspect.signature", "signature") and len(args) == 1:
            return signature_of_value(args[0])  # `"x" in inspect.signature(f).parameters`: a feature test
        if callee is None or isinstance(callee, (VersionMethod, SpecifierContains)):
            name = self._aliases.get(ctx.file.path, {}).get(name, name)
            found = self._version_call(name, callee, node, args, ctx)
            if found is not None:
                return found
        if callee is None:
            self._dynamic_import_edge(name, node, args, ctx)
        if isinstance(node.func, ast.Call) and args:  # register_patch(target="pkg.m.C.f")(replacement)
            self._string_target_patch(node.func, args[0], ctx)
        if isinstance(callee, StringMethod):
            literal = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
            return callee.call(tuple(literal))
        platform = _platform_method(callee, node)  # `current_platform.is_rocm()`
        if (
            makes_instance
            and platform is None
            and isinstance(callee, ProviderValue)
            and (choices := self._unshadowed(callee.choices, ctx.file.path))
        ):
            return ReceiverValue(Receiver.INSTANCE, choices=choices)
        return platform

    def _all_hasattr(self: ConsumerScanner, node: ast.expr, ctx: Ctx) -> AttributeProbe | None:
        """`all(hasattr(X, n) for n in ("a", "b"))` of a provider object: a probe of every name."""
        if not (isinstance(node, ast.GeneratorExp) and len(node.generators) == 1):
            return None
        loop, test = node.generators[0], node.elt
        names = literal_strings(loop.iter)
        if (
            loop.ifs
            or not names
            or not isinstance(loop.target, ast.Name)
            or not (isinstance(test, ast.Call) and dotted(test.func) == "hasattr" and len(test.args) == 2)
            or not (isinstance(test.args[1], ast.Name) and test.args[1].id == loop.target.id)
        ):
            return None
        owner = self._eval(test.args[0], ctx)
        if not isinstance(owner, ProviderValue):
            return None
        for attr in names:
            self._record_read(owner, attr, ReadKind.HASATTR)
        return AttributeProbe(owner.choices, tuple(names))

    def _builtin_attr_call(self: ConsumerScanner, name: str, node: ast.Call, args: list[Value], ctx: Ctx) -> Value:
        if name == "getattr" and len(args) >= 2 and isinstance(args[1], str):
            self._value_reads.add((self_owner(node.args[0], ctx), args[1]))
            ref = _member_ref(args[0], args[1])
            recording = ctx.record and not self._quiet and not node.keywords
            if ref is not None and recording and self._may_record(ref.owner) and not _falls_back(node):
                # Through a receiver: a read as `x.name` is, or with a default one that nothing raises for.
                self._record_member_use(ref, node, ctx, defaulted=len(node.args) > 2)
            if args[0].__class__ is MemberChain or (isinstance(args[0], ReceiverValue) and args[0].owner):
                # What it reads is read further (`coordinator = getattr(self, "coordinator", None)`,
                # then `getattr(coordinator, "managers", ())`), as `x.name` would be.
                return MemberChain(ref) if ref is not None else None
        if name == "setattr" and len(args) >= 2 and isinstance(args[0], BuiltNamespace):
            # `setattr(ns, "name", v)` sets that name; one computed makes what it holds unknown.
            grown = args[0].with_name(args[1]) if isinstance(args[1], str) else None
            if isinstance(node.args[0], ast.Name):
                self._bind(ctx, node.args[0].id, grown)
        if name == "setattr" and len(args) >= 2 and isinstance(args[1], (str, NameChoice)) and ctx.record:
            # Set by name, from wherever.
            names = [args[1]] if isinstance(args[1], str) else args[1].names
            self.usage.contact.member_stores.extend(names)
            site = self._site(ctx, node)
            self.usage.contact.outside_stores.extend(OutsideStore(name, site, ctx.function) for name in names)
        if name == "all":
            return self._all_hasattr(node.args[0], ctx) if len(node.args) == 1 and not node.keywords else None
        if len(args) >= 2 and isinstance(args[0], ProviderValue) and isinstance(args[1], NameChoice):
            return self._chosen_attr_call(name, node, args[0], args[1], args, ctx)
        if len(args) < 2 or not isinstance(args[0], ProviderValue) or not isinstance(args[1], str):
            return None
        owner, attr = args[0], args[1]
        if name == "hasattr":
            self._record_read(owner, attr, ReadKind.HASATTR)
            return AttributeProbe(owner.choices, (attr,))
        if name == "setattr" and len(args) >= 3:
            self._record_patch(ctx, node, owner, attr, node.args[2], args[2])
            return None
        if name == "getattr":
            return self._getattr(node, owner, (attr,), args, ctx)
        return None

    def _getattr(
        self: ConsumerScanner, node: ast.Call, owner: ProviderValue, names: tuple[str, ...], args: list[Value], ctx: Ctx
    ) -> ProviderValue:
        """`getattr(owner, name[, default])`, or with a name a loop picked among `names`: one read whose
        choices are the names (it resolves wherever one of them exists)."""
        has_default = len(args) >= 3 or any(k.arg == "default" for k in node.keywords)
        for attr in names:
            self._record_read(owner, attr, ReadKind.DEFAULT if has_default else ReadKind.PLAIN)
        value = ProviderValue(tuple(ref for attr in names for ref in owner.attr(attr).choices), owner.guard)
        # With a default, judged only against a baseline that had it (see checks).
        guard = Guard.GETATTR_DEFAULT if has_default else self._patch_guard(ctx, owner, names[0])
        if ctx.record:
            self.usage.attributes.append(
                AttributeUse(value.choices, self._site(ctx, node), guard, self._when(ctx), ctx.function)
            )
        if not has_default:
            return value
        default = node.args[2] if len(node.args) >= 3 else next(k.value for k in node.keywords if k.arg == "default")
        none_default = isinstance(default, ast.Constant) and default.value is None
        return ProviderValue(value.choices, Guard.GETATTR_DEFAULT, none_default=none_default)

    def _import_choice(self: ConsumerScanner, node: ast.Call, choice: NameChoice, ctx: Ctx) -> Value:
        """`import_module(name)` of a name a loop picked (`if find_spec(candidate): name = candidate;
        break`): a ladder whose alternatives are its names, when all of them are provider modules
        (one of the consumer's own, always there, or of another package, unknown: nothing)."""
        modules = [n for n in choice.names if not n.startswith(".") and self._is_provider(n)]
        if len(modules) != len(choice.names):
            return None  # one is the consumer's own or another package's: not a ladder of the provider
        if ctx.record:
            site = self._site(ctx, node)
            uses = [[ImportUse(Ref(m), site, ImportKind.IMPORTLIB, ctx.via)] for m in modules]
            group = ImportGroup(ctx.file.path, site.line, ctx.function, True, uses, when=ctx.when)
            self.usage.groups.append(caught_by(group, ctx.import_handler))
        return ProviderValue(tuple(Ref(m) for m in modules))

    def _chosen_attr_call(
        self: ConsumerScanner,
        name: str,
        node: ast.Call,
        owner: ProviderValue,
        choice: NameChoice,
        args: list[Value],
        ctx: Ctx,
    ) -> Value:
        """`getattr`/`setattr` with a name a loop picked (`NameChoice`): any one of its names. The
        patches are alternatives of one another (one installs wherever one of the names exists); a
        read is one use whose choices are the names (it resolves wherever one of them exists)."""
        if name == "setattr" and len(args) >= 3:
            inner = evolve(ctx, loop_group=choice.group)
            for attr in choice.names:
                self._record_patch(inner, node, owner, attr, node.args[2], args[2])
            return None
        return self._getattr(node, owner, choice.names, args, ctx) if name == "getattr" else None


def _parameters_probe(names: ast.expr, args: list[Value], kwargs: list[ast.keyword]) -> ParameterProbe | None:
    """`{"a", "b"}.issubset(inspect.signature(f).parameters)`: whether provider callable `f` takes
    every one of the names written; None for any other `issubset`."""
    if len(args) != 1 or kwargs or not isinstance(names, (ast.Set, ast.List, ast.Tuple)) or not names.elts:
        return None
    words = [e.value for e in names.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    params = args[0]
    if len(words) != len(names.elts) or not isinstance(params, SignatureOf) or not params.parameters:
        return None
    first, *more = dict.fromkeys(words)
    return ParameterProbe(params.choices, first, also=tuple(more))


def _class_test(name: str, node: ast.Call, value: Value) -> AttributeProbe | None:
    """`isinstance(getattr(X, "n", None), type)` or `callable(getattr(X, "n", None))`: true only
    where X has n (ModelOpt registers vLLM's `FusedMoE` only where it is still a class)."""
    if not (isinstance(value, ProviderValue) and value.none_default):
        return None
    if name == "isinstance" and not (len(node.args) == 2 and dotted(node.args[1]) == "type"):
        return None
    owned = owner_and_name(value)
    return AttributeProbe(owned[0], (owned[1],), partial=True) if owned is not None else None


def _literal_flags(node: ast.Call, args: list[Value], kwargs: dict[str, Value]) -> tuple[list[Value], dict[str, Value]]:
    """A helper call's arguments with a literal `True` or `False` kept as it is (evaluated, it is
    nothing known): the flag decides which answer the helper gives (transformers-style
    `_is_package_available("vllm", return_version=True)` answers a pair only then)."""

    def kept(arg: ast.expr, value: Value) -> Value:
        return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, bool) else value

    flags = [kept(a, v) for a, v in zip(node.args, args)]  # one value per written argument
    flagged = {k.arg: kept(k.value, kwargs[k.arg]) for k in node.keywords if k.arg in kwargs}
    return flags, flagged


def _passed_through(name: str, callee: Value, args: list[Value]) -> int | None:
    """Which argument a call gives back as it is: `classmethod(f)`, `staticmethod(f)`, and
    `typing.cast(T, x)` (`processor = cast(Any, self)` still calls the methods of `self`)."""
    if name in ("classmethod", "staticmethod") and args:
        return 0
    typing_cast = isinstance(callee, TypingCast) or (
        callee is None and name.partition(".")[0] in TYPING_MODULES and name.endswith(".cast")
    )
    return 1 if typing_cast and len(args) == 2 else None


def _none_test_of_string(node: ast.expr, ctx: Ctx) -> Gate | None:
    """`x is None` / `x is not None` where name x holds a string the scan knows: its truth, as a
    gate fixed at every version; None for anything else."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot))):
        return None
    left, right = node.left, node.comparators[0]
    if isinstance(left, ast.Constant) and left.value is None:
        left, right = right, left
    if not (isinstance(right, ast.Constant) and right.value is None and isinstance(left, ast.Name)):
        return None
    if left.id in ctx.scope.none_defaults:  # a helper's `min_version=None`, not passed
        return Gate(GateOp.FIXED, node_text(node), compare=str(isinstance(node.ops[0], ast.Is)))
    if not isinstance(ctx.scope.lookup(left.id), str):
        return None
    return Gate(GateOp.FIXED, node_text(node), compare=str(isinstance(node.ops[0], ast.IsNot)))


def _names_module(value: object) -> TypeGuard[str]:
    """Is `value` a string that reads as an absolute dotted module name ("pkg.mod")?"""
    return isinstance(value, str) and "." in value and DOTTED_NAME.fullmatch(value) is not None and value[0] != "."


def _member_ref(base: Value, attr: str) -> MethodRef | None:
    """What `base.attr` reaches through a receiver: a member of the receiver's class, or of what an
    attribute of it holds (`self.vllm_config.model_config`, at most `MAX_VIA` attributes deep);
    None through anything else."""
    if isinstance(base, ReceiverValue):
        return MethodRef(base.receiver, attr, base.owner, base.choices, other=base.other, param=base.param)
    if isinstance(base, (MethodValue, MemberChain)) and via_depth(base.ref.via) < MAX_VIA:
        ref = base.ref
        return MethodRef(ref.receiver, attr, ref.owner, ref.choices, (*ref.via, ref.name), ref.other, ref.param)
    return None


def _computed_attribute(base: ProviderVersion | VersionSpecifier | SignatureOf, attr: str) -> Value:
    """An attribute of the provider's version (`Version(v).release >= (0, 29)`; any other is a
    method, `.startswith`), of a specifier set (`.contains`), or of a signature (`.parameters`)."""
    if isinstance(base, SignatureOf):
        return SignatureOf(base.choices, parameters=True) if attr == "parameters" else None
    if isinstance(base, VersionSpecifier):
        return SpecifierContains(base) if attr == "contains" else None
    if attr == "release" and base.form is VersionForm.VERSION:
        return ProviderVersion(VersionForm.TUPLE)
    if attr == "public" and base.form is VersionForm.VERSION:
        # vllm-ascend's `vllm_version_is` compares `Version(parsed.public)`: a "+empty" build is its release.
        return ProviderVersion(VersionForm.TEXT, public=True)
    return VersionMethod(base, attr)


def _falls_back(node: ast.Call) -> bool:
    """`getattr(x, "old", getattr(x, "new", d))` (or `x.new`): a default read from the same object,
    the consumer's own way of handling a rename."""
    if len(node.args) < 3:
        return False
    default, obj = node.args[2], ast.dump(node.args[0])
    if isinstance(default, ast.Call) and dotted(default.func) == "getattr" and default.args:
        return ast.dump(default.args[0]) == obj
    return isinstance(default, ast.Attribute) and ast.dump(default.value) == obj


def _through_flags(callee: Value, flags: Clauses) -> tuple[Value, bool]:
    """A callee bound to the provider's object by one branch of a consumer test (`mixed`), as a
    call where `flags` hold gets it: None where they rule out that branch; the provider's object,
    and whether another object may be called instead (not where they rule out every other branch)."""
    if not isinstance(callee, ProviderValue) or not callee.mixed:
        return callee, False
    if excludes(flags, callee.bound_when):
        return None, False
    # (No other branch known, as after merging branches that all bound provider objects: it may be.)
    return callee, not callee.other_when or not all(excludes(flags, other) for other in callee.other_when)


def _platform_method(callee: Value, node: ast.Call) -> PlatformTest | None:
    """`current_platform.is_rocm()` (any of vLLM's platform tests, called with nothing): the test;
    None for any other call."""
    if not isinstance(callee, ProviderValue) or node.args or node.keywords:
        return None
    path = callee.choices[0].path
    if len(path) >= 2 and path[-2] == "current_platform" and path[-1] in PLATFORM_METHODS:
        return PlatformTest.exact(PLATFORM_METHODS[path[-1]], node_text(node))
    return None


def _unchained(value: Value) -> Value:
    return None if isinstance(value, MemberChain) else value
