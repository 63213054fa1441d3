"""`atompin doctor`: the runtime half. This is the ONE place atompin imports and runs code.

Run deliberately, in a live environment with the stack installed: it finds the
consumer's patch sites statically, records every patched provider attribute,
calls the consumer's plugin entry points the way the host does (each isolated
so one failure does not hide the others), and reports per patch whether it
went in, stood down for a reason, or raised.
"""

from __future__ import annotations

import importlib
import logging
import sys
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from atompin.analysis.engine import scan_consumer
from atompin.analysis.usage import Guard, PatchSite, ReadKind, Ref, effective_guard
from atompin.sources.installed import Installed

DEFAULT_GROUPS = ("vllm.platform_plugins", "vllm.general_plugins")
_ABSENT = object()


class PatchOutcome(str, Enum):
    """What became of one patch when the plugins ran."""

    INSTALLED = "installed"
    STOOD_DOWN = "stood down"  # a guard or the installer explains why not
    RAISED = "raised"
    NOT_INSTALLED = "not installed"  # and nothing explains why


class EntryPointOutcome(str, Enum):
    OK = "ok"
    LOAD_FAILED = "load failed"
    RAISED = "raised"


@dataclass
class PatchRow:
    target: str
    site: str
    state: PatchOutcome
    reason: str = ""


@dataclass
class EntryPointRow:
    group: str
    name: str
    value: str
    state: EntryPointOutcome
    detail: str = ""


@dataclass
class DoctorReport:
    consumer: str
    patches: list[PatchRow] = field(default_factory=list)
    entry_points: list[EntryPointRow] = field(default_factory=list)

    @property
    def unexplained(self) -> list[PatchRow]:
        return [p for p in self.patches if p.state is PatchOutcome.NOT_INSTALLED]

    @property
    def failed_entry_points(self) -> list[EntryPointRow]:
        return [e for e in self.entry_points if e.state is not EntryPointOutcome.OK]

    @property
    def ok(self) -> bool:
        return not self.unexplained and not self.failed_entry_points

    def as_dict(self) -> dict[str, Any]:
        return {
            "schema": "atompin.doctor/1",
            "consumer": self.consumer,
            "ok": self.ok,
            "entry_points": [{**asdict(e), "state": e.state.value} for e in self.entry_points],
            "patches": [{**asdict(p), "state": p.state.value} for p in self.patches],
        }


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _runtime_object(ref: Ref) -> Any:
    """Import the longest importable module prefix of `ref`, then walk its attributes."""
    parts = [*ref.module.split("."), *ref.path]
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            obj: Any = importlib.import_module(name)
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(f"cannot import {ref.module}")


def _guard_reason(patch: PatchSite, reads: set[ReadKind], missing: bool) -> str:
    guard = effective_guard(patch, reads)
    if guard is Guard.NONE:
        return ""
    what = "the target does not exist" if missing else "the guard skipped it"
    return f"{what}; the installer is guarded ({guard.value})"


def run_doctor(
    consumer: Installed,
    provider_package: str,
    groups: tuple[str, ...] = DEFAULT_GROUPS,
    consumer_packages: list[str] | None = None,
) -> DoctorReport:
    """Load the consumer's plugins as the host would and say which patches went in."""
    tree = consumer.tree
    packages = consumer_packages or tree.top_level_packages()
    usage = scan_consumer(tree, packages, provider_package)
    reads = usage.read_kinds()
    report = DoctorReport(consumer.name)

    # 1. What every patched attribute holds before the plugins run.
    before: list[tuple[PatchSite, Any, Any, str]] = []
    for patch in sorted(usage.patches, key=lambda p: p.site):
        if patch.literal_value:
            continue  # marker flags are not patches worth a row
        owner, value, problem = None, _ABSENT, ""
        for ref in patch.owner:
            try:
                owner = _runtime_object(ref)
                value = getattr(owner, patch.attr, _ABSENT)
                problem = ""
                break
            except Exception as exc:
                problem = f"{type(exc).__name__}: {exc}"
        before.append((patch, owner, value, problem))

    # 2. The entry points, called the way the host calls them, one at a time.
    capture = _Capture()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(capture)
    root.setLevel(logging.DEBUG)
    raised: list[str] = []
    try:
        for ep in sorted(consumer.entry_points, key=lambda e: (e.group, e.name)):
            if ep.group not in groups:
                continue
            try:
                hook = ep.load()
            except BaseException as exc:
                report.entry_points.append(
                    EntryPointRow(
                        ep.group, ep.name, ep.value, EntryPointOutcome.LOAD_FAILED, f"{type(exc).__name__}: {exc}"
                    )
                )
                continue
            try:
                hook()
                report.entry_points.append(EntryPointRow(ep.group, ep.name, ep.value, EntryPointOutcome.OK))
            except BaseException as exc:
                detail = f"{type(exc).__name__}: {exc}"
                raised.append(f"{ep.name}: {detail}")
                report.entry_points.append(EntryPointRow(ep.group, ep.name, ep.value, EntryPointOutcome.RAISED, detail))
    finally:
        root.removeHandler(capture)
        root.setLevel(old_level)
    consumer_logs = [
        r
        for r in capture.records
        if any(r.name.startswith(p.split(".")[0]) for p in packages) or r.levelno >= logging.WARNING
    ]

    # 3. One row per patch.
    for patch, owner, value, problem in before:
        target = (
            f"{patch.owner[0].symbol}.{patch.attr}" if patch.owner[0].path else f"{patch.owner[0].module}:{patch.attr}"
        )
        site = str(patch.site)
        if owner is None:
            report.patches.append(
                PatchRow(target, site, PatchOutcome.STOOD_DOWN, f"the patched object is not importable ({problem})")
            )
            continue
        now = getattr(owner, patch.attr, _ABSENT)
        if now is not value and now is not _ABSENT:
            report.patches.append(PatchRow(target, site, PatchOutcome.INSTALLED))
            continue
        reason = _guard_reason(patch, reads.get((patch.owner, patch.attr), set()), value is _ABSENT)
        mentioned = [r for r in consumer_logs if patch.attr in r.getMessage()]
        if not reason and mentioned:
            reason = f"the installer logged: {mentioned[-1].getMessage()}"
        if reason:
            report.patches.append(PatchRow(target, site, PatchOutcome.STOOD_DOWN, reason))
        elif raised:
            report.patches.append(PatchRow(target, site, PatchOutcome.RAISED, "; ".join(raised)))
        else:
            report.patches.append(PatchRow(target, site, PatchOutcome.NOT_INSTALLED, "nothing explains why"))
    return report


def render_text(report: DoctorReport) -> str:
    lines = [f"atompin doctor: {report.consumer}", ""]
    for e in report.entry_points:
        lines.append(f"  entry point {e.group}:{e.name} -> {e.state.value}" + (f" ({e.detail})" if e.detail else ""))
    lines.append("")
    width = max((len(p.target) for p in report.patches), default=0)
    for p in report.patches:
        lines.append(f"  {p.state.value:<14} {p.target:<{width}}  {p.site}" + (f"  {p.reason}" if p.reason else ""))
    lines.append("")
    verdict = "OK" if report.ok else "PROBLEM"
    counts = {outcome: sum(p.state is outcome for p in report.patches) for outcome in PatchOutcome}
    lines.append(
        f"{verdict}: {counts[PatchOutcome.INSTALLED]} installed, {counts[PatchOutcome.STOOD_DOWN]} stood down, "
        f"{counts[PatchOutcome.RAISED]} raised, {len(report.unexplained)} not installed without a reason, "
        f"{len(report.failed_entry_points)} entry point(s) failed"
    )
    return "\n".join(lines) + "\n"


def run_installed_doctor(
    consumer: str,
    provider: str,
    groups: list[str] | None = None,
    consumer_package: str | None = None,
    site: list[str] | None = None,
) -> DoctorReport:
    """`atompin doctor`: the installed distribution `consumer`, its plugins loaded into this process."""
    from atompin.sources.installed import load_installed

    dist = load_installed(consumer, site)
    if site:
        ensure_on_path(site)
    chosen = tuple(groups or (f"{provider}.platform_plugins", f"{provider}.general_plugins"))
    return run_doctor(dist, provider, chosen, [consumer_package] if consumer_package else None)


def ensure_on_path(paths: list[str]) -> None:
    for p in reversed(paths):
        if p not in sys.path:
            sys.path.insert(0, p)
