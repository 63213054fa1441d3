"""Definitions of a module an import hook serves in a provider module's place that nothing reads.

vllm-kunlun's `builtins.__import__` hook serves `vllm_kunlun.v1.worker.utils` wherever vLLM imports
`vllm.v1.worker.utils` (its map: `ModuleEdge.after`). A function or class of such a module runs
only where something reads it under the provider module's name (`from vllm.v1.worker.utils import
X`, `utils.X`, a string naming it) or the plugin names it itself. vLLM 0.34 moved
`MultiModalBudget` to `vllm.multimodal.encoder_budget` and no longer calls
`is_residual_scattered_for_sp`: what the plugin's copies of them name of vLLM cannot break it
there. An error whose every site is inside such definitions (or in a module the plugin's entry
points do not reach) becomes a warning that says so.

Pure: `definitions` and `reads_served` read syntax trees; `demote_unread_served` takes the
questions about files as functions.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from atompin.analysis.demotion import demote
from atompin.analysis.names import absolute_module, names_in_string
from atompin.analysis.syntax import dotted, walk
from atompin.model import Finding, Site


@dataclass(frozen=True)
class Definition:
    """A module-level function or class of a served module, by the lines that run only when it
    is used: a function's body, or the bodies of a class's methods (its decorators, defaults and
    class body run when the module is imported)."""

    name: str
    spans: tuple[tuple[int, int], ...]  # (first line, last line)

    def holds(self, line: int) -> bool:
        return any(start <= line <= end for start, end in self.spans)


def definitions(tree: ast.Module) -> list[Definition]:
    """The module-level functions and classes of a module."""
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(Definition(node.name, (_body_span(node),)))
        elif isinstance(node, ast.ClassDef):
            methods = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            out.append(Definition(node.name, tuple(_body_span(m) for m in methods)))
    return out


def _body_span(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int]:
    return node.body[0].lineno, node.end_lineno or node.body[-1].lineno


def reads_served(tree: ast.Module, module: str, is_package: bool, served: str, name: str) -> bool:
    """May provider module `module` (parsed as `tree`) read `name` from module `served`: import it
    from there (or everything), read it as an attribute of that module under any name it binds
    the module to, or write it as a string (`getattr(m, "name")`, a dotted path)?"""
    parent, _, leaf = served.rpartition(".")
    aliases = {served}  # the names the module is bound to here, as written in an attribute chain
    for node in walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = absolute_module(module, is_package, node.level, node.module)
            for alias in node.names:
                if source == served and alias.name in (name, "*"):
                    return True
                if source == parent and alias.name == leaf:
                    aliases.add(alias.asname or leaf)
        elif isinstance(node, ast.Import):
            aliases.update(alias.asname for alias in node.names if alias.name == served and alias.asname)
    for node in walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == name and dotted(node.value) in aliases:
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and names_in_string(node.value, name):
            return True
    return False


@dataclass(frozen=True)
class ServedModule:
    """A consumer module an import hook serves in place of a provider module."""

    module: str
    path: str
    provider_module: str
    definitions: tuple[Definition, ...]


def demote_unread_served(
    findings: list[Finding],
    served: list[ServedModule],
    unread: Callable[[ServedModule, str], bool],
    unreached: Callable[[str], bool] = lambda path: False,
) -> list[Finding]:
    """Errors whose every site is inside a definition of a served module that `unread(module,
    name)` says nothing reads, or in a file `unreached` says the entry points do not reach (at
    least one site being of the first kind), become warnings that say so."""
    by_path: dict[str, list[ServedModule]] = {}
    for each in served:  # a module may be served in place of more than one
        by_path.setdefault(each.path, []).append(each)
    judged: dict[tuple[str, str, str], bool] = {}

    def is_unread(module: ServedModule, name: str) -> bool:
        key = (module.module, module.provider_module, name)
        if key not in judged:
            judged[key] = unread(module, name)
        return judged[key]

    def dead_definition(site: Site) -> tuple[ServedModule, str] | None:
        modules = by_path.get(site.path, [])
        held = [d for d in modules[0].definitions if d.holds(site.line)] if modules else []
        if not held or not all(is_unread(module, held[0].name) for module in modules):
            return None
        return modules[0], held[0].name

    def why_idle(f: Finding) -> str | None:
        dead = [dead_definition(site) for site in f.sites]
        first = next((each for each in dead if each is not None), None)
        if first is None or not all(d is not None or unreached(s.path) for d, s in zip(dead, f.sites)):
            return None
        module, name = first
        others = "; its other sites are in modules the entry points do not reach" if None in dead else ""
        return (
            f"in {module.module}.{name}, which an import hook serves in place of {module.provider_module}.{name}: "
            f"no provider file reads {name} from {module.provider_module} here, and the plugin names it nowhere "
            f"else{others}"
        )

    return demote(findings, why_idle)
