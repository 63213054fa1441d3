"""The provider-side visitor: one module's source text in, a `ModuleInfo` out.

Pure: no files, no imports of the code it reads. Only what exists at runtime
is recorded, so `if TYPE_CHECKING:` bodies are skipped.
"""

from __future__ import annotations

import ast
import re
from collections import Counter

from atompin.analysis.arity import keyword_dicts, shape_of, spreads_a_name
from atompin.analysis.lazy_tables import literal_table, served_names, serves_named_attribute, table_prefix
from atompin.analysis.limits import TOO_DEEP, parse_limited
from atompin.analysis.moduleinfo import (
    Binding,
    BindingKind,
    ClassInfo,
    Member,
    MemberKind,
    ModuleInfo,
    SelfCall,
)
from atompin.analysis.names import absolute_module
from atompin.analysis.nullness import known_none, tests_for_none
from atompin.analysis.signature import signature_of
from atompin.analysis.syntax import (
    annotated_type,
    body_digest,
    dict_key_set,
    dotted,
    is_type_checking,
    literal_strings,
    runtime_bodies,
    set_by_name,
    single_assignment,
    target_names,
    walk,
)

_STRONG = {BindingKind.DEF, BindingKind.CLASS, BindingKind.IMPORT, BindingKind.MODULE}
# What a method's instance attributes and calls on itself are read from; its `if`s may test a
# parameter for None (`nullness`).
_READ_IN_METHODS = frozenset({ast.Call, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.If})


def index_module(source: bytes | str, name: str, is_package: bool) -> ModuleInfo:
    """Index one module's source. A syntax error yields a ModuleInfo with `error` set."""
    try:
        tree = parse_limited(source)  # over a per-file limit: unknown, like a syntax error
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 0
        return ModuleInfo(name=name, is_package=is_package, error=f"line {line}: {getattr(exc, 'msg', str(exc))}")
    return index_tree(tree, source, name, is_package)


def index_tree(tree: ast.Module, source: bytes | str, name: str, is_package: bool) -> ModuleInfo:
    """Index one module from its syntax tree, already parsed from `source`."""
    info = ModuleInfo(name=name, is_package=is_package)
    data = source.encode() if isinstance(source, str) else source
    try:
        _ModuleVisitor(info, data.splitlines()).run(tree)
    except RecursionError:  # hostile nesting: what this file defines is unknown
        return ModuleInfo(name=name, is_package=is_package, error=f"line 0: {TOO_DEEP}")
    return info


class _ModuleVisitor:
    def __init__(self, info: ModuleInfo, lines: list[bytes]) -> None:
        self.info = info
        self.lines = lines
        self.all_names: list[str] | None = None
        self.all_dynamic = False
        self.nested = 0  # how deep in compound statements (if, try, for, with) the statement read is
        self.stars: list[str] = []
        self.dict_literals: dict[str, dict[str, str]] = {}
        self.getattr_node: ast.AST | None = None
        self.functions: dict[str, ast.AST] = {}  # module-level defs, by name
        self.finder_parts: list[ast.expr] = []  # what `sys.meta_path.insert(...)`/`append` is handed
        self.table_bindings: Counter[str] = Counter()  # how often each module-level name is assigned
        self.string_key_tables: set[str] = set()  # dict literals at the top of the module, string keys only

    # -- driver -------------------------------------------------------------

    def run(self, tree: ast.Module) -> None:
        self.block(tree.body)
        info = self.info
        if self.all_names is not None and not self.all_dynamic:
            info.all_names = tuple(self.all_names)
        info.star_imports = tuple(dict.fromkeys(self.stars))
        if self.getattr_node is not None:
            tables, names = served_names(self.getattr_node) or ((), ())
            if (tables or names) and all(self.fixed_table(table) for table in tables):
                info.getattr_tables, info.getattr_names = tables, names
            by_name = serves_named_attribute(self.getattr_node)
            for table_name, table in self.dict_literals.items():
                prefix = table_prefix(self.getattr_node, table_name, self.dunder_names())
                if prefix is not None:
                    for key, value in table.items():
                        export = self.absolute_export(prefix + value)
                        info.lazy_exports[key] = f"{export}:{key}" if by_name and ":" not in export else export
        self.finder_aliases()

    def fixed_table(self, name: str) -> bool:
        """Is module-level `name` a dict literal with string keys only, bound once at the top of the
        module, that nothing in this module changes (`name[k] = v`, `name.update(...)`, `|=`, `del`)?"""
        if self.table_bindings.get(name) != 1 or name not in self.string_key_tables:
            return False
        text = b"\n".join(self.lines)
        word = re.escape(name.encode())
        changed = rb"\b" + word + rb"\s*(?:\[[^\n]*\]\s*=(?!=)|\.\s*(?:update|setdefault|pop|popitem|clear)\b|\|=)"
        return re.search(changed, text) is None and re.search(rb"\b(?:del|global)\s+" + word + rb"\b", text) is None

    def finder_aliases(self) -> None:
        """A package that puts an import finder on `sys.meta_path` whose function reads a literal
        table (aiter's backward-compatibility map: old submodule name -> new module) serves
        `import pkg.old` from the table: each entry is a submodule alias."""
        if not self.info.is_package:
            return
        handed = {n.id for part in self.finder_parts for n in walk(part) if isinstance(n, ast.Name)}
        for function in (self.functions[name] for name in sorted(handed) if name in self.functions):
            for table_name, table in self.dict_literals.items():
                prefix = table_prefix(function, table_name, self.dunder_names())
                if prefix is None:
                    continue
                for key, value in table.items():
                    target = self.absolute_export(prefix + value)
                    if "." not in key and ":" not in target:
                        self.info.module_aliases[key] = target

    def dunder_names(self) -> dict[str, str]:
        """What `__name__` and `__package__` hold in this module."""
        info = self.info
        return {"__name__": info.name, "__package__": info.name if info.is_package else info.name.rpartition(".")[0]}

    def absolute_export(self, value: str) -> str:
        """ ".engine.llm:LLM" in package `vllm` -> "vllm.engine.llm:LLM"."""
        module, sep, attr = value.partition(":")
        level = len(module) - len(module.lstrip("."))
        if level:
            module = absolute_module(self.info.name, self.info.is_package, level, module[level:] or None)
        return f"{module}{sep}{attr}"

    def digest(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
        """A hash of the function body's source lines (docstring left out)."""
        return body_digest(node, self.lines)

    def bind(self, name: str, binding: Binding) -> None:
        old = self.info.bindings.get(name)
        # The first definition that says what a name is wins over later plain values
        # (`try: from x import A` / `except ImportError: A = None`), and over later definitions
        # in branches (the alternatives of a ladder). A definition at module level runs after
        # everything before it, so it wins (`from m import A` then `class A(A):`).
        if old is not None and old.kind in _STRONG and binding.kind not in _STRONG:
            return
        if old is not None and old.kind in _STRONG and binding.kind in _STRONG and self.nested:
            return
        self.info.bindings[name] = binding

    def block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.stmt(stmt)

    # -- statements ---------------------------------------------------------

    def stmt(self, node: ast.stmt) -> None:
        """Record what one top-level statement binds; compound statements are entered."""
        visit = getattr(self, f"visit_{type(node).__name__}", None)
        if visit is not None:
            visit(node)
            return
        if isinstance(node, ast.If) and not self.nested and is_type_checking(node.test):
            self.type_only_imports(node.body)
        self.nested += 1
        for body in runtime_bodies(node):
            self.block(body)
        self.nested -= 1

    def type_only_imports(self, body: list[ast.stmt]) -> None:
        """What the imports of an `if TYPE_CHECKING:` block name (`ModuleInfo.type_only`)."""
        for stmt in body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.info.type_only.update(self.imported(stmt))

    def imported(self, node: ast.Import | ast.ImportFrom) -> list[tuple[str, str]]:
        """The names an import binds and what each is: a module ("pkg"; `import pkg.mod` binds
        pkg, and "pkg.mod.C" is read through it) or "module:attr". A star import binds none."""
        if isinstance(node, ast.Import):
            tops = [a.name.split(".")[0] for a in node.names]
            return [(a.asname, a.name) if a.asname else (top, top) for a, top in zip(node.names, tops)]
        module = absolute_module(self.info.name, self.info.is_package, node.level, node.module)
        return [(a.asname or a.name, f"{module}:{a.name}") for a in node.names if a.name != "*"]

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if _is_overload(node):
            return  # a typing stub: the real def follows
        self.bind(
            node.name, Binding(BindingKind.DEF, node.lineno, signature=signature_of(node), digest=self.digest(node))
        )
        if node.name == "__getattr__":
            self.info.getattr_line = node.lineno
            self.getattr_node = node
        self.functions[node.name] = node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.bind(node.name, Binding(BindingKind.CLASS, node.lineno))
        self.class_def(node, node.name)

    def visit_Import(self, node: ast.Import) -> None:
        for name, target in self.imported(node):
            self.bind(name, Binding(BindingKind.MODULE, node.lineno, target=target))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if any(alias.name == "*" for alias in node.names):
            self.stars.append(absolute_module(self.info.name, self.info.is_package, node.level, node.module))
        for name, target in self.imported(node):
            self.bind(name, Binding(BindingKind.IMPORT, node.lineno, target=target))

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self.assign(target, node.value, node.lineno)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.assign(node.target, node.value, node.lineno)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name) and node.target.id == "__all__":
            self.extend_all(node.value)

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Call):
            self.call(node.value)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        for name in target_names(node.target):
            self.bind(name, Binding(BindingKind.VALUE, node.lineno))
        self.nested += 1
        for body in runtime_bodies(node):
            self.block(body)
        self.nested -= 1

    visit_AsyncFor = visit_For

    def assign(self, target: ast.expr, value: ast.expr | None, line: int) -> None:
        if isinstance(target, ast.Name):
            name = target.id
            self.table_bindings[name] += 1
            if name == "__all__":
                self.set_all(value)
                return
            if name == "__getattr__":
                self.info.getattr_line = line
                self.getattr_node = value
            binding = Binding(BindingKind.VALUE, line)
            if value is not None:
                binding.alias = dotted(value) if isinstance(value, (ast.Name, ast.Attribute)) else ""
                if isinstance(value, ast.Call):
                    binding.instance_of = dotted(value.func)
                if isinstance(value, ast.Dict):
                    table = literal_table(value)
                    if table is not None:
                        self.dict_literals[name] = table
                    keys = [k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
                    if keys:
                        self.info.dict_keys[name] = tuple(keys)
                    if len(keys) == len(value.keys) and not self.nested:  # every key written out
                        self.string_key_tables.add(name)
                strings = _string_collection(value)
                if strings is not None:
                    self.info.str_collections[name] = strings
            self.bind(name, binding)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for name in target_names(target):
                self.table_bindings[name] += 1
                self.bind(name, Binding(BindingKind.VALUE, line))

    def call(self, call: ast.Call) -> None:
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and dotted(func.value) == "sys.meta_path"
            and func.attr in ("insert", "append")
        ):
            self.finder_parts.extend(call.args)
        # __all__.extend([...]) / __all__.append("x")
        if isinstance(func, ast.Attribute) and dotted(func.value) == "__all__" and call.args:
            if func.attr == "extend":
                self.extend_all(call.args[0])
            elif func.attr == "append":
                self.extend_all(ast.List(elts=[call.args[0]], ctx=ast.Load()))

    # -- __all__ ------------------------------------------------------------

    def set_all(self, value: ast.expr | None) -> None:
        names = literal_strings(value)
        if names is None:
            self.all_dynamic = True
            self.all_names = []
        else:
            self.all_names = names

    def extend_all(self, value: ast.expr) -> None:
        names = literal_strings(value)
        if names is None or self.all_names is None:
            self.all_dynamic = True
            self.all_names = self.all_names or []
        else:
            self.all_names.extend(names)

    # -- classes ------------------------------------------------------------

    def class_def(self, node: ast.ClassDef, qualname: str) -> None:
        # A metaclass provides members too (ABCMeta.register): treat it as one more base.
        exprs = [*node.bases, *(k.value for k in node.keywords if k.arg == "metaclass")]
        decorators = tuple(
            d for d in (dotted(x.func if isinstance(x, ast.Call) else x) for x in node.decorator_list) if d
        )
        bases = tuple(b for b in (dotted(x) for x in exprs) if b)
        cls = ClassInfo(qualname=qualname, line=node.lineno, bases=bases, decorators=decorators)
        cls.opaque = len(bases) < len(exprs)
        deco = next((d for d in node.decorator_list if self._is_stdlib_dataclass(d)), None)
        cls.fields = dataclass_fields(node, deco) if deco is not None else None
        if len(bases) == 1 and self._is_typing_namedtuple(bases[0]):
            cls.fields = namedtuple_fields(node)
            cls.namedtuple = cls.fields is not None
        self.info.classes[qualname] = cls
        self.class_body(node.body, cls)

    def class_body(self, body: list[ast.stmt], cls: ClassInfo, top: bool = True) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if _is_overload(stmt):
                    continue
                cls.members.setdefault(
                    stmt.name, Member(MemberKind.DEF, stmt.lineno, signature_of(stmt), self.digest(stmt))
                )
                if stmt.name == "__getattr__":
                    cls.has_getattr = True
                self.instance_attributes(stmt, cls)
            elif isinstance(stmt, ast.ClassDef):
                cls.members.setdefault(stmt.name, Member(MemberKind.CLASS, stmt.lineno))
                self.class_def(stmt, f"{cls.qualname}.{stmt.name}")
            else:
                truth = _constant_truth(stmt) if top else None
                for name in _class_names(stmt):
                    member = cls.members.setdefault(name, Member(MemberKind.VALUE, stmt.lineno, truth=truth))
                    if member.line != stmt.lineno:  # bound again: its value is not known
                        member.truth = None
                    elif isinstance(stmt, ast.AnnAssign):
                        member.annotation = annotated_class(stmt.annotation)
                for nested in runtime_bodies(stmt):
                    self.class_body(nested, cls, top=False)

    def _is_stdlib_dataclass(self, decorator: ast.expr) -> bool:
        """`@dataclass` or `@dataclasses.dataclass` (called or not), imported from the standard
        library (pydantic's `dataclass` takes other arguments: left alone)."""
        written = dotted(decorator.func if isinstance(decorator, ast.Call) else decorator)
        return self._names_imported(written, "dataclass", ("dataclasses",))

    def _is_typing_namedtuple(self, base: str) -> bool:
        """`NamedTuple` or `typing.NamedTuple` (or typing_extensions'), as imported here."""
        return self._names_imported(base, "NamedTuple", ("typing", "typing_extensions"))

    def _names_imported(self, written: str, name: str, modules: tuple[str, ...]) -> bool:
        """Does `written` (`name`, or `module.name`) name `name` of one of `modules`, as this
        module imports it?"""
        head, _, last = written.rpartition(".")
        binding = self.info.bindings.get(head or last)
        if last != name or binding is None:
            return False
        return binding.target in (modules if head else tuple(f"{m}:{name}" for m in modules))

    def instance_attributes(self, method: ast.FunctionDef | ast.AsyncFunctionDef, cls: ClassInfo) -> None:
        """`self.x = ...` anywhere in a method makes `x` an (instance) member; calls the method
        makes on its own instance or class (`self.m(...)`, `super().m(...)`, `self.__class__(...)`)
        are what a subclass's override of `m` (or `__init__`) must take."""
        args = [*method.args.posonlyargs, *method.args.args]
        if not args:
            return
        receiver = args[0].arg
        is_class = "classmethod" in {dotted(d) for d in method.decorator_list}
        a = method.args
        typed = {p.arg: annotated_class(p.annotation) for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.annotation}
        first_call, tests_none = len(cls.self_calls), False
        params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
        # Node classes compared exactly: the parser makes no subclasses, and this loop is hot.
        for node in [n for n in walk(method) if n.__class__ in _READ_IN_METHODS]:
            kind = node.__class__
            if kind is ast.If:
                tests_none = tests_none or tests_for_none(node.test, params)  # type: ignore[attr-defined]
                continue
            if kind is ast.Call:
                self_call(node, receiver, is_class, method, cls)  # type: ignore[arg-type]
                named = set_by_name(node, receiver)  # type: ignore[arg-type]
                if named == "*":
                    cls.sets_computed = True
                elif named is not None:
                    cls.members.setdefault(named, Member(MemberKind.INSTANCE, node.lineno)).truth = None  # type: ignore[attr-defined]
                continue
            if kind is ast.Assign:
                targets: list[ast.expr] = node.targets  # type: ignore[attr-defined]
            else:
                targets = [node.target]  # type: ignore[attr-defined]
            for target in targets:
                if (key := dict_key_set(target, receiver)) is not None:  # `self.__dict__[k] = v`
                    if key == "*":
                        cls.sets_computed = True
                    else:
                        cls.members.setdefault(key, Member(MemberKind.INSTANCE, target.lineno)).truth = None
                    continue
                for t in walk(target):
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == receiver:
                        # Set on the instance: a class body's value for it is not what it holds.
                        created = t.attr not in cls.members
                        member = cls.members.setdefault(t.attr, Member(MemberKind.INSTANCE, t.lineno))
                        if member.kind is not MemberKind.INSTANCE:
                            member.truth = None
                        else:
                            # Every statement storing it stores the same constant (vLLM's deprecated
                            # `self.cascade_attn_enabled = False`): whether it is true.
                            value = _stored_truth(node) if t is target else None  # type: ignore[arg-type]
                            member.truth = value if created or member.truth == value else None
                            # What every statement storing it says it holds (one disagreeing: unknown).
                            stored = _stored_class(node, typed) if t is target else ""  # type: ignore[arg-type]
                            first = member.line == t.lineno and not member.annotation
                            member.annotation = stored if first or member.annotation == stored else ""
        if tests_none:
            _mark_none_params(method, cls.self_calls[first_call:])


def _mark_none_params(method: ast.FunctionDef | ast.AsyncFunctionDef, calls: list[SelfCall]) -> None:
    """Set each call's `none_params`: a call made only where a parameter of `method` is None
    (`if p is not None: return ...` before it)."""
    if not calls:
        return
    known = [k for k in known_none(method, [call.line for call in calls]) if k.none]
    for call in calls:
        call.none_params = tuple(sorted({k.name for k in known if k.holds_at(call.line)}))


def self_call(
    node: ast.Call, receiver: str, is_class: bool, method: ast.FunctionDef | ast.AsyncFunctionDef, cls: ClassInfo
) -> None:
    """Record `node` in `cls.self_calls` when it calls something on the instance or class itself
    (in `method`, whose dicts written whole a `**name` may pass: `arity.keyword_dicts`)."""
    func = node.func
    name, kind = "", ""
    if _is_own_class(func, receiver) or (is_class and isinstance(func, ast.Name) and func.id == receiver):
        name, kind = "__init__", "rebuild"
    elif isinstance(func, ast.Attribute):
        inner = func.value
        if (isinstance(inner, ast.Name) and inner.id == receiver) or _is_own_class(inner, receiver):
            name, kind = func.attr, "self"
        elif isinstance(inner, ast.Call) and dotted(inner.func) == "super":
            name, kind = func.attr, "super"
    if name:
        shape = shape_of(node, keyword_dicts(method) if spreads_a_name(node) else None)
        cls.self_calls.append(SelfCall(name, kind, method.name, node.lineno, shape))


def _is_own_class(node: ast.expr, receiver: str) -> bool:
    """`self.__class__` or `type(self)`."""
    if isinstance(node, ast.Attribute) and node.attr == "__class__":
        return isinstance(node.value, ast.Name) and node.value.id == receiver
    return (
        isinstance(node, ast.Call)
        and dotted(node.func) == "type"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == receiver
    )


def _stored_truth(stmt: ast.Assign | ast.AnnAssign | ast.AugAssign) -> bool | None:
    """`self.x = False` (or `self.x: bool = True`): whether the constant stored is true; None for
    any other value, and for an augmented assignment."""
    value = None if isinstance(stmt, ast.AugAssign) else stmt.value
    return bool(value.value) if isinstance(value, ast.Constant) else None


def _constant_truth(stmt: ast.stmt) -> bool | None:
    """`x = False`, `x: bool = True`: whether the constant is true; None for any other statement."""
    assigned = single_assignment(stmt)
    if assigned is None:
        return None
    target, value = assigned
    return bool(value.value) if isinstance(target, ast.Name) and isinstance(value, ast.Constant) else None


def annotated_class(annotation: ast.expr | None) -> str:
    """The class an annotation names, as written ("VllmConfig", "config.VllmConfig"); "" when it
    names none (`syntax.annotated_type`)."""
    node = annotated_type(annotation)
    return dotted(node) if node is not None else ""


# Builtin and standard containers, by the name an annotation or a constructor writes: what an
# attribute so stored holds is no object of the provider's classes.
CONTAINERS = frozenset(
    {"set", "frozenset", "dict", "list", "tuple", "deque", "defaultdict", "OrderedDict", "Counter"}
    | {"Set", "FrozenSet", "Dict", "List", "Tuple", "Deque", "DefaultDict", "MutableSet", "MutableMapping"}
)
_MADE = {
    ast.Set: "set",
    ast.SetComp: "set",
    ast.Dict: "dict",
    ast.DictComp: "dict",
    ast.List: "list",
    ast.ListComp: "list",
}


def _stored_class(node: ast.Assign | ast.AnnAssign | ast.AugAssign, typed: dict[str, str]) -> str:
    """The class a `self.x = ...` statement's annotation or value says `x` holds: `self.x: T = ...`,
    `self.x = p` for a parameter `p` annotated with a class, or `self.x = T(...)` (what T names is
    read later: only a class counts); a container's name for one annotated or made so
    (`self.x: set[str] = set()`, `self.x = []`)."""
    if isinstance(node, ast.AnnAssign):
        return annotated_class(node.annotation) or _container(node.annotation)
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        value = node.value
        if isinstance(value, ast.Name):
            return typed.get(value.id, "")
        if isinstance(value, ast.Call):
            return _container(value.func) or dotted(value.func)
        return _MADE.get(value.__class__, "")
    return ""


def _container(node: ast.expr) -> str:
    """`set`, `set[str]`, `collections.deque` or `typing.Dict[str, int]` as written: the container's
    name ("" for anything else)."""
    name = dotted(node.value if isinstance(node, ast.Subscript) else node).rpartition(".")[2]
    return name if name in CONTAINERS else ""


def _class_names(stmt: ast.stmt) -> list[str]:
    """Names an assignment or import in a class body binds as class attributes."""
    if isinstance(stmt, ast.Assign):
        return [name for target in stmt.targets for name in target_names(target)]
    if isinstance(stmt, ast.AnnAssign) and stmt.value is None and _init_only(stmt.annotation):
        return []  # a dataclass's `x: InitVar[int]` goes to `__init__` and `__post_init__`, never to the object
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        return target_names(stmt.target)
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [alias.asname or alias.name.split(".")[0] for alias in stmt.names if alias.name != "*"]
    return []


def _init_only(annotation: ast.expr) -> bool:
    """`InitVar[...]`, `dataclasses.InitVar[...]`: an init-only pseudo-field (vLLM 0.13's
    `SchedulerConfig.max_model_len`, a field until 0.12)."""
    base = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return dotted(base).rpartition(".")[2] == "InitVar"


def _is_overload(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(dotted(d).split(".")[-1] == "overload" for d in node.decorator_list)


def _string_collection(value: ast.expr) -> tuple[str, ...] | None:
    """("a", "b"), ["a"], {"a"}, frozenset({"a"}), tuple([...]) -> the strings; else None."""
    if (
        isinstance(value, ast.Call)
        and dotted(value.func) in ("frozenset", "set", "tuple", "list")
        and len(value.args) == 1
    ):
        value = value.args[0]
    names = literal_strings(value)
    return tuple(names) if names else None


def dataclass_fields(node: ast.ClassDef, decorator: ast.expr) -> tuple[str, ...] | None:
    """The fields a `@dataclass` class body declares, in order, as `ClassInfo.fields` keeps them:
    "name", "name=" (it has a default: a value, or another binding of the name in the body),
    "*name" (keyword-only), "!name" (declared, but no parameter of `__init__`: a `ClassVar`, or
    `field(init=False)`; it still takes an inherited field's place). None when the decorator's
    options or a field's are not literal, `init=False`, or a field is declared inside a compound
    statement (its presence depends on the branch)."""
    options = {k.arg: k.value for k in decorator.keywords} if isinstance(decorator, ast.Call) else {}
    if None in options or (isinstance(decorator, ast.Call) and decorator.args):
        return None
    literal = {k: v.value for k, v in options.items() if isinstance(v, ast.Constant)}
    if len(literal) < len(options) or literal.get("init", True) is not True:
        return None
    keyword_only = literal.get("kw_only", False) is True
    # The default of a field written without a value is the class attribute of that name.
    bound = {name for stmt in node.body if not isinstance(stmt, ast.AnnAssign) for name in _class_names(stmt)}
    bound |= {s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    statements = _field_statements(node)
    if statements is None:
        return None
    fields: list[str] = []
    for stmt in statements:
        if not isinstance(stmt.target, ast.Name):
            continue
        name = stmt.target.id
        kind = _field_kind(stmt.annotation)
        if kind == "ClassVar":
            fields.append("!" + name)
            continue
        if kind == "KW_ONLY":
            keyword_only = True
            continue
        default, field_keyword_only = stmt.value is not None or name in bound, keyword_only
        value = stmt.value
        if isinstance(value, ast.Call) and dotted(value.func).rpartition(".")[2] == "field":
            given = {k.arg: k.value for k in value.keywords}
            if None in given or value.args:
                return None
            flags = {k: v.value for k, v in given.items() if k in ("init", "kw_only") and isinstance(v, ast.Constant)}
            if len(flags) < len({k for k in given if k in ("init", "kw_only")}):
                return None
            if flags.get("init", True) is not True:
                fields.append("!" + name)
                continue
            default = "default" in given or "default_factory" in given
            field_keyword_only = flags.get("kw_only", keyword_only) is True
        fields.append(("*" if field_keyword_only else "") + name + ("=" if default else ""))
    return tuple(fields)


def namedtuple_fields(node: ast.ClassDef) -> tuple[str, ...] | None:
    """The fields a `typing.NamedTuple` class body declares, in order: "name", or "name=" when it
    has a default (a value written). None when a field is declared inside a compound statement
    (its presence depends on the branch) or as a `ClassVar`."""
    statements = _field_statements(node)
    if statements is None:
        return None
    fields: list[str] = []
    for stmt in statements:
        if not isinstance(stmt.target, ast.Name) or _field_kind(stmt.annotation):
            return None
        fields.append(stmt.target.id + ("=" if stmt.value is not None else ""))
    return tuple(fields)


def _field_statements(node: ast.ClassDef) -> list[ast.AnnAssign] | None:
    """The annotated assignments of a class body, in order: what declares its fields. None when
    one is inside a compound statement (whether the field exists depends on the branch)."""
    out: list[ast.AnnAssign] = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign):
            out.append(stmt)
        elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and any(
            isinstance(n, ast.AnnAssign) for n in walk(stmt)
        ):
            return None
    return out


def _field_kind(annotation: ast.expr) -> str:
    """What an annotation marks: "ClassVar" (a class variable) or "KW_ONLY" (the keyword-only
    sentinel), also when written as a string; "" for a field's."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        text = annotation.value.strip()
        head = text.partition("[")[0].rpartition(".")[2]
    else:
        head = dotted(annotation).rpartition(".")[2]
    return head if head in ("ClassVar", "KW_ONLY") else ""
