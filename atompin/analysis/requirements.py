"""Consumer calls that a function of their own module refuses first, with its own error.

A consumer function may raise unless a provider callable takes some parameters
(`usage.Requirement`: verl 0.9.1's `require_vllm_delta_support` raises RuntimeError unless
vLLM's `WeightTransferEngine.__init__` takes `config`, `vllm_config`, `device` and `model`, and
is called before its delta backend is set up). Its module builds that feature on the callable,
and calls it the way the test requires (`super().__init__(config, vllm_config, device, model)`).
Where the checks decide the test fails, the user meets the consumer's own error, not a
TypeError from those calls: an error about that callable whose every site is in that module
becomes a warning that says so. Where the test holds, the calls are judged as any call.
"""

from __future__ import annotations

from collections.abc import Iterable

from atompin.analysis.demotion import demote
from atompin.analysis.usage import Requirement
from atompin.model import Finding


def _tested(requirement: Requirement) -> set[str]:
    """The symbols a requirement's test is about: each callable, and the class of an `__init__`
    (a finding on a class call names the class)."""
    symbols = {ref.symbol for ref in requirement.holds.refs}
    return symbols | {symbol.removesuffix(".__init__") for symbol in symbols}


def demote_refused(findings: list[Finding], failing: Iterable[Requirement]) -> list[Finding]:
    """Errors about a callable a requirement tests, whose every site is in the requiring
    function's module (the file of its raise), become warnings (`failing`: the requirements
    whose test fails at this provider)."""
    by_symbol: dict[str, list[Requirement]] = {}
    for requirement in failing:
        for symbol in _tested(requirement):
            by_symbol.setdefault(symbol, []).append(requirement)

    def why_idle(f: Finding) -> str | None:
        for r in by_symbol.get(f.symbol, ()):
            if all(site.path == r.site.path for site in f.sites):
                return (
                    f"refused first at this provider: {r.module}:{r.function} raises its own error at "
                    f"{r.site}, where its test `{r.holds.text}` holds"
                )
        return None

    return demote(findings, why_idle) if by_symbol else findings
