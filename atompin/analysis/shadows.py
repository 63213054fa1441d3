"""shadow-drift: a consumer copy of a provider method whose upstream changed.

A consumer override that never calls `super()` (nor the base explicitly), or a patched-in
replacement that never uses the original, is a whole copy (or one that uses it only in an early
exit, `if cond: return original(...)`, is a copy on every other path): when the provider's own
method gains work between the baseline and the pin (a new call that clears a buffer),
nothing raises and the copy silently skips it. A warning: the reviewer ports the
change or decides it does not apply. The message summarises what changed (calls added
and removed, parameters); the finding's detail holds the upstream diff of that function.
An error when what the override skips sets an attribute that provider code the consumer
class still runs reads (`skipped_setup`): AttributeError there. Needs a baseline; without
one there is nothing to compare.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import difflib
import functools
import hashlib
import json
import re
import textwrap
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace

from atompin.analysis.arity import describe_change
from atompin.analysis.baseline import Baseline
from atompin.analysis.hierarchy import PLAIN_BASES, Hierarchy
from atompin.analysis.limits import parse_limited
from atompin.analysis.method_overrides import OverridePair, override_pairs
from atompin.analysis.moduleinfo import MemberKind
from atompin.analysis.name_sites import NameSearch, NameSite, SiteKind, SiteReceiver
from atompin.analysis.outside import TORCH_MODULE_BASES
from atompin.analysis.provider import ClassRef, ProviderIndex, Resolution, TargetKind
from atompin.analysis.signature import Signature
from atompin.analysis.syntax import dotted, function_body, is_stub, same_body, walk
from atompin.analysis.usage import ConsumerUsage, Ref
from atompin.lines import text_lines
from atompin.model import Finding, Rule, Severity, Site

# Bump when what a cached comparison holds changes meaning.
SHADOW_FORMAT = "atompin-shadow-8"


@dataclass(frozen=True)
class Upstream:
    """One provider function at one provider tree: where it is, its signature and digest."""

    symbol: str
    path: str
    line: int
    signature: Signature | None
    digest: str


def upstream(index: ProviderIndex, symbol: str) -> Upstream | None:
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


def function_node(index: ProviderIndex, fn: Upstream) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
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


# What logs, warns or prints: a copy skipping a changed message skips no work.
_LOG_METHODS = frozenset(
    "debug info warning warn error exception critical fatal log debug_once info_once warning_once".split()
)
_LOGGERS = frozenset(("logger", "_logger", "log", "_log", "LOGGER", "logging", "warnings"))


def _is_logging(node: ast.AST) -> bool:
    """Is `node` a call that only logs: `logger.warning(...)`, `logging.info(...)`,
    `warnings.warn(...)`, `print(...)`?"""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id == "print"
    return (
        isinstance(func, ast.Attribute)
        and func.attr in _LOG_METHODS
        and dotted(func.value).rpartition(".")[2] in _LOGGERS
    )


def _calls(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[dict[str, set[str]], Counter[str]]:
    """Each callee the body calls ("name()"), with the keywords its calls pass, and how many calls
    it makes of each callee by its last name (`_last`). Calls that only log are left out, and so
    is what their arguments call (a message's `repr()`)."""
    keywords: dict[str, set[str]] = {}
    counts: Counter[str] = Counter()
    todo: list[ast.AST] = list(function_body(node))
    while todo:
        child = todo.pop()
        if _is_logging(child):
            continue
        if isinstance(child, ast.Call):
            name = dotted(child.func) or (child.func.attr if isinstance(child.func, ast.Attribute) else "")
            if name:
                keywords.setdefault(f"{name}()", set()).update(k.arg for k in child.keywords if k.arg)
                counts[_last(f"{name}()")] += 1
        todo.extend(ast.iter_child_nodes(child))
    return keywords, counts


_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.Assert, ast.Delete)


def _plain_statements(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Counter[str]:
    """The body's statements that call nothing (an assignment, a `return`, an `if`'s or a `while`'s
    test; a bare annotation aside), each as its syntax: what a change told by calls also did
    (vLLM 0.29's `grammar_bitmask` no longer tests `enable_in_reasoning` there)."""
    out: Counter[str] = Counter()
    for child in walk(ast.Module(function_body(node), [])):
        part: ast.AST | None = None
        if isinstance(child, _SIMPLE) and not (isinstance(child, ast.AnnAssign) and child.value is None):
            part = child
        elif isinstance(child, (ast.If, ast.While)):
            part = child.test
        if part is not None and not any(isinstance(n, ast.Call) for n in walk(part)):
            out[ast.dump(part, include_attributes=False)] += 1
    return out


class _WithoutLogging(ast.NodeTransformer):
    """Drops statements that only log (`logger.info(...)` on its own line)."""

    def visit_Expr(self, node: ast.Expr) -> ast.AST | None:
        return None if _is_logging(node.value) else node


def _same_work(a: ast.FunctionDef | ast.AsyncFunctionDef, b: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Do two functions' bodies do the same, but for what they log (and positions, comments and
    the docstring)? vLLM 0.30's `Platform.import_kernels` only formats its warning otherwise."""
    if same_body(a, b):
        return True
    dumps = [
        ast.dump(_WithoutLogging().visit(ast.Module(copy.deepcopy(function_body(f)), [])), include_attributes=False)
        for f in (a, b)
    ]
    return dumps[0] == dumps[1]


def _keyword_changes(new: dict[str, set[str]], old: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The callees both bodies call whose calls pass another set of keywords, each change as
    (callee, "+a" or "-b") (vLLM 0.27 passes `use_all2all=` to `init_model_parallel_group` in
    `initialize_model_parallel`)."""
    out = []
    for name in sorted(new.keys() & old.keys()):
        out += [(name, f"+{k}") for k in sorted(new[name] - old[name])]
        out += [(name, f"-{k}") for k in sorted(old[name] - new[name])]
    return out


def _last(callee: str) -> str:
    """A callee's last name: `GateLinear` of "layers.GateLinear()" (a copy may import it otherwise)."""
    return callee[:-2].rpartition(".")[2]


@dataclass(frozen=True)
class UpstreamChange:
    """What changed in one provider function between the baseline and the pin: a summary ("" when
    there is nothing to port: the pin's version is a stub, or only comments, spacing or what it
    logs changed), the unified diff, and the calls the summary tells of."""

    summary: str = ""
    detail: str = ""
    added: tuple[str, ...] = ()  # callees ("name()") it calls now and did not
    removed: tuple[str, ...] = ()
    keywords: tuple[tuple[str, str], ...] = ()  # (callee, "+k" / "-k") of callees called in both
    signature_changed: bool = False
    # Callees (by last name) it calls more or fewer times than it did: (name, before, now).
    counts: tuple[tuple[str, int, int], ...] = ()
    # Its statements calling nothing that it did not have (`_plain_statements`), as their syntax.
    plain: tuple[str, ...] = ()
    # Module globals it sets (`global _ETP; _ETP = ...`) that it did not, each with the first other
    # function of its module reading it: (name, "function at path:line").
    globals_set: tuple[tuple[str, str], ...] = ()

    def ported_in(self, copy: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Does the copy do what changed already? Only a change told by calls alone can be: none
        of its parameters changed, and the copy makes at least as many calls of each callee the
        function now calls more often (by its last name), at most as many of each it calls less
        often, passes each keyword added and none dropped, and has each statement calling nothing
        that the function gained (`_plain_statements`). aleph-alpha-inference's Kolibri
        block copies vLLM 0.31's `GateLinear` router already; vllm-ascend's copy of DeepSeek's
        `forward` gathers the states after its loop as vLLM 0.25's does, but not inside it."""
        if self.signature_changed or not (self.added or self.removed or self.keywords):
            return False
        if self.plain and not set(self.plain) <= _plain_statements(copy).keys():
            return False  # it also changed what it assigns, returns or tests
        calls, counts = _calls(copy)
        if any(counts[name] < now if now > before else counts[name] > now for name, before, now in self.counts):
            return False
        made: dict[str, set[str]] = {}
        for callee, keywords in calls.items():
            made.setdefault(_last(callee), set()).update(keywords)
        for callee, change in self.keywords:
            passed = made.get(_last(callee))
            if passed is None or (change[1:] in passed) != (change[0] == "+"):
                return False
        return True


def upstream_change(
    pin: ProviderIndex, base: ProviderIndex, now: Upstream, before: Upstream, label: str
) -> UpstreamChange:
    """What changed in one function between the baseline and the pin."""
    notes: list[str] = []
    signature_changed = False
    if now.signature is not None and before.signature is not None:
        parameters = describe_change(before.signature, now.signature)
        if not parameters.unchanged:
            notes.append(parameters.render())
            signature_changed = True
    new, old = function_node(pin, now), function_node(base, before)
    if new is not None and (is_stub(new[0]) or (old is not None and _same_work(new[0], old[0]))):
        return UpstreamChange()  # a stub to implement, or only comments, spacing or messages changed
    if new is None or old is None:
        return UpstreamChange(
            "; ".join(notes) or "its body changed (no call or parameter changed)", signature_changed=signature_changed
        )
    (calls_now, counts_now), (calls_before, counts_before) = _calls(new[0]), _calls(old[0])
    added, removed = sorted(calls_now.keys() - calls_before.keys()), sorted(calls_before.keys() - calls_now.keys())
    keywords = _keyword_changes(calls_now, calls_before)
    if added:
        notes.append(f"calls added: {', '.join(added)}")
    if removed:
        notes.append(f"calls removed: {', '.join(removed)}")
    if keywords:
        by_callee: dict[str, list[str]] = {}
        for callee, sign in keywords:
            by_callee.setdefault(callee, []).append(f"{sign}=")
        changed = [f"{callee[:-1]}{', '.join(changes)})" for callee, changes in by_callee.items()]
        notes.append(f"keywords passed changed: {', '.join(changed)}")
    a, b = _source_lines(old[0], old[1]), _source_lines(new[0], new[1])
    detail = "".join(
        difflib.unified_diff(a, b, f"{before.path}:{before.line} ({label})", f"{now.path}:{now.line} (pin)")
    )
    return UpstreamChange(
        "; ".join(notes) or "its body changed (no call or parameter changed)",
        detail,
        tuple(added),
        tuple(removed),
        tuple(keywords),
        signature_changed,
        tuple(
            (name, before_count, now_count)
            for name in sorted(counts_now.keys() | counts_before.keys())
            if (before_count := counts_before[name]) != (now_count := counts_now[name])
        ),
        tuple(sorted((_plain_statements(new[0]) - _plain_statements(old[0])).keys())),
        _globals_read(pin, now, sorted(_globals_set(new[0]) - _globals_set(old[0]))),
    )


def _globals_set(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The module globals a function assigns (`global _ETP` and `_ETP = ...`)."""
    declared = {name for child in walk(node) if isinstance(child, ast.Global) for name in child.names}
    return {n.id for n in walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in declared}


def _globals_read(index: ProviderIndex, fn: Upstream, names: list[str]) -> tuple[tuple[str, str], ...]:
    """Of the globals `names` that function `fn` sets, those another function of its module reads,
    each with the first such function. vLLM 0.30's `initialize_model_parallel` sets `_ETP`, which
    `get_etp_group()` asserts is set; arctic-inference replaces the first with a copy of 0.26's."""
    if not names:
        return ()
    try:
        tree = parse_limited(index.tree.read_text(fn.path))
    except (OSError, KeyError, SyntaxError, ValueError):
        return ()
    out: dict[str, str] = {}
    for node in walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.lineno == fn.line:
            continue
        for child in walk(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load) and child.id in names:
                out.setdefault(child.id, f"{node.name} at {fn.path}:{node.lineno}")
    return tuple((name, out[name]) for name in names if name in out)


def _writes(node: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Does a copy set `name` on the provider's module (`parallel_state._ETP = ...`, or as a global
    of its own module copied from the provider's)?"""
    return any(
        (isinstance(child, ast.Attribute) and child.attr == name and isinstance(child.ctx, ast.Store))
        or (isinstance(child, ast.Global) and name in child.names)
        for child in walk(node)
    )


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
    search: NameSearch | None = None,
    refers: Callable[[str], bool] = lambda name: True,
    copy_at: Callable[[str, int], ast.FunctionDef | ast.AsyncFunctionDef | None] = lambda path, line: None,
) -> list[Finding]:
    """`search`: the provider's name search, to find where the provider reads what an overridden
    method newly sets (`skipped_setup`); without it, every shadow-drift finding is a warning.
    `refers`: whether the consumer's code names a class besides its definition (by default,
    every one). `copy_at`: the consumer's function defined in a file at a line (by default,
    none: a copy is not asked whether it does what changed upstream already)."""
    if baseline is None:
        return []
    findings: list[Finding] = []
    copies: list[tuple[OverridePair, Finding]] = []
    for pair in override_pairs(hierarchy):
        if hierarchy.calls_original(pair.owner.name, pair.method):
            continue
        if any(d.split(".")[-1] == "abstractmethod" for d in pair.base_signature.decorators):
            continue  # implementing an abstract method is not copying one
        finding = _shadow(
            index,
            baseline,
            pair.base_symbol,
            pair.symbol,
            pair.site,
            "overrides",
            "calling it",
            functools.partial(copy_at, pair.owner.path, pair.method.line),
        )
        if finding is not None:
            copies.append((pair, finding))
    unset = skipped_setup(hierarchy, search, baseline, [pair for pair, _ in copies]) if search is not None else {}
    for pair, finding in copies:
        reads = unset.get((pair.owner.name, pair.method.name))
        if reads:
            name, site = reads[0]
            more = f" (and {len(reads) - 1} more such read(s))" if len(reads) > 1 else ""
            message = (
                f"{finding.message}. Since {baseline.label} it sets self.{name}, which "
                f"{site.cls}.{site.function} ({site.where}) reads, and {pair.cls.symbol} still runs that"
                f"{more}: AttributeError when it runs, as the override never sets it"
            )
            made = _made(hierarchy, pair, refers)
            if not made:
                message += " (but no class running it is seen made by the consumer or handed to the provider)"
            finding = replace(finding, severity=Severity.ERROR if made else Severity.WARNING, message=message)
        findings.append(finding)
    for replacement in usage.contact.replacements:
        # A copy skips what the original does since; a replacement reading none of its
        # arguments does none of it anyway.
        if (replacement.calls_original and replacement.delegates_when is None) or replacement.discards:
            continue
        owner = first(replacement.owner)
        if owner is None or owner.target is None:
            continue
        res = index.getattr(owner.target, replacement.attr)
        if not res.found or res.target is None or res.target.kind is not TargetKind.FUNCTION:
            continue
        how = "using the original"
        if replacement.delegates_when is not None:
            where, test, exits = replacement.delegates_when
            how += f" but when `{textwrap.shorten(test, 80, placeholder='…')}` holds ({where}"
            how += f", or one of {exits - 1} later exit(s) handing it on)" if exits > 1 else ")"
        finding = _shadow(
            index,
            baseline,
            res.symbol,
            res.symbol,
            replacement.site,
            "replaces",
            how,
            functools.partial(copy_at, replacement.path, replacement.line),
        )
        if finding is not None:
            findings.append(finding)
    return findings


def _shadow(
    index: ProviderIndex,
    baseline: Baseline,
    original: str,
    symbol: str,
    site: Site,
    verb: str,
    how: str,
    read_copy: Callable[[], ast.FunctionDef | ast.AsyncFunctionDef | None],
) -> Finding | None:
    """The finding for a copy (`read_copy()` reads its syntax tree) of the provider function
    `original`, when that changed since the baseline and the copy does not do what changed."""
    now, before = upstream(index, original), upstream(baseline.index, original)
    if now is None or before is None or now.digest == before.digest:
        return None
    key = (
        "shadow:"
        + hashlib.sha256(
            json.dumps(
                [
                    SHADOW_FORMAT,
                    original,
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
    change = _cached_change(index.cache.get_raw(key))
    if change is None:
        change = upstream_change(index, baseline.index, now, before, baseline.label)
        index.cache.put_raw(key, json.dumps(dataclasses.asdict(change)).encode())
    if not change.summary:
        return None
    node = read_copy() if change.added or change.removed or change.keywords or change.globals_set else None
    unset = [(name, reader) for name, reader in change.globals_set if node is None or not _writes(node, name)]
    if node is not None and not unset and change.ported_in(node):
        return None
    message = (
        f"{verb} {original} without {how}, and {original} changed {baseline.since}: {change.summary}. The copy "
        "silently skips the new behaviour: port the change, or call the original"
    )
    if unset:
        read = ", ".join(f"{name} (read by {reader})" for name, reader in unset)
        plural = len(unset) > 1
        message += (
            f". Since {baseline.label} it sets the module's {'globals' if plural else 'global'} {read}: the copy "
            f"leaves {'them' if plural else 'it'} unset"
        )
    return Finding(Rule.SHADOW_DRIFT, Severity.WARNING, symbol, (site,), message, detail=change.detail)


def _cached_change(data: bytes | None) -> UpstreamChange | None:
    """A cached `UpstreamChange`; None when absent or damaged (then it is worked out again)."""
    if data is None:
        return None
    try:
        fields = json.loads(data)
        change = UpstreamChange(
            str(fields["summary"]),
            str(fields["detail"]),
            tuple(map(str, fields["added"])),
            tuple(map(str, fields["removed"])),
            tuple((str(callee), str(change)) for callee, change in fields["keywords"]),
            bool(fields["signature_changed"]),
            tuple((str(name), int(before), int(now)) for name, before, now in fields["counts"]),
            tuple(map(str, fields["plain"])),
            tuple((str(name), str(reader)) for name, reader in fields["globals_set"]),
        )
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        return None
    return change


# -- what an overridden method newly sets, read by provider code the consumer still runs ------


def skipped_setup(
    hierarchy: Hierarchy, search: NameSearch, baseline: Baseline, pairs: list[OverridePair]
) -> dict[tuple[str, str], list[tuple[str, NameSite]]]:
    """For overrides that never call the provider method they override (`pairs`, whose upstream
    changed since the baseline): the attributes that method sets on `self` at the pin and not at
    the baseline (no class of its order had them there), each with the provider reads of
    `self.name` in methods the consumer class still runs (`Hierarchy.runs`). vLLM 0.30's
    `Scheduler.__init__` sets `grammar_compile_error_reqs`, which `schedule()` reads every step;
    vllm-rbln 0.11's scheduler overrides `__init__` without calling it, and inherits `schedule`.
    Left out: a name the consumer writes anywhere (it may set it), one any class of the order
    defines in its body or sets in another method (text of its file), and a class of the order
    with `__getattr__`. Keyed by (the overriding class, the method)."""
    wanted: dict[tuple[str, str], tuple[OverridePair, set[str]]] = {}
    for pair in pairs:
        names = _new_attributes(hierarchy, baseline, pair)
        if names:
            wanted[(pair.owner.name, pair.method.name)] = (pair, names)
    asked = sorted({name for _, names in wanted.values() for name in names})
    sites = search.find(asked) if asked else {}
    out: dict[tuple[str, str], list[tuple[str, NameSite]]] = {}
    for key, (pair, names) in wanted.items():
        reads = [
            (name, site) for name in sorted(names) for site in sites.get(name, []) if _runs_read(hierarchy, pair, site)
        ]
        if reads:
            out[key] = reads
    return out


def _made(hierarchy: Hierarchy, pair: OverridePair, refers: Callable[[str], bool]) -> bool:
    """May an instance of a class the override stands in exist: one handed to the provider, or
    named in the consumer's code besides its definition (made, aliased, patched in)?
    (tpu-inference's `DisaggEngineCore` is named only in a log message: its tests make one.)"""
    handed = {h.target for h in hierarchy.usage.contact.handovers}
    return any(c.name in handed for c in pair.classes) or any(refers(c.name.rpartition(".")[2]) for c in pair.classes)


def _new_attributes(hierarchy: Hierarchy, baseline: Baseline, pair: OverridePair) -> set[str]:
    """What the overridden provider method sets on `self` at the pin and did not at the baseline,
    that nothing else of the consumer class's order may provide (see `skipped_setup`)."""
    index = hierarchy.index
    names: set[str] = set()
    bodies: dict[str, set[int]] = {}  # file -> the lines of the methods of the chain there
    for holder in _super_chain(hierarchy, pair):
        symbol = f"{holder}.{pair.method.name}"
        now, before = upstream(index, symbol), upstream(baseline.index, symbol)
        new = function_node(index, now) if now is not None else None
        old = function_node(baseline.index, before) if before is not None else None
        if now is None or new is None or old is None:
            return set()  # a link not there at the baseline: what it set then is not known
        names |= _self_stores(new[0]) - _self_stores(old[0])
        end = now.line + new[0].end_lineno - new[0].lineno  # type: ignore[operator]
        bodies.setdefault(now.path, set()).update(range(now.line, end + 1))
    then = baseline.members(pair.base) or {}
    names = {n for n in names if n not in then and not n.startswith("__") and not hierarchy.consumer_mentions(n)}
    if not names:
        return set()
    for cls in pair.classes:
        for node in hierarchy.mro(cls.name):
            consumer = hierarchy.consumer(node)
            if consumer is not None:
                if "*" in consumer.assigned:
                    return set()
                names -= {*consumer.assigned, *consumer.attributes, *consumer.bound}
                continue
            if isinstance(node, str):
                if node not in PLAIN_BASES and node not in TORCH_MODULE_BASES:
                    return set()  # an outside base: what it provides is not known
                names -= TORCH_MODULE_BASES.get(node, frozenset())
                continue
            info = hierarchy.provider(node)
            if info is None or info.has_getattr or info.sets_computed or not isinstance(node, ClassRef):
                return set()
            names = _only_set_there(hierarchy, node, names, bodies)
    return names


def _super_chain(hierarchy: Hierarchy, pair: OverridePair) -> list[ClassRef]:
    """The provider classes whose `pair.method` the override skips: the one it overrides, and each
    next in the class's order whose method the one before calls as `super().method(...)`, up to one
    the override may run itself by calling a base explicitly (`Hierarchy.explicitly_reached`)
    (vllm-rbln overrides `UnitaryKVCacheCoordinator.__init__`, which hands on to
    `KVCacheCoordinator.__init__`, where vLLM 0.30 sets `num_reprefillable_tokens`)."""
    name = pair.method.name
    order = [node for node in hierarchy.mro(pair.cls.name) if isinstance(node, ClassRef)]
    chain = [pair.base]
    ran = hierarchy.explicitly_reached(pair.method)  # `Base.m(self)` calls of the override may run those
    while True:
        info = hierarchy.provider(chain[-1])
        if info is None or not any(c.receiver == "super" and c.name == name == c.method for c in info.self_calls):
            return chain
        after = order[order.index(chain[-1]) + 1 :] if chain[-1] in order else []
        following = next((n for n in after if (i := hierarchy.provider(n)) is not None and name in i.members), None)
        if following is None or following in chain or following in ran:
            return chain
        chain.append(following)


def _only_set_there(hierarchy: Hierarchy, node: ClassRef, names: set[str], bodies: dict[str, set[int]]) -> set[str]:
    """Of `names`, those that are no class-body member of provider class `node` and that its file
    sets on `self` (`self.name = ...`, `setattr(self, "name", ...)`) only in the lines of the
    skipped methods (`bodies`). The file is read once for all of them."""
    info = hierarchy.provider(node)
    kept = {n for n in names if info is None or (m := info.members.get(n)) is None or m.kind is MemberKind.INSTANCE}
    file = hierarchy.index.module_path(node.module)
    if not kept or not file:
        return set()
    text = hierarchy.index.tree.read(file)
    alternatives = b"|".join(re.escape(n.encode()) for n in sorted(kept))
    stores = re.compile(
        rb"\bself\.("
        + alternatives
        + rb")\s*(?::[^=\n]*)?=(?!=)|setattr\(\s*self\s*,\s*[\"']("
        + alternatives
        + rb")[\"']"
    )
    inside = bodies.get(file, set())
    for match in stores.finditer(text):
        if text.count(b"\n", 0, match.start()) + 1 not in inside:
            kept.discard((match.group(1) or match.group(2)).decode())
    return kept


def _self_stores(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The attributes a method assigns on its first parameter (`self.x = ...`, `self.x: T = ...`,
    in a tuple target too; not `self.x += ...`, which needs it set)."""
    args = [*node.args.posonlyargs, *node.args.args]
    if not args:
        return set()
    me = args[0].arg
    augmented = {id(n.target) for n in walk(node) if isinstance(n, ast.AugAssign)}
    return {
        n.attr
        for n in walk(node)
        if isinstance(n, ast.Attribute)
        and isinstance(n.ctx, ast.Store)
        and id(n) not in augmented
        and isinstance(n.value, ast.Name)
        and n.value.id == me
    }


def _runs_read(hierarchy: Hierarchy, pair: OverridePair, site: NameSite) -> bool:
    """Is this a plain read of `self.name` in a provider method that runs for one of the classes
    the override stands in (not tested with `hasattr` or a `getattr` default, nor under a flag)?"""
    if site.kind is SiteKind.DEF or site.receiver is not SiteReceiver.SELF or site.guarded or site.flag:
        return False
    if not site.cls or not site.function:
        return False
    holder = ClassRef(hierarchy.index.tree.module_name(site.path)[0], site.cls)
    return any(
        holder in hierarchy.mro(cls.name) and hierarchy.runs(cls.name, site.function, holder) for cls in pair.classes
    )
