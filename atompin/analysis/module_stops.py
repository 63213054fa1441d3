"""Consumer modules that stop importing at the provider checked: what follows never runs there.

A module-level `if <test>: raise ...` whose test is a version gate or a test of the provider's
names (`usage.ModuleStop`) raises wherever the test holds, and the checks decide where it does:
the module's rest runs only where the test fails. Where it holds, nothing after the raise runs,
and when the module is a package's `__init__`, no module under the package imports either (its
`__init__` runs first). sglang's in-tree FlyDSL decode package raises ImportError unless aiter's
`_to_ptr_global` takes `dtype`, and its loader falls back to another kernel: the calls in the
package's kernels never run against an aiter without it. Errors whose every site is there become
warnings that say so. What comes before the raise still runs.
"""

from __future__ import annotations

from collections.abc import Callable

from atompin.analysis.demotion import demote_hidden
from atompin.analysis.usage import ModuleStop
from atompin.model import Finding, Site


def _hides(stop: ModuleStop, site: Site, module_of: Callable[[str], str]) -> bool:
    """Is `site` code that never runs once `stop` raises (later in its file, or under its package)?"""
    if site.path == stop.site.path:
        return site.line > stop.site.line
    return stop.is_package and module_of(site.path).startswith(f"{stop.module}.")


def demote_stopped(findings: list[Finding], stops: list[ModuleStop], module_of: Callable[[str], str]) -> list[Finding]:
    """Errors whose every site never runs because a module stops at this provider (`stops`: the
    stops whose raise surely runs here; `module_of`: a consumer file's module) become warnings."""

    def reason(first: ModuleStop) -> str:
        test = first.rest[-1].text if first.rest else ""
        return f"never runs at this provider: importing {first.module} raises at {first.site}, where its test `{test}` holds"

    def hider(site: Site) -> ModuleStop | None:
        return next((stop for stop in stops if _hides(stop, site, module_of)), None)

    return demote_hidden(findings, hider, reason) if stops else findings
