"""GPU-architecture coverage: which `gfx…` targets a component's kernels support.

Read from named constants (`path/to/file.py:NAME` or `module:NAME`), or found
automatically: module-level literal collections whose every element looks like
`gfx…` and whose name says SUPPORTED or ARCH. Only files that mention "gfx"
are parsed for the automatic search.
"""

from __future__ import annotations

import re

from atompin.analysis.moduleinfo import BindingKind
from atompin.analysis.provider import ProviderIndex
from atompin.model import Finding, Rule, Severity

_GFX = re.compile(r"^gfx[0-9a-f]+[-a-z0-9]*$")
_NAME = re.compile(r"SUPPORTED|ARCH", re.I)


def _collection(index: ProviderIndex, module: str, name: str, depth: int = 0) -> tuple[str, ...] | None:
    info = index.module(module)
    if info is None or depth > 4:
        return None
    if name in info.str_collections:
        return info.str_collections[name]
    binding = info.bindings.get(name)
    if binding is None:
        return None
    if binding.kind is BindingKind.VALUE and binding.alias and "." not in binding.alias:
        return _collection(index, module, binding.alias, depth + 1)  # SUPPORTED = _GFX_ARCHS
    if binding.kind is BindingKind.IMPORT:
        source, _, attr = binding.target.partition(":")
        return _collection(index, source, attr, depth + 1)
    return None


def supported_archs(index: ProviderIndex, constants: list[str] | None = None) -> dict[str, tuple[str, ...]]:
    """Where each supported-architecture list lives ("module:NAME") -> its gfx targets."""
    out: dict[str, tuple[str, ...]] = {}
    if constants:
        for spec in constants:
            where, _, name = spec.rpartition(":")
            module = index.tree.module_name(where)[0] if where.endswith(".py") else where
            values = _collection(index, module, name)
            if values:
                out[f"{module}:{name}"] = tuple(v for v in values if _GFX.match(v))
        return out
    for path in index.tree.python_files(index.package):
        if b"gfx" not in index.tree.read(path):
            continue
        module, _ = index.tree.module_name(path)
        info = index.module(module)
        if info is None:
            continue
        for name in sorted(set(info.str_collections) | set(info.bindings)):
            if not _NAME.search(name):
                continue
            values = _collection(index, module, name)
            if values and all(_GFX.match(v) for v in values):
                out[f"{module}:{name}"] = values
    return out


def arch_coverage(component: str, supported: dict[str, tuple[str, ...]], fleet: list[str]) -> Finding | None:
    """A warning when no fleet architecture is in the component's supported set."""
    archs = sorted({a for values in supported.values() for a in values})
    if not archs or not fleet or set(fleet) & set(archs):
        return None
    where = ", ".join(sorted(supported))
    return Finding(
        Rule.ARCH_COVERAGE,
        Severity.WARNING,
        component,
        (),
        f"every supported-architecture list of {component} ({where}) names only {', '.join(archs)}; the "
        f"fleet has {', '.join(sorted(fleet))}: the stack may import and patch cleanly, but these kernels "
        "cannot run here, so numerics cannot be checked on this fleet (name the lists that matter with "
        "arch-constants in pairs.toml)",
    )
