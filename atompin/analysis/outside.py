"""What known classes from outside both packages define: the names a base or receiver of such a
class serves, for the rules that must tell a name served from outside from a name gone.

Each table lists public members only; a class of these serves nothing else (for `nn.Module`,
beside what its instance sets on itself: its `__getattr__` serves only the parameters, buffers
and modules registered on the instance).
"""

from __future__ import annotations

# Bases that add exactly these members to a class deriving from them.
STRUCT_BASES: dict[str, frozenset[str]] = {
    "msgspec.Struct": frozenset(),
    **dict.fromkeys(
        ("NamedTuple", "typing.NamedTuple"),
        frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults", "count", "index"}),
    ),
}

# Bases that make a class a structural type: `isinstance` tests a runtime-checkable protocol's
# members, not the class's order.
PROTOCOL_BASES = frozenset({"Protocol", "typing.Protocol", "typing_extensions.Protocol"})

# torch's `nn.Module`, the usual base of a layer class.
MODULE_MEMBERS = frozenset(
    {
        *("forward", "training", "dump_patches", "call_super_init", "extra_repr", "compile"),
        *("register_buffer", "register_parameter", "add_module", "register_module", "apply"),
        *("get_submodule", "set_submodule", "get_parameter", "get_buffer", "get_extra_state"),
        *("set_extra_state", "cuda", "ipu", "xpu", "mtia", "cpu", "type", "float", "double"),
        *("half", "bfloat16", "to_empty", "to", "state_dict", "load_state_dict", "parameters"),
        *("named_parameters", "buffers", "named_buffers", "children", "named_children"),
        *("modules", "named_modules", "train", "eval", "requires_grad_", "zero_grad"),
        *("share_memory", "register_forward_hook", "register_forward_pre_hook"),
        *("register_backward_hook", "register_full_backward_hook", "register_full_backward_pre_hook"),
        *("register_state_dict_pre_hook", "register_state_dict_post_hook"),
        *("register_load_state_dict_pre_hook", "register_load_state_dict_post_hook"),
    }
)
TORCH_MODULE_BASES: dict[str, frozenset[str]] = {"nn.Module": MODULE_MEMBERS, "torch.nn.Module": MODULE_MEMBERS}

# Methods of Python's built-in types (`d.update(other)`, `items.pop(0)`): a call of one of these
# names, found by the name alone, may be on a built-in object.
BUILTIN_METHODS = frozenset(
    name
    for kind in (dict, list, set, frozenset, tuple, str, bytes, bytearray, int, float, complex, memoryview)
    for name in dir(kind)
    if not name.startswith("_")
)
