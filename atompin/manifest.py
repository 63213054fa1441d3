"""`pairs.toml`: components, check edges and pinned pairs, validated with pydantic.

Every problem is reported as one line naming the file, the key path (such as
`pairs[2].vllm`) and its line, with what to do.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from datetime import date
from pathlib import Path
from typing import Annotated

import tomlkit
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, field_validator, model_validator

from atompin.analysis.platforms import platform_error
from atompin.errors import InputError
from atompin.files import read_text
from atompin.model import Rule, env_prefix
from atompin.refs import check_ref, check_url
from atompin.tomlfile import KeyProblem, first_problem, key_path, locate, parse_toml

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
# Pair names reach env lines, GitHub outputs, Markdown, SARIF and image tags: keep them plain.
PAIR_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$")
# Build variable names (bake variables, env names, GitHub output names).
VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
_PACKAGE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class _Strict(BaseModel):
    # strict: TOML types are taken as written (`gate = "false"` is refused, not coerced)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Variables(_Strict):
    """Build variable names for one component (defaults: <NAME>_REPO, _REF, _COMMIT, _VERSION)."""

    repo: str | None = None
    ref: str | None = None
    commit: str | None = None
    version: str | None = None

    @field_validator("repo", "ref", "commit", "version")
    @classmethod
    def _variable_name(cls, value: str | None) -> str | None:
        if value is not None and not VARIABLE_NAME.match(value):
            raise ValueError(f"{value!r} is not a variable name; use letters, digits and '_' (not first a digit)")
        return value


class Component(_Strict):
    repo: str
    package: str
    # provider component -> the file (or files, in order) of this repo that declare its target
    # (vllm-version.env; a Dockerfile's `ARG VLLM_COMMIT=...` default)
    declares: dict[str, str | list[str]] = Field(default_factory=dict)
    # entry-point groups of this component's plugin system (as a provider)
    plugin_groups: list[str] = Field(default_factory=list, alias="plugin-groups")
    # constants listing the GPU architectures its kernels support ("path/file.py:NAME" or "module:NAME")
    arch_constants: list[str] = Field(default_factory=list, alias="arch-constants")
    variables: Variables = Field(default_factory=Variables)

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)

    @field_validator("repo")
    @classmethod
    def _repo(cls, value: str) -> str:
        problem = check_url(value)
        if problem:
            raise ValueError(f"repository URL refused: {problem}")
        return value

    @field_validator("declares", mode="before")
    @classmethod
    def _declares(cls, value: object) -> object:
        # Said here, once: the union's own errors name its branches (`declares.vllm.str`).
        for provider, files in value.items() if isinstance(value, dict) else ():
            if not (isinstance(files, str) or isinstance(files, list) and all(isinstance(f, str) for f in files)):
                raise ValueError(f"{provider}: give a file path or a list of file paths, not {files!r}")
        return value

    @field_validator("package")
    @classmethod
    def _package(cls, value: str) -> str:
        if not _PACKAGE.match(value):
            raise ValueError(f"{value!r} is not a Python import name")
        return value

    def declares_files(self, provider: str) -> list[str]:
        """The files of this repo that declare `provider`'s target, in the order given."""
        value = self.declares.get(provider, [])
        return [value] if isinstance(value, str) else list(value)

    def variable(self, name: str, field: str) -> str:
        """The build variable for `field` of component `name` (ATOM_REF unless renamed)."""
        return getattr(self.variables, field) or f"{env_prefix(name)}_{field.upper()}"


class Acceptance(_Strict):
    """A finding judged and accepted on one check edge: it stays in every report, marked accepted, and
    fails no gate, while the provider's version is in `provider` and until `until` (when given)."""

    rule: Rule = Field(strict=False)  # written as its name: "missing-patch-target"
    symbol: str  # a glob over finding symbols ("vllm.v1.core.kv_cache_utils:*")
    reason: str
    provider: str | None = None  # a packaging specifier over the provider's version
    until: date | None = None  # the last day it holds

    @field_validator("symbol", "reason")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty: say which finding, and why it is accepted")
        return value

    @field_validator("provider")
    @classmethod
    def _specifier(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                SpecifierSet(value)
            except InvalidSpecifier:
                raise ValueError(f"{value!r} is not a version specifier (write e.g. \">=0.31,<0.34\")") from None
        return value

    def active(self, version: str, today: date) -> bool:
        """Does it hold for a provider of `version` on `today`? (An unknown version is in no range.)"""
        if self.until is not None and today > self.until:
            return False
        if self.provider is None:
            return True
        try:
            return Version(version) in SpecifierSet(self.provider, prereleases=True)
        except InvalidVersion:
            return False

    def matches(self, rule: str, symbol: str) -> bool:
        return rule == self.rule.value and fnmatch.fnmatchcase(symbol, self.symbol)


class CheckEdge(_Strict):
    consumer: str
    provider: str
    gate: bool = True
    # the consumer package to scan (default: the consumer component's package)
    consumer_package: str | None = Field(default=None, alias="consumer-package")
    # findings judged and accepted on this edge
    accept: list[Acceptance] = Field(default_factory=list)
    # rules whose warnings fail this edge's gate too (e.g. ["shadow-drift"])
    fail_on: list[Annotated[Rule, Strict(False)]] = Field(default_factory=list, alias="fail-on")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)

    @property
    def name(self) -> str:
        return f"{self.consumer}->{self.provider}"


class Fleet(_Strict):
    """The GPUs the stack must run on, and the platform they make (`platforms.PLATFORMS`): what
    the code runs only on others is not reported."""

    gpu_archs: list[str] = Field(default_factory=list, alias="gpu-archs")
    platform: str | None = None

    @field_validator("platform")
    @classmethod
    def _platform(cls, value: str | None) -> str | None:
        if value is not None and (problem := platform_error(value)) is not None:
            raise ValueError(problem)
        return value

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)


class Pair(BaseModel):
    """A name plus one ref per component; the refs are the extra keys."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True, strict=True)
    name: str
    # overrides [fleet] gpu-archs for this pair
    gpu_archs: list[str] | None = Field(default=None, alias="gpu-archs")

    @property
    def refs(self) -> dict[str, str]:
        return dict(self.model_extra or {})

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not PAIR_NAME.match(value):
            raise ValueError(
                f"pair name {value!r} refused: use letters, digits, '.', '_', '+' and '-' (up to 100, first a "
                "letter or digit), e.g. atom-0.1.9+vllm-0.33"
            )
        return value

    @model_validator(mode="after")
    def _refs(self) -> Pair:
        for component, ref in self.refs.items():
            if not isinstance(ref, str):
                raise KeyProblem((component,), "a ref must be a string (a tag, branch or commit)", relative=True)
            problem = check_ref(ref)
            if problem:
                raise KeyProblem((component,), f"ref {ref!r} refused: {problem}", relative=True)
        return self


class Manifest(_Strict):
    components: dict[str, Component]
    checks: list[CheckEdge] = Field(default_factory=list)
    pairs: list[Pair]
    relocations: str = "relocations"
    fleet: Fleet = Field(default_factory=Fleet)

    def gpu_archs(self, pair: Pair) -> list[str]:
        return pair.gpu_archs if pair.gpu_archs is not None else self.fleet.gpu_archs

    @model_validator(mode="after")
    def _consistent(self) -> Manifest:
        for name in self.components:
            if not _NAME.match(name):
                raise KeyProblem(("components", name), "component names are letters, digits, '-' and '_'")
        for i, edge in enumerate(self.checks):
            for role in ("consumer", "provider"):
                if getattr(edge, role) not in self.components:
                    raise KeyProblem(
                        ("checks", i, role), f"unknown component {getattr(edge, role)!r}; declare it under [components]"
                    )
        seen: set[str] = set()
        for i, pair in enumerate(self.pairs):
            if pair.name in seen:
                raise KeyProblem(("pairs", i, "name"), f"duplicate pair name {pair.name!r}; pair names must be unique")
            seen.add(pair.name)
            for component in pair.refs:
                if component not in self.components:
                    raise KeyProblem(
                        ("pairs", i, component), f"unknown component {component!r}; declare it under [components]"
                    )
            if self.checks and not self.edges(pair):
                needs = ", ".join(e.name for e in self.checks)
                raise KeyProblem(("pairs", i), f"pins no check edge: add refs for both ends of one of {needs}")
        return self

    def edges(self, pair: Pair) -> list[CheckEdge]:
        """The check edges that apply to a pair: those whose both ends it pins."""
        return [e for e in self.checks if e.consumer in pair.refs and e.provider in pair.refs]

    def pair(self, name: str) -> Pair:
        for pair in self.pairs:
            if pair.name == name:
                return pair
        raise InputError(f"no pair named {name!r} (pairs: {', '.join(p.name for p in self.pairs)})")

    def digest(self) -> str:
        """A hash of what the manifest means (comments and layout do not change it)."""
        data = self.model_dump(mode="json", by_alias=True)
        data["pairs"] = [p.model_dump(mode="json", by_alias=True, exclude_none=True) for p in self.pairs]
        # A key left out means what it meant before the key existed: locks made then stay fresh.
        data["fleet"] = self.fleet.model_dump(mode="json", by_alias=True, exclude_none=True)
        blob = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
        return "sha256:" + hashlib.sha256(blob).hexdigest()

    def pair_meaning(self, pair: Pair) -> dict[str, object]:
        """Everything the manifest says that a pair's lock entry depends on: its refs, the
        components it pins, the check edges that apply, its GPU fleet and platform and the
        relocations folder. (Its hash in the lock tells a pair that `lock --pair` did not re-lock
        from a fresh one.)"""
        return {
            "pair": pair.model_dump(mode="json", by_alias=True, exclude_none=True),
            "components": {
                name: self.components[name].model_dump(mode="json", by_alias=True) for name in sorted(pair.refs)
            },
            "checks": [e.model_dump(mode="json", by_alias=True) for e in self.edges(pair)],
            "gpu-archs": self.gpu_archs(pair),
            "relocations": self.relocations,
            **({"platform": self.fleet.platform} if self.fleet.platform is not None else {}),
        }


def load_manifest(path: Path) -> tuple[Manifest, str]:
    """Read and validate `pairs.toml`; returns the manifest and its text."""
    text = read_text(
        path, "manifest", missing=f"{path}: not found; create it (see README.md, 'pairs.toml') or pass --manifest PATH"
    )
    manifest = parse_manifest(text, path)
    folder = path.parent / manifest.relocations
    if "relocations" in manifest.model_fields_set and not folder.is_dir():
        raise InputError(
            f"{path}:{locate(text, ('relocations',))}: relocations = {manifest.relocations!r}: no such folder "
            f"beside the manifest; create it or fix the path"
        )
    return manifest, text


def parse_manifest(text: str, path: Path | str = "pairs.toml") -> Manifest:
    """Validate manifest text; InputError with one line (file, line, key path, fix) on any problem."""
    data = parse_toml(text, path)
    if isinstance(data.get("pairs"), dict):  # a single [pairs] table instead of [[pairs]]
        raise InputError(f"{path}:{locate(text, ('pairs',))}: pairs: write each pair as a [[pairs]] table")
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        loc, message = first_problem(exc)
        raise InputError(f"{path}:{locate(text, loc)}: {key_path(loc)}: {message}") from None


def set_ref(text: str, component: str, ref: str, only: list[str] | None = None) -> tuple[str, list[str]]:
    """Pin `component` to `ref` in every pair that pins it (or the named ones), keeping layout.

    Returns the new text and the names of the pairs whose ref changed.
    """
    doc = tomlkit.parse(text)
    changed: list[str] = []
    for pair in doc.get("pairs", []):
        name = str(pair.get("name", ""))
        if component not in pair or (only and name not in only) or str(pair[component]) == ref:
            continue
        old = pair[component]
        new = tomlkit.string(ref)
        # Keep the comment and spacing that followed the old value.
        for attr in ("indent", "comment_ws", "comment", "trail"):
            setattr(new.trivia, attr, getattr(old.trivia, attr))
        pair[component] = new
        changed.append(name)
    return tomlkit.dumps(doc), changed
