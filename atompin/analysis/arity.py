"""Does a call, a replacement or a table's expectation fit a signature? Pure functions.

These are the questions behind `arity-drift`, the arithmetic failure mode: a
symbol that moved *and* changed its signature, where a call that fixed only
the import path passes the wrong argument and nothing raises.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from atompin.analysis.signature import Param, ParamKind, Signature
from atompin.analysis.syntax import parameter_names, walk

_POSITIONAL = (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)
_BY_KEYWORD = (ParamKind.POSITIONAL_OR_KEYWORD, ParamKind.KEYWORD_ONLY)

# Decorators that keep a function's signature; any other makes the signature unknown.
SAFE_DECORATORS = {
    "staticmethod",
    "classmethod",
    "property",
    "cached_property",
    "functools.cached_property",
    "cache",
    "functools.cache",
    "lru_cache",
    "functools.lru_cache",
    "wraps",
    "functools.wraps",
    "abstractmethod",
    "abc.abstractmethod",
    "override",
    "typing.override",
    "typing_extensions.override",
    "deprecated",
    "typing_extensions.deprecated",
    "torch.no_grad",
    "torch.inference_mode",
    "contextmanager",
    "contextlib.contextmanager",
    "final",
    "typing.final",
    # aiter's kernel stubs: the wrapper binds each call to the stub's signature
    # (`inspect.getcallargs`) before it calls the compiled op, which takes the same.
    "compile_ops",
}


# Triton kernels: a launch (`kernel[grid](...)`) binds its arguments to the kernel's parameters,
# and takes the compiler's launch options besides (`num_warps=`, a backend's own).
JIT_DECORATORS = {"triton.jit", "jit"}
# Decorators that fill some of a kernel's parameters themselves (their configs, heuristics).
TUNING_DECORATORS = {"triton.autotune", "autotune", "triton.heuristics", "heuristics"}


@dataclass(frozen=True)
class CallShape:
    """What a call site passes: positional count, keyword names, and whether it unpacks."""

    positional: int
    keywords: tuple[str, ...] = ()
    star: bool = False
    starstar: bool = False

    def render(self) -> str:
        parts = [f"{self.positional} positional"] + [f"{k}=" for k in self.keywords]
        if self.star:
            parts.append("*args")
        if self.starstar:
            parts.append("**kwargs")
        return "(" + ", ".join(parts) + ")"


def shape_of(call: ast.Call, dicts: Mapping[str, tuple[str, ...]] | None = None) -> CallShape:
    """What a call node passes. `**{"k": v}` with literal keys, or `**dict(k=v)`, counts as
    those keywords; so does `**name` for a local `dicts` knows the keys of (`keyword_dicts`)."""
    keywords = [k.arg for k in call.keywords if k.arg]
    starstar = False
    for k in call.keywords:
        if k.arg is not None:
            continue
        keys = literal_keys(k.value)
        if keys is None and isinstance(k.value, ast.Name) and dicts:
            keys = dicts.get(k.value.id)
        if keys is None:
            starstar = True
        else:
            keywords += keys
    return CallShape(
        positional=sum(1 for a in call.args if not isinstance(a, ast.Starred)),
        keywords=tuple(keywords),
        star=any(isinstance(a, ast.Starred) for a in call.args),
        starstar=starstar,
    )


def literal_keys(node: ast.expr | None) -> tuple[str, ...] | None:
    """The keys of a dict written whole: `{"k": v, ...}` with string keys, or `dict(k=v, ...)`
    with keywords only; None for any other expression."""
    if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
        return tuple(k.value for k in node.keys)  # type: ignore[union-attr]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "dict"
        and not node.args
        and all(k.arg for k in node.keywords)
    ):
        return tuple(k.arg for k in node.keywords if k.arg)
    return None


def spreads_a_name(call: ast.Call) -> bool:
    """Does the call pass `**name`, whose keywords `keyword_dicts` may know?"""
    return any(k.arg is None and isinstance(k.value, ast.Name) for k in call.keywords)


def keyword_dicts(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, tuple[str, ...]]:
    """The locals of a function bound once, to a dict written whole (`literal_keys`), and used
    only as `**name` in calls: the keywords such a call passes (vLLM's kernel warm-up builds
    `dummy_run_kwargs = dict(..., randomize_inputs=True)` and calls `_dummy_run(**dummy_run_kwargs)`)."""
    bound: dict[str, list[tuple[str, ...] | None]] = {name: [None] for name in parameter_names(function.args)}
    spread: dict[str, int] = {}
    loads: dict[str, int] = {}
    for node in walk(function):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loads[node.id] = loads.get(node.id, 0) + 1
            else:
                bound.setdefault(node.id, []).append(None)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound.setdefault(node.targets[0].id, []).append(literal_keys(node.value))
        elif isinstance(node, ast.keyword) and node.arg is None and isinstance(node.value, ast.Name):
            spread[node.value.id] = spread.get(node.value.id, 0) + 1
    out = {}
    for name, values in bound.items():
        # The Assign and its target Name are both met: one binding is [keys, None] or [None, keys].
        keys = [v for v in values if v is not None]
        if len(values) == 2 and len(keys) == 1 and loads.get(name, 0) == spread.get(name, 0) > 0:
            out[name] = keys[0]
    return out


def checkable(sig: Signature | None) -> bool:
    """A signature we can trust: read from a def whose decorators keep it."""
    return (
        sig is not None
        and not sig.is_property
        and all(d in SAFE_DECORATORS or d.endswith(".setter") for d in sig.decorators)
    )


def _bound(sig: Signature, bound: bool) -> list[Param]:
    params = list(sig.params)
    if bound and params and params[0].kind in _POSITIONAL:
        params = params[1:]
    return params


def same_kind(a: Signature, b: Signature) -> bool:
    """Both instance methods, both classmethods or both staticmethods: calls bind alike."""
    return (a.is_staticmethod, a.is_classmethod) == (b.is_staticmethod, b.is_classmethod)


def binds_receiver(sig: Signature, through_instance: bool) -> bool:
    """Does a call of `sig`, stored on a class, supply its first parameter? A classmethod's
    always, a staticmethod's never, a plain function's when called through an instance
    (`self.f(...)`, not `Cls.f(...)`): a function assigned onto a class becomes a method."""
    if sig.is_staticmethod:
        return False
    return sig.is_classmethod or through_instance


def as_called(sig: Signature, bound: bool) -> Signature:
    """`sig` as a call sees it: without its first parameter when the call supplies it."""
    return Signature(tuple(_bound(sig, bound)), is_async=sig.is_async)


def untakeable_keywords(narrower: Signature, wider: Signature) -> list[str]:
    """The named parameters of `wider` that `narrower` cannot take by keyword (an override, or a
    replacement, against the method it stands for); none when it takes `**kwargs`."""
    takes = _keyword_names(narrower)
    if takes is None:
        return []
    named = [p for p in wider.params if p.kind in _BY_KEYWORD]
    if named and named[0].name in ("self", "cls") and not wider.is_staticmethod:
        named = named[1:]
    return [p.name for p in named if p.name not in takes]


def keywords_not_taken(sig: Signature, call: CallShape) -> list[str]:
    """The keywords a call passes that `sig` has no parameter for (none when it takes `**kwargs`)."""
    takes = _keyword_names(sig)
    return [] if takes is None else [k for k in call.keywords if k not in takes]


def _keyword_names(sig: Signature) -> set[str] | None:
    """The names `sig` takes by keyword; None when it takes any (`**kwargs`)."""
    if any(p.kind is ParamKind.VAR_KEYWORD for p in sig.params):
        return None
    return {p.name for p in sig.params if p.kind in _BY_KEYWORD}


def positional_names(sig: Signature, bound: bool = False) -> list[str]:
    """The parameters of `sig` a call may fill by position, in order."""
    return [p.name for p in _bound(sig, bound) if p.kind in _POSITIONAL]


def filled_by_position(sig: Signature, call: CallShape, bound: bool = False) -> list[str]:
    """The parameters of `sig` that the call's positional arguments fill, in order."""
    return positional_names(sig, bound)[: call.positional]


def shifted_arguments(old: Signature, new: Signature, call: CallShape, bound: bool = False) -> list[tuple[str, str]]:
    """The positional arguments of `call` that fill another parameter under `new` than under `old`,
    as (the parameter it filled, the one it fills) pairs: a parameter inserted, removed or moved
    before them (aiter's `mla_reduce_v1` gained `num_kv_splits` before `final_output`). The call
    still binds, with its values in the wrong parameters. A parameter renamed in place (neither
    name elsewhere in the other signature) is no shift; `*args` passed: not known."""
    if call.star:
        return []
    before, after = positional_names(old, bound), positional_names(new, bound)
    shifted = []
    for k, (was, now) in enumerate(zip(before[: call.positional], after[: call.positional])):
        if was != now and ((was in after and after.index(was) != k) or (now in before and before.index(now) != k)):
            shifted.append((was, now))
    return shifted


def render_shift(shifted: Sequence[tuple[str, str]]) -> str:
    """What a finding says of `shifted_arguments`."""
    moves = "; ".join(f"the argument that filled {was} now fills {now}" for was, now in shifted)
    return (
        f"binds its positional arguments to other parameters than at the baseline ({moves}): it still "
        "binds, with values in parameters they were not written for"
    )


def call_problem(sig: Signature, call: CallShape, bound: bool = False) -> str | None:
    """Why `call` does not fit `sig` (None when it fits). `bound`: the first parameter is supplied."""
    params = _bound(sig, bound)
    positional = [p for p in params if p.kind in _POSITIONAL]
    var_positional = any(p.kind is ParamKind.VAR_POSITIONAL for p in params)
    var_keyword = any(p.kind is ParamKind.VAR_KEYWORD for p in params)
    if call.positional > len(positional) and not var_positional:
        return f"passes {call.positional} positional argument(s); the signature takes at most {len(positional)}"
    filled = {p.name for p in positional[: call.positional]}
    by_name = {p.name: p for p in params}
    for keyword in call.keywords:
        param = by_name.get(keyword)
        if param is None or param.kind not in _BY_KEYWORD:
            if not var_keyword:
                return f"passes {keyword}=, which the signature does not take"
        elif keyword in filled:
            return f"passes {keyword!r} both by position and by keyword"
        filled.add(keyword)
    if call.star or call.starstar:
        return None  # unpacked arguments: the rest cannot be counted
    missing = [
        p.name
        for p in params
        if p.kind in (*_POSITIONAL, ParamKind.KEYWORD_ONLY) and not p.has_default and p.name not in filled
    ]
    if missing:
        # Where its positional arguments land, not where they moved: a required parameter added
        # after them moves none.
        landed = [p.name for p in positional[: call.positional]]
        where = f" (its positional arguments bind to {', '.join(landed)})" if landed else ""
        return f"does not pass the required {', '.join(missing)}{where}"
    return None


def launch_problem(kernel: Signature | None, call: CallShape) -> str | None:
    """Why a Triton launch `kernel[grid](...)` cannot bind to the kernel's parameters; None when it
    can, or when that is not known (no signature: not a function). A keyword the kernel lacks fails only when it is written in
    capitals, as a kernel's constants are and no launch option is (Triton raises "Keyword argument
    X was specified but unrecognised"); a parameter a tuning decorator fills may be left out."""
    if kernel is None:
        return None
    decorators = set(kernel.decorators)
    if not decorators & JIT_DECORATORS or not decorators <= JIT_DECORATORS | TUNING_DECORATORS | SAFE_DECORATORS:
        return None
    params = list(kernel.params)
    if any(p.kind in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD) for p in params):
        return None
    positional = [p for p in params if p.kind in _POSITIONAL]
    if call.positional > len(positional):
        return f"passes {call.positional} positional argument(s); the kernel takes at most {len(positional)}"
    taken = {p.name for p in params}
    unknown = [k for k in call.keywords if k not in taken and k.isupper()]
    if unknown:
        return f"passes {unknown[0]}=, which the kernel does not take"
    if decorators & TUNING_DECORATORS:
        return None
    return call_problem(kernel, replace(call, keywords=tuple(k for k in call.keywords if k in taken)))


@dataclass(frozen=True)
class Mismatch:
    message: str
    # True: calls the original takes today fail or bind wrongly; False: only keyword callers would.
    definite: bool = True


def takes_anything(sig: Signature) -> bool:
    """`(self, *args, **kwargs)`: a dispatcher whose parameters say nothing about the calls it gets."""
    params = list(sig.params)
    if params and params[0].name in ("self", "cls") and params[0].kind in _POSITIONAL:
        params = params[1:]
    return {p.kind for p in params} == {ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD}


def replacement_problem(original: Signature, replacement: Signature) -> Mismatch | None:
    """Why `replacement` cannot take every call `original` takes (None when it can).

    An original that takes anything (`*args, **kwargs`) is no evidence: only real calls can tell.
    """
    if takes_anything(original):
        return None
    r_params = list(replacement.params)
    if any(p.kind is ParamKind.VAR_POSITIONAL for p in r_params) and any(
        p.kind is ParamKind.VAR_KEYWORD for p in r_params
    ):
        return None
    o_positional = [p for p in original.params if p.kind in _POSITIONAL]
    required = sum(1 for p in o_positional if not p.has_default)
    kw_required = tuple(p.name for p in original.params if p.kind is ParamKind.KEYWORD_ONLY and not p.has_default)
    counts = sorted({required, len(o_positional)})
    for n in counts:
        problem = call_problem(replacement, CallShape(n, kw_required))
        if problem:
            return Mismatch(f"a call the original accepts ({n} positional) does not fit the replacement: it {problem}")
    r_names = {p.name for p in r_params if p.kind in _BY_KEYWORD}
    r_var_keyword = any(p.kind is ParamKind.VAR_KEYWORD for p in r_params)
    r_positional = [p for p in r_params if p.kind in _POSITIONAL]
    o_index = {p.name: i for i, p in enumerate(o_positional)}
    for i, p in enumerate(r_positional):
        j = o_index.get(p.name)
        if j is not None and j != i:
            return Mismatch(f"{p.name} is parameter {i + 1} of the replacement but parameter {j + 1} of the original")
    for i, p in enumerate(original.params):
        if i == 0 and p.name in ("self", "cls"):
            continue
        if p.kind in _BY_KEYWORD and p.name not in r_names and not r_var_keyword:
            return Mismatch(
                f"callers that pass {p.name}= (the original takes it) would fail: the replacement has no such parameter",
                definite=False,
            )
    return None


def binding_problem(
    original: Signature,
    replacement: Signature,
    call: CallShape,
    bound: bool = False,
    replacement_bound: bool | None = None,
) -> str | None:
    """A call both signatures take whose positional arguments land elsewhere in the replacement: an
    argument the original takes as `metrics` arriving as `block_size` (None when they land alike).
    `replacement_bound`: whether the call supplies the replacement's first parameter, when it
    binds otherwise than the original (`bound` for both by default)."""
    o = [p.name for p in _bound(original, bound) if p.kind in _POSITIONAL][: call.positional]
    r_bound = bound if replacement_bound is None else replacement_bound
    r = [p.name for p in _bound(replacement, r_bound) if p.kind in _POSITIONAL]
    for i, name in enumerate(o):
        if i < len(r) and r[i] != name and name in r:
            return f"its argument {i + 1} is {name} for the original but {r[i]} for the replacement"
    return None


def param_names(sig: Signature, drop_receiver: bool = True) -> list[str]:
    """["vllm_config", "kv_cache_groups", "*args"]: names as a table writes them."""
    params = list(sig.params)
    if drop_receiver and params and params[0].name in ("self", "cls") and params[0].kind in _POSITIONAL:
        params = params[1:]
    out = []
    for p in params:
        prefix = "*" if p.kind is ParamKind.VAR_POSITIONAL else "**" if p.kind is ParamKind.VAR_KEYWORD else ""
        out.append(prefix + p.name)
    return out


def params_problem(sig: Signature, expected: Sequence[str]) -> str | None:
    """Why `sig` does not have the parameters a relocation table expects (None when it does)."""
    found = param_names(sig)
    wanted = list(expected)
    if wanted[:1] in (["self"], ["cls"]):
        wanted = [e for e in wanted if e not in ("self", "cls")]
    if found == wanted:
        return None
    return f"the table expects ({', '.join(wanted)}), the provider has ({', '.join(found)})"


@dataclass(frozen=True)
class SignatureChange:
    """How a signature's parameters changed: typed, so callers test kinds, not prose."""

    before: tuple[str, ...]
    after: tuple[str, ...]

    @property
    def unchanged(self) -> bool:
        return self.before == self.after

    @property
    def added(self) -> tuple[str, ...]:
        return tuple(n for n in self.after if n not in self.before)

    @property
    def removed(self) -> tuple[str, ...]:
        return tuple(n for n in self.before if n not in self.after)

    @property
    def reordered(self) -> bool:
        return not self.unchanged and not self.added and not self.removed

    def render(self) -> str:
        """A short note: "gained vllm_config as first parameter"."""
        if self.unchanged:
            return "signature unchanged"
        notes = []
        for name in self.added:
            position = self.after.index(name)
            last = len(self.after) - 1
            where = {last: "last parameter", 0: "first parameter"}.get(position, f"parameter {position + 1}")
            notes.append(f"gained {name} as {where}")
        notes += [f"lost {name}" for name in self.removed]
        if self.reordered:
            notes.append(f"parameters reordered: ({', '.join(self.before)}) -> ({', '.join(self.after)})")
        return "; ".join(notes)


def describe_change(old: Signature, new: Signature) -> SignatureChange:
    """How `old` became `new`, parameter by parameter (receivers dropped)."""
    return SignatureChange(tuple(param_names(old)), tuple(param_names(new)))
