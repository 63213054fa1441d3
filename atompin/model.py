"""The data atompin passes between its stages: sites, symbols, findings.

Everything here is plain, immutable data. The code that fills it lives in
`atompin.analysis`; the code that prints it lives in `atompin.report`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from enum import Enum


class _Text(str, Enum):
    """A string enum that prints, formats, hashes and compares as its value (like
    3.11's StrEnum), so reports and dict lookups by the written word just work."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    def __hash__(self) -> int:
        return hash(self.value)


class Severity(_Text):
    """How bad a finding is. Only `error` fails a gate."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """0 for the worst (error): sort by it to list errors first."""
        return _SEVERITY_RANK[self]


_SEVERITY_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


class Verdict(_Text):
    """A pair's or an edge's judgement: `fail` blocks a gate, `warn` asks for a look."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"

    @property
    def rank(self) -> int:
        """0 for pass, 2 for fail: a higher rank is worse."""
        return _VERDICT_RANK[self]

    @classmethod
    def worst(cls, verdicts: Iterable[Verdict]) -> Verdict:
        """The worst of `verdicts` (pass when there are none)."""
        return max(verdicts, key=lambda v: v.rank, default=cls.PASS)


_VERDICT_RANK = {Verdict.PASS: 0, Verdict.WARN: 1, Verdict.FAIL: 2}


class RefKind(_Text):
    """What a pinned ref named: a tag, a branch (it moves) or a commit."""

    TAG = "tag"
    BRANCH = "branch"
    COMMIT = "commit"


def env_prefix(component: str) -> str:
    """A component name as the prefix of its variables (build variables, declares-file keys):
    "lm-cache" -> "LM_CACHE"."""
    return component.upper().replace("-", "_")


class Rule(_Text):
    """Stable rule names: they appear in the lock, in JSON and in SARIF."""

    UNRESOLVED_IMPORT = "unresolved-import"
    MISSING_PATCH_TARGET = "missing-patch-target"
    PATCH_ADDITION = "patch-addition"
    RELOCATION_STATE = "relocation-state"
    ARITY_DRIFT = "arity-drift"
    DECLARED_TARGET_SKEW = "declared-target-skew"
    UNPARSEABLE = "unparseable"
    DYNAMIC_TARGET = "dynamic-target"
    BRANCH_REF = "branch-ref"
    MOVED_REF = "moved-ref"
    UNCONSTRAINED_PLUGIN = "unconstrained-plugin"
    MODEL_OVERRIDE = "model-override"
    ARCH_COVERAGE = "arch-coverage"
    GATE_FLIP = "gate-flip"
    STALE_ACCEPTANCE = "stale-acceptance"
    VERSION_ASSERT = "version-assert"
    OVERRIDE_DRIFT = "override-drift"
    PROTOCOL_DRIFT = "protocol-drift"
    RETURN_DRIFT = "return-drift"
    SHADOW_DRIFT = "shadow-drift"
    MISSING_MEMBER = "missing-member"
    BASELINE_UNAVAILABLE = "baseline-unavailable"
    ANALYSIS_BOUND = "analysis-bound"
    NO_CONTACT = "no-contact"


RULE_DESCRIPTIONS: dict[Rule, str] = {
    Rule.UNRESOLVED_IMPORT: "an import site, attribute chain or ladder group resolves to nothing at the provider",
    Rule.MISSING_PATCH_TARGET: "a patched provider attribute does not exist at the provider (the silent case)",
    Rule.PATCH_ADDITION: "an assignment adds an attribute the provider never had (no original read, no guard)",
    Rule.RELOCATION_STATE: "the state of a relocation table entry: relocated, both, pending or broken",
    Rule.ARITY_DRIFT: "a signature at the target differs from what the table or the consumer expects",
    Rule.DECLARED_TARGET_SKEW: "the consumer declares a provider version/commit other than the pair's pin, or requires a version range excluding it",
    Rule.UNPARSEABLE: "a file could not be parsed; the symbols behind it are unknown, not missing",
    Rule.DYNAMIC_TARGET: "resolution reaches a runtime namespace (module __getattr__, external base); unknown",
    Rule.BRANCH_REF: "a pin is a branch name: image layers cached on the ref string never rebuild",
    Rule.MOVED_REF: "a tag now points at another commit than the lock recorded",
    Rule.UNCONSTRAINED_PLUGIN: "the consumer registers plugin entry points but declares no provider requirement",
    Rule.MODEL_OVERRIDE: "a model-class override whose wrapper does not resolve, or whose architecture the provider does not know",
    Rule.ARCH_COVERAGE: "no GPU architecture of the fleet is among those a component's kernels support",
    Rule.GATE_FLIP: "a version gate of the consumer has another value at the pin than at the baseline",
    Rule.BASELINE_UNAVAILABLE: "the provider the consumer was written against could not be resolved: drift went unjudged",
    Rule.ANALYSIS_BOUND: "the scan reached a bound that keeps it finite: some helpers were not read with what they are handed",
    Rule.NO_CONTACT: "the consumer imports, patches and reads nothing of the provider: the check proves nothing",
    Rule.STALE_ACCEPTANCE: "an accepted finding declared in pairs.toml matches no finding any more",
    Rule.VERSION_ASSERT: "a module-level assert on the provider's version fails at the pin: importing the module raises",
    Rule.OVERRIDE_DRIFT: "a consumer method overriding a provider method can no longer take the calls the provider makes to it",
    Rule.PROTOCOL_DRIFT: "a consumer class standing in for a provider class (or a namespace the consumer builds for a provider function) lacks a member the provider uses on it",
    Rule.RETURN_DRIFT: "a provider function's returned tuple and the consumer's unpacking or replacement differ in length, or a replacement returns what the original writes into an output buffer",
    Rule.MISSING_MEMBER: "a member read through self, super() or an annotated receiver was there at the baseline and is gone",
    Rule.SHADOW_DRIFT: "a consumer copy (an override or replacement that never calls the original) whose upstream changed",
}


@dataclass(frozen=True, order=True)
class Site:
    """A place in the consumer: a repository-relative POSIX path and a 1-based line."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


class Status(_Text):
    """What static resolution can say about a symbol."""

    FOUND = "found"
    MISSING = "missing"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Alternative:
    """One alternative of a try/except ImportError ladder, as judged."""

    symbol: str
    sites: tuple[Site, ...]
    status: Status


@dataclass(frozen=True)
class Finding:
    """One problem, with a stable rule name, a severity, the symbol and its sites."""

    rule: Rule
    severity: Severity
    symbol: str
    sites: tuple[Site, ...]
    message: str
    alternatives: tuple[Alternative, ...] = ()
    # Why pairs.toml accepts it ("" when it does not): an accepted finding fails no gate.
    accepted: str = ""
    # Longer evidence shown only on request (`--verbose`): e.g. the upstream diff behind a shadow-drift.
    detail: str = ""

    def sort_key(self) -> tuple[str, str, str, tuple[Site, ...], str]:
        return (self.rule.value, self.symbol, self.severity.value, self.sites, self.message)


@dataclass(frozen=True)
class Counts:
    """What one edge's consumer uses of the provider, counted so figures compare with
    other tools (README, "Counting"). The lock, the JSON report and the lock diff
    all take their count fields from here."""

    import_sites: int = 0
    symbols: int = 0
    groups: int = 0
    patch_sites: int = 0
    patch_targets: int = 0
    references: int = 0
    # Provider architectures the consumer's model-class overrides replace when enabled.
    overrides: int = 0


COUNT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Counts))


@dataclass(frozen=True)
class Summary(Counts):
    """The counts of one check, plus its findings counted by rule."""

    findings_by_rule: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Relocation:
    """One relocation table entry: `old` moved to `new`, with the parameters expected there."""

    old: str
    new: str
    params: tuple[str, ...] | None = None
    note: str = ""


class RelocationState(_Text):
    """Where a relocation entry stands at one provider commit."""

    RELOCATED = "relocated"  # the new symbol resolves, the old one is gone
    BOTH = "both"  # both resolve
    PENDING = "pending"  # the old one is still there, the new one is not
    BROKEN = "broken"  # neither resolves


@dataclass(frozen=True)
class GateReading:
    """A version gate of the consumer (`if vllm_version_is("0.31.0"):`), as evaluated statically:
    "true", "false" or "undecided" at the pin, and at the baseline ("" without one)."""

    site: Site
    text: str
    value: str
    baseline: str = ""


@dataclass(frozen=True)
class CheckResult:
    """Everything one consumer -> provider check produced."""

    consumer: str
    provider: str
    package: str
    summary: Summary
    findings: tuple[Finding, ...]
    # The consumer's version gates and their values (shown by --verbose).
    gates: tuple[GateReading, ...] = ()

    @property
    def errors(self) -> tuple[Finding, ...]:
        """The error findings that fail a gate (not those pairs.toml accepts)."""
        return tuple(f for f in self.findings if f.severity is Severity.ERROR and not f.accepted)
