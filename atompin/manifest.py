"""`pairs.toml`: components, check edges and pinned pairs, validated with pydantic.

Every problem is reported as one line naming the file, the key path (such as
`pairs[2].vllm`) and its line, with what to do.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import tomlkit
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from tomlkit.exceptions import ParseError

from atompin.errors import InputError
from atompin.sources.git import check_ref, check_url

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_PACKAGE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Variables(_Strict):
    """Build variable names for one component (defaults: <NAME>_REPO, _REF, _COMMIT, _VERSION)."""

    repo: str | None = None
    ref: str | None = None
    commit: str | None = None
    version: str | None = None


class Component(_Strict):
    repo: str
    package: str
    # provider component -> file in this repo that declares its target (e.g. vllm-version.env)
    declares: dict[str, str] = Field(default_factory=dict)
    # entry-point groups of this component's plugin system (as a provider)
    plugin_groups: list[str] = Field(default_factory=list, alias="plugin-groups")
    # constants listing the GPU architectures its kernels support ("path/file.py:NAME" or "module:NAME")
    arch_constants: list[str] = Field(default_factory=list, alias="arch-constants")
    variables: Variables = Field(default_factory=Variables)

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("repo")
    @classmethod
    def _repo(cls, value: str) -> str:
        problem = check_url(value)
        if problem:
            raise ValueError(f"repository URL refused: {problem}")
        return value

    @field_validator("package")
    @classmethod
    def _package(cls, value: str) -> str:
        if not _PACKAGE.match(value):
            raise ValueError(f"{value!r} is not a Python import name")
        return value

    def variable(self, name: str, field: str) -> str:
        return getattr(self.variables, field) or f"{name.upper().replace('-', '_')}_{field.upper()}"


class CheckEdge(_Strict):
    consumer: str
    provider: str
    gate: bool = True
    # the consumer package to scan (default: the consumer component's package)
    consumer_package: str | None = Field(default=None, alias="consumer-package")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @property
    def name(self) -> str:
        return f"{self.consumer}->{self.provider}"


class Fleet(_Strict):
    """The GPUs the stack must run on."""

    gpu_archs: list[str] = Field(default_factory=list, alias="gpu-archs")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Pair(BaseModel):
    """A name plus one ref per component; the refs are the extra keys."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)
    name: str
    # overrides [fleet] gpu-archs for this pair
    gpu_archs: list[str] | None = Field(default=None, alias="gpu-archs")

    @property
    def refs(self) -> dict[str, str]:
        return dict(self.model_extra or {})

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a pair needs a non-empty name")
        return value

    @model_validator(mode="after")
    def _refs(self) -> Pair:
        for component, ref in self.refs.items():
            if not isinstance(ref, str):
                raise _KeyProblem((component,), "a ref must be a string (a tag, branch or commit)", relative=True)
            problem = check_ref(ref)
            if problem:
                raise _KeyProblem((component,), f"ref {ref!r} refused: {problem}", relative=True)
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
                raise _KeyProblem(("components", name), "component names are letters, digits, '-' and '_'")
        for i, edge in enumerate(self.checks):
            for role in ("consumer", "provider"):
                if getattr(edge, role) not in self.components:
                    raise _KeyProblem(
                        ("checks", i, role), f"unknown component {getattr(edge, role)!r}; declare it under [components]"
                    )
        seen: set[str] = set()
        for i, pair in enumerate(self.pairs):
            if pair.name in seen:
                raise _KeyProblem(("pairs", i, "name"), f"duplicate pair name {pair.name!r}; pair names must be unique")
            seen.add(pair.name)
            for component in pair.refs:
                if component not in self.components:
                    raise _KeyProblem(
                        ("pairs", i, component), f"unknown component {component!r}; declare it under [components]"
                    )
            if self.checks and not self.edges(pair):
                needs = ", ".join(e.name for e in self.checks)
                raise _KeyProblem(("pairs", i), f"pins no check edge: add refs for both ends of one of {needs}")
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
        blob = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
        return "sha256:" + hashlib.sha256(blob).hexdigest()


class _KeyProblem(ValueError):
    """A validation problem that knows its key path (relative to where it was raised, or absolute)."""

    def __init__(self, loc: tuple[Any, ...], message: str, relative: bool = False) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message
        self.relative = relative


def load_manifest(path: Path) -> tuple[Manifest, str]:
    """Read and validate `pairs.toml`; returns the manifest and its text."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise InputError(
            f"{path}: not found; create it (see README.md, 'pairs.toml') or pass --manifest PATH"
        ) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_manifest(text, path), text


def parse_manifest(text: str, path: Path | str = "pairs.toml") -> Manifest:
    try:
        data = tomlkit.parse(text).unwrap()
    except ParseError as exc:
        raise InputError(
            f"{path}:{exc.line}: not valid TOML ({exc.args[0] if exc.args else exc}); fix the syntax"
        ) from None
    if isinstance(data.get("pairs"), dict):  # a single [pairs] table instead of [[pairs]]
        raise InputError(f"{path}:{locate(text, ('pairs',))}: pairs: write each pair as a [[pairs]] table")
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        ctx_error = err.get("ctx", {}).get("error")
        if isinstance(ctx_error, _KeyProblem):
            loc = loc + ctx_error.loc if ctx_error.relative else ctx_error.loc
            message = ctx_error.message
        if err["type"] == "extra_forbidden":
            message = f"unknown key {loc[-1]!r}; remove it or check its spelling"
        elif err["type"] == "missing":
            message = f"missing required key {loc[-1]!r}"
        raise InputError(f"{path}:{locate(text, loc)}: {key_path(loc)}: {message}") from None


def key_path(loc: tuple[Any, ...]) -> str:
    """("pairs", 2, "vllm") -> "pairs[2].vllm"."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def locate(text: str, loc: tuple[Any, ...]) -> int:
    """Best-effort line of a key path in TOML text (1 when it cannot tell)."""
    lines = text.splitlines()
    keys = [k for k in loc if isinstance(k, str)]
    index = next((k for k in loc if isinstance(k, int)), None)
    if not keys:
        return 1
    top = keys[0]
    start, end = 0, len(lines)
    header_line = 0
    # Find the table (or n-th array-of-tables entry) that holds the key.
    count = -1
    for i, line in enumerate(lines):
        s = line.strip()
        if index is not None and s == f"[[{top}]]":
            count += 1
            if count == index:
                start, header_line = i + 1, i + 1
                end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("[")), len(lines))
                break
        elif index is None and len(keys) > 1 and s in (f"[{top}.{keys[1]}]", f'[{top}."{keys[1]}"]'):
            start, header_line = i + 1, i + 1
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("[")), len(lines))
            keys = keys[2:] or keys[1:2]
            break
        elif (
            index is None
            and len(keys) == 1
            and (s == f"[{top}]" or s.startswith(f"{top} =") or s.startswith(f"[{top}."))
        ):
            return i + 1
    wanted = keys[-1] if index is None else (keys[1] if len(keys) > 1 else None)
    if wanted:
        for j in range(start, end):
            if re.match(rf"^\s*\"?{re.escape(str(wanted))}\"?\s*=", lines[j]):
                return j + 1
    return header_line or 1


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
