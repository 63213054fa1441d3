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
import functools
from dataclasses import dataclass

from atompin.analysis.baseline import Baseline
from atompin.analysis.moduleinfo import MemberKind
from atompin.analysis.provider import ClassRef, ProviderIndex, TargetKind
from atompin.analysis.reach import is_test_module
from atompin.analysis.shadows import function_node, upstream
from atompin.analysis.syntax import dotted, walk
from atompin.analysis.usage import ConsumerUsage, NamespaceArgument, Ref
from atompin.model import Finding, Rule, Severity, Site

_TRIES = (ast.Try, getattr(ast, "TryStar", ast.Try))


@dataclass(frozen=True)
class ParameterReads:
    """The attributes a provider function (`symbol`, in file `path`) reads directly on one of its
    parameters (`args.x`), each with the line of its first read."""

    symbol: str  # where the function is defined
    path: str
    reads: dict[str, int]


def check_namespaces(usage: ConsumerUsage, index: ProviderIndex, baseline: Baseline | None) -> list[Finding]:
    """protocol-drift for the namespaces the consumer builds and hands to provider functions: one
    finding per call, naming what the function reads that the namespace lacks."""
    findings: list[Finding] = []
    seen: set[tuple[Site, str]] = set()
    # A function handed several namespaces, or one handed to several calls, is read once per tree.
    reads = functools.cache(_reads)
    held_by = functools.cache(_held)
    for argument in usage.contact.namespaces:
        if is_test_module(usage.module_of(argument.built.path)) or is_test_module(usage.module_of(argument.site.path)):
            continue  # a test's stub
        where = (argument.callee, argument.position, argument.keyword)
        now = reads(index, *where)
        held = held_by(index, argument.copies)
        if now is None or held is None or (argument.site, now.symbol) in seen:
            continue
        before = reads(baseline.index, *where) if baseline is not None else None
        held_before = held_by(baseline.index, argument.copies) if baseline is not None else None
        lacked: list[tuple[str, int, str]] = []  # name, line, what is new
        for name, line in sorted(now.reads.items(), key=lambda item: item[1]):
            if name in held or name in argument.names:
                continue
            new = ""
            if baseline is not None:
                if before is not None and name in before.reads:
                    if held_before is None or name not in held_before:
                        continue  # read at the baseline too, where it lacked it as well: the consumer works there
                    new = f"a field the class lost since {baseline.label}"
                else:
                    new = f"new since {baseline.label}"
            lacked.append((name, line, new))
        if lacked:
            seen.add((argument.site, now.symbol))
            findings.append(_finding(argument, now, lacked, baseline is not None))
    return findings


def _finding(
    argument: NamespaceArgument, now: ParameterReads, lacked: list[tuple[str, int, str]], with_baseline: bool
) -> Finding:
    """One call's finding: what the namespace holds, and each read of what it lacks (an error
    with a baseline, where each is new or of a lost field; a warning without)."""
    copies = ", ".join(f"{ref.module}:{'.'.join(ref.path)}" for ref in argument.copies)
    names = ", ".join(argument.names)
    if copies:
        holds = f"the attributes of a {copies}" + (f" and {names}" if names else "")
    else:
        holds = f"only {names}" if names else "nothing"
    reads = "; ".join(f".{name} at {now.path}:{line}" + (f" ({new})" if new else "") for name, line, new in lacked)
    message = (
        f"the namespace built at {argument.built} holds {holds}; it is handed to {now.symbol} at "
        f"{argument.site}, which reads of it {reads}: AttributeError when that runs"
    )
    return Finding(
        Rule.PROTOCOL_DRIFT,
        Severity.ERROR if with_baseline else Severity.WARNING,
        now.symbol,
        (argument.site,),
        message,
    )


def _reads(index: ProviderIndex, callee: tuple[Ref, ...], position: int, keyword: str) -> ParameterReads | None:
    """What the called provider function reads of the parameter a namespace binds to (at
    `position`, or by `keyword`); None when it is not a module-level function found in `index`
    or its parameter is not plain."""
    if len(callee) != 1 or len(callee[0].path) != 1:
        return None
    ref = callee[0]
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
    if position >= 0:
        param = params[position] if position < len(params) else None
    else:
        param = keyword if keyword in (*params, *(p.arg for p in node.args.kwonlyargs)) else None
    if param is None:
        return None
    reads = _parameter_reads(node, param)
    if reads is None:
        return None
    offset = fn.line - node.lineno  # the node's lines count from where its text was cut
    return ParameterReads(fn.symbol, fn.path, {name: line + offset for name, line in reads.items()})


def _parameter_reads(node: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> dict[str, int] | None:
    """`param.x` read where the function surely reads it when it runs to there: in its top-level
    statements (and `with` bodies), not under an `if`, a loop, a `try` or a nested function, and
    in an expression only where it is surely evaluated (the first operand of `and`/`or`, the test
    of a conditional expression); not a name it tests with `hasattr`/`getattr` or sets on it
    anywhere. x and
    the line of its first read; None when the parameter is rebound. vLLM 0.34's
    `wait_for_engine_startup` reads more of its `parallel_config` only `if coordinated_dp and ...`,
    which vllm-omni's diffusion stage passes False, with a namespace of three names."""
    if any(isinstance(n, ast.Name) and n.id == param and not isinstance(n.ctx, ast.Load) for n in walk(node)):
        return None
    # Names tested (`hasattr`, `getattr` with a default) or set on it by the function itself.
    tested = {
        n.args[1].value
        for n in walk(node)
        if isinstance(n, ast.Call)
        and dotted(n.func) in ("hasattr", "getattr", "setattr")
        and len(n.args) >= 2
        and isinstance(n.args[1], ast.Constant)
        and isinstance(n.args[1].value, str)
    }
    tested |= {
        n.attr
        for n in walk(node)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == param
        and not isinstance(n.ctx, ast.Load)
    }
    reads: dict[str, int] = {}
    for expr in _sure_expressions(node.body):
        for current in _sure_nodes(expr):
            if (
                isinstance(current, ast.Attribute)
                and isinstance(current.value, ast.Name)
                and current.value.id == param
                and isinstance(current.ctx, ast.Load)
            ):
                reads[current.attr] = min(current.lineno, reads.get(current.attr, current.lineno))
    return {name: line for name, line in reads.items() if name not in tested and not name.startswith("__")}


def _sure_expressions(body: list[ast.stmt]) -> list[ast.expr]:
    """The expressions of these statements that run whenever the statements do (see
    `_parameter_reads`): a compound statement's test or iterable, not its bodies (but a `with`'s)."""
    out: list[ast.expr] = []
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, *_TRIES)):
            continue
        if isinstance(stmt, (ast.If, ast.While)):
            out.append(stmt.test)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            out.append(stmt.iter)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            out.extend(item.context_expr for item in stmt.items)
            out.extend(_sure_expressions(stmt.body))
        elif isinstance(stmt, ast.Match):
            out.append(stmt.subject)
        else:
            out.extend(child for child in ast.iter_child_nodes(stmt) if isinstance(child, ast.expr))
    return out


def _sure_nodes(expr: ast.expr) -> list[ast.AST]:
    """The nodes of an expression surely evaluated with it: of `a and b`, `a`; of `x if c else y`,
    `c`; of a comprehension, its first iterable; no lambda's body."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = [expr]
    while todo:
        current = todo.pop()
        out.append(current)
        if isinstance(current, ast.BoolOp):
            todo.append(current.values[0])
        elif isinstance(current, ast.IfExp):
            todo.append(current.test)
        elif isinstance(current, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            todo.append(current.generators[0].iter)
        elif not isinstance(current, ast.Lambda):
            todo.extend(ast.iter_child_nodes(current))
    return out


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
