"""Small questions about Python syntax trees, shared by the provider indexer and the consumer scanner.

Everything here takes `ast` nodes and answers from their shape alone; helpers
that work on module and symbol names as strings are in `names`.
"""

from __future__ import annotations

import ast
import hashlib
from collections import Counter
from collections.abc import Iterator
from collections.abc import Set as AbstractSet

from atompin.analysis.limits import parse_expression

# Fields that never hold a node (names, flags, a constant's value), and an expression's
# context (`Load`, `Store`), which no visitor reads as a node: `walk` does not descend into them.
_LEAF_FIELDS = frozenset(
    {"ctx", "id", "attr", "name", "asname", "module", "level", "arg", "conversion", "is_async", "simple"}
    | {"kind", "type_comment", "tag"}
)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    fields = _CHILD_FIELDS.get(cls)
    if fields is None:
        leaves = _LEAF_FIELDS | ({"value"} if cls in (ast.Constant, ast.MatchSingleton) else set())
        fields = _CHILD_FIELDS[cls] = tuple(f for f in cls._fields if f not in leaves)  # type: ignore[attr-defined]
    return fields


def walk(node: ast.AST) -> list[ast.AST]:
    """Every node under `node` (itself first) in the order `ast.walk` gives them (breadth first,
    fields in order), leaving out expression contexts (`Load`, `Store`, `Del`: a third of all
    nodes, read as `node.ctx` where needed), at about half its cost: read by every visitor,
    often. A list: building it beats resuming a generator for every node."""
    todo = [node]
    i = 0
    AST = ast.AST
    fields_of = _CHILD_FIELDS.get
    append, extend = todo.append, todo.extend
    while i < len(todo):
        current = todo[i]
        i += 1
        cls = current.__class__
        fields = fields_of(cls)
        if fields is None:  # not `or`: a class with no child field (`Name`) has an empty tuple
            fields = _child_fields(cls)
        for name in fields:
            value = getattr(current, name, None)
            if value.__class__ is list:
                if value:  # most lists are empty (decorators, keywords, orelse)
                    extend([x for x in value if isinstance(x, AST)])
            elif value is not None and isinstance(value, AST):
                append(value)
    return todo


def single_assignment(stmt: ast.stmt) -> tuple[ast.expr, ast.expr] | None:
    """The target and value of `x = v` (one target) or `x: T = v`; None for any other statement."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        return stmt.targets[0], stmt.value
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        return stmt.target, stmt.value
    return None


def dotted(node: ast.expr) -> str:
    """`a.b.c` -> "a.b.c"; a subscripted base like `Base[T]` -> "Base"; anything else -> ""."""
    if isinstance(node, ast.Subscript):
        node = node.value
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def is_type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` / `if typing.TYPE_CHECKING:`: a block that never runs."""
    return dotted(test).split(".")[-1] == "TYPE_CHECKING"


def target_names(target: ast.expr) -> list[str]:
    """The names an assignment or loop target binds: `a, (b, *c)` -> ["a", "b", "c"]."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in target_names(elt)]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return []


def literal_strings(value: ast.expr | None) -> list[str] | None:
    """A literal list/tuple/set of strings, or a `+` of such; None when not literal."""
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        out: list[str] = []
        for elt in value.elts:
            if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                out.append(elt.value)
            else:
                return None
        return out
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        left, right = literal_strings(value.left), literal_strings(value.right)
        if left is not None and right is not None:
            return left + right
    return None


def walk_shallow(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node under `body`, not entering nested functions, classes or lambdas (one written in
    `body` itself is yielded, its contents are not)."""
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def gives_value(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Does the function return a value somewhere (`return comm`, not a bare `return` or
    `return None`)? Its callers then read its answer, not only its effects."""
    return any(
        isinstance(stmt, ast.Return)
        and stmt.value is not None
        and not (isinstance(stmt.value, ast.Constant) and stmt.value.value is None)
        for stmt in statements(function.body)
    )


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement under `body`, in nested blocks too, not entering nested functions or classes."""
    todo = list(reversed(body))
    while todo:
        stmt = todo.pop()
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            todo.extend(reversed(getattr(stmt, field, None) or []))
        for handler in getattr(stmt, "handlers", None) or []:
            todo.extend(reversed(handler.body))
        for case in getattr(stmt, "cases", None) or []:
            todo.extend(reversed(case.body))


def breaks(body: list[ast.stmt]) -> bool:
    """Does this loop body `break` (not counting nested loops)?"""
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Break):
            return True
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return False


def expr_children(node: ast.AST) -> Iterator[ast.expr]:
    """The expressions directly under `node`, looking through comprehensions, keywords and argument lists."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            yield child
        elif isinstance(child, (ast.comprehension, ast.keyword, ast.arguments, ast.FormattedValue)):
            yield from expr_children(child)


def runtime_bodies(node: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists a compound statement may run: every branch of an `if` (but the
    body of `if TYPE_CHECKING:`), of a `try`, a `with`, a loop or a `match`; [] otherwise."""
    if isinstance(node, ast.If):
        return [node.orelse] if is_type_checking(node.test) else [node.body, node.orelse]
    if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        try_node: ast.Try = node  # type: ignore[assignment]  # TryStar (3.11+) has the same fields
        return [try_node.body, *(h.body for h in try_node.handlers), try_node.orelse, try_node.finalbody]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [node.body]
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        return [node.body, node.orelse]
    if isinstance(node, ast.Match):
        return [case.body for case in node.cases]
    return []


def function_body(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """A function's statements without its docstring."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            return body[1:]
    return body


def body_digest(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[bytes]) -> str:
    """A short hash of a function body's source lines, docstring left out (and its parameters:
    a signature change alone is not new work). Comments and spacing count: a change there is
    told apart from a change in code later, by `same_body`, only for the few that differ."""
    body = function_body(node)
    if not body:
        return ""
    text = b"\n".join(line.strip() for line in lines[body[0].lineno - 1 : node.end_lineno])
    return hashlib.sha1(text).hexdigest()[:16]


def same_body(a: ast.FunctionDef | ast.AsyncFunctionDef, b: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Do two functions' bodies do the same (positions, comments and docstring aside)?"""
    dump = [[ast.dump(s, include_attributes=False) for s in function_body(f)] for f in (a, b)]
    return dump[0] == dump[1]


def delegating_exits(function: ast.FunctionDef | ast.AsyncFunctionDef, uses: AbstractSet[ast.AST]) -> list[ast.If]:
    """The top-level `if`s of a function that hand on to what `uses` (nodes of its body) refer to
    and exit (`if cond: return original(...)`), when every one of `uses` sits in such an early
    exit and the function does work of its own after the first: a copy of the original but where
    one of them holds (ROCm ATOM's DSpark `_sample_sequential`). [] otherwise."""
    found: list[ast.If] = []
    own_work = False
    for stmt in function_body(function):
        used = any(node in uses for node in walk(stmt))
        if (
            used
            and isinstance(stmt, ast.If)
            and not stmt.orelse
            and isinstance(stmt.body[-1], (ast.Return, ast.Raise))
            and not any(node in uses for node in walk(stmt.test))
        ):
            found.append(stmt)
            continue
        if used:
            return []  # the original runs on the main path too
        if found and not _inert(stmt) and not isinstance(stmt, ast.Raise):
            own_work = True
    return found if own_work else []


def hasattr_ladder(function: ast.FunctionDef | ast.AsyncFunctionDef, line: int, name: str) -> tuple[str, ...] | None:
    """For a read at `line` in the branch of `if hasattr(x, "name"):` (an `elif` too) of an
    `if`/`elif` chain of the function whose every test is `hasattr(x, "...")` of the same `x` and
    whose last `else` raises (after nothing that may leave it): the other names the chain tests.
    None for any other place.
    Where every tested name is gone, the chain raises all the same (LMCache's connector raises
    its own AttributeError when vLLM 0.34 has neither `resumed_req_ids` nor
    `resumed_from_preemption`)."""
    ifs = [node for node in walk(function) if isinstance(node, ast.If)]
    elifs = {id(n.orelse[0]) for n in ifs if len(n.orelse) == 1 and isinstance(n.orelse[0], ast.If)}
    for top in ifs:
        if id(top) in elifs:
            continue  # the first `if` of a chain only
        chain, tested = [top], []
        while len(chain[-1].orelse) == 1 and isinstance(chain[-1].orelse[0], ast.If):
            chain.append(chain[-1].orelse[0])
        for branch in chain:
            test = branch.test
            if not (isinstance(test, ast.Call) and dotted(test.func) == "hasattr" and len(test.args) == 2):
                break
            literal = test.args[1]
            if not (isinstance(literal, ast.Constant) and isinstance(literal.value, str)):
                break
            tested.append((ast.dump(test.args[0]), literal.value, branch))
        else:
            last = chain[-1].orelse  # it raises last, with nothing before that may leave (a log call may)
            if not last or not isinstance(last[-1], ast.Raise):
                continue
            if not all(isinstance(stmt, (ast.Expr, ast.Pass, ast.Assign, ast.AnnAssign)) for stmt in last[:-1]):
                continue
            if len({receiver for receiver, _, _ in tested}) != 1:
                continue
            for _, tested_name, branch in tested:
                first, end = branch.body[0].lineno, branch.body[-1].end_lineno or branch.body[-1].lineno
                if tested_name == name and first <= line <= end:
                    return tuple(n for _, n, _ in tested if n != name)
    return None


def only_raises(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Does the function do nothing but raise (`raise NotImplementedError(...)`): every call fails?"""
    body = [stmt for stmt in function_body(node) if not isinstance(stmt, ast.Pass)]
    return len(body) == 1 and isinstance(body[0], ast.Raise) and body[0].exc is not None


def _inert(stmt: ast.stmt) -> bool:
    """A docstring, `pass`, `...`, `return` or `return None`: a statement that changes nothing."""
    if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
        return True
    return isinstance(stmt, ast.Return) and (
        stmt.value is None or (isinstance(stmt.value, ast.Constant) and stmt.value.value is None)
    )


# Builtins whose call only computes a value: a statement calling nothing else changes nothing
# outside the function's own names.
_PURE_BUILTINS = frozenset(
    {"getattr", "hasattr", "isinstance", "issubclass", "len", "str", "repr", "int", "float", "bool", "type"}
    | {"tuple", "list", "dict", "set", "frozenset", "sorted", "min", "max", "format", "id", "callable", "vars"}
)


def sets_locals_only(stmts: list[ast.stmt], shared: AbstractSet[str] = frozenset()) -> bool:
    """Do these statements only bind plain names (none of `shared`: the function's `global` and
    `nonlocal` names) to values computed without calls (but of pure builtins such as
    `getattr(cls, "__module__", default)`), or change nothing: losing them loses no work beyond
    those names? A try body's tail, in a function, after a call whose TypeError the handler
    swallows (the call's own result is such a name)."""
    for stmt in stmts:
        if _inert(stmt):
            continue
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            return False
        # Every leaf a plain name (`a, (b, *c)`), none shared beyond the function.
        leaves = [n for t in targets for n in walk(t) if not isinstance(n, (ast.Tuple, ast.List, ast.Starred))]
        if not all(isinstance(n, ast.Name) and n.id not in shared for n in leaves):
            return False
        for node in walk(value):
            if isinstance(node, (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.Lambda)):
                return False
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _PURE_BUILTINS):
                return False
    return True


def shared_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names a function declares `global` or `nonlocal`: what it sets of them is not its own."""
    out: set[str] = set()
    for stmt in statements(node.body):
        if isinstance(stmt, (ast.Global, ast.Nonlocal)):
            out.update(stmt.names)
    return out


def does_nothing(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Is the body only a docstring, `pass`, `...` or `return None`: a call of it changes nothing?"""
    return all(_inert(stmt) for stmt in function_body(node))


def is_stub(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A body that only says "implement me": `pass`, `...`, `raise NotImplementedError`, `return None`
    (or another constant)."""
    for stmt in function_body(node):
        if _inert(stmt) or (isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Constant)):
            continue
        if isinstance(stmt, ast.Raise) and stmt.exc is not None:
            exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
            if dotted(exc) == "NotImplementedError":
                continue
        return False
    return True


def annotated_type(annotation: ast.expr | None) -> ast.Name | ast.Attribute | None:
    """The one class expression an annotation names: `C`, `"C"`, `C | None`, `Optional[C]`;
    None for anything else (a union, `list[C]`, `type[C]`, a type variable's use is its name)."""
    found = _one_type(annotation)
    return found if isinstance(found, (ast.Name, ast.Attribute)) else None


def _one_type(annotation: ast.expr | None) -> ast.expr | None:
    """An annotation read as the one type it names: a string's expression, without `| None` or
    `Optional[...]`; None for a union of several types (or a string that is no expression)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = parse_expression(annotation.value)
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [
            s for s in (annotation.left, annotation.right) if not (isinstance(s, ast.Constant) and s.value is None)
        ]
        return _one_type(sides[0]) if len(sides) == 1 else None
    if isinstance(annotation, ast.Subscript) and dotted(annotation.value).rpartition(".")[2] == "Optional":
        return _one_type(annotation.slice)
    return annotation


# Collections whose one type argument is the type of every element (`tuple` only with `, ...`).
_COLLECTIONS = frozenset(
    {"list", "List", "Sequence", "MutableSequence", "Iterable", "Iterator", "Collection", "set", "Set", "frozenset"}
    | {"FrozenSet", "AbstractSet", "MutableSet", "tuple", "Tuple"}
)


def element_type(annotation: ast.expr | None) -> ast.Name | ast.Attribute | None:
    """The class of the elements an annotation says a collection holds: `list[C]`, `Sequence[C]`,
    `set[C]`, `tuple[C, ...]` (also written as a string, or `| None`); None for anything else
    (`dict[K, C]`, `tuple[A, B]`, `list[C] | list[D]`)."""
    annotation = _one_type(annotation)
    if not isinstance(annotation, ast.Subscript):
        return None
    outer = dotted(annotation.value).rpartition(".")[2]
    if outer not in _COLLECTIONS:
        return None
    inner = annotation.slice
    if outer in ("tuple", "Tuple"):
        if not (isinstance(inner, ast.Tuple) and len(inner.elts) == 2):
            return None
        last = inner.elts[1]
        if not (isinstance(last, ast.Constant) and last.value is Ellipsis):
            return None
        inner = inner.elts[0]
    return annotated_type(inner) if not isinstance(inner, ast.Tuple) else None


# Mappings whose last type argument is the type of every value.
_MAPPINGS = frozenset({"dict", "Dict", "Mapping", "MutableMapping", "defaultdict", "DefaultDict", "OrderedDict"})


def mapped_type(annotation: ast.expr | None) -> ast.Name | ast.Attribute | None:
    """The class of the values an annotation says a mapping holds: `dict[K, C]`, `Mapping[K, C]`
    (also written as a string, or `| None`); None for anything else."""
    annotation = _one_type(annotation)
    if not isinstance(annotation, ast.Subscript) or dotted(annotation.value).rpartition(".")[2] not in _MAPPINGS:
        return None
    inner = annotation.slice
    return annotated_type(inner.elts[1]) if isinstance(inner, ast.Tuple) and len(inner.elts) == 2 else None


def class_body_names(body: list[ast.stmt]) -> set[str]:
    """Every name a class body binds: definitions, assignments, imports, loop and `with` targets,
    under an `if` (but `if TYPE_CHECKING:`), a `try`, a `with`, a loop or a `match` too."""
    out: set[str] = set()
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            out.update(n for t in stmt.targets for n in target_names(t))
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            out.update(target_names(stmt.target))
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            out.update(alias.asname or alias.name.split(".")[0] for alias in stmt.names)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            out.update(target_names(stmt.target))
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            out.update(n for item in stmt.items if item.optional_vars for n in target_names(item.optional_vars))
        for nested in runtime_bodies(stmt):
            out |= class_body_names(nested)
    return out


def parameter_names(args: ast.arguments) -> list[str]:
    """Every name a function's (or lambda's) parameters bind, `*args` and `**kwargs` too."""
    return [p.arg for p in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if p is not None]


def redefined(body: list[ast.stmt]) -> set[ast.stmt]:
    """The `def`s of a class body that a later `def` of the same name in it replaces before the
    class is made: Python keeps the last (arctic-inference's runner patch defines `sample_tokens`
    twice). A later def decorated from the name (`@x.setter`, `@f.register`) builds on it: kept."""
    last: dict[str, ast.stmt] = {}
    out: set[ast.stmt] = set()
    for stmt in reversed(body):
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        later = last.get(stmt.name)
        if later is None:
            last[stmt.name] = stmt
        elif not any(
            isinstance(n, ast.Name) and n.id == stmt.name
            for deco in later.decorator_list  # type: ignore[attr-defined]
            for n in walk(deco)
        ):
            out.add(stmt)
        else:
            last[stmt.name] = stmt
    return out


def init_hands_on(node: ast.ClassDef) -> tuple[str, ...] | None:
    """When the class's `__init__` hands every argument it takes on to the next class's (`def
    __init__(self, *args, **kwargs): super().__init__(*args, **kwargs)`, a docstring before,
    anything after), the keywords it takes out of them first, each as `kwargs.pop("name"[,
    default])` (vllm-rbln's `RBLNInputBatch` pops `use_rbln_sampler`); None when it does not. Its
    body must bind `__init__` once, by that plain `def`."""
    if not any(isinstance(s, ast.FunctionDef) and s.name == "__init__" for s in node.body):
        return None  # most classes: their statements are not read for bindings
    bindings = [s for s in node.body if "__init__" in class_body_names([s])]
    init = bindings[0] if len(bindings) == 1 else None
    if not isinstance(init, ast.FunctionDef) or init.decorator_list:
        return None
    a = init.args
    if a.posonlyargs or len(a.args) != 1 or a.kwonlyargs or a.vararg is None or a.kwarg is None:
        return None
    body = function_body(init)
    popped: list[str] = []
    while body and (key := _popped_key(body[0], a.kwarg.arg, a.args[0].arg)):
        popped.append(key)
        body = body[1:]
    call = body[0].value if body and isinstance(body[0], ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "__init__"):
        return None
    owner = call.func.value
    if not (isinstance(owner, ast.Call) and dotted(owner.func) == "super" and not owner.args and not owner.keywords):
        return None
    match call.args, call.keywords:
        case [ast.Starred(value=ast.Name(id=args))], [ast.keyword(arg=None, value=ast.Name(id=kwargs))]:
            return tuple(popped) if args == a.vararg.arg and kwargs == a.kwarg.arg else None
    return None


def _popped_key(stmt: ast.stmt, kwargs: str, me: str) -> str:
    """The key a statement takes out of the `**` parameter: "name" for `kwargs.pop("name")` (or
    with a default), alone or stored in a local or on the instance; "" for any other statement."""
    if isinstance(stmt, ast.Expr):
        value = stmt.value
    elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if not (isinstance(target, ast.Name) and target.id not in (kwargs, me)) and not own_attribute(target, me):
            return ""
        value = stmt.value
    else:
        return ""
    match value:
        case ast.Call(
            func=ast.Attribute(value=ast.Name(id=owner), attr="pop"), args=[ast.Constant(value=str(key)), *rest]
        ):
            return key if owner == kwargs and len(rest) <= 1 and not value.keywords else ""
    return ""


def instance_assignments(node: ast.ClassDef) -> dict[str, set[str]]:
    """What a class's methods (closures in them included) set on their instance: attribute -> the
    callees whose results they store there, as written ("type[C]" for a parameter annotated with
    a class object, `type[C]`), `FALSE_CONSTANT` for a false constant (`False`, `None`, `0`), "*"
    for any other value (another value, a tuple target, `+=`, `setattr`). The attribute "*": a
    `setattr(self, name, ...)` whose name is not written there, so any attribute. Read from
    statements, not every expression: on the scan's hot path."""
    makers: dict[str, set[str]] = {}
    for method, me in _methods(node):
        classes = _class_parameters(method)
        loops: dict[str, tuple[str, ...]] | None = None  # read when a `setattr` computes its name
        for stmt in _method_statements(method) if me else ():
            if isinstance(stmt, ast.Assign):
                targets, value = stmt.targets, stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                targets, value = [stmt.target], stmt.value
            elif isinstance(stmt, ast.AugAssign):
                targets, value = [stmt.target], None
            else:
                if (attr := _setattr_on(stmt, me)) is not None:
                    names: tuple[str, ...] = (attr,)
                    if attr == "*":  # a computed name: perhaps a loop's over literal names
                        loops = literal_loops(method) if loops is None else loops
                        names = loops.get(_set_name(stmt), names)
                    for name in names:
                        makers.setdefault(name, set()).add("*")
                continue
            for target in targets:
                if (key := dict_key_set(target, me)) is not None:
                    makers.setdefault(key, set()).add("*")
                    continue
                for t in walk(target):
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me:
                        if t is target and isinstance(value, ast.Constant) and not value.value:
                            makers.setdefault(t.attr, set()).add(FALSE_CONSTANT)
                            continue
                        callee = dotted(value.func) if t is target and isinstance(value, ast.Call) else ""
                        makers.setdefault(t.attr, set()).add(classes.get(callee, callee) or "*")
    return makers


def _methods(node: ast.ClassDef) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]:
    """The class's methods, each with the name its first parameter gives the instance ("" for none)."""
    replaced = redefined(node.body)
    for method in node.body:
        if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method not in replaced:
            args = [*method.args.posonlyargs, *method.args.args]
            yield method, args[0].arg if args else ""


# What `instance_assignments` says of an attribute set to a false constant (`self.enabled = False`).
FALSE_CONSTANT = "=false"

# Methods that change a list, set or dict in place (what it holds is then not only what it was made of).
_IN_PLACE = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "__setitem__", "__iadd__"})


def element_makers(node: ast.ClassDef) -> dict[str, str]:
    """What every element of a collection the class keeps in an attribute x is (key "x"), or
    every value of a mapping (key "x.values()"), as written: the class its annotation names (`x:
    tuple[Manager, ...]` or `x: dict[str, Manager]` in the class body, `self.x: list[Manager] =
    ...`), else the one callee whose results the class's methods fill it with, and only so
    (`self.x = tuple(make(...) for ...)`, `[make(...) for ...]`, `{k: make(...) for ...}`) when it
    is never changed in place (`self.x.append(...)`, `self.x[k] = ...`, `+=`). An element is an
    instance of that class (or a subclass), or of what the callee makes."""
    annotated: dict[str, str] = {}
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            annotated.update(_annotated_elements(stmt.target.id, stmt.annotation))
    made: dict[str, set[str]] = {}
    for method, me in _methods(node):
        for sub in walk(method) if me else ():
            if isinstance(sub, ast.AnnAssign) and (attr := own_attribute(sub.target, me)):
                annotated.update(_annotated_elements(attr, sub.annotation))
            for attr, callee in _collection_writes(sub, me):
                made.setdefault(attr, set()).add(callee)
    if "*" in made:  # `setattr(self, name, ...)`: any attribute, so none is known
        return annotated
    out = {}
    for attr, callees in made.items():
        if len(callees) == 1 and not callees & {"*", ""}:
            callee = callees.pop()
            mapping = callee.startswith(_VALUES)
            out[f"{attr}.values()" if mapping else attr] = callee.removeprefix(_VALUES)
    return out | annotated


# What `_element_callee` puts before the callee of a mapping's values.
_VALUES = "values:"


def _annotated_elements(attr: str, annotation: ast.expr | None) -> dict[str, str]:
    """`element_makers`'s entry for attribute `attr` annotated so, if any."""
    if (named := element_type(annotation)) is not None:
        return {attr: dotted(named)}
    if (named := mapped_type(annotation)) is not None:
        return {f"{attr}.values()": dotted(named)}
    return {}


def _collection_writes(node: ast.AST, me: str) -> list[tuple[str, str]]:
    """What one node writes to attributes of `me`: (x, the callee every element of the value is
    made by (`_element_callee`), or "*" for a write of anything else or a change in place)."""
    if isinstance(node, ast.AnnAssign) and (attr := own_attribute(node.target, me)):
        return [(attr, _element_callee(node.value) if node.value is not None else "")]
    if isinstance(node, ast.AugAssign) and (attr := own_attribute(node.target, me)):
        return [(attr, "*")]
    if isinstance(node, ast.Assign):
        out = []
        for target in node.targets:
            for t in walk(target):
                if isinstance(t, ast.expr) and (attr := own_attribute(t, me)):
                    out.append((attr, _element_callee(node.value) if t is target else "*"))
                elif isinstance(t, ast.Subscript) and (attr := own_attribute(t.value, me)):
                    out.append((attr, "*"))  # `self.x[i] = ...`
        return out
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr in _IN_PLACE:
            attr = own_attribute(node.func.value, me)
            return [(attr, "*")] if attr else []
        if (named := set_by_name(node, me)) is not None:
            return [(named, "*")]
    return []


def own_attribute(node: ast.expr, me: str) -> str:
    """x for `me.x`; "" for anything else."""
    return node.attr if isinstance(node, ast.Attribute) and is_name(node.value, me) else ""


def _element_callee(value: ast.expr) -> str:
    """The callee every element of a collection made by `value` is the result of, as written:
    `[make(...) for ...]`, `tuple(make(...) for ...)`; for a mapping's values, `_VALUES` and the
    callee: `{k: make(...) for ...}`; "*" for any other value."""
    if isinstance(value, ast.Call) and dotted(value.func) in ("tuple", "list") and len(value.args) == 1:
        if not value.keywords:
            value = value.args[0]
    if isinstance(value, (ast.ListComp, ast.GeneratorExp)) and isinstance(value.elt, ast.Call):
        return dotted(value.elt.func) or "*"
    if isinstance(value, ast.DictComp) and isinstance(value.value, ast.Call) and (callee := dotted(value.value.func)):
        return _VALUES + callee
    return "*"


def _class_parameters(method: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, str]:
    """The method's parameters annotated with a class object (`executor_class: type[Executor]`):
    name -> "type[Executor]" (the class as written). Calling one makes that class or a subclass."""
    a = method.args
    out: dict[str, str] = {}
    for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
        annotation = arg.annotation
        if (
            isinstance(annotation, ast.Subscript)
            and dotted(annotation.value).rpartition(".")[2] in ("type", "Type")
            and (inner := dotted(annotation.slice))
        ):
            out[arg.arg] = f"type[{inner}]"
    return out


def _method_statements(method: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.stmt]:
    """Every statement of a method, in the closures it defines too (they see its instance)."""
    bodies = [method.body]
    while bodies:
        for stmt in statements(bodies.pop()):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                bodies.append(stmt.body)
            else:
                yield stmt


def local_values(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr | None]:
    """Every name `function` binds (nested scopes' bindings counted too, to be safe): the value
    when it is bound exactly once, by a plain `name = value`; None when bound any other way."""
    bindings: Counter[str] = Counter()
    found: dict[str, ast.expr] = {}
    for node in walk(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bindings[node.id] += 1
        elif isinstance(node, ast.arg):
            bindings[node.arg] += 1
        elif isinstance(node, ast.alias):
            bindings[(node.asname or node.name).split(".")[0]] += 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bindings.update({name: 2 for name in node.names})
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bindings[node.name] += 1
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bindings[node.rest] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not function:
            bindings[node.name] += 1
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
    return {name: found.get(name) if count == 1 else None for name, count in bindings.items()}


def literal_loops(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, tuple[str, ...]]:
    """The names the function binds only as the target of one `for name in ("a", "b"):` over
    literal strings, with those strings: `setattr(self, name, None)` in its body sets just them
    (ai-dynamo's scheduler drops its benchmark state so)."""
    bound: dict[str, int] = {}
    loops: dict[str, tuple[str, ...]] = {}
    for node in walk(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound[node.id] = bound.get(node.id, 0) + 1
        elif isinstance(node, ast.arg):
            bound[node.arg] = bound.get(node.arg, 0) + 1
        if (
            isinstance(node, (ast.For, ast.AsyncFor))
            and isinstance(node.target, ast.Name)
            and isinstance(node.iter, (ast.Tuple, ast.List, ast.Set))
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.iter.elts)
        ):
            loops[node.target.id] = tuple(str(e.value) for e in node.iter.elts)  # type: ignore[attr-defined]
    return {name: values for name, values in loops.items() if bound.get(name) == 1}


def _set_name(stmt: ast.stmt) -> str:
    """The name a `setattr(x, name, value)` statement passes as a plain name ("" otherwise)."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if isinstance(call, ast.Call) and dotted(call.func) in ("setattr", "object.__setattr__") and len(call.args) >= 2:
        return call.args[1].id if isinstance(call.args[1], ast.Name) else ""
    return ""


def _setattr_on(stmt: ast.stmt, me: str) -> str | None:
    """`set_by_name` of a statement that is a call; None for any other."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return set_by_name(call, me) if isinstance(call, ast.Call) else None


def set_by_name(call: ast.Call, me: str) -> str | None:
    """For a call setting an attribute of `me` by name: `setattr(me, "name", value)`,
    `object.__setattr__(me, "name", value)` (a frozen dataclass's own), `me.__setattr__("name",
    value)`, `super().__setattr__("name", value)`: "name" ("*" when the name is computed, and for
    `me.__dict__.update(...)` or `vars(me).update(...)`); else None."""
    func, args = dotted(call.func), call.args
    method, inner = (call.func.attr, call.func.value) if isinstance(call.func, ast.Attribute) else ("", None)
    if func == f"{me}.__dict__.update":
        return "*"
    if method == "update" and isinstance(inner, ast.Call):
        return "*" if dotted(inner.func) == "vars" and inner.args and is_name(inner.args[0], me) else None
    name: ast.expr | None
    if func == f"{me}.__setattr__" or (
        method == "__setattr__" and isinstance(inner, ast.Call) and dotted(inner.func) == "super"
    ):
        name = args[0] if args else None  # called on the instance itself
    elif func in ("setattr", "object.__setattr__") and len(args) >= 2 and is_name(args[0], me):
        name = args[1]
    else:
        return None
    if name is None:
        return None
    return str(name.value) if isinstance(name, ast.Constant) else "*"


def dict_key_set(target: ast.expr, me: str) -> str | None:
    """For an assignment target `me.__dict__["name"]`: "name" ("*" for a computed key); else None."""
    if isinstance(target, ast.Subscript) and dotted(target.value) == f"{me}.__dict__":
        key = target.slice
        return str(key.value) if isinstance(key, ast.Constant) else "*"
    return None


def is_name(node: ast.expr, name: str) -> bool:
    """`node` is the name `name`."""
    return isinstance(node, ast.Name) and node.id == name


def blocks_of(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists directly inside `stmt` (a function's body, a loop's, a handler's...)."""
    blocks = []
    for field in ("body", "orelse", "finalbody"):
        value = getattr(stmt, field, None)
        if isinstance(value, list) and value:
            blocks.append(value)
    for handler in getattr(stmt, "handlers", ()):
        blocks.append(handler.body)
    for case in getattr(stmt, "cases", ()):
        blocks.append(case.body)
    return blocks
