"""docker buildx bake files (HCL or JSON), merged the way `docker buildx bake -f A -f B` merges them.

What bake does, and so what this module does (docker/buildx, bake/hclparser):

- Files are merged in the order given. A `variable "X"` block in a later file replaces the
  earlier block whole (a later block without `default` leaves X empty). Targets of the same
  name merge attribute by attribute; map attributes (`args`, `labels`, `contexts`) key by key.
- A variable takes the value of the environment variable of the same name when one is set
  (even to the empty string), unless BUILDX_BAKE_DISABLE_VARS_ENV_LOOKUP is true. A variable
  without a default is the empty string.
- A top-level attribute (`X = "v"`) is also a variable; the last one set wins, over any
  `variable "X"` block's default. The environment overrides it only when a `variable "X"`
  block exists too.

Values are evaluated as far as string templates go: literal text and `${NAME}`
interpolations of other variables. Anything else (a function call, a conditional) is
left unevaluated and said so. Each target attribute records the variables it reads, and
whether it reads them behind a test (`X != "" ? X : Y`, `coalesce(X, Y)`): that is how a
caller tells a variable the build really uses from one it only declares.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from atompin.errors import InputError
from atompin.files import read_text

ENV_LOOKUP_SWITCH = "BUILDX_BAKE_DISABLE_VARS_ENV_LOOKUP"
_IDENT = re.compile(r"(?<![\w.\"-])[A-Za-z_][A-Za-z0-9_]*(?![\w(-])")
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')
_NAME_ONLY = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_-]*)\s*$")


@dataclass(frozen=True)
class Expr:
    """A value as written: a string template (`"v${X}"`; every JSON string) or a bare
    expression (`X`, `notequal("", X) ? X : Y`)."""

    text: str
    template: bool

    def segments(self) -> list[str]:
        """The expression parts: the bare expression, or each `${...}` of a template."""
        return _interpolations(self.text) if self.template else [self.text]


@dataclass(frozen=True)
class Variable:
    """A `variable "NAME"` block, or a top-level attribute `NAME = value`."""

    name: str
    default: Expr | None  # None: no default (the empty string)
    where: str  # "path:line"


@dataclass
class BakeFile:
    path: Path
    variables: dict[str, Variable] = field(default_factory=dict)  # variable blocks
    attributes: dict[str, Variable] = field(default_factory=dict)  # top-level attributes
    # target name -> attribute (map attributes as "args.KEY") -> the expressions in it
    targets: dict[str, dict[str, list[Expr]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Value:
    """A variable's value in the merged result."""

    name: str
    value: str | None  # None: an expression this module does not evaluate
    source: str  # "docker-bake.hcl:9", or "the environment"

    @property
    def from_environment(self) -> bool:
        return self.source == "the environment"


@dataclass(frozen=True)
class Use:
    """A target attribute that reads a variable."""

    target: str
    attribute: str
    guarded: bool  # read only behind a test of its value


@dataclass
class Bake:
    """Several bake files merged, with the environment applied."""

    files: list[Path]
    values: dict[str, Value]
    uses: dict[str, list[Use]]

    def unguarded_use(self, name: str) -> Use | None:
        """A place where the build reads the variable's value as it is (directly or through
        another variable's default), or None."""
        return next((u for u in self.uses.get(name, []) if not u.guarded), None)


# -- reading ---------------------------------------------------------------------------------


def read(path: Path) -> BakeFile:
    """One bake file, HCL or JSON (by suffix, or by content starting with `{`)."""
    text = read_text(path, "bake file")
    if path.suffix == ".json" or text.lstrip().startswith("{"):
        return _from_json(path, text)
    return _from_hcl(path, text)


def _from_json(path: Path, text: str) -> BakeFile:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); fix the bake file") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}:1: a bake file in JSON is an object; fix the bake file")
    out = BakeFile(path)
    for name, body in (data.get("variable") or {}).items():
        default = body.get("default") if isinstance(body, dict) else None
        expr = None if default is None else Expr(_json_text(default), True)
        out.variables[name] = Variable(name, expr, _where(path, text, json.dumps(name)))
    for name, value in data.items():
        if name not in ("variable", "target", "group", "function") and not isinstance(value, (dict, list)):
            out.attributes[name] = Variable(name, Expr(_json_text(value), True), _where(path, text, json.dumps(name)))
    for name, body in (data.get("target") or {}).items():
        if isinstance(body, dict):
            out.targets.setdefault(name, {}).update(_attributes(body, lambda v: Expr(_json_text(v), True)))
    return out


def _json_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _from_hcl(path: Path, text: str) -> BakeFile:
    import hcl2

    try:
        data = hcl2.loads(text)
    except Exception as exc:  # the HCL parser raises several types; all mean "not HCL"
        line = getattr(exc, "line", None) or getattr(getattr(exc, "token", None), "line", None) or 1
        raise InputError(f"{path}:{line}: not a valid bake file (HCL); fix its syntax") from None
    out = BakeFile(path)
    for block in data.get("variable", []):
        for raw_name, body in block.items():
            name = _hcl_label(raw_name)
            default = body.get("default") if isinstance(body, dict) else None
            expr = None if default is None else _hcl_expr(default)
            out.variables[name] = Variable(name, expr, _where(path, text, "variable " + json.dumps(name)))
    for name, value in data.items():
        if name not in ("variable", "target", "group", "function") and not isinstance(value, (dict, list)):
            out.attributes[name] = Variable(name, _hcl_expr(value), _where(path, text, name))
    for block in data.get("target", []):
        for raw_name, body in block.items():
            if isinstance(body, dict):
                out.targets.setdefault(_hcl_label(raw_name), {}).update(_attributes(body, _hcl_expr))
    return out


@cache
def _hcl_quotes_strings() -> bool:
    """python-hcl2 8 returns a string literal with its quotes and a bare expression as written;
    earlier releases return literals bare and expressions as "${...}"."""
    import hcl2

    return bool(hcl2.loads('a = "x"')["a"] == '"x"')


def _hcl_label(raw: str) -> str:
    return raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == '"' else raw


def _hcl_expr(value: object) -> Expr:
    if not isinstance(value, str):
        return Expr(_json_text(value), True)
    if not _hcl_quotes_strings():
        return Expr(value, True)  # literals and "${expression}" alike read as templates
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return Expr(_unescape(value[1:-1]), True)
    if value.startswith("${") and value.endswith("}") and value.count("${") == 1:
        return Expr(value[2:-1], False)
    return Expr(value, False)


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), text)


def _attributes(body: dict[str, Any], expr: Any) -> dict[str, list[Expr]]:
    out: dict[str, list[Expr]] = {}
    for key, value in body.items():
        if key.startswith("__"):
            continue  # python-hcl2's own markers
        if isinstance(value, dict):
            for sub, item in value.items():
                out[f"{key}.{_hcl_label(sub)}"] = [expr(v) for v in _leaves(item)]
        else:
            out[key] = [expr(v) for v in _leaves(value)]
    return out


def _leaves(value: object) -> Iterable[object]:
    if isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif value is not None:
        yield value


def _where(path: Path, text: str, needle: str) -> str:
    """ "path:line" of the first occurrence of `needle` (line 1 when absent)."""
    index = text.find(needle)
    return f"{path}:{text.count(chr(10), 0, index) + 1 if index >= 0 else 1}"


# -- merging ---------------------------------------------------------------------------------


def merge(files: list[BakeFile], environ: Mapping[str, str]) -> Bake:
    """The files merged as bake merges them (later files win), with the environment applied."""
    blocks: dict[str, Variable] = {}
    attributes: dict[str, Variable] = {}
    targets: dict[str, dict[str, list[Expr]]] = {}
    for bake_file in files:
        blocks.update(bake_file.variables)
        attributes.update(bake_file.attributes)
        for name, target in bake_file.targets.items():
            targets.setdefault(name, {}).update(target)
    use_env = environ.get(ENV_LOOKUP_SWITCH, "").lower() not in ("1", "t", "true")
    variables = {**blocks, **attributes}  # a top-level attribute's value wins over a block's default
    overridable = set(blocks)  # the environment overrides names that have a variable block
    values = _Evaluator(variables, overridable, environ if use_env else {}).all()
    return Bake([f.path for f in files], values, _uses(variables, targets))


class _Evaluator:
    def __init__(self, variables: dict[str, Variable], overridable: set[str], environ: Mapping[str, str]) -> None:
        self.variables = variables
        self.overridable = overridable
        self.environ = environ
        self.done: dict[str, Value] = {}
        self.busy: set[str] = set()

    def all(self) -> dict[str, Value]:
        return {name: self.value(name) for name in sorted(self.variables)}

    def value(self, name: str) -> Value:
        if name in self.done:
            return self.done[name]
        var = self.variables[name]
        if name in self.overridable and name in self.environ:
            result = Value(name, self.environ[name], "the environment")
        elif var.default is None:
            result = Value(name, "", var.where)
        elif name in self.busy:
            raise InputError(f"{var.where}: the default of {name} refers to itself; bake refuses a variable cycle")
        else:
            self.busy.add(name)
            result = Value(name, self.evaluate(var.default), var.where)
            self.busy.discard(name)
        self.done[name] = result
        return result

    def evaluate(self, expr: Expr) -> str | None:
        if not expr.template:
            return self.reference(expr.text)
        if "%{" in expr.text:
            return None  # template directives are not evaluated
        out, pos = [], 0
        for start, end in _interpolation_spans(expr.text):
            out.append(expr.text[pos:start].replace("$${", "${"))
            value = self.reference(expr.text[start + 2 : end - 1])
            if value is None:
                return None
            out.append(value)
            pos = end
        out.append(expr.text[pos:].replace("$${", "${"))
        return "".join(out)

    def reference(self, code: str) -> str | None:
        match = _NAME_ONLY.match(code)
        if match and match.group(1) in self.variables:
            return self.value(match.group(1)).value
        return None


def _interpolation_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each `${...}` of a template, braces and quotes inside counted."""
    spans, i = [], 0
    while (i := text.find("${", i)) >= 0:
        if i > 0 and text[i - 1] == "$":
            i += 2  # "$${" is a literal "${"
            continue
        depth, j, quoted = 0, i + 1, False
        while j < len(text):
            c = text[j]
            if quoted:
                if c == "\\":
                    j += 1
                elif c == '"':
                    quoted = False
            elif c == '"':
                quoted = True
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        spans.append((i, j + 1))
        i = j + 1
    return spans


def _interpolations(text: str) -> list[str]:
    return [text[start + 2 : end - 1] for start, end in _interpolation_spans(text)]


def _references(code: str, names: Iterable[str]) -> dict[str, bool]:
    """The variables an expression reads -> whether only behind a test of their value
    (the condition of `?:`, or an argument of coalesce())."""
    plain = _STRING.sub('""', code)
    found = {m.group(0) for m in _IDENT.finditer(plain)} & set(names)
    condition = plain.split("?", 1)[0] if "?" in plain else ""
    tested = {m.group(0) for m in _IDENT.finditer(condition)}
    return {name: name in tested or "coalesce(" in plain for name in found}


def _uses(variables: dict[str, Variable], targets: dict[str, dict[str, list[Expr]]]) -> dict[str, list[Use]]:
    """Where each variable is read by a target, directly or through other variables' defaults."""
    uses: dict[str, list[Use]] = {}
    for target, attributes in sorted(targets.items()):
        for attribute, exprs in sorted(attributes.items()):
            for expr in exprs:
                for segment in expr.segments():
                    for name, guarded in _references(segment, variables).items():
                        uses.setdefault(name, []).append(Use(target, attribute, guarded))
    # A variable read in another variable's default is used where that one is.
    changed = True
    while changed:
        changed = False
        for name, var in variables.items():
            if var.default is None or name not in uses:
                continue
            for segment in var.default.segments():
                for inner, guarded in _references(segment, variables).items():
                    for use in uses[name]:
                        derived = Use(use.target, f"{use.attribute} (through {name})", use.guarded or guarded)
                        known = uses.setdefault(inner, [])
                        if inner != name and not any(
                            (u.target, u.guarded) == (derived.target, derived.guarded) for u in known
                        ):
                            known.append(derived)
                            changed = True
    return uses
