"""protocol-drift: a namespace the consumer builds, handed to a provider function that reads an
attribute it lacks.

A consumer may rebuild the arguments a provider entry point expects instead of letting the
provider's own command line make them: ai-dynamo's `build_headless_namespace(config)` returns
`argparse.Namespace(**vars(config.engine_args))` plus `api_server_count`, and hands it to vLLM's
`run_headless(args)`. vLLM 0.34's `run_headless` reads `args.headless_client_handshake_address`,
an option of vLLM's own parser that no `AsyncEngineArgs` field holds: AttributeError on every
secondary node. The namespace holds the attributes of the instances it copies (what the
provider's classes set on their instances, through their order) and the names the consumer
gives it (`usage.NamespaceArgument`); the provider function's reads of its parameter are
read from its syntax. Only a read new since the baseline, or of a field the copied class lost,
is an error: the consumer works at the baseline, so a read there of what it lacked does not
run. Without a baseline, a warning. Namespaces built in test modules are stubs, not judged.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from atompin.analysis.baseline import Baseline
from atompin.analysis.moduleinfo import MemberKind
from atompin.analysis.provider import ClassRef, ProviderIndex, TargetKind
from atompin.analysis.reach import is_test_module
from atompin.analysis.shadows import function_node, upstream
from atompin.analysis.syntax import dotted
from atompin.analysis.usage import ConsumerUsage, NamespaceArgument, Ref
from atompin.model import Finding, Rule, Severity

_TRIES = (ast.Try, getattr(ast, "TryStar", ast.Try))


@dataclass(frozen=True)
class ParameterReads:
    """The attributes a provider function (`symbol`, in file `path`) reads directly on one of its
    parameters (`args.x`), each with the line of its first read."""

    symbol: str  # where the function is defined
    path: str
    reads: dict[str, int]


def check_namespaces(usage: ConsumerUsage, index: ProviderIndex, baseline: Baseline | None) -> list[Finding]:
    """protocol-drift for the namespaces the consumer builds and hands to provider functions."""
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for argument in usage.contact.namespaces:
        if is_test_module(usage.module_of(argument.built.path)) or is_test_module(usage.module_of(argument.site.path)):
            continue  # a test's stub
        now = _reads(index, argument)
        held = _held(index, argument.copies)
        if now is None or held is None:
            continue
        before = _reads(baseline.index, argument) if baseline is not None else None
        held_before = _held(baseline.index, argument.copies) if baseline is not None else None
        for name, line in sorted(now.reads.items(), key=lambda item: item[1]):
            if name in held or name in argument.names or (now.symbol, name) in seen:
                continue
            if baseline is not None and before is not None and name in before.reads:
                if held_before is None or name not in held_before:
                    continue  # read at the baseline too, where it lacked it as well: the consumer works there
            seen.add((now.symbol, name))
            findings.append(_finding(argument, now, name, line, baseline, before))
    return findings


def _finding(
    argument: NamespaceArgument,
    now: ParameterReads,
    name: str,
    line: int,
    baseline: Baseline | None,
    before: ParameterReads | None,
) -> Finding:
    copies = ", ".join(f"{ref.module}:{'.'.join(ref.path)}" for ref in argument.copies)
    names = ", ".join(argument.names)
    if copies:
        holds = f"the attributes of a {copies}" + (f" and {names}" if names else "")
    else:
        holds = f"only {names}" if names else "nothing"
    new = ""
    if baseline is not None:
        new = (
            f" (new since {baseline.label})"
            if before is None or name not in before.reads
            else f" (a field the class lost since {baseline.label})"
        )
    message = (
        f"the namespace built at {argument.built} holds {holds}; it is handed to {now.symbol} at "
        f"{argument.site}, which reads .{name} of it at {now.path}:{line}{new}: AttributeError when that runs"
    )
    severity = Severity.ERROR if baseline is not None else Severity.WARNING
    return Finding(Rule.PROTOCOL_DRIFT, severity, now.symbol, (argument.site,), message)


def _reads(index: ProviderIndex, argument: NamespaceArgument) -> ParameterReads | None:
    """What the called provider function reads of the parameter the namespace binds to; None when
    it is not a module-level function found in `index` or its parameter is not plain."""
    if len(argument.callee) != 1 or len(argument.callee[0].path) != 1:
        return None
    ref = argument.callee[0]
    res = index.resolve_symbol(f"{ref.module}:{ref.path[0]}")
    target = res.target
    if not res.found or target is None or target.kind is not TargetKind.FUNCTION or target.owner is not None:
        return None
    fn = upstream(index, target.symbol)
    found = function_node(index, fn) if fn is not None else None
    if fn is None or found is None:
        return None
    node = found[0]
    params = [p.arg for p in (*node.args.posonlyargs, *node.args.args)]
    if argument.position >= 0:
        param = params[argument.position] if argument.position < len(params) else None
    else:
        param = argument.keyword if argument.keyword in (*params, *(p.arg for p in node.args.kwonlyargs)) else None
    if param is None:
        return None
    reads = _parameter_reads(node, param)
    if reads is None:
        return None
    offset = fn.line - node.lineno  # the node's lines count from where its text was cut
    return ParameterReads(fn.symbol, fn.path, {name: line + offset for name, line in reads.items()})


def _parameter_reads(node: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> dict[str, int] | None:
    """`param.x` read in the function's own body (not in nested functions, nor in a `try`, nor a
    name it tests with `hasattr`/`getattr`): x and the line of its first read. None when the
    parameter is rebound."""
    reads: dict[str, int] = {}
    tested: set[str] = set()
    todo: list[ast.AST] = list(node.body)
    while todo:
        current = todo.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, *_TRIES)):
            continue  # what runs later, or under a handler that may catch the AttributeError
        if isinstance(current, ast.Name) and current.id == param and not isinstance(current.ctx, ast.Load):
            return None
        if (
            isinstance(current, ast.Attribute)
            and isinstance(current.value, ast.Name)
            and current.value.id == param
            and isinstance(current.ctx, ast.Load)
        ):
            reads[current.attr] = min(current.lineno, reads.get(current.attr, current.lineno))
        if isinstance(current, ast.Call) and dotted(current.func) in ("hasattr", "getattr") and len(current.args) >= 2:
            name = current.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                tested.add(name.value)
        todo.extend(ast.iter_child_nodes(current))
    return {name: line for name, line in reads.items() if name not in tested and not name.startswith("__")}


def _held(index: ProviderIndex, copies: tuple[Ref, ...]) -> frozenset[str] | None:
    """The attributes instances of these provider classes hold (their fields and what their
    methods set on `self`, through their order); None when not known for sure."""
    held: set[str] = set()
    for ref in copies:
        res = index.resolve_symbol(f"{ref.module}:{'.'.join(ref.path)}")
        cls = res.target.cls if res.found and res.target is not None else None
        if cls is None or res.target is None or res.target.kind is not TargetKind.CLASS:
            return None
        for node in index.mro(cls):
            info = index.class_info(node) if isinstance(node, ClassRef) else None
            if info is None:
                if node in ("object", "builtins.object"):
                    continue
                return None  # an outside base: what it sets is not known
            if info.has_getattr or info.opaque or info.sets_computed:
                return None
            held.update(n for n, m in info.members.items() if m.kind in (MemberKind.VALUE, MemberKind.INSTANCE))
    return frozenset(held)
