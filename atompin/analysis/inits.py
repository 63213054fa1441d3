"""The `__init__` a call of a consumer class runs (`Cls(...)`), when the provider writes it: the
first class of the consumer class's order that defines `__init__` is a provider class, or the
class is a standard-library `@dataclass` whose generated `__init__` takes the fields of provider
dataclasses in its order (vllm-ascend's `AscendCommonAttentionMetadata(CommonAttentionMetadata)`,
called with a field vLLM 0.30 removed). Anything in the way that may make the instance otherwise
(a consumer `__init__` or `__new__`, a metaclass, another library's generated `__init__`, an
outside base, a patched `__init__`) leaves the call unjudged: `super().__init__(...)` in the
consumer's own `__init__` is judged as any call through `super()` is. A consumer `__init__` that
first hands every argument on unchanged (`def __init__(self, *args, **kwargs):
super().__init__(*args, **kwargs)`, then its own setup, a pattern of ATOM, vllm-ascend,
vllm-omni, vllm-rbln, tpu-inference, vllm-spyre and vllm-kunlun) is passed through: the call's
arguments are the next class's.

A consumer dataclass whose order's fields put a field without a default after one with a default
(vLLM 0.28's `InputBatch` gained `max_query_len: int = ...`, before vllm-ascend 0.23's own
`seq_lens_np`) cannot be defined: `@dataclass` raises TypeError when its module is imported
(`check_dataclass_fields`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from atompin.analysis.arity import describe_change
from atompin.analysis.baseline import Baseline
from atompin.analysis.conditions import LIVE, Judgement, Reach
from atompin.analysis.dataclass_init import FieldLayer, generated_init, outside_layer, writes_init
from atompin.analysis.hierarchy import PLAIN_BASES, ConsumerRef, Hierarchy, is_method
from atompin.analysis.provider import ClassRef
from atompin.analysis.signature import Param, ParamKind, Signature
from atompin.analysis.usage import Condition
from atompin.model import Finding, Rule, Severity, Site


@dataclass(frozen=True)
class InitRun:
    """What a call of a consumer class runs: `owner`'s `__init__` (a provider class's own or the
    one its dataclass decorator writes), or with `dataclass` the `__init__` the decorator writes
    for that consumer dataclass from its order's fields (`owner`: the first provider dataclass
    contributing fields)."""

    owner: ClassRef
    signature: Signature
    dataclass: str = ""
    # The consumer classes whose `__init__` runs first and hands every argument on to it.
    through: tuple[str, ...] = ()


def init_run(hierarchy: Hierarchy, name: str) -> InitRun | None:
    """The provider-written `__init__` a call of consumer class `name` runs; None when the
    consumer writes it, or it is not known for sure. Found once per class and hierarchy."""
    memo: dict[str, InitRun | None] = hierarchy.memo.setdefault("init_run", {})
    if name not in memo:
        memo[name] = _init_run(hierarchy, name)
    return memo[name]


def _init_run(hierarchy: Hierarchy, name: str) -> InitRun | None:
    through: list[str] = []
    run = _first_init(hierarchy, name, through)
    if run is None or not through:
        return run
    # The keywords those classes take out first are theirs: the call may pass them too.
    popped = [key for cls in through for key in hierarchy.classes[cls].init_pops]
    return replace(run, through=tuple(through), signature=_taking(run.signature, popped))


def _taking(signature: Signature, keys: list[str]) -> Signature:
    """`signature` taking the keyword-only parameters `keys` too (each with a default), before
    its `**` parameter if any."""
    names = {p.name for p in signature.params}
    extra = [Param(key, ParamKind.KEYWORD_ONLY, has_default=True) for key in dict.fromkeys(keys) if key not in names]
    if not extra:
        return signature
    params = list(signature.params)
    at = next((i for i, p in enumerate(params) if p.kind is ParamKind.VAR_KEYWORD), len(params))
    return replace(signature, params=(*params[:at], *extra, *params[at:]))


def _first_init(hierarchy: Hierarchy, name: str, through: list[str]) -> InitRun | None:
    """The first `__init__` of the order that takes the call's arguments (`_init_run`); the
    consumer classes met first whose `__init__` hands them all on are added to `through`."""
    for node in hierarchy.mro(name):
        if isinstance(node, str):
            if node in PLAIN_BASES:
                continue
            return None  # an outside base may define __init__
        if isinstance(node, ConsumerRef):
            cls = hierarchy.consumer(node)
            if cls is None or "__new__" in cls.bound or ("__init__" in cls.bound and not cls.init_hands_on):
                return None
            if cls.init_hands_on:  # what the call passes is what the next class's __init__ takes
                through.append(cls.name)
                if cls.writes_init:
                    return None
                continue
            if cls.writes_init:
                run = _consumer_dataclass(hierarchy, cls.name) if cls.fields is not None else None
                return run if run is not None and misplaced_field(run.signature) is None else None
            continue
        if f"{node}.__init__" in hierarchy.patched or f"{node}.__new__" in hierarchy.patched:
            return None  # the consumer's replacement runs
        info = hierarchy.provider(node)
        if info is None or info.opaque or "__new__" in info.members:
            return None
        if any(writes_init(d) for d in info.decorators):
            generated = hierarchy.index.dataclass_init(node)
            return InitRun(node, generated) if generated is not None else None
        member = info.members.get("__init__")
        if member is None:
            continue
        if not is_method(member) or member.signature is None:
            return None
        return InitRun(node, member.signature)
    return None


def _consumer_dataclass(hierarchy: Hierarchy, name: str) -> InitRun | None:
    """The `__init__` `@dataclass` writes for consumer class `name` from the fields of every
    dataclass in its order, when a provider dataclass gives some of them (else the consumer
    writes all it takes: no contact). Found once per class and hierarchy (the check of its
    definition and of its calls both ask)."""
    memo: dict[str, InitRun | None] = hierarchy.memo.setdefault("consumer_dataclass", {})
    if name not in memo:
        memo[name] = _generated_for(hierarchy, name)
    return memo[name]


def _generated_for(hierarchy: Hierarchy, name: str) -> InitRun | None:
    order = hierarchy.mro(name)
    index = hierarchy.index
    owner = next((n for n in order if isinstance(n, ClassRef) and index.field_layer(n).fields is not None), None)
    if owner is None:
        return None
    layers: list[FieldLayer] = []
    for node in reversed(order):
        if isinstance(node, str):
            layers.append(outside_layer(node))
        elif isinstance(node, ConsumerRef):
            cls = hierarchy.consumer(node)
            if cls is None or (cls.fields is None and cls.writes_init):
                return None
            layers.append(FieldLayer(cls.fields, frozenset(cls.bound)))
        else:
            layers.append(index.field_layer(node))
    signature = generated_init(layers)
    return InitRun(owner, signature, dataclass=name) if signature is not None else None


def misplaced_field(init: Signature) -> tuple[str, str] | None:
    """(a field without a default, the defaulted one before it) when a generated `__init__` would
    take them in that order, which `@dataclass` refuses (keyword-only fields aside); else None."""
    defaulted = ""
    for param in init.params[1:]:
        if param.kind is not ParamKind.POSITIONAL_OR_KEYWORD:
            continue
        if param.has_default:
            defaulted = param.name
        elif defaulted:
            return param.name, defaulted
    return None


def check_dataclass_fields(
    hierarchy: Hierarchy,
    baseline: Baseline | None = None,
    judge: Callable[[Sequence[Condition]], Judgement] | None = None,
) -> list[Finding]:
    """arity-drift for consumer dataclasses that cannot be defined at this provider: the fields of
    the provider dataclasses in their order put a defaulted field before one of theirs without a
    default. An error; a warning when that was so at the baseline too (the module does not import
    where the consumer works: code that does not run)."""
    findings = []
    for cls in hierarchy.classes.values():
        if cls.fields is None or cls.muted:
            continue
        run = _consumer_dataclass(hierarchy, cls.name)
        problem = misplaced_field(run.signature) if run is not None else None
        if run is None or problem is None:
            continue
        judgement = judge(cls.when) if judge is not None and cls.when else LIVE
        if judgement.reach is Reach.DEAD:
            continue
        field, defaulted = problem
        severity, change = Severity.ERROR, ""
        if baseline is not None:
            before = _consumer_dataclass(hierarchy.at(baseline.index), cls.name)
            if before is not None and misplaced_field(before.signature) is not None:
                severity, change = (
                    Severity.WARNING,
                    f" (so {baseline.since} too, where the consumer works: code that does not run)",
                )
            elif before is not None:
                described = describe_change(before.signature, run.signature)
                change = "" if described.unchanged else f" ({described.render()} {baseline.since})"
        message = (
            f"defining {cls.symbol} raises TypeError when its module is imported: the `__init__` @dataclass "
            f"writes from the fields of its order ({run.owner}'s first) would take {field}, which has no "
            f"default, after the defaulted {defaulted}: __init__{run.signature.render()}{change}"
        )
        severity, message = judgement.adjust(severity, message)
        findings.append(
            Finding(Rule.ARITY_DRIFT, severity, f"{run.owner}.__init__", (Site(cls.path, cls.line),), message)
        )
    return findings
