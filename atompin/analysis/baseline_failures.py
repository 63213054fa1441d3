"""Consumer modules that stop importing at the baseline: what follows the failing import never runs there.

An import at a module's top level that nothing catches, under no branch kept from running at the
baseline, of a name the baseline provider lacks, raises ImportError there: the rest of the module
never runs at the provider the consumer was written against (vllm-kunlun's `interns1.py` imports
`vllm.model_executor.sampling_metadata`, gone before its baseline, 0.11.0). The consumer works
against its baseline, so nothing it relies on is in that part of the module; what the pin breaks
there is no change since. Errors whose every site is there become warnings that say so. What
comes before the failing import still runs at the baseline (a patch made first), and a module
importing the failing one is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from atompin.analysis.demotion import demote_hidden
from atompin.model import Finding, Site


@dataclass(frozen=True)
class ImportFailure:
    """The first top-level import of a consumer file that raises at the baseline."""

    site: Site
    symbol: str  # what it imports, as findings name it

    def hides(self, site: Site) -> bool:
        """Is `site` in the part of the file that never runs at the baseline (after this import)?"""
        return site.path == self.site.path and site.line > self.site.line


def first_failures(failures: list[ImportFailure]) -> dict[str, ImportFailure]:
    """The first failing import of each file (path -> failure)."""
    out: dict[str, ImportFailure] = {}
    for failure in sorted(failures, key=lambda f: (f.site.path, f.site.line)):
        out.setdefault(failure.site.path, failure)
    return out


def demote_after_failures(findings: list[Finding], failures: dict[str, ImportFailure]) -> list[Finding]:
    """Errors whose every site is after its file's first import failing at the baseline become
    warnings that say so."""

    def hider(site: Site) -> ImportFailure | None:
        failure = failures.get(site.path)
        return failure if failure is not None and failure.hides(site) else None

    def reason(first: ImportFailure) -> str:
        return (
            f"after {first.site}, whose import of {first.symbol} fails at the baseline too: that part of the "
            "module never runs there; not a change since"
        )

    return demote_hidden(findings, hider, reason) if failures else findings
