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
from atompin.model import Finding, Rule, Severity, Site

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


def arch_list_sites(index: ProviderIndex, wheres: list[str]) -> dict[str, Site]:
    """Where each list ("module:NAME") is assigned: its file and line in the component."""
    out: dict[str, Site] = {}
    for where in wheres:
        module, _, name = where.rpartition(":")
        info = index.module(module)
        binding = info.bindings.get(name) if info is not None else None
        path = index.module_path(module)
        if binding is not None and path:
            out[where] = Site(path, binding.line)
    return out


def uncovered(supported: dict[str, tuple[str, ...]], fleet: list[str]) -> bool:
    """Some lists were found, a fleet is declared, and no fleet architecture is in any of them."""
    archs = {a for values in supported.values() for a in values}
    return bool(archs and fleet and not set(fleet) & archs)


def arch_coverage(
    component: str,
    supported: dict[str, tuple[str, ...]],
    fleet: list[str],
    named: bool = False,
    sites: dict[str, Site] | None = None,
) -> Finding | None:
    """A warning when no fleet architecture is in the component's supported lists.

    Lists named in `arch-constants` (`named`) stand for the component's kernels: the warning
    says the component cannot run on the fleet. Lists found automatically belong to one
    feature each (a model, a kernel family): the warning names each feature, its place and
    its architectures, and claims nothing about the rest of the component."""
    if not uncovered(supported, fleet):
        return None
    fleet_text = ", ".join(sorted(fleet))
    if named:
        archs = sorted({a for values in supported.values() for a in values})
        where = ", ".join(sorted(supported))
        return Finding(
            Rule.ARCH_COVERAGE,
            Severity.WARNING,
            component,
            (),
            f"every supported-architecture list of {component} named in arch-constants ({where}) names only "
            f"{', '.join(archs)}; the fleet has {fleet_text}: the stack may import and patch cleanly, but these "
            "kernels cannot run here, so numerics cannot be checked on this fleet",
        )
    sites = sites or {}
    features = []
    for where, values in sorted(supported.items()):
        module = where.rpartition(":")[0]
        place = f" ({sites[where]})" if where in sites else f" ({where})"
        features.append(f"the kernels of {module}{place} support only {', '.join(sorted(values))}")
    return Finding(
        Rule.ARCH_COVERAGE,
        Severity.WARNING,
        component,
        tuple(sorted(sites[w] for w in supported if w in sites)),
        f"{'; '.join(features)}; the fleet has {fleet_text}: "
        f"{'this feature' if len(features) == 1 else 'these features'} cannot run on this fleet "
        f"(lists found automatically; name those that stand for all of {component}'s kernels with "
        "arch-constants in pairs.toml)",
    )
