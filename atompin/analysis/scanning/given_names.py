"""Names the consumer gives the provider.

`sys.modules` entries, registrations by name, dotted module paths the provider
will import (`"pkg.models:Cls"`), dynamic imports of computed names, and
patches named by a dotted path (`@register_patch(target="pkg.mod.Cls.meth")`).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from atompin.analysis.discovery import import_path_targets, lists_own_folder, walks_own_path
from atompin.analysis.names import absolute_module
from atompin.analysis.scanning.common import DOTTED_NAME, literal_prefix, module_glob
from atompin.analysis.scanning.state import MAX_DEPTH, Ctx, evolve
from atompin.analysis.syntax import dotted
from atompin.analysis.syntax import walk as every_node
from atompin.analysis.usage import ModuleEdge, Ref, Registration
from atompin.analysis.values import ConsumerValue, ProviderValue, Value

if TYPE_CHECKING:
    from atompin.analysis.scanner import ConsumerScanner
_FILE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.py")


class GivenNames:
    """What the consumer hands the provider by name."""

    def _record_injection(self: ConsumerScanner, ctx: Ctx, name: str, node: ast.AST, value: Value = None) -> None:
        """`sys.modules[name] = value`: a provider module's name now serves `value` (a consumer
        module when it is one the consumer has; "*" when not known to be)."""
        if isinstance(value, ProviderValue) and any(choice.dotted == name for choice in value.choices):
            return  # the module itself (or a copy of it) under its own name: still the provider's
        if ctx.record and self._is_provider(name):
            self.usage.injected_modules.append((name, self._site(ctx, node)))
            module = value.dotted if isinstance(value, ConsumerValue) else ""
            self.usage.injected_values.append(module if module and self._consumer_module_exists(module) else "*")

    def _record_registration(
        self: ConsumerScanner, args: list[Value], kwargs: dict[str, Value], node: ast.Call, ctx: Ctx
    ) -> None:
        """A provider call that hands over a consumer class with a name: `register_oot(Cls, name="X")`."""
        values = [*args, *kwargs.values()]
        names = [v for v in values if isinstance(v, str)]
        classes = [v for v in values if isinstance(v, ConsumerValue)]
        if names and classes:
            site = self._site(ctx, node)
            self.usage.registrations.append(Registration(names[0], classes[0].dotted, site, self._when(ctx)))

    def _record_edge(self: ConsumerScanner, ctx: Ctx, target: str, node: ast.AST, after: str = "") -> None:
        if ctx.record:
            site = self._site(ctx, node)
            self.usage.module_edges.append(ModuleEdge(ctx.file.module, target, site, ctx.when, after))

    def _in_own_listing(self: ConsumerScanner, ctx: Ctx) -> bool:
        """Is the statement read in a function listing its own package's folder (`lists_own_folder`)?"""
        tree = self._trees.get(ctx.file.module)
        return (
            bool(absolute_module(ctx.file.module, ctx.file.is_package, 1, None))
            and tree is not None
            and lists_own_folder(tree, ctx.function)
        )

    def _string_edge(self: ConsumerScanner, text: str, node: ast.AST, ctx: Ctx, after: str = "") -> None:
        """A string that names a consumer module ("pkg.mod", "pkg.mod:Cls", ".relative") or a Python file:
        something may import or run it by that name (with `after`, once provider module `after` is
        imported: `ModuleEdge.after`)."""
        if not ctx.record or not text or len(text) > 300:
            return
        if text.endswith(".py") and _FILE_NAME.fullmatch(text.rpartition("/")[2]):
            self._record_edge(ctx, "file:" + text.rpartition("/")[2], node)
            return
        head = text.partition(":")[0]
        if not DOTTED_NAME.fullmatch(head):
            return
        if head.startswith("."):
            level = len(head) - len(head.lstrip("."))
            head = absolute_module(ctx.file.module, ctx.file.is_package, level, head[level:] or None)
        if head and self._is_consumer(head):
            self._record_edge(ctx, head, node, after)

    def _dynamic_import_edge(self: ConsumerScanner, name: str, node: ast.Call, args: list[Value], ctx: Ctx) -> None:
        """Imports by computed name: a literal prefix bounds what they reach; an unknown one may reach anything."""
        last = name.rpartition(".")[2]
        if name in ("sys.modules.setdefault", "sys.modules.__setitem__") and args and isinstance(args[0], str):
            self._record_injection(ctx, args[0], node, args[1] if len(args) > 1 else None)
            return
        if name == "sys.modules.update" and args and isinstance(args[0], dict):
            # `sys.modules.update({name: module})`, in a helper called with the name (vllm-mindspore's
            # `update_modules`): the call's dict holds the names as the helper ran with them.
            for key, each in args[0].items():
                self._record_injection(ctx, key, node, each)
            return
        if last in ("walk_packages", "iter_modules"):
            self._listing_edge(last, node, ctx)
            return
        if name in ("sys.path.insert", "sys.path.append") and node.args:
            self._import_path_edge(node, ctx)
            return
        if last not in ("import_module", "__import__", "run_module") or not node.args or isinstance(args[0], str):
            return
        self._computed_import_edge(node, ctx)

    def _listing_edge(self: ConsumerScanner, last: str, node: ast.Call, ctx: Ctx) -> None:
        """`pkgutil.iter_modules(path)` / `walk_packages(path)`, whose names are then imported: over a
        package's own `__path__`, the modules below it (right below, for iter_modules); over another
        package's (`torchvision.models.__path__`), none of the consumer's; else any module."""
        path = dotted(node.args[0]) if node.args else ""
        package = absolute_module(ctx.file.module, ctx.file.is_package, 1, None)
        tree = self._trees.get(ctx.file.module)
        if path == "__path__" and package:
            self._record_edge(ctx, f"glob:{package}.*" if last == "iter_modules" else f"prefix:{package}.", node)
        elif package and tree is not None and node.args and walks_own_path(tree, ctx.function, node.args[0]):
            self._record_edge(ctx, f"prefix:{package}.", node)
        elif not (path.endswith(".__path__") and path.split(".")[0] in self._other_packages.get(ctx.file.path, ())):
            self._record_edge(ctx, "*", node)

    def _import_path_edge(self: ConsumerScanner, node: ast.Call, ctx: Ctx) -> None:
        """`sys.path.insert(0, <a folder of the consumer's, from the file's own place>)`: a module
        there may now be imported by another name (xinference puts its `thirdparty` folder there
        and imports `confuciustts.cli.inference`); what this module imports by such a name, and all
        below it, is reached from here."""
        file = ctx.file
        tree = self._trees.get(file.module)
        if tree is not None and file.path not in self._import_paths:
            self._import_paths[file.path] = import_path_targets(tree, file.path, file.module, file.is_package)
        for target in self._import_paths.get(file.path, {}).get(node.lineno, []):
            if self._is_consumer(target.removeprefix("prefix:").split(".")[0]):
                self._record_edge(ctx, target, node)

    def _computed_import_edge(self: ConsumerScanner, node: ast.Call, ctx: Ctx) -> None:
        """`import_module(<computed name>)`: what its literal start and computed parts can spell."""
        arg = node.args[0]
        if not isinstance(arg, (ast.JoinedStr, ast.BinOp)) and not (
            isinstance(arg, ast.Call) and dotted(arg.func).endswith("format")
        ):
            return  # a name: its value is a literal elsewhere (an edge already) or comes from outside the plugin
        prefix = literal_prefix(arg)
        if prefix.startswith("."):
            level = len(prefix) - len(prefix.lstrip("."))
            package = absolute_module(ctx.file.module, ctx.file.is_package, level, None)
            glob = module_glob(arg)[level:]
            self._record_edge(ctx, f"glob:{package}.{glob}" if glob else f"prefix:{package}.", node)
        elif "." in prefix and not self._is_consumer(prefix.split(".")[0]):
            return  # under another package (`import_module(f"torchvision.models.{name}")`)
        elif not prefix and self._in_own_listing(ctx):
            # A name listed from the package's own folder (`walks_own_path`): a module below it.
            self._record_edge(ctx, f"prefix:{absolute_module(ctx.file.module, ctx.file.is_package, 1, None)}.", node)
        elif prefix and self._is_consumer(prefix.split(".")[0]):
            glob = module_glob(arg)
            if glob and self.usage.module_edges:
                # The f-string's own edge (`_eval_JoinedStr`) let it end with an attribute; an
                # imported name does not.
                spelled = self.usage.module_edges[-1]
                if spelled.target == f"path:{glob}" and spelled.site == self._site(ctx, arg):
                    self.usage.module_edges.pop()
            self._record_edge(ctx, f"glob:{glob}" if glob else f"prefix:{prefix}", node)
        else:
            self._record_edge(ctx, "*", node)

    def _decorated(
        self: ConsumerScanner, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, value: Value, ctx: Ctx
    ) -> None:
        for deco in node.decorator_list:
            if isinstance(deco, ast.Call):
                self._string_target_patch(deco, value, ctx)
            if isinstance(node, ast.ClassDef) and isinstance(value, ConsumerValue) and ctx.record:
                self._registered_by_decorator(deco, value, ctx)

    def _class_decorators(self: ConsumerScanner, node: ast.ClassDef, cls: ConsumerValue, ctx: Ctx) -> None:
        """`@decorate` on a consumer class (once it is recorded), `decorate` a module-level
        function of the consumer's: its body is read with the class, recording nothing, for the
        functions it sets on the class (`_install_in_class`). Read at once: a class handed over
        is often read only once the scan is finishing, when no body is read again."""
        for deco in node.decorator_list:
            if isinstance(deco, (ast.Name, ast.Attribute)) and ctx.depth <= MAX_DEPTH:
                self._class_decorator(deco, cls, ctx)

    def _class_decorator(self: ConsumerScanner, deco: ast.Name | ast.Attribute, cls: ConsumerValue, ctx: Ctx) -> None:
        """One decorator of `_class_decorators`, read with the class if it is the consumer's function."""
        callee = self._eval(deco, evolve(ctx, record=False))
        fn = self._functions.get(callee.dotted) if isinstance(callee, ConsumerValue) else None
        params = fn.node.args.posonlyargs + fn.node.args.args if fn is not None else []
        if fn is not None and not fn.owner and params:
            self._read_alone(fn, {params[0].arg: cls}, ctx)

    def _registered_by_decorator(self: ConsumerScanner, deco: ast.expr, cls: ConsumerValue, ctx: Ctx) -> None:
        """`@Op.register_oot` or `@CustomOp.register_oot(name="Op")` on a consumer class: vLLM's
        out-of-tree registry, under the name given, else the name of the class it is called on."""
        call = deco if isinstance(deco, ast.Call) else None
        func = call.func if call is not None else deco
        if not (isinstance(func, ast.Attribute) and func.attr == "register_oot"):
            return
        owner = self._eval(func.value, evolve(ctx, record=False))
        if not isinstance(owner, ProviderValue) or not owner.choices[0].path:
            return
        written = [*call.args, *(k.value for k in call.keywords)] if call is not None else []
        names = [a.value for a in written if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        name = names[0] if names else owner.choices[0].path[-1]
        self.usage.registrations.append(Registration(name, cls.dotted, self._site(ctx, deco), self._when(ctx)))

    def _string_target_patch(self: ConsumerScanner, call: ast.Call, replacement: Value, ctx: Ctx) -> None:
        """A consumer decorator (or registry call) given a literal dotted path into the provider, in a module
        that resolves such paths (`import_module` + `setattr`): a patch of that target with `replacement`."""
        callee = ctx.scope.lookup(call.func.id) if isinstance(call.func, ast.Name) else self._eval(call.func, ctx)
        if not isinstance(callee, ConsumerValue):
            return
        literals = [a.value for a in (*call.args, *(k.value for k in call.keywords)) if isinstance(a, ast.Constant)]
        targets = [t for t in literals if isinstance(t, str) and DOTTED_NAME.fullmatch(t) and self._is_provider(t)]
        if len(targets) != 1 or targets[0].count(".") < 2 or not self._applies_dotted_paths(callee.dotted):
            return
        package, *path, attr = targets[0].split(".")
        owner = ProviderValue((Ref(package, tuple(path)),))
        self._record_patch(ctx, call, owner, attr, None, replacement, declared=True)

    def _applies_dotted_paths(self: ConsumerScanner, dotted_name: str) -> bool:
        """Does the module defining this consumer function import modules by name and `setattr` on them?"""
        fn = self._function(dotted_name)
        module = fn.file.module if fn is not None else dotted_name.rpartition(".")[0]
        if module not in self._registries:
            tree = self._trees.get(module)
            calls = (
                {dotted(n.func).rpartition(".")[2] for n in every_node(tree) if isinstance(n, ast.Call)}
                if tree
                else set()
            )
            self._registries[module] = "setattr" in calls and bool(calls & {"import_module", "__import__"})
        return self._registries[module]
