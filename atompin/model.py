"""The data atompin passes between its stages: sites, symbols, findings.

Everything here is plain, immutable data. The code that fills it lives in
`atompin.analysis`; the code that prints it lives in `atompin.report`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Severity(str, Enum):
    """How bad a finding is. Only `error` fails a gate."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


class Rule(str, Enum):
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


RULE_DESCRIPTIONS: dict[Rule, str] = {
    Rule.UNRESOLVED_IMPORT: "an import site, attribute chain or ladder group resolves to nothing at the provider",
    Rule.MISSING_PATCH_TARGET: "a patched provider attribute does not exist at the provider (the silent case)",
    Rule.PATCH_ADDITION: "an assignment adds an attribute the provider never had (no original read, no guard)",
    Rule.RELOCATION_STATE: "the state of a relocation table entry: relocated, both, pending or broken",
    Rule.ARITY_DRIFT: "a signature at the target differs from what the table or the consumer expects",
    Rule.DECLARED_TARGET_SKEW: "the consumer declares a provider version/commit other than the pair's pin",
    Rule.UNPARSEABLE: "a file could not be parsed; the symbols behind it are unknown, not missing",
    Rule.DYNAMIC_TARGET: "resolution reaches a runtime namespace (module __getattr__, external base); unknown",
    Rule.BRANCH_REF: "a pin is a branch name: image layers cached on the ref string never rebuild",
    Rule.MOVED_REF: "a tag now points at another commit than the lock recorded",
    Rule.UNCONSTRAINED_PLUGIN: "the consumer registers plugin entry points but declares no provider requirement",
    Rule.MODEL_OVERRIDE: "a model-class override whose wrapper does not resolve, or whose architecture the provider does not know",
    Rule.ARCH_COVERAGE: "no GPU architecture of the fleet is among those a component's kernels support",
}


@dataclass(frozen=True, order=True)
class Site:
    """A place in the consumer: a repository-relative POSIX path and a 1-based line."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"

    @classmethod
    def parse(cls, text: str) -> Site:
        path, _, line = text.rpartition(":")
        return cls(path, int(line))


class Status(str, Enum):
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

    def sort_key(self) -> tuple[str, str, str, tuple[Site, ...], str]:
        return (self.rule.value, self.symbol, self.severity.value, self.sites, self.message)


@dataclass(frozen=True)
class Summary:
    """Counts that compare with other tools (see DESIGN.md, "Counting")."""

    import_sites: int
    symbols: int
    groups: int
    patch_sites: int
    patch_targets: int
    references: int
    findings_by_rule: dict[str, int] = field(default_factory=dict)
    # Provider architectures the consumer's model-class overrides replace when enabled.
    overrides: int = 0


@dataclass(frozen=True)
class CheckResult:
    """Everything one consumer -> provider check produced."""

    consumer: str
    provider: str
    package: str
    summary: Summary
    findings: tuple[Finding, ...]

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.ERROR)
