"""Can this branch run at this provider? The conditions a use sits under, decided at one provider.

The scanner records each use with the conditions of the branch it is in
(`usage.Condition`): version gates, the other branch of a `hasattr` test, an
`except ImportError` handler, the rest of a try body after its imports, a
`self.flag` test in a method. Here they are decided against a provider's
version and names:

- a gate that is false, a `find_spec` test of a provider module that fails here,
  an import before the use that fails, or a flag the provider keeps false
  (`switched_off`), means the use never runs: it is skipped, like code under
  `if TYPE_CHECKING:`;
- a fallback that only runs when something the provider has is missing (a
  hasattr's other branch, an import handler whose imports all resolve) is
  kept as information: "a fallback for older providers";
- a gate that cannot be evaluated (a form not understood, or no provider
  version known) caps what is found under it at a warning that names it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from atompin.analysis import gates
from atompin.analysis.usage import Condition, ConditionKind, Ref
from atompin.model import Severity, Status


class Reach(str, Enum):
    LIVE = "live"  # runs, as far as we can tell
    UNDECIDED = "undecided"  # under a version gate that could not be evaluated
    FALLBACK = "fallback"  # runs only when something the provider has is missing
    DEAD = "dead"  # cannot run at this provider


_ORDER = {Reach.LIVE: 0, Reach.UNDECIDED: 1, Reach.FALLBACK: 2, Reach.DEAD: 3}


@dataclass(frozen=True)
class Judgement:
    reach: Reach = Reach.LIVE
    why: str = ""  # said in the message of what is found there

    def adjust(self, severity: Severity, message: str) -> tuple[Severity, str]:
        """A finding's severity and message, as this judgement makes them."""
        if self.reach is Reach.FALLBACK:
            return Severity.INFO, f"{message} ({self.why})"
        if self.reach is Reach.UNDECIDED and severity is Severity.ERROR:
            return Severity.WARNING, f"{message} ({self.why})"
        return severity, message


LIVE = Judgement()


# Does provider callable `ref` take a parameter of that name (None: not known)?
Takes = Callable[[Ref, str], bool | None]


def judge(
    when: Sequence[Condition],
    version: str | None,
    status: Callable[[Ref], Status],
    switched_off: Callable[[str, str], bool] = lambda owner, attr: False,
    takes: Takes = lambda ref, name: None,
    platform: str | None = None,
) -> Judgement:
    """The worst of what the conditions say at a provider of `version`, whose names `status` resolves;
    `switched_off(owner, attr)` says whether instances of consumer class `owner` always have `attr` false;
    `takes(ref, name)` whether a provider callable takes a parameter of that name; `platform` is
    the one the code runs on (`platforms.PLATFORMS`; None: any)."""
    found = LIVE
    for condition in when:
        # The kinds decided by what the callers know beyond the provider's names.
        if condition.kind is ConditionKind.PLATFORM:
            never = condition.fails if condition.expect else condition.holds
            judgement = Judgement(Reach.DEAD) if platform is not None and platform in never else LIVE
        elif condition.kind is ConditionKind.FLAG:
            judgement = Judgement(Reach.DEAD) if switched_off(condition.owner, condition.attr) else LIVE
        elif condition.kind is ConditionKind.PARAM_TAKEN:
            judgement = _signature_test(condition, takes)
        else:
            judgement = _one(condition, version, status)
        if _ORDER[judgement.reach] > _ORDER[found.reach]:
            found = judgement
    return found


def live_at(
    when: Sequence[Condition], version: str | None, status: Callable[[Ref], Status], takes: Takes = lambda r, n: None
) -> bool:
    """Does code under these conditions surely run at a provider of `version` whose names `status`
    resolves (no condition dead, undecided or a fallback there)? With no conditions, yes."""
    return not when or judge(when, version, status, takes=takes).reach is Reach.LIVE


def _signature_test(c: Condition, takes: Takes) -> Judgement:
    """Dead where every callable tested takes the parameters (`attr`, and `also`), or every one
    lacks one of them, the other way."""
    taken = {_takes_all(takes, ref, (c.attr, *c.also)) for ref in c.refs}
    return Judgement(Reach.DEAD) if len(taken) == 1 and None not in taken and taken != {c.expect} else LIVE


def _takes_all(takes: Takes, ref: Ref, names: tuple[str, ...]) -> bool | None:
    """Does `ref` take every one of `names` (None: not known)?"""
    answers = [takes(ref, name) for name in names]
    return False if False in answers else None if None in answers else True


def _one(c: Condition, version: str | None, status: Callable[[Ref], Status]) -> Judgement:
    if c.kind is ConditionKind.GATE and c.gate is not None:
        value = gates.evaluate(c.gate, version)
        if value is not None and value != c.expect:
            return Judgement(Reach.DEAD)
        if value is None and gates.undecided_by_version(c.gate, version):
            at = f"at {version}" if version else "(no provider version known)"
            return Judgement(Reach.UNDECIDED, f"under the version gate `{c.text}` at {c.site}, undecided {at}")
        return LIVE
    if c.kind is ConditionKind.ATTR_ABSENT:
        names = (c.attr, *c.also)
        if all(any(status(ref.attr(name)) is Status.FOUND for ref in c.refs) for name in names):
            which = f"`{c.attr}` is" if not c.also else f"one of {', '.join(f'`{n}`' for n in names)} is"
            are = "it is" if not c.also else "they all are"
            return Judgement(
                Reach.FALLBACK,
                f"a fallback for older providers: it runs only when {which} absent ({c.text} at {c.site}), "
                f"and {are} present here",
            )
        return LIVE
    if c.kind is ConditionKind.ATTR_PRESENT:
        if c.refs and all(status(ref.attr(c.attr)) is Status.MISSING for ref in c.refs):
            return Judgement(Reach.DEAD)  # the test is false here: the other branch's definition is made
        return LIVE
    if c.kind is ConditionKind.TRY_FAILED:
        if c.others_present and all(status(ref) is Status.FOUND for ref in c.refs):
            return Judgement(
                Reach.FALLBACK,
                f"a fallback: it runs only when an import of the try at {c.site} fails, and they all resolve here",
            )
        return LIVE
    if c.kind is ConditionKind.MODULE_FOUND:
        found = {status(ref) for ref in c.refs}
        if c.refs and (found <= {Status.FOUND} or found <= {Status.MISSING}):  # decided: the module is there, or not
            if (Status.FOUND in found) != c.expect:
                return Judgement(Reach.DEAD)  # like a false version gate: the other branch runs here
        return LIVE
    if c.kind is ConditionKind.AFTER_IMPORTS:
        if any(status(ref) is Status.MISSING for ref in c.refs):
            return Judgement(Reach.DEAD)  # the import before it raises first, and is reported
        return LIVE
    return LIVE
