"""Pair-level rules: what the pins themselves say, before any symbol is resolved.

Pure functions over file texts and resolved refs: `declared-target-skew`,
`branch-ref`, `unconstrained-plugin`, `baseline-unavailable`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from atompin.analysis.toml_data import read_toml
from atompin.lines import text_lines
from atompin.model import Finding, Rule, Severity, Site, env_prefix
from atompin.refs import HEX, short_ref
from atompin.sources.version import normalize_version

if TYPE_CHECKING:  # imported where used: only `lock` reads a pyproject
    from packaging.requirements import Requirement

_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def parse_env(text: str) -> dict[str, tuple[str, int]]:
    """`KEY=value` lines (quotes stripped, comments skipped) -> {KEY: (value, line)}. A shell's
    `export KEY=value` and a Dockerfile's `ARG KEY=default` and `ENV KEY=value` count too (an
    image's default pin: ATOM's Dockerfile says `ARG VLLM_COMMIT="..."`); the last of a key
    counts, as in a shell."""
    out: dict[str, tuple[str, int]] = {}
    for n, raw in enumerate(text_lines(text), start=1):
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        first, _, rest = line.partition(" ")
        if first.lower() in ("export", "arg", "env"):  # Dockerfile instructions ignore case
            line = rest.strip()
        key, _, value = line.partition("=")
        if key.strip().isidentifier():
            out[key.strip()] = (value.strip().strip("'\""), n)
    return out


def declared_entries(text: str, provider: str) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
    """The (value, line) of the version and of the commit a declares file names for `provider`:
    `VLLM_VERSION`, else a release tag `VLLM_TAG=v0.30.0` (vllm-ascend's Dockerfile), and
    `VLLM_COMMIT`. An empty value names nothing (`ARG VLLM_COMMIT=""`: the tag is built)."""
    env = parse_env(text)
    prefix = env_prefix(provider)
    commit = env.get(f"{prefix}_COMMIT")
    version = env.get(f"{prefix}_VERSION")
    if not (version and version[0]) and (tag := env.get(f"{prefix}_TAG")):
        version = (normalize_version(tag[0]), tag[1])
    return (version if version and version[0] else None, commit if commit and commit[0] else None)


def declared_target(text: str, provider: str) -> tuple[str, str]:
    """(version, commit) a declares file (`VLLM_VERSION=...`, `VLLM_COMMIT=...`) names for `provider`;
    a "commit" that is a ref (`HEAD`, a branch) names no commit: it moves."""
    version, commit = declared_entries(text, provider)
    return (version[0] if version else "", commit[0] if commit and HEX.match(commit[0].lower()) else "")


def version_distance(declared: str, pinned: str) -> str:
    """ "0.31.0" vs "0.33.0" -> "two minor releases apart"."""
    try:
        a, b = Version(declared), Version(pinned)
    except InvalidVersion:
        return "versions differ"
    ra, rb = (list(a.release) + [0, 0, 0])[:3], (list(b.release) + [0, 0, 0])[:3]
    for level, (x, y) in zip(("major", "minor", "patch"), zip(ra, rb)):
        if x != y:
            n = abs(x - y)
            word = _WORDS[n] if n < len(_WORDS) else str(n)
            direction = "newer" if y > x else "older"
            return f"{word} {level} release{'s' if n != 1 else ''} apart (the pin is {direction})"
    return "same release, different build" if a != b else "same version"


def declared_target_skew(
    consumer: str,
    provider: str,
    path: str,
    text: str | None,
    commit: str,
    version: str,
) -> list[Finding]:
    """Compare what the consumer declares (e.g. vllm-version.env) with the pair's pin."""

    def undeclared(message: str) -> list[Finding]:
        return [Finding(Rule.DECLARED_TARGET_SKEW, Severity.WARNING, f"{consumer}:{path}", (Site(path, 1),), message)]

    if text is None:
        return undeclared(
            f"{consumer} should declare its {provider} target in {path}, but the file is not there at this ref"
        )
    prefix = env_prefix(provider)
    declared_version, declared_commit = declared_entries(text, provider)
    if not declared_commit and not declared_version:
        # A renamed key (`VLLM_REF=`) would otherwise leave the edge without its declared baseline, unsaid.
        return undeclared(
            f"{consumer}'s {path} names no {provider} target: it sets neither {prefix}_VERSION (or a release "
            f"tag in {prefix}_TAG) nor {prefix}_COMMIT, so the pin cannot be compared with it, nor the drift rules "
            f"with the {provider} it declares; set one of them"
        )
    problems: list[str] = []
    line = 1
    if declared_commit and not HEX.match(declared_commit[0].lower()):
        # `AITER_COMMIT="HEAD"`: what it builds is whatever that ref names when the build runs.
        problems.append(
            f"{prefix}_COMMIT names {declared_commit[0]!r}, a ref, not a commit: a build from it takes whatever "
            f"{provider} commit that ref names when it runs, not the pinned {commit[:12]}; declare the commit"
        )
        line = declared_commit[1]
    elif declared_commit and not commit.startswith(declared_commit[0].lower()):
        problems.append(f"commit {declared_commit[0][:12]} declared, {commit[:12]} pinned")
        line = declared_commit[1]
    if declared_version and version and _as_version(declared_version[0]) != _as_version(version):
        problems.append(
            f"version {declared_version[0]} declared, {version} pinned: {version_distance(declared_version[0], version)}"
        )
        line = declared_version[1] if not problems[:-1] else line
    if not problems:
        return []
    return [
        Finding(
            Rule.DECLARED_TARGET_SKEW,
            Severity.WARNING,
            f"{provider}@{version or commit[:12]}",
            (Site(path, line),),
            f"{consumer} declares another {provider} than the pair pins ({'; '.join(problems)})",
        )
    ]


def baseline_unavailable(
    provider: str,
    refs: list[str],
    source: str,
    why: str,
    path: str = "",
    text: str | None = None,
    others: Sequence[str] = (),
) -> Finding:
    """The edge's baseline (`refs` tried in order, from `source`: "declared", "option" or
    "previous-lock") could not be resolved (`why`: what went wrong, said without machine paths),
    so the edge was checked without one. Sited at the declares file's line when it came from there
    (`path`, the first that named one of `refs`; `others`: the other declares files that did)."""
    sites: tuple[Site, ...] = ()
    if path and text is not None:
        found = [entry[1] for entry in declared_entries(text, provider) if entry is not None]
        sites = (Site(path, min(found) if found else 1),)
    where = {
        "declared": f"the {provider} the consumer declares" + (f" in {' and '.join([path, *others])}" if path else ""),
        "option": "the --baseline given",
        "previous-lock": "the pair's previous pin in the lock",
    }.get(source, "the baseline")
    return Finding(
        Rule.BASELINE_UNAVAILABLE,
        Severity.WARNING,
        f"{provider}@{refs[0]}",
        sites,
        f"{where} ({' / '.join(short_ref(r) for r in refs)}) could not be resolved ({why}), so this edge was "
        "checked without a baseline: nothing counts as gone or changed since the provider the consumer was "
        "written against, and the drift rules find less. Make that commit reachable in the repository, or "
        "pass --baseline REF",
    )


def _as_version(text: str) -> Version | str:
    try:
        return Version(text)
    except InvalidVersion:
        return text


def branch_ref(component: str, ref: str) -> Finding:
    return Finding(
        Rule.BRANCH_REF,
        Severity.WARNING,
        f"{component}@{ref}",
        (),
        f"{component} is pinned to the branch {ref!r}: an image layer cached on the ref string never "
        "rebuilds when the branch moves; pin a tag or a commit",
    )


@dataclass(frozen=True)
class PyProject:
    """A consumer's pyproject.toml, read once for the rules that ask it: its text (for the lines
    findings cite) and its `[project]` table."""

    text: str
    project: dict[str, Any]


def read_pyproject(text: str | None) -> PyProject | None:
    """The pyproject.toml `text` (None: there is none), parsed; None when it does not parse."""
    data = read_toml(text) if text is not None else None
    if text is None or data is None:
        return None
    project = data.get("project", {})
    return PyProject(text, project if isinstance(project, dict) else {})


def requirement_skew(
    consumer: str, provider: str, provider_package: str, pyproject: PyProject | None, version: str
) -> list[Finding]:
    """The consumer's own requirement on the provider (`project.dependencies` in its pyproject)
    excludes the pinned version: pip will not install the pair together, or installs another
    provider under the plugin. A requirement of an optional extra is left out (installed only on
    request); a local label (`vllm==0.30.0+cpu`, a build of that release) does not count."""
    from packaging.specifiers import SpecifierSet

    if pyproject is None or not version:
        return []
    try:
        pinned = Version(version)
    except InvalidVersion:
        return []
    for dep, req in _provider_requirements(pyproject.project, provider, provider_package):
        if req.marker is not None and "extra" in str(req.marker):
            continue
        public = SpecifierSet(",".join(f"{s.operator}{s.version.split('+')[0]}" for s in req.specifier))
        if not str(public) or public.contains(pinned.public, prereleases=True):
            continue
        return _pyproject_warning(
            Rule.DECLARED_TARGET_SKEW,
            f"{provider}@{version}",
            pyproject,
            dep,
            f"{consumer} requires {dep}, which {provider} {version} does not satisfy: pip will not install the "
            f"pair together, or installs another {provider} under the plugin; widen the requirement, or pin a "
            "release it allows",
        )
    return []


def unconstrained_plugin(
    consumer: str, provider: str, provider_package: str, plugin_groups: list[str], pyproject: PyProject | None
) -> list[Finding]:
    """The consumer arms a plugin in the provider's entry-point groups without requiring any provider version."""
    if pyproject is None:
        return []
    project = pyproject.project
    groups = project.get("entry-points", {}) or {}
    wanted = plugin_groups or [g for g in groups if g.startswith(f"{provider_package}.")]
    armed = sorted(g for g in wanted if groups.get(g))
    if not armed:
        return []
    if any(str(req.specifier) for _, req in _provider_requirements(project, provider, provider_package)):
        return []
    return _pyproject_warning(
        Rule.UNCONSTRAINED_PLUGIN,
        f"{consumer}:pyproject.toml",
        pyproject,
        armed[0],
        f"{consumer} registers entry points in {', '.join(armed)} but declares no {provider} version "
        f"requirement: installing it arms the plugin against any {provider}",
    )


def _pyproject_warning(rule: Rule, symbol: str, pyproject: PyProject, text: str, message: str) -> list[Finding]:
    """A warning at the first line of pyproject.toml that holds `text` (its first line, if none does)."""
    line = next((i + 1 for i, written in enumerate(text_lines(pyproject.text)) if text in written), 1)
    return [Finding(rule, Severity.WARNING, symbol, (Site("pyproject.toml", line),), message)]


def _provider_requirements(project: dict[str, Any], provider: str, package: str) -> list[tuple[str, Requirement]]:
    """Each requirement of `project.dependencies` on the provider (by its component's or its
    package's name), as written and parsed; one that does not parse is left out."""
    # Imported here: only `lock` reads a pyproject, and these are slow to import.
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    names = {canonicalize_name(provider), canonicalize_name(package)}
    found = []
    for dep in project.get("dependencies", []) or []:
        try:
            req = Requirement(dep)
        except (InvalidRequirement, TypeError):
            continue
        if canonicalize_name(req.name) in names:
            found.append((dep, req))
    return found
