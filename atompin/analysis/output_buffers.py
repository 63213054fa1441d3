"""Output buffers: a provider function that writes its result into a parameter, and a consumer
replacement of it that gives the result back instead. Pure.

vLLM's `Qwen3NextAttention.forward(self, positions, output, hidden_states)` writes its result into
`output` and returns nothing: the decoder layer makes the buffer, calls the layer and reads the
buffer. vllm-ascend 0.24.0rc1 replaces that forward with one that, where `vllm_version_is("0.24.0")`
fails, returns its result and never writes `output`; at vLLM 0.25.1 the decoder reads a buffer
nothing wrote, and nothing raises. Only parameters named as buffers are followed (`output`, `out`, `core_attn_out`,
`output_tensor`): a parameter a function hands on may be anything else (`scheduler_output`,
`model_output` and `output_size` are inputs).
"""

from __future__ import annotations

import ast
import re

from atompin.analysis.block_paths import Ifs, before, ifs_apart, own_nodes, placed
from atompin.analysis.syntax import function_body, gives_value
from atompin.analysis.syntax import walk as every_node

_OUTPUT_NAME = re.compile(r"(?:\w+_)?out|out(?:put)?(?:_tensor)?")
# What reading a buffer without writing it looks like: its shape and kind.
_READ_ONLY = {"shape", "dtype", "device", "ndim", "size", "dim", "numel", "is_cuda", "stride", "is_contiguous"}


def output_names(names: tuple[str, ...] | list[str]) -> list[str]:
    """The names of parameters named as output buffers."""
    return [n for n in names if "out" in n and _OUTPUT_NAME.fullmatch(n)]


def filled_outputs(function: ast.FunctionDef | ast.AsyncFunctionDef, names: list[str]) -> tuple[str, ...]:
    """Of the output parameters `names`, those the function fills: writes into (`out[...] = x`, an
    in-place method such as `out.copy_(x)`) or hands to a call (which may write them), when none
    of its returns gives a value (its callers can only read the buffer)."""
    if not names or gives_value(function):
        return ()
    filled: set[str] = set()
    for node in every_node(function):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in names:
                filled.add(node.value.id)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr.endswith("_"):
                if not func.attr.startswith("_"):
                    filled.add(func.value.id)
            for value in (*node.args, *(k.value for k in node.keywords)):
                if isinstance(value, ast.Starred):
                    value = value.value
                if isinstance(value, ast.Name):
                    filled.add(value.id)
    return tuple(n for n in names if n in filled)


def unwritten_returns(
    function: ast.FunctionDef | ast.AsyncFunctionDef, names: list[str]
) -> list[tuple[ast.Return, Ifs, tuple[str, ...]]]:
    """Each `return <value>` of the function that nothing on its way touches some of the output
    parameters `names` before (not read but for their shape or kind, written, called a method of
    or handed on), with the `if`s it sits in (decided apart from the function's start) and those
    parameters. A return inside a loop, a try or a `match` is left out: which way it is reached
    is not known."""
    if not names:
        return []
    statements = list(placed(function_body(function)))
    touches = {id(stmt): _touched(own_nodes(stmt), names) for stmt, _ in statements}  # (read once each)
    found = []
    for stmt, path in statements:
        if not isinstance(stmt, ast.Return) or stmt.value is None:
            continue
        if isinstance(stmt.value, ast.Constant) and stmt.value.value is None:
            continue
        ifs = ifs_apart(path, ())
        if not isinstance(ifs, tuple):
            continue
        touched: set[str] = set()
        for other, where in statements:
            if other is not stmt and not before(other, stmt):
                continue
            if other is not stmt and ifs_apart(where, path) is False:
                continue  # another branch of an `if` the return is in
            touched |= touches[id(other)]
        untouched = tuple(n for n in names if n not in touched)
        if untouched:
            found.append((stmt, ifs, untouched))
    return found


def _touched(nodes: list[ast.AST], names: list[str]) -> set[str]:
    """The names of `names` that `nodes` use other than to read a shape or kind (`out.shape`,
    `len(out)`, `out is None`)."""
    uses: dict[str, int] = {}
    looks: dict[str, int] = {}
    for node in nodes:
        if isinstance(node, ast.Name) and node.id in names:
            uses[node.id] = uses.get(node.id, 0) + 1
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in _READ_ONLY:
            looks[node.value.id] = looks.get(node.value.id, 0) + 1
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
            for arg in node.args:
                if isinstance(arg, ast.Name):
                    looks[arg.id] = looks.get(arg.id, 0) + 1
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Name):
            if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) and all(
                isinstance(c, ast.Constant) and c.value is None for c in node.comparators
            ):
                looks[node.left.id] = looks.get(node.left.id, 0) + 1
    return {name for name, count in uses.items() if count > looks.get(name, 0)}
