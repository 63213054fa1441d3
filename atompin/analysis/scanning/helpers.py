"""The consumer's own functions, read again with the values a call hands them.

A helper called with provider objects (`patch(vllm.x.Cls)`, `helper(config)`)
is queued (`_enqueue`) and its body read once more with those values bound to
its parameters, up to the bounds that keep the scan finite (`state.MAX_DEPTH`
deep, `scanner._MAX_RESCANS` reads in all).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import TYPE_CHECKING

from atompin.analysis.gates import ProviderVersion
from atompin.analysis.guards import feature_test
from atompin.analysis.keyword_tables import passed_on_unchanged
from atompin.analysis.scanning.state import MAX_DEPTH, ConsumerFunction, Ctx, Rescan, SourceFile
from atompin.analysis.syntax import dotted
from atompin.analysis.syntax import walk as every_node
from atompin.analysis.usage import Condition, Receiver
from atompin.analysis.values import ConsumerValue, MethodValue, ReceiverValue, Scope, Value
from atompin.model import Site

if TYPE_CHECKING:
    from atompin.analysis.scanner import ConsumerScanner


class HelperCalls:
    """Reading the consumer's functions again for the values their calls bind."""

    # Set here, made in `ConsumerScanner.__post_init__` (declared so the type is that one).
    _quiet: bool

    def _enqueue(
        self: ConsumerScanner,
        fn: ConsumerFunction,
        binding: dict[str, Value],
        via: tuple[Site, ...],
        depth: int,
        when: tuple[Condition, ...] = (),
    ) -> None:
        key = (id(fn.node), fn.outer, _bound_text(binding), when)
        if key in self._seen_calls or depth > MAX_DEPTH or (fn.muted and not binding):
            return
        self._seen_calls.add(key)
        self._queue.append(Rescan(fn, binding, via, depth, when))

    def _run_function(self: ConsumerScanner, job: Rescan) -> None:
        fn = job.function
        scope = Scope(fn.closure)
        versions = self._version_params(fn) if not job.binding else {}
        for name in fn.params:
            scope.names[name] = job.binding.get(name, versions.get(name))
        a = fn.node.args
        for extra in (a.vararg, a.kwarg):
            if extra is not None:
                scope.names[extra.arg] = job.binding.get(extra.arg)  # a `**` handed on: `_forwarded_keywords`
        self._bind_receivers(fn, scope)
        bound = (*fn.outer, *_bound_text(job.binding))
        ctx = Ctx(
            fn.file,
            scope,
            function=fn.qualname,
            via=job.via,
            depth=job.depth,
            owner=fn.owner,
            when=(*fn.when, *job.when, *self._installed_when(fn), *self._called_when(fn)),
            bound=bound,
            definition=fn.node,
        )
        test = feature_test(fn.node)
        if test is not None:
            self._feature_tests.add(id(test))
        self._block(fn.node.body, ctx)

    def _read_alone(
        self: ConsumerScanner,
        fn: ConsumerFunction,
        bound: dict[str, Value],
        ctx: Ctx,
        returns: list[tuple[object, tuple[Condition, ...]]] | None = None,
    ) -> None:
        """Read a function's body at once, recording nothing, with `bound` bound to its parameters
        (the rest typed as annotated, else unknown), each value it returns added to `returns`: what
        a decorator sets on a class, a namespace a helper builds."""
        scope = Scope(fn.closure)
        scope.names.update({name: None for name in fn.params})
        scope.names.update({name: value for name, value in bound.items() if value is not None})
        self._bind_receivers(fn, scope)
        self._block(fn.node.body, Ctx(fn.file, scope, fn.qualname, depth=ctx.depth + 1, record=False, returns=returns))

    def _installed_when(self: ConsumerScanner, fn: ConsumerFunction) -> tuple[Condition, ...]:
        """The version gates a module-level function runs under because it is only ever installed
        as a patch, once, under them, and named nowhere else (vllm-ascend 0.28 installs
        `_ascend_pool_bytes_per_block` only `if not vllm_version_is("0.28.0"):`). Installs at
        module level are all recorded before any function body is read."""
        installs = self._installs.get(fn.dotted, [])
        if "." in fn.qualname or len(installs) != 1 or not installs[0]:
            return ()
        return installs[0] if self._times_written(fn.node.name) == 2 else ()  # its definition and the install

    def _called_once(self: ConsumerScanner, fn: ConsumerFunction) -> bool:
        """Is `fn` a private module-level function whose name its file writes twice only (its
        definition and one call)? Read from the bytes: cheap enough to ask of every function."""
        name = fn.node.name
        if fn.owner or "." in fn.qualname or not name.startswith("_"):
            return False
        return self._sources.get(fn.file.path, b"").count(name.encode()) == 2

    def _waits_for_caller(self: ConsumerScanner, fn: ConsumerFunction) -> bool:
        """Is `fn` called once (`_called_once`) at a place not read yet? Its plain reading waits."""
        return self._called_once(fn) and fn.dotted not in self._call_sites

    def _called_when(self: ConsumerScanner, fn: ConsumerFunction) -> tuple[Condition, ...]:
        """What held at the one call of `fn` (`_called_once`, named in no other file): its body runs
        only there, also when read again with the values that call passes (vllm-ascend 0.28 calls
        its stride-aware KV planner only past `if vllm_version_is("0.28.0") or ...: return`)."""
        if not self._called_once(fn):
            return ()
        sites = self._call_sites.get(fn.dotted, {})
        when = next(iter(sites.values())) if len(sites) == 1 else ()
        return when if when and not self._named_in_other_files(fn) else ()

    def _version_params(self: ConsumerScanner, fn: ConsumerFunction) -> dict[str, Value]:
        """The parameters of a private module-level function that every call of it passes the
        provider's version (`_select(vllm.__version_tuple__, ...)`, all in its own module, the name
        used for nothing else): bound to that version in the function's own reading, so the gates it
        tests are decided there (a module it names for one release is not reached at another)."""
        name = fn.node.name
        if fn.owner or "." in fn.qualname or not name.startswith("_") or not fn.params:
            return {}
        calls, uses = self._private_calls(fn.file).get(name, ([], 0))
        if not calls or uses != len(calls):  # also passed, stored or rebound: not only called
            return {}
        # First without recording anything: most such functions are passed no version, and then
        # the other files' text need not be searched for the name.
        quiet, self._quiet = self._quiet, True
        try:
            if not self._versions_passed(fn, calls):
                return {}
        finally:
            self._quiet = quiet
        if self._named_in_other_files(fn):
            return {}  # imported by another module, whose calls are not looked at
        return self._versions_passed(fn, calls)

    def _named_in_other_files(self: ConsumerScanner, fn: ConsumerFunction) -> bool:
        """Does another file of the consumer (scanned or not) write the function's name (it may
        import it)?"""
        key = (fn.file.path, fn.node.name)
        if key not in self._named_elsewhere:  # asked once per function
            word = fn.node.name.encode()
            others = (source for path, source in self._sources.items() if path != fn.file.path)
            self._named_elsewhere[key] = any(word in source for source in (*others, *self._unscanned))
        return self._named_elsewhere[key]

    def _versions_passed(self: ConsumerScanner, fn: ConsumerFunction, calls: list[ast.Call]) -> dict[str, Value]:
        """The parameters of `fn` that every one of `calls` passes the same provider version."""
        module_ctx = Ctx(fn.file, self._scopes[fn.file.module], record=False)
        a = fn.node.args
        positional = len(a.posonlyargs) + len(a.args)  # what a call's positional arguments can bind
        found: dict[str, Value] = {}
        for i, param in enumerate(fn.params):
            values = []
            for call in calls:
                by_position = i < positional and i < len(call.args)
                arg = call.args[i] if by_position else next((k.value for k in call.keywords if k.arg == param), None)
                # Only a plain attribute or name is evaluated here: a call could have effects.
                values.append(self._eval(arg, module_ctx) if isinstance(arg, (ast.Attribute, ast.Name)) else None)
            if all(isinstance(v, ProviderVersion) for v in values) and len(set(values)) == 1:
                found[param] = values[0]
        return found

    def _private_calls(self: ConsumerScanner, file: SourceFile) -> dict[str, tuple[list[ast.Call], int]]:
        """Each private name of a module that mentions a version -> the calls of it by that name,
        and how often the name occurs at all (one walk of the module, kept); empty for the others."""
        found = self._private_names.get(file.module)
        if found is None:
            found = {}
            tree = self._trees.get(file.module) if b"version" in self._sources.get(file.path, b"") else None
            for node in every_node(tree) if tree is not None else ():
                if isinstance(node, ast.Name) and node.id.startswith("_"):
                    calls, uses = found.get(node.id, ([], 0))
                    found[node.id] = (calls, uses + 1)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("_"):
                    found.setdefault(node.func.id, ([], 0))[0].append(node)
            self._private_names[file.module] = found
        return found

    def _call_helper(
        self: ConsumerScanner,
        callee: ConsumerValue,
        node: ast.Call,
        args: list[Value],
        kwargs: dict[str, Value],
        ctx: Ctx,
    ) -> None:
        if self._pending is not None:  # module bodies are still being read
            self._pending.append((callee, node, args, kwargs, ctx))
            return
        self._call_sites.setdefault(callee.dotted, {})[f"{ctx.file.path}:{node.lineno}:{node.col_offset}"] = ctx.when
        defined = self._functions.get(callee.dotted)
        if defined is not None and "." not in defined.qualname:
            calls = self._own_calls.setdefault((defined.file.path, defined.qualname), {})
            calls[f"{ctx.file.path}:{node.lineno}:{node.col_offset}"] = ctx.catching_import
        values = (*args, *kwargs.values())
        provider = self._hands_provider(values)
        member = self._hands_member(values)
        forwarded = self._forwarded_keywords(callee, node, kwargs)
        if not (provider or member or forwarded):
            return
        # For a receiver's member only the scanned modules' helpers are read again: loading the
        # helper modules outside the scan for it cost a third of a plugin folder's scan.
        fn = self._function(callee.dotted, load=provider)
        if fn is None:
            return
        self._read_with(fn, node, args, kwargs, ctx, forwarded)

    def _hands_member(self: ConsumerScanner, values: Iterable[Value]) -> bool:
        """Does a call hand a helper what its reads go through as through a receiver: a
        receiver's member (`helper(self.vllm_config)`), an instance of a provider class, or a
        parameter the provider hands an override (`Receiver.PARAM`, typed once the provider's
        classes are known)? Only arguments that can lead into the provider are worth reading a
        helper again; `_hands_provider` answers for provider objects and module names."""
        return any(
            (isinstance(v, MethodValue) and self._may_record(v.ref.owner))
            or (isinstance(v, ReceiverValue) and v.receiver in (Receiver.INSTANCE, Receiver.PARAM))
            for v in values
        )

    def _read_with(
        self: ConsumerScanner,
        fn: ConsumerFunction,
        node: ast.Call,
        args: list[Value],
        kwargs: dict[str, Value],
        ctx: Ctx,
        forwarded: dict[str, dict[str, Value]] | None = None,
        method: bool = False,
    ) -> None:
        """Read `fn` again with what the call at `node` hands its parameters (a `method` called
        through its receiver: its first parameter is that receiver, bound as it always is)."""
        params = fn.params
        static = method and any(dotted(d) == "staticmethod" for d in fn.node.decorator_list)
        if (method and not static) or (
            isinstance(fn.node, ast.FunctionDef) and "." in fn.qualname and params and params[0] in ("self", "cls")
        ):
            params = params[1:]
        binding = dict(zip(params, args))
        binding.update({k: v for k, v in kwargs.items() if k in params})
        binding.update(forwarded or {})
        self._enqueue(fn, binding, (*ctx.via, self._site(ctx, node)), ctx.depth + 1, self._when(ctx))

    def _forwarded_keywords(
        self: ConsumerScanner, callee: ConsumerValue, node: ast.Call, kwargs: dict[str, Value]
    ) -> dict[str, dict[str, Value]] | None:
        """For a call of a consumer helper that hands its `**` parameter on unchanged
        (`passed_on_unchanged`), that parameter bound to the keywords the call passes beyond the
        helper's named ones, as a dict: its own calls with `**` of it pass those. None when the call
        passes none, or a `**` of its own (then they are not known). Only the scanned modules'
        helpers."""
        if not node.keywords or any(k.arg is None for k in node.keywords):
            return None
        fn = self._function(callee.dotted, load=False)
        if fn is None:
            return None
        if id(fn.node) not in self._kwargs_handed_on:
            self._kwargs_handed_on[id(fn.node)] = passed_on_unchanged(fn.node)
        name = self._kwargs_handed_on[id(fn.node)]
        a = fn.node.args
        named = {p.arg for p in (*a.args, *a.kwonlyargs)}  # a positional-only name passed by keyword goes to `**`
        extra = {k: v for k, v in kwargs.items() if k not in named}
        return {name: extra} if name is not None and extra else None


def _bound_text(binding: dict[str, Value]) -> tuple[tuple[str, str], ...]:
    """The values a read of a function binds to its parameters, as sortable text (a key)."""
    return tuple(sorted((k, repr(v)) for k, v in binding.items()))
