"""shadow-drift: a consumer copy of a provider method whose upstream changed.

A consumer override that never calls `super()` (nor the base explicitly), or a patched-in
replacement that never uses the original, is a whole copy: when the provider's own
method gains work between the baseline and the pin (a new call that clears a buffer),
nothing raises and the copy silently skips it. Warning only: the reviewer ports the
change or decides it does not apply. The message summarises what changed (calls added
and removed, parameters); the finding's detail holds the upstream diff of that function.
Needs a baseline; without one there is nothing to compare.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from atompin.analysis.arity import describe_change
from atompin.analysis.baseline import Baseline
from atompin.analysis.hierarchy import Hierarchy
from atompin.analysis.limits import parse_limited
from atompin.analysis.method_overrides import override_pairs
from atompin.analysis.provider import ProviderIndex, Resolution, TargetKind
from atompin.analysis.signature import Signature
from atompin.analysis.syntax import dotted, function_body, is_stub, same_body, walk
from atompin.analysis.usage import ConsumerUsage, Ref
from atompin.lines import text_lines
from atompin.model import Finding, Rule, Severity, Site

# Bump when what a cached comparison holds changes meaning.
SHADOW_FORMAT = "atompin-shadow-2"


@dataclass(frozen=True)
class Upstream:
    """One provider function at one provider tree: where it is, its signature and digest."""

    symbol: str
    path: str
    line: int
    signature: Signature | None
    digest: str


def _upstream(index: ProviderIndex, symbol: str) -> Upstream | None:
    """The function `symbol` names in `index`: its file and line, signature and body digest."""
    res = index.resolve_symbol(symbol)
    target = res.target
    if not res.found or target is None or target.kind is not TargetKind.FUNCTION:
        return None
    defined = target.symbol  # where it is defined (a base class for an inherited method)
    module, _, qualname = defined.partition(":")
    info = index.module(module)
    if info is None:
        return None
    head, _, attr = qualname.rpartition(".")
    if head:
        cls = info.classes.get(head)
        member = cls.members.get(attr) if cls is not None else None
        line, digest = (member.line, member.digest) if member is not None else (0, "")
    else:
        binding = info.bindings.get(qualname)
        line, digest = (binding.line, binding.digest) if binding is not None else (0, "")
    if not digest:
        return None
    return Upstream(defined, index.module_path(module), line, target.signature, digest)


def _function_node(index: ProviderIndex, fn: Upstream) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
    """The function's syntax tree and the source it was parsed from: its own lines (found by
    indentation) when they parse alone, else the whole file."""
    try:
        source = index.tree.read_text(fn.path)
    except (OSError, KeyError):
        return None
    lines = text_lines(source)
    if 0 < fn.line <= len(lines):
        first = lines[fn.line - 1]
        indent = len(first) - len(first.lstrip())
        end = fn.line
        while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
            end += 1
        text = "".join(lines[fn.line - 1 : end])
        try:
            tree = parse_limited(textwrap.dedent(text))  # line numbers match `text`'s
        except (SyntaxError, ValueError):
            tree = None
        if tree is not None and tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return tree.body[0], text
    try:
        whole = parse_limited(source)
    except (SyntaxError, ValueError):
        return None
    for node in walk(whole):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == fn.line:
            return node, source
    return None


def _calls(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    out: set[str] = set()
    for child in walk(ast.Module(body=function_body(node), type_ignores=[])):
        if isinstance(child, ast.Call):
            name = dotted(child.func) or (child.func.attr if isinstance(child.func, ast.Attribute) else "")
            if name:
                out.add(f"{name}()")
    return out


def upstream_change(
    pin: ProviderIndex, base: ProviderIndex, now: Upstream, before: Upstream, label: str
) -> tuple[bool, str, str]:
    """What changed in one function between the baseline and the pin: whether there is nothing
    to port (the pin's version is a stub, or only comments changed), a summary, and a unified diff."""
    notes: list[str] = []
    if now.signature is not None and before.signature is not None:
        change = describe_change(before.signature, now.signature)
        if not change.unchanged:
            notes.append(change.render())
    new, old = _function_node(pin, now), _function_node(base, before)
    if new is not None and (is_stub(new[0]) or (old is not None and same_body(new[0], old[0]))):
        return True, "", ""  # a stub to implement, or only comments and spacing changed
    detail = ""
    if new is not None and old is not None:
        added, removed = sorted(_calls(new[0]) - _calls(old[0])), sorted(_calls(old[0]) - _calls(new[0]))
        if added:
            notes.append(f"calls added: {', '.join(added)}")
        if removed:
            notes.append(f"calls removed: {', '.join(removed)}")
        a, b = _source_lines(old[0], old[1]), _source_lines(new[0], new[1])
        detail = "".join(
            difflib.unified_diff(a, b, f"{before.path}:{before.line} ({label})", f"{now.path}:{now.line} (pin)")
        )
    summary = "; ".join(notes) or "its body changed (no call or parameter changed)"
    return False, summary, detail


def _source_lines(node: ast.FunctionDef | ast.AsyncFunctionDef, source: str) -> list[str]:
    """The function's lines, each ending in `\n`: a file whose line ends changed (`\r\n`
    since the baseline) shows only what changed in the code."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return [line.rstrip("\r\n") + "\n" for line in text_lines(source)[first - 1 : node.end_lineno]]


def check_shadows(
    usage: ConsumerUsage,
    index: ProviderIndex,
    hierarchy: Hierarchy,
    first: Callable[[tuple[Ref, ...]], Resolution | None],
    baseline: Baseline | None,
) -> list[Finding]:
    if baseline is None:
        return []
    findings: list[Finding] = []
    for pair in override_pairs(hierarchy):
        if hierarchy.calls_original(pair.owner.name, pair.method):
            continue
        if any(d.split(".")[-1] == "abstractmethod" for d in pair.base_signature.decorators):
            continue  # implementing an abstract method is not copying one
        finding = _shadow(index, baseline, pair.base_symbol, pair.symbol, pair.site, "overrides", "calling it")
        if finding is not None:
            findings.append(finding)
    for replacement in usage.contact.replacements:
        if replacement.calls_original:
            continue
        owner = first(replacement.owner)
        if owner is None or owner.target is None:
            continue
        res = index.getattr(owner.target, replacement.attr)
        if not res.found or res.target is None or res.target.kind is not TargetKind.FUNCTION:
            continue
        finding = _shadow(index, baseline, res.symbol, res.symbol, replacement.site, "replaces", "using the original")
        if finding is not None:
            findings.append(finding)
    return findings


def _shadow(
    index: ProviderIndex, baseline: Baseline, upstream: str, symbol: str, site: Site, verb: str, how: str
) -> Finding | None:
    now, before = _upstream(index, upstream), _upstream(baseline.index, upstream)
    if now is None or before is None or now.digest == before.digest:
        return None
    key = (
        "shadow:"
        + hashlib.sha256(
            json.dumps(
                [
                    SHADOW_FORMAT,
                    upstream,
                    now.path,
                    now.line,
                    now.digest,
                    before.path,
                    before.line,
                    before.digest,
                    baseline.label,
                ]
            ).encode()
        ).hexdigest()
    )
    cached = _cached_change(index.cache.get_raw(key))
    if cached is not None:
        stub, summary, detail = cached
    else:
        stub, summary, detail = upstream_change(index, baseline.index, now, before, baseline.label)
        index.cache.put_raw(key, json.dumps([stub, summary, detail]).encode())
    if stub:
        return None
    message = (
        f"{verb} {upstream} without {how}, and {upstream} changed {baseline.since}: {summary}. The copy "
        "silently skips the new behaviour: port the change, or call the original"
    )
    return Finding(Rule.SHADOW_DRIFT, Severity.WARNING, symbol, (site,), message, detail=detail)


def _cached_change(data: bytes | None) -> tuple[bool, str, str] | None:
    """A cached (stub, summary, detail); None when absent or damaged (then it is worked out again)."""
    if data is None:
        return None
    try:
        stub, summary, detail = json.loads(data)
    except (ValueError, TypeError, UnicodeDecodeError):
        return None
    if isinstance(stub, bool) and isinstance(summary, str) and isinstance(detail, str):
        return stub, summary, detail
    return None
