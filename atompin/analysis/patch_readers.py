"""Where provider code may read the name a consumer patch installs: the places the patch reaches.

A patch `m.f = mine` (or `C.f = mine`) changes what the provider runs only where its code reads
`f` after it: as the bare name in `m` (a global looked up at each call), as an attribute
(`m.f(...)`, `self.f(...)`), by a string (`getattr(x, "f")`), or as a name another module bound
from `m`. `readers` lists the lines of one parsed file that may do so, and leaves out what cannot
run the patched object:

- the patched function's own definition and body (they run only when something calls it);
- imports (they bind a name; the reads after them are what count) and `__all__`'s strings;
- a bare name that the enclosing function binds itself (a local), or that a module other than the
  patched one defines itself (its own function of the same name);
- for a patched module, `self.f` or `cls.f`: a member of the instance's class (vLLM's TPU
  sampler's own `random_sample`), not the module's function;
- a bare name in a module where the consumer installs its replacement too (vllm-mindspore sets
  `gpu_input_batch.copy_slice` beside `vllm.v1.utils.copy_slice`): that patch reaches it;
- anything in a provider function the consumer replaces without calling the original: its body
  no longer runs.

The checks ask it of the baseline: a patch whose target is gone at the pin did nothing at the
release the consumer was written for either when no code there read the name
(vllm-mindspore's `vllm.utils.async_tensor_h2d`, which no vLLM 0.11 code called, or its
`make_tensor_with_pad`, whose one caller it replaces). Pure: a syntax tree in, lines out.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from atompin.analysis.names import names_in_string
from atompin.analysis.syntax import shared_names

# (owner symbol, function name): "pkg.mod" for a module-level function, "pkg.mod:Cls" for a method.
FunctionKey = tuple[str, str]


@dataclass(frozen=True)
class PatchedName:
    """The name a patch installs, as the provider defined it where the patch reaches."""

    name: str
    # The patched module ("" when a class is patched): its own bare reads of the name are the patch's.
    module: str
    # The patched function's own key, when it is one: its body reads nothing for anyone else.
    definition: FunctionKey | None = None


@dataclass
class Readers:
    """What one file holds of the patched name's reads."""

    lines: list[int]  # where code that still runs may read it
    held: list[FunctionKey]  # replaced functions whose bodies read it (no longer run)
    covered: bool = False  # it reads the name where the consumer installs its replacement too


def readers(
    tree: ast.Module,
    module: str,
    patched: PatchedName,
    replaced: Callable[[FunctionKey], bool],
    installed_here: bool,
) -> Readers:
    """The reads of `patched.name` as the patched object in module `module` (parsed as `tree`):
    see the module docstring. `replaced(key)`: does the consumer replace that function without
    calling the original? `installed_here`: does the consumer set its replacement on this module
    too?"""
    own = module != patched.module and _defines(tree.body, patched.name)
    visitor = _Readers(module, patched, replaced, own, installed_here)
    visitor.block(tree.body)
    return Readers(sorted(set(visitor.lines)), list(dict.fromkeys(visitor.held)), visitor.covered)


def _defines(body: list[ast.stmt], name: str) -> bool:
    """Does a module body bind `name` to an object of its own (a def, a class, an assignment, under
    an `if` or `try` too) and import no object under it?"""
    defined = imported = False
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined = defined or node.name == name
            continue  # its body is its own scope
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            defined = True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imported = imported or any((alias.asname or alias.name.split(".")[0]) == name for alias in node.names)
        todo.extend(ast.iter_child_nodes(node))
    return defined and not imported


class _Readers:
    def __init__(
        self,
        module: str,
        patched: PatchedName,
        replaced: Callable[[FunctionKey], bool],
        own_definition: bool,
        installed_here: bool,
    ) -> None:
        self.module = module
        self.patched = patched
        self.name = patched.name
        self.replaced = replaced
        self.own_definition = own_definition  # this module defines a name of its own so called
        self.installed_here = installed_here
        self.lines: list[int] = []
        self.held: list[FunctionKey] = []
        self.covered = False
        self.classes: list[str] = []  # the class bodies we are in, outside any function
        self.locals: list[set[str]] = []  # per enclosing function: the names it binds itself

    def block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.stmt(stmt)

    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(node)
        elif isinstance(node, ast.ClassDef):
            self.exprs([*node.decorator_list, *node.bases, *(k.value for k in node.keywords)])
            if self.locals:  # a class in a function: its methods are no one's to replace
                self.block(node.body)
                return
            self.classes.append(node.name)
            self.block(node.body)
            self.classes.pop()
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            return  # binds; what reads the name after it counts
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return  # a docstring, or another string statement
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and _sets_all(node):
            return  # `__all__` names what a star import binds
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    self.stmt(child)
                elif isinstance(child, ast.expr):
                    self.expr(child)
                else:  # handlers, match cases, with items, comprehensions
                    self.generic(child)

    def generic(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self.stmt(child)
            elif isinstance(child, ast.expr):
                self.expr(child)
            else:
                self.generic(child)

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        args = node.args
        defaults = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        self.exprs([*node.decorator_list, *defaults])  # evaluated where the function is defined
        if not self.locals:
            owner = f"{self.module}:{'.'.join(self.classes)}" if self.classes else self.module
            key = (owner, node.name)
            if key == self.patched.definition:
                return  # its body runs only when something calls it
            if self.replaced(key):  # its body no longer runs: said when it would have read the name
                inner = _Readers(self.module, self.patched, lambda key: False, self.own_definition, self.installed_here)
                inner.function(node)
                if inner.lines or inner.covered:
                    self.held.append(key)
                return
        self.locals.append(_bound_in(node))
        saved, self.classes = self.classes, []
        self.block(node.body)
        self.classes = saved
        self.locals.pop()

    def exprs(self, nodes: list[ast.expr]) -> None:
        for node in nodes:
            self.expr(node)

    def expr(self, node: ast.expr) -> None:
        for each in ast.walk(node):
            if isinstance(each, ast.Name) and each.id == self.name and isinstance(each.ctx, ast.Load):
                if any(self.name in bound for bound in self.locals):
                    continue  # a local of the function, or of one around it
                if self.module == self.patched.module:
                    self.lines.append(each.lineno)  # the patched module's global: what the patch sets
                elif self.installed_here:
                    self.covered = True  # the consumer sets its replacement on this module too
                elif not self.own_definition:
                    self.lines.append(each.lineno)
            elif isinstance(each, ast.Attribute) and each.attr == self.name:
                if self.patched.module and _on_self(each):
                    continue  # a member of the instance's class, not the patched module's function
                self.lines.append(each.lineno)
            elif (
                isinstance(each, ast.Constant)
                and isinstance(each.value, str)
                and names_in_string(each.value, self.name)
            ):
                self.lines.append(each.lineno)  # `getattr(x, "name")`, a dotted path to it


def _on_self(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")


def _sets_all(node: ast.Assign | ast.AugAssign | ast.AnnAssign) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)


def _bound_in(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names a function binds in its own scope (parameters, assignments, imports, nested
    definitions, loop targets; not a comprehension's, which is its own), less those it declares
    global or nonlocal (`syntax.shared_names`)."""
    args = node.args
    bound = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a}
    todo: list[ast.AST] = list(node.body)
    while todo:
        each = todo.pop()
        if isinstance(each, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(each.name)
            todo.extend(each.decorator_list)
            continue  # its body is its own scope
        if isinstance(each, ast.Lambda):
            continue
        if isinstance(each, ast.comprehension):  # its target is the comprehension's own
            todo.extend([each.iter, *each.ifs])
            continue
        if isinstance(each, ast.Name) and isinstance(each.ctx, (ast.Store, ast.Del)):
            bound.add(each.id)
        elif isinstance(each, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name.split(".")[0]) for alias in each.names)
        todo.extend(ast.iter_child_nodes(each))
    return bound - shared_names(node)
