"""Regression tests from the review of the dataclass `__init__`, named-class and once-called
helper changes: each case works at runtime (or keeps its error), and failed before its mend."""

from __future__ import annotations

import pytest

from atompin.analysis.prose import ProseReader
from tests.test_contact import MY_DATA, NEW_DATA_A, NEW_DATA_B, check, found
from tests.test_version_gates import PROVIDER, consumer

CALL = {"plug/use.py": "from pv.specs import Sub\n\ndef make():\n    return Sub({args})\n"}
HEAD = "from dataclasses import dataclass, field\nfrom typing import ClassVar\n\n"

# (baseline provider, provider, call args): the call works at runtime against both.
DATACLASS = {
    # a subclass redeclares an inherited field with init=False: Sub(1) works
    "redeclared_init_false": (
        "@dataclass\nclass Base:\n    a: int\n\n@dataclass\nclass Sub(Base):\n    b: int = 0\n",
        "@dataclass\nclass Base:\n    a: int\n    b: int\n\n@dataclass\nclass Sub(Base):\n"
        "    b: int = field(default=0, init=False)\n",
        "1",
    ),
    # a subclass redeclares an inherited field as a ClassVar: Sub(1) works
    "redeclared_classvar": (
        "@dataclass\nclass Base:\n    a: int\n\n@dataclass\nclass Sub(Base):\n    b: ClassVar[int] = 0\n",
        "@dataclass\nclass Base:\n    a: int\n    b: int\n\n@dataclass\nclass Sub(Base):\n    b: ClassVar[int] = 0\n",
        "1",
    ),
    # a ClassVar (or init=False) field of the base keeps its place when redeclared: Sub([], b=2) works
    "redeclared_keeps_place": (
        "@dataclass\nclass Sub:\n    c: list = field(default_factory=list)\n    b: int = 1\n",
        "@dataclass\nclass Base:\n    c: ClassVar[int] = 3\n    b: int = 1\n\n@dataclass\nclass Sub(Base):\n"
        "    c: list = field(default_factory=list)\n",
        "[], b=2",
    ),
    # a field without a value takes the class attribute as default (here: the base's): Sub() works
    "inherited_default": (
        "@dataclass\nclass Base:\n    a: int = 1\n\n@dataclass\nclass Sub(Base):\n    pass\n",
        "@dataclass\nclass Base:\n    a: int = 1\n\n@dataclass\nclass Sub(Base):\n    a: int\n",
        "",
    ),
    # ... or a plain base's class attribute
    "mixin_default": (
        "@dataclass\nclass Sub:\n    block_size: int = 16\n",
        "class Defaults:\n    block_size = 16\n\n@dataclass\nclass Sub(Defaults):\n    block_size: int\n",
        "",
    ),
    # a base the index cannot follow (a call): its fields are unknown; Sub(z=2) works
    "opaque_base": (
        "def make():\n    return object\n\nclass Sub(make()):\n    def __init__(self, z):\n        pass\n",
        "from dataclasses import make_dataclass\n\ndef make():\n    return make_dataclass('Z', [('z', int)])\n\n"
        "@dataclass\nclass Sub(make()):\n    a: int = 0\n",
        "z=2",
    ),
    # another provider decorator over @dataclass writes its own __init__: Sub(1, 2, 3) works
    "outer_decorator": (
        "def register(cls):\n    return cls\n\nclass Sub:\n    def __init__(self, *a):\n        pass\n",
        "def register(cls):\n    def init(self, *args, **kwargs):\n        pass\n    cls.__init__ = init\n    return cls\n\n"
        "@register\n@dataclass\nclass Sub:\n    a: int\n",
        "1, 2, 3",
    ),
}


@pytest.mark.parametrize("case", sorted(DATACLASS))
def test_dataclass_call_that_works_is_no_error(case):
    before, after, args = DATACLASS[case]
    call = {k: v.format(args=args) for k, v in CALL.items()}
    result = check(call, {"pv/specs.py": HEAD + after}, baseline={"pv/specs.py": HEAD + before})
    assert [f for f in found(result, "arity-drift") if f[0] == "error"] == []


# -- a class named as written, when a function enclosing the class binds the name --------------

CLOSURE = """
    from pv.output import NewData

    def make_scheduler(NewData=NewData):
        class Scheduler:
            def schedule(self, request):
                return NewData.from_request(request, []{extra})
        return Scheduler
"""


GLOBAL = """
    from pv.output import NewData

    def set_data_cls(cls):
        global NewData
        NewData = cls

    def schedule(request):
        return NewData.from_request(request, []{extra})
"""


@pytest.mark.parametrize(
    ("module", "use"),
    [
        (CLOSURE, "\n    from pv.sched import make_scheduler\n    S = make_scheduler(MyData)\n"),
        (GLOBAL, "\n    from pv import sched\n    sched.set_data_cls(MyData)\n"),
    ],
    ids=["bound-around-the-class", "rebound-by-global"],
)
def test_a_name_the_provider_rebinds_is_not_a_class_named_as_written(module: str, use: str):
    a = {"pv/output.py": NEW_DATA_A, "pv/sched.py": module.format(extra="")}
    b = {"pv/output.py": NEW_DATA_B, "pv/sched.py": module.format(extra=", uses_mrope=True")}
    result = check({"plug/data.py": MY_DATA + use}, b, baseline=a)
    assert found(result, "override-drift") == [("error", "plug.data:MyData.from_request", "plug/data.py:5")]


# -- scanner: the gates of a helper's only call ------------------------------------------------

CHAIN = """
    import pv.layers.new_attn as attn
    from plug.utils import pv_version_is

    def _decode_main(x):
        return attn.decode_v2(x)

    def _run(mod, x):
        return _decode_main(x)

    def entry(x):
        if pv_version_is("0.25.1") or x is None:
            return x
        return _run(attn, x)

    attn.decode = entry
"""
SWAPPED = CHAIN.replace(
    "    def _decode_main(x):\n        return attn.decode_v2(x)\n\n    def _run(mod, x):\n        return _decode_main(x)\n",
    "    def _run(mod, x):\n        return _decode_main(x)\n\n    def _decode_main(x):\n        return attn.decode_v2(x)\n",
)


@pytest.mark.parametrize("source", [CHAIN, SWAPPED], ids=["chain", "swapped"])
def test_a_helper_called_once_past_a_gate(run_check, source):
    assert run_check(PROVIDER, consumer(source), version="0.25.1").findings == ()


QUOTED_HASH = """
    import pv.layers.new_attn as attn
    from plug.utils import pv_version_is

    def _decode(x):
        return attn.decode_v2(x)

    if not pv_version_is("0.25.1"):
        attn.decode = _decode

    HANDLERS = {"it's": '#', "decode": _decode}
"""


def test_a_hash_in_a_string_is_no_comment(run_check):
    line = b'HANDLERS = {"it\'s": \'#\', "decode": _decode}'
    assert not ProseReader(line).in_comment(line.index(b"_decode"))
    # HANDLERS may call _decode anywhere: its body is not only under the install's gate
    assert [f.rule.value for f in run_check(PROVIDER, consumer(QUOTED_HASH), version="0.25.1").findings] == [
        "unresolved-import"
    ]
