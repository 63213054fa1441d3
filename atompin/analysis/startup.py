"""Where the plugin stops when the provider loads it: the first error on the code every process runs at start-up.

vLLM loads the consumer's `vllm.platform_plugins` entry points, then its `vllm.general_plugins`
ones, in every process it starts. What a general plugin's function raises ends the process; what
importing an entry point's module or calling a platform plugin raises, vLLM logs, and goes on
without the plugin. Either way the plugin does nothing after it. At vLLM 0.34, ATOM's
`register_model` calls `apply_vllm_spec_decode_patch()`, whose unguarded `from
vllm.v1.spec_decode.llm_base_proposer import SpecDecodeBaseProposer` raises: no model is built,
so the errors of code that would run later sit behind that one, and a reader should mend it first.
A console script of the consumer's is a start-up of its own, in a process of its own: its
command's first error is walked for the same way, from its module and function (vllm-omni's
`vllm-omni` imports its server's modules, which the plugin's start-up never imports).

The start-up code is walked in the order it runs, from each entry point of a group of the
provider's: its module (its packages' `__init__` first), then the function. A module runs its
top-level statements and a class body its own; an import of a consumer module (at the top of a
module or of a function body) runs that module's first, once. A function runs its body's
statements in order, up to a `return` (in a `with` or `try` body too: what follows it does not
run, a `finally` does). What may not run is not followed: under an `if`, in a loop, in an
exception handler, and what follows `if x: raise ...` in a `try` body (a handler may catch it),
the `try`'s `else` included; a `try` body and a `with` body are, and so is the branch of
`if flag:` on a parameter the call sets to True, False or None (`_arguments`: vllm-ascend calls
`adapt_patch(is_global_patch=True)`). An `if` whose branch returns (`if disabled: return`) lets the rest
run where its test fails, and the message says so. A statement calling a consumer function by
name (defined in its module, imported from a consumer module, or `module.f(...)`), or a
method on a consumer class by name (`C.m(...)`), as a statement, an assignment's value or a
return value, runs that function there (its arguments are not followed; a method's are not
known). A class made (`C()`) is not followed into its `__init__`. The first statement holding
the site of an error that raises where it runs (an import, a patch target's read, a version
assert: `Stops`) is where the plugin stops. The first `if` on the way whose branch holds such an
error, or may reach one (`_may_reach`), on a test the walk cannot decide, is followed where the
test holds, and a stop in it is told so ("where `envs.VLLM_RBLN_USE_VLLM_MODEL` holds": vllm-rbln
patches vLLM only in that mode). Past it, and where other code not followed holds or may reach
such an error, which one comes first is not known: nothing is told.

Pure: the consumer modules' outlines (`code_outline`) and imports (`Imports`) in, the stop out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace

from atompin.analysis.code_outline import (
    ASYNC_DEF,
    CLASS,
    DEF,
    FROM,
    IF,
    IMPORT,
    LOOP,
    NEVER,
    TRY,
    WITH,
    ModuleOutline,
    OutlineReader,
    Reach,
    Step,
)
from atompin.model import Finding, Severity, Site

# How many consumer modules and functions the walk runs, and how deep it goes into imports and
# calls, before it gives up (a bound: the answer is then "not known", never a guess).
MAX_STEPS = 400
MAX_DEPTH = 40
# How many calls deep code not followed is read for what it may reach (deeper is taken for yes).
MAX_CALLS = 6

# (rule, symbol, site) of each error whose code raises at that site when it runs, as the checks
# that made it tell (`usage_checks.state.Findings.stops`): an unguarded import, a read of a patch
# target that is gone, a version assert. An installer that returns where a ladder fails
# ("patches are never installed") raises nothing.
Stops = AbstractSet[tuple[str, str, Site]]


def stopping(findings: Iterable[Finding], stops: Stops) -> tuple[list[Finding], dict[str, set[int]]]:
    """The errors (not accepted) that raise where they run, and their sites that do: path -> lines."""
    errors: list[Finding] = []
    failing: dict[str, set[int]] = {}
    for f in findings:
        sites = [site for site in f.sites if (f.rule.value, f.symbol, site) in stops]
        if f.severity is Severity.ERROR and not f.accepted and sites:
            errors.append(f)
            for site in sites:
                failing.setdefault(site.path, set()).add(site.line)
    return errors, failing


@dataclass(frozen=True)
class StartupStop:
    """The first statement of the start-up code that holds a stopping error's site."""

    site: Site
    chain: tuple[str, ...]  # the entry point, then each call on the way (`f() at path:line`)
    unless: tuple[str, ...]  # the tests of early exits passed on the way (`x` at path:line)
    command: str = ""  # the console script started; "" for the plugin's start-up in the provider
    # The test of the `if` whose branch holds the stop, where the walk cannot tell whether it
    # holds (the environment's, the hardware's): `x` at path:line; "" when none is on the way.
    when: str = ""
    # The tests of the consumer's own `if x: raise ...` passed on the way: where one holds, the
    # start-up stops there first, with the consumer's own error (arctic-inference refuses a vLLM
    # it was not written for): `x` at path:line.
    raised: tuple[str, ...] = ()

    def telling(self, told: tuple[StartupStop, ...] = ()) -> str:
        """What a message says of it; briefly where it is met the same way as a stop already
        `told` of the same error (a command importing the package the plugin's start-up does)."""
        unless = f", unless {', '.join(self.unless)}" if self.unless else ""
        where = f" where {self.when} holds" if self.when else ""
        way = (self.chain[1:], self.unless, self.when, self.raised)
        if self.command and any((t.chain[1:], t.unless, t.when, t.raised) == way for t in told):
            return f"the command `{self.command}` meets it first the same way, from {self.chain[0]}"
        who = f"the command `{self.command}`" if self.command else "the plugin"
        first = (
            f"; where {' or '.join(self.raised)} holds, {who} raises its own error there first" if self.raised else ""
        )
        if self.command:
            where = f", {where[1:]}" if where else ""
            return (
                f"it raises when the command `{self.command}` starts ({self.site}){where}{unless}{first}: "
                + " → ".join(self.chain)
                + "; what the command would do after it, and the errors there, are behind it"
            )
        return (
            f"it raises at start-up ({self.site}), in every process that loads the plugin{where}{unless}{first}: "
            + " → ".join(self.chain)
            + "; what the plugin would do after it, and the errors there, are behind it"
        )


# Imports: a consumer module's (path, every module it imports outside its functions), read from
# its bytes (`relevant.imported_modules`); None for a module the consumer has no source of.
Imports = Callable[[str], tuple[str, frozenset[str]] | None]


@dataclass
class _Walk:
    outlines: OutlineReader
    imports: Imports
    failing: dict[str, set[int]]  # path -> the lines of stopping errors' sites
    # module -> the facts of what importing it imports (`_closure`)
    closures: dict[str, tuple[bool, bool]] = field(default_factory=dict)
    calling: dict[str, bool] = field(default_factory=dict)  # module:function -> may calling it stop
    bindings: dict[str, dict[str, str]] = field(default_factory=dict)  # module -> `_bindings`
    ran: set[str] = field(default_factory=set)  # modules and functions (module:name) run
    steps: int = 0
    chain: list[str] = field(default_factory=list)
    unless: list[str] = field(default_factory=list)
    raised: list[str] = field(default_factory=list)  # `StartupStop.raised`: kept from one entry point to the next
    params: list[tuple[str, ...]] = field(default_factory=list)  # of each function being run, innermost last
    when: str = ""  # `StartupStop.when`, once the walk follows such a branch
    found: StartupStop | None = None
    gave_up: bool = False
    command: str = ""  # the console script walked; "" for the plugin's entry points (`StartupStop`)


def startup_stop(
    entry_points: Iterable[tuple[str, str]],
    outlines: OutlineReader,
    imports: Imports,
    findings: Iterable[Finding],
    stops: Stops,
) -> tuple[StartupStop, Finding] | None:
    """The first error that raises on the start-up code of `entry_points` ((group,
    "module:function"), in the order the provider calls them; `stops`: `Stops`), with where the
    walk met it; None when none is met (or the walk gave up). `outlines`, `imports`: the
    consumer's modules (`OutlineReader`, `Imports`)."""
    errors, failing = stopping(findings, stops)
    return _met(_walked(entry_points, outlines, imports, failing), errors)


def _walked(
    entry_points: Iterable[tuple[str, str]],
    outlines: OutlineReader,
    imports: Imports,
    failing: dict[str, set[int]],
    command: str = "",
) -> _Walk:
    """The walk of the start-up code up to the first of the `failing` lines (path -> lines), or to
    its end (of console script `command`'s, where one is named). What it read of the modules'
    outlines is kept (`OutlineReader.keep`)."""
    walk = _Walk(outlines, imports, failing, command=command)
    for group, target in entry_points if failing else ():
        module, _, function = target.partition(":")
        walk.chain = [f"entry point {group} {target.strip()}"]
        walk.unless = []
        _run_module(walk, module.strip())
        if walk.found is None and not walk.gave_up and function.strip().isidentifier():
            _run_function(walk, _definition(walk, module.strip(), function.strip(), 4))
        if walk.found is not None or walk.gave_up:
            break
    outlines.keep()
    return walk


def _met(walk: _Walk, errors: list[Finding]) -> tuple[StartupStop, Finding] | None:
    if walk.found is None or walk.gave_up:
        return None
    site = walk.found.site
    return walk.found, next(f for f in errors if site in f.sites)


class StartupWalk:
    """`startup_stop` in two steps: the walk made early, with the errors known then, while
    another process works; told at the end. The steps between only make errors warnings, so the
    errors at the end are among those walked for: the walk is made again only when the error it
    met is no longer one, or it gave up. Only the walk's answer is kept (what it read is let
    go): `modules` gives the consumer's modules again for a walk made again.

    `commands`: the consumer's console scripts, (name, "module:function"), each walked on its
    own the same way: a command is a process of its own, whose first error is its own (vllm-omni's
    `vllm-omni` command imports its server's modules, which the plugin's start-up never does)."""

    def __init__(
        self,
        entry_points: Iterable[tuple[str, str]],
        modules: Callable[[], tuple[OutlineReader, Imports]],
        findings: Iterable[Finding],
        stops: Stops,
        commands: Iterable[tuple[str, str]] = (),
    ) -> None:
        self._modules, self._stops = modules, stops
        failing = stopping(findings, stops)[1]
        starts = [("", list(entry_points))]
        starts += [(name, [("console_scripts", target)]) for name, target in commands]
        read = modules()  # one reading of the modules for every start-up walked now
        walks = [_walked(points, *read, failing, command) for command, points in starts]
        self._starts = [
            _Start(points, walk.command, walk.found, walk.gave_up) for (_, points), walk in zip(starts, walks)
        ]

    def tell(self, findings: list[Finding]) -> list[Finding]:
        """The findings, the first error that raises on each start-up's code telling so."""
        told: list[StartupStop] = []
        read = functools.cache(self._modules)  # read again only for a walk made again, once for all
        for start in self._starts:
            found = start.stop(findings, read, self._stops)
            if found is not None:
                stop, first = found
                note = stop.telling(tuple(t for t in told if t.site == stop.site))
                findings = [replace(f, message=f"{f.message}; {note}") if f is first else f for f in findings]
                told.append(stop)
        return findings


@dataclass
class _Start:
    """One start-up `StartupWalk` walks: the plugin's (`command` "") or a console script's, with
    its answer when the walk was made."""

    entry_points: list[tuple[str, str]]
    command: str
    found: StartupStop | None
    gave_up: bool

    def stop(
        self, findings: list[Finding], modules: Callable[[], tuple[OutlineReader, Imports]], stops: Stops
    ) -> tuple[StartupStop, Finding] | None:
        """The first error among `findings` that raises on this start-up's code, with where the
        walk met it (walked again where the error it met then is no longer one)."""
        if self.found is None and not self.gave_up:
            return None  # no such error on the start-up code, among more than there are now
        errors, failing = stopping(findings, stops)
        found = self.found
        if self.gave_up or found is None or not any(found.site in f.sites for f in errors):
            return _met(_walked(self.entry_points, *modules(), failing, self.command), errors)
        return found, next(f for f in errors if found.site in f.sites)


def _step(walk: _Walk, key: str) -> bool:
    """Run `key` (a module, or module:function) now? Not twice, nor past the bounds."""
    if key in walk.ran or walk.found is not None or walk.gave_up:
        return False
    walk.steps += 1
    if walk.steps > MAX_STEPS or len(walk.chain) > MAX_DEPTH:
        walk.gave_up = True
        return False
    walk.ran.add(key)
    return True


def _run_module(walk: _Walk, module: str) -> None:
    """Import `module`: its packages first, then its top-level statements; a module importing
    which cannot reach a stopping error (`_import_may_stop`) is not read."""
    parts = module.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name in walk.ran or not _import_may_stop(walk, name, run=True):
            walk.ran.add(name)  # importing it reaches no stopping error: not read
            continue
        found = walk.outlines.outline(name)
        if found is None or not _step(walk, name):
            continue
        path, outline = found
        _block(walk, name, path, outline.steps, {})


# A function the walk may run: its module, its step (DEF) and its module's path.
_Function = tuple[str, Step, str]


def _run_function(walk: _Walk, found: _Function | None, passed: tuple[tuple[str, str], ...] = ()) -> None:
    """Call a consumer function (`_definition`'s module, def and path) with the arguments
    `passed` (`Step.passed`; none: the provider calls an entry point's function so)."""
    if found is None:
        return
    where, function, path = found
    if not _step(walk, f"{where}:{function.name}:{function.start}"):  # methods of two classes share a name
        return
    unless = len(walk.unless)
    known = _arguments(walk, found, passed)
    walk.params.append(function.params)
    _block(walk, where, path, walk.outlines.body(where, function), _bindings(walk, where), known=known)
    walk.params.pop()
    if walk.found is None:
        del walk.unless[unless:]  # an early exit of the function: the caller's code runs on after it


def _arguments(walk: _Walk, found: _Function, passed: tuple[tuple[str, str], ...]) -> dict[str, bool]:
    """Whether each parameter of a function a call runs holds a true value, where the call passes
    True, False or None for it (or passes nothing and that is its default), and the function's
    code never binds its name: `if flag:` on it is then followed (vllm-ascend calls
    `adapt_patch(is_global_patch=True)` at start-up)."""
    where, function, _ = found
    if any(key == "*" for key, _ in passed):
        return {}  # `*args`, `**kwargs`: which parameter takes what is not known
    values = dict(function.defaults)
    for key, value in passed:
        position = int(key) if key.isdigit() else -1
        name = key if position < 0 else function.params[position] if position < len(function.params) else ""
        if value and name:
            values[name] = value
        elif name:
            values.pop(name, None)
    if not values:
        return {}
    rebound = set(walk.outlines.rebound(where, function))
    return {name: value == "True" for name, value in values.items() if name not in rebound}


def _definition(walk: _Walk, module: str, name: str, depth: int) -> _Function | None:
    """The module, def and path of `module`'s top-level `name`: its own def, or one it imports;
    for "C.m", the def of method `m` in the body of top-level class `C` (its own, or imported)."""
    read = walk.outlines.outline(module)
    if read is None or depth == 0:
        return None
    path, outline = read
    head, dot, member = name.partition(".")
    found: _Function | None = None
    for step in outline.steps:
        if step.kind == DEF and step.name == name:
            found = (module, step, path)
        elif step.kind == CLASS and step.name == head and dot:
            defs = [item for item in walk.outlines.body(module, step) if item.name == member]
            found = (module, defs[-1], path) if defs and defs[-1].kind == DEF else None
        elif (step.kind == DEF and step.name == head) or (step.kind == CLASS and step.name == name):
            found = None  # bound again, to something else than what is asked for
        elif step.kind == FROM:
            for alias, asname in step.names:
                if (asname or alias) == head:
                    found = _definition(walk, step.source, alias + dot + member, depth - 1)
    return found


def _bindings(walk: _Walk, module: str) -> dict[str, str]:
    """What `module`'s top-level names are bound to (consumer modules, functions and classes), as
    `_block` keeps them: its defs and classes, and what its top-level imports bind. Read once per module; a
    copy, which the function run with it binds more names in."""
    if module not in walk.bindings:
        bound: dict[str, str] = {}
        _, outline = walk.outlines.outline(module) or ("", ModuleOutline(()))
        for step in outline.steps:
            if step.kind in (DEF, ASYNC_DEF, CLASS):
                bound[step.name] = f"{module}:{step.name}"
            elif step.kind in (IMPORT, FROM):
                _bind(walk, step, bound)
        walk.bindings[module] = bound
    return dict(walk.bindings[module])


# How a block of statements ends on the walked path (`_block`): it runs to its end; a `return`
# in it returns from the function, so nothing after it in the function runs; or an `if x: raise`
# in a `try` body stops the walk there, and what runs only when the rest of the body did
# (the `else`) may or may not run.
_ON, _RETURNED, _UNSURE = "on", "returned", "unsure"


def _block(
    walk: _Walk,
    module: str,
    path: str,
    steps: tuple[Step, ...],
    bound: dict[str, str],
    caught: bool = False,
    known: Mapping[str, bool] | None = None,
) -> str:
    """Run statements of `module` (at `path`) in order, and say how they end (`_ON`,
    `_RETURNED`, `_UNSURE`); `bound`: names the code has bound to consumer modules or their
    functions so far ("module" or "module:function"); `caught`: in a `try` body, where what
    raises may be caught; `known`: the function's parameters whose truth is known
    (`_arguments`)."""
    known = known or {}
    for i, step in enumerate(steps):
        if walk.found is not None or walk.gave_up:
            return _ON
        ended = _ON
        if step.kind in (DEF, ASYNC_DEF):
            bound[step.name] = f"{module}:{step.name}"
        elif step.kind == CLASS:
            bound.pop(step.name, None)
            ended = _block(walk, module, path, walk.outlines.body(module, step), dict(bound), caught)
            bound[step.name] = f"{module}:{step.name}"
        elif step.kind == WITH:
            ended = _block(walk, module, path, step.body, bound, caught, known)
        elif step.kind == TRY:
            ended = _try(walk, module, path, step, bound, caught, known)
        elif step.kind == IF and step.switch in known:  # `if flag:` on a parameter the call set
            branch = step.body if known[step.switch] != step.negated else step.orelse
            ended = _block(walk, module, path, branch, bound, caught, known)
        elif step.kind == IF and not walk.when and _may_stop(walk, module, path, step.body, bound):
            # The first `if` whose branch may stop, on a test the walk cannot decide (vllm-rbln
            # patches vLLM under `if envs.VLLM_RBLN_USE_VLLM_MODEL:`): the branch is followed, and
            # a stop there is told "where" the test holds. Where it fails, or past the branch, which
            # error comes first is not known.
            walk.when = f"`{step.test}` ({path}:{step.start})"
            _block(walk, module, path, step.body, dict(bound), caught, known)
            if walk.found is None:
                walk.gave_up = True
            return _ON
        elif step.kind in (IF, LOOP):
            _not_followed(walk, module, path, step, bound)  # what runs only under a test, or as often as a loop turns
            if step.kind == IF and not _runs_on(walk, module, path, step, steps[i + 1 :], bound, caught):
                return _UNSURE
        elif step.kind != NEVER and (flow := _statement(walk, module, path, step, bound)) is not None:
            return flow
        if ended != _ON:
            # A nested block returned (nothing after it runs), or stopped unsure (what follows
            # may or may not run: not followed).
            for each in steps[i + 1 :] if ended == _UNSURE else ():
                _not_followed(walk, module, path, each, bound)
            return ended
    return _ON


def _statement(walk: _Walk, module: str, path: str, step: Step, bound: dict[str, str]) -> str | None:
    """Run a simple statement; how its block ends there (None: the block runs on)."""
    hit = _failing(walk, path, step)
    if hit:
        walk.found = StartupStop(
            Site(path, hit[0]), tuple(walk.chain), tuple(walk.unless), walk.command, walk.when, tuple(walk.raised)
        )
        return _ON
    if step.kind in (IMPORT, FROM):
        _import(walk, module, path, step, bound)
    else:
        _calls(walk, module, path, step, bound)
    if step.ends == "return":
        return _RETURNED
    return _ON if step.ends else None  # a raise, as before: where it goes is a handler's or the caller's


def _try(
    walk: _Walk, module: str, path: str, step: Step, bound: dict[str, str], caught: bool, known: Mapping[str, bool]
) -> str:
    """Run a `try` statement: its body (up to what raises), its `else` where the body ran to its
    end, its `finally`; a handler runs only when something raises: not followed. What the body
    stops unsure at is caught by a handler, after which the code runs on."""
    for handler in step.handlers:
        _not_followed(walk, module, path, handler, bound)
    ended = _block(walk, module, path, step.body, bound, bool(step.handlers) or caught, known)
    if ended == _ON:
        ended = _block(walk, module, path, step.orelse, bound, caught, known)
    else:
        for each in step.orelse:
            _not_followed(walk, module, path, each, bound)
        if ended == _UNSURE and step.handlers:
            ended = _ON
    final = _block(walk, module, path, step.final, bound, caught, known)
    return _UNSURE if _UNSURE in (ended, final) else _RETURNED if _RETURNED in (ended, final) else _ON


def _runs_on(
    walk: _Walk, module: str, path: str, test: Step, rest: tuple[Step, ...], bound: dict[str, str], caught: bool
) -> bool:
    """Does the walk go on after an `if` it does not follow? After `if disabled: return` it does,
    where the test fails (said as "unless"); after `if x: raise ...` it does too, where the test
    fails (where it holds, the start-up stops there with the consumer's own error); but where a
    handler may catch that raise, the rest of the `try` body may not run: not followed."""
    if test.ends == "return":
        walk.unless.append(f"`{test.test}` ({path}:{test.start})")
    elif caught and test.ends == "raise":
        for each in rest:
            _not_followed(walk, module, path, each, bound)
        return False
    elif test.ends == "raise" and not _tests_an_argument(walk, test.test):
        walk.raised.append(f"`{test.test}` ({path}:{test.start})")
    return True


def _tests_an_argument(walk: _Walk, test: str) -> bool:
    """Does an `if` test read a parameter of the function being run? Then it checks what its
    caller passed (ATOM's `_set_framework_backbone("vllm")` raises for a framework it does not
    know), not the environment the plugin loads in: its raise is not said to come first."""
    words = set(re.findall(r"[A-Za-z_]\w*", test))
    return bool(walk.params) and not words.isdisjoint(walk.params[-1])


def _failing(walk: _Walk, path: str, step: Step) -> list[int]:
    """The lines of stopping errors' sites within `step`, in order."""
    return sorted(line for line in walk.failing.get(path, ()) if step.start <= line <= step.end)


def _may_stop(walk: _Walk, module: str, path: str, steps: tuple[Step, ...], bound: dict[str, str]) -> bool:
    """Does one of `steps` hold a stopping error, or may it reach one (`_may_reach`)?"""
    return any(_failing(walk, path, s) or _may_reach(walk, walk.outlines.reaches(module, s), bound) for s in steps)


def _not_followed(walk: _Walk, module: str, path: str, step: Step, bound: dict[str, str]) -> None:
    """Code the walk does not follow (it may or may not run): where it holds a stopping error,
    or may reach one (`_may_reach`), which stops first is not known, and the walk gives up."""
    if _failing(walk, path, step) or _may_reach(walk, walk.outlines.reaches(module, step), bound):
        walk.gave_up = True


def _may_reach(walk: _Walk, reaches: tuple[Reach, ...], bound: dict[str, str], depth: int = 0) -> bool:
    """May code not followed (what it `reaches`) reach a stopping error in another place? It
    imports a consumer module importing which may (`_import_may_stop`), or calls a consumer
    function, class or method of a class by a name bound to one (`f()`, `m.f()`, `C.m()`) that
    may (`_call_may_stop`). A call on anything else (an object's method) is not followed up: the
    walk's one blind spot."""
    for kind, name in reaches:
        if kind == IMPORT:
            if _import_may_stop(walk, name):
                return True
        else:  # CALL
            target = _callee(name, bound)
            if target and _call_may_stop(walk, target, depth):
                return True
    return False


def _import_may_stop(walk: _Walk, module: str, run: bool = False) -> bool:
    """May importing `module` reach a stopping error: is a file among it, its packages and the
    consumer modules they import at their top level, in turn, one holding such an error outside
    its functions? With `run` (must the walk run it?), one holding one anywhere: code run on
    import may call the function. Read from the files' imports alone: a module that cannot is
    never parsed."""
    outside, anywhere = _closure(walk, module)
    if (outside or (run and anywhere)) and walk.ran:
        # Asked again without the modules the walk ran (vllm-ascend's `patch/platform/__init__.py`
        # imports a submodule under `if not is_310p():`, whose package is the module being run).
        outside, anywhere = _closure(walk, module, walk.ran)
    return outside or (run and anywhere)


def _closure(walk: _Walk, module: str, skip: AbstractSet[str] = frozenset()) -> tuple[bool, bool]:
    """Of `module`, its packages and the consumer modules they import at their top level, in turn:
    does one hold a stopping error outside its functions, does one hold one at all? (Past the
    bound, yes to both.) `skip`: modules left out (those the walk ran, or runs now: importing
    them again runs nothing); such an answer is not kept, as what the walk ran grows."""
    if skip or module not in walk.closures:
        seen: set[str] = set()
        todo = [name for name in _packages(module) if name not in skip]
        outside = anywhere = False
        while todo and not outside and len(seen) < 4 * MAX_STEPS:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            known = walk.closures.get(name)
            if known is not None and (not skip or known == (False, False)):  # not walked again
                outside, anywhere = outside or known[0], anywhere or known[1]
                continue
            read = walk.imports(name)
            if read is None:
                continue
            path, imported = read
            outside, anywhere = _fails_on_import(walk, name, path), anywhere or path in walk.failing
            todo += [part for each in imported for part in _packages(each) if part not in seen and part not in skip]
        if len(seen) >= 4 * MAX_STEPS:
            outside = anywhere = True
        if skip:
            return outside, anywhere
        walk.closures[module] = (outside, anywhere)
        if not anywhere:  # what it imports, in turn, holds none either
            walk.closures.update(dict.fromkeys(seen, (False, False)))
    return walk.closures[module]


def _packages(module: str) -> list[str]:
    """`module` and the packages importing it imports first: ["a", "a.b", "a.b.c"]."""
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _fails_on_import(walk: _Walk, module: str, path: str) -> bool:
    """Does the module at `path` hold a stopping error outside its functions (one that importing
    it runs)? A module that does not parse is taken for yes."""
    lines = walk.failing.get(path)
    if not lines:
        return False
    read = walk.outlines.outline(module)
    if read is None:
        return True
    defs = [
        step
        for top in read[1].steps
        for step in ([top] if top.kind != CLASS else walk.outlines.body(module, top))
        if step.kind in (DEF, ASYNC_DEF)
    ]
    return any(not any(d.start <= line <= d.end for d in defs) for line in lines)


def _call_may_stop(walk: _Walk, target: str, depth: int) -> bool:
    """May calling consumer function `target` ("module:name"; a class runs its `__init__`, "C.m"
    is a method) reach a stopping error: its body holds one, or imports or calls what may (a few
    calls deep; deeper is taken for yes)."""
    if target in walk.calling:
        return walk.calling[target]
    if depth > MAX_CALLS:
        return True
    walk.calling[target] = False  # while it is read (a recursion adds nothing)
    module, _, name = target.partition(":")
    found = _definition(walk, module, name, 4) or _definition(walk, module, f"{name}.__init__", 4)
    answer = False
    if found is not None:
        where, function, path = found
        reaches = walk.outlines.reaches(where, function)
        answer = bool(_failing(walk, path, function)) or _may_reach(walk, reaches, _bindings(walk, where), depth + 1)
    walk.calling[target] = answer
    return answer


def _import(walk: _Walk, module: str, path: str, step: Step, bound: dict[str, str]) -> None:
    """Run the consumer modules an import names, and bind what it binds."""
    names = [name for name, _ in step.names]
    if step.kind == FROM:
        names = [step.source] + [f"{step.source}.{name}" for name in names]  # a submodule, if it is one
    for name in names:
        walk.chain.append(f"import of {name} at {path}:{step.start}")
        _run_module(walk, name)
        if walk.found is not None:
            return
        walk.chain.pop()
    _bind(walk, step, bound)


def _bind(walk: _Walk, step: Step, bound: dict[str, str]) -> None:
    """Bind the names an import binds: a consumer module ("a.b"), or a name of one ("a.b:f")."""
    if step.kind == IMPORT:
        for name, asname in step.names:
            if asname:
                bound[asname] = name
            else:  # `import a.b` binds `a`
                bound[name.partition(".")[0]] = name.partition(".")[0]
        return
    source = step.source
    for name, asname in step.names:
        # Whether a name is a consumer module is asked of its imports, read from its bytes (parsing
        # every module an import names would cost more than the walk).
        if walk.imports(f"{source}.{name}") is not None:  # a submodule
            bound[asname or name] = f"{source}.{name}"
        elif walk.imports(source) is not None:
            bound[asname or name] = f"{source}:{name}"
        else:
            bound.pop(asname or name, None)


def _callee(called: str, bound: dict[str, str]) -> str:
    """What a call written by the name `called` calls, as "module:name", when that is a name
    bound to a consumer function or class ("f"), one on a consumer module ("m.f"), or a member
    of a consumer class ("C.m", as "module:C.m"); "" otherwise."""
    name, dot, attribute = called.partition(".")
    held = bound.get(name, "")
    if not dot:
        return held if ":" in held else ""
    if not held:
        return ""
    return f"{held}.{attribute}" if ":" in held else f"{held}:{attribute}"


def _calls(walk: _Walk, module: str, path: str, step: Step, bound: dict[str, str]) -> None:
    """Run the consumer function a statement calls at its top: `f(...)` as a statement, an
    assignment's value or a return value, `module.f(...)` alike. Its arguments are not followed
    (nor a call of a class, which runs its `__init__`); a method called on a consumer class
    (`C.m(...)`, vllm-omni's `OmniConnectorFactory.register_connector(...)`) runs its body."""
    target = _callee(step.callee, bound) if step.callee else ""
    callee, _, name = target.partition(":")
    found = _definition(walk, callee, name, 4) if target else None
    if found is None:
        _not_followed(walk, module, path, step, bound)
        return
    if _may_reach(walk, step.arguments, bound):
        walk.gave_up = True
    walk.chain.append(f"{name}() at {path}:{step.start}")
    # A method called on its class (`C.m(...)`): which parameter takes which positional argument
    # depends on its decorator (a classmethod's first is the class), so none is known.
    _run_function(walk, found, step.passed if "." not in name else (("*", ""),))
    if walk.found is None:
        walk.chain.pop()
